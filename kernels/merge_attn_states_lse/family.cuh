// kernels/merge_attn_states_lse/family.cuh: the tunable family S_θ and its host adapter.
//
// Work decomposition (space.hpp): a token's row of heads * head_size contiguous elements is cut into
// packs of vb bytes; block (x, y) covers packs [x * tpb * ppt, (x + 1) * tpb * ppt) of tokens
// y, y + gridDim.y, ... Each thread issues the loads of its ppt packs (and their heads' LSEs) before
// using any of them, then computes the weights per pack and stores. A pack never straddles two heads
// (head_size is a multiple of the vector), so one weight pair applies to the whole pack. No reductions:
// every variant is deterministic, and all variants evaluate the same fp32 expressions per element.
#pragma once

#include <cuda_runtime.h>
#include <math_constants.h>

#include <algorithm>
#include <cstdint>

#include <ktune/device_info.hpp>
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

namespace ktune::ops::merge_attn_states_lse {

/// What one launch of the family kernel needs; strides and sizes counted in packs of the variant.
template <class E>
struct Params {
  E* out;
  float* out_lse;             ///< nullptr: not wanted
  const E* prefix_out;
  const float* prefix_lse;
  const E* suffix_out;
  const float* suffix_lse;
  std::int64_t tokens;
  std::int64_t out_stride;    ///< packs between consecutive tokens
  std::int64_t prefix_stride;
  std::int64_t suffix_stride;
  std::uint32_t heads;
  std::uint32_t row_packs;    ///< heads * head_size / vector elements (< 2^31)
  std::uint32_t head_packs;   ///< head_size / vector elements
};

namespace detail {

/// The per-(token, head) weights. Shared by every variant so that all of them round alike.
struct Weights {
  float prefix;  ///< wp / (wp + ws)
  float suffix;  ///< ws / (wp + ws)
  float lse;     ///< log(wp + ws) + m
  bool empty;    ///< both sides have no keys: outputs are 0, lse is -inf
};

__device__ __forceinline__ Weights merge_weights(float p, float s) {
  // ±inf means "no keys": both count as -inf.
  p = isinf(p) ? -CUDART_INF_F : p;
  s = isinf(s) ? -CUDART_INF_F : s;
  const bool empty = p == -CUDART_INF_F && s == -CUDART_INF_F;
  // fmaxf drops a NaN operand, but then p - m or s - m is NaN, so NaN still reaches every output.
  const float m = fmaxf(p, s);
  const float wp = expf(p - m);
  const float ws = expf(s - m);
  const float sum = wp + ws;  // >= 1 unless empty or NaN: one side's weight is exp(0)
  Weights w{wp / sum, ws / sum, logf(sum) + m, empty};
  if (empty) {
    w.prefix = 0.f;
    w.suffix = 0.f;
    w.lse = -CUDART_INF_F;
  }
  return w;
}

/// Register budget for ppt >= 2: 32 * ppt registers per thread (65536 / (2048 / ppt) threads). ppt
/// packs in flight need about ppt times the registers, and ppt times the bytes in flight per thread
/// lets an SM run 1/ppt of the threads. Under a bare thread bound ptxas caps some ppt = 4 variants at
/// 64 registers and spills. ppt = 1 keeps ptxas's own choice (0: no minimum), which is 32-36 registers.
template <class Cfg>
inline constexpr int min_blocks_per_sm =
    Cfg::packs_per_thread == 1 ? 0
    : 2048 / (Cfg::threads * Cfg::packs_per_thread) > 1 ? 2048 / (Cfg::threads * Cfg::packs_per_thread)
                                                        : 1;

template <class Cfg, class E>
__global__ void __launch_bounds__(Cfg::threads, min_blocks_per_sm<Cfg>) merge_attn_states_lse_kernel(const Params<E> p) {
  constexpr int vector_elements = Cfg::vector_bytes / static_cast<int>(sizeof(E));
  constexpr int packs = Cfg::packs_per_thread;
  static_assert(Cfg::vector_bytes % sizeof(E) == 0 && vector_elements >= 1,
                "A vector must hold a whole number of elements: vb must be a multiple of the element size.");
  static_assert(Cfg::vector_bytes <= 16, "Global loads and stores are at most 16 bytes per thread on sm_80 and sm_90.");
  static_assert(Cfg::threads % 32 == 0 && Cfg::threads <= 1024, "Threads per block must be whole warps, at most 1024.");
  static_assert(packs >= 1, "A thread handles at least one pack per token.");
  using Pack = ktune::AlignedVector<E, vector_elements>;
  static_assert(sizeof(Pack) == Cfg::vector_bytes && alignof(Pack) == Cfg::vector_bytes,
                "A pack must be exactly one aligned vector access of vb bytes.");

  if constexpr (Cfg::pdl) {
    // The previous kernel may still read what we write or write what we read: wait before any global
    // access. Our dependents wait for our completion in turn, so they may start launching now.
    ktune::pdl_wait();
    ktune::pdl_launch_dependents();
  }

  const Pack* __restrict__ prefix = reinterpret_cast<const Pack*>(p.prefix_out);
  const Pack* __restrict__ suffix = reinterpret_cast<const Pack*>(p.suffix_out);
  Pack* __restrict__ out = reinterpret_cast<Pack*>(p.out);
  const float* __restrict__ prefix_lse = p.prefix_lse;
  const float* __restrict__ suffix_lse = p.suffix_lse;
  float* __restrict__ out_lse = p.out_lse;

  // < row_packs + tpb * ppt <= 2^31 + 2^11: fits 32-bit unsigned.
  const unsigned first = blockIdx.x * static_cast<unsigned>(Cfg::threads * packs) + threadIdx.x;

  for (std::int64_t t = blockIdx.y; t < p.tokens; t += gridDim.y) {
    const Pack* prefix_row = prefix + t * p.prefix_stride;
    const Pack* suffix_row = suffix + t * p.suffix_stride;
    Pack* out_row = out + t * p.out_stride;
    const std::int64_t lse_row = t * p.heads;

    // All loads first: 2 * ppt vector loads and 2 * ppt LSE loads in flight per thread.
    Pack pv[packs], sv[packs];
    float pl[packs], sl[packs];
    unsigned head[packs];
#pragma unroll
    for (int k = 0; k < packs; ++k) {
      const unsigned r = first + static_cast<unsigned>(k * Cfg::threads);
      if (r < p.row_packs) {
        head[k] = r / p.head_packs;
        pl[k] = prefix_lse[lse_row + head[k]];
        sl[k] = suffix_lse[lse_row + head[k]];
        pv[k] = prefix_row[r];
        sv[k] = suffix_row[r];
      }
    }
#pragma unroll
    for (int k = 0; k < packs; ++k) {
      const unsigned r = first + static_cast<unsigned>(k * Cfg::threads);
      if (r < p.row_packs) {
        const Weights w = merge_weights(pl[k], sl[k]);
        Pack o;
#pragma unroll
        for (int i = 0; i < vector_elements; ++i) {
          const float v = ktune::to_float(pv[k].v[i]) * w.prefix + ktune::to_float(sv[k].v[i]) * w.suffix;
          // Empty pairs ignore their values (0 * inf or 0 * NaN would not be 0).
          o.v[i] = ktune::from_float<E>(w.empty ? 0.f : v);
        }
        out_row[r] = o;
        if (out_lse != nullptr && r == head[k] * p.head_packs) out_lse[lse_row + head[k]] = w.lse;
      }
    }
  }
}

}  // namespace detail

/// The family S_θ: Space plus the host adapter the registry, benchmark and public API use.
struct Family : Space {
  static constexpr const char* name = "merge_attn_states_lse";
  template <class E> using Args = merge_attn_states_lse::Args<E>;
  using Harness = merge_attn_states_lse::Harness;
  using DevicePreparation = merge_attn_states_lse::DevicePreparation;

