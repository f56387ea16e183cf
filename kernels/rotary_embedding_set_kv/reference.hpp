// kernels/rotary_embedding_set_kv/reference.hpp: the float64 CPU reference of the op's semantics (args.hpp),
// used by the tests and the benchmark's correctness gate. g++ and nvcc.
//
// q and k: rotary_embedding's reference (kernels/rotary_embedding/reference.hpp). Then, for every token t with
// s = cache_loc[t] in [0, cache_rows): k_buffer row s = the token's k as rotated, / k_scale; v_buffer row s =
// value row t / v_scale. Other rows keep what they held (k_buf_in, v_buf_in). float64 throughout: the kernels'
// two roundings of a scaled k (into key, then into the buffer) are within the spec's tolerance of it.
#pragma once

#include <cstdint>

#include <ktune/dtype.hpp>

#include "kernels/rotary_embedding/reference.hpp"

namespace ktune::ops::rotary_embedding_set_kv {

/// Outputs, in the tensors' order: q_out [tokens, q_heads, head_size], k_out [tokens, kv_heads, head_size],
/// kb_out and vb_out [cache_rows, kv_heads, head_size] (contiguous). The buffers' inputs are read with their
/// slot strides.
template <class E>
void reference(const std::int64_t* positions, const E* query, const E* key, std::int64_t head_size,
               const float* cos_sin_cache, bool is_neox, const E* value, const E* k_buffer, const E* v_buffer,
               double k_scale, double v_scale, const std::int64_t* cache_loc, std::int64_t tokens, std::int64_t q_heads,
               std::int64_t kv_heads, std::int64_t rotary_dim, std::int64_t max_pos, std::int64_t cache_rows,
               std::int64_t query_stride, std::int64_t key_stride, std::int64_t value_stride,
               std::int64_t k_buffer_stride, std::int64_t v_buffer_stride, double* q_out, double* k_out, double* kb_out,
               double* vb_out) {
  rotary_embedding::reference(positions, query, key, head_size, cos_sin_cache, is_neox, tokens, q_heads, kv_heads,
                              rotary_dim, max_pos, query_stride, key_stride, q_out, k_out);
  const std::int64_t row = kv_heads * head_size;
  for (std::int64_t s = 0; s < cache_rows; ++s)
    for (std::int64_t i = 0; i < row; ++i) {
      kb_out[s * row + i] = static_cast<double>(ktune::to_float(k_buffer[s * k_buffer_stride + i]));
      vb_out[s * row + i] = static_cast<double>(ktune::to_float(v_buffer[s * v_buffer_stride + i]));
    }
  for (std::int64_t t = 0; t < tokens; ++t) {
    const std::int64_t s = cache_loc[t];
    if (s < 0 || s >= cache_rows) continue;  // no valid call: nothing stored
    for (std::int64_t i = 0; i < row; ++i) {
      kb_out[s * row + i] = k_out[t * row + i] / k_scale;
      vb_out[s * row + i] = static_cast<double>(ktune::to_float(value[t * value_stride + i])) / v_scale;
    }
  }
}

}  // namespace ktune::ops::rotary_embedding_set_kv
