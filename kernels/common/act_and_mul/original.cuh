// kernels/common/act_and_mul/original.cuh: the original kernel S of silu_and_mul, gelu_and_mul and
// gelu_tanh_and_mul, as SGLang runs them on sm_90, and its launcher. Each op's original.cuh supplies the activation.
//
// Upstream: sgl-kernel's csrc/elementwise/activation.cu (sglang b87b16742dd3) launches FlashInfer's
// include/flashinfer/activation.cuh act_and_mul_kernel<c_type, Activation> (FlashInfer bc29697ba20b, the
// commit sgl-kernel's CMakeLists.txt pins; the kernel is unchanged since 841b4ad3 "experimental support of
// PDL"): grid = tokens, block = min(d / vec, 1024) with vec = 16 / sizeof(T), a loop over 16-byte vectors of
// x and y converted to fp32 two elements at a time (vec_t::cast_load / cast_store: __half22float2,
// __float22half2_rn and the bf16 twins), a scalar loop over the last d % (threads * vec) elements, and
// griddepcontrol.wait / launch_dependents, which FlashInfer emits on sm_90. sgl-kernel launches it with
// <<<grid, block, 0, stream>>>, without the programmatic-serialization attribute, so the wait returns at
// once: S is launched the same way here (no PDL). sgl-kernel's sm_90 build compiles with -use_fast_math;
// each op's activation writes the functions that gives (tanhf -> tanh.approx.f32, erff unchanged).
//
// Where this deviates from upstream, and why:
//   - ktune's AlignedVector instead of FlashInfer's vec_t (the same 16-byte loads and pairwise conversions);
//   - no -ftz: fp32 denormal intermediates are kept where -use_fast_math would flush them to zero (it
//     changes no spec-range output by more than the smallest normal number, 1.2e-38);
//   - can_implement refuses what S would read out of bounds or misaligned (strided rows, pointers not
//     16-byte aligned, d not a multiple of the pack: its y = in + d vector loads are misaligned despite
//     the tail loop), so the gate never runs S on a call it cannot do; the public API never routes to S.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <ktune/dtype.hpp>
#include <ktune/intrinsics.cuh>
#include <ktune/launch.hpp>
#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "family.cuh"  // join, detail::aligned_to

namespace ktune::ops::act_and_mul::original {

namespace detail {

/// FlashInfer's vec_cast<float, T> / vec_cast<T, float> for a 16-byte vector: pairs for 16-bit types.
template <class T, int N>
__device__ __forceinline__ void cast_load(const T* p, float (&f)[N]) {
  const auto v = *reinterpret_cast<const ktune::AlignedVector<T, N>*>(p);
  if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (int i = 0; i < N; ++i) f[i] = v.v[i];
  } else {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      float2 t;
      if constexpr (std::is_same_v<T, __half>) t = __half22float2(__halves2half2(v.v[i], v.v[i + 1]));
      else t = __bfloat1622float2(__halves2bfloat162(v.v[i], v.v[i + 1]));
      f[i] = t.x;
      f[i + 1] = t.y;
    }
  }
}

template <class T, int N>
__device__ __forceinline__ void cast_store(T* p, const float (&f)[N]) {
  ktune::AlignedVector<T, N> v;
  if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (int i = 0; i < N; ++i) v.v[i] = f[i];
  } else {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      if constexpr (std::is_same_v<T, __half>) {
        const __half2 h = __float22half2_rn(make_float2(f[i], f[i + 1]));
        v.v[i] = h.x;
        v.v[i + 1] = h.y;
      } else {
        const __nv_bfloat162 h = __float22bfloat162_rn(make_float2(f[i], f[i + 1]));
        v.v[i] = h.x;
        v.v[i + 1] = h.y;
      }
    }
  }
  *reinterpret_cast<ktune::AlignedVector<T, N>*>(p) = v;
}

}  // namespace detail

