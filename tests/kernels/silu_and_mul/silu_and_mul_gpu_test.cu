// GPU tests of silu_and_mul: the checks every act-and-mul op shares
// (tests/kernels/common/act_and_mul/act_and_mul_gpu_tests.cuh: every variant and S x dtype against the
// float64 reference, edge shapes, rows past 65,535, the public API, graph capture, the compute-sanitizer
// sample). Run the sample with
//   compute-sanitizer --tool memcheck  ktune_gpu_tests --gtest_filter='SanitizerSample.SiluAndMul'
//   compute-sanitizer --tool racecheck ktune_gpu_tests --gtest_filter='SanitizerSample.SiluAndMul'
#include <gtest/gtest.h>

#include "../common/act_and_mul/act_and_mul_gpu_tests.cuh"
#include "kernels/silu_and_mul/silu_and_mul.cuh"

namespace {

struct SiluAndMul {
  KTUNE_ACT_AND_MUL_CUDA_NAMES(silu_and_mul)
  /// The variants' __fdividef keeps denormals where S's div.approx.ftz (fast math's, as sgl-kernel builds it)
  /// flushes them: they are checked against the float64 reference only.
  static constexpr bool bitwise_like_original = false;
};

KTUNE_ACT_AND_MUL_GPU_TESTS(SiluAndMul)

}  // namespace
