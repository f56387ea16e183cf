// kernels/rotary_embedding/original.cuh: the original kernel S, written as SGLang runs
// sgl_kernel.apply_rope_with_cos_sin_cache_inplace(positions, query, key, head_size, cos_sin_cache,
// is_neox) on sm_90 without a fused KV-buffer write:
//   sgl-kernel/python/sgl_kernel/elementwise.py (sglang 0069435): enable_pdl = False on that branch,
//     interleave = not is_neox, positions as int64, q and k viewed as [tokens, heads, head_size];
//   sgl-kernel/csrc/elementwise/rope.cu (sglang 8704aa6): apply_rope_pos_ids_cos_sin_cache, q_rope = q
//     and k_rope = k (in place), fp16 and bf16 only;
//   FlashInfer bc29697 (pinned by sgl-kernel/CMakeLists.txt, sglang 00390b8),
//     include/flashinfer/pos_enc.cuh: BatchQKApplyRotaryPosIdsCosSinCache and its two kernels;
//   built for sm_90 with -use_fast_math (sgl-kernel's common_ops_sm90_build).
// What S does: head_dim is a compile-time 64, 128, 256 or 512; vec = max(16 / sizeof(E), head_dim / 32)
// elements per thread, bdx = head_dim / vec threads per head (the whole head, rotated columns or not),
// blocks of max(128, bdx) threads = bdy tokens of bdx threads. Per call it queries the device's SM count
// and the sequential kernel's occupancy; when the token blocks fill fewer than one wave it launches the
// head-parallel kernel (grid.y = q_heads + kv_heads, one head per block row), else the sequential one (each
// thread walks every head, loop not unrolled). A thread loads its cache row's cos and sin (vec floats
// each, once per token), then per head its vector and the vector it pairs with (every element is read
// twice in neox mode), and stores its vector. No PDL on this path. The arithmetic is one multiply and one
// fused multiply-add per element, flushed to zero as -use_fast_math compiles it (checked with nvcc 13.0:
// mul.ftz then fma.rn.ftz); fast math changes nothing else here.
//
// Where S here deviates, and why:
//   - GPT-J mode reads cos and sin as vec / 2 floats, the half it uses. FlashInfer reads vec floats from
//     column (tx * vec) / 2: the last thread's sin load runs vec / 2 floats into the next cache row, past
//     the cache's end for position max_pos - 1 (an out-of-bounds read on a valid call).
//   - S is also instantiated for float (ktune registers every op in all three dtypes); sgl-kernel
//     dispatches fp16 and bf16 only, and the spec measures those.
//   - Errors come back as a Status; FlashInfer throws on an unsupported head_dim.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/intrinsics.cuh>
#include <ktune/launch.hpp>
#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "args.hpp"

