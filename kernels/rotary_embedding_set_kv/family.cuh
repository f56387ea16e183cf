// kernels/rotary_embedding_set_kv/family.cuh: the tunable family S_θ and its host adapter.
//
// Work decomposition (space.hpp): rotary_embedding's family with the store. A head of head_size elements is
// ceil(head_size / 2V) units, V = vb / sizeof(E): units u < R / 2V hold V rotation pairs (two vectors: the
// pairs' first and second elements, neox columns j and j + R/2, GPT-J the 2V columns 2j .. 2j + 2V - 1), the
// others two consecutive vectors of the head's tail (columns >= R; the second may lie past the head and is
// then skipped). A token has q_heads + 2 kv_heads heads: q's, k's, then value's. Units are numbered (token,
// head group, unit), unit fastest; a thread takes one unit in hpt heads g, g + G, ... (G head groups), loads
// all their vectors, then the token's position, slot and (for a rotation unit) the V cos and V sin, and
// writes: q rotated in place; k rotated in place and (scaled) into k_buffer's slot, its tail copied there;
// value (scaled) into v_buffer's slot. Every element is read and written once, q's tail never; no
// reductions, so every variant is deterministic, and all evaluate the same fp32 expressions per element as S
// (x cos + (-y sin), one fused multiply-add; the shared `stored` for the buffers). is_neox is a run-time
// argument: each configuration has two kernels, one per pairing.
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
#include "kernels/rotary_embedding/family.cuh"
#include "original.cuh"
#include "space.hpp"

