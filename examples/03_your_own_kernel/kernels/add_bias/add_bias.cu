// Derived by ktune 0.1.0 (`ktune derive`, `ktune agent`) for op add_bias from S (add_bias.cu,
// 0xbac3b0043287fa13) and spec.json (0xef37ef904008cb27).
// Do not edit: change S or spec.json and run `ktune derive` (or `ktune agent`) again.
//
// kernels/add_bias/add_bias.cu: the public API compiled for fp32, fp16 and bf16, plus the runtime-dtype entry
// and the choice query, for ktune::kernels (host-compiler users of add_bias.hpp).
#include "add_bias.cuh"

namespace ktune {

template Status add_bias<float>(const float*, const float*, float*, std::int64_t, std::int64_t, cudaStream_t);
template Status add_bias<__half>(const __half*, const __half*, __half*, std::int64_t, std::int64_t, cudaStream_t);
template Status add_bias<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, std::int64_t,
                                        std::int64_t, cudaStream_t);

Status add_bias(DType dtype, const void* x, const void* bias, void* out, std::int64_t tokens, std::int64_t d,
                cudaStream_t stream) {
  switch (dtype) {
    case ktune::DType::f32:
      return ktune::add_bias<float>(static_cast<const float*>(x), static_cast<const float*>(bias),
                                    static_cast<float*>(out), tokens, d, stream);
    case ktune::DType::f16:
      return ktune::add_bias<__half>(static_cast<const __half*>(x), static_cast<const __half*>(bias),
                                     static_cast<__half*>(out), tokens, d, stream);
    case ktune::DType::bf16:
      return ktune::add_bias<__nv_bfloat16>(static_cast<const __nv_bfloat16*>(x),
                                            static_cast<const __nv_bfloat16*>(bias), static_cast<__nv_bfloat16*>(out),
                                            tokens, d, stream);
  }
  return ktune::Status::unsupported("add_bias: unsupported dtype (fp32, fp16 and bf16 are)");
}

Status add_bias_choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out) {
  return ops::add_bias::choice(dtype, tokens, width, out);
}

}  // namespace ktune
