// kernels/common/norm_rows/bulk_rows.cuh: stage 6 (bulk rows) of every RMS norm kind: the persistent blocks of
// stage 3 fed by cp.async.bulk copies of whole rows into a shared-memory ring whose stages complete on mbarriers (sm_90).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <ktune/intrinsics.cuh>

#include "common.cuh"

namespace ktune::ops::norm_rows {
namespace detail {

// ---- stage 6: rows fed by bulk copies into a shared-memory ring ------------------------------------
// sm_90 PTX: mbarriers with transaction counts, and cp.async.bulk (the copy engine's 1-D form) from
// global to shared memory completing on one of them. Compiled only where the stage is feasible.
/// Makes the initialised mbarriers visible to the copy engine (the async proxy) before its first use.
__device__ __forceinline__ void mbarrier_init_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
/// One row of input and one of residual into a ring stage: the stage's barrier expects both copies'
/// bytes, then completes its phase. Issued by one thread.
__device__ __forceinline__ void bulk_copy_row(unsigned bar, unsigned dst, const void* in, const void* res,
                                              unsigned row_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Generic-proxy reads of this stage (the previous row's) are ordered before the copy engine's writes.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(2 * row_bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(in), "r"(row_bytes), "r"(bar)
               : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   dst + row_bytes),
               "l"(res), "r"(row_bytes), "r"(bar)
               : "memory");
#else
  __trap();  // stage 6 is pruned below sm_90 and never launched there
#endif
}
/// One row of input into a ring stage (the kinds without a residual): the same, one copy.
__device__ __forceinline__ void bulk_copy_row(unsigned bar, unsigned dst, const void* in, unsigned row_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(row_bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(in), "r"(row_bytes), "r"(bar)
               : "memory");
#else
  __trap();  // stage 6 is pruned below sm_90 and never launched there
#endif
}
/// Waits until the barrier's phase of parity `parity` has completed.
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}

/// Stage 6: block b takes rows b, b + gridDim.x, ... (n of them); thread 0 keeps the ring's `ring`
/// stages filled: rows i .. i + ring - 1 are in flight while row i is reduced. A stage is refilled right
/// after the barrier of the row it held: every thread has read it by then (x is in registers). One
/// barrier per row, two alternating warp-sum slots, as stage 3.
template <class K, class Cfg, class E>
__device__ __forceinline__ void bulk_rows(const Params<E>& p, unsigned char* ring, unsigned long long* full,
                                          float (*sums)[32]) {
  constexpr int Vec = Traits<K, Cfg, E>::vec;
  constexpr unsigned Inputs = K::row_inputs;  // rows per ring stage: input (and residual)
  constexpr int Vpt = Cfg::vpt;
  const int tid = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  const int nvec = p.h / Vec;
  const int stages = p.ring;
  const unsigned row_bytes = static_cast<unsigned>(p.h) * static_cast<unsigned>(sizeof(E));
  const std::int64_t first = blockIdx.x, step = gridDim.x;
  const std::int64_t n = first < p.tokens ? (p.tokens - 1 - first) / step + 1 : 0;
  const unsigned ring_base = smem_address(ring), full_base = smem_address(full);
  auto issue = [&](std::int64_t i) {  // row i of this block into stage i % stages
    const std::int64_t row = first + i * step;
    const int s = static_cast<int>(i % stages);
    if constexpr (K::residual)
      bulk_copy_row(full_base + 8u * s, ring_base + Inputs * row_bytes * s, p.input + row * p.input_stride,
                    p.residual + row * p.residual_stride, row_bytes);
    else
      bulk_copy_row(full_base + 8u * s, ring_base + Inputs * row_bytes * s, p.input + row * p.input_stride, row_bytes);
  };
  if (tid == 0) {
    for (int s = 0; s < stages; ++s) mbarrier_init(full_base + 8u * s, 1);
    mbarrier_init_fence();
  }
  __syncthreads();
  if constexpr (Cfg::pdl) pdl_wait();
  if (tid == 0)
    for (std::int64_t i = 0; i < stages && i < n; ++i) issue(i);
  if constexpr (Cfg::pdl)
    if (n <= stages) pdl_launch_dependents();
  uint4 w[Vpt];
#pragma unroll
  for (int k = 0; k < Vpt; ++k)
    w[k] = load_words(p.weight + static_cast<std::ptrdiff_t>(loaded_vector(tid + k * threads, nvec)) * Vec);
  for (std::int64_t i = 0; i < n; ++i) {
    const int s = static_cast<int>(i % stages);
    mbarrier_wait(full_base + 8u * s, static_cast<unsigned>((i / stages) & 1));
    const E* in_s = reinterpret_cast<const E*>(ring + Inputs * row_bytes * s);
    const E* res_s = K::residual ? in_s + p.h : nullptr;
    const std::int64_t row = first + i * step;
    E* in_row = p.input + row * p.input_stride;
    E* res_row = K::residual ? p.residual + row * p.residual_stride : nullptr;
    E* out_row = K::in_place ? in_row : p.output + row * p.output_stride;
    float x[Vpt][Vec];
    float sum = 0.f;
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = tid + k * threads;
      if (j < nvec) {
        const uint4 a = load_words(in_s + static_cast<std::ptrdiff_t>(j) * Vec);
        if constexpr (K::residual) {
          const uint4 r = load_words(res_s + static_cast<std::ptrdiff_t>(j) * Vec);
#pragma unroll
          for (int e = 0; e < Vec; ++e) {
            x[k][e] = element<E>(a, e) + element<E>(r, e);
            sum += x[k][e] * x[k][e];
          }
          store_words(res_row + static_cast<std::ptrdiff_t>(j) * Vec, pack_rounded<E, Vec>(x[k]));
        } else {
#pragma unroll
          for (int e = 0; e < Vec; ++e) {
            x[k][e] = element<E>(a, e);
            sum += x[k][e] * x[k][e];
          }
        }
      } else {
#pragma unroll
        for (int e = 0; e < Vec; ++e) x[k][e] = 0.f;
      }
    }
    float total = warp_allreduce(sum);
    const int lane = tid & 31;
    if (lane == 0) sums[i & 1][tid >> 5] = total;
    __syncthreads();
    total = warp_allreduce(lane < (threads >> 5) ? sums[i & 1][lane] : 0.f);
    if (tid == 0 && i + stages < n) issue(i + stages);
    if constexpr (Cfg::pdl)
      if (i + stages == n - 1) pdl_launch_dependents();
    const float inv_rms = rsqrtf(total / static_cast<float>(p.h) + p.eps);
    if constexpr (sizeof(E) < 4) keep_packed(w);
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = tid + k * threads;
      if (j < nvec) {
        store_words(out_row + static_cast<std::ptrdiff_t>(j) * Vec, normalised_words<K, E, Vec>(x[k], inv_rms, w[k]));
      }
    }
  }
}

}  // namespace detail
}  // namespace ktune::ops::norm_rows
