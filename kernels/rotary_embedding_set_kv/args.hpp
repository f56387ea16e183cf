// kernels/rotary_embedding_set_kv/args.hpp: one call's arguments and the checks every kernel of the op
// shares. Host-only (g++ and nvcc); makes no CUDA call, so it runs before anything touches a device.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include <ktune/dtype.hpp>
#include <ktune/overlap.hpp>
#include <ktune/status.hpp>

#include "kernels/rotary_embedding/args.hpp"

namespace ktune::ops::rotary_embedding_set_kv {

using rotary_embedding::max_tokens;
using rotary_embedding::row_elements;

/// Arguments of one in-place rotary embedding with the KV cache written in the same kernel, in sgl_kernel's
/// order: apply_rope_with_cos_sin_cache_inplace(positions, query, key, head_size, cos_sin_cache, is_neox,
/// fused_set_kv_buffer_arg = (value, k_buffer, v_buffer, k_scale, v_scale, cache_loc)), then the sizes and
/// strides a raw-pointer call needs. Tensors:
///   positions     [tokens]                          int64, contiguous; every value in [0, max_pos)
///   query         [tokens, q_heads, head_size]      E, heads contiguous, token stride query_stride (elements)
///   key           [tokens, kv_heads, head_size]     E, heads contiguous, token stride key_stride
///   cos_sin_cache [max_pos, rotary_dim]             fp32, contiguous: cos in columns [0, R/2), sin in [R/2, R)
///   value         [tokens, kv_heads, head_size]     E, heads contiguous, token stride value_stride (read only)
///   k_buffer      [cache_rows, kv_heads, head_size] E, heads contiguous, slot stride k_buffer_stride
///   v_buffer      [cache_rows, kv_heads, head_size] E, heads contiguous, slot stride v_buffer_stride
///   cache_loc     [tokens]                          int64, contiguous; distinct values in [0, cache_rows)
/// q and k are rotated exactly as ktune::rotary_embedding does (R = rotary_dim; columns >= R unchanged). Then
/// for every token t and kv head h, with s = cache_loc[t]:
///   k_buffer[s, h, :] = key[t, h, :] as written back (rounded to E), divided by k_scale and rounded again;
///   v_buffer[s, h, :] = value[t, h, :] divided by v_scale, rounded to E.
/// A scale of 1 (the default) is no scale: x / 1 is x exactly, so SGLang's k_scale = None and 1.0 agree.
///
/// positions and cache_loc are the caller's promise (validate() cannot read device memory): a token whose
/// position lies outside [0, max_pos) keeps its q and k (and stores that k); a token whose cache_loc lies
/// outside [0, cache_rows) stores nothing (and is still rotated). Nothing outside the buffers is written.
template <class E>
struct Args {
  const std::int64_t* positions = nullptr;
  E* query = nullptr;
  E* key = nullptr;
  std::int64_t head_size = 0;
  const float* cos_sin_cache = nullptr;
  bool is_neox = true;
  const E* value = nullptr;
  E* k_buffer = nullptr;
  E* v_buffer = nullptr;
  float k_scale = 1.f;
  float v_scale = 1.f;
  const std::int64_t* cache_loc = nullptr;
  std::int64_t tokens = 0;
  std::int64_t q_heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t rotary_dim = 0;
  std::int64_t max_pos = 0;          ///< rows of cos_sin_cache
  std::int64_t cache_rows = 0;       ///< slots of k_buffer and v_buffer
  std::int64_t query_stride = 0;     ///< elements between consecutive tokens of query
  std::int64_t key_stride = 0;       ///< ... of key
  std::int64_t value_stride = 0;     ///< ... of value
  std::int64_t k_buffer_stride = 0;  ///< elements between consecutive slots of k_buffer
  std::int64_t v_buffer_stride = 0;  ///< ... of v_buffer
};

/// A call with no tokens is a successful no-op (the other sizes are at least 1 in every valid call).
template <class E> constexpr bool is_empty(const Args<E>& a) { return a.tokens == 0; }

/// The shape key of tuned tables: token count and the spec's width_dim, q_heads.
template <class E> std::int64_t tokens(const Args<E>& a) { return a.tokens; }
template <class E> std::int64_t width(const Args<E>& a) { return a.q_heads; }

namespace detail {
using rotary_embedding::detail::aligned_to;
using rotary_embedding::detail::offsets_fit;

/// The elements of `rows` rows of `row` elements, `stride` apart, at `p`: ktune/overlap.hpp's form.
template <class E>
ByteRows rows_of(const E* p, std::int64_t rows, std::int64_t stride, std::int64_t row) {
  return ByteRows{static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p)), row * static_cast<std::int64_t>(sizeof(E)),
                  stride * static_cast<std::int64_t>(sizeof(E)), rows};
}