namespace ktune::ops::rotary_embedding_set_kv {

/// What one launch of the family kernel needs; strides and sizes in elements.
template <class E>
struct Params {
  E* query;
  E* key;
  const E* value;
  E* k_buffer;
  E* v_buffer;
  const float* cos_sin_cache;
  const std::int64_t* positions;
  const std::int64_t* cache_loc;
  std::int64_t tokens;
  std::int64_t query_stride, key_stride, value_stride, k_buffer_stride, v_buffer_stride;
  std::int64_t max_pos, cache_rows;
  float k_scale, v_scale;
  std::uint32_t q_heads;
  std::uint32_t qk_heads;   ///< q_heads + kv_heads: heads from here on are value's
  std::uint32_t heads;      ///< q_heads + 2 kv_heads
  std::uint32_t head_size;
  std::uint32_t half;       ///< rotary_dim / 2: pairs per head
  std::uint32_t rot_units;  ///< half / V: rotation units per head
  std::uint32_t units;      ///< ceil(head_size / 2V): units per head
  std::uint32_t groups;     ///< ceil(heads / hpt)
  std::uint32_t lanes;      ///< groups * units: threads per token
};

namespace detail {

using rotary_embedding::detail::advance;
using rotary_embedding::detail::rotate;

template <class Cfg, class E, bool Interleave>
__global__ void __launch_bounds__(Cfg::threads) rotary_embedding_set_kv_kernel(const Params<E> p) {
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
  constexpr int CacheVec = V * 4 < 16 ? V : 4;
  using CacheChunk = ktune::AlignedVector<float, CacheVec>;

  if constexpr (Cfg::pdl) {
    // The previous kernel may still write any input: wait before the first global access. Our dependents
    // wait for our completion in turn, so they may start launching now.
    ktune::pdl_wait();
    ktune::pdl_launch_dependents();
  }

  const std::uint32_t first_item = blockIdx.x * static_cast<std::uint32_t>(Cfg::threads) + threadIdx.x;
  const std::uint32_t step = gridDim.x * static_cast<std::uint32_t>(Cfg::threads);
  const std::uint32_t step_tokens = step / p.lanes, step_lanes = step - step_tokens * p.lanes;
  std::int64_t t = first_item / p.lanes;
  std::uint32_t lane = first_item - static_cast<std::uint32_t>(t) * p.lanes;
  for (; t < p.tokens; advance(t, lane, step_tokens, step_lanes, p.lanes)) {
    const std::uint32_t g = lane / p.units;
    const std::uint32_t u = lane - g * p.units;
    const bool rotation_unit = u < p.rot_units;
    const std::uint32_t j0 = u * V;  // first pair of a rotation unit
    const std::uint32_t first =
        rotation_unit ? (Interleave ? 2 * j0 : j0) : 2 * p.half + (u - p.rot_units) * 2 * V;
    const std::uint32_t second = rotation_unit ? (Interleave ? 2 * j0 + V : j0 + p.half) : first + V;
    const bool has_second = rotation_unit || second < p.head_size;

    // All loads of q/k/value first (they depend on neither the position nor the slot).
    E* head[H];
    int kind[H];  // 0: q, 1: k, 2: value
    std::uint32_t kv[H];  // the head's index among k's or value's heads
    Vec a[H], b[H];
#pragma unroll
    for (int k = 0; k < H; ++k) {
      const std::uint32_t h = g + static_cast<std::uint32_t>(k) * p.groups;
      head[k] = nullptr;
      kind[k] = h < p.q_heads ? 0 : h < p.qk_heads ? 1 : 2;
      kv[k] = kind[k] == 1 ? h - p.q_heads : h - p.qk_heads;
      if (h >= p.heads || (kind[k] == 0 && !rotation_unit)) continue;  // q's tail stays as it is
      head[k] = kind[k] == 0   ? p.query + t * p.query_stride + h * p.head_size
                : kind[k] == 1 ? p.key + t * p.key_stride + kv[k] * p.head_size
                               : const_cast<E*>(p.value) + t * p.value_stride + kv[k] * p.head_size;
      a[k] = *reinterpret_cast<const Vec*>(head[k] + first);
      if (has_second) b[k] = *reinterpret_cast<const Vec*>(head[k] + second);
    }
    const std::int64_t pos = p.positions[t];
    const std::int64_t slot = p.cache_loc[t];
    // A position outside the cache is no valid call: q and k stay as they are (k is stored as it is), and
    // nothing outside the cache is read. A slot outside the buffers stores nothing.
    const bool rotate_now = rotation_unit && pos >= 0 && pos < p.max_pos;
    const bool store = slot >= 0 && slot < p.cache_rows;
    float cs[V], sn[V];
    if (rotate_now) {
      const float* row = p.cos_sin_cache + pos * (2 * static_cast<std::int64_t>(p.half));
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
    }

#pragma unroll
    for (int k = 0; k < H; ++k) {
      if (head[k] == nullptr) continue;
      float x[V], y[V];
      ktune::to_floats(x, a[k]);
      if (has_second) ktune::to_floats(y, b[k]);
      if (kind[k] != 2 && rotate_now) {
        if constexpr (!Interleave || V == 1) {
#pragma unroll
          for (int i = 0; i < V; ++i) rotate(x[i], y[i], cs[i], sn[i]);
        } else {
#pragma unroll
          for (int i = 0; i < V / 2; ++i) {
            rotate(x[2 * i], x[2 * i + 1], cs[i], sn[i]);
            rotate(y[2 * i], y[2 * i + 1], cs[V / 2 + i], sn[V / 2 + i]);
          }
        }
        *reinterpret_cast<Vec*>(head[k] + first) = ktune::from_floats<E>(x);
        *reinterpret_cast<Vec*>(head[k] + second) = ktune::from_floats<E>(y);
      }
      if (kind[k] == 0 || !store) continue;
      const float scale = kind[k] == 1 ? p.k_scale : p.v_scale;
      E* dst = kind[k] == 1 ? p.k_buffer + slot * p.k_buffer_stride + kv[k] * p.head_size
                            : p.v_buffer + slot * p.v_buffer_stride + kv[k] * p.head_size;
#pragma unroll
      for (int i = 0; i < V; ++i) x[i] = stored<E>(x[i], scale);
      *reinterpret_cast<Vec*>(dst + first) = ktune::from_floats<E>(x);
      if (has_second) {
#pragma unroll
        for (int i = 0; i < V; ++i) y[i] = stored<E>(y[i], scale);
        *reinterpret_cast<Vec*>(dst + second) = ktune::from_floats<E>(y);
      }
    }
  }
}

}  // namespace detail

/// The family S_θ: Space plus the host adapter the registry, benchmark and public API use.
struct Family : Space {
  static constexpr const char* name = "rotary_embedding_set_kv";
  template <class E> using Args = rotary_embedding_set_kv::Args<E>;
  using Harness = rotary_embedding_set_kv::Harness;
  using DevicePreparation = rotary_embedding_set_kv::DevicePreparation;

  /// Floats per cos/sin access for a vector of V elements (16 bytes at most).
  static constexpr int cache_floats(int v) { return v * 4 < 16 ? v : 4; }

