// GPU tests of gelu_and_mul: the checks every act-and-mul op shares
// (tests/kernels/common/act_and_mul/act_and_mul_gpu_tests.cuh: every variant and S x dtype against the
// float64 reference and bitwise against S, edge shapes, rows past 65,535, the public API, graph capture,
// the compute-sanitizer sample). Run the sample with
//   compute-sanitizer --tool memcheck  ktune_gpu_tests --gtest_filter='SanitizerSample.GeluAndMul'
//   compute-sanitizer --tool racecheck ktune_gpu_tests --gtest_filter='SanitizerSample.GeluAndMul'
#include <gtest/gtest.h>

#include "../common/act_and_mul/act_and_mul_gpu_tests.cuh"
#include "kernels/gelu_and_mul/gelu_and_mul.cuh"

namespace {

struct GeluAndMul {
  KTUNE_ACT_AND_MUL_CUDA_NAMES(gelu_and_mul)
  /// The variants compute S's expression with S's functions (kernels/gelu_and_mul/family.cuh).
  static constexpr bool bitwise_like_original = true;
};

KTUNE_ACT_AND_MUL_GPU_TESTS(GeluAndMul)

}  // namespace
