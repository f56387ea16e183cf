// GPU tests of gemma_fused_add_rmsnorm: the checks every RMS norm op with a residual shares
// (tests/kernels/common/norm_rows/residual_norm_gpu.hpp: every variant and S x dtype on edge shapes
// against the float64 reference and against S, more than 65,535 rows, the public API (fallbacks, T = 0,
// bad inputs, graph capture and replay, determinism), and a named sample for compute-sanitizer, gtest
// filter SanitizerSample.*).
#include <gtest/gtest.h>

#include "../common/norm_rows/residual_norm_gpu.hpp"
#include "kernels/gemma_fused_add_rmsnorm/gemma_fused_add_rmsnorm.cuh"

namespace {

struct GemmaFusedAddRmsnorm {
  KTUNE_NORM_ROWS_OP(gemma_fused_add_rmsnorm)
  using Rows = ktune::test::norm_rows::ResidualRows;
  // S, FlashInfer's FusedAddRMSNormKernel with weight_bias 1: gcd vectors, compared with every variant,
  // one block per row.
  static constexpr bool s_gcd_vector = true, checked_against_s = true, one_block_per_row_on_many_rows = true;
  static constexpr int s_cases = 11;
};

KTUNE_RESIDUAL_NORM_GPU_TESTS(GemmaFusedAddRmsnorm)

}  // namespace
