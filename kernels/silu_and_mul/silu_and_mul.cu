// kernels/silu_and_mul/silu_and_mul.cu: the public API compiled for fp32, fp16 and bf16, plus the
// runtime-dtype entry and the choice query, for ktune::kernels (host-compiler users of silu_and_mul.hpp).
#include "silu_and_mul.cuh"

namespace ktune {

template Status silu_and_mul<float>(float*, const float*, std::int64_t, std::int64_t, cudaStream_t, std::int64_t,
                                    std::int64_t);
template Status silu_and_mul<__half>(__half*, const __half*, std::int64_t, std::int64_t, cudaStream_t, std::int64_t,
                                     std::int64_t);
template Status silu_and_mul<__nv_bfloat16>(__nv_bfloat16*, const __nv_bfloat16*, std::int64_t, std::int64_t,
                                            cudaStream_t, std::int64_t, std::int64_t);
template Status silu_and_mul<void>(DType, void*, const void*, std::int64_t, std::int64_t, cudaStream_t, std::int64_t,
                                   std::int64_t);
template Status silu_and_mul_choice<void>(DType, std::int64_t, std::int64_t, TunedChoice&);

}  // namespace ktune