/// A scale validate() accepts: finite and > 0 (written !(rule) so that NaN fails).
inline bool scale_ok(float s) { return std::isfinite(s) && s > 0.f; }
}  // namespace detail

/// Checks that hold for every kernel of the op: sizes, pointers, strides, element alignment, scales, that
/// no tensor a call writes shares an element with another tensor it reads or writes (by element: slices of
/// one qkv buffer are fine), and that every index fits the kernels' arithmetic. tokens == 0 is valid
/// whatever the pointers (an empty tensor may have a null data pointer).
template <class E>
Status validate(const Args<E>& a) {
  static_assert(ktune::is_element_v<E>, "rotary_embedding_set_kv supports float, __half and __nv_bfloat16 elements.");
  if (a.tokens < 0) return Status::invalid("rotary_embedding_set_kv: tokens is negative");
  if (a.q_heads < 1 || a.kv_heads < 1)
    return Status::invalid("rotary_embedding_set_kv: q_heads and kv_heads must be >= 1");
  if (a.rotary_dim < 2 || a.rotary_dim % 2 != 0)
    return Status::invalid("rotary_embedding_set_kv: rotary_dim must be even and >= 2 (pairs of elements rotate)");
  if (a.head_size < a.rotary_dim) return Status::invalid("rotary_embedding_set_kv: rotary_dim exceeds head_size");
  if (a.max_pos < 1) return Status::invalid("rotary_embedding_set_kv: max_pos (rows of cos_sin_cache) must be >= 1");
  if (a.cache_rows < 1) return Status::invalid("rotary_embedding_set_kv: cache_rows (slots of k_buffer, v_buffer) must be >= 1");
  if (!detail::scale_ok(a.k_scale)) return Status::invalid("rotary_embedding_set_kv: k_scale must be finite and > 0 (1: none)");
  if (!detail::scale_ok(a.v_scale)) return Status::invalid("rotary_embedding_set_kv: v_scale must be finite and > 0 (1: none)");
  if (a.query_stride < 0 || a.key_stride < 0 || a.value_stride < 0 || a.k_buffer_stride < 0 || a.v_buffer_stride < 0)
    return Status::invalid("rotary_embedding_set_kv: a stride is negative (only -1, contiguous, is accepted)");
  const std::int64_t q_row = row_elements(a.q_heads, a.head_size);
  const std::int64_t k_row = row_elements(a.kv_heads, a.head_size);
  if (q_row == 0 || k_row == 0)
    return Status::too_large("rotary_embedding_set_kv: heads * head_size overflows 64-bit arithmetic");
  // In-row offsets are 32-bit in every kernel; so are the family's (q_heads + 2 kv_heads) * head_size lanes.
  if (q_row > std::numeric_limits<std::int32_t>::max() || k_row > std::numeric_limits<std::int32_t>::max() ||
      a.q_heads + 2 * a.kv_heads > std::numeric_limits<std::int32_t>::max() / a.head_size)
    return Status::too_large("rotary_embedding_set_kv: heads * head_size exceeds 2^31 - 1 elements per token");
  if (a.tokens > max_tokens) return Status::too_large("rotary_embedding_set_kv: tokens above 2^31 - 1");
  if (a.max_pos > std::numeric_limits<std::int64_t>::max() / 8 / a.rotary_dim)
    return Status::too_large("rotary_embedding_set_kv: max_pos * rotary_dim overflows 64-bit byte offsets");
  if (is_empty(a)) return Status::success();
  if (!a.positions || !a.query || !a.key || !a.cos_sin_cache || !a.value || !a.k_buffer || !a.v_buffer || !a.cache_loc)
    return Status::invalid(
        "rotary_embedding_set_kv: positions, query, key, cos_sin_cache, value, k_buffer, v_buffer and cache_loc must not be null");
  // Every ktune op spells "contiguous" -1 (make_args turns it into heads * head_size).
  if (a.query_stride == 0 || a.key_stride == 0 || a.value_stride == 0 || a.k_buffer_stride == 0 || a.v_buffer_stride == 0)
    return Status::invalid("rotary_embedding_set_kv: a stride is 0; pass -1 for contiguous rows (heads * head_size)");
  if (a.tokens > 1 && (a.query_stride < q_row || a.key_stride < k_row || a.value_stride < k_row))
    return Status::invalid("rotary_embedding_set_kv: a token stride is shorter than heads * head_size");
  if (a.cache_rows > 1 && (a.k_buffer_stride < k_row || a.v_buffer_stride < k_row))
    return Status::invalid("rotary_embedding_set_kv: a slot stride of k_buffer or v_buffer is shorter than kv_heads * head_size");
  for (const void* p : {static_cast<const void*>(a.query), static_cast<const void*>(a.key), static_cast<const void*>(a.value),
                        static_cast<const void*>(a.k_buffer), static_cast<const void*>(a.v_buffer)})
    if (!detail::aligned_to(p, sizeof(E)))
      return Status::invalid("rotary_embedding_set_kv: query, key, value, k_buffer or v_buffer is not aligned to its element size");
  if (!detail::aligned_to(a.positions, 8) || !detail::aligned_to(a.cache_loc, 8))
    return Status::invalid("rotary_embedding_set_kv: positions or cache_loc is not aligned to 8 bytes");
  if (!detail::aligned_to(a.cos_sin_cache, 4))
    return Status::invalid("rotary_embedding_set_kv: cos_sin_cache is not aligned to 4 bytes");
  if (!detail::offsets_fit(a.tokens, a.query_stride, q_row) || !detail::offsets_fit(a.tokens, a.key_stride, k_row) ||
      !detail::offsets_fit(a.tokens, a.value_stride, k_row) || !detail::offsets_fit(a.cache_rows, a.k_buffer_stride, k_row) ||
      !detail::offsets_fit(a.cache_rows, a.v_buffer_stride, k_row))
    return Status::too_large("rotary_embedding_set_kv: rows * stride overflows 64-bit byte offsets");
  // Written tensors share no element with each other nor with value; the buffers are checked whole (which
  // slots a call writes is device data).
  const ByteRows q = detail::rows_of(a.query, a.tokens, a.query_stride, q_row);
  const ByteRows k = detail::rows_of(a.key, a.tokens, a.key_stride, k_row);
  const ByteRows v = detail::rows_of(a.value, a.tokens, a.value_stride, k_row);
  const ByteRows kb = detail::rows_of(a.k_buffer, a.cache_rows, a.k_buffer_stride, k_row);
  const ByteRows vb = detail::rows_of(a.v_buffer, a.cache_rows, a.v_buffer_stride, k_row);
  if (share_a_byte(q, k)) return Status::invalid("rotary_embedding_set_kv: query and key overlap");
  if (share_a_byte(kb, vb)) return Status::invalid("rotary_embedding_set_kv: k_buffer and v_buffer overlap");
  for (const ByteRows& buffer : {kb, vb})
    for (const ByteRows& other : {q, k, v})
      if (share_a_byte(buffer, other))
        return Status::invalid("rotary_embedding_set_kv: k_buffer or v_buffer overlaps query, key or value");
  if (share_a_byte(v, q) || share_a_byte(v, k))
    return Status::invalid("rotary_embedding_set_kv: value overlaps query or key (which the call writes)");
  return Status::success();
}

}  // namespace ktune::ops::rotary_embedding_set_kv