/// FlashInfer's act_and_mul_kernel (see above).
/// \tparam T          float, __half or __nv_bfloat16
/// \tparam Activation the activation of one fp32 value, as upstream passes it (a function pointer)
/// out [num_tokens, d], input [num_tokens, 2*d], both contiguous; grid.x = num_tokens.
template <typename T, float (*Activation)(const float&)>
__global__ void act_and_mul_kernel(T* __restrict__ out, const T* __restrict__ input, const int d) {
  constexpr uint32_t vec_size = 16 / sizeof(T);
  const int64_t token_idx = blockIdx.x;
  const int64_t thread_idx = threadIdx.x;
  const int64_t stride = blockDim.x;
  const int64_t offset = token_idx * 2 * d;

  ktune::pdl_wait();

#pragma unroll 1
  for (uint32_t idx = thread_idx; idx < d / vec_size; idx += stride) {
    float x_vec[vec_size], y_vec[vec_size], out_vec[vec_size];
    detail::cast_load(input + offset + idx * vec_size, x_vec);
    detail::cast_load(input + offset + d + idx * vec_size, y_vec);
#pragma unroll
    for (uint32_t i = 0; i < vec_size; ++i) out_vec[i] = Activation(x_vec[i]) * y_vec[i];
    detail::cast_store(out + token_idx * d + idx * vec_size, out_vec);
  }

  // As written upstream: this recomputes the last d % (stride * vec_size) elements even when the vector
  // loop above already wrote them (same values), not just the d % vec_size tail. It is part of S's cost.
  const int64_t remaining_offset = d - d % (stride * vec_size);
#pragma unroll 1
  for (int64_t idx = thread_idx; idx < d % (stride * vec_size); idx += stride) {
    const float x = ktune::to_float(input[offset + remaining_offset + idx]);
    const float y = ktune::to_float(input[offset + remaining_offset + d + idx]);
    out[token_idx * d + remaining_offset + idx] = ktune::from_float<T>(Activation(x) * y);
  }

  ktune::pdl_launch_dependents();
}

/// 16 / sizeof(E): elements per 16-byte vector.
template <class E> inline constexpr int pack = 16 / static_cast<int>(sizeof(E));

/// S's messages, naming the op.
template <class Op>
struct Messages {
  static constexpr auto strided =
      join(Op::name, " original: S reads contiguous rows only (in_stride = 2 * d, out_stride = d)");
  static constexpr auto misaligned = join(Op::name, " original: S needs 16-byte aligned pointers");
  static constexpr auto not_multiple = join(Op::name, " original: S needs d to be a multiple of 16 bytes");
  static constexpr auto grid = join(Op::name, " original: more tokens than grid.x allows (2^31 - 1)");
};

/// What S accepts: contiguous rows, 16-byte aligned pointers, d a multiple of the pack, one block per
/// token within grid.x's 2^31 - 1.
/// \tparam Op the op's traits (`name`), as for act_and_mul::Adapter
template <class Op, class E, template <class> class A>
Status can_implement(const A<E>& a) {
  KTUNE_TRY(validate(a));
  if (is_empty(a)) return Status::success();
  if (a.in_stride != 2 * a.d || a.out_stride != a.d) return Status::unsupported(Messages<Op>::strided.c);
  if (!act_and_mul::detail::aligned_to(a.out, 16) || !act_and_mul::detail::aligned_to(a.in, 16))
    return Status::unsupported(Messages<Op>::misaligned.c);
  if (a.d % pack<E> != 0) return Status::unsupported(Messages<Op>::not_multiple.c);
  if (a.tokens > 2147483647) return Status::too_large(Messages<Op>::grid.c);
  return Status::success();
}

/// S's launch: grid = tokens, block = min(1024, d / pack), no PDL attribute (as sgl-kernel launches it).
template <class E, template <class> class A>
ktune::LaunchShape launch_shape(const A<E>& a) {
  ktune::LaunchShape s;
  s.grid = dim3(static_cast<unsigned>(a.tokens));
  s.block = dim3(static_cast<unsigned>(std::min<std::int64_t>(a.d / pack<E>, 1024)));
  return s;
}

/// \tparam Op the op's traits: `name` and `static float activation(const float&)` (__device__)
template <class Op, class E, template <class> class A>
Status run(const A<E>& a, cudaStream_t stream) {
  KTUNE_TRY(can_implement<Op>(a));
  if (is_empty(a)) return Status::success();
  return ktune::launch(act_and_mul_kernel<E, Op::activation>, launch_shape(a), stream, a.out, a.in,
                       static_cast<int>(a.d));
}

template <class Op, class E, template <class> class A>
ktune::KernelResources resources(const A<E>& a) {
  return {reinterpret_cast<const void*>(&act_and_mul_kernel<E, Op::activation>),
          static_cast<int>(launch_shape(a).block.x), 0, 1};
}

}  // namespace ktune::ops::act_and_mul::original
