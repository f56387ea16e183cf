// kernels/merge_attn_states_lse/args.hpp: one call's arguments and the checks every kernel of the op
// shares. Host-only (g++ and nvcc); makes no CUDA call, so it runs before anything touches a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>

namespace ktune::ops::merge_attn_states_lse {

/// Arguments of one merge. Tensors (heads and head_size contiguous, tokens strided):
///   out        [tokens, heads, head_size]  E,     token stride out_stride (elements)
///   out_lse    [tokens, heads]             fp32,  contiguous; nullptr: not wanted
///   prefix_out [tokens, heads, head_size]  E,     token stride prefix_stride
///   prefix_lse [tokens, heads]             fp32,  contiguous, natural log
///   suffix_out [tokens, heads, head_size]  E,     token stride suffix_stride
///   suffix_lse [tokens, heads]             fp32,  contiguous, natural log
/// `out` must not overlap the inputs.
template <class E>
struct Args {
  E* out = nullptr;
  float* out_lse = nullptr;
  const E* prefix_out = nullptr;
  const float* prefix_lse = nullptr;
  const E* suffix_out = nullptr;
  const float* suffix_lse = nullptr;
  std::int64_t tokens = 0;
  std::int64_t heads = 0;
  std::int64_t head_size = 0;
  std::int64_t out_stride = 0;     ///< elements between consecutive tokens of out
  std::int64_t prefix_stride = 0;  ///< ... of prefix_out
  std::int64_t suffix_stride = 0;  ///< ... of suffix_out
};

/// A call with no tokens is a successful no-op (heads and head_size are at least 1 in every valid call).
template <class E> constexpr bool is_empty(const Args<E>& a) { return a.tokens == 0; }

/// The shape key of tuned tables: token count and row width (the spec's width_dim, "heads").
template <class E> std::int64_t tokens(const Args<E>& a) { return a.tokens; }
template <class E> std::int64_t width(const Args<E>& a) { return a.heads; }

/// Elements in one token's row, heads * head_size; 0 when the sizes are invalid or the product
/// overflows (validate() then refuses the call).
inline std::int64_t row_elements(std::int64_t heads, std::int64_t head_size) {
  if (heads < 1 || head_size < 1) return 0;
  if (heads > std::numeric_limits<std::int64_t>::max() / head_size) return 0;
  return heads * head_size;
}

namespace detail {
inline bool aligned_to(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

/// Whether element offsets up to (tokens - 1) * stride + row fit a signed 64-bit value with room
/// for the byte offset (times the element size, at most 8).
inline bool offsets_fit(std::int64_t tokens, std::int64_t stride, std::int64_t row) {
  constexpr std::int64_t max_elements = std::numeric_limits<std::int64_t>::max() / 8;
  if (row > max_elements) return false;
  if (tokens <= 1) return true;
  return stride <= (max_elements - row) / (tokens - 1);
}
}  // namespace detail

/// Checks that hold for every kernel of the op: sizes, pointers, strides, element alignment, and that
/// every index fits the kernels' arithmetic (64-bit token offsets, 32-bit offsets inside a row).
/// tokens == 0 is valid whatever the pointers (an empty tensor may have a null data pointer); the
/// call is then a no-op.
template <class E>
Status validate(const Args<E>& a) {
  static_assert(ktune::is_element_v<E>, "merge_attn_states_lse supports float, __half and __nv_bfloat16 elements.");
  if (a.tokens < 0) return Status::invalid("merge_attn_states_lse: tokens is negative");
  if (a.heads < 1 || a.head_size < 1) return Status::invalid("merge_attn_states_lse: heads and head_size must be >= 1");
  if (a.out_stride < 0 || a.prefix_stride < 0 || a.suffix_stride < 0)
    return Status::invalid("merge_attn_states_lse: a token stride is negative (only -1, contiguous, is accepted)");
  const std::int64_t row = row_elements(a.heads, a.head_size);
  if (row == 0) return Status::too_large("merge_attn_states_lse: heads * head_size overflows 64-bit arithmetic");
  if (is_empty(a)) return Status::success();
  if (!a.out || !a.prefix_out || !a.prefix_lse || !a.suffix_out || !a.suffix_lse)
    return Status::invalid("merge_attn_states_lse: a required pointer is null (only out_lse may be null)");
  // Every ktune op spells "contiguous" -1 (make_args turns it into heads * head_size); a 0 here is the
  // old spelling or a mistake, refused even for one token where the stride would go unused.
  if (a.out_stride == 0 || a.prefix_stride == 0 || a.suffix_stride == 0)
    return Status::invalid(
        "merge_attn_states_lse: a token stride is 0; pass -1 for contiguous tokens (heads * head_size)");
  if (a.tokens > 1 && (a.out_stride < row || a.prefix_stride < row || a.suffix_stride < row))
    return Status::invalid("merge_attn_states_lse: a token stride is shorter than heads * head_size");
  if (!detail::aligned_to(a.out, sizeof(E)) || !detail::aligned_to(a.prefix_out, sizeof(E)) ||
      !detail::aligned_to(a.suffix_out, sizeof(E)))
    return Status::invalid("merge_attn_states_lse: a value tensor is not aligned to its element size");
  if ((a.out_lse && !detail::aligned_to(a.out_lse, 4)) || !detail::aligned_to(a.prefix_lse, 4) ||
      !detail::aligned_to(a.suffix_lse, 4))
    return Status::invalid("merge_attn_states_lse: an LSE tensor is not aligned to 4 bytes");
  // Offsets inside a row are 32-bit in every kernel; token offsets are 64-bit.
  if (row > std::numeric_limits<std::int32_t>::max())
    return Status::too_large("merge_attn_states_lse: heads * head_size exceeds 2^31 - 1 elements per token");
  if (a.tokens > std::numeric_limits<std::int64_t>::max() / 8 / a.heads)
    return Status::too_large("merge_attn_states_lse: tokens * heads overflows 64-bit offsets");
  if (!detail::offsets_fit(a.tokens, a.out_stride, row) || !detail::offsets_fit(a.tokens, a.prefix_stride, row) ||
      !detail::offsets_fit(a.tokens, a.suffix_stride, row))
    return Status::too_large("merge_attn_states_lse: tokens * token stride overflows 64-bit byte offsets");
  return Status::success();
}

}  // namespace ktune::ops::merge_attn_states_lse
