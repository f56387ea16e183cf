// kernels/rotary_embedding/family.cuh: the tunable family S_θ and its host adapter.
//
// Work decomposition (space.hpp): a unit is V = vb / sizeof(E) consecutive rotation pairs of one head,
// j in [c V, c V + V); its two vectors hold the pairs' first and second elements (neox: columns j and
// j + R/2; GPT-J: the 2V adjacent columns 2j, 2j + 1). Units are numbered (token, head group, column c),
// column fastest; a thread takes one unit column in hpt heads g, g + G, g + 2G, ... (G head groups over
// q's heads then k's), loads all 2 hpt vectors, then the token's position and the V cos and V sin it
// needs, rotates and stores. A grid-stride loop covers any token count. Every element is read and
// written once, columns >= R not at all; no reductions, so every variant is deterministic, and all
// evaluate the same fp32 expression per element (S's order: x cos + (-y sin), one fused multiply-add).
// is_neox is a run-time argument: each configuration has two kernels, one per pairing.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include <ktune/dtype.hpp>
#include <ktune/family.hpp>
#include <ktune/intrinsics.cuh>
#include <ktune/launch.hpp>
#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "args.hpp"
#include "device_preparation.cuh"
#include "harness.hpp"
#include "original.cuh"
#include "space.hpp"

