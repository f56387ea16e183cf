// kernels/merge_attn_states_lse/merge_attn_states_lse.cuh: the public API of merge_attn_states_lse
// (DESIGN.md contract 4). Include it from CUDA code; it needs only the CUDA toolkit and the C++17
// standard library. Declarations and documentation: merge_attn_states_lse.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

#include "family.cuh"
#include "merge_attn_states_lse.hpp"
#include "space.hpp"
#include "tuned.cuh"

namespace ktune {

namespace ops::merge_attn_states_lse {

/// Args from the public API's parameters; a stride of -1 means contiguous (heads * head_size), as for every
/// ktune op. Other values are kept as given, for validate() to check (0 and other negatives are refused).
template <class E>
Args<E> make_args(E* out, float* out_lse, const E* prefix_out, const float* prefix_lse, const E* suffix_out,
                  const float* suffix_lse, std::int64_t tokens, std::int64_t heads, std::int64_t head_size,
                  std::int64_t out_stride, std::int64_t prefix_stride, std::int64_t suffix_stride) {
  const std::int64_t row = row_elements(heads, head_size);
  return {out,    out_lse, prefix_out, prefix_lse, suffix_out,
          suffix_lse, tokens, heads, head_size, out_stride == -1 ? row : out_stride,
          prefix_stride == -1 ? row : prefix_stride, suffix_stride == -1 ? row : suffix_stride};
}

/// validate → current device (cached) → tuned row → its configuration, or the unaligned
/// configuration when that one cannot implement the call.
template <class E>
Status dispatch(const Args<E>& a, cudaStream_t stream) {
  KTUNE_TRY(validate(a));
  if (a.tokens == 0) return Status::success();
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  const TunedChoice c = ktune::lookup(tuned::entries, dev->table_arch, dev->name, dtype_v<E>, a.tokens, a.heads);
  return tuned::with_variant<E>(c.variant, [&](auto cfg) -> Status {
    using Cfg = decltype(cfg);
    if (Family::can_implement<Cfg, E>(a).ok()) return Family::enqueue<Cfg, E>(a, stream);
    return run_variant<Family, unaligned_config_t<static_cast<int>(sizeof(E))>, E>(a, stream);
  });
}

/// The tuned row (or the general configuration) for a call; no launch.
inline Status choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out) {
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    return Status::unsupported("merge_attn_states_lse: unsupported dtype (fp32, fp16 and bf16 are)");
  if (tokens < 0 || width < 1) return Status::invalid("merge_attn_states_lse_choice: tokens < 0 or width < 1");
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  out = ktune::lookup(tuned::entries, dev->table_arch, dev->name, dtype, tokens, width);
  if (out.variant < 0) out.id = tuned::general_id;
  return Status::success();
}

}  // namespace ops::merge_attn_states_lse

template <class E>
Status merge_attn_states_lse(E* out, float* out_lse, const E* prefix_out, const float* prefix_lse, const E* suffix_out,
                             const float* suffix_lse, std::int64_t tokens, std::int64_t heads, std::int64_t head_size,
                             cudaStream_t stream, std::int64_t out_stride, std::int64_t prefix_stride,
                             std::int64_t suffix_stride) {
  static_assert(is_element_v<E>, "merge_attn_states_lse supports float, __half and __nv_bfloat16 elements.");
  namespace op = ops::merge_attn_states_lse;
  return op::dispatch(op::make_args(out, out_lse, prefix_out, prefix_lse, suffix_out, suffix_lse, tokens, heads,
                                    head_size, out_stride, prefix_stride, suffix_stride),
                      stream);
}

}  // namespace ktune
