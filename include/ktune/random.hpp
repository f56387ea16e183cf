// ktune/random.hpp: seeded, counter-based random values, identical on host and device.
//
// Element i of a fill with seed s is a pure function of (s, i), so a test can fill a device buffer in
// parallel and recompute any element on the host, and every run of a seed sees the same data. Tests
// and benchmarks draw a fresh seed per check ("fresh random inputs") and print it on failure.
#pragma once

#include <cuda_runtime_api.h>  // __host__ __device__ for host compilers too

#include <cstdint>

namespace ktune {

/// SplitMix64 finaliser: a bijective mix with good avalanche, enough for test data.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform in [lo, hi): element `i` of the stream `seed`.
__host__ __device__ inline float uniform_at(std::uint64_t seed, std::uint64_t i, float lo, float hi) {
  const std::uint64_t r = mix64(seed * 0x2545f4914f6cdd1dull + i);
  const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // 24 bits: exact in fp32
#ifdef __CUDA_ARCH__
  // Rounded twice, as the host rounds it: nvcc would fuse the product and the sum into one FMA, and the
  // GPU's draws then differed from the host's in the last bit (seen in the benchmark's check of the inputs
  // it draws on the GPU, kernels/common/act_and_mul/device_preparation.cuh).
  return __fadd_rn(lo, __fmul_rn(hi - lo, u));
#else
  return lo + (hi - lo) * u;
#endif
}

}  // namespace ktune
