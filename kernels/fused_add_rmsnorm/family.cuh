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

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
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
/// cluster rank k covers vectors [k * part, min((k + 1) * part, h / vec)) of its row.
template <class E>
struct Params {
  E* input;
  E* residual;
  const E* weight;
  std::int64_t input_stride;   // elements
  std::int64_t residual_stride;
  int h;
  int part;                    // vectors per block of a row
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
  static constexpr int min_blocks = stage == Space::registers || cluster > 1 ? 1 : 2048 / max_threads;
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

}  // namespace detail

/// One block per (row, cluster rank): grid.x = tokens * cluster, block = fitted threads (see Space).
/// Dynamic shared memory: part * vec floats with shared-memory staging, none otherwise.
template <class Cfg, class E>
__global__ void __launch_bounds__(Traits<Cfg, E>::max_threads, Traits<Cfg, E>::min_blocks) fused_add_rmsnorm_kernel(const Params<E> p) {
  using T = Traits<Cfg, E>;
  constexpr int Vec = T::vec;
  constexpr int Vpt = T::vpt;
  constexpr int Cluster = T::cluster;
  using Vector = AlignedVector<E, Vec>;
  static_assert(Vec >= 1 && Vec * sizeof(E) <= 16, "A vector access is one element or at most 16 bytes.");
  static_assert(T::stage == Space::registers || Vpt == 1,
                "Only register staging holds several vectors per thread; the other stagings loop one vector at a time.");
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
  if constexpr (T::stage == Space::registers) {
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
        detail::store_vector<E, Vec>(res_row + static_cast<std::ptrdiff_t>(j) * Vec, r[k]);
      }
    }
    const float total = detail::row_sum<Cluster>(sum, warp_sums, &block_total);
    const float inv_rms = rsqrtf(total / static_cast<float>(p.h) + p.eps);
    if constexpr (Cfg::pdl) pdl_launch_dependents();
#pragma unroll
    for (int k = 0; k < Vpt; ++k) {
      const int j = begin + tid + k * threads;
      if (j < end) {
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
  };

  /// The geometry, or why Cfg cannot run these sizes (assumes validate() passed). No CUDA calls.
  template <class Cfg, class E>
  static Status plan(const Args<E>& a, Plan& out) {
    using T = Traits<Cfg, E>;
    const std::int64_t nvec = a.h / T::vec;
    const std::int64_t part = (nvec + T::cluster - 1) / T::cluster;
    const std::int64_t per_thread = T::stage == Space::registers ? T::vpt : 1;
    std::int64_t threads = (part + per_thread - 1) / per_thread;
    threads = (threads + T::warp - 1) / T::warp * T::warp;
    if (threads < T::warp) threads = T::warp;
    if (T::stage == Space::registers) {
      if (threads > T::max_threads)
        return Status::unsupported(
            "fused_add_rmsnorm: the row part does not fit this configuration's registers (threads * vpt * vec)");
    } else if (threads > T::max_threads) {
      threads = T::max_threads;  // loop over the part in rounds
    }
    out.part = static_cast<int>(part);
    out.threads = static_cast<int>(threads);
    out.smem = T::stage == Space::smem ? static_cast<std::size_t>(part) * T::vec * sizeof(float) : 0;
    if (a.tokens > max_tokens / T::cluster)
      return Status::too_large("fused_add_rmsnorm: tokens * cs blocks exceed the grid's x limit");
    return Status::success();
  }

  template <class Cfg, class E>
  static Status can_implement(const Args<E>& a) {
    using T = Traits<Cfg, E>;
    KTUNE_TRY(validate(a));
    if (a.tokens == 0) return Status::success();
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
      // The kernel's static shared memory (warp sums and the block total) comes on top.
      if (pl.smem + 33 * sizeof(float) > static_cast<std::size_t>(dev->smem_per_block_optin))
        return Status::unsupported("fused_add_rmsnorm: the row part does not fit in shared memory (stage 1)");
    }
    return Status::success();
  }

  template <class Cfg, class E>
  static KernelResources resources(const Args<E>& a) {
    Plan pl;
    (void)plan<Cfg, E>(a, pl);
    return {reinterpret_cast<const void*>(&fused_add_rmsnorm_kernel<Cfg, E>), pl.threads, pl.smem, Cfg::cluster};
  }

  template <class Cfg, class E>
  static Status run(const Args<E>& a, cudaStream_t stream) {
    KTUNE_TRY((can_implement<Cfg, E>(a)));
    if (a.tokens == 0) return Status::success();
    Plan pl;
    KTUNE_TRY((plan<Cfg, E>(a, pl)));
    const Params<E> p{a.input, a.residual, a.weight, a.input_stride, a.residual_stride,
                      static_cast<int>(a.h), pl.part, a.eps};
    LaunchShape shape;
    shape.grid = dim3(static_cast<unsigned>(a.tokens * Cfg::cluster));
    shape.block = dim3(static_cast<unsigned>(pl.threads));
    shape.smem = pl.smem;
    shape.cluster = static_cast<unsigned>(Cfg::cluster);
    shape.pdl = Cfg::pdl;
    return launch(&fused_add_rmsnorm_kernel<Cfg, E>, shape, stream, p);
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
