// family.cuh of the red-team family `reads_before_wait`: one block per row, the block size tuned, launched with
// programmatic dependent launch. It releases its dependents at its start and waits for the kernel before it
// (griddepcontrol.wait) only just before its stores, so that its whole reduction overlaps that kernel's tail:
// it reads its input before the kernel that writes it is known to be done.
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

/// One block per row, T threads striding over it with scalar loads, a warp-shuffle block reduction.
/// \tparam Cfg a Space::Config
/// \tparam E   float, __half or __nv_bfloat16
template <class Cfg, class E>
__global__ void __launch_bounds__(Cfg::threads) rms_norm_kernel(const Params<E> p) {
  constexpr int T = Cfg::threads;
  __shared__ float partial[32];
  // The next kernel on the stream may start launching at once: it waits for our completion before it reads
  // what we write.
  if constexpr (Cfg::pdl) ktune::pdl_launch_dependents();
  {
    const std::int64_t row = blockIdx.x;
    const E* x = p.in + row * p.d;
    E* y = p.out + row * p.d;

    float ss = 0.f;
    for (std::int64_t i = threadIdx.x; i < p.d; i += T) {
      const float v = ktune::to_float(x[i]);
      ss += v * v;
    }
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
    __syncthreads();
    ss = threadIdx.x % 32 < T / 32 ? partial[threadIdx.x % 32] : 0.f;
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    const float scale = rsqrtf(ss / static_cast<float>(p.d) + 1e-6f);
    // The kernel before us may still be reading `out`: wait for it before the first store. Everything above
    // overlaps its tail.
    if constexpr (Cfg::pdl) ktune::pdl_wait();
    for (std::int64_t i = threadIdx.x; i < p.d; i += T)
      y[i] = ktune::from_float<E>(ktune::to_float(x[i]) * scale * ktune::to_float(p.weight[i]));
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
    return Status::success();
  }

  template <class Cfg, class E>
  static Status enqueue(const Args<E>& a, cudaStream_t stream) {
    ktune::LaunchShape s;
    s.grid = dim3(static_cast<unsigned>(a.tokens));
    s.block = dim3(Cfg::threads);
    s.pdl = Cfg::pdl;
    const Params<E> params{a.in, a.weight, a.out, a.tokens, a.d};
    return ktune::launch(rms_norm_kernel<Cfg, E>, s, stream, params);
  }


  template <class Cfg, class E>
  static ktune::KernelResources resources(const Args<E>&) {
    return {reinterpret_cast<const void*>(&rms_norm_kernel<Cfg, E>), Cfg::threads, 0, 1};
  }
};

}  // namespace ktune::ops::rms_norm
