// kernels/common/norm_rows/flashinfer.cuh: the device code of S for rmsnorm, gemma_rmsnorm and
// gemma_fused_add_rmsnorm: FlashInfer's RMSNormKernel and FusedAddRMSNormKernel as sgl-kernel builds them
// for sm_90. Each op's original.cuh holds its launcher (geometry, checks) and names where it deviates.
//
// Followed: FlashInfer include/flashinfer/norm.cuh at bc29697ba20b7e6bdb728ded98f04788e16ee021, the commit
// sgl-kernel's CMakeLists.txt fetches (sglang 00390b8633f913f53d98d3acdbc1ab8f0d62da1b); the kernels' text
// read at FlashInfer 09928cf3ba8de21e42641b098ab19de724d24d3f, whose RMSNormKernel and FusedAddRMSNormKernel
// take the same arguments and do the same steps. Kept: one block of (32, num_warps) threads per row,
// vectors of VecSize = gcd(16 / sizeof(T), d) elements, rounds of one vector per thread, the warp-shuffle
// then warp-0 reduction, the weight used as (weight_bias + w) with weight_bias a kernel argument (0 for
// rmsnorm, 1 for the Gemma ops), griddepcontrol.wait before the first load and launch_dependents after the
// last store, 32-bit offsets. sgl-kernel's sm_90 library is built with -use_fast_math: its two
// approximations that change results here are written out (rsqrt.approx.ftz, FlashInfer's math::rsqrt,
// and the division by d as div.full.ftz); flushing denormals in the other fp32 operations changes nothing
// for the normal values a row's sums and products take.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <ktune/dtype.hpp>
#include <ktune/intrinsics.cuh>

#include "common.cuh"  // detail::store_floats, load_floats

