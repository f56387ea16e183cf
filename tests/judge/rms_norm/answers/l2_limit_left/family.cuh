// family.cuh of the red-team family `l2_limit_left`: one block per row, the block size tuned; the adapter sets aside
// persisting L2 for the whole context (cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize)) and launches with an
// access-policy window on its own launch, so that the store pass re-reads each row from L2; the set-aside stays
// after the call.
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

/// One block per row, T threads striding over it with scalar loads, a warp-shuffle block reduction. The row
/// is read twice (sum of squares, then the scaled store): the second read hits L2 when the row persists.
/// \tparam Cfg a Space::Config
/// \tparam E   float, __half or __nv_bfloat16
template <class Cfg, class E>
__global__ void __launch_bounds__(Cfg::threads) rms_norm_kernel(const Params<E> p) {
  constexpr int T = Cfg::threads;
  __shared__ float partial[32];
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
  for (std::int64_t i = threadIdx.x; i < p.d; i += T)
    y[i] = ktune::from_float<E>(ktune::to_float(x[i]) * scale * ktune::to_float(p.weight[i]));
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
    // Persisting L2 is 0 bytes by default: set aside as much as the device allows (up to the input's size), then
    // mark the input persisting for this launch only, so the window does not outlive the call.
    int device = 0, max_persisting = 0, max_window = 0;
    KTUNE_CUDA_TRY(cudaGetDevice(&device));
    KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&max_persisting, cudaDevAttrMaxPersistingL2CacheSize, device));
    KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, device));
    const std::size_t bytes = static_cast<std::size_t>(a.tokens) * static_cast<std::size_t>(a.d) * sizeof(E);
    if (max_persisting > 0)
      KTUNE_CUDA_TRY(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, std::min<std::size_t>(bytes, max_persisting)));

    cudaLaunchAttribute attrs[1];
    attrs[0].id = cudaLaunchAttributeAccessPolicyWindow;
    attrs[0].val.accessPolicyWindow.base_ptr = const_cast<E*>(a.in);
    attrs[0].val.accessPolicyWindow.num_bytes = std::min<std::size_t>(bytes, static_cast<std::size_t>(max_window));
    attrs[0].val.accessPolicyWindow.hitRatio = 1.0f;
    attrs[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attrs[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(a.tokens));
    config.blockDim = dim3(Cfg::threads);
    config.stream = stream;
    config.attrs = max_window > 0 ? attrs : nullptr;
    config.numAttrs = max_window > 0 ? 1 : 0;
    const Params<E> params{a.in, a.weight, a.out, a.tokens, a.d};
    KTUNE_CUDA_TRY(cudaLaunchKernelEx(&config, rms_norm_kernel<Cfg, E>, params));
    return Status::success();
  }

  template <class Cfg, class E>
  static ktune::KernelResources resources(const Args<E>&) {
    return {reinterpret_cast<const void*>(&rms_norm_kernel<Cfg, E>), Cfg::threads, 0, 1};
  }
};

}  // namespace ktune::ops::rms_norm
