// GPU tests of fused_add_rmsnorm: the checks every RMS norm op with a residual shares
// (tests/kernels/common/norm_rows/residual_norm_gpu.hpp: every variant and S x dtype on edge shapes
// against the float64 reference, the persistent stages over many rows, the public API (fallbacks, T = 0,
// bad inputs, graph capture and replay, determinism), and a named sample for compute-sanitizer, gtest
// filter SanitizerSample.*).
#include <gtest/gtest.h>

#include "../common/norm_rows/residual_norm_gpu.hpp"
#include "kernels/fused_add_rmsnorm/fused_add_rmsnorm.cuh"

namespace {

struct FusedAddRmsnorm {
  KTUNE_NORM_ROWS_OP(fused_add_rmsnorm)
  using Rows = ktune::test::norm_rows::ResidualRows;
  // S, this op's own launcher of FlashInfer's kernel (older than the other ops' S): 16-byte vectors only,
  // so it runs on 7 of the cases at least. The variants are held to float64 alone, and only the persistent
  // ones run on many rows.
  static constexpr bool s_gcd_vector = false, checked_against_s = false, one_block_per_row_on_many_rows = false;
  static constexpr int s_cases = 7;
};

KTUNE_RESIDUAL_NORM_GPU_TESTS(FusedAddRmsnorm)

}  // namespace
