// kernels/gelu_tanh_and_mul/family.cuh: the tunable family S_θ of gelu_tanh_and_mul: the kernel templated
// on a Space::Config, and its host adapter.
//
//   in  [tokens, 2*d]  E: x = in[t, 0:d], y = in[t, d:2d]
//   out [tokens, d]    E
//   out[t, i] = gelu_tanh(x[t, i]) * y[t, i], gelu_tanh(x) = 0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3)));
//   fp32 arithmetic with the same operations in the same order as S, one rounding to E.
//
// Work is counted in vectors of vb bytes over the flattened [tokens, dv] output (space.hpp). Every element
// is computed once by one thread: no reduction, no atomics, so the output is bitwise the same on every run.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "family_base.cuh"

namespace ktune::ops::gelu_tanh_and_mul {

/// The kernel's one parameter struct.
template <class E>
struct Params {
  const E* in;
  E* out;
  std::int64_t total;  ///< tokens * dv: vectors of the flattened output
  std::int64_t d;      ///< elements per half-row
  std::uint32_t dv;    ///< vectors per half-row, d / pack
};

namespace detail {

/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + c x^3))) with c = 0.044715 passed in, in S's order of operations.
__device__ __forceinline__ float gelu_tanh(float x, float c) {
  const float inner = 0.7978845608028654f * (x + c * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

/// Row and column (in vectors) of flat vector `flat`; a 32-bit division whenever the index fits.
__device__ __forceinline__ void locate(std::int64_t flat, std::uint32_t dv, std::int64_t& row, std::uint32_t& col) {
  if (static_cast<std::uint64_t>(flat) <= 0xffffffffull) {
    const auto f = static_cast<std::uint32_t>(flat);
    const std::uint32_t q = f / dv;
    row = q;
    col = f - q * dv;
  } else {
    row = flat / dv;
    col = static_cast<std::uint32_t>(flat - row * dv);
  }
}

}  // namespace detail

/// One kernel per configuration: block b computes flat vectors [b * step, (b + 1) * step).
/// \tparam Cfg a Space::Config
/// \tparam E   float, __half or __nv_bfloat16
template <class Cfg, class E>
__global__ void __launch_bounds__(Cfg::threads) gelu_tanh_and_mul_kernel(const Params<E> p) {
  constexpr int Tpb = Cfg::threads;
  constexpr int Vpt = Cfg::vectors_per_thread;
  constexpr int Pack = Cfg::vector_bytes / static_cast<int>(sizeof(E));
  static_assert(Cfg::vector_bytes % static_cast<int>(sizeof(E)) == 0 && Pack >= 1,
                "The vector width must be a whole, non-zero number of elements.");
  static_assert(Tpb % 32 == 0 && Tpb <= 1024, "Threads per block must be whole warps, at most 1024.");
  using Vec = ktune::AlignedVector<E, Pack>;
  constexpr int step = Tpb * Vpt;

  // The cubic coefficient is kept in shared memory so that the whole block reads one copy: every thread
  // stores it and reads it back.
  __shared__ volatile float cubic;
  cubic = 0.044715f;
  const float c3 = cubic;

  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * step;
  std::int64_t row0 = 0;
  std::uint32_t col0 = 0;
  detail::locate(first, p.dv, row0, col0);

  Vec x[Vpt], y[Vpt];
  std::int64_t row[Vpt];
  std::uint32_t col[Vpt];
#pragma unroll
  for (int k = 0; k < Vpt; ++k) {
    const int off = static_cast<int>(threadIdx.x) + k * Tpb;
    // col0 + off < dv + step: at most one row end is crossed, unless a row is shorter than a step.
    const std::uint32_t c = col0 + static_cast<std::uint32_t>(off);
    if (c < p.dv) {
      row[k] = row0;
      col[k] = c;
    } else if (c < 2u * p.dv) {
      row[k] = row0 + 1;
      col[k] = c - p.dv;
    } else {
      detail::locate(first + off, p.dv, row[k], col[k]);
    }
    if (first + off < p.total) {
      const E* src = p.in + row[k] * 2 * p.d + static_cast<std::int64_t>(col[k]) * Pack;
      x[k] = *reinterpret_cast<const Vec*>(src);
      y[k] = *reinterpret_cast<const Vec*>(src + p.d);
    }
  }
#pragma unroll
  for (int k = 0; k < Vpt; ++k) {
    if (first + static_cast<int>(threadIdx.x) + k * Tpb < p.total) {
      Vec o;
#pragma unroll
      for (int i = 0; i < Pack; ++i)
        o.v[i] = ktune::from_float<E>(detail::gelu_tanh(ktune::to_float(x[k].v[i]), c3) * ktune::to_float(y[k].v[i]));
      *reinterpret_cast<Vec*>(p.out + row[k] * p.d + static_cast<std::int64_t>(col[k]) * Pack) = o;
    }
  }
}

/// The family's host adapter (docs/kernel-folder.md).
struct Family : FamilyBase {
  /// Elements per vector of a configuration.
  template <class Cfg, class E> static constexpr int pack = Cfg::vector_bytes / static_cast<int>(sizeof(E));

  /// validate() plus what this configuration needs: both pointers aligned to its vector, d a multiple of
  /// its pack (so every row's x, y and out vectors are aligned), 32-bit column arithmetic, a grid within
  /// 2^31 - 1 blocks. Makes no CUDA call.
  template <class Cfg, class E>
  static Status can_implement(const Args<E>& a) {
    KTUNE_TRY(validate(a));
    if (is_empty(a)) return Status::success();
    constexpr int n = pack<Cfg, E>;
    if constexpr (n > 1) {
      if (!detail::aligned_to(a.in, Cfg::vector_bytes) || !detail::aligned_to(a.out, Cfg::vector_bytes))
        return Status::unsupported("gelu_tanh_and_mul: in or out is not aligned to the variant's vector width");
      if (a.d % n != 0)
        return Status::unsupported("gelu_tanh_and_mul: d is not a multiple of the variant's vector width");
    }
    if (a.d / n > (std::int64_t{1} << 30))
      return Status::too_large("gelu_tanh_and_mul: more than 2^30 vectors per row (32-bit column arithmetic)");
    if (blocks<Cfg, E>(a) > std::numeric_limits<std::int32_t>::max())
      return Status::too_large("gelu_tanh_and_mul: the variant's grid would exceed 2^31 - 1 blocks");
    return Status::success();
  }

  /// Blocks of the grid: one step of tpb * vpt vectors each.
  template <class Cfg, class E>
  static std::int64_t blocks(const Args<E>& a) {
    constexpr std::int64_t step = Cfg::threads * Cfg::vectors_per_thread;
    return (a.tokens * (a.d / pack<Cfg, E>) + step - 1) / step;
  }

  /// Launches without checking: the caller has seen can_implement<Cfg, E>(a) succeed on a non-empty call.
  template <class Cfg, class E>
  static Status enqueue(const Args<E>& a, cudaStream_t stream) {
    const std::int64_t dv = a.d / pack<Cfg, E>;
    ktune::LaunchShape s;
    s.grid = dim3(static_cast<unsigned>(blocks<Cfg, E>(a)));
    s.block = dim3(Cfg::threads);
    return ktune::launch(gelu_tanh_and_mul_kernel<Cfg, E>, s, stream,
                         Params<E>{a.in, a.out, a.tokens * dv, a.d, static_cast<std::uint32_t>(dv)});
  }


  template <class Cfg, class E>
  static ktune::KernelResources resources(const Args<E>&) {
    return {reinterpret_cast<const void*>(&gelu_tanh_and_mul_kernel<Cfg, E>), Cfg::threads, 0, 1};
  }
};

}  // namespace ktune::ops::gelu_tanh_and_mul
