// rms_norm, the red-team suite's S (docs/judge.md): a plain RMSNorm as a serving engine writes it, in the
// form `ktune agent` takes (generator/derive/README.md). ktune does not ship this op; the suite's
// adversarial families (answers/) are judged against it.
//
//   in     [tokens, d]  T
//   weight [d]          T
//   out    [tokens, d]  T: out[t, i] = in[t, i] * rsqrt(mean_i(in[t, :]^2) + 1e-6) * weight[i], in fp32
//
// One block per row (rows on grid.x, so any number of rows), 256 threads striding over the row with
// scalar loads (any d, any element-aligned pointer), a warp-shuffle block reduction.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

template <typename T>
__device__ __forceinline__ float to_f32(T v) { return static_cast<float>(v); }
template <>
__device__ __forceinline__ float to_f32<__half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_f32(float v) { return static_cast<T>(v); }
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads) rms_norm_kernel(const T* __restrict__ in, const T* __restrict__ weight,
                                                           T* __restrict__ out, int64_t d) {
  __shared__ float partial[kThreads / 32];
  const T* x = in + static_cast<int64_t>(blockIdx.x) * d;
  T* y = out + static_cast<int64_t>(blockIdx.x) * d;
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < d; i += kThreads) {
    const float v = to_f32(x[i]);
    ss += v * v;
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  ss = threadIdx.x % 32 < kThreads / 32 ? partial[threadIdx.x % 32] : 0.f;
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float scale = rsqrtf(ss / static_cast<float>(d) + 1e-6f);
  for (int64_t i = threadIdx.x; i < d; i += kThreads) y[i] = from_f32<T>(to_f32(x[i]) * scale * to_f32(weight[i]));
}

template <typename T>
cudaError_t launch(const T* in, const T* weight, T* out, int64_t tokens, int64_t d, cudaStream_t stream) {
  rms_norm_kernel<T><<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(in, weight, out, d);
  return cudaGetLastError();
}
