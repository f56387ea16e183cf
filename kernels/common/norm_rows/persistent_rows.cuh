// kernels/common/norm_rows/persistent_rows.cuh: stages 3 (persistent rows) and 4 (warp rows) of every RMS norm
// kind, one device loop: a row group (a block or a warp) keeps its weights in registers and takes every
// `groups`-th row, the next row's loads in flight across this row's reduction.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <ktune/intrinsics.cuh>

#include "common.cuh"

namespace ktune::ops::norm_rows {
namespace detail {

/// The persistent stages' view of one thread: which rows its group (a block for stage 3, a warp for
/// stage 4) takes, and which vectors of a row are its own: first, first + stride, ... (vpt of them).
struct RowGroup {
  std::int64_t first_row;  // the group's first row; then every `groups` rows
  std::int64_t groups;
  int first;               // this thread's first vector of a row
  int stride;              // threads per group
};

/// Issues the loads of row `row`'s input (and residual) vectors of this thread (nothing waits for them).
template <class K, class E, int Vec, int Vpt>
__device__ __forceinline__ void load_row(const Params<E>& p, std::int64_t row, const RowGroup& g, int nvec,
                                         uint4 (&a)[Vpt], uint4 (&r)[Vpt]) {
  const E* in_row = p.input + row * p.input_stride;
  const E* res_row = K::residual ? p.residual + row * p.residual_stride : nullptr;
#pragma unroll
  for (int k = 0; k < Vpt; ++k) {
    const int j = loaded_vector(g.first + k * g.stride, nvec);
    a[k] = load_words(in_row + static_cast<std::ptrdiff_t>(j) * Vec);
    if constexpr (K::residual) r[k] = load_words(res_row + static_cast<std::ptrdiff_t>(j) * Vec);
  }
}

/// Row `row` of a persistent stage, its input and residual already loaded into a, r (the weights into
/// w): x, the residual store, the row's sum of squares (stage 3: warp sums, one barrier, every warp
/// adds the warp sums in warp order, as row_sum<1>; stage 4: the warp's butterfly alone), the output.
/// `sums` is the block's slot for this row: callers alternate two slots between consecutive rows, so
/// one barrier per row is enough (a warp writes a slot again only after the next row's barrier, which
/// every warp reaches after reading it).
///
/// The kinds without a residual compute x twice, before the barrier for the sum and after it for the
/// output, from the loaded words (the same conversions, so the same bits): the words stay live across
/// the barrier anyway, and x in fp32 is twice their registers at 16-bit. Held across the barrier it took
/// rmsnorm's stage 3 at vpt 4 to 106 registers (80 now), two blocks of 256 threads per SM, whose warps
/// waited at the barrier 41% of their cycles (fp16, T = 8192, h = 8192, H200 profile); recomputing gained
/// 1-4% of a same-size copy at 16-bit (docs/gpu-log.md). The residual kinds hold x = input + residual:
/// recomputing the sum cost them 0.4-0.8% at 16-bit in the same A/B.
template <class K, bool WarpRows, class E, int Vec, int Vpt>
__device__ __forceinline__ void finish_row(const Params<E>& p, std::int64_t row, const RowGroup& g, int nvec,
                                           uint4 (&a)[Vpt], const uint4 (&r)[Vpt], const uint4 (&w)[Vpt], float* sums) {
  E* in_row = p.input + row * p.input_stride;
  E* res_row = K::residual ? p.residual + row * p.residual_stride : nullptr;
  E* out_row = K::in_place ? in_row : p.output + row * p.output_stride;
  float held[Vpt][Vec];  // x across the barrier, residual kinds only (no registers otherwise)
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < Vpt; ++k) {
    const int j = g.first + k * g.stride;
    float x[Vec];
    row_x<K, E, Vec>(a[k], r[k], x);
    if (j < nvec) {
#pragma unroll
      for (int e = 0; e < Vec; ++e) sum += x[e] * x[e];
      if constexpr (K::residual) store_words(res_row + static_cast<std::ptrdiff_t>(j) * Vec, pack_rounded<E, Vec>(x));
    }
    if constexpr (K::residual) {
#pragma unroll
      for (int e = 0; e < Vec; ++e) held[k][e] = x[e];
    }
  }
  float total = warp_allreduce(sum);
  if constexpr (!WarpRows) {
    const int lane = threadIdx.x & 31;
    if (lane == 0) sums[threadIdx.x >> 5] = total;
    __syncthreads();
    total = warp_allreduce(lane < static_cast<int>(blockDim.x >> 5) ? sums[lane] : 0.f);
  }
  const float inv_rms = rsqrtf(total / static_cast<float>(p.h) + p.eps);
  // Opaque to the compiler: it cannot keep the first x (a common subexpression) instead of the words.
  if constexpr (!K::residual) keep_packed(a);
#pragma unroll
  for (int k = 0; k < Vpt; ++k) {
    const int j = g.first + k * g.stride;
    if (j < nvec) {
      float x[Vec];
      if constexpr (K::residual) {
#pragma unroll
        for (int e = 0; e < Vec; ++e) x[e] = held[k][e];
      } else {
        row_x<K, E, Vec>(a[k], r[k], x);
      }
      store_words(out_row + static_cast<std::ptrdiff_t>(j) * Vec, normalised_words<K, E, Vec>(x, inv_rms, w[k]));
    }
  }
}

/// Stages 3 and 4: a group (block or warp) takes rows first_row, first_row + groups, ... Its weights are
/// loaded once; two register sets of input and residual alternate, so the next row's loads are issued
/// before the current row's reduction and stay in flight across it. With PDL, the dependent grid is
/// triggered once the group's last row is loaded.
template <class K, class Cfg, class E, bool WarpRows>
__device__ __forceinline__ void persistent_rows(const Params<E>& p, const RowGroup& g, float (*sums)[32]) {
  constexpr int Vec = Traits<K, Cfg, E>::vec;
  constexpr int Vpt = Cfg::vpt;
  static_assert(Vec * sizeof(E) == 16, "The persistent stages move 16-byte vectors.");
  const int nvec = p.h / Vec;
  if constexpr (Cfg::pdl) pdl_wait();
  std::int64_t row = g.first_row;
  if (row >= p.tokens) return;  // a warp past the last row (stage 4); stage 3's grid has no such block
  uint4 w[Vpt];
#pragma unroll
  for (int k = 0; k < Vpt; ++k)
    w[k] = load_words(p.weight + static_cast<std::ptrdiff_t>(loaded_vector(g.first + k * g.stride, nvec)) * Vec);
  uint4 a0[Vpt], r0[Vpt], a1[Vpt], r1[Vpt];
  load_row<K, E, Vec, Vpt>(p, row, g, nvec, a0, r0);
  // Unrolled by two so that each register set keeps its registers: a copy from the set in flight to
  // the other would wait for its loads.
  for (;;) {
    std::int64_t next = row + g.groups;
    if (next < p.tokens) load_row<K, E, Vec, Vpt>(p, next, g, nvec, a1, r1);
    else if constexpr (Cfg::pdl) pdl_launch_dependents();
    if constexpr (sizeof(E) < 4) keep_packed(w);
    finish_row<K, WarpRows, E, Vec, Vpt>(p, row, g, nvec, a0, r0, w, sums[0]);
    if (next >= p.tokens) break;
    row = next;
    next = row + g.groups;
    if (next < p.tokens) load_row<K, E, Vec, Vpt>(p, next, g, nvec, a0, r0);
    else if constexpr (Cfg::pdl) pdl_launch_dependents();
    if constexpr (sizeof(E) < 4) keep_packed(w);
    finish_row<K, WarpRows, E, Vec, Vpt>(p, row, g, nvec, a1, r1, w, sums[1]);
    if (next >= p.tokens) break;
    row = next;
  }
}

}  // namespace detail
}  // namespace ktune::ops::norm_rows
