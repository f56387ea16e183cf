// kernels/rotary_embedding/reference.hpp: the float64 CPU reference of the op's semantics, used by
// the tests and the benchmark's correctness gate. Host-only (g++ and nvcc).
//
// Semantics (args.hpp), per token t with p = positions[t] and per head of q and of k, R = rotary_dim:
//   pair j < R/2:  (x, y) = (h[j], h[j + R/2]) when is_neox, (h[2j], h[2j + 1]) otherwise (GPT-J);
//   x' = x cos - y sin,  y' = y cos + x sin,  cos = cache[p * R + j],  sin = cache[p * R + R/2 + j];
//   elements R .. head_size - 1 unchanged.
// A position outside [0, max_pos) is no valid call; the reference, like the family, leaves that token
// unchanged.
#pragma once

#include <cstdint>

#include <ktune/dtype.hpp>

namespace ktune::ops::rotary_embedding {

/// Element offsets of pair j inside a head: (first, second).
inline void pair_offsets(bool is_neox, std::int64_t rotary_dim, std::int64_t j, std::int64_t& first, std::int64_t& second) {
  first = is_neox ? j : 2 * j;
  second = is_neox ? j + rotary_dim / 2 : 2 * j + 1;
}

/// One head of `head_size` values rotated in place (float64), with the cache row of its position.
inline void reference_head(double* h, const float* cache_row, bool is_neox, std::int64_t rotary_dim) {
  const std::int64_t half = rotary_dim / 2;
  for (std::int64_t j = 0; j < half; ++j) {
    std::int64_t a = 0, b = 0;
    pair_offsets(is_neox, rotary_dim, j, a, b);
    const double c = cache_row[j], s = cache_row[half + j];
    const double x = h[a], y = h[b];
    h[a] = x * c - y * s;
    h[b] = y * c + x * s;
  }
}

/// The whole op on host tensors (layouts as in Args, strides in elements); outputs contiguous float64:
///   q_out [tokens, q_heads, head_size],  k_out [tokens, kv_heads, head_size]
template <class E>
void reference(const std::int64_t* positions, const E* query, const E* key, std::int64_t head_size,
               const float* cos_sin_cache, bool is_neox, std::int64_t tokens, std::int64_t q_heads,
               std::int64_t kv_heads, std::int64_t rotary_dim, std::int64_t max_pos, std::int64_t query_stride,
               std::int64_t key_stride, double* q_out, double* k_out) {
  auto one = [&](const E* in, std::int64_t heads, std::int64_t stride, double* out) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t p = positions[t];
      const bool valid = p >= 0 && p < max_pos;
      for (std::int64_t h = 0; h < heads; ++h) {
        double* o = out + (t * heads + h) * head_size;
        for (std::int64_t i = 0; i < head_size; ++i)
          o[i] = static_cast<double>(ktune::to_float(in[t * stride + h * head_size + i]));
        if (valid) reference_head(o, cos_sin_cache + p * rotary_dim, is_neox, rotary_dim);
      }
    }
  };
  one(query, q_heads, query_stride, q_out);
  one(key, kv_heads, key_stride, k_out);
}

}  // namespace ktune::ops::rotary_embedding
