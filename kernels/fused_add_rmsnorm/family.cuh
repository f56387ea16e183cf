// kernels/fused_add_rmsnorm/family.cuh: the tunable family S_θ of fused_add_rmsnorm (device code
// templated on Space::Config) and its host adapter Family.
//
// Every configuration computes, per row: x = input + residual in fp32; residual <- x (rounded);
// input <- x * rsqrt(sum(x^2) / h + eps) * weight (rounded), the product taken in that order as S does.
// Configurations differ only in the order the fp32 sum of squares is added up, so they may differ in
// the last bits of the result; each one is deterministic (fixed reduction order, no atomics), so the
// same input gives bitwise the same output on every run.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
#include <ktune/family.hpp>
#include <ktune/intrinsics.cuh>
#include <ktune/launch.hpp>
#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "args.hpp"
#include "harness.hpp"
#include "original.cuh"
#include "space.hpp"

namespace ktune::ops::fused_add_rmsnorm {

/// The kernel's one parameter struct. Row r of input starts at input + r * input_stride; a block of
/// cluster rank k covers vectors [k * part, min((k + 1) * part, h / vec)) of its row. The persistent
/// stages (3, 4, 6) loop over rows up to `tokens`; the others take their row from the block index.
template <class E>
struct Params {
  E* input;
  E* residual;
  const E* weight;
  std::int64_t input_stride;   // elements
  std::int64_t residual_stride;
  std::int64_t tokens;
  int h;
  int part;                    // vectors per block of a row
  int ring;                    // stage 6: shared-memory stages of the ring (rows in flight per block)
  float eps;
};

/// Compile-time facts of a configuration for element type E.
template <class Cfg, class E>
struct Traits {
  static constexpr int element_bytes = static_cast<int>(sizeof(E));
  static constexpr int vec = Space::vector_elements(Cfg::vector_bytes, element_bytes);
  static constexpr int vpt = Cfg::vpt;
  static constexpr int stage = Cfg::stage;
  static constexpr int cluster = Cfg::cluster;
  /// The kernel's __launch_bounds__. sm_90 and every older row share these register-file numbers;
  /// an architecture with a smaller register file would need its own.
  static constexpr int max_threads = Space::max_threads(vec, vpt, stage, element_bytes, arch_limits(90));
  /// Blocks of max_threads the kernel is compiled to keep resident per SM (the launch bounds' second
  /// value). The looping stagings of a whole row need few registers: ask for a full SM (2048 threads,
  /// <= 32 registers), as S gets without asking. Register staging takes what its copy of x needs, and
  /// a cluster split the few more its exchange needs (its blocks hold a part of a row, rarely 1024).
  static constexpr bool holds_registers = Space::holds_registers(stage);
  static constexpr bool persistent = Space::persistent(stage);
  static constexpr int min_blocks = holds_registers || cluster > 1 ? 1 : 2048 / max_threads;
  static constexpr int warp = 32;
};

namespace detail {

__device__ __forceinline__ float warp_allreduce(float v) {
  // An xor butterfly: every lane adds the same pairs (a + b == b + a bitwise), so all lanes end with
  // the same bits, in an order fixed by the lane layout: deterministic.
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Cluster barriers (sm_90+). Split arrive/wait: a block may leave only after every block of its
/// cluster has read its partial sum, but need not wait for that before normalising its part.
__device__ __forceinline__ void cluster_arrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

/// The row's sum of squares, the same bits in every thread of every block of the row's cluster.
/// `v` is this thread's partial sum. Warp sums are combined in warp order, cluster partials in rank
/// order. With Cluster > 1 the caller must call cluster_wait() before it exits.
template <int Cluster>
__device__ __forceinline__ float row_sum(float v, float* warp_sums, float* block_total) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_allreduce(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  // Every warp reduces all warp sums itself: one barrier instead of two, the same bits everywhere.
  v = warp_allreduce(lane < static_cast<int>(blockDim.x >> 5) ? warp_sums[lane] : 0.f);
  if constexpr (Cluster > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    __trap();  // cluster configurations are pruned below sm_90 and never launched there
#else
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) *block_total = v;
    cluster.sync();  // release/acquire: every block's partial is visible cluster-wide
    const float partial = lane < Cluster ? *cluster.map_shared_rank(block_total, static_cast<unsigned>(lane)) : 0.f;
    v = warp_allreduce(partial);
    cluster_arrive();
#endif
  }
  return v;
}

template <class E, int Vec>
__device__ __forceinline__ AlignedVector<E, Vec> load_vector(const E* p) {
  return *reinterpret_cast<const AlignedVector<E, Vec>*>(p);
}
template <class E, int Vec>
__device__ __forceinline__ void store_vector(E* p, const AlignedVector<E, Vec>& v) {
  *reinterpret_cast<AlignedVector<E, Vec>*>(p) = v;
}

/// The persistent stages' view of one thread: which rows its group (a block for stage 3, a warp for
/// stage 4) takes, and which vectors of a row are its own: first, first + stride, ... (vpt of them).
struct RowGroup {
  std::int64_t first_row;  // the group's first row; then every `groups` rows
  std::int64_t groups;
  int first;               // this thread's first vector of a row
  int stride;              // threads per group
};

/// The persistent stages hold 16-byte vectors as four 32-bit words (uint4) while they wait in registers:
/// as AlignedVector<__nv_bfloat16, 8> the compiler may keep each 16-bit element in a register of its
/// own, twice the registers of the words (ptxas: bf16 stage 3 at vpt 2 spilled that way).
__device__ __forceinline__ unsigned word_at(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
/// Element e of a vector of E held as words, in fp32 (e is a constant after unrolling).
template <class E>
__device__ __forceinline__ float element(const uint4& v, int e) {
  if constexpr (sizeof(E) == 4) {
    return __uint_as_float(word_at(v, e));
  } else {
    const unsigned word = word_at(v, e >> 1);
    const auto bits = static_cast<unsigned short>((e & 1) ? word >> 16 : word & 0xffffu);
    if constexpr (std::is_same_v<E, __half>) return __half2float(__ushort_as_half(bits));
    else return __bfloat162float(__ushort_as_bfloat16(bits));
  }
}
/// The bits of from_float<E>(f) in the low bits of a word.
template <class E>
__device__ __forceinline__ unsigned rounded_bits(float f) {
  if constexpr (sizeof(E) == 4) return __float_as_uint(f);
  else if constexpr (std::is_same_v<E, __half>) return __half_as_ushort(from_float<__half>(f));
  else return __bfloat16_as_ushort(from_float<__nv_bfloat16>(f));
}
/// Vec fp32 values rounded to E (round to nearest even, as from_float) and packed as words.
template <class E, int Vec>
__device__ __forceinline__ uint4 pack_rounded(const float (&f)[Vec]) {
  unsigned w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(E) == 4) w[i] = rounded_bits<E>(f[i]);
    else w[i] = rounded_bits<E>(f[2 * i]) | rounded_bits<E>(f[2 * i + 1]) << 16;
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}
template <class E>
__device__ __forceinline__ uint4 load_words(const E* p) {
  return *reinterpret_cast<const uint4*>(p);
}
template <class E>
__device__ __forceinline__ void store_words(E* p, const uint4& v) {
  *reinterpret_cast<uint4*>(p) = v;
}

/// The vector a thread loads for its k-th slot: its own, or the row's last one where it has none (a
/// load every slot makes, so that no register keeps an older row's value alive across the loop; the
/// duplicate lies in a sector the warp reads anyway, and nothing is stored from it).
__device__ __forceinline__ int loaded_vector(int j, int nvec) { return j < nvec ? j : nvec - 1; }

/// Issues the loads of row `row`'s input and residual vectors of this thread (nothing waits for them).
template <class E, int Vec, int Vpt>
__device__ __forceinline__ void load_row(const Params<E>& p, std::int64_t row, const RowGroup& g, int nvec,
                                         uint4 (&a)[Vpt], uint4 (&r)[Vpt]) {
  const E* in_row = p.input + row * p.input_stride;
  const E* res_row = p.residual + row * p.residual_stride;
#pragma unroll
  for (int k = 0; k < Vpt; ++k) {
    const int j = loaded_vector(g.first + k * g.stride, nvec);
    a[k] = load_words(in_row + static_cast<std::ptrdiff_t>(j) * Vec);
    r[k] = load_words(res_row + static_cast<std::ptrdiff_t>(j) * Vec);
  }
}

/// Row `row` of a persistent stage, its input and residual already loaded into a, r (the weights into
/// w): x, the residual store, the row's sum of squares (stage 3: warp sums, one barrier, every warp
/// adds the warp sums in warp order, as row_sum<1>; stage 4: the warp's butterfly alone), the output.
/// `sums` is the block's slot for this row: callers alternate two slots between consecutive rows, so
/// one barrier per row is enough (a warp writes a slot again only after the next row's barrier, which
/// every warp reaches after reading it).
template <bool WarpRows, class E, int Vec, int Vpt>
__device__ __forceinline__ void finish_row(const Params<E>& p, std::int64_t row, const RowGroup& g, int nvec,
                                           const uint4 (&a)[Vpt], const uint4 (&r)[Vpt], const uint4 (&w)[Vpt],
                                           float* sums) {
  E* in_row = p.input + row * p.input_stride;
  E* res_row = p.residual + row * p.residual_stride;
  float x[Vpt][Vec];
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < Vpt; ++k) {
    const int j = g.first + k * g.stride;
#pragma unroll
    for (int e = 0; e < Vec; ++e) x[k][e] = element<E>(a[k], e) + element<E>(r[k], e);
    if (j < nvec) {
#pragma unroll
      for (int e = 0; e < Vec; ++e) sum += x[k][e] * x[k][e];
      store_words(res_row + static_cast<std::ptrdiff_t>(j) * Vec, pack_rounded<E, Vec>(x[k]));
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
#pragma unroll
  for (int k = 0; k < Vpt; ++k) {
    const int j = g.first + k * g.stride;
    if (j < nvec) {
      float o[Vec];
#pragma unroll
      for (int e = 0; e < Vec; ++e) o[e] = x[k][e] * inv_rms * element<E>(w[k], e);
      store_words(in_row + static_cast<std::ptrdiff_t>(j) * Vec, pack_rounded<E, Vec>(o));
    }
  }
}

/// Keeps 16-bit weights packed in registers across rows: without it the compiler may convert them to
/// fp32 once, outside the row loop, which doubles their registers; converting them again per row costs
/// vec conversions per vector, next to vec adds and multiplies.
template <int Vpt>
__device__ __forceinline__ void keep_packed(uint4 (&w)[Vpt]) {
#pragma unroll
  for (int k = 0; k < Vpt; ++k) asm volatile("" : "+r"(w[k].x), "+r"(w[k].y), "+r"(w[k].z), "+r"(w[k].w));
}

/// Stages 3 and 4: a group (block or warp) takes rows first_row, first_row + groups, ... Its weights are
/// loaded once; two register sets of input and residual alternate, so the next row's loads are issued
/// before the current row's reduction and stay in flight across it. With PDL, the dependent grid is
/// triggered once the group's last row is loaded.
template <class Cfg, class E, bool WarpRows>
__device__ __forceinline__ void persistent_rows(const Params<E>& p, const RowGroup& g, float (*sums)[32]) {
  constexpr int Vec = Traits<Cfg, E>::vec;
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
  load_row<E, Vec, Vpt>(p, row, g, nvec, a0, r0);
  // Unrolled by two so that each register set keeps its registers: a copy from the set in flight to
  // the other would wait for its loads.
  for (;;) {
    std::int64_t next = row + g.groups;
    if (next < p.tokens) load_row<E, Vec, Vpt>(p, next, g, nvec, a1, r1);
    else if constexpr (Cfg::pdl) pdl_launch_dependents();
    if constexpr (sizeof(E) < 4) keep_packed(w);
    finish_row<WarpRows, E, Vec, Vpt>(p, row, g, nvec, a0, r0, w, sums[0]);
    if (next >= p.tokens) break;
    row = next;
    next = row + g.groups;
    if (next < p.tokens) load_row<E, Vec, Vpt>(p, next, g, nvec, a0, r0);
    else if constexpr (Cfg::pdl) pdl_launch_dependents();
    if constexpr (sizeof(E) < 4) keep_packed(w);
    finish_row<WarpRows, E, Vec, Vpt>(p, row, g, nvec, a1, r1, w, sums[1]);
    if (next >= p.tokens) break;
    row = next;
  }
}

// ---- stage 6: rows fed by bulk copies into a shared-memory ring ------------------------------------
// sm_90 PTX: mbarriers with transaction counts, and cp.async.bulk (the copy engine's 1-D form) from
// global to shared memory completing on one of them. Compiled only where the stage is feasible.
__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
#endif
}
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
template <class Cfg, class E>
__device__ __forceinline__ void bulk_rows(const Params<E>& p, unsigned char* ring, unsigned long long* full,
                                          float (*sums)[32]) {
  constexpr int Vec = Traits<Cfg, E>::vec;
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
    bulk_copy_row(full_base + 8u * s, ring_base + 2u * row_bytes * s, p.input + row * p.input_stride,
                  p.residual + row * p.residual_stride, row_bytes);
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
    const E* in_s = reinterpret_cast<const E*>(ring + 2u * row_bytes * s);
    const E* res_s = in_s + p.h;
    const std::int64_t row = first + i * step;
    E* in_row = p.input + row * p.input_stride;
    E* res_row = p.residual + row * p.residual_stride;
    float x[Vpt][Vec];
    float sum = 0.f;
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = tid + k * threads;
      if (j < nvec) {
        const uint4 a = load_words(in_s + static_cast<std::ptrdiff_t>(j) * Vec);
        const uint4 r = load_words(res_s + static_cast<std::ptrdiff_t>(j) * Vec);
#pragma unroll
        for (int e = 0; e < Vec; ++e) {
          x[k][e] = element<E>(a, e) + element<E>(r, e);
          sum += x[k][e] * x[k][e];
        }
        store_words(res_row + static_cast<std::ptrdiff_t>(j) * Vec, pack_rounded<E, Vec>(x[k]));
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
        float o[Vec];
#pragma unroll
        for (int e = 0; e < Vec; ++e) o[e] = x[k][e] * inv_rms * element<E>(w[k], e);
        store_words(in_row + static_cast<std::ptrdiff_t>(j) * Vec, pack_rounded<E, Vec>(o));
      }
    }
  }
}

}  // namespace detail

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

