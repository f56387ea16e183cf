// kernels/rotary_embedding_set_kv/original.cuh: the original kernel S, written as SGLang runs
// sgl_kernel.apply_rope_with_cos_sin_cache_inplace(positions, query, key, head_size, cos_sin_cache, is_neox,
// fused_set_kv_buffer_arg) on sm_90 with the fused KV-buffer write (SGLang takes that path for bf16 KV caches):
// FlashInfer's "enhanced" rope (BatchQKApplyRotaryPosIdsCosSinCacheEnhanced and its head-parallel and
// sequential kernels) with the save step, as sgl-kernel builds it (-use_fast_math). Written here from that
// structure and kernels/rotary_embedding/original.cuh (whose device helpers it reuses), not copied.
//
// What S does: everything rotary_embedding's S does (head_dim a compile-time 64, 128, 256 or 512; vec =
// max(16 / sizeof(E), head_dim / 32), bdx = head_dim / vec threads per head, blocks of max(128, bdx) threads =
// bdy tokens; the head-parallel kernel on grid.y = q_heads + kv_heads when the token blocks fill less than a
// wave at the sequential kernel's occupancy, else the sequential one with every head in a loop), and for each
// kv head, in the same thread, the save: the rotated k vector as stored into key is stored into k_buffer's
// slot cache_loc[token] too (the whole head: columns past rotary_dim unchanged), and the thread's vector of
// value is loaded and stored into v_buffer's slot. A scale other than 1 divides the stored value (the one
// rounded into key, for k) in fp32 with IEEE rounding (__fdiv_rn), then rounds to E: SGLang's
// set_kv_buffer (cache_k.div_(k_scale)) on the rotated key. No PDL on this path.
//
// Where S here deviates, and why:
//   - rotary_embedding's S's GPT-J cos/sin read (its original.cuh says why), shared.
//   - A slot outside [0, cache_rows) stores nothing: FlashInfer writes wherever cache_loc points. The spec
//     and the harness never give such a slot; the check costs a compare per kv head.
//   - S is also instantiated for float and fp16 (ktune registers every op in all three dtypes).
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
#include "kernels/rotary_embedding/original.cuh"