  /// validate() plus what the configuration needs: whole units of V pairs per head, vectors aligned
  /// (pointers, head size, token and slot strides), the cache aligned to its accesses.
  template <class Cfg, class E>
  static Status can_implement(const Args<E>& a) {
    KTUNE_TRY(validate(a));
    if (is_empty(a)) return Status::success();
    static_assert(Cfg::vector_bytes % sizeof(E) == 0, "vb must be a multiple of the element size.");
    constexpr std::int64_t v = Cfg::vector_bytes / static_cast<int>(sizeof(E));
    if ((a.rotary_dim / 2) % v != 0)
      return Status::unsupported("rotary_embedding_set_kv: rotary_dim / 2 is not a multiple of this variant's vector");
    if (a.head_size % v != 0)
      return Status::unsupported("rotary_embedding_set_kv: head_size is not a multiple of this variant's vector");
    if (a.tokens > 1 && (a.query_stride % v != 0 || a.key_stride % v != 0 || a.value_stride % v != 0))
      return Status::unsupported("rotary_embedding_set_kv: a token stride is not a multiple of this variant's vector");
    if (a.cache_rows > 1 && (a.k_buffer_stride % v != 0 || a.v_buffer_stride % v != 0))
      return Status::unsupported("rotary_embedding_set_kv: a slot stride is not a multiple of this variant's vector");
    for (const void* p : {static_cast<const void*>(a.query), static_cast<const void*>(a.key), static_cast<const void*>(a.value),
                          static_cast<const void*>(a.k_buffer), static_cast<const void*>(a.v_buffer)})
      if (!detail::aligned_to(p, Cfg::vector_bytes))
        return Status::unsupported("rotary_embedding_set_kv: a tensor is not aligned to this variant's vector bytes");
    if (!detail::aligned_to(a.cos_sin_cache, 4 * static_cast<std::size_t>(cache_floats(static_cast<int>(v)))))
      return Status::unsupported("rotary_embedding_set_kv: cos_sin_cache is not aligned to this variant's cache accesses");
    return Status::success();
  }

  template <class Cfg, class E>
  static auto kernel(bool is_neox) {
    return is_neox ? &detail::rotary_embedding_set_kv_kernel<Cfg, E, false>
                   : &detail::rotary_embedding_set_kv_kernel<Cfg, E, true>;
  }

  template <class Cfg, class E>
  static KernelResources resources(const Args<E>& a) {
    return {reinterpret_cast<const void*>(kernel<Cfg, E>(a.is_neox)), Cfg::threads, 0, 1};
  }

  /// At most this many blocks: grid * tpb stays below 2^32 (the kernel's 32-bit first item and stride),
  /// and the grid-stride loop covers the rest.
  static constexpr std::int64_t max_blocks = std::int64_t{1} << 21;

  template <class Cfg>
  static unsigned blocks(std::int64_t items) {
    const std::int64_t b = (items + Cfg::threads - 1) / Cfg::threads;
    return static_cast<unsigned>(std::min(b, max_blocks));
  }

  /// Launches without checking: the caller (ktune::run_variant) has seen can_implement<Cfg, E>(a) succeed
  /// on a non-empty call.
  template <class Cfg, class E>
  static Status enqueue(const Args<E>& a, cudaStream_t stream) {
    constexpr std::int64_t v = Cfg::vector_bytes / static_cast<int>(sizeof(E));
    constexpr std::int64_t hpt = Cfg::heads_per_thread;
    const std::int64_t heads = a.q_heads + 2 * a.kv_heads;
    const std::int64_t units = (a.head_size + 2 * v - 1) / (2 * v);
    const std::int64_t groups = (heads + hpt - 1) / hpt;
    const auto u32 = [](std::int64_t x) { return static_cast<std::uint32_t>(x); };
    const Params<E> p{a.query,
                      a.key,
                      a.value,
                      a.k_buffer,
                      a.v_buffer,
                      a.cos_sin_cache,
                      a.positions,
                      a.cache_loc,
                      a.tokens,
                      a.query_stride,
                      a.key_stride,
                      a.value_stride,
                      a.k_buffer_stride,
                      a.v_buffer_stride,
                      a.max_pos,
                      a.cache_rows,
                      a.k_scale,
                      a.v_scale,
                      u32(a.q_heads),
                      u32(a.q_heads + a.kv_heads),
                      u32(heads),
                      u32(a.head_size),
                      u32(a.rotary_dim / 2),
                      u32(a.rotary_dim / 2 / v),
                      u32(units),
                      u32(groups),
                      u32(groups * units)};
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

}  // namespace ktune::ops::rotary_embedding_set_kv
