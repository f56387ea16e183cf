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
