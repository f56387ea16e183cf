// kernels/common/norm_rows/common.cuh: what every row structure of the RMS norm ops shares: the kernels' one
// parameter struct, a configuration's compile-time facts (Traits), the warp and cluster reductions of a
// row's sum of squares, the weight as each kind uses it, and the vector, word-packing and shared-memory
// helpers of the kernels' accesses.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include <ktune/arch.hpp>
#include <ktune/dtype.hpp>
#include <ktune/intrinsics.cuh>

#include "kind.hpp"
#include "space.hpp"

namespace ktune::ops::norm_rows {

/// The kernels' one parameter struct. Row r of input starts at input + r * input_stride; a block of
/// cluster rank k covers vectors [k * part, min((k + 1) * part, h / vec)) of its row. The persistent
/// stages (3, 4, 6) loop over rows up to `tokens`; the others take their row from the block index.
/// The kinds with a residual use residual and write input; the others read input (never written through
/// it) and write output, null and 0 for the former. output comes last so that the residual kinds' fields
/// keep the offsets fused_add_rmsnorm's kernels were compiled with.
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
  E* output;
  std::int64_t output_stride;
};

/// Compile-time facts of a configuration of kind K for element type E.
template <class K, class Cfg, class E>
struct Traits {
  using Space = RowSpace<K>;
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

/// The factor a normalised element is multiplied by: the weight, or 1 + weight (in fp32, as S rounds it).
template <class K>
__device__ __forceinline__ float weight_factor(float w) {
  if constexpr (K::weight_offset == 0) return w;
  else return 1.f + w;
}

/// N fp32 values to or from shared memory at a 16-byte-aligned address when N is a multiple of 4
/// (as FlashInfer's vec_t<float, N> stores them), element by element otherwise.
template <int N>
__device__ __forceinline__ void store_floats(float* dst, const float (&src)[N]) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4)
      *reinterpret_cast<float4*>(dst + i) = make_float4(src[i], src[i + 1], src[i + 2], src[i + 3]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = src[i];
  }
}
template <int N>
__device__ __forceinline__ void load_floats(float (&dst)[N], const float* src) {
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const float4 f = *reinterpret_cast<const float4*>(src + i);
      dst[i] = f.x;
      dst[i + 1] = f.y;
      dst[i + 2] = f.z;
      dst[i + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = src[i];
  }
}

__device__ __forceinline__ float warp_allreduce(float v) {
  // An xor butterfly: every lane adds the same pairs (a + b == b + a bitwise), so all lanes end with
  // the same bits, in an order fixed by the lane layout: deterministic.
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// A shared-memory address as the PTX of mbarriers and bulk copies takes it.
__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
#endif
}

/// The partial sums of a row split over a cluster (sm_90+), pushed rather than pulled: every block stores
/// its partial into slot `rank` of every block of the cluster (st.async, which completes on that block's
/// mbarrier), then waits on its own mbarrier for the cluster's partials. A block waits for nothing but the
/// partials themselves: the one cluster barrier (which publishes the mbarriers' initialisation) is arrived
/// at on entry and waited for after the loads, so its round trip overlaps theirs, and no block can leave
/// while another may still write to it, since each waits for every block's partial. Measured on an H200
/// (T = 1 and 16, h = 4096 and 8192, fp32, 2-8 blocks): 0.34-0.76 us less per call than a cluster barrier
/// followed by reads of the other blocks' partials (docs/gpu-log.md).
template <int Cluster>
struct ClusterPartials {
  float partial[Cluster];      // slot k: the partial sum of the cluster's block of rank k
  unsigned long long arrived;  // its phase 0 completes when all Cluster partials have landed
};

