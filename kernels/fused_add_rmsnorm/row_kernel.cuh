// kernels/fused_add_rmsnorm/row_kernel.cuh: fused_add_rmsnorm_kernel, stages 0-2 and 5: one block (or
// one cluster of cs blocks) per row, the stage chosen at compile time: 0 registers, 1 shared-memory
// staging (S's structure), 2 re-read, 5 a cluster with both stores after its reduction.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/intrinsics.cuh>

#include "common.cuh"
#include "original.cuh"  // detail::store_floats, detail::load_floats (stage 1 stages x as S does)
#include "space.hpp"

namespace ktune::ops::fused_add_rmsnorm {

/// Stages 0-2 and 5: one block per (row, cluster rank): grid.x = tokens * cluster, block = fitted threads
/// (see Space). Stages 3, 4 and 6 run fused_add_rmsnorm_rows_kernel. Dynamic shared memory: part * vec
/// floats with shared-memory staging, none otherwise.
template <class Cfg, class E>
__global__ void __launch_bounds__(Traits<Cfg, E>::max_threads, Traits<Cfg, E>::min_blocks) fused_add_rmsnorm_kernel(const Params<E> p) {
  using T = Traits<Cfg, E>;
  constexpr int Vec = T::vec;
  constexpr int Vpt = T::vpt;
  constexpr int Cluster = T::cluster;
  using Vector = AlignedVector<E, Vec>;
  static_assert(Vec >= 1 && Vec * sizeof(E) <= 16, "A vector access is one element or at most 16 bytes.");
  static_assert(T::holds_registers || Vpt == 1,
                "Only register staging holds several vectors per thread; the other stagings loop one vector at a time.");
  static_assert(!T::persistent, "Stages 3, 4 and 6 run fused_add_rmsnorm_rows_kernel.");
  static_assert(Cluster >= 1 && Cluster <= 8 && (Cluster & (Cluster - 1)) == 0,
                "A row is split over 1, 2, 4 or 8 blocks of a portable cluster.");
  static_assert(T::max_threads >= 32 && T::max_threads % 32 == 0, "Blocks are whole warps.");

  __shared__ float warp_sums[32];
  __shared__ float block_total;  // read by the other blocks of the cluster
  extern __shared__ __align__(16) float x_stage[];

  const int rank = Cluster > 1 ? static_cast<int>(blockIdx.x % Cluster) : 0;
  const std::int64_t row = blockIdx.x / Cluster;
  const int nvec = p.h / Vec;
  const int begin = rank * p.part;
  const int end = min(nvec, begin + p.part);
  E* __restrict__ in_row = p.input + row * p.input_stride;
  E* __restrict__ res_row = p.residual + row * p.residual_stride;
  const E* __restrict__ weight = p.weight;
  const int tid = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);

  if constexpr (Cfg::pdl) pdl_wait();

  float sum = 0.f;
  if constexpr (T::stage == Space::registers || T::stage == Space::cluster_late_stores) {
    // Stage 5 stores both outputs after the cluster's reduction: a residual store issued before it
    // would be waited for by the cluster barrier's release (the profile's membar stall).
    constexpr bool Late = T::stage == Space::cluster_late_stores;
    // One pass over global memory: every load is issued before any is used, the weights included so
    // that their latency hides behind the reduction.
    Vector a[Vpt], r[Vpt], w[Vpt];
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = begin + tid + k * threads;
      if (j < end) {
        a[k] = detail::load_vector<E, Vec>(in_row + static_cast<std::ptrdiff_t>(j) * Vec);
        r[k] = detail::load_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec);
        w[k] = detail::load_vector<E, Vec>(weight + static_cast<std::ptrdiff_t>(j) * Vec);
      }
    }
    // Stage 5: the next kernel may start its launch now (it still waits for this grid to complete).
    if constexpr (Late && Cfg::pdl) pdl_launch_dependents();
    float x[Vpt][Vec];
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = begin + tid + k * threads;
      if (j < end) {
#pragma unroll
        for (int e = 0; e < Vec; ++e) {
          x[k][e] = to_float(a[k].v[e]) + to_float(r[k].v[e]);
          sum += x[k][e] * x[k][e];
          r[k].v[e] = from_float<E>(x[k][e]);
        }
        if constexpr (!Late) detail::store_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec, r[k]);
      }
    }
    const float total = detail::row_sum<Cluster>(sum, warp_sums, &block_total);
    const float inv_rms = rsqrtf(total / static_cast<float>(p.h) + p.eps);
    if constexpr (!Late && Cfg::pdl) pdl_launch_dependents();
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = begin + tid + k * threads;
      if (j < end) {
        if constexpr (Late) detail::store_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec, r[k]);
        Vector o;