namespace ktune::ops::rotary_embedding {

/// What one launch of the family kernel needs; strides and sizes in elements.
template <class E>
struct Params {
  E* query;
  E* key;
  const float* cos_sin_cache;
  const std::int64_t* positions;
  std::int64_t tokens;
  std::int64_t query_stride;
  std::int64_t key_stride;
  std::int64_t max_pos;
  std::uint32_t q_heads;
  std::uint32_t heads;      ///< q_heads + kv_heads
  std::uint32_t head_size;
  std::uint32_t half;       ///< rotary_dim / 2: pairs per head
  std::uint32_t units;      ///< half / V: unit columns per head
  std::uint32_t groups;     ///< ceil(heads / hpt)
  std::uint32_t lanes;      ///< groups * units: threads per token
};

namespace detail {

/// x cos + (-y sin) and y cos + x sin, each one rounded product and one fused multiply-add (S's order).
__device__ __forceinline__ void rotate(float& x, float& y, float c, float s) {
  const float x0 = x, y0 = y;
  x = __fmaf_rn(x0, c, __fmul_rn(-y0, s));
  y = __fmaf_rn(y0, c, __fmul_rn(x0, s));
}

/// The grid-stride step in (token, lane) form: lane + step_lanes < 2^32 since both are below lanes < 2^31.
__host__ __device__ __forceinline__ void advance(std::int64_t& t, std::uint32_t& lane, std::uint32_t step_tokens,
                                                 std::uint32_t step_lanes, std::uint32_t lanes) {
  lane += step_lanes;
  t += step_tokens;
  if (lane >= lanes) {
    lane -= lanes;
    ++t;
  }
}

template <class Cfg, class E, bool Interleave>
__global__ void __launch_bounds__(Cfg::threads) rotary_embedding_kernel(const Params<E> p) {
  constexpr int V = Cfg::vector_bytes / static_cast<int>(sizeof(E));
  constexpr int H = Cfg::heads_per_thread;
  static_assert(Cfg::vector_bytes % sizeof(E) == 0 && V >= 1,
                "A vector must hold a whole number of elements: vb must be a multiple of the element size.");
  static_assert(Cfg::vector_bytes <= 16, "Global loads and stores are at most 16 bytes per thread on sm_80 and sm_90.");
  static_assert(Cfg::threads % 32 == 0 && Cfg::threads <= 1024, "Threads per block must be whole warps, at most 1024.");
  static_assert(H >= 1, "A thread handles at least one head.");
  using Vec = ktune::AlignedVector<E, V>;
  static_assert(sizeof(Vec) == Cfg::vector_bytes && alignof(Vec) == Cfg::vector_bytes,
                "A vector must be exactly one aligned access of vb bytes.");
  // cos and sin: V floats each, read 16 bytes at a time (or all V at once when fewer).
  constexpr int CacheVec = V * 4 < 16 ? V : 4;
  using CacheChunk = ktune::AlignedVector<float, CacheVec>;

  if constexpr (Cfg::pdl) {
    // The previous kernel may still write q, k or the positions: wait before any global access. Our
    // dependents wait for our completion in turn, so they may start launching now.
    ktune::pdl_wait();
    ktune::pdl_launch_dependents();
  }

  // Unit (t, lane) = item / lanes, item % lanes for item = block * tpb + thread, then a grid-stride
  // loop that advances both without a 64-bit division (a called subroutine on the GPU): the grid is
  // capped so that its stride, and so every first item, fits 32 bits.
  const std::uint32_t first_item = blockIdx.x * static_cast<std::uint32_t>(Cfg::threads) + threadIdx.x;
  const std::uint32_t step = gridDim.x * static_cast<std::uint32_t>(Cfg::threads);
  const std::uint32_t step_tokens = step / p.lanes, step_lanes = step - step_tokens * p.lanes;
  std::int64_t t = first_item / p.lanes;
  std::uint32_t lane = first_item - static_cast<std::uint32_t>(t) * p.lanes;
  for (; t < p.tokens; advance(t, lane, step_tokens, step_lanes, p.lanes)) {
    const std::uint32_t g = lane / p.units;
    const std::uint32_t j0 = (lane - g * p.units) * V;  // first pair of the unit
    const std::uint32_t first = Interleave ? 2 * j0 : j0;
    const std::uint32_t second = Interleave ? 2 * j0 + V : j0 + p.half;

    // All loads of q/k first (they do not depend on the position): 2 H vectors in flight.
    E* head[H];
    Vec a[H], b[H];
#pragma unroll
    for (int k = 0; k < H; ++k) {
      const std::uint32_t h = g + static_cast<std::uint32_t>(k) * p.groups;
      head[k] = nullptr;
      if (h < p.heads) {
        head[k] = h < p.q_heads ? p.query + t * p.query_stride + h * p.head_size
                                : p.key + t * p.key_stride + (h - p.q_heads) * p.head_size;
        a[k] = *reinterpret_cast<const Vec*>(head[k] + first);
        b[k] = *reinterpret_cast<const Vec*>(head[k] + second);
      }
    }
    const std::int64_t pos = p.positions[t];
    if (pos < 0 || pos >= p.max_pos) continue;  // no valid call: leave the token, read nothing outside the cache
    const float* row = p.cos_sin_cache + pos * (2 * static_cast<std::int64_t>(p.half));
    float cs[V], sn[V];
#pragma unroll
    for (int m = 0; m < V / CacheVec; ++m) {
      const CacheChunk c = reinterpret_cast<const CacheChunk*>(row + j0)[m];
      const CacheChunk s = reinterpret_cast<const CacheChunk*>(row + p.half + j0)[m];
#pragma unroll
      for (int i = 0; i < CacheVec; ++i) {
        cs[m * CacheVec + i] = c.v[i];
        sn[m * CacheVec + i] = s.v[i];
      }
    }

#pragma unroll
    for (int k = 0; k < H; ++k) {
      if (head[k] == nullptr) continue;
      float x[V], y[V];
      ktune::to_floats(x, a[k]);
      ktune::to_floats(y, b[k]);
      if constexpr (!Interleave || V == 1) {
        // Pair i is (x[i], y[i]); for GPT-J with one element per vector, (x[0], y[0]) = (2j, 2j + 1).
#pragma unroll
        for (int i = 0; i < V; ++i) rotate(x[i], y[i], cs[i], sn[i]);
      } else {
        // GPT-J: the unit's 2V columns are x then y; pair i < V/2 is (x[2i], x[2i+1]), pair V/2 + i is
        // (y[2i], y[2i+1]).
#pragma unroll
        for (int i = 0; i < V / 2; ++i) {
          rotate(x[2 * i], x[2 * i + 1], cs[i], sn[i]);
          rotate(y[2 * i], y[2 * i + 1], cs[V / 2 + i], sn[V / 2 + i]);
        }
      }
      *reinterpret_cast<Vec*>(head[k] + first) = ktune::from_floats<E>(x);
      *reinterpret_cast<Vec*>(head[k] + second) = ktune::from_floats<E>(y);
    }
  }
}

}  // namespace detail

/// The family S_θ: Space plus the host adapter the registry, benchmark and public API use.
struct Family : Space {
  static constexpr const char* name = "rotary_embedding";
  template <class E> using Args = rotary_embedding::Args<E>;
  using Harness = rotary_embedding::Harness;
  using DevicePreparation = rotary_embedding::DevicePreparation;

  /// Floats per cos/sin access for a vector of V elements (16 bytes at most).
  static constexpr int cache_floats(int v) { return v * 4 < 16 ? v : 4; }

