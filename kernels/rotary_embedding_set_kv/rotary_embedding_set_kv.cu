// kernels/rotary_embedding_set_kv/rotary_embedding_set_kv.cu: the public API compiled for fp32, fp16 and
// bf16, plus the runtime-dtype entry and the choice query, for ktune::kernels (host-compiler users).
#include "rotary_embedding_set_kv.cuh"

namespace ktune {

#define KTUNE_ROTARY_EMBEDDING_SET_KV_INSTANTIATE(E)                                                                 \
  template Status rotary_embedding_set_kv<E>(const std::int64_t*, E*, E*, std::int64_t, const float*, bool, const E*, \
                                             E*, E*, float, float, const std::int64_t*, std::int64_t, std::int64_t,   \
                                             std::int64_t, std::int64_t, std::int64_t, std::int64_t, cudaStream_t,    \
                                             std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t);
KTUNE_ROTARY_EMBEDDING_SET_KV_INSTANTIATE(float)
KTUNE_ROTARY_EMBEDDING_SET_KV_INSTANTIATE(__half)
KTUNE_ROTARY_EMBEDDING_SET_KV_INSTANTIATE(__nv_bfloat16)
#undef KTUNE_ROTARY_EMBEDDING_SET_KV_INSTANTIATE

Status rotary_embedding_set_kv(DType dtype, const std::int64_t* positions, void* query, void* key, std::int64_t head_size,
                               const float* cos_sin_cache, bool is_neox, const void* value, void* k_buffer,
                               void* v_buffer, float k_scale, float v_scale, const std::int64_t* cache_loc,
                               std::int64_t tokens, std::int64_t q_heads, std::int64_t kv_heads, std::int64_t rotary_dim,
                               std::int64_t max_pos, std::int64_t cache_rows, cudaStream_t stream,
                               std::int64_t query_stride, std::int64_t key_stride, std::int64_t value_stride,
                               std::int64_t k_buffer_stride, std::int64_t v_buffer_stride) {
  auto call = [&](auto element) {
    using E = decltype(element);
    return rotary_embedding_set_kv(positions, static_cast<E*>(query), static_cast<E*>(key), head_size, cos_sin_cache,
                                   is_neox, static_cast<const E*>(value), static_cast<E*>(k_buffer),
                                   static_cast<E*>(v_buffer), k_scale, v_scale, cache_loc, tokens, q_heads, kv_heads,
                                   rotary_dim, max_pos, cache_rows, stream, query_stride, key_stride, value_stride,
                                   k_buffer_stride, v_buffer_stride);
  };
  switch (dtype) {
    case DType::f32: return call(float{});
    case DType::f16: return call(__half{});
    case DType::bf16: return call(__nv_bfloat16{});
  }
  return Status::unsupported("rotary_embedding_set_kv: unsupported dtype (fp32, fp16 and bf16 are)");
}

Status rotary_embedding_set_kv_choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out) {
  return ops::rotary_embedding_set_kv::choice(dtype, tokens, width, out);
}

}  // namespace ktune
