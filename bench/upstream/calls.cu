// bench/upstream/calls.cu: the three calls of each compared op (calls.hpp). Compiled with ktune's own flags:
// S from the op's original.cuh, as the tune's generated original unit compiles it; the tuned dispatch is
// the public API of the ktune::kernels library, declared by the op's host-only <op>.hpp.
#include "calls.hpp"

#include <kernels/fused_add_rmsnorm/fused_add_rmsnorm.hpp>
#include <kernels/fused_add_rmsnorm/harness.hpp>
#include <kernels/fused_add_rmsnorm/original.cuh>
#include <kernels/gelu_and_mul/gelu_and_mul.hpp>
#include <kernels/gelu_and_mul/harness.hpp>
#include <kernels/gelu_and_mul/original.cuh>
#include <kernels/gelu_tanh_and_mul/gelu_tanh_and_mul.hpp>
#include <kernels/gelu_tanh_and_mul/harness.hpp>
#include <kernels/gelu_tanh_and_mul/original.cuh>
#include <kernels/gemma_fused_add_rmsnorm/gemma_fused_add_rmsnorm.hpp>
#include <kernels/gemma_fused_add_rmsnorm/harness.hpp>
#include <kernels/gemma_fused_add_rmsnorm/original.cuh>
#include <kernels/gemma_rmsnorm/gemma_rmsnorm.hpp>
#include <kernels/gemma_rmsnorm/harness.hpp>
#include <kernels/gemma_rmsnorm/original.cuh>
#include <kernels/rmsnorm/harness.hpp>
#include <kernels/rmsnorm/original.cuh>
#include <kernels/rmsnorm/rmsnorm.hpp>
#include <kernels/rotary_embedding/harness.hpp>
#include <kernels/rotary_embedding/original.cuh>
#include <kernels/rotary_embedding/rotary_embedding.hpp>
#include <kernels/silu_and_mul/harness.hpp>
#include <kernels/silu_and_mul/original.cuh>
#include <kernels/silu_and_mul/silu_and_mul.hpp>

#include "flashinfer_launch.hpp"

