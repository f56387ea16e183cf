// kernels/silu_and_mul/original.cuh: the original kernel S, as SGLang runs it (sgl-kernel's
// silu_and_mul launches FlashInfer's act_and_mul_kernel with silu): one block per token, 16-byte
// vector loads of x and y, min(1024, d / pack) threads looping over the row, a scalar tail loop, and
// the griddepcontrol instructions FlashInfer emits on sm_90. Kept as written (the
// baseline every variant is compared with); only the vector type is ktune's instead of FlashInfer's
// vec_t.
//
// S reads contiguous rows only and needs 16-byte aligned pointers and d a multiple of the pack (its
// y = in + d vector loads are misaligned otherwise, despite the tail loop); original_can_implement
// refuses everything else, and the public API never routes a call to S.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include <ktune/dtype.hpp>
#include <ktune/intrinsics.cuh>
#include <ktune/launch.hpp>
#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "args.hpp"

namespace ktune::ops::silu_and_mul::original {

__device__ __forceinline__ float silu(const float& val) { return val / (1.0f + __expf(-val)); }

/// \tparam T float, __half or __nv_bfloat16
/// out [num_tokens, d], input [num_tokens, 2*d], both contiguous; grid.x = num_tokens.
template <typename T>
__global__ void act_and_mul_kernel(T* __restrict__ out, const T* __restrict__ input, const int d) {
  constexpr uint32_t vec_size = 16 / sizeof(T);
  using vec_t = ktune::AlignedVector<T, vec_size>;
  const int64_t token_idx = blockIdx.x;
  const int64_t thread_idx = threadIdx.x;
  const int64_t stride = blockDim.x;
  const int64_t offset = token_idx * 2 * d;

  ktune::pdl_wait();

#pragma unroll 1
  for (uint32_t idx = thread_idx; idx < d / vec_size; idx += stride) {
    const vec_t x_vec = *reinterpret_cast<const vec_t*>(input + offset + idx * vec_size);
    const vec_t y_vec = *reinterpret_cast<const vec_t*>(input + offset + d + idx * vec_size);
    vec_t out_vec;
#pragma unroll
    for (uint32_t i = 0; i < vec_size; ++i) {
      out_vec.v[i] = ktune::from_float<T>(silu(ktune::to_float(x_vec.v[i])) * ktune::to_float(y_vec.v[i]));
    }
    *reinterpret_cast<vec_t*>(out + token_idx * d + idx * vec_size) = out_vec;
  }

  // As written upstream: this recomputes the last d % (stride * vec_size) elements even when the vector
  // loop above already wrote them (same values), not just the d % vec_size tail. It is part of S's cost.
  const int64_t remaining_offset = d - d % (stride * vec_size);
  // process the remaining elements
#pragma unroll 1
  for (int64_t idx = thread_idx; idx < d % (stride * vec_size); idx += stride) {
    float x = ktune::to_float(input[offset + remaining_offset + idx]);
    float y = ktune::to_float(input[offset + remaining_offset + d + idx]);
    out[token_idx * d + remaining_offset + idx] = ktune::from_float<T>(silu(x) * y);
  }

  ktune::pdl_launch_dependents();
}

/// 16 / sizeof(E): elements per 16-byte vector.
template <class E> inline constexpr int pack = 16 / static_cast<int>(sizeof(E));

/// What S accepts: contiguous rows, 16-byte aligned pointers, d a multiple of the pack, one block per
/// token within grid.x's 2^31 - 1.
template <class E>
Status can_implement(const Args<E>& a) {
  KTUNE_TRY(validate(a));
  if (is_empty(a)) return Status::success();
  if (a.in_stride != 2 * a.d || a.out_stride != a.d)
    return Status::unsupported("silu_and_mul original: S reads contiguous rows only (in_stride = 2 * d, out_stride = d)");
  if (!detail::aligned_to(a.out, 16) || !detail::aligned_to(a.in, 16))
    return Status::unsupported("silu_and_mul original: S needs 16-byte aligned pointers");
  if (a.d % pack<E> != 0) return Status::unsupported("silu_and_mul original: S needs d to be a multiple of 16 bytes");
  if (a.tokens > 2147483647) return Status::too_large("silu_and_mul original: more tokens than grid.x allows (2^31 - 1)");
  return Status::success();
}

/// S's launch: grid = tokens, block = min(1024, d / pack).
template <class E>
ktune::LaunchShape launch_shape(const Args<E>& a) {
  ktune::LaunchShape s;
  s.grid = dim3(static_cast<unsigned>(a.tokens));
  s.block = dim3(static_cast<unsigned>(std::min<std::int64_t>(a.d / pack<E>, 1024)));
  return s;
}

template <class E>
Status run(const Args<E>& a, cudaStream_t stream) {
  KTUNE_TRY(can_implement(a));
  if (is_empty(a)) return Status::success();
  return ktune::launch(act_and_mul_kernel<E>, launch_shape(a), stream, a.out, a.in, static_cast<int>(a.d));
}

template <class E>
ktune::KernelResources resources(const Args<E>& a) {
  return {reinterpret_cast<const void*>(&act_and_mul_kernel<E>), static_cast<int>(launch_shape(a).block.x), 0, 1};
}

}  // namespace ktune::ops::silu_and_mul::original
