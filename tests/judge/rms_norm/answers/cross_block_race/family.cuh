// family.cuh of the red-team family `cross_block_race`: splits each row over 16 blocks whose partial sums of squares meet in a float atomicAdd.
//
//   in [tokens, d], weight [d], out [tokens, d]: out[t, i] = in[t, i] * rsqrt(mean(in[t, :]^2) + 1e-6) * weight[i]
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "family_base.cuh"

namespace ktune::ops::rms_norm {

template <class E>
struct Params {
  const E* in;
  const E* weight;
  E* out;
  std::int64_t tokens;
  std::int64_t d;
};

constexpr int kSplit = 16;
constexpr std::int64_t kMaxRows = std::int64_t{1} << 20;
static __device__ float g_sumsq[kMaxRows];

static __global__ void clear_sums(std::int64_t tokens) {
  for (std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; r < tokens;
       r += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    g_sumsq[r] = 0.f;
}

/// grid (tokens, kSplit): block (r, s) adds the squares of its slice of row r into g_sumsq[r].
template <class Cfg, class E>
__global__ void __launch_bounds__(Cfg::threads) sum_squares_split(const Params<E> p) {
  const std::int64_t row = blockIdx.x;
  const std::int64_t slice = (p.d + kSplit - 1) / kSplit;
  const std::int64_t begin = blockIdx.y * slice, end = begin + slice < p.d ? begin + slice : p.d;
  float ss = 0.f;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += Cfg::threads) {
    const float v = ktune::to_float(p.in[row * p.d + i]);
    ss += v * v;
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) atomicAdd(&g_sumsq[row], ss);
}

/// Normalisation pass: one block per row, the row's sum of squares from g_sumsq (sum_squares_split).
/// \tparam Cfg a Space::Config
/// \tparam E   float, __half or __nv_bfloat16
template <class Cfg, class E>
__global__ void __launch_bounds__(Cfg::threads) rms_norm_kernel(const Params<E> p) {
  constexpr int T = Cfg::threads;
  __shared__ float partial[32];
  {
    const std::int64_t row = blockIdx.x;
    const E* x = p.in + row * p.d;
    E* y = p.out + row * p.d;

    float ss = 0.f;
    // The sum of squares comes from the split pass.
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
    __syncthreads();
    ss = threadIdx.x % 32 < T / 32 ? partial[threadIdx.x % 32] : 0.f;
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    const float scale = rsqrtf(ss / static_cast<float>(p.d) + 1e-6f);
    const float row_scale = rsqrtf(g_sumsq[row] / static_cast<float>(p.d) + 1e-6f);  // from the split pass
    (void)scale;
    for (std::int64_t i = threadIdx.x; i < p.d; i += T)
      y[i] = ktune::from_float<E>(ktune::to_float(x[i]) * row_scale * ktune::to_float(p.weight[i]));
    __syncthreads();  // partial[] is reused by the next row
  }
}

/// The family's host adapter (docs/kernel-folder.md).
struct Family : FamilyBase {
  template <class Cfg, class E>
  static Status can_implement(const Args<E>& a) {
    KTUNE_TRY(validate(a));
    if (is_empty(a)) return Status::success();
    if (a.tokens > std::numeric_limits<std::int32_t>::max())
      return Status::too_large("rms_norm: more rows than grid.x allows (2^31 - 1)");
    if (a.tokens > kMaxRows) return Status::too_large("rms_norm: more rows than the split's scratch holds");
    return Status::success();
  }

  template <class Cfg, class E>
  static Status enqueue(const Args<E>& a, cudaStream_t stream) {
    ktune::LaunchShape s;
    s.grid = dim3(static_cast<unsigned>(a.tokens));
    s.block = dim3(Cfg::threads);
    const Params<E> params{a.in, a.weight, a.out, a.tokens, a.d};
    ktune::LaunchShape clear;
    clear.grid = dim3(256);
    clear.block = dim3(256);
    KTUNE_TRY(ktune::launch(clear_sums, clear, stream, a.tokens));
    ktune::LaunchShape split = s;
    split.grid = dim3(static_cast<unsigned>(a.tokens), kSplit);
    KTUNE_TRY(ktune::launch(sum_squares_split<Cfg, E>, split, stream, params));
    return ktune::launch(rms_norm_kernel<Cfg, E>, s, stream, params);
  }


  template <class Cfg, class E>
  static ktune::KernelResources resources(const Args<E>&) {
    return {reinterpret_cast<const void*>(&rms_norm_kernel<Cfg, E>), Cfg::threads, 0, 1};
  }
};

}  // namespace ktune::ops::rms_norm
