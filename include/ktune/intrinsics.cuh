// ktune/intrinsics.cuh: small device-side building blocks shared by the kernel families.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ktune {

/// N elements of T moved as one aligned access of sizeof(T) * N bytes (16 bytes: one LDG.128).
template <class T, int N>
struct alignas(sizeof(T) * N) AlignedVector {
  T v[N];
};

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
