// kernels/gemma_fused_add_rmsnorm/gemma_fused_add_rmsnorm.cu: the public API compiled for fp32, fp16 and bf16,
// and the runtime-dtype entry, for the ktune::kernels library (host-compiler users include
// gemma_fused_add_rmsnorm.hpp and link it).
#include "gemma_fused_add_rmsnorm.cuh"

namespace ktune {

template Status gemma_fused_add_rmsnorm<float>(float*, float*, const float*, std::int64_t, std::int64_t, float, cudaStream_t,
                                         std::int64_t, std::int64_t);
template Status gemma_fused_add_rmsnorm<__half>(__half*, __half*, const __half*, std::int64_t, std::int64_t, float,
                                          cudaStream_t, std::int64_t, std::int64_t);
template Status gemma_fused_add_rmsnorm<__nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, const __nv_bfloat16*, std::int64_t,
                                                 std::int64_t, float, cudaStream_t, std::int64_t, std::int64_t);

Status gemma_fused_add_rmsnorm(DType dtype, void* input, void* residual, const void* weight, std::int64_t tokens,
                         std::int64_t h, float eps, cudaStream_t stream, std::int64_t input_stride,
                         std::int64_t residual_stride) {
  return ops::gemma_fused_add_rmsnorm::run_dtype(dtype, input, residual, weight, tokens, h, eps, stream, input_stride,
                                           residual_stride);
}

Status gemma_fused_add_rmsnorm_choice(DType dtype, std::int64_t tokens, std::int64_t h, TunedChoice& out) {
  return ops::gemma_fused_add_rmsnorm::choose(dtype, tokens, h, out);
}

}  // namespace ktune
