// kernels/rotary_embedding_set_kv/rotary_embedding_set_kv.hpp: host-only declarations of the public API, for
// .cpp files compiled by a host compiler (a PyTorch binding, say). Link ktune::kernels, which compiles the
// definitions (rotary_embedding_set_kv.cu) for fp32, fp16 and bf16. CUDA code includes
// rotary_embedding_set_kv.cuh instead and needs nothing but the CUDA toolkit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

namespace ktune {

/// Rotary position embedding applied in place to query and key, with the KV cache written in the same kernel,
/// as sgl_kernel's apply_rope_with_cos_sin_cache_inplace(positions, query, key, head_size, cos_sin_cache,
/// is_neox, fused_set_kv_buffer_arg): q and k rotated exactly as ktune::rotary_embedding rotates them, then for
/// every token t and kv head h, with s = cache_loc[t],
///   k_buffer[s, h, :] = key[t, h, :] as written back (rounded to E) / k_scale, rounded to E;
///   v_buffer[s, h, :] = value[t, h, :] / v_scale, rounded to E.
/// A scale of 1 (the default) is no scale (SGLang's None): x / 1 is x exactly. Other scales divide in fp32 with
/// IEEE rounding, as SGLang's set_kv_buffer does (cache_k.div_(k_scale) on the rotated key).
///
///   positions     [tokens]                           int64, contiguous; each value in [0, max_pos)
///   query         [tokens, q_heads, head_size]       E, heads contiguous, token stride query_stride (-1: contiguous)
///   key           [tokens, kv_heads, head_size]      E, heads contiguous, token stride key_stride
///   cos_sin_cache [max_pos, rotary_dim]              fp32, contiguous: cos in the first half of a row, sin in the second
///   value         [tokens, kv_heads, head_size]      E, heads contiguous, token stride value_stride; read only
///   k_buffer      [cache_rows, kv_heads, head_size]  E, heads contiguous, slot stride k_buffer_stride (-1: contiguous)
///   v_buffer      [cache_rows, kv_heads, head_size]  E, heads contiguous, slot stride v_buffer_stride
///   cache_loc     [tokens]                           int64, contiguous; distinct values in [0, cache_rows)
///
/// Raw device pointers on the current device. query, key and value may be slices of one qkv buffer (pass its
/// row length as the strides); no tensor the call writes (query, key, k_buffer, v_buffer) may share an element
/// with another of them or with value. positions and cache_loc are the caller's promise (validate() reads no
/// device memory): a token whose position lies outside [0, max_pos) keeps its q and k (and stores that k); a
/// token whose slot lies outside [0, cache_rows) stores nothing; nothing outside the tensors is read or
/// written. Any valid input works: tokens == 0 is a no-op, any even rotary_dim <= head_size, any head_size,
/// pointers aligned only to their element (positions and cache_loc to 8 bytes). Strides, as in every ktune
/// op: -1 (the default) means contiguous rows; any other value is the stride itself; 0 and other negative
/// values are errors. Errors (nothing launched, nothing written): null pointers, negative sizes, q_heads,
/// kv_heads, max_pos or cache_rows < 1, odd rotary_dim or one above head_size, scales not finite or <= 0, short
/// strides, misaligned pointers, overlapping outputs, offsets overflowing the kernels' indexing.
/// Graph-capturable (no synchronisation, no allocation, device facts cached per device). Deterministic.
/// \tparam E float, __half or __nv_bfloat16
template <class E>
[[nodiscard]] Status rotary_embedding_set_kv(const std::int64_t* positions, E* query, E* key, std::int64_t head_size,
                                             const float* cos_sin_cache, bool is_neox, const E* value, E* k_buffer,
                                             E* v_buffer, float k_scale, float v_scale, const std::int64_t* cache_loc,
                                             std::int64_t tokens, std::int64_t q_heads, std::int64_t kv_heads,
                                             std::int64_t rotary_dim, std::int64_t max_pos, std::int64_t cache_rows,
                                             cudaStream_t stream = nullptr, std::int64_t query_stride = -1,
                                             std::int64_t key_stride = -1, std::int64_t value_stride = -1,
                                             std::int64_t k_buffer_stride = -1, std::int64_t v_buffer_stride = -1);

/// The same with the element type given at run time (for bindings). An unknown dtype is refused before
/// anything else happens.
[[nodiscard]] Status rotary_embedding_set_kv(DType dtype, const std::int64_t* positions, void* query, void* key,
                                             std::int64_t head_size, const float* cos_sin_cache, bool is_neox,
                                             const void* value, void* k_buffer, void* v_buffer, float k_scale,
                                             float v_scale, const std::int64_t* cache_loc, std::int64_t tokens,
                                             std::int64_t q_heads, std::int64_t kv_heads, std::int64_t rotary_dim,
                                             std::int64_t max_pos, std::int64_t cache_rows, cudaStream_t stream = nullptr,
                                             std::int64_t query_stride = -1, std::int64_t key_stride = -1,
                                             std::int64_t value_stride = -1, std::int64_t k_buffer_stride = -1,
                                             std::int64_t v_buffer_stride = -1);

/// Which variant a call with `tokens` tokens and `width` query heads would use on the current device, and
/// whether it is tuned (for this device or architecture) or the general configuration. Inputs that the chosen
/// variant cannot implement (sizes, strides or pointers not aligned to its vector) run the family's unaligned
/// configuration instead.
[[nodiscard]] Status rotary_embedding_set_kv_choice(DType dtype, std::int64_t tokens, std::int64_t width,
                                                    TunedChoice& out);

}  // namespace ktune
