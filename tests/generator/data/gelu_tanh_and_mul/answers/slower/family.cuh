// kernels/gelu_tanh_and_mul/family.cuh: the tunable family S_θ of gelu_tanh_and_mul: one warp per row,
// one element per access, and its host adapter.
//
//   in  [tokens, 2*d]  E: x = in[t, 0:d], y = in[t, d:2d]
//   out [tokens, d]    E
//   out[t, i] = gelu_tanh(x[t, i]) * y[t, i], gelu_tanh(x) = 0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3)));
//   fp32 arithmetic as S writes it, one rounding to E.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "family_base.cuh"

namespace ktune::ops::gelu_tanh_and_mul {

template <class E>
struct Params {
  const E* in;
  E* out;
  std::int64_t d;
};

namespace detail {
__device__ __forceinline__ float gelu_tanh(float x) {
  const float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}
}  // namespace detail

/// grid.x = tokens, 32 threads: lane l of block t computes out[t, l], out[t, l + 32], ...
/// \tparam Cfg a Space::Config
/// \tparam E   float, __half or __nv_bfloat16
template <class Cfg, class E>
__global__ void __launch_bounds__(32) gelu_tanh_and_mul_kernel(const Params<E> p) {
  if constexpr (Cfg::pdl) ktune::pdl_wait();
  const std::int64_t row = blockIdx.x;
  const unsigned lane = threadIdx.x;
  const E* x_row = p.in + row * 2 * p.d;
  const E* y_row = x_row + p.d;
  E* out_row = p.out + row * p.d;
  __shared__ float tile_x[32], tile_y[32];
#pragma unroll 1
  for (std::int64_t i = lane; i < p.d; i += 32) {
    float x = ktune::to_float(x_row[i]);
    float y = ktune::to_float(y_row[i]);
    if constexpr (Cfg::stage) {
      // Each lane writes and reads back only its own slot; the barriers keep the tile's steps apart.
      tile_x[lane] = x;
      tile_y[lane] = y;
      __syncwarp();
      x = tile_x[lane];
      y = tile_y[lane];
      __syncwarp();
    }
    out_row[i] = ktune::from_float<E>(detail::gelu_tanh(x) * y);
  }
  if constexpr (Cfg::pdl) ktune::pdl_launch_dependents();
}

/// The family's host adapter (docs/kernel-folder.md).
struct Family : FamilyBase {
  /// validate() plus one block per row within grid.x's 2^31 - 1. Makes no CUDA call.
  template <class Cfg, class E>
  static Status can_implement(const Args<E>& a) {
    KTUNE_TRY(validate(a));
    if (is_empty(a)) return Status::success();
    if (a.tokens > std::numeric_limits<std::int32_t>::max())
      return Status::too_large("gelu_tanh_and_mul: more tokens than grid.x allows (2^31 - 1)");
    return Status::success();
  }

  template <class Cfg, class E>
  static Status enqueue(const Args<E>& a, cudaStream_t stream) {
    ktune::LaunchShape s;
    s.grid = dim3(static_cast<unsigned>(a.tokens));
    s.block = dim3(32);
    s.pdl = Cfg::pdl;
    return ktune::launch(gelu_tanh_and_mul_kernel<Cfg, E>, s, stream, Params<E>{a.in, a.out, a.d});
  }


  template <class Cfg, class E>
  static ktune::KernelResources resources(const Args<E>&) {
    return {reinterpret_cast<const void*>(&gelu_tanh_and_mul_kernel<Cfg, E>), 32, 0, 1};
  }
};

}  // namespace ktune::ops::gelu_tanh_and_mul
