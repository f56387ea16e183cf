// Derived by ktune 0.1.0 (`ktune derive`, `ktune agent`) for op add_bias from S (add_bias.cu,
// 0xbac3b0043287fa13) and spec.json (0xef37ef904008cb27).
// Do not edit: change S or spec.json and run `ktune derive` (or `ktune agent`) again.
//
// kernels/add_bias/original.cuh: the original kernel S (add_bias.cu), verbatim inside
// ktune::ops::add_bias::original::source, and the glue ktune reaches it through. S's leading block of
// #include lines is hoisted above the namespace. S is opaque: ktune calls only its launcher
// (source::launch<E>), so there is no kernel pointer for the device check, which the benchmark skips for S.
//
// Every translation unit of the kernel folder (each variant shard, the public API) includes this file, so S
// sits in an unnamed namespace: its non-template functions, kernels and __device__ variables get internal
// linkage and are never defined twice at link time.
#pragma once

#include <cuda_runtime.h>

#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "args.hpp"

// ---- add_bias.cu: its leading block ----
// add_bias: the original kernel S of examples/03_your_own_kernel, in the form `ktune derive` and
// `ktune agent` take (generator/derive/README.md): plain CUDA plus one launcher.
//
//   x    [tokens, d]  the activations
//   bias [d]          one value per column
//   out  [tokens, d]  out[t, i] = x[t, i] + bias[i], added in fp32, rounded once to T
//
// Written as a first version usually is: one block of 256 threads per row, one element per thread and
// iteration. It is correct for every size and alignment, and it is the reference every variant of the
// tunable family is checked against.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>


namespace ktune::ops::add_bias::original {
namespace source {
namespace {

// ---- add_bias.cu from line 17 ----
template <typename T>
__device__ __forceinline__ float add_bias_to_f32(T v) {
  return static_cast<float>(v);
}
template <typename T>
__device__ __forceinline__ T add_bias_from_f32(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 add_bias_from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half add_bias_from_f32<__half>(float v) {
  return __float2half_rn(v);
}

template <typename T>
__global__ void add_bias_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ out, int64_t d) {
  const int64_t row = blockIdx.x;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    out[row * d + i] = add_bias_from_f32<T>(add_bias_to_f32(x[row * d + i]) + add_bias_to_f32(bias[i]));
}

template <typename T>
cudaError_t launch(const T* x, const T* bias, T* out, int64_t tokens, int64_t d, cudaStream_t stream) {
  if (tokens > 0x7fffffff) return cudaErrorInvalidValue;  // one block per row: grid.x is at most 2^31 - 1
  add_bias_kernel<T><<<static_cast<unsigned>(tokens), 256, 0, stream>>>(x, bias, out, d);
  return cudaGetLastError();
}
// ---- end of add_bias.cu ----

}  // namespace
}  // namespace source

/// What S accepts: every call validate() accepts (the documented form of S: any valid contiguous call).
template <class E>
ktune::Status can_implement(const Args<E>& a) {
  return validate(a);
}

/// validate(), then S's launcher on `stream`; an empty call succeeds without launching. A launcher that
/// returns an error gives a Status carrying that cudaError_t.
template <class E>
ktune::Status run(const Args<E>& a, cudaStream_t stream) {
  KTUNE_TRY(validate(a));
  if (is_empty(a)) return ktune::Status::success();
  const cudaError_t e = source::launch<E>(a.x, a.bias, a.out, a.tokens, a.d, stream);
  return ktune::Status::from_cuda(e, "add_bias original: S's launcher returned an error");
}

/// S's kernels are behind its launcher: no kernel pointer (func = nullptr), so no device check.
template <class E>
ktune::KernelResources resources(const Args<E>&) {
  return ktune::KernelResources{};
}

}  // namespace ktune::ops::add_bias::original
