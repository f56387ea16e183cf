// ktune/intrinsics.cuh: small device-side building blocks shared by the kernel families.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include <ktune/dtype.hpp>

namespace ktune {

/// N elements of T moved as one aligned access of sizeof(T) * N bytes (16 bytes: one LDG.128).
template <class T, int N>
struct alignas(sizeof(T) * N) AlignedVector {
  T v[N];
};

/// The N elements of v as floats, exactly. bf16 widens from its packed 32-bit words with integer
/// operations (its bits are a float's upper half), so a loaded vector stays in N/2 registers until each
/// pair is used; unpacked into 16-bit halves first, as per-element conversion compiles, it costs ptxas
/// one register per element (80 against 64 registers for the rotary kernel's 2 x 16-byte heads).
template <class E, int N>
__device__ __forceinline__ void to_floats(float (&out)[N], const AlignedVector<E, N>& v) {
  if constexpr (std::is_same_v<E, __nv_bfloat16> && N % 2 == 0) {
    const auto* w = reinterpret_cast<const std::uint32_t*>(&v);
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      out[2 * i] = __uint_as_float(w[i] << 16);
      out[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = to_float(v.v[i]);
  }
}

/// The N floats rounded to nearest even into a vector of E, two at a time where E is 16 bits (one
/// cvt.rn.{f16,bf16}x2.f32 per pair, the result already packed).
template <class E, int N>
__device__ __forceinline__ AlignedVector<E, N> from_floats(const float (&in)[N]) {
  AlignedVector<E, N> v;
  if constexpr (sizeof(E) == 2 && N % 2 == 0) {
    using Pair = std::conditional_t<std::is_same_v<E, __half>, __half2, __nv_bfloat162>;
    auto* p = reinterpret_cast<Pair*>(&v);
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      if constexpr (std::is_same_v<E, __half>) p[i] = __floats2half2_rn(in[2 * i], in[2 * i + 1]);
      else p[i] = __floats2bfloat162_rn(in[2 * i], in[2 * i + 1]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) v.v[i] = from_float<E>(in[i]);
  }
  return v;
}

/// Programmatic dependent launch (sm_90+): wait until the preceding kernel in the stream has
/// completed (or triggered), before touching memory it writes. A no-op on older architectures and
/// when the launch did not ask for PDL.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Let the next kernel in the stream start its prologue (sm_90+).
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Bytes between p and the previous 16-byte boundary's multiple of `align`: 0 when aligned.
__host__ __device__ __forceinline__ unsigned misalignment(const void* p, unsigned align) {
  return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(p) % align);
}

}  // namespace ktune
