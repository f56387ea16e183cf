// kernels/gemma_rmsnorm/gemma_rmsnorm.hpp: host-only declarations of the gemma_rmsnorm public API, for .cpp files compiled
// by a host compiler (a PyTorch binding, say). The definitions are compiled for fp32, fp16 and bf16 into
// the ktune::kernels library (gemma_rmsnorm.cu); CUDA code may instead include gemma_rmsnorm.cuh, which defines the
// typed template.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

namespace ktune {

/// Per row t < tokens: output[t] <- input[t] * rsqrt(mean(input[t]^2) + eps) * (1 + weight), in fp32
/// (1 + weight rounded to fp32 first), rounded to E (sgl_kernel.gemma_rmsnorm: Gemma stores its norm
/// weights as w - 1).
///
/// output [tokens, h] with row stride output_stride, input [tokens, h] with row stride input_stride
/// (elements; -1: h, contiguous), weight [h]: raw device pointers aligned to the element. output may be
/// input itself (same stride: in place) and may not otherwise share an element with it. Row strides, as
/// in every ktune op: -1 (the default) means contiguous rows; any other value is the stride itself, at
/// least h; 0 and other negative values are errors, never read as "contiguous". Any h >= 1; tokens = 0 is
/// a no-op. Enqueued on `stream` with no synchronisation and no allocation (graph-capturable), on the
/// current device. Errors (nothing is launched or written): null pointers, negative sizes, strides
/// shorter than h, eps negative or not finite, pointers not aligned to the element, output overlapping
/// input other than in place, sizes beyond 64-bit offsets.
/// Deterministic: the same input gives bitwise the same output on every run; different variants
/// (devices, tuned tables) may differ in the last bits, within the spec's tolerance.
/// \tparam E float, __half or __nv_bfloat16
template <class E>
[[nodiscard]] Status gemma_rmsnorm(E* output, const E* input, const E* weight, std::int64_t tokens, std::int64_t h,
                             float eps = 1e-6f, cudaStream_t stream = nullptr, std::int64_t output_stride = -1,
                             std::int64_t input_stride = -1);

/// The same for a dtype known at run time (bindings); an unknown dtype is refused before anything else.
[[nodiscard]] Status gemma_rmsnorm(DType dtype, void* output, const void* input, const void* weight, std::int64_t tokens,
                             std::int64_t h, float eps = 1e-6f, cudaStream_t stream = nullptr,
                             std::int64_t output_stride = -1, std::int64_t input_stride = -1);

/// Which variant a call with these sizes would use on the current device, and why (tuned for this
/// device, for its architecture, or the general configuration); `out.id` names it. A call whose
/// pointers, strides or h the chosen variant cannot serve runs the element-access fallback instead.
[[nodiscard]] Status gemma_rmsnorm_choice(DType dtype, std::int64_t tokens, std::int64_t h, TunedChoice& out);

}  // namespace ktune