namespace ktune::ops::norm_rows::flashinfer {

/// FlashInfer's math::rsqrt.
__device__ __forceinline__ float rsqrt_approx(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
/// x / y as -use_fast_math (-prec-div=false, -ftz=true) compiles it.
__device__ __forceinline__ float div_fast(float x, float y) {
  float z;
  asm("div.full.ftz.f32 %0, %1, %2;" : "=f"(z) : "f"(x), "f"(y));
  return z;
}

/// The block's sum of sum_sq: a warp butterfly, then warp 0 over the warp sums (in smem[0..num_warps)),
/// the result in smem[0].
__device__ __forceinline__ float block_sum(float sum_sq, float* smem) {
  const std::uint32_t tx = threadIdx.x, ty = threadIdx.y, num_warps = blockDim.y;
#pragma unroll
  for (std::uint32_t offset = 16; offset > 0; offset /= 2) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  smem[ty] = sum_sq;
  __syncthreads();
  if (ty == 0) {
    sum_sq = tx < num_warps ? smem[tx] : 0.f;
#pragma unroll
    for (std::uint32_t offset = 16; offset > 0; offset /= 2) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
    smem[0] = sum_sq;
  }
  __syncthreads();
  return smem[0];
}

/// RMSNormKernel: output[bx] = input[bx] * rsqrt(mean(input[bx]^2) + eps) * (weight_bias + weight).
/// \tparam VecSize elements per vector access
/// \tparam T       element type
/// input [batch, d] (row stride stride_input), output [batch, d] (stride_output), weight [d].
/// Block (32, num_warps); dynamic shared memory: num_warps floats.
template <std::uint32_t VecSize, class T>
__global__ void rms_norm_kernel(const T* __restrict__ input, const T* __restrict__ weight, T* __restrict__ output,
                                const std::uint32_t d, const std::uint32_t stride_input,
                                const std::uint32_t stride_output, float weight_bias, float eps) {
  using Vec = AlignedVector<T, VecSize>;
  const std::uint32_t bx = blockIdx.x;
  const std::uint32_t thread_id = threadIdx.x + threadIdx.y * 32;
  const std::uint32_t num_threads = blockDim.y * 32;
  const std::uint32_t rounds = (d + VecSize * num_threads - 1) / (VecSize * num_threads);
  extern __shared__ float smem[];

  pdl_wait();
  float sum_sq = 0.f;
  for (std::uint32_t i = 0; i < rounds; i++) {
    Vec in;
#pragma unroll
    for (std::uint32_t j = 0; j < VecSize; j++) in.v[j] = from_float<T>(0.f);
    const std::uint32_t offset = (i * num_threads + thread_id) * VecSize;
    if (offset < d) in = *reinterpret_cast<const Vec*>(input + bx * stride_input + offset);
#pragma unroll
    for (std::uint32_t j = 0; j < VecSize; j++) sum_sq += to_float(in.v[j]) * to_float(in.v[j]);
  }
  const float rms_rcp = rsqrt_approx(div_fast(block_sum(sum_sq, smem), float(d)) + eps);

  for (std::uint32_t i = 0; i < rounds; i++) {
    const std::uint32_t offset = (i * num_threads + thread_id) * VecSize;
    if (offset < d) {
      const Vec in = *reinterpret_cast<const Vec*>(input + bx * stride_input + offset);
      Vec w;
#pragma unroll
      for (std::uint32_t j = 0; j < VecSize; j++) w.v[j] = from_float<T>(0.f);
      if (weight != nullptr) w = *reinterpret_cast<const Vec*>(weight + offset);
      Vec out;
#pragma unroll
      for (std::uint32_t j = 0; j < VecSize; j++)
        out.v[j] = from_float<T>(to_float(in.v[j]) * rms_rcp * (weight_bias + to_float(w.v[j])));
      *reinterpret_cast<Vec*>(output + bx * stride_output + offset) = out;
    }
  }
  pdl_launch_dependents();
}

/// FusedAddRMSNormKernel: x = input[bx] + residual[bx] (fp32); residual[bx] <- x; input[bx] <- x *
/// rsqrt(mean(x^2) + eps) * (weight_bias + weight), x staged in shared memory as fp32.
/// \tparam VecSize elements per vector access
/// \tparam T       element type
/// input [batch, d] (stride_input), residual [batch, d] (stride_residual), weight [d].
/// Block (32, num_warps); dynamic shared memory: (ceil(num_warps / 4) * 4 + d) floats.
template <std::uint32_t VecSize, class T>
__global__ void fused_add_rms_norm_kernel(T* __restrict__ input, T* __restrict__ residual,
                                          const T* __restrict__ weight, const std::uint32_t d,
                                          const std::uint32_t stride_input, const std::uint32_t stride_residual,
                                          float weight_bias, float eps) {
  using Vec = AlignedVector<T, VecSize>;
  const std::uint32_t bx = blockIdx.x;
  const std::uint32_t thread_id = threadIdx.x + threadIdx.y * 32;
  const std::uint32_t num_warps = blockDim.y;
  const std::uint32_t num_threads = num_warps * 32;
  const std::uint32_t rounds = (d + VecSize * num_threads - 1) / (VecSize * num_threads);
  extern __shared__ float smem[];
  float* smem_x = smem + (num_warps + 3) / 4 * 4;

  pdl_wait();
  float sum_sq = 0.f;
  for (std::uint32_t i = 0; i < rounds; i++) {
    Vec in, res;
#pragma unroll
    for (std::uint32_t j = 0; j < VecSize; j++) {
      in.v[j] = from_float<T>(0.f);
      res.v[j] = from_float<T>(0.f);
    }
    const std::uint32_t offset = (i * num_threads + thread_id) * VecSize;
    if (offset < d) {
      in = *reinterpret_cast<const Vec*>(input + bx * stride_input + offset);
      res = *reinterpret_cast<const Vec*>(residual + bx * stride_residual + offset);
    }
    float x[VecSize];
#pragma unroll
    for (std::uint32_t j = 0; j < VecSize; j++) {
      x[j] = to_float(in.v[j]) + to_float(res.v[j]);
      sum_sq += x[j] * x[j];
      res.v[j] = from_float<T>(x[j]);
    }
    if (offset < d) {
      *reinterpret_cast<Vec*>(residual + bx * stride_residual + offset) = res;
      detail::store_floats(smem_x + offset, x);
    }
  }
  const float rms_rcp = rsqrt_approx(div_fast(block_sum(sum_sq, smem), float(d)) + eps);

  for (std::uint32_t i = 0; i < rounds; i++) {
    const std::uint32_t offset = (i * num_threads + thread_id) * VecSize;
    if (offset < d) {
      Vec w;
#pragma unroll
      for (std::uint32_t j = 0; j < VecSize; j++) w.v[j] = from_float<T>(0.f);
      if (weight != nullptr) w = *reinterpret_cast<const Vec*>(weight + offset);
      float x[VecSize];
      detail::load_floats(x, smem_x + offset);
      Vec out;
#pragma unroll
      for (std::uint32_t j = 0; j < VecSize; j++) out.v[j] = from_float<T>(x[j] * rms_rcp * (weight_bias + to_float(w.v[j])));
      *reinterpret_cast<Vec*>(input + bx * stride_input + offset) = out;
    }
  }
  pdl_launch_dependents();
}

/// S's launch geometry (FlashInfer's RMSNorm / FusedAddRMSNorm launchers): vec = gcd(16 / sizeof(T), d),
/// min(1024, d / vec) threads in whole warps, and the dynamic shared memory of each kernel.
struct Geometry {
  std::uint32_t vec = 1;
  std::uint32_t num_warps = 0;
  std::size_t smem_rms = 0;        ///< rms_norm_kernel: the warp sums
  std::size_t smem_fused_add = 0;  ///< fused_add_rms_norm_kernel: the warp sums (padded to 4) and x
  Geometry(std::int64_t h, std::size_t element_bytes) {
    const auto d = static_cast<std::uint32_t>(h);
    std::uint32_t a = static_cast<std::uint32_t>(16 / element_bytes), b = d;
    while (b) {
      const std::uint32_t t = a % b;
      a = b;
      b = t;
    }
    vec = a;
    const std::uint32_t block_size = d / vec < 1024u ? d / vec : 1024u;
    num_warps = (block_size + 31) / 32;
    smem_rms = num_warps * sizeof(float);
    smem_fused_add = ((num_warps + 3) / 4 * 4 + d) * sizeof(float);
  }
};

/// Calls f(std::integral_constant<std::uint32_t, V>{}) with V = vec, a Geometry's vector size for element
/// type T (FlashInfer's DISPATCH_ALIGNED_VEC_SIZE).
template <class T, class F>
auto with_vec(std::uint32_t vec, F&& f) {
  if constexpr (16 / sizeof(T) >= 8) {
    if (vec == 8) return f(std::integral_constant<std::uint32_t, 8>{});
  }
  if (vec == 4) return f(std::integral_constant<std::uint32_t, 4>{});
  if (vec == 2) return f(std::integral_constant<std::uint32_t, 2>{});
  return f(std::integral_constant<std::uint32_t, 1>{});
}

}  // namespace ktune::ops::norm_rows::flashinfer
