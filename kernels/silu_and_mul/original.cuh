// kernels/silu_and_mul/original.cuh: the original kernel S of silu_and_mul, as SGLang runs it: sgl-kernel's
// silu_and_mul launches FlashInfer's act_and_mul_kernel with silu. The kernel, its launch and where it deviates
// from upstream are in kernels/common/act_and_mul/original.cuh; this file gives the activation.
//
// Until 2026-11-26 S was an older text of the kernel (element-by-element conversions) with an IEEE division,
// which sgl-kernel's -use_fast_math build does not run: timed against upstream on an H200 (bench/upstream,
// reports/nvidia-h200/upstream/flashinfer.md) it took up to 1.41x upstream's time at one token in bf16.
#pragma once

#include <cuda_runtime.h>

#include <ktune/launch.hpp>
#include <ktune/status.hpp>

#include "../common/act_and_mul/original.cuh"
#include "args.hpp"

namespace ktune::ops::silu_and_mul::original {

/// S's traits for the shared S: its name and its activation.
struct Op {
  static constexpr char name[] = "silu_and_mul";

// sgl-kernel's silu, x / (1 + expf(-x)), as its -use_fast_math sm_90 build computes it (nvcc 13.0's PTX):
// expf becomes __expf (ex2.approx of -x * log2(e)) and the division div.approx.ftz.f32, written here as that
// instruction (without fast math, / is the IEEE div.rn.f32, a call of several dozen instructions).
  __device__ static float activation(const float& val) {
  float z;
  asm("div.approx.ftz.f32 %0, %1, %2;" : "=f"(z) : "f"(val), "f"(1.0f + __expf(-val)));
  return z;
  }
};

using act_and_mul::original::launch_shape;
using act_and_mul::original::pack;

template <class E> Status can_implement(const Args<E>& a) { return act_and_mul::original::can_implement<Op>(a); }
template <class E> Status run(const Args<E>& a, cudaStream_t s) { return act_and_mul::original::run<Op>(a, s); }
template <class E> ktune::KernelResources resources(const Args<E>& a) { return act_and_mul::original::resources<Op>(a); }

}  // namespace ktune::ops::silu_and_mul::original
