// bench/upstream/flashinfer_activation.cu: sgl-kernel's silu_and_mul, gelu_and_mul and gelu_tanh_and_mul
// (csrc/elementwise/activation.cu): FlashInfer's include/flashinfer/activation.cuh act_and_mul_kernel
// launched as the bindings launch it. Compiled with sgl-kernel's flags.
#include "flashinfer_launch.hpp"

#include <flashinfer/activation.cuh>

#include <algorithm>
#include <cmath>

namespace ktune::upstream {
namespace {

// The three activations, which sgl-kernel defines itself (FlashInfer's kernel takes them as a parameter,
// float (*)(const float&)): the textbook formulas in float with the library calls sgl-kernel makes (expf,
// erf, tanhf). Which calls matters: -use_fast_math turns expf into __expf, tanhf into tanh.approx.f32 and
// the division into an approximate one, here as in sgl-kernel's sm_90 library.
__device__ __forceinline__ float silu(const float& x) { return x / (1.0f + expf(-x)); }

__device__ __forceinline__ float gelu(const float& x) {
  constexpr float kAlpha = M_SQRT1_2;
  return x * (0.5f * (1.0f + erf(x * kAlpha)));
}

__device__ __forceinline__ float gelu_tanh(const float& x) {
  constexpr float kAlpha = 0.044715f;
  constexpr float kBeta = 0.7978845608028654f;
  const float cdf = 0.5f * (1.0f + tanhf((kBeta * (x + kAlpha * x * x * x))));
  return x * cdf;
}

/// The bindings' body: grid = num_tokens, block = min(d / vec_size, 1024U) (unsigned arithmetic, as
/// written), no dynamic shared memory, no launch attributes. sgl-kernel checks no launch error here; the
/// check after it changes nothing in the launch.
template <float (*Activation)(const float&)>
cudaError_t act_and_mul(DType dtype, void* out, const void* input, std::int64_t num_tokens, int d,
                        cudaStream_t stream) {
  return dispatch_dtype<true>(dtype, [&](auto c) {
    using T = decltype(c);
    const dim3 grid(static_cast<unsigned>(num_tokens));
    const std::uint32_t vec_size = 16 / sizeof(T);
    const dim3 block(std::min(d / vec_size, 1024U));
    flashinfer::activation::act_and_mul_kernel<T, Activation>
        <<<grid, block, 0, stream>>>(static_cast<T*>(out), static_cast<const T*>(input), d);
    return cudaGetLastError();
  });
}

}  // namespace

cudaError_t silu_and_mul(DType dtype, void* out, const void* input, std::int64_t num_tokens, int d,
                         cudaStream_t stream) {
  return act_and_mul<silu>(dtype, out, input, num_tokens, d, stream);
}

cudaError_t gelu_and_mul(DType dtype, void* out, const void* input, std::int64_t num_tokens, int d,
                         cudaStream_t stream) {
  return act_and_mul<gelu>(dtype, out, input, num_tokens, d, stream);
}

cudaError_t gelu_tanh_and_mul(DType dtype, void* out, const void* input, std::int64_t num_tokens, int d,
                              cudaStream_t stream) {
  return act_and_mul<gelu_tanh>(dtype, out, input, num_tokens, d, stream);
}

}  // namespace ktune::upstream