/// Stages 3, 4 and 6: a persistent grid of Family::plan_grid blocks; stages 3 and 6 give each block one
/// row at a time (block = fitted threads), stage 4 each warp (block = Space::warp_rows_per_block warps).
/// Dynamic shared memory: stage 6's ring (Params::ring stages of a row of input and one of residual).
template <class Cfg, class E>
__global__ void __launch_bounds__(Traits<Cfg, E>::max_threads, Traits<Cfg, E>::min_blocks)
    fused_add_rmsnorm_rows_kernel(const Params<E> p) {
  using T = Traits<Cfg, E>;
  static_assert(T::persistent, "fused_add_rmsnorm_rows_kernel runs stages 3, 4 and 6.");
  static_assert(T::cluster == 1, "The persistent stages give a row to one block or one warp.");
  static_assert(T::vec > 1 && T::vec * sizeof(E) == 16, "The persistent stages move 16-byte vectors.");
  constexpr bool WarpRows = T::stage == Space::warp_rows;
  __shared__ float row_sums[2][32];  // stages 3, 6: two slots of warp sums, alternating between rows
  if constexpr (T::stage == Space::bulk_rows) {
    __shared__ unsigned long long full[Space::max_ring_stages];  // one mbarrier per ring stage
    extern __shared__ __align__(128) unsigned char ring[];
    detail::bulk_rows<Cfg, E>(p, ring, full, row_sums);
  } else if constexpr (WarpRows) {
    const int warps = static_cast<int>(blockDim.x >> 5);
    const detail::RowGroup g{static_cast<std::int64_t>(blockIdx.x) * warps + (threadIdx.x >> 5),
                             static_cast<std::int64_t>(gridDim.x) * warps, static_cast<int>(threadIdx.x & 31), 32};
    detail::persistent_rows<Cfg, E, true>(p, g, row_sums);
  } else {
    const detail::RowGroup g{static_cast<std::int64_t>(blockIdx.x), static_cast<std::int64_t>(gridDim.x),
                             static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
    detail::persistent_rows<Cfg, E, false>(p, g, row_sums);
  }
}

/// The host adapter of the family (docs/kernel-folder.md).
struct Family : Space {
  static constexpr const char* name = "fused_add_rmsnorm";
  template <class E>
  using Args = ops::fused_add_rmsnorm::Args<E>;
  using Harness = ops::fused_add_rmsnorm::Harness;

  /// A call's launch geometry for configuration Cfg.
  struct Plan {
    int part = 0;        ///< vectors per block
    int threads = 0;     ///< per block, a whole number of warps
    std::size_t smem = 0;
    int ring = 0;        ///< stage 6: ring stages
  };

  /// The geometry, or why Cfg cannot run these sizes (assumes validate() passed). No CUDA calls.
  template <class Cfg, class E>
  static Status plan(const Args<E>& a, Plan& out) {
    using T = Traits<Cfg, E>;
    const std::int64_t nvec = a.h / T::vec;
    const std::int64_t part = (nvec + T::cluster - 1) / T::cluster;
    if constexpr (T::stage == Space::warp_rows) {
      if (nvec > static_cast<std::int64_t>(T::warp) * T::vpt)
        return Status::unsupported("fused_add_rmsnorm: the row is longer than one warp's 32 * vpt vectors (warp rows)");
      out.part = static_cast<int>(part);
      out.threads = T::max_threads;  // Space::warp_rows_per_block warps, one row each
      out.smem = 0;
      return Status::success();
    }
    const std::int64_t per_thread = Space::holds_registers(T::stage) ? T::vpt : 1;
    std::int64_t threads = (part + per_thread - 1) / per_thread;
    threads = (threads + T::warp - 1) / T::warp * T::warp;
    if (threads < T::warp) threads = T::warp;
    if (Space::holds_registers(T::stage)) {
      if (threads > T::max_threads)
        return Status::unsupported(
            "fused_add_rmsnorm: the row part does not fit this configuration's registers (threads * vpt * vec)");
    } else if (threads > T::max_threads) {
      threads = T::max_threads;  // loop over the part in rounds
    }
    out.part = static_cast<int>(part);
    out.threads = static_cast<int>(threads);
    out.smem = T::stage == Space::smem ? static_cast<std::size_t>(part) * T::vec * sizeof(float) : 0;
    if constexpr (T::stage == Space::bulk_rows) {
      const std::int64_t pair = 2 * a.h * static_cast<std::int64_t>(sizeof(E));  // a row of input and of residual
      std::int64_t ring = Space::ring_bytes / pair;
      ring = ring < 2 ? 2 : ring > Space::max_ring_stages ? Space::max_ring_stages : ring;
      out.ring = static_cast<int>(ring);
      out.smem = static_cast<std::size_t>(ring * pair);
    }
    if (a.tokens > max_tokens / T::cluster)
      return Status::too_large("fused_add_rmsnorm: tokens * cs blocks exceed the grid's x limit");
    return Status::success();
  }

  template <class Cfg, class E>
  static Status can_implement(const Args<E>& a) {
    using T = Traits<Cfg, E>;
    KTUNE_TRY(validate(a));
    if (is_empty(a)) return Status::success();
    if constexpr (T::vec > 1) {
      constexpr unsigned bytes = T::vec * sizeof(E);
      if (misalignment(a.input, bytes) || misalignment(a.residual, bytes) || misalignment(a.weight, bytes))
        return Status::unsupported("fused_add_rmsnorm: pointers are not aligned to this configuration's vector");
      if (a.h % T::vec || a.input_stride % T::vec || a.residual_stride % T::vec)
        return Status::unsupported("fused_add_rmsnorm: h or a stride is not a multiple of this configuration's vector");
    }
    Plan pl;
    KTUNE_TRY((plan<Cfg, E>(a, pl)));
    if (pl.smem > 48 * 1024) {
      const DeviceInfo* dev = nullptr;
      KTUNE_TRY(current_device(dev));
      // The kernel's static shared memory (warp sums, the block total; stage 6: two warp-sum slots and
      // the ring's mbarriers, under 512 bytes) comes on top.
      if (pl.smem + 512 > static_cast<std::size_t>(dev->smem_per_block_optin))
        return Status::unsupported(
            "fused_add_rmsnorm: the row part (stage 1) or two rows of the ring (stage 6) do not fit in shared memory");
    }
    return Status::success();
  }

  /// The __global__ function of configuration Cfg.
  template <class Cfg, class E>
  static constexpr auto kernel() {
    if constexpr (Space::persistent(Cfg::stage)) return &fused_add_rmsnorm_rows_kernel<Cfg, E>;
    else return &fused_add_rmsnorm_kernel<Cfg, E>;
  }

  template <class Cfg, class E>
  static KernelResources resources(const Args<E>& a) {
    Plan pl;
    (void)plan<Cfg, E>(a, pl);
    return {reinterpret_cast<const void*>(kernel<Cfg, E>()), pl.threads, pl.smem, Cfg::cluster};
  }

  /// Lets Cfg's kernel take `bytes` of dynamic shared memory (above the 48 KB default): through
  /// ktune::launch's record per kernel, so no raise here or there ever lowers the other's.
  template <class Cfg, class E>
  static Status allow_dynamic_smem(std::size_t bytes) {
    return ktune::detail::ensure_dynamic_smem(reinterpret_cast<const void*>(kernel<Cfg, E>()), bytes);
  }

  /// Blocks of `threads` threads and `smem` bytes of dynamic shared memory of Cfg's kernel resident on
  /// the current device at once (all SMs), from the occupancy calculator. Cached per kernel in 16 slots
  /// keyed by (device, threads, smem): one atomic load per call once a shape has been seen.
  template <class Cfg, class E>
  static Status resident_blocks(int threads, std::size_t smem, std::int64_t& out) {
    static std::array<std::atomic<std::uint64_t>, 16> cache{};
    const DeviceInfo* dev = nullptr;
    KTUNE_TRY(current_device(dev));
    if (threads < 32 || threads > 1024 || threads % 32 || smem % 16 || smem >= (std::size_t{1} << 20))
      return Status::invalid("fused_add_rmsnorm: a block is 1 to 32 whole warps and under 1 MB of shared memory");
    // key: device (8 bits), warps (6), smem / 16 (16); value: blocks per SM (8); bit 63: filled
    const std::uint64_t key = static_cast<std::uint64_t>(dev->ordinal) << 22 |
                              static_cast<std::uint64_t>(threads / 32) << 16 | smem / 16;
    std::atomic<std::uint64_t>& slot = cache[(key * 0x9e3779b97f4a7c15ull) >> 60];
    const std::uint64_t entry = slot.load(std::memory_order_acquire);
    int per_sm = 0;
    if ((entry >> 63) && ((entry >> 8) & 0x3fffffffull) == key) {
      per_sm = static_cast<int>(entry & 0xff);
    } else {
      // Above 48 KB (stage 6's ring) the calculator counts 0 blocks until the kernel may take that much.
      KTUNE_TRY((allow_dynamic_smem<Cfg, E>(smem)));
      KTUNE_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &per_sm, reinterpret_cast<const void*>(kernel<Cfg, E>()), threads, smem));
      if (per_sm < 1 || per_sm > 255)
        return Status::unsupported("fused_add_rmsnorm: this configuration's block cannot be resident on the device");
      slot.store(std::uint64_t{1} << 63 | key << 8 | static_cast<std::uint64_t>(per_sm), std::memory_order_release);
    }
    out = static_cast<std::int64_t>(per_sm) * dev->sms;
    return Status::success();
  }

  /// Blocks of the grid. Stages 0-2 and 5: one per (row, cluster rank). Stages 3, 4 and 6 (persistent):
  /// as many row groups (blocks; warps for stage 4) as are resident at once, or one per row when there
  /// are fewer rows. All resident groups take rows, even when some take one row fewer than others: a
  /// memory-bound row loop runs faster with more loads in flight, and the groups that finish first
  /// leave their bandwidth to the rest.
  template <class Cfg, class E>
  static Status plan_grid(const Args<E>& a, const Plan& pl, std::int64_t& blocks) {
    if constexpr (!Space::persistent(Cfg::stage)) {
      blocks = a.tokens * Cfg::cluster;
      return Status::success();
    } else {
      std::int64_t resident = 0;
      KTUNE_TRY((resident_blocks<Cfg, E>(pl.threads, pl.smem, resident)));
      const std::int64_t per_block = Cfg::stage == Space::warp_rows ? pl.threads / 32 : 1;  // row groups
      const std::int64_t groups = a.tokens < resident * per_block ? a.tokens : resident * per_block;
      blocks = (groups + per_block - 1) / per_block;
      return Status::success();
    }
  }

  /// Plans and launches without checking: the caller (ktune::run_variant) has seen can_implement<Cfg, E>(a)
  /// succeed on a non-empty call.
  template <class Cfg, class E>
  static Status enqueue(const Args<E>& a, cudaStream_t stream) {
    Plan pl;
    KTUNE_TRY((plan<Cfg, E>(a, pl)));
    std::int64_t blocks = 0;
    KTUNE_TRY((plan_grid<Cfg, E>(a, pl, blocks)));
    KTUNE_TRY((allow_dynamic_smem<Cfg, E>(pl.smem)));
    const Params<E> p{a.input, a.residual, a.weight, a.input_stride, a.residual_stride, a.tokens,
                      static_cast<int>(a.h), pl.part, pl.ring, a.eps};
    LaunchShape shape;
    shape.grid = dim3(static_cast<unsigned>(blocks));
    shape.block = dim3(static_cast<unsigned>(pl.threads));
    shape.smem = pl.smem;
    shape.cluster = static_cast<unsigned>(Cfg::cluster);
    shape.pdl = Cfg::pdl;
    return launch(kernel<Cfg, E>(), shape, stream, p);
  }

  template <class E>
  static Status original_can_implement(const Args<E>& a) {
    return original::can_implement(a);
  }
  template <class E>
  static Status original_run(const Args<E>& a, cudaStream_t stream) {
    return original::run(a, stream);
  }
  template <class E>
  static KernelResources original_resources(const Args<E>& a) {
    return original::resources(a);
  }
};

/// The configuration type of a named point of the space.
template <const Space::Point& P>
using config_of_t = Space::Config<P[0], P[1], P[2], P[3], P[4]>;
using unaligned_config_t = config_of_t<Space::unaligned_point>;
using original_config_t = config_of_t<Space::original_point>;

}  // namespace ktune::ops::fused_add_rmsnorm
