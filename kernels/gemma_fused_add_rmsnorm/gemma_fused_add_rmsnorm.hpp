// kernels/gemma_fused_add_rmsnorm/gemma_fused_add_rmsnorm.hpp: host-only declarations of the gemma_fused_add_rmsnorm
// public API, for .cpp files compiled by a host compiler (a PyTorch binding, say). The definitions
// are compiled for fp32, fp16 and bf16 into the ktune::kernels library (gemma_fused_add_rmsnorm.cu); CUDA
// code may instead include gemma_fused_add_rmsnorm.cuh, which defines the typed template.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

namespace ktune {

/// In place, per row t < tokens: x = input[t] + residual[t] in fp32; residual[t] <- x;
/// input[t] <- x * rsqrt(mean(x^2) + eps) * (1 + weight) (1 + weight rounded to fp32 first); both rounded
/// to E (sgl_kernel.gemma_fused_add_rmsnorm: Gemma stores its norm weights as w - 1).
///
/// input [tokens, h] with row stride input_stride, residual [tokens, h] with row stride
/// residual_stride (elements; -1: h, contiguous), weight [h]: raw device pointers aligned to the
/// element, input and residual not overlapping. Row strides, as in every ktune op: -1 (the default)
/// means contiguous rows; any other value is the stride itself, at least h; 0 and other negative
/// values are errors, never read as "contiguous". Any h >= 1; tokens = 0 is a no-op. Enqueued on
/// `stream` with no synchronisation and no allocation (graph-capturable), on the current device.
/// Errors (nothing is launched or written): null pointers, negative sizes, strides shorter than h (0
/// and negatives other than -1 included), eps negative or not finite, pointers not aligned to the
/// element, sizes beyond 64-bit offsets.
/// Deterministic: the same input gives bitwise the same output on every run; different variants
/// (devices, tuned tables) may differ in the last bits, within the spec's tolerance.
/// \tparam E float, __half or __nv_bfloat16
template <class E>
[[nodiscard]] Status gemma_fused_add_rmsnorm(E* input, E* residual, const E* weight, std::int64_t tokens, std::int64_t h,
                                       float eps = 1e-6f, cudaStream_t stream = nullptr,
                                       std::int64_t input_stride = -1, std::int64_t residual_stride = -1);

/// The same for a dtype known at run time (bindings); an unknown dtype is refused before anything else.
[[nodiscard]] Status gemma_fused_add_rmsnorm(DType dtype, void* input, void* residual, const void* weight,
                                       std::int64_t tokens, std::int64_t h, float eps = 1e-6f,
                                       cudaStream_t stream = nullptr, std::int64_t input_stride = -1,
                                       std::int64_t residual_stride = -1);

/// Which variant a call with these sizes would use on the current device, and why (tuned for this
/// device, for its architecture, or the general configuration); `out.id` names it. A call whose
/// pointers, strides or h the chosen variant cannot serve runs the element-access fallback instead.
[[nodiscard]] Status gemma_fused_add_rmsnorm_choice(DType dtype, std::int64_t tokens, std::int64_t h, TunedChoice& out);

}  // namespace ktune
