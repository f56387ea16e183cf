// kernels/rotary_embedding/rotary_embedding.cu: the public API compiled for fp32, fp16 and bf16, plus
// the runtime-dtype entry and the choice query, for ktune::kernels (host-compiler users).
#include "rotary_embedding.cuh"

namespace ktune {

#define KTUNE_ROTARY_EMBEDDING_INSTANTIATE(E)                                                                  \
  template Status rotary_embedding<E>(const std::int64_t*, E*, E*, std::int64_t, const float*, bool, std::int64_t, \
                                      std::int64_t, std::int64_t, std::int64_t, std::int64_t, cudaStream_t,         \
                                      std::int64_t, std::int64_t);
KTUNE_ROTARY_EMBEDDING_INSTANTIATE(float)
KTUNE_ROTARY_EMBEDDING_INSTANTIATE(__half)
KTUNE_ROTARY_EMBEDDING_INSTANTIATE(__nv_bfloat16)
#undef KTUNE_ROTARY_EMBEDDING_INSTANTIATE

Status rotary_embedding(DType dtype, const std::int64_t* positions, void* query, void* key, std::int64_t head_size,
                        const float* cos_sin_cache, bool is_neox, std::int64_t tokens, std::int64_t q_heads,
                        std::int64_t kv_heads, std::int64_t rotary_dim, std::int64_t max_pos, cudaStream_t stream,
                        std::int64_t query_stride, std::int64_t key_stride) {
  auto call = [&](auto element) {
    using E = decltype(element);
    return rotary_embedding(positions, static_cast<E*>(query), static_cast<E*>(key), head_size, cos_sin_cache, is_neox,
                            tokens, q_heads, kv_heads, rotary_dim, max_pos, stream, query_stride, key_stride);
  };
  switch (dtype) {
    case DType::f32: return call(float{});
    case DType::f16: return call(__half{});
    case DType::bf16: return call(__nv_bfloat16{});
  }
  return Status::unsupported("rotary_embedding: unsupported dtype (fp32, fp16 and bf16 are)");
}

Status rotary_embedding_choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out) {
  return ops::rotary_embedding::choice(dtype, tokens, width, out);
}

}  // namespace ktune
