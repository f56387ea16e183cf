// bench/upstream/flashinfer_norm.cu: sgl-kernel's four RMS norm bindings (flashinfer_launch.hpp), calling
// FlashInfer's include/flashinfer/norm.cuh launchers as the bindings do. Compiled with sgl-kernel's flags.
#include "flashinfer_launch.hpp"

#include <flashinfer/norm.cuh>

#ifndef KTUNE_FLASHINFER_COMMIT
#define KTUNE_FLASHINFER_COMMIT "unknown"
#endif

namespace ktune::upstream {

const char* flashinfer_built_commit() { return KTUNE_FLASHINFER_COMMIT; }

bool is_arch_support_pdl() {
  static const bool pdl = [] {
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;  // the launches that follow fail on such a device anyway, with their own error
    }
    return major >= 9;
  }();
  return pdl;
}

// The bindings hand FlashInfer the tensors' data pointers as T* (weight and input too, which it only
// reads) and their int64 row strides, narrowed to its uint32_t parameters; eps comes as a Python float
// (double), narrowed to FlashInfer's float: the same value as the float given here.

cudaError_t rmsnorm(DType dtype, void* output, const void* input, const void* weight, std::uint32_t batch_size,
                    std::uint32_t hidden_size, std::int64_t input_stride, std::int64_t output_stride, float eps,
                    bool enable_pdl, cudaStream_t stream) {
  return dispatch_dtype<false>(dtype, [&](auto c) {
    using T = decltype(c);
    return flashinfer::norm::RMSNorm(static_cast<T*>(const_cast<void*>(input)),
                                     static_cast<T*>(const_cast<void*>(weight)), static_cast<T*>(output), batch_size,
                                     hidden_size, static_cast<std::uint32_t>(input_stride),
                                     static_cast<std::uint32_t>(output_stride), eps, enable_pdl, stream);
  });
}

cudaError_t gemma_rmsnorm(DType dtype, void* output, const void* input, const void* weight, std::uint32_t batch_size,
                          std::uint32_t hidden_size, std::int64_t input_stride, std::int64_t output_stride, float eps,
                          bool enable_pdl, cudaStream_t stream) {
  return dispatch_dtype<false>(dtype, [&](auto c) {
    using T = decltype(c);
    return flashinfer::norm::GemmaRMSNorm(static_cast<T*>(const_cast<void*>(input)),
                                          static_cast<T*>(const_cast<void*>(weight)), static_cast<T*>(output),
                                          batch_size, hidden_size, static_cast<std::uint32_t>(input_stride),
                                          static_cast<std::uint32_t>(output_stride), eps, enable_pdl, stream);
  });
}

cudaError_t fused_add_rmsnorm(DType dtype, void* input, void* residual, const void* weight, std::uint32_t batch_size,
                              std::uint32_t hidden_size, std::int64_t input_stride, std::int64_t residual_stride,
                              float eps, bool enable_pdl, cudaStream_t stream) {
  return dispatch_dtype<true>(dtype, [&](auto c) {
    using T = decltype(c);
    return flashinfer::norm::FusedAddRMSNorm(static_cast<T*>(input), static_cast<T*>(residual),
                                             static_cast<T*>(const_cast<void*>(weight)), batch_size, hidden_size,
                                             static_cast<std::uint32_t>(input_stride),
                                             static_cast<std::uint32_t>(residual_stride), eps, enable_pdl, stream);
  });
}

cudaError_t gemma_fused_add_rmsnorm(DType dtype, void* input, void* residual, const void* weight,
                                    std::uint32_t batch_size, std::uint32_t hidden_size, std::int64_t input_stride,
                                    std::int64_t residual_stride, float eps, bool enable_pdl, cudaStream_t stream) {
  return dispatch_dtype<false>(dtype, [&](auto c) {
    using T = decltype(c);
    return flashinfer::norm::GemmaFusedAddRMSNorm(static_cast<T*>(input), static_cast<T*>(residual),
                                                  static_cast<T*>(const_cast<void*>(weight)), batch_size, hidden_size,
                                                  static_cast<std::uint32_t>(input_stride),
                                                  static_cast<std::uint32_t>(residual_stride), eps, enable_pdl, stream);
  });
}

}  // namespace ktune::upstream
