// kernels/gemma_fused_add_rmsnorm/gemma_fused_add_rmsnorm.cuh: the gemma_fused_add_rmsnorm public API for CUDA code.
//
// Include this and call ktune::gemma_fused_add_rmsnorm<E>(...): it needs only the CUDA toolkit and the
// C++17 standard library. The runtime-dtype entry and gemma_fused_add_rmsnorm_choice are compiled into
// ktune::kernels (link it to use them), as for host-compiler users of gemma_fused_add_rmsnorm.hpp.
//
// A call: validate -> current device (cached) -> tuned table lookup (device, then architecture, then
// the general configuration) -> that variant, or the element-access fallback (Space::unaligned_point)
// where the variant cannot serve the pointers, strides or h.
#pragma once

#include <string>
#include <type_traits>

#include <ktune/device_info.hpp>
#include <ktune/tuned.hpp>

#include "family.cuh"
#include "gemma_fused_add_rmsnorm.hpp"
#include "tuned.cuh"

namespace ktune {

template <class E>
Status gemma_fused_add_rmsnorm(E* input, E* residual, const E* weight, std::int64_t tokens, std::int64_t h, float eps,
                         cudaStream_t stream, std::int64_t input_stride, std::int64_t residual_stride) {
  static_assert(is_element_v<E>, "gemma_fused_add_rmsnorm is defined for float, __half and __nv_bfloat16.");
  namespace op = ops::gemma_fused_add_rmsnorm;
  const op::Args<E> args = op::make_args(input, residual, weight, tokens, h, eps, input_stride, residual_stride);
  KTUNE_TRY(op::validate(args));
  if (tokens == 0) return Status::success();
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  const TunedChoice choice = lookup(op::tuned::entries, dev->table_arch, dev->name, dtype_v<E>, tokens, h);
  return op::tuned::with_variant<E>(choice.variant, [&](auto cfg) -> Status {
    using Cfg = decltype(cfg);
    if (op::Family::can_implement<Cfg, E>(args).ok()) return op::Family::enqueue<Cfg, E>(args, stream);
    return run_variant<op::Family, op::unaligned_config_t, E>(args, stream);
  });
}

namespace ops::gemma_fused_add_rmsnorm {

/// The body of the runtime-dtype entry (compiled into ktune::kernels by gemma_fused_add_rmsnorm.cu).
inline Status run_dtype(DType dtype, void* input, void* residual, const void* weight, std::int64_t tokens,
                        std::int64_t h, float eps, cudaStream_t stream, std::int64_t input_stride,
                        std::int64_t residual_stride) {
  switch (dtype) {
    case DType::f32:
      return ktune::gemma_fused_add_rmsnorm(static_cast<float*>(input), static_cast<float*>(residual),
                                      static_cast<const float*>(weight), tokens, h, eps, stream, input_stride,
                                      residual_stride);
    case DType::f16:
      return ktune::gemma_fused_add_rmsnorm(static_cast<__half*>(input), static_cast<__half*>(residual),
                                      static_cast<const __half*>(weight), tokens, h, eps, stream, input_stride,
                                      residual_stride);
    case DType::bf16:
      return ktune::gemma_fused_add_rmsnorm(static_cast<__nv_bfloat16*>(input), static_cast<__nv_bfloat16*>(residual),
                                      static_cast<const __nv_bfloat16*>(weight), tokens, h, eps, stream,
                                      input_stride, residual_stride);
  }
  return Status::unsupported("gemma_fused_add_rmsnorm: dtype is not fp32, fp16 or bf16");
}

/// The id of the table's general configuration (what runs without a tuned row).
inline const char* general_id() {
  static const std::string id = Space::space.id(tuned::general_config::point);
  return id.c_str();
}

/// The body of gemma_fused_add_rmsnorm_choice.
inline Status choose(DType dtype, std::int64_t tokens, std::int64_t h, TunedChoice& out) {
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    return Status::unsupported("gemma_fused_add_rmsnorm: dtype is not fp32, fp16 or bf16");
  if (tokens < 0 || h < 1) return Status::invalid("gemma_fused_add_rmsnorm: tokens must be >= 0 and h >= 1");
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  out = lookup(tuned::entries, dev->table_arch, dev->name, dtype, tokens, h);
  if (out.variant < 0) out.id = general_id();
  return Status::success();
}

}  // namespace ops::gemma_fused_add_rmsnorm
}  // namespace ktune
