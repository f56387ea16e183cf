// kernels/gemma_rmsnorm/gemma_rmsnorm.cu: the public API compiled for fp32, fp16 and bf16, and the runtime-dtype
// entry, for the ktune::kernels library (host-compiler users include gemma_rmsnorm.hpp and link it).
#include "gemma_rmsnorm.cuh"

namespace ktune {

template Status gemma_rmsnorm<float>(float*, const float*, const float*, std::int64_t, std::int64_t, float, cudaStream_t,
                               std::int64_t, std::int64_t);
template Status gemma_rmsnorm<__half>(__half*, const __half*, const __half*, std::int64_t, std::int64_t, float, cudaStream_t,
                                std::int64_t, std::int64_t);
template Status gemma_rmsnorm<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, std::int64_t,
                                       std::int64_t, float, cudaStream_t, std::int64_t, std::int64_t);

Status gemma_rmsnorm(DType dtype, void* output, const void* input, const void* weight, std::int64_t tokens, std::int64_t h,
               float eps, cudaStream_t stream, std::int64_t output_stride, std::int64_t input_stride) {
  return ops::gemma_rmsnorm::run_dtype(dtype, output, input, weight, tokens, h, eps, stream, output_stride, input_stride);
}

Status gemma_rmsnorm_choice(DType dtype, std::int64_t tokens, std::int64_t h, TunedChoice& out) {
  return ops::gemma_rmsnorm::choose(dtype, tokens, h, out);
}

}  // namespace ktune
