// kernels/rmsnorm/rmsnorm.cu: the public API compiled for fp32, fp16 and bf16, and the runtime-dtype
// entry, for the ktune::kernels library (host-compiler users include rmsnorm.hpp and link it).
#include "rmsnorm.cuh"

namespace ktune {

template Status rmsnorm<float>(float*, const float*, const float*, std::int64_t, std::int64_t, float, cudaStream_t,
                               std::int64_t, std::int64_t);
template Status rmsnorm<__half>(__half*, const __half*, const __half*, std::int64_t, std::int64_t, float, cudaStream_t,
                                std::int64_t, std::int64_t);
template Status rmsnorm<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, std::int64_t,
                                       std::int64_t, float, cudaStream_t, std::int64_t, std::int64_t);

Status rmsnorm(DType dtype, void* output, const void* input, const void* weight, std::int64_t tokens, std::int64_t h,
               float eps, cudaStream_t stream, std::int64_t output_stride, std::int64_t input_stride) {
  return ops::rmsnorm::run_dtype(dtype, output, input, weight, tokens, h, eps, stream, output_stride, input_stride);
}

Status rmsnorm_choice(DType dtype, std::int64_t tokens, std::int64_t h, TunedChoice& out) {
  return ops::rmsnorm::choose(dtype, tokens, h, out);
}

}  // namespace ktune