/// Every thread, on entry, before any global access: the mbarrier expects Cluster partials of 4 bytes,
/// and the cluster barrier's arrive (relaxed; the fence orders the initialisation) lets the other blocks
/// push once they have waited for it.
template <int Cluster>
__device__ __forceinline__ void cluster_partials_begin(ClusterPartials<Cluster>& x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) {
    const unsigned bar = smem_address(&x.arrived);
    mbarrier_init(bar, 1);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(Cluster * 4) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#else
  __trap();  // cluster configurations are pruned below sm_90 and never launched there
#endif
}

/// The cluster's total of the blocks' partials `v` (the same in every thread of a block), added in rank
/// order: the same bits in every block. Every thread calls it once, after cluster_partials_begin.
template <int Cluster>
__device__ __forceinline__ float cluster_total(float v, ClusterPartials<Cluster>& x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");  // every block's mbarrier is initialised
  if (threadIdx.x < Cluster) {  // thread k pushes this block's partial to the block of rank k
    const unsigned peer = threadIdx.x, rank = cooperative_groups::this_cluster().block_rank();
    unsigned slot, bar;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(slot) : "r"(smem_address(&x.partial[rank])), "r"(peer));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(bar) : "r"(smem_address(&x.arrived)), "r"(peer));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(slot),
                 "r"(__float_as_uint(v)), "r"(bar)
                 : "memory");
  }
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], 0;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_address(&x.arrived))
      : "memory");
  float total = 0.f;
#pragma unroll
  for (int k = 0; k < Cluster; ++k) total += x.partial[k];
  return total;
#else
  __trap();
  return v;
#endif
}

/// The row's sum of squares, the same bits in every thread of every block of the row's cluster.
/// `v` is this thread's partial sum. Warp sums are combined in warp order, cluster partials in rank
/// order; with Cluster > 1, `x` has been begun (cluster_partials_begin) on entry.
template <int Cluster>
__device__ __forceinline__ float row_sum(float v, float* warp_sums, ClusterPartials<Cluster>* x) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_allreduce(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  // Every warp reduces all warp sums itself: one barrier instead of two, the same bits everywhere.
  v = warp_allreduce(lane < static_cast<int>(blockDim.x >> 5) ? warp_sums[lane] : 0.f);
  if constexpr (Cluster > 1) v = cluster_total(v, *x);
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
/// The normalised output of Vec elements, x * inv_rms * weight_factor(w), rounded to E as words: the
/// store every stage that holds its weights as words ends a row with.
template <class K, class E, int Vec>
__device__ __forceinline__ uint4 normalised_words(const float (&x)[Vec], float inv_rms, const uint4& w) {
  float o[Vec];
#pragma unroll
  for (int e = 0; e < Vec; ++e) o[e] = x[e] * inv_rms * weight_factor<K>(element<E>(w, e));
  return pack_rounded<E, Vec>(o);
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

/// x of a vector of a row: the input's elements (plus the residual's), in fp32, from the loaded words.
template <class K, class E, int Vec>
__device__ __forceinline__ void row_x(const uint4& a, const uint4& r, float (&x)[Vec]) {
#pragma unroll
  for (int e = 0; e < Vec; ++e) {
    if constexpr (K::residual) x[e] = element<E>(a, e) + element<E>(r, e);
    else x[e] = element<E>(a, e);
  }
}

/// Keeps words packed in registers: the compiler must take them as changed here, so what it derived from
/// them before (their fp32 values) is derived again where used instead of held. Used for 16-bit weights
/// across rows (converted once, outside the row loop, they double their registers) and for a row's input
/// across its barrier (persistent_rows.cuh); converting again costs vec conversions per vector, next to
/// vec adds and multiplies.
template <int Vpt>
__device__ __forceinline__ void keep_packed(uint4 (&w)[Vpt]) {
#pragma unroll
  for (int k = 0; k < Vpt; ++k) asm volatile("" : "+r"(w[k].x), "+r"(w[k].y), "+r"(w[k].z), "+r"(w[k].w));
}

}  // namespace detail
}  // namespace ktune::ops::norm_rows
