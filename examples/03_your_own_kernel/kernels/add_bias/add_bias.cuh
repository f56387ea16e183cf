// Derived by ktune 0.1.0 (`ktune derive`, `ktune agent`) for op add_bias from S (add_bias.cu,
// 0xbac3b0043287fa13) and spec.json (0xef37ef904008cb27).
// Do not edit: change S or spec.json and run `ktune derive` (or `ktune agent`) again.
//
// kernels/add_bias/add_bias.cuh: the public API of add_bias (DESIGN.md contract 4). Include it from CUDA
// code; it needs only the CUDA toolkit and the C++17 standard library. Declarations and documentation:
// add_bias.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

#include "args.hpp"
#include "family.cuh"
#include "add_bias.hpp"
#include "space.hpp"
#include "tuned.cuh"

namespace ktune {

namespace ops::add_bias {

/// validate -> current device (cached) -> tuned row -> its configuration, or the family's unaligned
/// configuration when that one cannot implement the call. No allocation, no synchronisation.
template <class E>
Status dispatch(const Args<E>& a, cudaStream_t stream) {
  KTUNE_TRY(validate(a));
  if (is_empty(a)) return Status::success();
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  const TunedChoice c = ktune::lookup(tuned::entries, dev->table_arch, dev->name, dtype_v<E>, tokens(a), width(a));
  return tuned::with_variant<E>(c.variant, [&](auto cfg) -> Status {
    using Cfg = decltype(cfg);
    if (Family::can_implement<Cfg, E>(a).ok()) return Family::enqueue<Cfg, E>(a, stream);
    return run_variant<Family, Family::unaligned_config<static_cast<int>(sizeof(E))>, E>(a, stream);
  });
}

/// The tuned row (or the general configuration) for a call; no launch.
inline Status choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out) {
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    return Status::unsupported("add_bias: unsupported dtype (fp32, fp16 and bf16 are)");
  if (tokens < 0 || width < 0) return Status::invalid("add_bias_choice: tokens or width is negative");
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  out = ktune::lookup(tuned::entries, dev->table_arch, dev->name, dtype, tokens, width);
  if (out.variant < 0) out.id = tuned::general_id;
  return Status::success();
}

}  // namespace ops::add_bias

template <class E>
Status add_bias(const E* x, const E* bias, E* out, std::int64_t tokens, std::int64_t d, cudaStream_t stream) {
  static_assert(ktune::is_element_v<E>, "add_bias supports float, __half and __nv_bfloat16 elements.");
  return ktune::ops::add_bias::dispatch(ktune::ops::add_bias::make_args<E>(x, bias, out, tokens, d), stream);
}

}  // namespace ktune