  /// validate() plus what the configuration needs: whole units of V pairs per head, vectors aligned
  /// (pointers, head size, token strides), the cache aligned to its accesses.
  template <class Cfg, class E>
  static Status can_implement(const Args<E>& a) {
    KTUNE_TRY(validate(a));
    if (is_empty(a)) return Status::success();
    static_assert(Cfg::vector_bytes % sizeof(E) == 0, "vb must be a multiple of the element size.");
    constexpr std::int64_t v = Cfg::vector_bytes / static_cast<int>(sizeof(E));
    if ((a.rotary_dim / 2) % v != 0)
      return Status::unsupported("rotary_embedding: rotary_dim / 2 is not a multiple of this variant's vector");
    if (a.head_size % v != 0)
      return Status::unsupported("rotary_embedding: head_size is not a multiple of this variant's vector");
    if (a.tokens > 1 && (a.query_stride % v != 0 || a.key_stride % v != 0))
      return Status::unsupported("rotary_embedding: a token stride is not a multiple of this variant's vector");
    if (!detail::aligned_to(a.query, Cfg::vector_bytes) || !detail::aligned_to(a.key, Cfg::vector_bytes))
      return Status::unsupported("rotary_embedding: query or key is not aligned to this variant's vector bytes");
    if (!detail::aligned_to(a.cos_sin_cache, 4 * static_cast<std::size_t>(cache_floats(static_cast<int>(v)))))
      return Status::unsupported("rotary_embedding: cos_sin_cache is not aligned to this variant's cache accesses");
    return Status::success();
  }

  template <class Cfg, class E>
  static auto kernel(bool is_neox) {
    return is_neox ? &detail::rotary_embedding_kernel<Cfg, E, false> : &detail::rotary_embedding_kernel<Cfg, E, true>;
  }

  template <class Cfg, class E>
  static KernelResources resources(const Args<E>& a) {
    return {reinterpret_cast<const void*>(kernel<Cfg, E>(a.is_neox)), Cfg::threads, 0, 1};
  }

  /// At most this many blocks: grid * tpb stays below 2^32 (the kernel's 32-bit first item and stride),
  /// and the grid-stride loop covers the rest; 2^21 blocks of >= 128 threads are far beyond one wave.
  static constexpr std::int64_t max_blocks = std::int64_t{1} << 21;

  /// Blocks for `items` units: one per tpb units, at most max_blocks.
  template <class Cfg>
  static unsigned blocks(std::int64_t items) {
    const std::int64_t b = (items + Cfg::threads - 1) / Cfg::threads;
    return static_cast<unsigned>(std::min(b, max_blocks));
  }

  /// Launches without checking: the caller (ktune::run_variant) has seen can_implement<Cfg, E>(a)
  /// succeed on a non-empty call.
  template <class Cfg, class E>
  static Status enqueue(const Args<E>& a, cudaStream_t stream) {
    constexpr std::int64_t v = Cfg::vector_bytes / static_cast<int>(sizeof(E));
    constexpr std::int64_t hpt = Cfg::heads_per_thread;
    const std::int64_t heads = a.q_heads + a.kv_heads;
    const std::int64_t units = a.rotary_dim / 2 / v;
    const std::int64_t groups = (heads + hpt - 1) / hpt;
    Params<E> p{a.query,
                a.key,
                a.cos_sin_cache,
                a.positions,
                a.tokens,
                a.query_stride,
                a.key_stride,
                a.max_pos,
                static_cast<std::uint32_t>(a.q_heads),
                static_cast<std::uint32_t>(heads),
                static_cast<std::uint32_t>(a.head_size),
                static_cast<std::uint32_t>(a.rotary_dim / 2),
                static_cast<std::uint32_t>(units),
                static_cast<std::uint32_t>(groups),
                static_cast<std::uint32_t>(groups * units)};
    LaunchShape shape;
    shape.grid = dim3(blocks<Cfg>(a.tokens * groups * units));
    shape.block = dim3(Cfg::threads);
    shape.pdl = Cfg::pdl;
    return ktune::launch(kernel<Cfg, E>(a.is_neox), shape, stream, p);
  }

  template <class E> static Status original_can_implement(const Args<E>& a) { return original::can_implement(a); }
  template <class E> static Status original_run(const Args<E>& a, cudaStream_t s) { return original::run(a, s); }
  template <class E> static KernelResources original_resources(const Args<E>& a) { return original::resources(a); }
};

}  // namespace ktune::ops::rotary_embedding
