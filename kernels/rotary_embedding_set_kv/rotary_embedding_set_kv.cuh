// kernels/rotary_embedding_set_kv/rotary_embedding_set_kv.cuh: the public API of rotary_embedding_set_kv
// (DESIGN.md contract 4). Include it from CUDA code; it needs only the CUDA toolkit and the C++17 standard
// library. Declarations and documentation: rotary_embedding_set_kv.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

#include "family.cuh"
#include "rotary_embedding_set_kv.hpp"
#include "space.hpp"
#include "tuned.cuh"

namespace ktune {

namespace ops::rotary_embedding_set_kv {

/// Args from the public API's parameters; a stride of -1 means contiguous (heads * head_size), as for every
/// ktune op. Other values are kept as given, for validate() to check (0 and other negatives are refused).
template <class E>
Args<E> make_args(const std::int64_t* positions, E* query, E* key, std::int64_t head_size, const float* cos_sin_cache,
                  bool is_neox, const E* value, E* k_buffer, E* v_buffer, float k_scale, float v_scale,
                  const std::int64_t* cache_loc, std::int64_t tokens, std::int64_t q_heads, std::int64_t kv_heads,
                  std::int64_t rotary_dim, std::int64_t max_pos, std::int64_t cache_rows, std::int64_t query_stride,
                  std::int64_t key_stride, std::int64_t value_stride, std::int64_t k_buffer_stride,
                  std::int64_t v_buffer_stride) {
  Args<E> a;
  a.positions = positions;
  a.query = query;
  a.key = key;
  a.head_size = head_size;
  a.cos_sin_cache = cos_sin_cache;
  a.is_neox = is_neox;
  a.value = value;
  a.k_buffer = k_buffer;
  a.v_buffer = v_buffer;
  a.k_scale = k_scale;
  a.v_scale = v_scale;
  a.cache_loc = cache_loc;
  a.tokens = tokens;
  a.q_heads = q_heads;
  a.kv_heads = kv_heads;
  a.rotary_dim = rotary_dim;
  a.max_pos = max_pos;
  a.cache_rows = cache_rows;
  const std::int64_t q_row = row_elements(q_heads, head_size), k_row = row_elements(kv_heads, head_size);
  a.query_stride = query_stride == -1 ? q_row : query_stride;
  a.key_stride = key_stride == -1 ? k_row : key_stride;
  a.value_stride = value_stride == -1 ? k_row : value_stride;
  a.k_buffer_stride = k_buffer_stride == -1 ? k_row : k_buffer_stride;
  a.v_buffer_stride = v_buffer_stride == -1 ? k_row : v_buffer_stride;
  return a;
}

/// validate → current device (cached) → tuned row → its configuration, or the unaligned configuration when
/// that one cannot implement the call.
template <class E>
Status dispatch(const Args<E>& a, cudaStream_t stream) {
  KTUNE_TRY(validate(a));
  if (is_empty(a)) return Status::success();
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  const TunedChoice c = ktune::lookup(tuned::entries, dev->table_arch, dev->name, dtype_v<E>, a.tokens, a.q_heads);
  return tuned::with_variant<E>(c.variant, [&](auto cfg) -> Status {
    using Cfg = decltype(cfg);
    if (Family::can_implement<Cfg, E>(a).ok()) return Family::enqueue<Cfg, E>(a, stream);
    return run_variant<Family, unaligned_config_t<static_cast<int>(sizeof(E))>, E>(a, stream);
  });
}

/// The tuned row (or the general configuration) for a call; no launch.
inline Status choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out) {
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    return Status::unsupported("rotary_embedding_set_kv: unsupported dtype (fp32, fp16 and bf16 are)");
  if (tokens < 0 || width < 1) return Status::invalid("rotary_embedding_set_kv_choice: tokens < 0 or width < 1");
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  out = ktune::lookup(tuned::entries, dev->table_arch, dev->name, dtype, tokens, width);
  if (out.variant < 0) out.id = tuned::general_id;
  return Status::success();
}

}  // namespace ops::rotary_embedding_set_kv

template <class E>
Status rotary_embedding_set_kv(const std::int64_t* positions, E* query, E* key, std::int64_t head_size,
                               const float* cos_sin_cache, bool is_neox, const E* value, E* k_buffer, E* v_buffer,
                               float k_scale, float v_scale, const std::int64_t* cache_loc, std::int64_t tokens,
                               std::int64_t q_heads, std::int64_t kv_heads, std::int64_t rotary_dim,
                               std::int64_t max_pos, std::int64_t cache_rows, cudaStream_t stream,
                               std::int64_t query_stride, std::int64_t key_stride, std::int64_t value_stride,
                               std::int64_t k_buffer_stride, std::int64_t v_buffer_stride) {
  static_assert(is_element_v<E>, "rotary_embedding_set_kv supports float, __half and __nv_bfloat16 elements.");
  namespace op = ops::rotary_embedding_set_kv;
  return op::dispatch(op::make_args(positions, query, key, head_size, cos_sin_cache, is_neox, value, k_buffer, v_buffer,
                                    k_scale, v_scale, cache_loc, tokens, q_heads, kv_heads, rotary_dim, max_pos,
                                    cache_rows, query_stride, key_stride, value_stride, k_buffer_stride, v_buffer_stride),
                      stream);
}

}  // namespace ktune
