// GPU tests of gelu_and_mul: the checks every act-and-mul op shares
// (tests/kernels/common/act_and_mul/act_and_mul_gpu_tests.cuh: every variant and S x dtype against the
// float64 reference, edge shapes, rows past 65,535, the public API, graph capture, the compute-sanitizer
// sample), and the variants' Phi (normal_cdf.hpp) on the device against float64 and against S's form.
// Run the sample with
//   compute-sanitizer --tool memcheck  ktune_gpu_tests --gtest_filter='SanitizerSample.GeluAndMul'
//   compute-sanitizer --tool racecheck ktune_gpu_tests --gtest_filter='SanitizerSample.GeluAndMul'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "../common/act_and_mul/act_and_mul_gpu_tests.cuh"
#include "kernels/gelu_and_mul/gelu_and_mul.cuh"
#include "support/gpu.hpp"

namespace {

struct GeluAndMul {
  KTUNE_ACT_AND_MUL_CUDA_NAMES(gelu_and_mul)
  /// The variants take a cheaper Phi than S's erff (kernels/gelu_and_mul/family.cuh): within the spec's
  /// tolerance of S, not bitwise.
  static constexpr bool bitwise_like_original = false;
};

KTUNE_ACT_AND_MUL_GPU_TESTS(GeluAndMul)

/// ours[i] = the variants' Phi(x[i]); s[i] = S's 0.5 (1 + erff(x / sqrt 2)), as S computes it.
__global__ void normal_cdf_kernel(const float* x, float* ours, float* s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  ours[i] = ktune::ops::gelu_and_mul::normal_cdf(x[i]);
  s[i] = 0.5f * (1.0f + erff(x[i] * 0.70710678118654752440f));
}

// Every float of [-8, 8] in steps of 2^-14 (the device's ex2.approx included) against float64: within the
// fit's bounds plus two ulp of exp2 (normal_cdf.hpp), and never further off than S's form by more than that.
TEST(GeluAndMulNormalCdf, OnTheDeviceWithinTheFitsBoundsOfFloat64) {
  KTUNE_REQUIRE_GPU();
  std::vector<float> x;
  for (int i = -8 * 16384; i <= 8 * 16384; ++i) x.push_back(static_cast<float>(i) / 16384.0f);
  const int n = static_cast<int>(x.size());
  ktune::test::DeviceBuffer<float> dx(x.size()), dours(x.size()), ds(x.size());
  ASSERT_TRUE(dx.ptr && dours.ptr && ds.ptr);
  KTUNE_ASSERT_CUDA(cudaMemcpy(dx.ptr, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  normal_cdf_kernel<<<(n + 255) / 256, 256>>>(dx.ptr, dours.ptr, ds.ptr, n);
  KTUNE_ASSERT_CUDA(cudaGetLastError());
  std::vector<float> ours(x.size()), s(x.size());
  KTUNE_ASSERT_CUDA(cudaMemcpy(ours.data(), dours.ptr, x.size() * sizeof(float), cudaMemcpyDeviceToHost));
  KTUNE_ASSERT_CUDA(cudaMemcpy(s.data(), ds.ptr, x.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double ours_abs = 0, s_abs = 0, ours_rel = 0, s_rel = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double ref = 0.5 * std::erfc(-static_cast<double>(x[i]) * 0.70710678118654752440);
    const double eo = std::abs(ours[i] - ref), es = std::abs(s[i] - ref);
    ours_abs = std::max(ours_abs, eo);
    s_abs = std::max(s_abs, es);
    if (x[i] < 0 && x[i] >= -5.4f) {
      ours_rel = std::max(ours_rel, eo / ref);
      s_rel = std::max(s_rel, es / ref);
    }
  }
  std::printf("normal_cdf on the device: max abs %.3g (S's form %.3g); max relative for -5.4 <= x < 0 %.3g (S's %.3g)\n",
              ours_abs, s_abs, ours_rel, s_rel);
  EXPECT_LE(ours_abs, 1.5e-7);
  EXPECT_LE(ours_abs, s_abs + 6e-8);
  EXPECT_LE(ours_rel, 1.6e-5);
  EXPECT_GT(s_rel, 100 * ours_rel) << "S's form cancels below zero; ours does not";
}

}  // namespace
