// kernels/common/norm_rows/rows_kernel.cuh: rows_kernel, the persistent grid of stages 3, 4 and 6 of every RMS
// norm kind: it gives each block or warp its row group and runs that stage's row loop.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "bulk_rows.cuh"
#include "common.cuh"
#include "persistent_rows.cuh"
#include "space.hpp"

namespace ktune::ops::norm_rows {

/// Stages 3, 4 and 6: a persistent grid of RowFamily::plan_grid blocks; stages 3 and 6 give each block one
/// row at a time (block = fitted threads), stage 4 each warp (block = Space::warp_rows_per_block warps).
/// Dynamic shared memory: stage 6's ring (Params::ring stages of a row of input, and one of residual).
/// \tparam K   the op's Kind
/// \tparam Cfg a RowSpace<K>::Config
/// \tparam E   element type
template <class K, class Cfg, class E>
__global__ void __launch_bounds__(Traits<K, Cfg, E>::max_threads, Traits<K, Cfg, E>::min_blocks)
    rows_kernel(const Params<E> p) {
  using T = Traits<K, Cfg, E>;
  using Space = typename T::Space;
  static_assert(T::persistent, "rows_kernel runs stages 3, 4 and 6.");
  static_assert(T::cluster == 1, "The persistent stages give a row to one block or one warp.");
  static_assert(T::vec > 1 && T::vec * sizeof(E) == 16, "The persistent stages move 16-byte vectors.");
  constexpr bool WarpRows = T::stage == Space::warp_rows;
  __shared__ float row_sums[2][32];  // stages 3, 6: two slots of warp sums, alternating between rows
  if constexpr (T::stage == Space::bulk_rows) {
    __shared__ unsigned long long full[Space::max_ring_stages];  // one mbarrier per ring stage
    extern __shared__ __align__(128) unsigned char ring[];
    detail::bulk_rows<K, Cfg, E>(p, ring, full, row_sums);
  } else if constexpr (WarpRows) {
    const int warps = static_cast<int>(blockDim.x >> 5);
    const detail::RowGroup g{static_cast<std::int64_t>(blockIdx.x) * warps + (threadIdx.x >> 5),
                             static_cast<std::int64_t>(gridDim.x) * warps, static_cast<int>(threadIdx.x & 31), 32};
    detail::persistent_rows<K, Cfg, E, true>(p, g, row_sums);
  } else {
    const detail::RowGroup g{static_cast<std::int64_t>(blockIdx.x), static_cast<std::int64_t>(gridDim.x),
                             static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
    detail::persistent_rows<K, Cfg, E, false>(p, g, row_sums);
  }
}

}  // namespace ktune::ops::norm_rows
