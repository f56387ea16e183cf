// tests/support/gpu.hpp: helpers shared by the GPU tests.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

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
  auto r = ::testing::AssertionFailure() << to_string(s.code) << ": " << s.message;
  if (s.cuda != cudaSuccess) r << " (" << cudaGetErrorName(s.cuda) << ": " << cudaGetErrorString(s.cuda) << ")";
  return r;
}

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
