// bench/upstream/flashinfer_launch.hpp: sgl-kernel's launches of FlashInfer's kernels, as plain host
// functions. Defined in flashinfer_*.cu, the only files that include FlashInfer (from the folder
// KTUNE_FLASHINFER_DIR names) and the only ones compiled with sgl-kernel's flags (CMakeLists.txt).
//
// Each function is the body of one sgl-kernel binding (sglang 00390b8633f913f53d98d3acdbc1ab8f0d62da1b,
// FlashInfer bc29697ba20b7e6bdb728ded98f04788e16ee021) without PyTorch: the same FlashInfer call or
// launch, the same template arguments and launch geometry, on the caller's stream, with the tensors'
// sizes and strides passed as numbers. A dtype the binding does not dispatch returns cudaErrorNotSupported.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <ktune/dtype.hpp>

namespace ktune::upstream {

/// The commits these launches follow: FlashInfer's as sgl-kernel/CMakeLists.txt pins it (GIT_TAG) at that
/// sglang commit. flashinfer_built_commit(): the FlashInfer the build included (KTUNE_FLASHINFER_DIR's
/// COMMIT file or git HEAD; "unknown" when it had neither).
inline constexpr const char* flashinfer_pinned_commit = "bc29697ba20b7e6bdb728ded98f04788e16ee021";
inline constexpr const char* sglang_commit = "00390b8633f913f53d98d3acdbc1ab8f0d62da1b";
const char* flashinfer_built_commit();

/// sgl_kernel.utils.is_arch_support_pdl(): the default of every enable_pdl argument, true from sm_90 on
/// (major >= 9), for the current device, asked once per process as Python's functools.cache does.
bool is_arch_support_pdl();

/// sgl_kernel.rmsnorm and gemma_rmsnorm: FlashInfer's csrc/norm.cu rmsnorm / gemma_rmsnorm (compiled into
/// sgl-kernel), i.e. norm::RMSNorm / norm::GemmaRMSNorm; fp16 and bf16.
/// input [batch_size, hidden_size] (row stride input_stride), weight [hidden_size], output [batch_size,
/// hidden_size] (row stride output_stride).
cudaError_t rmsnorm(DType dtype, void* output, const void* input, const void* weight, std::uint32_t batch_size,
                    std::uint32_t hidden_size, std::int64_t input_stride, std::int64_t output_stride, float eps,
                    bool enable_pdl, cudaStream_t stream);
cudaError_t gemma_rmsnorm(DType dtype, void* output, const void* input, const void* weight, std::uint32_t batch_size,
                          std::uint32_t hidden_size, std::int64_t input_stride, std::int64_t output_stride, float eps,
                          bool enable_pdl, cudaStream_t stream);

/// sgl_kernel.fused_add_rmsnorm: sgl-kernel's own binding (csrc/elementwise/fused_add_rms_norm_kernel.cu,
/// sgl_fused_add_rmsnorm) of norm::FusedAddRMSNorm; fp32, fp16 and bf16.
/// sgl_kernel.gemma_fused_add_rmsnorm: FlashInfer's csrc/norm.cu binding of norm::GemmaFusedAddRMSNorm;
/// fp16 and bf16. In place: input [batch_size, hidden_size] (row stride input_stride), residual
/// [batch_size, hidden_size] (row stride residual_stride), weight [hidden_size].
cudaError_t fused_add_rmsnorm(DType dtype, void* input, void* residual, const void* weight, std::uint32_t batch_size,
                              std::uint32_t hidden_size, std::int64_t input_stride, std::int64_t residual_stride,
                              float eps, bool enable_pdl, cudaStream_t stream);
cudaError_t gemma_fused_add_rmsnorm(DType dtype, void* input, void* residual, const void* weight,
                                    std::uint32_t batch_size, std::uint32_t hidden_size, std::int64_t input_stride,
                                    std::int64_t residual_stride, float eps, bool enable_pdl, cudaStream_t stream);

/// sgl_kernel.silu_and_mul, gelu_and_mul, gelu_tanh_and_mul (csrc/elementwise/activation.cu): FlashInfer's
/// activation::act_and_mul_kernel with sgl-kernel's activation functions, <<<num_tokens, min(d / (16 /
/// sizeof(T)), 1024), 0, stream>>> (no PDL attribute); fp32, fp16 and bf16.
/// input [num_tokens, 2 * d], out [num_tokens, d], both contiguous.
cudaError_t silu_and_mul(DType dtype, void* out, const void* input, std::int64_t num_tokens, int d,
                         cudaStream_t stream);
cudaError_t gelu_and_mul(DType dtype, void* out, const void* input, std::int64_t num_tokens, int d,
                         cudaStream_t stream);
cudaError_t gelu_tanh_and_mul(DType dtype, void* out, const void* input, std::int64_t num_tokens, int d,
                              cudaStream_t stream);

/// sgl_kernel.apply_rope_with_cos_sin_cache_inplace without a fused KV-buffer write: the binding
/// apply_rope_pos_ids_cos_sin_cache (csrc/elementwise/rope.cu) calls FlashInfer's
/// BatchQKApplyRotaryPosIdsCosSinCache<T, int64_t> with q_rope = q and k_rope = k (in place) and
/// interleave = !is_neox; no PDL on that path; fp16 and bf16.
/// q [nnz, num_qo_heads, head_dim] (strides q_stride_n, q_stride_h), k [nnz, num_kv_heads, head_dim]
/// (k_stride_n, k_stride_h), cos_sin_cache [max_pos, rotary_dim] fp32, pos_ids [nnz] int64.
cudaError_t apply_rope_pos_ids_cos_sin_cache(DType dtype, void* q, void* k, const float* cos_sin_cache,
                                             const std::int64_t* pos_ids, std::uint32_t nnz, std::uint32_t num_qo_heads,
                                             std::uint32_t num_kv_heads, std::uint32_t rotary_dim,
                                             std::uint32_t head_dim, std::size_t q_stride_n, std::size_t q_stride_h,
                                             std::size_t k_stride_n, std::size_t k_stride_h, bool interleave,
                                             cudaStream_t stream);

/// f(T{}) for the types sgl-kernel's dispatch macros accept: DISPATCH_PYTORCH_DTYPE_TO_CTYPE_FP16 (fp16,
/// bf16) and, with WithFloat, DISPATCH_PYTORCH_DTYPE_TO_CTYPE_FLOAT_FP16 (fp32 too).
template <bool WithFloat, class F> cudaError_t dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f16:
      return f(__half{});
    case DType::bf16:
      return f(__nv_bfloat16{});
    case DType::f32:
      if constexpr (WithFloat) return f(float{});
      break;
  }
  return cudaErrorNotSupported;
}

}  // namespace ktune::upstream
