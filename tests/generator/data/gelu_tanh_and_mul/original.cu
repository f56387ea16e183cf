// gelu_tanh_and_mul as SGLang runs it (sgl-kernel's gelu_tanh_and_mul launches FlashInfer's
// act_and_mul kernel with the tanh approximation of GELU), written for ktune's generator tests in the
// form `ktune agent` takes (generator/derive/README.md): plain CUDA plus one launcher.
//
//   in  [tokens, 2*d]: x = in[t, 0:d], y = in[t, d:2d]
//   out [tokens, d]:   out[t, i] = gelu_tanh(x[t, i]) * y[t, i]
//   gelu_tanh(x) = 0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3))), in fp32, rounded once to T.
//
// One block per token, min(1024, d / pack) threads striding over the row with 16-byte vectors of x and
// y, then a scalar loop over the last d % (threads * pack) elements (as upstream, it recomputes the part
// of those the vector loop already wrote). Upstream needs d to be a multiple of the pack and 16-byte
// aligned pointers; this launcher takes every valid call by running the same kernel with one element
// per vector when they are not (every spec shape takes the 16-byte path).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

template <typename T>
__device__ __forceinline__ float to_f32(T v);
template <>
__device__ __forceinline__ float to_f32<float>(float v) { return v; }
template <>
__device__ __forceinline__ float to_f32<__half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

__device__ __forceinline__ float gelu_tanh(float x) {
  const float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

/// grid.x = tokens; block.x = min(1024, d / VecSize).
template <typename T, int VecSize>
__global__ void act_and_mul_kernel(T* __restrict__ out, const T* __restrict__ input, const int d) {
  using vec_t = Pack<T, VecSize>;
  const int64_t token_idx = blockIdx.x;
  const int64_t thread_idx = threadIdx.x;
  const int64_t stride = blockDim.x;
  const int64_t offset = token_idx * 2 * d;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif

#pragma unroll 1
  for (uint32_t idx = thread_idx; idx < d / VecSize; idx += stride) {
    const vec_t x = *reinterpret_cast<const vec_t*>(input + offset + idx * VecSize);
    const vec_t y = *reinterpret_cast<const vec_t*>(input + offset + d + idx * VecSize);
    vec_t o;
#pragma unroll
    for (int i = 0; i < VecSize; ++i) o.v[i] = from_f32<T>(gelu_tanh(to_f32(x.v[i])) * to_f32(y.v[i]));
    *reinterpret_cast<vec_t*>(out + token_idx * d + idx * VecSize) = o;
  }

  const int64_t remaining_offset = d - d % (stride * VecSize);
#pragma unroll 1
  for (int64_t idx = thread_idx; idx < d % (stride * VecSize); idx += stride) {
    const float x = to_f32(input[offset + remaining_offset + idx]);
    const float y = to_f32(input[offset + remaining_offset + d + idx]);
    out[token_idx * d + remaining_offset + idx] = from_f32<T>(gelu_tanh(x) * y);
  }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <typename T>
cudaError_t launch(const T* in, T* out, int64_t tokens, int64_t d, cudaStream_t stream) {
  if (tokens == 0 || d == 0) return cudaSuccess;
  constexpr int vec_size = 16 / sizeof(T);
  const bool aligned = d % vec_size == 0 && reinterpret_cast<uintptr_t>(in) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(out) % 16 == 0;
  const dim3 grid(static_cast<unsigned>(tokens));
  if (aligned) {
    const dim3 block(static_cast<unsigned>(std::min<int64_t>(d / vec_size, 1024)));
    act_and_mul_kernel<T, vec_size><<<grid, block, 0, stream>>>(out, in, static_cast<int>(d));
  } else {
    const dim3 block(static_cast<unsigned>(std::min<int64_t>(d, 1024)));
    act_and_mul_kernel<T, 1><<<grid, block, 0, stream>>>(out, in, static_cast<int>(d));
  }
  return cudaGetLastError();
}
