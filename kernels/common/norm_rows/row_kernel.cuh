// kernels/common/norm_rows/row_kernel.cuh: row_kernel, stages 0-2, 5 and 7 of every RMS norm kind: one block
// (or one cluster of cs blocks) per row, the stage chosen at compile time: 0 registers, 1 shared-memory
// staging (FusedAddRMSNormKernel's structure), 2 re-read (RMSNormKernel's), 5 a cluster with its stores
// after the reduction, 7 registers with less held across the reduction.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/intrinsics.cuh>

#include "common.cuh"
#include "space.hpp"

namespace ktune::ops::norm_rows {

/// Stages 0-2, 5 and 7: one block per (row, cluster rank): grid.x = tokens * cluster, block = fitted threads
/// (see RowSpace). Stages 3, 4 and 6 run rows_kernel. Dynamic shared memory: part * vec floats with
/// shared-memory staging, none otherwise.
/// \tparam K   the op's Kind (residual or not, weight or 1 + weight)
/// \tparam Cfg a RowSpace<K>::Config
/// \tparam E   element type
template <class K, class Cfg, class E>
__global__ void __launch_bounds__(Traits<K, Cfg, E>::max_threads, Traits<K, Cfg, E>::min_blocks) row_kernel(const Params<E> p) {
  using T = Traits<K, Cfg, E>;
  using Space = typename T::Space;
  constexpr int Vec = T::vec;
  constexpr int Vpt = T::vpt;
  constexpr int Cluster = T::cluster;
  constexpr bool Residual = K::residual;
  using Vector = AlignedVector<E, Vec>;
  static_assert(Vec >= 1 && Vec * sizeof(E) <= 16, "A vector access is one element or at most 16 bytes.");
  static_assert(T::holds_registers || Vpt == 1,
                "Only register staging holds several vectors per thread; the other stagings loop one vector at a time.");
  static_assert(!T::persistent, "Stages 3, 4 and 6 run rows_kernel.");
  static_assert(Cluster >= 1 && Cluster <= 8 && (Cluster & (Cluster - 1)) == 0,
                "A row is split over 1, 2, 4 or 8 blocks of a portable cluster.");
  static_assert(T::max_threads >= 32 && T::max_threads % 32 == 0, "Blocks are whole warps.");

  __shared__ float warp_sums[32];
  __shared__ detail::ClusterPartials<Cluster> partials;  // the row's partial sums, one per block of its cluster
  extern __shared__ __align__(16) float x_stage[];

  const int rank = Cluster > 1 ? static_cast<int>(blockIdx.x % Cluster) : 0;
  const std::int64_t row = blockIdx.x / Cluster;
  const int nvec = p.h / Vec;
  const int begin = rank * p.part;
  const int end = min(nvec, begin + p.part);
  E* __restrict__ in_row = p.input + row * p.input_stride;
  E* __restrict__ res_row = Residual ? p.residual + row * p.residual_stride : nullptr;
  // The result's row: input's (in place) for the residual kinds, output's for the others. Not
  // __restrict__: an output call may pass output == input (in place, same stride), as sgl_kernel allows.
  E* const out_row = Residual ? in_row : p.output + row * p.output_stride;
  const E* __restrict__ weight = p.weight;
  const int tid = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  // Stores of the result go through in_row itself in place, so that the residual kinds' kernels see
  // exactly the pointers (and aliasing facts) they were written with.
  auto result_at = [&](int j) -> E* {
    if constexpr (Residual) return in_row + static_cast<std::ptrdiff_t>(j) * Vec;
    else return out_row + static_cast<std::ptrdiff_t>(j) * Vec;
  };

  if constexpr (Cluster > 1) detail::cluster_partials_begin(partials);
  if constexpr (Cfg::pdl) pdl_wait();

  float sum = 0.f;
  if constexpr (T::stage == Space::registers || T::stage == Space::cluster_late_stores) {
    // Stage 5 stores after the cluster's reduction: a residual store issued before it could be waited for
    // by the release of the exchange (with a cluster barrier, the profile's membar stall).
    constexpr bool Late = T::stage == Space::cluster_late_stores;
    // One pass over global memory: every load is issued before any is used, the weights included so
    // that their latency hides behind the reduction.
    Vector a[Vpt], r[Vpt], w[Vpt];
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = begin + tid + k * threads;
      if (j < end) {
        a[k] = detail::load_vector<E, Vec>(in_row + static_cast<std::ptrdiff_t>(j) * Vec);
        if constexpr (Residual) r[k] = detail::load_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec);
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
        to_floats(x[k], a[k]);
        if constexpr (Residual) {
          float y[Vec];
          to_floats(y, r[k]);
#pragma unroll
          for (int e = 0; e < Vec; ++e) x[k][e] += y[e];
          r[k] = from_floats<E>(x[k]);
        }
#pragma unroll
        for (int e = 0; e < Vec; ++e) sum += x[k][e] * x[k][e];
        if constexpr (Residual && !Late)
          detail::store_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec, r[k]);
      }
    }
    const float total = detail::row_sum<Cluster>(sum, warp_sums, &partials);
    const float inv_rms = rsqrtf(total / static_cast<float>(p.h) + p.eps);
    if constexpr (!Late && Cfg::pdl) pdl_launch_dependents();
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = begin + tid + k * threads;
      if (j < end) {
        if constexpr (Residual && Late)
          detail::store_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec, r[k]);
        float wf[Vec];
        to_floats(wf, w[k]);
