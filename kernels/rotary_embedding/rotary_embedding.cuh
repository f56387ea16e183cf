// kernels/rotary_embedding/rotary_embedding.cuh: the public API of rotary_embedding (DESIGN.md
// contract 4). Include it from CUDA code; it needs only the CUDA toolkit and the C++17 standard library.
// Declarations and documentation: rotary_embedding.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

#include "family.cuh"
#include "rotary_embedding.hpp"
#include "space.hpp"
#include "tuned.cuh"

namespace ktune {

namespace ops::rotary_embedding {

/// Args from the public API's parameters; a stride of -1 means contiguous (heads * head_size), as for
/// every ktune op. Other values are kept as given, for validate() to check (0 and other negatives are refused).
template <class E>
Args<E> make_args(const std::int64_t* positions, E* query, E* key, std::int64_t head_size, const float* cos_sin_cache,
                  bool is_neox, std::int64_t tokens, std::int64_t q_heads, std::int64_t kv_heads,
                  std::int64_t rotary_dim, std::int64_t max_pos, std::int64_t query_stride, std::int64_t key_stride) {
  Args<E> a;
  a.positions = positions;
  a.query = query;
  a.key = key;
  a.head_size = head_size;
  a.cos_sin_cache = cos_sin_cache;
  a.is_neox = is_neox;
  a.tokens = tokens;
  a.q_heads = q_heads;
  a.kv_heads = kv_heads;
  a.rotary_dim = rotary_dim;
  a.max_pos = max_pos;
  a.query_stride = query_stride == -1 ? row_elements(q_heads, head_size) : query_stride;
  a.key_stride = key_stride == -1 ? row_elements(kv_heads, head_size) : key_stride;
  return a;
}

/// validate → current device (cached) → tuned row → its configuration, or the unaligned configuration
/// when that one cannot implement the call.
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
    return Status::unsupported("rotary_embedding: unsupported dtype (fp32, fp16 and bf16 are)");
  if (tokens < 0 || width < 1) return Status::invalid("rotary_embedding_choice: tokens < 0 or width < 1");
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  out = ktune::lookup(tuned::entries, dev->table_arch, dev->name, dtype, tokens, width);
  if (out.variant < 0) out.id = tuned::general_id;
  return Status::success();
}

}  // namespace ops::rotary_embedding

template <class E>
Status rotary_embedding(const std::int64_t* positions, E* query, E* key, std::int64_t head_size,
                        const float* cos_sin_cache, bool is_neox, std::int64_t tokens, std::int64_t q_heads,
                        std::int64_t kv_heads, std::int64_t rotary_dim, std::int64_t max_pos, cudaStream_t stream,
                        std::int64_t query_stride, std::int64_t key_stride) {
  static_assert(is_element_v<E>, "rotary_embedding supports float, __half and __nv_bfloat16 elements.");
  namespace op = ops::rotary_embedding;
  return op::dispatch(op::make_args(positions, query, key, head_size, cos_sin_cache, is_neox, tokens, q_heads, kv_heads,
                                    rotary_dim, max_pos, query_stride, key_stride),
                      stream);
}

}  // namespace ktune
