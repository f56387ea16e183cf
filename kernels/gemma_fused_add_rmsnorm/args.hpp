// kernels/gemma_fused_add_rmsnorm/args.hpp: one call's arguments and the checks every kernel of the op
// shares. Host only, no CUDA launches: g++ and nvcc both compile it.
#pragma once

#include <cmath>
#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>

#include "../common/norm_rows/checks.hpp"

namespace ktune::ops::gemma_fused_add_rmsnorm {

/// Rows longer than this are refused: in-row indices are 32-bit in every kernel (with headroom for a
/// block's stride past the end), and a 2^30-element row (2-4 GB) is no hidden size.
inline constexpr std::int64_t max_h = std::int64_t{1} << 30;
/// Rows are a grid dimension (x), whose limit is 2^31 - 1 blocks.
inline constexpr std::int64_t max_tokens = (std::int64_t{1} << 31) - 1;

/// One call, in place: per row t, x = input[t] + residual[t] in fp32; residual[t] <- x;
/// input[t] <- x * rsqrt(mean(x^2) + eps) * (1 + weight), both rounded to E.
///
/// Tensors: input [tokens, h] (row stride input_stride), residual [tokens, h] (row stride
/// residual_stride), weight [h]; strides in elements, the last dimension contiguous; input and residual
/// share no element.
template <class E>
struct Args {
  E* input = nullptr;
  E* residual = nullptr;
  const E* weight = nullptr;
  std::int64_t tokens = 0;
  std::int64_t h = 0;
  std::int64_t input_stride = 0;
  std::int64_t residual_stride = 0;
  float eps = 1e-6f;
};

/// A call with no tokens is a successful no-op (h is at least 1 in every valid call).
template <class E> constexpr bool is_empty(const Args<E>& a) { return a.tokens == 0; }

/// The public API's arguments, with stride -1 meaning contiguous rows (stride h), as in every ktune op.
/// Other values are kept as given, for validate() to refuse (0 and other negatives are shorter than h).
template <class E>
Args<E> make_args(E* input, E* residual, const E* weight, std::int64_t tokens, std::int64_t h, float eps,
                  std::int64_t input_stride, std::int64_t residual_stride) {
  return Args<E>{input,  residual, weight, tokens, h, input_stride == -1 ? h : input_stride,
                 residual_stride == -1 ? h : residual_stride, eps};
}

/// Checks that hold for every kernel of the op, in an order that needs no CUDA call: sizes first
/// (T = 0 is a valid no-op, whose pointers may be null, as an empty tensor's are), then pointers.
template <class E>
Status validate(const Args<E>& a) {
  static_assert(is_element_v<E>, "gemma_fused_add_rmsnorm is defined for float, __half and __nv_bfloat16.");
  constexpr std::int64_t eb = sizeof(E);
  if (a.tokens < 0) return Status::invalid("gemma_fused_add_rmsnorm: tokens is negative");
  if (a.h < 1) return Status::invalid("gemma_fused_add_rmsnorm: h must be at least 1");
  if (a.input_stride < a.h)
    return Status::invalid("gemma_fused_add_rmsnorm: input_stride is shorter than a row (h; pass -1 for contiguous rows)");
  if (a.residual_stride < a.h)
    return Status::invalid("gemma_fused_add_rmsnorm: residual_stride is shorter than a row (h; pass -1 for contiguous rows)");
  if (!(a.eps >= 0.f) || std::isinf(a.eps))
    return Status::invalid("gemma_fused_add_rmsnorm: eps must be finite and non-negative");
  if (a.h > max_h) return Status::too_large("gemma_fused_add_rmsnorm: h above 2^30 elements per row");
  if (a.tokens > max_tokens) return Status::too_large("gemma_fused_add_rmsnorm: tokens above 2^31 - 1 rows");
  if (!norm_rows::extent_fits(a.tokens, a.h, a.input_stride, eb) ||
      !norm_rows::extent_fits(a.tokens, a.h, a.residual_stride, eb))
    return Status::too_large("gemma_fused_add_rmsnorm: (tokens - 1) * stride + h overflows 64-bit byte offsets");
  if (is_empty(a)) return Status::success();
  if (!a.input || !a.residual || !a.weight)
    return Status::invalid("gemma_fused_add_rmsnorm: input, residual and weight must not be null");
  if (reinterpret_cast<std::uintptr_t>(a.input) % eb || reinterpret_cast<std::uintptr_t>(a.residual) % eb ||
      reinterpret_cast<std::uintptr_t>(a.weight) % eb)
    return Status::invalid("gemma_fused_add_rmsnorm: a pointer is not aligned to the element size");
  // Both are updated in place, each element by the thread that read it: a shared element would be read
  // and written as input and as residual.
  if (norm_rows::rows_overlap(a.input, a.input_stride, a.residual, a.residual_stride, a.tokens, a.h, eb))
    return Status::invalid("gemma_fused_add_rmsnorm: input and residual share elements");
  return Status::success();
}

/// The shape key of tuned tables: tokens and the row width h.
template <class E>
std::int64_t tokens(const Args<E>& a) {
  return a.tokens;
}
template <class E>
std::int64_t width(const Args<E>& a) {
  return a.h;
}

}  // namespace ktune::ops::gemma_fused_add_rmsnorm