  /// validate() plus what the configuration needs: vectors of vb bytes must not straddle heads and
  /// must be aligned (pointers and token strides).
  template <class Cfg, class E>
  static Status can_implement(const Args<E>& a) {
    KTUNE_TRY(validate(a));
    if (is_empty(a)) return Status::success();
    static_assert(Cfg::vector_bytes % sizeof(E) == 0, "vb must be a multiple of the element size.");
    constexpr std::int64_t vec = Cfg::vector_bytes / static_cast<int>(sizeof(E));
    if (a.head_size % vec != 0)
      return Status::unsupported("merge_attn_states_lse: head_size is not a multiple of this variant's vector");
    constexpr std::size_t vb = Cfg::vector_bytes;
    if (!detail::aligned_to(a.out, vb) || !detail::aligned_to(a.prefix_out, vb) || !detail::aligned_to(a.suffix_out, vb))
      return Status::unsupported("merge_attn_states_lse: a value tensor is not aligned to this variant's vector bytes");
    if (a.tokens > 1 && (a.out_stride % vec != 0 || a.prefix_stride % vec != 0 || a.suffix_stride % vec != 0))
      return Status::unsupported("merge_attn_states_lse: a token stride is not a multiple of this variant's vector");
    return Status::success();
  }

  template <class Cfg, class E>
  static KernelResources resources(const Args<E>&) {
    return {reinterpret_cast<const void*>(&detail::merge_attn_states_lse_kernel<Cfg, E>), Cfg::threads, 0, 1};
  }