namespace ktune::ops::rotary_embedding_set_kv {

/// The value a buffer stores for x (float, the unrounded result for k): x rounded to E when the scale is 1,
/// else x rounded to E (as key holds it), divided by the scale with IEEE rounding, rounded again. Shared by
/// S and the family, so both store bitwise the same.
template <class E>
__device__ __forceinline__ float stored(float x, float scale) {
  return scale == 1.f ? x : __fdiv_rn(ktune::to_float(ktune::from_float<E>(x)), scale);
}

namespace original {

using rotary_embedding::original::apply_head;
using rotary_embedding::original::cast_load;
using rotary_embedding::original::cast_store;
using rotary_embedding::original::Geometry;
using rotary_embedding::original::load_cos_sin;

/// Kernel arguments in FlashInfer's order (q_rope = q and k_rope = k: in place), then the save's.
template <class E>
struct Params {
  E* q;
  E* k;
  const float* cos_sin_cache;
  const std::int64_t* pos_ids;
  unsigned nnz, num_qo_heads, num_kv_heads, rotary_dim;
  std::size_t q_stride_n, q_stride_h, k_stride_n, k_stride_h;
  const E* v;
  E* k_buffer;
  E* v_buffer;
  const std::int64_t* cache_loc;
  float k_scale, v_scale;
  std::size_t v_stride_n, v_stride_h, k_buffer_stride_n, v_buffer_stride_n, buffer_stride_h;
  std::int64_t cache_rows;
};

/// One kv head of token idx, thread tx: rotate k in place, store it (scaled) into the slot, copy v there.
template <bool Interleave, int Vec, class E>
__device__ __forceinline__ void kv_head(const Params<E>& p, unsigned idx, unsigned h, std::int64_t slot,
                                        const float (&cos)[Vec], const float (&sin)[Vec], unsigned tx) {
  E* x = p.k + idx * p.k_stride_n + h * p.k_stride_h;
  float v[Vec];
  apply_head<Interleave, Vec>(v, x, cos, sin, tx, p.rotary_dim);
  cast_store<Vec>(x + tx * Vec, v);
  if (slot < 0 || slot >= p.cache_rows) return;
  float kb[Vec], vb[Vec];
#pragma unroll
  for (int i = 0; i < Vec; ++i) kb[i] = stored<E>(v[i], p.k_scale);
  cast_store<Vec>(p.k_buffer + slot * p.k_buffer_stride_n + h * p.buffer_stride_h + tx * Vec, kb);
  cast_load<Vec>(vb, p.v + idx * p.v_stride_n + h * p.v_stride_h + tx * Vec);
#pragma unroll
  for (int i = 0; i < Vec; ++i) vb[i] = stored<E>(vb[i], p.v_scale);
  cast_store<Vec>(p.v_buffer + slot * p.v_buffer_stride_n + h * p.buffer_stride_h + tx * Vec, vb);
}

/// Sequential kernel: one thread row (ty) per token, every head in a loop.
template <bool Interleave, unsigned HeadDim, int Vec, unsigned Bdx, class E>
__global__ void rope_set_kv_sequential_kernel(const Params<E> p) {
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
  const std::int64_t slot = p.cache_loc[idx];
#pragma unroll 1
  for (unsigned h = 0; h < p.num_kv_heads; ++h) kv_head<Interleave, Vec>(p, idx, h, slot, cos, sin, tx);
}

/// Head-parallel kernel: block row blockIdx.y is one head (q heads first, then kv heads with their save).
template <bool Interleave, unsigned HeadDim, int Vec, unsigned Bdx, class E>
__global__ void rope_set_kv_head_parallel_kernel(const Params<E> p) {
  const unsigned bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y, bdy = blockDim.y;
  if (bx * bdy + ty >= p.nnz) return;
  const unsigned idx = bx * bdy + ty;
  const std::int64_t pos = p.pos_ids[idx];
  float cos[Vec], sin[Vec];
  if (tx * Vec < p.rotary_dim) load_cos_sin<Interleave, Vec>(cos, sin, p.cos_sin_cache + pos * p.rotary_dim, tx, p.rotary_dim);
  if (by < p.num_qo_heads) {
    E* x = p.q + idx * p.q_stride_n + by * p.q_stride_h;
    float v[Vec];
    apply_head<Interleave, Vec>(v, x, cos, sin, tx, p.rotary_dim);
    cast_store<Vec>(x + tx * Vec, v);
  } else {
    kv_head<Interleave, Vec>(p, idx, by - p.num_qo_heads, p.cache_loc[idx], cos, sin, tx);
  }
}

/// What S accepts: rotary_embedding's S's conditions on q, k and the cache, and the same of value and the
/// buffers (aligned to its vector, strides a multiple of it).
template <class E>
Status can_implement(const Args<E>& a) {
  KTUNE_TRY(validate(a));
  if (is_empty(a)) return Status::success();
  if (a.head_size != 64 && a.head_size != 128 && a.head_size != 256 && a.head_size != 512)
    return Status::unsupported("original S: head_size must be 64, 128, 256 or 512 (FlashInfer's DISPATCH_HEAD_DIM)");
  const std::int64_t vec = std::max<std::int64_t>(16 / sizeof(E), a.head_size / 32);
  if (a.is_neox ? a.rotary_dim % (2 * vec) != 0 : a.rotary_dim % vec != 0)
    return Status::unsupported("original S: rotary_dim must be a multiple of its vector (twice that in neox mode)");
  if (a.tokens > 1 && (a.query_stride % vec != 0 || a.key_stride % vec != 0 || a.value_stride % vec != 0))
    return Status::unsupported("original S: token strides must be a multiple of its vector");
  if (a.cache_rows > 1 && (a.k_buffer_stride % vec != 0 || a.v_buffer_stride % vec != 0))
    return Status::unsupported("original S: slot strides must be a multiple of its vector");
  const std::size_t vb = std::min<std::size_t>(static_cast<std::size_t>(vec) * sizeof(E), 16);
  for (const void* p : {static_cast<const void*>(a.query), static_cast<const void*>(a.key), static_cast<const void*>(a.value),
                        static_cast<const void*>(a.k_buffer), static_cast<const void*>(a.v_buffer)})
    if (!detail::aligned_to(p, vb))
      return Status::unsupported("original S: query, key, value, k_buffer and v_buffer must be aligned to 16 bytes");
  if (!detail::aligned_to(a.cos_sin_cache, 16))
    return Status::unsupported("original S: cos_sin_cache must be aligned to 16 bytes");
  if (a.q_heads + a.kv_heads > 65535) return Status::unsupported("original S: q_heads + kv_heads above grid.y's 65535");
  return Status::success();
}

template <class E>
using Kernel = void (*)(Params<E>);

/// The two kernels of S for one call's dtype, head_dim and mode: calls f(sequential, head_parallel, shape).
template <class E, class F>
Status with_kernels(const Args<E>& a, F&& f) {
  auto pick = [&](auto head_dim) -> Status {
    constexpr unsigned d = decltype(head_dim)::value;
    using S = Geometry<E, d>;
    if (a.is_neox)
      return f(&rope_set_kv_sequential_kernel<false, d, S::vec, S::bdx, E>,
               &rope_set_kv_head_parallel_kernel<false, d, S::vec, S::bdx, E>, S{});
    return f(&rope_set_kv_sequential_kernel<true, d, S::vec, S::bdx, E>,
             &rope_set_kv_head_parallel_kernel<true, d, S::vec, S::bdx, E>, S{});
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
  const auto z = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  const Params<E> p{a.query,        a.key,
                    a.cos_sin_cache, a.positions,
                    static_cast<unsigned>(a.tokens), static_cast<unsigned>(a.q_heads),
                    static_cast<unsigned>(a.kv_heads), static_cast<unsigned>(a.rotary_dim),
                    z(a.query_stride), z(a.head_size),
                    z(a.key_stride),  z(a.head_size),
                    a.value,          a.k_buffer,
                    a.v_buffer,       a.cache_loc,
                    a.k_scale,        a.v_scale,
                    z(a.value_stride), z(a.head_size),
                    z(a.k_buffer_stride), z(a.v_buffer_stride),
                    z(a.head_size),   a.cache_rows};
  Kernel<E> kernel = nullptr;
  LaunchShape shape;
  KTUNE_TRY(plan(a, kernel, shape));
  return ktune::launch(kernel, shape, stream, p);
}

}  // namespace original
}  // namespace ktune::ops::rotary_embedding_set_kv