#pragma unroll
        for (int e = 0; e < Vec; ++e) o.v[e] = from_float<E>(x[k][e] * inv_rms * to_float(w[k].v[e]));
        detail::store_vector<E, Vec>(in_row + static_cast<std::ptrdiff_t>(j) * Vec, o);
      }
    }
  } else if constexpr (T::stage == Space::smem) {
    // S's structure: the residual is written in the first pass and x kept in shared memory as fp32
    // (each thread reads back only what it wrote, so the reduction's barrier is the only one needed).
#pragma unroll 2
    for (int j = begin + tid; j < end; j += threads) {
      const Vector a = detail::load_vector<E, Vec>(in_row + static_cast<std::ptrdiff_t>(j) * Vec);
      Vector r = detail::load_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec);
      float x[Vec];
#pragma unroll
      for (int e = 0; e < Vec; ++e) {
        x[e] = to_float(a.v[e]) + to_float(r.v[e]);
        sum += x[e] * x[e];
        r.v[e] = from_float<E>(x[e]);
      }
      detail::store_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec, r);
      detail::store_floats(x_stage + static_cast<std::ptrdiff_t>(j - begin) * Vec, x);
    }
    const float total = detail::row_sum<Cluster>(sum, warp_sums, &block_total);
    const float inv_rms = rsqrtf(total / static_cast<float>(p.h) + p.eps);
    if constexpr (Cfg::pdl) pdl_launch_dependents();
#pragma unroll 2
    for (int j = begin + tid; j < end; j += threads) {
      const Vector w = detail::load_vector<E, Vec>(weight + static_cast<std::ptrdiff_t>(j) * Vec);
      float x[Vec];
      detail::load_floats(x, x_stage + static_cast<std::ptrdiff_t>(j - begin) * Vec);
      Vector o;
#pragma unroll
      for (int e = 0; e < Vec; ++e) o.v[e] = from_float<E>(x[e] * inv_rms * to_float(w.v[e]));
      detail::store_vector<E, Vec>(in_row + static_cast<std::ptrdiff_t>(j) * Vec, o);
    }
  } else {
    static_assert(T::stage == Space::reread, "stage is 0 (registers), 1 (smem) or 2 (reread).");
    // Pass one only reads: input and residual keep their values until pass two has read them again
    // (mostly from L2), so x is recomputed with the same bits. Each element is read and written by one
    // thread only, so in-place updates are safe.
#pragma unroll 2
    for (int j = begin + tid; j < end; j += threads) {
      const Vector a = detail::load_vector<E, Vec>(in_row + static_cast<std::ptrdiff_t>(j) * Vec);
      const Vector r = detail::load_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec);
#pragma unroll
      for (int e = 0; e < Vec; ++e) {
        const float x = to_float(a.v[e]) + to_float(r.v[e]);
        sum += x * x;
      }
    }
    const float total = detail::row_sum<Cluster>(sum, warp_sums, &block_total);
    const float inv_rms = rsqrtf(total / static_cast<float>(p.h) + p.eps);
    if constexpr (Cfg::pdl) pdl_launch_dependents();
    // Not unrolled: three vectors per round already, and two rounds would not fit the 32 registers
    // that keep 2048 threads resident.
#pragma unroll 1
    for (int j = begin + tid; j < end; j += threads) {
      const Vector a = detail::load_vector<E, Vec>(in_row + static_cast<std::ptrdiff_t>(j) * Vec);
      Vector r = detail::load_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec);
      const Vector w = detail::load_vector<E, Vec>(weight + static_cast<std::ptrdiff_t>(j) * Vec);
      Vector o;
#pragma unroll
      for (int e = 0; e < Vec; ++e) {
        const float x = to_float(a.v[e]) + to_float(r.v[e]);
        r.v[e] = from_float<E>(x);
        o.v[e] = from_float<E>(x * inv_rms * to_float(w.v[e]));
      }
      detail::store_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec, r);
      detail::store_vector<E, Vec>(in_row + static_cast<std::ptrdiff_t>(j) * Vec, o);
    }
  }
  if constexpr (Cluster > 1) detail::cluster_wait();
}

}  // namespace ktune::ops::fused_add_rmsnorm
