// kernels/merge_attn_states_lse/merge_attn_states_lse.hpp: host-only declarations of the public API,
// for .cpp files compiled by a host compiler (a PyTorch binding, say). Link ktune::kernels, which
// compiles the definitions (merge_attn_states_lse.cu) for fp32, fp16 and bf16. CUDA code includes
// merge_attn_states_lse.cuh instead and needs nothing but the CUDA toolkit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

namespace ktune {

/// Merges two partial attention results by their log-sum-exps (natural log), per (token, head):
///   m = max(p, s), wp = exp(p - m), ws = exp(s - m),
///   out = (wp * prefix_out + ws * suffix_out) / (wp + ws), out_lse = log(wp + ws) + m,
/// with p = prefix_lse[t, h], s = suffix_lse[t, h]. An LSE of +inf or -inf means "no keys" (counts as
/// -inf); both sides empty give out = 0 and out_lse = -inf. Arithmetic in fp32, results rounded to E.
///
///   out        [tokens, heads, head_size]  E, token stride out_stride (elements; -1: heads * head_size)
///   out_lse    [tokens, heads]             fp32, contiguous; nullptr when not wanted
///   prefix_out [tokens, heads, head_size]  E, token stride prefix_stride (-1: heads * head_size)
///   prefix_lse [tokens, heads]             fp32, contiguous
///   suffix_out [tokens, heads, head_size]  E, token stride suffix_stride (-1: heads * head_size)
///   suffix_lse [tokens, heads]             fp32, contiguous
///
/// Raw device pointers on the current device; heads and head_size contiguous; `out` must not overlap
/// the inputs. Token strides, as in every ktune op: -1 (the default) means contiguous tokens (heads *
/// head_size); any other value is the stride itself, at least heads * head_size when tokens > 1; 0
/// and other negative values are errors, never read as "contiguous" (before issue 11 this op took 0
/// for contiguous: such a call now fails with a message saying to pass -1). Any valid input works:
/// tokens == 0 is a no-op, any head_size >= 1, pointers aligned only to their element. Errors (nothing
/// launched, nothing written): null pointers, negative sizes, strides of 0 or below -1, heads or
/// head_size < 1, strides shorter than heads * head_size, pointers misaligned to their element,
/// offsets overflowing the kernels' indexing. Graph-capturable (no synchronisation, no
/// allocation, device facts cached per device). Deterministic: the same input gives bitwise the same
/// output on every call; tuned variants of different configurations may round differently within the
/// spec's tolerance.
/// \tparam E float, __half or __nv_bfloat16
template <class E>
[[nodiscard]] Status merge_attn_states_lse(E* out, float* out_lse, const E* prefix_out, const float* prefix_lse, const E* suffix_out,
                             const float* suffix_lse, std::int64_t tokens, std::int64_t heads, std::int64_t head_size,
                             cudaStream_t stream = nullptr, std::int64_t out_stride = -1, std::int64_t prefix_stride = -1,
                             std::int64_t suffix_stride = -1);

/// The same with the element type given at run time (for bindings). An unknown dtype is refused
/// before anything else happens.
[[nodiscard]] Status merge_attn_states_lse(DType dtype, void* out, float* out_lse, const void* prefix_out, const float* prefix_lse,
                             const void* suffix_out, const float* suffix_lse, std::int64_t tokens, std::int64_t heads,
                             std::int64_t head_size, cudaStream_t stream = nullptr, std::int64_t out_stride = -1,
                             std::int64_t prefix_stride = -1, std::int64_t suffix_stride = -1);

/// Which variant a call with `tokens` tokens and `width` heads would use on the current device, and
/// whether it is tuned (for this device or architecture) or the general configuration. Inputs that
/// the chosen variant cannot implement (head_size or pointers not aligned to its vector) run the
/// family's unaligned configuration instead.
[[nodiscard]] Status merge_attn_states_lse_choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out);

}  // namespace ktune
