// bench/upstream/flashinfer_rope.cu: sgl-kernel's apply_rope_pos_ids_cos_sin_cache on its path without a
// KV-buffer write (csrc/elementwise/rope.cu, whose pos_enc.cuh includes FlashInfer's): FlashInfer's
// include/flashinfer/pos_enc.cuh BatchQKApplyRotaryPosIdsCosSinCache. Compiled with sgl-kernel's flags.
#include "flashinfer_launch.hpp"

#include <flashinfer/pos_enc.cuh>

namespace ktune::upstream {

cudaError_t apply_rope_pos_ids_cos_sin_cache(DType dtype, void* q, void* k, const float* cos_sin_cache,
                                             const std::int64_t* pos_ids, std::uint32_t nnz, std::uint32_t num_qo_heads,
                                             std::uint32_t num_kv_heads, std::uint32_t rotary_dim,
                                             std::uint32_t head_dim, std::size_t q_stride_n, std::size_t q_stride_h,
                                             std::size_t k_stride_n, std::size_t k_stride_h, bool interleave,
                                             cudaStream_t stream) {
  return dispatch_dtype<false>(dtype, [&](auto c) {
    using T = decltype(c);
    // apply_rope_with_cos_sin_cache_inplace passes query and key as both q/k and q_rope/k_rope.
    T* const qt = static_cast<T*>(q);
    T* const kt = static_cast<T*>(k);
    return flashinfer::BatchQKApplyRotaryPosIdsCosSinCache<T, std::int64_t>(
        qt, kt, qt, kt, const_cast<float*>(cos_sin_cache), const_cast<std::int64_t*>(pos_ids), nnz, num_qo_heads,
        num_kv_heads, rotary_dim, head_dim, q_stride_n, q_stride_h, k_stride_n, k_stride_h, q_stride_n, q_stride_h,
        k_stride_n, k_stride_h, interleave, stream);
  });
}

}  // namespace ktune::upstream