#pragma unroll
        for (int e = 0; e < Vec; ++e) wf[e] = x[k][e] * inv_rms * detail::weight_factor<K>(wf[e]);
        detail::store_vector<E, Vec>(result_at(j), from_floats<E>(wf));
      }
    }
  } else if constexpr (T::stage == Space::lean_registers) {
    // Stage 7: stage 0 holding less across the reduction, for more blocks per SM. The weights are loaded
    // after it, and the kinds without a residual keep the input as loaded words and convert it again for
    // the output (the same conversions, so the same bits); the residual kinds hold x, which is no more
    // registers than the input and residual words at 16-bit and half of them at fp32.
    static_assert(Vec * sizeof(E) == 16, "Stage 7 moves 16-byte vectors.");
    uint4 a[Vpt], r[Vpt];
    float held[Residual ? Vpt : 1][Vec];
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = begin + tid + k * threads;
      if (j < end) {
        a[k] = detail::load_words(in_row + static_cast<std::ptrdiff_t>(j) * Vec);
        if constexpr (Residual) r[k] = detail::load_words(res_row + static_cast<std::ptrdiff_t>(j) * Vec);
      }
    }
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = begin + tid + k * threads;
      if (j < end) {
        float x[Vec];
        detail::row_x<K, E, Vec>(a[k], r[k], x);
#pragma unroll
        for (int e = 0; e < Vec; ++e) sum += x[e] * x[e];
        if constexpr (Residual) {
          detail::store_words(res_row + static_cast<std::ptrdiff_t>(j) * Vec, detail::pack_rounded<E, Vec>(x));
#pragma unroll
          for (int e = 0; e < Vec; ++e) held[k][e] = x[e];
        }
      }
    }
    const float total = detail::row_sum<Cluster>(sum, warp_sums, &partials);
    const float inv_rms = rsqrtf(total / static_cast<float>(p.h) + p.eps);
    if constexpr (Cfg::pdl) pdl_launch_dependents();
    // Opaque to the compiler: it cannot keep the first x (a common subexpression) instead of the words.
    if constexpr (!Residual) detail::keep_packed(a);
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = begin + tid + k * threads;
      if (j < end) {
        const uint4 w = detail::load_words(weight + static_cast<std::ptrdiff_t>(j) * Vec);
        float x[Vec];
        if constexpr (Residual) {
#pragma unroll
          for (int e = 0; e < Vec; ++e) x[e] = held[k][e];
        } else {
          detail::row_x<K, E, Vec>(a[k], r[k], x);
        }
        detail::store_words(result_at(j), detail::normalised_words<K, E, Vec>(x, inv_rms, w));
      }
    }
  } else if constexpr (T::stage == Space::smem) {
    // FusedAddRMSNormKernel's structure: the residual is written in the first pass and x kept in shared
    // memory as fp32 (each thread reads back only what it wrote, so the reduction's barrier is the only
    // one needed).
#pragma unroll 2
    for (int j = begin + tid; j < end; j += threads) {
      const Vector a = detail::load_vector<E, Vec>(in_row + static_cast<std::ptrdiff_t>(j) * Vec);
      float x[Vec];
      if constexpr (Residual) {
        Vector r = detail::load_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec);
#pragma unroll
        for (int e = 0; e < Vec; ++e) {
          x[e] = to_float(a.v[e]) + to_float(r.v[e]);
          sum += x[e] * x[e];
          r.v[e] = from_float<E>(x[e]);
        }
        detail::store_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec, r);
      } else {
#pragma unroll
        for (int e = 0; e < Vec; ++e) {
          x[e] = to_float(a.v[e]);
          sum += x[e] * x[e];
        }
      }
      detail::store_floats(x_stage + static_cast<std::ptrdiff_t>(j - begin) * Vec, x);
    }
    const float total = detail::row_sum<Cluster>(sum, warp_sums, &partials);
    const float inv_rms = rsqrtf(total / static_cast<float>(p.h) + p.eps);
    if constexpr (Cfg::pdl) pdl_launch_dependents();
