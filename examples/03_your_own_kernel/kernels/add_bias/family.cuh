// kernels/add_bias/family.cuh (examples/03_your_own_kernel): the tunable family S_θ of add_bias, the
// kernel templated on a Space::Config, and its host adapter. Written by hand, like space.hpp.
//
//   x [tokens, d], bias [d]  ->  out [tokens, d],  out[t, i] = x[t, i] + bias[i]
//   added in fp32 and rounded once to E, as S does, so every variant is bitwise S's result.
//
// Grid: blocks = chunks * groups, chunks = ceil(dv / tpb) column chunks, groups = ceil(tokens / rpb) row
// groups; block b takes chunk b % chunks of row group b / chunks.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "family_base.cuh"

namespace ktune::ops::add_bias {

/// The kernel's one parameter struct.
template <class E>
struct Params {
  const E* x;
  const E* bias;
  E* out;
  std::int64_t tokens;
  std::int64_t d;       ///< elements per row
  std::uint32_t dv;     ///< vectors per row, d / pack
  std::uint32_t chunks; ///< column chunks per row group, ceil(dv / tpb)
};

/// \tparam Cfg a Space::Config
/// \tparam E   float, __half or __nv_bfloat16
template <class Cfg, class E>
__global__ void __launch_bounds__(Cfg::threads) add_bias_kernel(const Params<E> p) {
  constexpr int Tpb = Cfg::threads;
  constexpr int Rpb = Cfg::rows_per_block;
  constexpr int Pack = Cfg::vector_bytes / static_cast<int>(sizeof(E));
  static_assert(Cfg::vector_bytes % static_cast<int>(sizeof(E)) == 0 && Pack >= 1,
                "The vector width must be a whole, non-zero number of elements.");
  using Vec = ktune::AlignedVector<E, Pack>;

  // Before the first global access: with PDL the preceding kernel may still be writing x or bias.
  if constexpr (Cfg::pdl) ktune::pdl_wait();

  const std::uint32_t chunk = blockIdx.x % p.chunks;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x / p.chunks) * Rpb;
  const std::uint32_t col = chunk * Tpb + threadIdx.x;  // in vectors; < dv + tpb, which fits 32 bits
  const bool active = col < p.dv;

  float b[Pack];
  Vec x[Rpb];
  if (active) {
    const Vec bv = *reinterpret_cast<const Vec*>(p.bias + static_cast<std::int64_t>(col) * Pack);
#pragma unroll
    for (int i = 0; i < Pack; ++i) b[i] = ktune::to_float(bv.v[i]);
#pragma unroll
    for (int r = 0; r < Rpb; ++r)
      if (row0 + r < p.tokens)
        x[r] = *reinterpret_cast<const Vec*>(p.x + (row0 + r) * p.d + static_cast<std::int64_t>(col) * Pack);
  }
  // Every load of this block is issued: the next kernel may start its prologue.
  if constexpr (Cfg::pdl) ktune::pdl_launch_dependents();
  if (!active) return;
#pragma unroll
  for (int r = 0; r < Rpb; ++r) {
    if (row0 + r < p.tokens) {
      Vec o;
#pragma unroll
      for (int i = 0; i < Pack; ++i) o.v[i] = ktune::from_float<E>(ktune::to_float(x[r].v[i]) + b[i]);
      *reinterpret_cast<Vec*>(p.out + (row0 + r) * p.d + static_cast<std::int64_t>(col) * Pack) = o;
    }
  }
}

/// The family's host adapter (docs/kernel-folder.md).
struct Family : FamilyBase {
  /// Elements per vector of a configuration.
  template <class Cfg, class E> static constexpr int pack = Cfg::vector_bytes / static_cast<int>(sizeof(E));

  /// validate() plus what this configuration needs: every pointer aligned to its vector and d a multiple
  /// of its pack (so every row starts on a vector), 32-bit column arithmetic, a grid within 2^31 - 1
  /// blocks. Makes no CUDA call.
  template <class Cfg, class E>
  static Status can_implement(const Args<E>& a) {
    KTUNE_TRY(validate(a));
    if (is_empty(a)) return Status::success();
    constexpr int n = pack<Cfg, E>;
    if constexpr (n > 1) {
      if (!detail::aligned_to(a.x, Cfg::vector_bytes) || !detail::aligned_to(a.bias, Cfg::vector_bytes) ||
          !detail::aligned_to(a.out, Cfg::vector_bytes))
        return Status::unsupported("add_bias: x, bias or out is not aligned to the variant's vector width");
      if (a.d % n != 0) return Status::unsupported("add_bias: d is not a multiple of the variant's vector width");
    }
    if (a.d / n > (std::int64_t{1} << 30))
      return Status::too_large("add_bias: more than 2^30 vectors per row (32-bit column arithmetic)");
    if (blocks<Cfg, E>(a) > std::numeric_limits<std::int32_t>::max())
      return Status::too_large("add_bias: the variant's grid would exceed 2^31 - 1 blocks");
    return Status::success();
  }

  template <class Cfg, class E>
  static std::int64_t chunks(const Args<E>& a) {
    return (a.d / pack<Cfg, E> + Cfg::threads - 1) / Cfg::threads;
  }
  template <class Cfg, class E>
  static std::int64_t blocks(const Args<E>& a) {
    return chunks<Cfg, E>(a) * ((a.tokens + Cfg::rows_per_block - 1) / Cfg::rows_per_block);
  }

  /// Launches without checking: the caller has seen can_implement<Cfg, E>(a) succeed on a non-empty call.
  template <class Cfg, class E>
  static Status enqueue(const Args<E>& a, cudaStream_t stream) {
    ktune::LaunchShape s;
    s.grid = dim3(static_cast<unsigned>(blocks<Cfg, E>(a)));
    s.block = dim3(Cfg::threads);
    s.pdl = Cfg::pdl;
    return ktune::launch(add_bias_kernel<Cfg, E>, s, stream,
                         Params<E>{a.x, a.bias, a.out, a.tokens, a.d, static_cast<std::uint32_t>(a.d / pack<Cfg, E>),
                                   static_cast<std::uint32_t>(chunks<Cfg, E>(a))});
  }


  template <class Cfg, class E>
  static ktune::KernelResources resources(const Args<E>&) {
    return {reinterpret_cast<const void*>(&add_bias_kernel<Cfg, E>), Cfg::threads, 0, 1};
  }
};

}  // namespace ktune::ops::add_bias
