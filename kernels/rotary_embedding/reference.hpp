// kernels/rotary_embedding/reference.hpp: the float64 CPU reference of the op's semantics, used by
// the tests and the benchmark's correctness gate. g++ and nvcc; rotated_element runs on the device too
// (device_preparation.cuh).
//
// Semantics (args.hpp), per token t with p = positions[t] and per head of q and of k, R = rotary_dim:
//   pair j < R/2:  (x, y) = (h[j], h[j + R/2]) when is_neox, (h[2j], h[2j + 1]) otherwise (GPT-J);
//   x' = x cos - y sin,  y' = y cos + x sin,  cos = cache[p * R + j],  sin = cache[p * R + R/2 + j];
//   elements R .. head_size - 1 unchanged.
// A position outside [0, max_pos) is no valid call; the reference, like the family, leaves that token
// unchanged.
#pragma once

#include <cuda_runtime_api.h>  // __host__ __device__ for host compilers too

#include <cstdint>

#include <ktune/dtype.hpp>

namespace ktune::ops::rotary_embedding {

__host__ __device__ inline void pair_offsets(bool is_neox, std::int64_t rotary_dim, std::int64_t j, std::int64_t& first,
                                             std::int64_t& second) {
  first = is_neox ? j : 2 * j;
  second = is_neox ? j + rotary_dim / 2 : 2 * j + 1;
}

/// Element i of a head rotated by a cache row, from the head's elements as stored (value(k), in float64) and the
/// row's (cache(k)): x cos - y sin at its pair's first element, y cos + x sin at the second, itself past the pairs.
template <class Value, class Cache>
__host__ __device__ double rotated_element(const Value& value, const Cache& cache, bool is_neox, std::int64_t rotary_dim,
                                           std::int64_t i) {
  const std::int64_t half = rotary_dim / 2;
  if (i >= 2 * half) return value(i);
  const std::int64_t j = is_neox ? (i < half ? i : i - half) : i / 2;
  std::int64_t a = 0, b = 0;
  pair_offsets(is_neox, rotary_dim, j, a, b);
  const double c = cache(j), s = cache(half + j), x = value(a), y = value(b);
  return i == a ? x * c - y * s : y * c + x * s;
}

/// A head's elements as stored, in float64 (rotated_element's value on host tensors).
template <class E>
struct StoredElements {
  const E* p;
  __host__ __device__ double operator()(std::int64_t k) const { return static_cast<double>(ktune::to_float(p[k])); }
};

/// A cache row's floats in float64 (rotated_element's cache on a host tensor).
struct CacheRow {
  const float* p;
  __host__ __device__ double operator()(std::int64_t k) const { return static_cast<double>(p[k]); }
};

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
        const StoredElements<E> value{in + t * stride + h * head_size};
        const CacheRow cache{cos_sin_cache + (valid ? p : 0) * rotary_dim};
        double* o = out + (t * heads + h) * head_size;
        for (std::int64_t i = 0; i < head_size; ++i)
          o[i] = valid ? rotated_element(value, cache, is_neox, rotary_dim, i) : value(i);
      }
    }
  };
  one(query, q_heads, query_stride, q_out);
  one(key, kv_heads, key_stride, k_out);
}

}  // namespace ktune::ops::rotary_embedding