namespace ktune::upstream {
namespace {

constexpr DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;

// One struct per op: its Args and Harness, sgl-kernel's launch, S and the public API, each on an Args<E>.
// The upstream calls pass what sgl-kernel's Python wrappers pass by default: enable_pdl =
// is_arch_support_pdl() for the norms, the tensors' own strides, eps as given.

struct Rmsnorm {
  template <class E> using Args = ops::rmsnorm::Args<E>;
  using Harness = ops::rmsnorm::Harness;
  template <class E> static cudaError_t sgl_kernel(const Args<E>& a, cudaStream_t s) {
    return upstream::rmsnorm(dtype_v<E>, a.output, a.input, a.weight, a.tokens, a.h, a.input_stride, a.output_stride,
                             a.eps, is_arch_support_pdl(), s);
  }
  template <class E> static Status original(const Args<E>& a, cudaStream_t s) {
    return ops::rmsnorm::original::run(a, s);
  }
  template <class E> static Status tuned(const Args<E>& a, cudaStream_t s) {
    return ktune::rmsnorm(a.output, a.input, a.weight, a.tokens, a.h, a.eps, s, a.output_stride, a.input_stride);
  }
};

struct GemmaRmsnorm {
  template <class E> using Args = ops::gemma_rmsnorm::Args<E>;
  using Harness = ops::gemma_rmsnorm::Harness;
  template <class E> static cudaError_t sgl_kernel(const Args<E>& a, cudaStream_t s) {
    return upstream::gemma_rmsnorm(dtype_v<E>, a.output, a.input, a.weight, a.tokens, a.h, a.input_stride,
                                   a.output_stride, a.eps, is_arch_support_pdl(), s);
  }
  template <class E> static Status original(const Args<E>& a, cudaStream_t s) {
    return ops::gemma_rmsnorm::original::run(a, s);
  }
  template <class E> static Status tuned(const Args<E>& a, cudaStream_t s) {
    return ktune::gemma_rmsnorm(a.output, a.input, a.weight, a.tokens, a.h, a.eps, s, a.output_stride, a.input_stride);
  }
};

struct FusedAddRmsnorm {
  template <class E> using Args = ops::fused_add_rmsnorm::Args<E>;
  using Harness = ops::fused_add_rmsnorm::Harness;
  template <class E> static cudaError_t sgl_kernel(const Args<E>& a, cudaStream_t s) {
    return upstream::fused_add_rmsnorm(dtype_v<E>, a.input, a.residual, a.weight, a.tokens, a.h, a.input_stride,
                                       a.residual_stride, a.eps, is_arch_support_pdl(), s);
  }
  template <class E> static Status original(const Args<E>& a, cudaStream_t s) {
    return ops::fused_add_rmsnorm::original::run(a, s);
  }
  template <class E> static Status tuned(const Args<E>& a, cudaStream_t s) {
    return ktune::fused_add_rmsnorm(a.input, a.residual, a.weight, a.tokens, a.h, a.eps, s, a.input_stride,
                                    a.residual_stride);
  }
};

struct GemmaFusedAddRmsnorm {
  template <class E> using Args = ops::gemma_fused_add_rmsnorm::Args<E>;
  using Harness = ops::gemma_fused_add_rmsnorm::Harness;
  template <class E> static cudaError_t sgl_kernel(const Args<E>& a, cudaStream_t s) {
    return upstream::gemma_fused_add_rmsnorm(dtype_v<E>, a.input, a.residual, a.weight, a.tokens, a.h, a.input_stride,
                                             a.residual_stride, a.eps, is_arch_support_pdl(), s);
  }
  template <class E> static Status original(const Args<E>& a, cudaStream_t s) {
    return ops::gemma_fused_add_rmsnorm::original::run(a, s);
  }
  template <class E> static Status tuned(const Args<E>& a, cudaStream_t s) {
    return ktune::gemma_fused_add_rmsnorm(a.input, a.residual, a.weight, a.tokens, a.h, a.eps, s, a.input_stride,
                                          a.residual_stride);
  }
};

// The activations: sgl-kernel takes contiguous rows only (the harness's), d as an int.
struct SiluAndMul {
  template <class E> using Args = ops::silu_and_mul::Args<E>;
  using Harness = ops::silu_and_mul::Harness;
  template <class E> static cudaError_t sgl_kernel(const Args<E>& a, cudaStream_t s) {
    return upstream::silu_and_mul(dtype_v<E>, a.out, a.in, a.tokens, static_cast<int>(a.d), s);
  }
  template <class E> static Status original(const Args<E>& a, cudaStream_t s) {
    return ops::silu_and_mul::original::run(a, s);
  }
  template <class E> static Status tuned(const Args<E>& a, cudaStream_t s) {
    return ktune::silu_and_mul(a.out, a.in, a.tokens, a.d, s, a.out_stride, a.in_stride);
  }
};

struct GeluAndMul {
  template <class E> using Args = ops::gelu_and_mul::Args<E>;
  using Harness = ops::gelu_and_mul::Harness;
  template <class E> static cudaError_t sgl_kernel(const Args<E>& a, cudaStream_t s) {
    return upstream::gelu_and_mul(dtype_v<E>, a.out, a.in, a.tokens, static_cast<int>(a.d), s);
  }
  template <class E> static Status original(const Args<E>& a, cudaStream_t s) {
    return ops::gelu_and_mul::original::run(a, s);
  }
  template <class E> static Status tuned(const Args<E>& a, cudaStream_t s) {
    return ktune::gelu_and_mul(a.out, a.in, a.tokens, a.d, s, a.out_stride, a.in_stride);
  }
};

struct GeluTanhAndMul {
  template <class E> using Args = ops::gelu_tanh_and_mul::Args<E>;
  using Harness = ops::gelu_tanh_and_mul::Harness;
  template <class E> static cudaError_t sgl_kernel(const Args<E>& a, cudaStream_t s) {
    return upstream::gelu_tanh_and_mul(dtype_v<E>, a.out, a.in, a.tokens, static_cast<int>(a.d), s);
  }
  template <class E> static Status original(const Args<E>& a, cudaStream_t s) {
    return ops::gelu_tanh_and_mul::original::run(a, s);
  }
  template <class E> static Status tuned(const Args<E>& a, cudaStream_t s) {
    return ktune::gelu_tanh_and_mul(a.out, a.in, a.tokens, a.d, s, a.out_stride, a.in_stride);
  }
};

// sgl_kernel views query [tokens, q_heads * head_size] as [tokens, q_heads, head_size]: token stride as
// given, head stride head_size; rotary_dim is the cache's width.
struct RotaryEmbedding {
  template <class E> using Args = ops::rotary_embedding::Args<E>;
  using Harness = ops::rotary_embedding::Harness;
  template <class E> static cudaError_t sgl_kernel(const Args<E>& a, cudaStream_t s) {
    const auto d = static_cast<std::size_t>(a.head_size);
    return upstream::apply_rope_pos_ids_cos_sin_cache(dtype_v<E>, a.query, a.key, a.cos_sin_cache, a.positions,
                                                      a.tokens, a.q_heads, a.kv_heads, a.rotary_dim, a.head_size,
                                                      a.query_stride, d, a.key_stride, d, !a.is_neox, s);
  }
  template <class E> static Status original(const Args<E>& a, cudaStream_t s) {
    return ops::rotary_embedding::original::run(a, s);
  }
  template <class E> static Status tuned(const Args<E>& a, cudaStream_t s) {
    return ktune::rotary_embedding(a.positions, a.query, a.key, a.head_size, a.cos_sin_cache, a.is_neox, a.tokens,
                                   a.q_heads, a.kv_heads, a.rotary_dim, a.max_pos, s, a.query_stride, a.key_stride);
  }
};

template <class Op, class E> const typename Op::template Args<E>& args_of(const void* p) {
  return *static_cast<const typename Op::template Args<E>*>(p);
}

template <class Op>
OpCalls make(const char* op, std::vector<DType> dtypes, const char* what_upstream_runs,
             decltype(OpCalls::choice) choice) {
  OpCalls c;
  c.op = op;
  c.dtypes = std::move(dtypes);
  c.upstream = what_upstream_runs;
  c.harness = std::make_shared<const typename Op::Harness>();
  c.choice = choice;
  c.calls[upstream_call] = [](DType t, const void* a, cudaStream_t s) {
    return visit_dtype(t, [&](auto e) {
      return Status::from_cuda(Op::sgl_kernel(args_of<Op, decltype(e)>(a), s), "the upstream (sgl-kernel) launch");
    });
  };
  c.calls[original_call] = [](DType t, const void* a, cudaStream_t s) {
    return visit_dtype(t, [&](auto e) { return Op::original(args_of<Op, decltype(e)>(a), s); });
  };
  c.calls[tuned_call] = [](DType t, const void* a, cudaStream_t s) {
    return visit_dtype(t, [&](auto e) { return Op::tuned(args_of<Op, decltype(e)>(a), s); });
  };
  return c;
}

}  // namespace

const std::vector<OpCalls>& compared_ops() {
  // The dtypes are those sgl-kernel's bindings dispatch (flashinfer_launch.hpp); norm.cu's are fp16 and bf16.
  static const std::vector<OpCalls> ops = [] {
    std::vector<OpCalls> v;
    v.push_back(make<Rmsnorm>("rmsnorm", {f16, bf16},
                              "flashinfer::norm::RMSNorm (FlashInfer csrc/norm.cu rmsnorm), enable_pdl on sm_90",
                              &ktune::rmsnorm_choice));
    v.push_back(make<GemmaRmsnorm>(
        "gemma_rmsnorm", {f16, bf16},
        "flashinfer::norm::GemmaRMSNorm (FlashInfer csrc/norm.cu gemma_rmsnorm), enable_pdl on sm_90",
        &ktune::gemma_rmsnorm_choice));
    v.push_back(make<FusedAddRmsnorm>(
        "fused_add_rmsnorm", {f32, f16, bf16},
        "flashinfer::norm::FusedAddRMSNorm (sgl-kernel sgl_fused_add_rmsnorm), enable_pdl on sm_90",
        &ktune::fused_add_rmsnorm_choice));
    v.push_back(make<GemmaFusedAddRmsnorm>(
        "gemma_fused_add_rmsnorm", {f16, bf16},
        "flashinfer::norm::GemmaFusedAddRMSNorm (FlashInfer csrc/norm.cu gemma_fused_add_rmsnorm), enable_pdl on sm_90",
        &ktune::gemma_fused_add_rmsnorm_choice));
    v.push_back(
        make<SiluAndMul>("silu_and_mul", {f32, f16, bf16},
                         "flashinfer::activation::act_and_mul_kernel<T, silu> (sgl-kernel activation.cu), no PDL",
                         &ktune::silu_and_mul_choice));
    v.push_back(
        make<GeluAndMul>("gelu_and_mul", {f32, f16, bf16},
                         "flashinfer::activation::act_and_mul_kernel<T, gelu> (sgl-kernel activation.cu), no PDL",
                         &ktune::gelu_and_mul_choice));
    v.push_back(make<GeluTanhAndMul>(
        "gelu_tanh_and_mul", {f32, f16, bf16},
        "flashinfer::activation::act_and_mul_kernel<T, gelu_tanh> (sgl-kernel activation.cu), no PDL",
        &ktune::gelu_tanh_and_mul_choice));
    v.push_back(make<RotaryEmbedding>(
        "rotary_embedding", {f16, bf16},
        "flashinfer::BatchQKApplyRotaryPosIdsCosSinCache<T, int64_t> (sgl-kernel rope.cu), in place, no PDL",
        &ktune::rotary_embedding_choice));
    return v;
  }();
  return ops;
}

}  // namespace ktune::upstream
