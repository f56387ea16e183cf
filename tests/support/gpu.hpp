// tests/support/gpu.hpp: helpers shared by the GPU tests.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

#include <ktune/status.hpp>

namespace ktune::test {

/// Empty when a CUDA device is usable, else why not (shown as the skip reason).
inline const std::string& gpu_unavailable_reason() {
  static const std::string reason = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
      return std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorName(e) + ", " +
             cudaGetErrorString(e) + ")";
    if (n == 0) return std::string("no CUDA device on this machine");
    return std::string();
  }();
  return reason;
}

/// A fresh seed per process unless KTUNE_TEST_SEED fixes one ("fresh random inputs"); tests print it
/// with every failure so a failing draw can be replayed.
inline std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    if (const char* s = std::getenv("KTUNE_TEST_SEED")) return static_cast<std::uint64_t>(std::strtoull(s, nullptr, 0));
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }();
  return seed;
}

inline ::testing::AssertionResult ok(const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << to_string(s.code) << ": " << s.describe().c_str();  // with CUDA's error
}

/// `count` elements of T in device memory, freed at scope exit; at least one element is allocated, so
/// that a call with no elements still gets a valid pointer. `ptr` is null when cudaMalloc failed (the
/// tests check it before use).
template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  std::size_t n = 0;
  explicit DeviceBuffer(std::size_t count) : n(count) {
    if (cudaMalloc(&ptr, std::max<std::size_t>(count, 1) * sizeof(T)) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

/// A non-blocking stream, destroyed at scope exit; `s` is null when it could not be created.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() {
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) s = nullptr;
  }
  ~Stream() {
    if (s) cudaStreamDestroy(s);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

}  // namespace ktune::test

/// First line of every GPU test: skips (visibly, with the reason) when there is no device.
#define KTUNE_REQUIRE_GPU()                                                            \
  do {                                                                                 \
    if (!::ktune::test::gpu_unavailable_reason().empty())                              \
      GTEST_SKIP() << "GPU test skipped: " << ::ktune::test::gpu_unavailable_reason(); \
  } while (0)

/// Asserts a ktune::Status (or cudaError_t through ktune::Status::from_cuda) is ok.
#define KTUNE_ASSERT_OK(expr) ASSERT_TRUE(::ktune::test::ok(expr))
#define KTUNE_EXPECT_OK(expr) EXPECT_TRUE(::ktune::test::ok(expr))
#define KTUNE_ASSERT_CUDA(expr) ASSERT_TRUE(::ktune::test::ok(::ktune::Status::from_cuda((expr), #expr)))
