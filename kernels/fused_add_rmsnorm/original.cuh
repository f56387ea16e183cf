// kernels/fused_add_rmsnorm/original.cuh: the original kernel S, as SGLang runs it.
//
// SGLang's sgl_kernel `fused_add_rmsnorm` calls FlashInfer's norm::FusedAddRMSNorm; this is that
// kernel with its structure kept: one block per row; 16-byte vectors (vec = 16 / sizeof(E)); a block
// of min(1024, h / vec) threads rounded up to whole warps, looping over the row in rounds of one
// vector per thread; x staged in shared memory as fp32 (so the normalisation uses the unrounded x,
// not the rounded residual as vLLM's re-read does); a warp-shuffle + shared-memory reduction whose
// second stage runs in warp 0. 32-bit indexing, as in FlashInfer. It accepts what such kernels
// accept: 16-byte-aligned pointers and strides, h a multiple of the vector, row offsets within 2^32
// elements; the public API never routes anything else to it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
#include <ktune/intrinsics.cuh>
#include <ktune/launch.hpp>
#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "../common/norm_rows/common.cuh"  // norm_rows::detail::store_floats, load_floats
#include "args.hpp"

namespace ktune::ops::fused_add_rmsnorm {
namespace original {

/// FlashInfer's math::rsqrt.
__device__ __forceinline__ float rsqrt_approx(float x) {
  float y;
  asm volatile("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// \tparam VecSize elements per 16-byte vector
/// \tparam T       element type
/// input [batch, d] (row stride stride_input), residual [batch, d] (stride_residual), weight [d].
/// Block (32, num_warps); dynamic shared memory: (ceil(num_warps / 4) * 4 + d) floats.
template <std::uint32_t VecSize, class T>
__global__ void fused_add_rmsnorm_kernel(T* __restrict__ input, T* __restrict__ residual,
                                         const T* __restrict__ weight, const std::uint32_t d,
                                         const std::uint32_t stride_input, const std::uint32_t stride_residual,
                                         float eps) {
  using Vec = AlignedVector<T, VecSize>;
  const std::uint32_t bx = blockIdx.x;
  const std::uint32_t tx = threadIdx.x, ty = threadIdx.y;
  constexpr std::uint32_t warp_size = 32;
  const std::uint32_t num_warps = blockDim.y;
  const std::uint32_t thread_id = tx + ty * warp_size;
  const std::uint32_t num_threads = num_warps * warp_size;
  const std::uint32_t rounds = (d + VecSize * num_threads - 1) / (VecSize * num_threads);
  extern __shared__ float smem[];
  float* smem_x = smem + (num_warps + 3) / 4 * 4;

  float sum_sq = 0.f;
  for (std::uint32_t i = 0; i < rounds; i++) {
    Vec input_vec, residual_vec;
    float x_vec[VecSize];
#pragma unroll
    for (std::uint32_t j = 0; j < VecSize; j++) {
      input_vec.v[j] = from_float<T>(0.f);
      residual_vec.v[j] = from_float<T>(0.f);
      x_vec[j] = 0.f;
    }
    const std::uint32_t offset = i * num_threads * VecSize + thread_id * VecSize;
    if ((i * num_threads + thread_id) * VecSize < d) {
      input_vec = *reinterpret_cast<const Vec*>(input + bx * stride_input + offset);
      residual_vec = *reinterpret_cast<const Vec*>(residual + bx * stride_residual + offset);
    }
#pragma unroll
    for (std::uint32_t j = 0; j < VecSize; j++) {
      float x = to_float(input_vec.v[j]);
      x += to_float(residual_vec.v[j]);
      sum_sq += x * x;
      residual_vec.v[j] = from_float<T>(x);
      x_vec[j] = x;
    }
    if ((i * num_threads + thread_id) * VecSize < d) {
      *reinterpret_cast<Vec*>(residual + bx * stride_residual + offset) = residual_vec;
      norm_rows::detail::store_floats(smem_x + offset, x_vec);
    }
  }

  // First, warp reduce sum.
#pragma unroll
  for (std::uint32_t offset = warp_size / 2; offset > 0; offset /= 2)
    sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  smem[ty] = sum_sq;
  __syncthreads();
  // Then, cross warp reduce sum using only the first warp.
  if (ty == 0) {
    sum_sq = (tx < num_warps) ? smem[tx] : 0.f;
#pragma unroll
    for (std::uint32_t offset = warp_size / 2; offset > 0; offset /= 2)
      sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
    smem[0] = sum_sq;
  }
  __syncthreads();
  const float rms_rcp = rsqrt_approx(smem[0] / float(d) + eps);

  for (std::uint32_t i = 0; i < rounds; i++) {
    Vec input_vec, weight_vec;
    float x_vec[VecSize];
    const std::uint32_t offset = i * num_threads * VecSize + thread_id * VecSize;
    if ((i * num_threads + thread_id) * VecSize < d) {
      weight_vec = *reinterpret_cast<const Vec*>(weight + offset);
      norm_rows::detail::load_floats(x_vec, smem_x + offset);
#pragma unroll
      for (std::uint32_t j = 0; j < VecSize; j++)
        input_vec.v[j] = from_float<T>(x_vec[j] * rms_rcp * to_float(weight_vec.v[j]));
      *reinterpret_cast<Vec*>(input + bx * stride_input + offset) = input_vec;
    }
  }
}

/// S's launch geometry for a call; the same numbers as FlashInfer's FusedAddRMSNorm.
template <class E>
struct Launch {
  static constexpr std::uint32_t vec_size = 16 / sizeof(E);
  std::uint32_t num_warps = 0;
  std::size_t smem = 0;

  explicit Launch(std::int64_t h) {
    const auto d = static_cast<std::uint32_t>(h);
    const std::uint32_t block_size = d / vec_size < 1024u ? d / vec_size : 1024u;
    num_warps = (block_size + 31) / 32;
    smem = ((num_warps + 3) / 4 * 4 + d) * sizeof(float);
  }
};

template <class E>
Status can_implement(const Args<E>& a) {
  KTUNE_TRY(validate(a));
  constexpr std::int64_t vec = Launch<E>::vec_size;
  if (a.tokens == 0) return Status::success();
  if (misalignment(a.input, 16) || misalignment(a.residual, 16) || misalignment(a.weight, 16))
    return Status::unsupported("original fused_add_rmsnorm: pointers must be 16-byte aligned");
  if (a.h % vec || a.input_stride % vec || a.residual_stride % vec)
    return Status::unsupported("original fused_add_rmsnorm: h and the strides must be multiples of 16 bytes");
  // FlashInfer's 32-bit offsets: bx * stride + column must stay below 2^32.
  const std::int64_t limit = std::int64_t{1} << 32;
  if ((a.tokens - 1) * a.input_stride + a.h >= limit || (a.tokens - 1) * a.residual_stride + a.h >= limit)
    return Status::too_large("original fused_add_rmsnorm: row offsets beyond its 32-bit indexing");
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  if (Launch<E>(a.h).smem > static_cast<std::size_t>(dev->smem_per_block_optin))
    return Status::unsupported("original fused_add_rmsnorm: the row does not fit in shared memory");
  return Status::success();
}

template <class E>
KernelResources resources(const Args<E>& a) {
  const Launch<E> l(a.h);
  return {reinterpret_cast<const void*>(&fused_add_rmsnorm_kernel<Launch<E>::vec_size, E>),
          static_cast<int>(l.num_warps * 32), l.smem, 1};
}

template <class E>
Status run(const Args<E>& a, cudaStream_t stream) {
  KTUNE_TRY(can_implement(a));
  if (a.tokens == 0) return Status::success();
  const Launch<E> l(a.h);
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(a.tokens));
  shape.block = dim3(32, l.num_warps);
  shape.smem = l.smem;
  return launch(&fused_add_rmsnorm_kernel<Launch<E>::vec_size, E>, shape, stream, a.input, a.residual, a.weight,
                static_cast<std::uint32_t>(a.h), static_cast<std::uint32_t>(a.input_stride),
                static_cast<std::uint32_t>(a.residual_stride), a.eps);
}

}  // namespace original
}  // namespace ktune::ops::fused_add_rmsnorm
