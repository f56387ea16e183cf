// ktune/fill.cuh: device-side fills: seeded random data (never zeros) and poison.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "dtype.hpp"
#include "launch.hpp"
#include "random.hpp"
#include "status.hpp"

namespace ktune {

namespace detail {
template <class T>
__global__ void fill_uniform_kernel(T* p, std::size_t n, std::uint64_t seed, float lo, float hi) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    p[i] = from_float<T>(uniform_at(seed, i, lo, hi));
}

template <class T>
__global__ void fill_bits_kernel(T* p, std::size_t n, std::uint32_t bits) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  T v;
  if constexpr (sizeof(T) == 4) v = __uint_as_float(bits);
  else if constexpr (std::is_same_v<T, __half>) v = __ushort_as_half(static_cast<unsigned short>(bits));
  else v = __ushort_as_bfloat16(static_cast<unsigned short>(bits));
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    p[i] = v;
}

inline unsigned fill_blocks(std::size_t n) {
  const std::size_t b = (n + 255) / 256;
  return static_cast<unsigned>(b < 4096 ? (b ? b : 1) : 4096);
}
}  // namespace detail

/// p[i] = uniform_at(seed, i, lo, hi) rounded to T: the host can recompute any element.
template <class T>
Status fill_uniform(T* p, std::size_t n, std::uint64_t seed, float lo, float hi, cudaStream_t stream = nullptr) {
  if (n == 0) return Status::success();
  return ktune::launch(detail::fill_uniform_kernel<T>, LaunchShape{dim3(detail::fill_blocks(n)), dim3(256)}, stream, p,
                       n, seed, lo, hi);
}

/// Every element set to the raw pattern `bits` (e.g. poison_bits<T>()).
template <class T>
Status fill_bits(T* p, std::size_t n, std::uint32_t bits, cudaStream_t stream = nullptr) {
  if (n == 0) return Status::success();
  return ktune::launch(detail::fill_bits_kernel<T>, LaunchShape{dim3(detail::fill_blocks(n)), dim3(256)}, stream, p,
                       n, bits);
}

}  // namespace ktune
