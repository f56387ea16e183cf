// CPU tests of gelu_and_mul's nvcc-side host logic, no GPU needed: the checks every act-and-mul op shares
// (tests/kernels/common/act_and_mul/act_and_mul_api_tests.cuh: the public API refuses bad calls before any
// CUDA call, the variants' can_implement and grid arithmetic, the index mapping of every feasible
// configuration simulated on the CPU, the committed tuned table).
#include <gtest/gtest.h>

#include "../common/act_and_mul/act_and_mul_api_tests.cuh"
#include "kernels/gelu_and_mul/gelu_and_mul.cuh"

namespace {

struct GeluAndMul {
  KTUNE_ACT_AND_MUL_CUDA_NAMES(gelu_and_mul)
  KTUNE_ACT_AND_MUL_TABLE_NAMES(gelu_and_mul)
};

KTUNE_ACT_AND_MUL_API_TESTS(GeluAndMul)

}  // namespace