  /// Grid for a validated, non-empty call: x = chunks of tpb * ppt packs per row, y = token slots.
  template <class Cfg>
  static dim3 grid(std::int64_t tokens, std::int64_t row_packs, int sms, int max_threads_per_sm) {
    constexpr std::int64_t chunk = std::int64_t{Cfg::threads} * Cfg::packs_per_thread;
    const std::int64_t x = (row_packs + chunk - 1) / chunk;
    std::int64_t y = std::min<std::int64_t>(tokens, 65535);
    if constexpr (Cfg::persistent) {
      // About one resident wave; blocks then loop over the remaining tokens.
      const std::int64_t resident = std::int64_t{sms} * std::max(1, max_threads_per_sm / Cfg::threads);
      y = std::max<std::int64_t>(1, std::min(y, resident / x));
    }
    return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y));
  }

  /// Launches without checking: the caller (ktune::run_variant) has seen can_implement<Cfg, E>(a) succeed on
  /// a non-empty call.
  template <class Cfg, class E>
  static Status enqueue(const Args<E>& a, cudaStream_t stream) {
    constexpr std::int64_t vec = Cfg::vector_bytes / static_cast<int>(sizeof(E));
    Params<E> p{a.out,          a.out_lse,       a.prefix_out, a.prefix_lse, a.suffix_out, a.suffix_lse, a.tokens,
                a.out_stride / vec, a.prefix_stride / vec, a.suffix_stride / vec,
                static_cast<std::uint32_t>(a.heads), static_cast<std::uint32_t>(a.heads * a.head_size / vec),
                static_cast<std::uint32_t>(a.head_size / vec)};
    int sms = 0, max_threads_per_sm = 0;
    if constexpr (Cfg::persistent) {
      const DeviceInfo* dev = nullptr;
      KTUNE_TRY(current_device(dev));  // cached per device: no per-call query
      sms = dev->sms;
      max_threads_per_sm = dev->max_threads_per_sm;
    }
    LaunchShape shape;
    shape.grid = grid<Cfg>(a.tokens, p.row_packs, sms, max_threads_per_sm);
    shape.block = dim3(Cfg::threads);
    shape.pdl = Cfg::pdl;
    return ktune::launch(&detail::merge_attn_states_lse_kernel<Cfg, E>, shape, stream, p);
  }

  template <class E> static Status original_can_implement(const Args<E>& a) { return original::can_implement(a); }
  template <class E> static Status original_run(const Args<E>& a, cudaStream_t s) { return original::run(a, s); }
  template <class E> static KernelResources original_resources(const Args<E>& a) { return original::resources(a); }
};

}  // namespace ktune::ops::merge_attn_states_lse
