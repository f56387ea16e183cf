// kernels/gelu_and_mul/original.cuh: the original kernel S of gelu_and_mul, as SGLang runs it: sgl-kernel's
// gelu_and_mul launches FlashInfer's act_and_mul_kernel with gelu. The kernel, its launch and where it deviates
// from upstream are in kernels/common/act_and_mul/original.cuh; this file gives the activation.
#pragma once

#include <cuda_runtime.h>

#include <ktune/launch.hpp>
#include <ktune/status.hpp>

#include "../common/act_and_mul/original.cuh"
#include "args.hpp"

namespace ktune::ops::gelu_and_mul::original {

/// S's traits for the shared S: its name and its activation.
struct Op {
  static constexpr char name[] = "gelu_and_mul";

// sgl-kernel's gelu (erf GELU), as its -use_fast_math sm_90 build computes it: erf(float) is erff, which
// -use_fast_math leaves as it is (only -ftz changes it, see the deviations in the shared header), and
// M_SQRT1_2 rounds to the float 0.70710677f. The product is x * (0.5 * (1 + erf(x * kAlpha))), in that order.
  __device__ static float activation(const float& val) {
  constexpr float kAlpha = 0.70710678118654752440f;  // M_SQRT1_2
  return val * (0.5f * (1.0f + erff(val * kAlpha)));
  }
};

using act_and_mul::original::launch_shape;
using act_and_mul::original::pack;

template <class E> Status can_implement(const Args<E>& a) { return act_and_mul::original::can_implement<Op>(a); }
template <class E> Status run(const Args<E>& a, cudaStream_t s) { return act_and_mul::original::run<Op>(a, s); }
template <class E> ktune::KernelResources resources(const Args<E>& a) { return act_and_mul::original::resources<Op>(a); }

}  // namespace ktune::ops::gelu_and_mul::original
