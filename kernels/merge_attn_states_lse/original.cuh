// kernels/merge_attn_states_lse/original.cuh: the original kernel S, written as SGLang's sgl-kernel
// writes merge_attn_states (csrc/attention/merge_attn_states.cu, itself from vLLM): one 16-byte pack
// per thread, 128 threads per block, a flat grid of ceil(tokens * heads * head_size / pack / 128)
// blocks, 32-bit unsigned indexing, contiguous [tokens, heads, head_size] tensors and [tokens, heads]
// LSEs.
//
// One deliberate change: SGLang computes exp(-inf - (-inf)) = NaN when both LSEs are -inf (no keys on
// either side) and writes NaN. S here writes 0 and out_lse = -inf, the op's semantics (reference.hpp),
// so it passes the same checks as every variant it is compared with.
#pragma once

#include <cuda_runtime.h>
#include <math_constants.h>

#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/launch.hpp>
#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "args.hpp"

namespace ktune::ops::merge_attn_states_lse::original {

template <typename scalar_t, const unsigned NUM_THREADS>
__global__ void merge_attn_states_kernel(scalar_t* output, float* output_lse, const scalar_t* prefix_output,
                                         const float* prefix_lse, const scalar_t* suffix_output,
                                         const float* suffix_lse, const unsigned num_tokens, const unsigned num_heads,
                                         const unsigned head_size) {
  using pack_128b_t = uint4;
  const unsigned pack_size = 16 / sizeof(scalar_t);
  const unsigned threads_per_head = head_size / pack_size;

  const unsigned global_idx = blockIdx.x * NUM_THREADS + threadIdx.x;
  const unsigned token_head_threads = num_tokens * num_heads * threads_per_head;

  if (global_idx >= token_head_threads) return;

  // global_idx -> token_idx + head_idx + pack_idx
  const unsigned token_head_idx = global_idx / threads_per_head;
  const unsigned pack_idx = global_idx % threads_per_head;

  const unsigned token_idx = token_head_idx / num_heads;
  const unsigned head_idx = token_head_idx % num_heads;

  const unsigned pack_offset = pack_idx * pack_size;
  const unsigned head_offset = token_idx * num_heads * head_size + head_idx * head_size;
  const scalar_t* prefix_head_ptr = prefix_output + head_offset;
  const scalar_t* suffix_head_ptr = suffix_output + head_offset;
  scalar_t* output_head_ptr = output + head_offset;

  float p_lse = prefix_lse[token_idx * num_heads + head_idx];
  float s_lse = suffix_lse[token_idx * num_heads + head_idx];
  p_lse = isinf(p_lse) ? -CUDART_INF_F : p_lse;
  s_lse = isinf(s_lse) ? -CUDART_INF_F : s_lse;
  // ktune: SGLang has no such case and produces NaN here (exp(-inf - (-inf))).
  const bool both_empty = p_lse == -CUDART_INF_F && s_lse == -CUDART_INF_F;

  const float max_lse = fmaxf(p_lse, s_lse);
  p_lse = p_lse - max_lse;
  s_lse = s_lse - max_lse;
  const float p_se = expf(p_lse);
  const float s_se = expf(s_lse);
  const float out_se = p_se + s_se;
  const float p_scale = p_se / out_se;
  const float s_scale = s_se / out_se;

  if (pack_offset < head_size) {
    // Pack 128b load
    pack_128b_t p_out_pack = reinterpret_cast<const pack_128b_t*>(prefix_head_ptr)[pack_offset / pack_size];
    pack_128b_t s_out_pack = reinterpret_cast<const pack_128b_t*>(suffix_head_ptr)[pack_offset / pack_size];
    pack_128b_t o_out_pack;

#pragma unroll
    for (unsigned i = 0; i < pack_size; ++i) {
      // Always use float for FMA to keep high precision.
      const float p_out_f = ktune::to_float(reinterpret_cast<const scalar_t*>(&p_out_pack)[i]);
      const float s_out_f = ktune::to_float(reinterpret_cast<const scalar_t*>(&s_out_pack)[i]);
      const float o_out_f = both_empty ? 0.f : p_out_f * p_scale + (s_out_f * s_scale);
      reinterpret_cast<scalar_t*>(&o_out_pack)[i] = ktune::from_float<scalar_t>(o_out_f);
    }

    // Pack 128b storage
    reinterpret_cast<pack_128b_t*>(output_head_ptr)[pack_offset / pack_size] = o_out_pack;
  }
  // We only need to write to output_lse once per head.
  if (output_lse != nullptr && pack_idx == 0) {
    const float out_lse = both_empty ? -CUDART_INF_F : logf(out_se) + max_lse;
    output_lse[token_idx * num_heads + head_idx] = out_lse;
  }
}

inline constexpr unsigned threads = 128;

/// What S accepts: contiguous tensors, head_size a multiple of the 16-byte pack, 16-byte aligned
/// value pointers, and tokens * heads * head_size within its 32-bit unsigned indexing.
template <class E>
Status can_implement(const Args<E>& a) {
  KTUNE_TRY(validate(a));
  if (a.tokens == 0) return Status::success();
  constexpr std::int64_t pack = 16 / sizeof(E);
  const std::int64_t row = a.heads * a.head_size;
  if (a.tokens > 1 && (a.out_stride != row || a.prefix_stride != row || a.suffix_stride != row))
    return Status::unsupported("original S: tensors must be contiguous (token stride == heads * head_size)");
  if (a.head_size % pack != 0) return Status::unsupported("original S: head_size must be a multiple of the 16-byte pack");
  if (!detail::aligned_to(a.out, 16) || !detail::aligned_to(a.prefix_out, 16) || !detail::aligned_to(a.suffix_out, 16))
    return Status::unsupported("original S: value tensors must be 16-byte aligned");
  // global_idx = blockIdx.x * 128 + threadIdx.x and the element offsets are 32-bit unsigned.
  constexpr std::int64_t limit = (std::int64_t{1} << 32) - 16 * threads;
  if (a.tokens > limit / row) return Status::too_large("original S: tokens * heads * head_size exceeds its 32-bit indexing");
  return Status::success();
}

template <class E>
KernelResources resources(const Args<E>&) {
  return {reinterpret_cast<const void*>(&merge_attn_states_kernel<E, threads>), static_cast<int>(threads), 0, 1};
}

template <class E>
Status run(const Args<E>& a, cudaStream_t stream) {
  KTUNE_TRY(can_implement(a));
  if (a.tokens == 0) return Status::success();
  constexpr std::int64_t pack = 16 / sizeof(E);
  const std::int64_t total_threads = a.tokens * a.heads * (a.head_size / pack);
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>((total_threads + threads - 1) / threads));
  shape.block = dim3(threads);
  return ktune::launch(&merge_attn_states_kernel<E, threads>, shape, stream, a.out, a.out_lse, a.prefix_out,
                       a.prefix_lse, a.suffix_out, a.suffix_lse, static_cast<unsigned>(a.tokens),
                       static_cast<unsigned>(a.heads), static_cast<unsigned>(a.head_size));
}

}  // namespace ktune::ops::merge_attn_states_lse::original
