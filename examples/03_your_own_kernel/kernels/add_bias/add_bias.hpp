// Derived by ktune 0.1.0 (`ktune derive`, `ktune agent`) for op add_bias from S (add_bias.cu,
// 0xbac3b0043287fa13) and spec.json (0xef37ef904008cb27).
// Do not edit: change S or spec.json and run `ktune derive` (or `ktune agent`) again.
//
// kernels/add_bias/add_bias.hpp: host-only declarations of the public API, for .cpp files compiled by a host
// compiler (a PyTorch binding, say). Link ktune::kernels, which compiles the definitions (add_bias.cu) for
// fp32, fp16 and bf16. CUDA code includes add_bias.cuh instead and needs nothing but the CUDA toolkit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

namespace ktune {

/// out[t, i] = x[t, i] + bias[i]; added in fp32, rounded once to the storage dtype
///
///   x     [tokens, d]  E, read
///   bias  [d]          E, read
///   out   [tokens, d]  E, written
///
/// Raw device pointers on the current device; every tensor contiguous (row-major, no strides), as
/// the original kernel S takes them. A call where some tensor has no elements (tokens or d is 0) is
/// a successful no-op. Errors (nothing launched, nothing written): null pointers, negative sizes,
/// pointers misaligned to their element, tensors too large for 64-bit byte offsets. Calls the tuned
/// variant cannot implement (alignment, sizes) run the family's unaligned configuration. Written
/// tensors must not overlap other tensors. Graph-capturable (no synchronisation, no allocation,
/// device facts cached per device).
/// \tparam E float, __half or __nv_bfloat16
template <class E>
[[nodiscard]] Status add_bias(const E* x, const E* bias, E* out, std::int64_t tokens, std::int64_t d,
                              cudaStream_t stream = nullptr);

/// The same with the element type given at run time (for bindings). An unknown dtype is refused
/// before anything else happens.
[[nodiscard]] Status add_bias(DType dtype, const void* x, const void* bias, void* out, std::int64_t tokens,
                              std::int64_t d, cudaStream_t stream = nullptr);

/// Which variant a call would use on the current device, given its `tokens` (the spec's tokens_dim,
/// tokens) and `width` (its width_dim, d), and whether it is tuned (for this device or
/// architecture) or the general configuration. Calls that variant cannot implement (alignment,
/// sizes) run the family's unaligned configuration instead.
[[nodiscard]] Status add_bias_choice(DType dtype, std::int64_t tokens, std::int64_t width, TunedChoice& out);

}  // namespace ktune
