// Derived by ktune 0.1.0 (`ktune derive`, `ktune agent`) for op add_bias from S (add_bias.cu,
// 0xbac3b0043287fa13) and spec.json (0xef37ef904008cb27).
// Do not edit: change S or spec.json and run `ktune derive` (or `ktune agent`) again.
//
// kernels/add_bias/args.hpp: one call's arguments and the checks every kernel of the op shares, from
// spec.json. Host-only (g++ and nvcc); makes no CUDA call, so it runs before anything touches a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>

namespace ktune::ops::add_bias {

/// Arguments of one call. Every tensor is contiguous (row-major, no strides), as S takes it:
///   x     [tokens, d]  E, read
///   bias  [d]          E, read
///   out   [tokens, d]  E, written
/// \tparam E float, __half or __nv_bfloat16: the op's dtype (fp32 tensors are float whatever E is)
template <class E>
struct Args {
  const E* x = nullptr;     ///< [tokens, d], read
  const E* bias = nullptr;  ///< [d], read
  E* out = nullptr;         ///< [tokens, d], written
  std::int64_t tokens = 0;
  std::int64_t d = 0;
};

/// Tensors of the op, in spec order: the order of Args, of S's launcher and of Harness::tensors().
inline constexpr int tensor_count = 3;

/// The shape key of tuned tables: the spec's tokens_dim (tokens) and width_dim (d).
template <class E> constexpr std::int64_t tokens(const Args<E>& a) { return a.tokens; }
template <class E> constexpr std::int64_t width(const Args<E>& a) { return a.d; }

/// No element to compute: some tensor has no elements (tokens or d is 0). Such a call is a
/// successful no-op that launches nothing, whatever its pointers.
template <class E> constexpr bool is_empty(const Args<E>& a) { return a.tokens == 0 || a.d == 0; }

namespace detail {
inline bool aligned_to(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

/// The product of the `count` non-negative `factors` into `n`; false (n = 0) when it overflows 64 bits.
constexpr bool product(const std::int64_t* factors, int count, std::int64_t& n) {
  n = 0;
  for (int i = 0; i < count; ++i)
    if (factors[i] == 0) return true;  // an empty tensor, however large the other factors
  n = 1;
  for (int i = 0; i < count; ++i) {
    if (n > std::numeric_limits<std::int64_t>::max() / factors[i]) {
      n = 0;
      return false;
    }
    n *= factors[i];
  }
  return true;
}
}  // namespace detail

/// Elements of tensor `k` (0 x, 1 bias, 2 out) for the dims of `a` (non-negative): spec.json's
/// shapes in 64-bit integers. False when the count overflows 64 bits.
template <class E>
constexpr bool elements(const Args<E>& a, int k, std::int64_t& n) {
  switch (k) {
    case 0: {  // x [tokens, d]
      const std::int64_t f[] = {a.tokens, a.d};
      return detail::product(f, 2, n);
    }
    case 1: {  // bias [d]
      const std::int64_t f[] = {a.d};
      return detail::product(f, 1, n);
    }
    case 2: {  // out [tokens, d]
      const std::int64_t f[] = {a.tokens, a.d};
      return detail::product(f, 2, n);
    }
    default: break;
  }
  n = 0;
  return false;
}

/// Args from the public API's parameters: the tensors, then the dimensions, as S's launcher takes them.
template <class E>
constexpr Args<E> make_args(const E* x, const E* bias, E* out, std::int64_t tokens, std::int64_t d) {
  return {x, bias, out, tokens, d};
}

/// Checks that hold for every kernel of the op: sizes, pointers, element alignment, and that every
/// tensor's bytes fit a signed 64-bit offset. An empty call (is_empty) is valid whatever its pointers
/// (an empty tensor may have a null data pointer).
template <class E>
Status validate(const Args<E>& a) {
  static_assert(ktune::is_element_v<E>, "add_bias supports float, __half and __nv_bfloat16 elements.");
  if (a.tokens < 0) return Status::invalid("add_bias: tokens is negative");
  if (a.d < 0) return Status::invalid("add_bias: d is negative");
  if (is_empty(a)) return Status::success();
  if (a.x == nullptr) return Status::invalid("add_bias: x is a null pointer");
  if (a.bias == nullptr) return Status::invalid("add_bias: bias is a null pointer");
  if (a.out == nullptr) return Status::invalid("add_bias: out is a null pointer");
  if (!detail::aligned_to(a.x, sizeof(E))) return Status::invalid("add_bias: x is not aligned to its element size");
  if (!detail::aligned_to(a.bias, sizeof(E)))
    return Status::invalid("add_bias: bias is not aligned to its element size");
  if (!detail::aligned_to(a.out, sizeof(E))) return Status::invalid("add_bias: out is not aligned to its element size");
  std::int64_t n = 0;
  if (!elements(a, 0, n) || n > std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(sizeof(E)))
    return Status::too_large("add_bias: x [tokens, d] has more bytes than a 64-bit offset addresses");
  if (!elements(a, 1, n) || n > std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(sizeof(E)))
    return Status::too_large("add_bias: bias [d] has more bytes than a 64-bit offset addresses");
  if (!elements(a, 2, n) || n > std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(sizeof(E)))
    return Status::too_large("add_bias: out [tokens, d] has more bytes than a 64-bit offset addresses");
  return Status::success();
}

}  // namespace ktune::ops::add_bias
