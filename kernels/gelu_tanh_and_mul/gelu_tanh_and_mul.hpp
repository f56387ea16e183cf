// kernels/gelu_tanh_and_mul/gelu_tanh_and_mul.hpp: host-only declarations of the public API, for .cpp files
// compiled by a host compiler (a PyTorch binding, say). Link ktune::kernels, which compiles the
// definitions (gelu_tanh_and_mul.cu) for fp32, fp16 and bf16. CUDA code includes gelu_tanh_and_mul.cuh instead
// and needs nothing but the CUDA toolkit.
//
// The runtime-dtype entry and gelu_tanh_and_mul_choice are compiled into ktune::kernels (gelu_tanh_and_mul.cu):
// link it to call them, from host-compiler or nvcc code alike.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

namespace ktune {

/// out[t, i] = gelu_tanh(in[t, i]) * in[t, d + i], gelu_tanh(x) = 0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3))) (tanh GELU),
/// in fp32, rounded once to E; the same functions as SGLang's sgl_kernel.gelu_tanh_and_mul (kernels/gelu_tanh_and_mul/original.cuh).
///
///   in  [tokens, 2*d]  E, row stride in_stride (elements; -1: 2*d)
///   out [tokens, d]    E, row stride out_stride (elements; -1: d)
///
/// Raw device pointers on the current device; the last dimension contiguous; `out` must not overlap
/// `in`. Row strides, as in every ktune op: -1 (the default) means contiguous rows; any other value is
/// the stride itself, at least the row width; 0 and other negative values are errors, never read as
/// "contiguous". Any valid input works: tokens == 0 or d == 0 is a no-op, any d >= 1, pointers aligned
/// only to the element, any row strides >= the row widths. Errors (nothing launched, nothing written):
/// null pointers, negative sizes, strides shorter than a row (0 and negatives other than -1 included),
/// pointers misaligned to the element, d above 2^28, offsets overflowing 64-bit byte offsets. Special values
/// follow IEEE arithmetic of the formula: x far below zero gives -0 (never NaN), x = +inf gives +inf, x = -inf gives NaN (-inf * 0), a NaN input
/// gives NaN in the one output it feeds.
/// Graph-capturable (no synchronisation, no allocation, device facts cached per device).
/// Deterministic: the same input gives bitwise the same output on every call; tuned variants of
/// different configurations may round differently within the spec's tolerance.
/// \tparam E float, __half or __nv_bfloat16
template <class E>
[[nodiscard]] Status gelu_tanh_and_mul(E* out, const E* in, std::int64_t tokens, std::int64_t d, cudaStream_t stream = nullptr,
                                  std::int64_t out_stride = -1, std::int64_t in_stride = -1);

/// The same with the element type given at run time (for bindings). An unknown dtype is refused
/// before anything else happens.
[[nodiscard]] Status gelu_tanh_and_mul(DType dtype, void* out, const void* in, std::int64_t tokens, std::int64_t d,
                                  cudaStream_t stream = nullptr, std::int64_t out_stride = -1,
                                  std::int64_t in_stride = -1);

/// Which variant a call with `tokens` rows of width `d` would use on the current device, and whether it
/// is tuned (for this device or architecture) or the general configuration. For 16-byte aligned
/// pointers with d and the strides multiples of the 16-byte pack; other inputs run the family's
/// unaligned configuration (one element per access) instead.
[[nodiscard]] Status gelu_tanh_and_mul_choice(DType dtype, std::int64_t tokens, std::int64_t d, TunedChoice& out);

}  // namespace ktune
