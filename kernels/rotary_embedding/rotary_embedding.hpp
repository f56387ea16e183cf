// kernels/rotary_embedding/rotary_embedding.hpp: host-only declarations of the public API, for .cpp
// files compiled by a host compiler (a PyTorch binding, say). Link ktune::kernels, which compiles the
// definitions (rotary_embedding.cu) for fp32, fp16 and bf16. CUDA code includes rotary_embedding.cuh
// instead and needs nothing but the CUDA toolkit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

namespace ktune {

/// Rotary position embedding applied in place to query and key, as sgl_kernel's
/// apply_rope_with_cos_sin_cache_inplace(positions, query, key, head_size, cos_sin_cache, is_neox):
/// for every token t with p = positions[t], every head of query and of key, and every pair j < R/2
/// (R = rotary_dim) of elements (j, j + R/2) when is_neox, else (2j, 2j + 1) (GPT-J interleaved),
///   x' = x cos - y sin,  y' = y cos + x sin,  cos = cos_sin_cache[p, j],  sin = cos_sin_cache[p, R/2 + j];
/// elements R .. head_size - 1 stay as they are. Arithmetic in fp32, results rounded to E.
///
///   positions     [tokens]                       int64, contiguous; each value in [0, max_pos)
///   query         [tokens, q_heads, head_size]   E, heads contiguous, token stride query_stride (elements;
///                                                -1: q_heads * head_size)
///   key           [tokens, kv_heads, head_size]  E, heads contiguous, token stride key_stride (-1: kv_heads * head_size)
///   cos_sin_cache [max_pos, rotary_dim]          fp32, contiguous: cos in the first half of a row, sin in the second
///
/// Raw device pointers on the current device; query and key must not overlap (they may be slices of one
/// qkv buffer: pass its row length as the strides). positions are the caller's promise (validate() reads
/// no device memory): a token whose position lies outside [0, max_pos) is left as it is and nothing
/// outside the cache is read. Any valid input works: tokens == 0 is a no-op, any even rotary_dim <=
/// head_size, any head_size, pointers aligned only to their element (positions to 8 bytes). Token strides,
/// as in every ktune op: -1 (the default) means contiguous tokens; any other value is the stride itself,
/// at least heads * head_size when tokens > 1; 0 and other negative values are errors. Errors (nothing
/// launched, nothing written): null pointers, negative sizes, q_heads, kv_heads or max_pos < 1, odd
/// rotary_dim or one above head_size, short strides, misaligned pointers, query == key, offsets
/// overflowing the kernels' indexing. Graph-capturable (no synchronisation, no allocation, device facts
/// cached per device). Deterministic: the same input gives bitwise the same output on every call.
/// \tparam E float, __half or __nv_bfloat16
template <class E>
[[nodiscard]] Status rotary_embedding(const std::int64_t* positions, E* query, E* key, std::int64_t head_size,
                                      const float* cos_sin_cache, bool is_neox, std::int64_t tokens,
                                      std::int64_t q_heads, std::int64_t kv_heads, std::int64_t rotary_dim,
                                      std::int64_t max_pos, cudaStream_t stream = nullptr,
                                      std::int64_t query_stride = -1, std::int64_t key_stride = -1);

/// The same with the element type given at run time (for bindings). An unknown dtype is refused
/// before anything else happens.
[[nodiscard]] Status rotary_embedding(DType dtype, const std::int64_t* positions, void* query, void* key,
                                      std::int64_t head_size, const float* cos_sin_cache, bool is_neox,
                                      std::int64_t tokens, std::int64_t q_heads, std::int64_t kv_heads,
                                      std::int64_t rotary_dim, std::int64_t max_pos, cudaStream_t stream = nullptr,
                                      std::int64_t query_stride = -1, std::int64_t key_stride = -1);

/// Which variant a call with `tokens` tokens and `width` query heads would use on the current device, and
/// whether it is tuned (for this device or architecture) or the general configuration. Inputs that the
/// chosen variant cannot implement (rotary_dim, head_size, strides or pointers not aligned to its vector)
/// run the family's unaligned configuration instead.
[[nodiscard]] Status rotary_embedding_choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out);

}  // namespace ktune
