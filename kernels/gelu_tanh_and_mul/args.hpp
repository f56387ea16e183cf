// kernels/gelu_tanh_and_mul/args.hpp: one call's arguments and the checks every kernel of the op shares.
// Host-only (g++ and nvcc); makes no CUDA call, so it runs before anything touches a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>

namespace ktune::ops::gelu_tanh_and_mul {

/// Arguments of one call (last dimension contiguous, rows strided):
///   in  [tokens, 2*d]  E, row stride in_stride (elements): x = in[t, 0:d], y = in[t, d:2d]
///   out [tokens, d]    E, row stride out_stride (elements)
/// out[t, i] = gelu_tanh(x[t, i]) * y[t, i]. `out` must not overlap `in`.
template <class E>
struct Args {
  E* out = nullptr;
  const E* in = nullptr;
  std::int64_t tokens = 0;
  std::int64_t d = 0;
  std::int64_t out_stride = 0;  ///< elements between consecutive rows of out (>= d)
  std::int64_t in_stride = 0;   ///< elements between consecutive rows of in (>= 2*d)
};

/// The shape key of tuned tables: token count and row width (the spec's width_dim, "d").
template <class E> std::int64_t tokens(const Args<E>& a) { return a.tokens; }
template <class E> std::int64_t width(const Args<E>& a) { return a.d; }

/// Largest d the kernels take: column indices inside a row (up to rpb rows of d vectors plus one
/// block step) are 32-bit, and 4 * 2^28 + 2^14 stays below 2^31. Row offsets are 64-bit.
inline constexpr std::int64_t max_d = std::int64_t{1} << 28;

/// No element to compute: tokens == 0 or d == 0 (a call on empty tensors is a successful no-op).
template <class E> constexpr bool is_empty(const Args<E>& a) { return a.tokens == 0 || a.d == 0; }

/// Args from the public API's parameters: a stride of -1 means contiguous rows (d and 2*d elements).
/// Other negative strides are kept as given, for validate() to refuse.
template <class E>
constexpr Args<E> make_args(E* out, const E* in, std::int64_t tokens, std::int64_t d, std::int64_t out_stride,
                            std::int64_t in_stride) {
  const bool d_ok = d >= 0 && d <= max_d;  // 2 * d cannot overflow
  return {out, in, tokens, d, out_stride == -1 ? d : out_stride, in_stride == -1 ? (d_ok ? 2 * d : -1) : in_stride};
}

namespace detail {
inline bool aligned_to(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

/// Whether element offsets up to (tokens - 1) * stride + row fit a signed 64-bit byte offset.
inline bool offsets_fit(std::int64_t tokens, std::int64_t stride, std::int64_t row, std::size_t element_bytes) {
  const std::int64_t max_elements = std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(element_bytes);
  if (row > max_elements) return false;
  if (tokens <= 1) return true;
  return stride <= (max_elements - row) / (tokens - 1);
}
}  // namespace detail

/// Checks that hold for every kernel of the op: sizes, pointers, strides, element alignment, and that
/// every index fits the kernels' arithmetic. An empty call (tokens == 0 or d == 0) is valid whatever the
/// pointers and strides (an empty tensor may have a null data pointer); the call is then a no-op.
template <class E>
Status validate(const Args<E>& a) {
  static_assert(ktune::is_element_v<E>, "gelu_tanh_and_mul supports float, __half and __nv_bfloat16 elements.");
  if (a.tokens < 0) return Status::invalid("gelu_tanh_and_mul: tokens is negative");
  if (a.d < 0) return Status::invalid("gelu_tanh_and_mul: d is negative");
  if (is_empty(a)) return Status::success();
  if (a.d > max_d) return Status::too_large("gelu_tanh_and_mul: d exceeds 2^28 elements (32-bit indexing inside rows)");
  if (!a.out || !a.in) return Status::invalid("gelu_tanh_and_mul: out or in is a null pointer");
  if (a.out_stride < a.d)
    return Status::invalid("gelu_tanh_and_mul: out_stride is shorter than d (pass -1 for contiguous rows)");
  if (a.in_stride < 2 * a.d)
    return Status::invalid("gelu_tanh_and_mul: in_stride is shorter than 2 * d (pass -1 for contiguous rows)");
  if (!detail::aligned_to(a.out, sizeof(E)) || !detail::aligned_to(a.in, sizeof(E)))
    return Status::invalid("gelu_tanh_and_mul: out or in is not aligned to the element size");
  if (!detail::offsets_fit(a.tokens, a.out_stride, a.d, sizeof(E)) ||
      !detail::offsets_fit(a.tokens, a.in_stride, 2 * a.d, sizeof(E)))
    return Status::too_large("gelu_tanh_and_mul: tokens * row stride overflows 64-bit byte offsets");
  return Status::success();
}

}  // namespace ktune::ops::gelu_tanh_and_mul
