// kernels/gelu_and_mul/gelu_and_mul.cuh: the public API of gelu_and_mul (DESIGN.md contract 4).
// Include it from CUDA code; it needs only the CUDA toolkit and the C++17 standard library.
// Declarations and documentation: gelu_and_mul.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

#include "args.hpp"
#include "family.cuh"
#include "gelu_and_mul.hpp"
#include "space.hpp"
#include "tuned.cuh"

namespace ktune {

namespace ops::gelu_and_mul {

/// validate → current device (cached) → tuned row → its configuration, or the unaligned
/// configuration when that one cannot implement the call. No allocation, no synchronisation.
template <class E>
Status dispatch(const Args<E>& a, cudaStream_t stream) {
  KTUNE_TRY(validate(a));
  if (is_empty(a)) return Status::success();
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  const TunedChoice c = ktune::lookup(tuned::entries, dev->table_arch, dev->name, dtype_v<E>, a.tokens, a.d);
  return tuned::with_variant<E>(c.variant, [&](auto cfg) -> Status {
    using Cfg = decltype(cfg);
    if (Family::can_implement<Cfg, E>(a).ok()) return Family::enqueue<Cfg, E>(a, stream);
    return run_variant<Family, unaligned_config_t<static_cast<int>(sizeof(E))>, E>(a, stream);
  });
}

/// The tuned row (or the general configuration) for a call; no launch.
inline Status choice(DType dtype, std::int64_t tokens, std::int64_t d, TunedChoice& out) {
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    return Status::unsupported("gelu_and_mul: unsupported dtype (fp32, fp16 and bf16 are)");
  if (tokens < 0 || d < 0) return Status::invalid("gelu_and_mul_choice: tokens or d is negative");
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  out = ktune::lookup(tuned::entries, dev->table_arch, dev->name, dtype, tokens, d);
  if (out.variant < 0) out.id = tuned::general_id;
  return Status::success();
}

}  // namespace ops::gelu_and_mul

template <class E>
Status gelu_and_mul(E* out, const E* in, std::int64_t tokens, std::int64_t d, cudaStream_t stream,
                    std::int64_t out_stride, std::int64_t in_stride) {
  static_assert(is_element_v<E>, "gelu_and_mul supports float, __half and __nv_bfloat16 elements.");
  namespace op = ops::gelu_and_mul;
  return op::dispatch(op::make_args(out, in, tokens, d, out_stride, in_stride), stream);
}

}  // namespace ktune
