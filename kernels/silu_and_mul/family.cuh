// kernels/silu_and_mul/family.cuh: the tunable family S_θ of silu_and_mul: the act-and-mul family's
// kernel and host adapter (kernels/common/act_and_mul/family.cuh) with silu as the activation.
//
//   in  [tokens, 2*d]  E, row stride in_stride: x = in[t, 0:d], y = in[t, d:2d]
//   out [tokens, d]    E, row stride out_stride
//   out[t, i] = silu(x[t, i]) * y[t, i], silu(x) = x / (1 + exp(-x)); fp32 arithmetic, one rounding.
//
// Variants may not round identically to S (whose division is fast math's approximate one, as sgl-kernel
// builds it); all stay within the spec's tolerance.
#pragma once

#include <cuda_runtime.h>

#include <ktune/family.hpp>
#include <ktune/launch.hpp>
#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "../common/act_and_mul/device_preparation.cuh"
#include "../common/act_and_mul/family.cuh"
#include "args.hpp"
#include "harness.hpp"
#include "original.cuh"
#include "space.hpp"

namespace ktune::ops::silu_and_mul {

using act_and_mul::Params;
using act_and_mul::Tiling;
using act_and_mul::VectorCoord;

namespace detail {

/// silu(x) * y in fp32. For x < -88.7, __expf(-x) overflows to +inf and __fdividef(x, inf) = -0; for a
/// denominator in (2^126, 2^128) __fdividef gives 0. Both are within atol of the reference's tiny
/// negative (|x| e^x < 1e-36) and never NaN. x = +inf gives +inf, x = -inf gives NaN (the formula's
/// -inf / inf), NaN stays NaN: the same special values as the reference.
__device__ __forceinline__ float silu_mul(float x, float y) { return __fdividef(x, 1.0f + __expf(-x)) * y; }

}  // namespace detail

/// The op as the shared family sees it: its name and its activation.
struct Op {
  static constexpr char name[] = "silu_and_mul";
  struct Activation {
    __device__ __forceinline__ float operator()(float x, float y) const { return detail::silu_mul(x, y); }
  };
};

/// The family's host adapter (docs/kernel-folder.md); can_implement, enqueue and resources are the
/// act-and-mul family's.
struct Family : Space, act_and_mul::Adapter<Op> {
  static constexpr const char* name = "silu_and_mul";
  template <class E> using Args = ops::silu_and_mul::Args<E>;
  using Harness = ops::silu_and_mul::Harness;
  using DevicePreparation = act_and_mul::DevicePreparation<Harness, ElementReference>;

  template <class E> static Status original_can_implement(const Args<E>& a) { return original::can_implement(a); }
  template <class E> static Status original_run(const Args<E>& a, cudaStream_t s) { return original::run(a, s); }
  template <class E> static ktune::KernelResources original_resources(const Args<E>& a) { return original::resources(a); }
};

}  // namespace ktune::ops::silu_and_mul