namespace ktune::ops::rotary_embedding::original {

/// x * cos + other * sin as sgl-kernel's -use_fast_math build compiles it: the second product rounded
/// (flush-to-zero), then one fused multiply-add (flush-to-zero).
__device__ __forceinline__ float fast_math_rotate(float x, float cos, float other, float sin) {
  float t, r;
  asm("mul.ftz.f32 %0, %1, %2;" : "=f"(t) : "f"(other), "f"(sin));
  asm("fma.rn.ftz.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(x), "f"(cos), "f"(t));
  return r;
}

/// N values of E read as 16-byte (or N * sizeof(E) when smaller) aligned accesses, converted to float.
template <int N, class E>
__device__ __forceinline__ void cast_load(float (&out)[N], const E* p) {
  constexpr int per = 16 / static_cast<int>(sizeof(E)) < N ? 16 / static_cast<int>(sizeof(E)) : N;
  using Chunk = ktune::AlignedVector<E, per>;
#pragma unroll
  for (int c = 0; c < N / per; ++c) {
    const Chunk v = reinterpret_cast<const Chunk*>(p)[c];
#pragma unroll
    for (int i = 0; i < per; ++i) out[c * per + i] = ktune::to_float(v.v[i]);
  }
}

template <int N, class E>
__device__ __forceinline__ void cast_store(E* p, const float (&in)[N]) {
  constexpr int per = 16 / static_cast<int>(sizeof(E)) < N ? 16 / static_cast<int>(sizeof(E)) : N;
  using Chunk = ktune::AlignedVector<E, per>;
#pragma unroll
  for (int c = 0; c < N / per; ++c) {
    Chunk v;
#pragma unroll
    for (int i = 0; i < per; ++i) v.v[i] = ktune::from_float<E>(in[c * per + i]);
    reinterpret_cast<Chunk*>(p)[c] = v;
  }
}

/// One head's vector of thread tx rotated (FlashInfer's vec_apply_llama_rope_cos_sin and
/// ..._interleave_reuse_half): returns the vector to store, unchanged beyond rotary_dim.
template <bool Interleave, int Vec, class E>
__device__ __forceinline__ void apply_head(float (&v)[Vec], const E* x, const float (&cos)[Vec], const float (&sin)[Vec],
                                           unsigned tx, unsigned rotary_dim) {
  cast_load<Vec>(v, x + tx * Vec);
  if (tx * Vec < rotary_dim) {
    if constexpr (Interleave) {
      float before[Vec];
#pragma unroll
      for (int i = 0; i < Vec; ++i) before[i] = v[i];
#pragma unroll
      for (int i = 0; i < Vec; ++i)
        v[i] = fast_math_rotate(before[i], cos[i / 2], i % 2 == 0 ? -before[i ^ 1] : before[i ^ 1], sin[i / 2]);
    } else {
      const bool first_half = tx * Vec < rotary_dim / 2;
      float permuted[Vec];
      cast_load<Vec>(permuted, x + (first_half ? tx * Vec + rotary_dim / 2 : tx * Vec - rotary_dim / 2));
#pragma unroll
      for (int i = 0; i < Vec; ++i) v[i] = fast_math_rotate(v[i], cos[i], first_half ? -permuted[i] : permuted[i], sin[i]);
    }
  }
}

/// The token's cos and sin for thread tx (FlashInfer's indexing; GPT-J mode reads only the half it uses).
template <bool Interleave, int Vec>
__device__ __forceinline__ void load_cos_sin(float (&cos)[Vec], float (&sin)[Vec], const float* row, unsigned tx,
                                             unsigned rotary_dim) {
  const unsigned half = rotary_dim / 2;
  if constexpr (Interleave) {
    constexpr int used = Vec / 2;
    float c[used], s[used];
    cast_load<used>(c, row + tx * Vec / 2);
    cast_load<used>(s, row + half + tx * Vec / 2);
#pragma unroll
    for (int i = 0; i < used; ++i) {
      cos[i] = c[i];
      sin[i] = s[i];
    }
  } else {
    const unsigned col = (tx * Vec) % half;
    cast_load<Vec>(cos, row + col);
    cast_load<Vec>(sin, row + half + col);
  }
}

/// Kernel arguments in FlashInfer's order (q_rope = q and k_rope = k: in place).
template <class E>
struct Params {
  E* q;
  E* k;
  const float* cos_sin_cache;
  const std::int64_t* pos_ids;
  unsigned nnz, num_qo_heads, num_kv_heads, rotary_dim;
  std::size_t q_stride_n, q_stride_h, k_stride_n, k_stride_h;
};

/// Sequential kernel: one thread row (ty) per token, every head in a loop.
template <bool Interleave, unsigned HeadDim, int Vec, unsigned Bdx, class E>
__global__ void rope_sequential_kernel(const Params<E> p) {
  const unsigned bx = blockIdx.x, tx = threadIdx.x, ty = threadIdx.y, bdy = blockDim.y;
  if (bx * bdy + ty >= p.nnz) return;
  const unsigned idx = bx * bdy + ty;
  const std::int64_t pos = p.pos_ids[idx];
  float cos[Vec], sin[Vec];
  if (tx * Vec < p.rotary_dim) load_cos_sin<Interleave, Vec>(cos, sin, p.cos_sin_cache + pos * p.rotary_dim, tx, p.rotary_dim);
#pragma unroll 1
  for (unsigned h = 0; h < p.num_qo_heads; ++h) {
    E* x = p.q + idx * p.q_stride_n + h * p.q_stride_h;
    float v[Vec];
    apply_head<Interleave, Vec>(v, x, cos, sin, tx, p.rotary_dim);
    cast_store<Vec>(x + tx * Vec, v);
  }
#pragma unroll 1
  for (unsigned h = 0; h < p.num_kv_heads; ++h) {
    E* x = p.k + idx * p.k_stride_n + h * p.k_stride_h;
    float v[Vec];
    apply_head<Interleave, Vec>(v, x, cos, sin, tx, p.rotary_dim);
    cast_store<Vec>(x + tx * Vec, v);
  }
}

/// Head-parallel kernel: block row blockIdx.y is one head (q heads first, then k heads).
template <bool Interleave, unsigned HeadDim, int Vec, unsigned Bdx, class E>
__global__ void rope_head_parallel_kernel(const Params<E> p) {
  const unsigned bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y, bdy = blockDim.y;
  if (bx * bdy + ty >= p.nnz) return;
  const unsigned idx = bx * bdy + ty;
  const std::int64_t pos = p.pos_ids[idx];
  float cos[Vec], sin[Vec];
  if (tx * Vec < p.rotary_dim) load_cos_sin<Interleave, Vec>(cos, sin, p.cos_sin_cache + pos * p.rotary_dim, tx, p.rotary_dim);
  E* x = by < p.num_qo_heads ? p.q + idx * p.q_stride_n + by * p.q_stride_h
                             : p.k + idx * p.k_stride_n + (by - p.num_qo_heads) * p.k_stride_h;
  float v[Vec];
  apply_head<Interleave, Vec>(v, x, cos, sin, tx, p.rotary_dim);
  cast_store<Vec>(x + tx * Vec, v);
}

/// FlashInfer's compile-time launch parameters for a head_dim.
template <class E, unsigned HeadDim>
struct Geometry {
  static constexpr int vec = std::max<int>(16 / sizeof(E), HeadDim / 32);
  static constexpr unsigned bdx = HeadDim / vec;
  static constexpr unsigned threads = std::max(128u, bdx);
  static constexpr unsigned bdy = threads / bdx;
};

/// What S accepts: head_size 64, 128, 256 or 512; rotary_dim a multiple of the pairs' vectors; q, k and
/// the cache aligned to their vectors; token strides a multiple of the vector; q_heads + kv_heads within
/// grid.y; tokens within its 32-bit token index.
template <class E>
Status can_implement(const Args<E>& a) {
  KTUNE_TRY(validate(a));
  if (is_empty(a)) return Status::success();
  if (a.head_size != 64 && a.head_size != 128 && a.head_size != 256 && a.head_size != 512)
    return Status::unsupported("original S: head_size must be 64, 128, 256 or 512 (FlashInfer's DISPATCH_HEAD_DIM)");
  const std::int64_t vec = std::max<std::int64_t>(16 / sizeof(E), a.head_size / 32);
  if (a.is_neox ? a.rotary_dim % (2 * vec) != 0 : a.rotary_dim % vec != 0)
    return Status::unsupported("original S: rotary_dim must be a multiple of its vector (twice that in neox mode)");
  if (a.tokens > 1 && (a.query_stride % vec != 0 || a.key_stride % vec != 0))
    return Status::unsupported("original S: token strides must be a multiple of its vector");
  const std::size_t vb = static_cast<std::size_t>(vec) * sizeof(E);
  if (!detail::aligned_to(a.query, std::min<std::size_t>(vb, 16)) || !detail::aligned_to(a.key, std::min<std::size_t>(vb, 16)))
    return Status::unsupported("original S: query and key must be aligned to 16 bytes");
  if (!detail::aligned_to(a.cos_sin_cache, 16))
    return Status::unsupported("original S: cos_sin_cache must be aligned to 16 bytes");
  if (a.q_heads + a.kv_heads > 65535)
    return Status::unsupported("original S: q_heads + kv_heads above grid.y's 65535");
  return Status::success();
}

/// The two kernels of S for one call's dtype, head_dim and mode: calls f(sequential, head_parallel, shape).
template <class E, class F>
Status with_kernels(const Args<E>& a, F&& f) {
  auto pick = [&](auto head_dim) -> Status {
    constexpr unsigned d = decltype(head_dim)::value;
    using S = Geometry<E, d>;
    if (a.is_neox)
      return f(&rope_sequential_kernel<false, d, S::vec, S::bdx, E>, &rope_head_parallel_kernel<false, d, S::vec, S::bdx, E>,
               S{});
    return f(&rope_sequential_kernel<true, d, S::vec, S::bdx, E>, &rope_head_parallel_kernel<true, d, S::vec, S::bdx, E>,
             S{});
  };
  switch (a.head_size) {
    case 64: return pick(std::integral_constant<unsigned, 64>{});
    case 128: return pick(std::integral_constant<unsigned, 128>{});
    case 256: return pick(std::integral_constant<unsigned, 256>{});
    case 512: return pick(std::integral_constant<unsigned, 512>{});
    default: return Status::unsupported("original S: head_size must be 64, 128, 256 or 512");
  }
}

/// S's choice, as sgl-kernel makes it on every call: the sequential kernel when its token blocks fill at
/// least one wave (occupancy x SMs), else the head-parallel one.
template <class E>
using Kernel = void (*)(Params<E>);

template <class E>
Status plan(const Args<E>& a, Kernel<E>& kernel, LaunchShape& shape) {
  return with_kernels(a, [&](auto sequential, auto head_parallel, auto s) -> Status {
    using S = decltype(s);
    int device = 0, sms = 0, blocks_per_sm = 0;
    KTUNE_CUDA_TRY(cudaGetDevice(&device));
    KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    KTUNE_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, sequential, S::threads, 0));
    const unsigned nblks_x = static_cast<unsigned>((a.tokens + S::bdy - 1) / S::bdy);
    const bool seq = nblks_x >= static_cast<unsigned>(blocks_per_sm * sms);
    kernel = seq ? sequential : head_parallel;
    shape.grid = seq ? dim3(nblks_x) : dim3(nblks_x, static_cast<unsigned>(a.q_heads + a.kv_heads));
    shape.block = dim3(S::bdx, S::bdy);
    return Status::success();
  });
}

