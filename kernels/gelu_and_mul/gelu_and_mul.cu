// kernels/gelu_and_mul/gelu_and_mul.cu: the public API compiled for fp32, fp16 and bf16, plus the
// runtime-dtype entry and the choice query, for ktune::kernels (host-compiler users of gelu_and_mul.hpp).
#include "gelu_and_mul.cuh"

namespace ktune {

template Status gelu_and_mul<float>(float*, const float*, std::int64_t, std::int64_t, cudaStream_t, std::int64_t,
                                    std::int64_t);
template Status gelu_and_mul<__half>(__half*, const __half*, std::int64_t, std::int64_t, cudaStream_t, std::int64_t,
                                     std::int64_t);
template Status gelu_and_mul<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, std::int64_t, std::int64_t,
                                            cudaStream_t, std::int64_t, std::int64_t);
Status gelu_and_mul(DType dtype, void* out, const void* in, std::int64_t tokens, std::int64_t d, cudaStream_t stream,
                    std::int64_t out_stride, std::int64_t in_stride) {
  switch (dtype) {
    case DType::f32:
      return gelu_and_mul(static_cast<float*>(out), static_cast<const float*>(in), tokens, d, stream, out_stride,
                          in_stride);
    case DType::f16:
      return gelu_and_mul(static_cast<__half*>(out), static_cast<const __half*>(in), tokens, d, stream, out_stride,
                          in_stride);
    case DType::bf16:
      return gelu_and_mul(static_cast<__nv_bfloat16*>(out), static_cast<const __nv_bfloat16*>(in), tokens, d, stream,
                          out_stride, in_stride);
  }
  return Status::unsupported("gelu_and_mul: unsupported dtype (fp32, fp16 and bf16 are)");
}

Status gelu_and_mul_choice(DType dtype, std::int64_t tokens, std::int64_t d, TunedChoice& out) {
  return ops::gelu_and_mul::choice(dtype, tokens, d, out);
}

}  // namespace ktune
