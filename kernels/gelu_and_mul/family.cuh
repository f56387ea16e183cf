// kernels/gelu_and_mul/family.cuh: the tunable family S_θ of gelu_and_mul: the act-and-mul family's kernel and
// host adapter (kernels/common/act_and_mul/family.cuh, shared with silu_and_mul) with gelu as the activation.
//
//   in  [tokens, 2*d]  E, row stride in_stride: x = in[t, 0:d], y = in[t, d:2d]
//   out [tokens, d]    E, row stride out_stride
//   out[t, i] = gelu(x[t, i]) * y[t, i]; fp32 arithmetic, one rounding.
//
// The variants beat S by structure (a grid that fills the GPU at small T, every thread busy at large T,
// no recomputed tail, 2 * vpt loads in flight, PDL) and by a cheaper Phi: S's 0.5 (1 + erff(x / sqrt 2))
// made the 16-bit calls compute-bound, so they take normal_cdf.hpp's (one exp2, as accurate as S's form
// and far more so below zero). Their outputs are within the spec's tolerance of S's, not bitwise.
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
#include "normal_cdf.hpp"
#include "original.cuh"
#include "space.hpp"

namespace ktune::ops::gelu_and_mul {

using act_and_mul::Params;
using act_and_mul::Tiling;
using act_and_mul::VectorCoord;

/// The op as the shared family sees it: its name and its activation.
struct Op {
  static constexpr char name[] = "gelu_and_mul";
  struct Activation {
    /// gelu(x) * y = x Phi(x) y in fp32, rounded in S's order. x far below zero: Phi = 0, x * 0 = -0 (never
    /// NaN); x = +inf gives +inf, x = -inf gives NaN (-inf * 0), NaN stays NaN: the reference's special values.
    __device__ __forceinline__ float operator()(float x, float y) const { return x * normal_cdf(x) * y; }
  };
};

/// The family's host adapter (docs/kernel-folder.md); can_implement, enqueue and resources are the
/// act-and-mul family's.
struct Family : Space, act_and_mul::Adapter<Op> {
  static constexpr const char* name = "gelu_and_mul";
  template <class E> using Args = ops::gelu_and_mul::Args<E>;
  using Harness = ops::gelu_and_mul::Harness;
  using DevicePreparation = act_and_mul::DevicePreparation<Harness, ElementReference>;

  template <class E> static Status original_can_implement(const Args<E>& a) { return original::can_implement(a); }
  template <class E> static Status original_run(const Args<E>& a, cudaStream_t s) { return original::run(a, s); }
  template <class E> static ktune::KernelResources original_resources(const Args<E>& a) { return original::resources(a); }
};

}  // namespace ktune::ops::gelu_and_mul
