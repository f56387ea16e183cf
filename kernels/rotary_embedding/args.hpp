// kernels/rotary_embedding/args.hpp: one call's arguments and the checks every kernel of the op
// shares. Host-only (g++ and nvcc); makes no CUDA call, so it runs before anything touches a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>

namespace ktune::ops::rotary_embedding {

/// Rows of q and k above this are refused: the kernels index tokens in 64 bits but count them in
/// 32-bit signed ranges (S's token index is 32-bit unsigned, grid.x counts blocks of several tokens).
inline constexpr std::int64_t max_tokens = (std::int64_t{1} << 31) - 1;

/// Arguments of one in-place rotary embedding, in sgl_kernel's order (positions, query, key, head_size,
/// cos_sin_cache, is_neox), then the sizes and strides a raw-pointer call needs. Tensors:
///   positions     [tokens]                      int64, contiguous; every value in [0, max_pos)
///   query         [tokens, q_heads, head_size]  E, heads contiguous, token stride query_stride (elements)
///   key           [tokens, kv_heads, head_size] E, heads contiguous, token stride key_stride
///   cos_sin_cache [max_pos, rotary_dim]         fp32, contiguous: cos in columns [0, R/2), sin in [R/2, R)
/// R = rotary_dim. For every token t with p = positions[t], and every head of q and of k, the pairs
/// (x, y) of elements (j, j + R/2) when is_neox, else (2j, 2j + 1), j < R/2, become
///   x' = x cos - y sin,  y' = y cos + x sin,  cos = cache[p, j], sin = cache[p, R/2 + j];
/// elements at R and beyond stay as they are. query and key must not overlap each other.
///
/// positions are the caller's promise (as SGLang's kernels take them): validate() cannot read device
/// memory. S reads the cache out of bounds for a position outside [0, max_pos); the family leaves such a
/// token's q and k untouched instead, and reads nothing past the cache.
template <class E>
struct Args {
  const std::int64_t* positions = nullptr;
  E* query = nullptr;
  E* key = nullptr;
  std::int64_t head_size = 0;
  const float* cos_sin_cache = nullptr;
  bool is_neox = true;
  std::int64_t tokens = 0;
  std::int64_t q_heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t rotary_dim = 0;
  std::int64_t max_pos = 0;        ///< rows of cos_sin_cache
  std::int64_t query_stride = 0;   ///< elements between consecutive tokens of query
  std::int64_t key_stride = 0;     ///< ... of key
};

/// A call with no tokens is a successful no-op (the other sizes are at least 1 in every valid call).
template <class E> constexpr bool is_empty(const Args<E>& a) { return a.tokens == 0; }

/// The shape key of tuned tables: token count and the spec's width_dim, q_heads.
template <class E> std::int64_t tokens(const Args<E>& a) { return a.tokens; }
template <class E> std::int64_t width(const Args<E>& a) { return a.q_heads; }

/// Elements in one token's row, heads * head_size; 0 when the sizes are invalid or the product
/// overflows (validate() then refuses the call).
inline std::int64_t row_elements(std::int64_t heads, std::int64_t head_size) {
  if (heads < 1 || head_size < 1) return 0;
  if (heads > std::numeric_limits<std::int64_t>::max() / head_size) return 0;
  return heads * head_size;
}

namespace detail {
inline bool aligned_to(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

/// Whether element offsets up to (tokens - 1) * stride + row fit a signed 64-bit byte offset.
inline bool offsets_fit(std::int64_t tokens, std::int64_t stride, std::int64_t row) {
  constexpr std::int64_t max_elements = std::numeric_limits<std::int64_t>::max() / 8;
  if (row > max_elements) return false;
  if (tokens <= 1) return true;
  return stride <= (max_elements - row) / (tokens - 1);
}
}  // namespace detail

/// Checks that hold for every kernel of the op: sizes, pointers, strides, element alignment, and that
/// every index fits the kernels' arithmetic (64-bit token offsets, 32-bit offsets inside a token's row).
/// tokens == 0 is valid whatever the pointers (an empty tensor may have a null data pointer).
template <class E>
Status validate(const Args<E>& a) {
  static_assert(ktune::is_element_v<E>, "rotary_embedding supports float, __half and __nv_bfloat16 elements.");
  if (a.tokens < 0) return Status::invalid("rotary_embedding: tokens is negative");
  if (a.q_heads < 1 || a.kv_heads < 1) return Status::invalid("rotary_embedding: q_heads and kv_heads must be >= 1");
  if (a.rotary_dim < 2 || a.rotary_dim % 2 != 0)
    return Status::invalid("rotary_embedding: rotary_dim must be even and >= 2 (pairs of elements rotate)");
  if (a.head_size < a.rotary_dim)
    return Status::invalid("rotary_embedding: rotary_dim exceeds head_size");
  if (a.max_pos < 1) return Status::invalid("rotary_embedding: max_pos (rows of cos_sin_cache) must be >= 1");
  if (a.query_stride < 0 || a.key_stride < 0)
    return Status::invalid("rotary_embedding: a token stride is negative (only -1, contiguous, is accepted)");
  const std::int64_t q_row = row_elements(a.q_heads, a.head_size);
  const std::int64_t k_row = row_elements(a.kv_heads, a.head_size);
  if (q_row == 0 || k_row == 0) return Status::too_large("rotary_embedding: heads * head_size overflows 64-bit arithmetic");
  // In-row offsets (head * head_size + column) are 32-bit in every kernel; so is q_heads + kv_heads.
  if (q_row > std::numeric_limits<std::int32_t>::max() || k_row > std::numeric_limits<std::int32_t>::max() ||
      a.q_heads + a.kv_heads > std::numeric_limits<std::int32_t>::max())
    return Status::too_large("rotary_embedding: heads * head_size exceeds 2^31 - 1 elements per token");
  if (a.tokens > max_tokens) return Status::too_large("rotary_embedding: tokens above 2^31 - 1");
  if (a.max_pos > std::numeric_limits<std::int64_t>::max() / 8 / a.rotary_dim)
    return Status::too_large("rotary_embedding: max_pos * rotary_dim overflows 64-bit byte offsets");
  if (is_empty(a)) return Status::success();
  if (!a.positions || !a.query || !a.key || !a.cos_sin_cache)
    return Status::invalid("rotary_embedding: positions, query, key and cos_sin_cache must not be null");
  // Every ktune op spells "contiguous" -1 (make_args turns it into heads * head_size).
  if (a.query_stride == 0 || a.key_stride == 0)
    return Status::invalid("rotary_embedding: a token stride is 0; pass -1 for contiguous tokens (heads * head_size)");
  if (a.tokens > 1 && (a.query_stride < q_row || a.key_stride < k_row))
    return Status::invalid("rotary_embedding: a token stride is shorter than heads * head_size");
  if (!detail::aligned_to(a.query, sizeof(E)) || !detail::aligned_to(a.key, sizeof(E)))
    return Status::invalid("rotary_embedding: query or key is not aligned to its element size");
  if (!detail::aligned_to(a.positions, 8)) return Status::invalid("rotary_embedding: positions is not aligned to 8 bytes");
  if (!detail::aligned_to(a.cos_sin_cache, 4))
    return Status::invalid("rotary_embedding: cos_sin_cache is not aligned to 4 bytes");
  if (a.query == a.key) return Status::invalid("rotary_embedding: query and key are the same buffer");
  if (!detail::offsets_fit(a.tokens, a.query_stride, q_row) || !detail::offsets_fit(a.tokens, a.key_stride, k_row))
    return Status::too_large("rotary_embedding: tokens * token stride overflows 64-bit byte offsets");
  return Status::success();
}

}  // namespace ktune::ops::rotary_embedding