#pragma unroll 2
    for (int j = begin + tid; j < end; j += threads) {
      const Vector w = detail::load_vector<E, Vec>(weight + static_cast<std::ptrdiff_t>(j) * Vec);
      float x[Vec];
      detail::load_floats(x, x_stage + static_cast<std::ptrdiff_t>(j - begin) * Vec);
      Vector o;
#pragma unroll
      for (int e = 0; e < Vec; ++e) o.v[e] = from_float<E>(x[e] * inv_rms * detail::weight_factor<K>(to_float(w.v[e])));
      detail::store_vector<E, Vec>(result_at(j), o);
    }
  } else {
    static_assert(T::stage == Space::reread, "stage is 0 (registers), 1 (smem) or 2 (reread).");
    // Pass one only reads: input and residual keep their values until pass two has read them again
    // (mostly from L2), so x is recomputed with the same bits. Each element is read and written by one
    // thread only, so in-place updates are safe.
#pragma unroll 2
    for (int j = begin + tid; j < end; j += threads) {
      const Vector a = detail::load_vector<E, Vec>(in_row + static_cast<std::ptrdiff_t>(j) * Vec);
      if constexpr (Residual) {
        const Vector r = detail::load_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec);
#pragma unroll
        for (int e = 0; e < Vec; ++e) {
          const float x = to_float(a.v[e]) + to_float(r.v[e]);
          sum += x * x;
        }
      } else {
#pragma unroll
        for (int e = 0; e < Vec; ++e) {
          const float x = to_float(a.v[e]);
          sum += x * x;
        }
      }
    }
    const float total = detail::row_sum<Cluster>(sum, warp_sums, &partials);
    const float inv_rms = rsqrtf(total / static_cast<float>(p.h) + p.eps);
    if constexpr (Cfg::pdl) pdl_launch_dependents();
    // Not unrolled: three vectors per round already, and two rounds would not fit the 32 registers
    // that keep 2048 threads resident.
#pragma unroll 1
    for (int j = begin + tid; j < end; j += threads) {
      const Vector a = detail::load_vector<E, Vec>(in_row + static_cast<std::ptrdiff_t>(j) * Vec);
      Vector r;
      if constexpr (Residual) r = detail::load_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec);
      const Vector w = detail::load_vector<E, Vec>(weight + static_cast<std::ptrdiff_t>(j) * Vec);
      Vector o;
      if constexpr (Residual) {
#pragma unroll
        for (int e = 0; e < Vec; ++e) {
          const float x = to_float(a.v[e]) + to_float(r.v[e]);
          r.v[e] = from_float<E>(x);
          o.v[e] = from_float<E>(x * inv_rms * detail::weight_factor<K>(to_float(w.v[e])));
        }
        detail::store_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec, r);
      } else {
#pragma unroll
        for (int e = 0; e < Vec; ++e)
          o.v[e] = from_float<E>(to_float(a.v[e]) * inv_rms * detail::weight_factor<K>(to_float(w.v[e])));
      }
      detail::store_vector<E, Vec>(result_at(j), o);
    }
  }
}

}  // namespace ktune::ops::norm_rows
