// kernels/merge_attn_states_lse/merge_attn_states_lse.cu: the public API compiled for fp32, fp16 and
// bf16, plus the runtime-dtype entry and the choice query, for ktune::kernels (host-compiler users).
#include "merge_attn_states_lse.cuh"

namespace ktune {

#define KTUNE_MERGE_ATTN_STATES_LSE_INSTANTIATE(E)                                                              \
  template Status merge_attn_states_lse<E>(E*, float*, const E*, const float*, const E*, const float*,          \
                                           std::int64_t, std::int64_t, std::int64_t, cudaStream_t, std::int64_t, \
                                           std::int64_t, std::int64_t);
KTUNE_MERGE_ATTN_STATES_LSE_INSTANTIATE(float)
KTUNE_MERGE_ATTN_STATES_LSE_INSTANTIATE(__half)
KTUNE_MERGE_ATTN_STATES_LSE_INSTANTIATE(__nv_bfloat16)
#undef KTUNE_MERGE_ATTN_STATES_LSE_INSTANTIATE

Status merge_attn_states_lse(DType dtype, void* out, float* out_lse, const void* prefix_out, const float* prefix_lse,
                             const void* suffix_out, const float* suffix_lse, std::int64_t tokens, std::int64_t heads,
                             std::int64_t head_size, cudaStream_t stream, std::int64_t out_stride,
                             std::int64_t prefix_stride, std::int64_t suffix_stride) {
  switch (dtype) {
    case DType::f32:
      return merge_attn_states_lse(static_cast<float*>(out), out_lse, static_cast<const float*>(prefix_out), prefix_lse,
                                   static_cast<const float*>(suffix_out), suffix_lse, tokens, heads, head_size, stream,
                                   out_stride, prefix_stride, suffix_stride);
    case DType::f16:
      return merge_attn_states_lse(static_cast<__half*>(out), out_lse, static_cast<const __half*>(prefix_out),
                                   prefix_lse, static_cast<const __half*>(suffix_out), suffix_lse, tokens, heads,
                                   head_size, stream, out_stride, prefix_stride, suffix_stride);
    case DType::bf16:
      return merge_attn_states_lse(static_cast<__nv_bfloat16*>(out), out_lse,
                                   static_cast<const __nv_bfloat16*>(prefix_out), prefix_lse,
                                   static_cast<const __nv_bfloat16*>(suffix_out), suffix_lse, tokens, heads, head_size,
                                   stream, out_stride, prefix_stride, suffix_stride);
  }
  return Status::unsupported("merge_attn_states_lse: unsupported dtype (fp32, fp16 and bf16 are)");
}

Status merge_attn_states_lse_choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out) {
  return ops::merge_attn_states_lse::choice(dtype, tokens, width, out);
}

}  // namespace ktune