template <class E>
KernelResources resources(const Args<E>& a) {
  Kernel<E> kernel = nullptr;
  LaunchShape shape;
  if (!plan(a, kernel, shape).ok()) return {};
  return {reinterpret_cast<const void*>(kernel), static_cast<int>(shape.block.x * shape.block.y), 0, 1};
}

template <class E>
Status run(const Args<E>& a, cudaStream_t stream) {
  KTUNE_TRY(can_implement(a));
  if (is_empty(a)) return Status::success();
  const Params<E> p{a.query,
                    a.key,
                    a.cos_sin_cache,
                    a.positions,
                    static_cast<unsigned>(a.tokens),
                    static_cast<unsigned>(a.q_heads),
                    static_cast<unsigned>(a.kv_heads),
                    static_cast<unsigned>(a.rotary_dim),
                    static_cast<std::size_t>(a.query_stride),
                    static_cast<std::size_t>(a.head_size),
                    static_cast<std::size_t>(a.key_stride),
                    static_cast<std::size_t>(a.head_size)};
  Kernel<E> kernel = nullptr;
  LaunchShape shape;
  KTUNE_TRY(plan(a, kernel, shape));
  return ktune::launch(kernel, shape, stream, p);
}

}  // namespace ktune::ops::rotary_embedding::original
