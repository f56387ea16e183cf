// GPU tests of rmsnorm: the checks every RMS norm op with a separate output shares
// (tests/kernels/common/norm_rows/output_norm_gpu.hpp: every variant and S against float64 and against S
// on edge shapes, rows past 65,535, in place, the public API, graph replay, the compute-sanitizer sample).
#include <gtest/gtest.h>

#include "../common/norm_rows/output_norm_gpu.hpp"
#include "kernels/rmsnorm/rmsnorm.cuh"

namespace {

struct Rmsnorm {
  KTUNE_NORM_ROWS_OP(rmsnorm)
  using Rows = ktune::test::norm_rows::OutputRows;
  // S, FlashInfer's RMSNormKernel: gcd vectors, compared with every variant, one block per row.
  static constexpr bool s_gcd_vector = true, checked_against_s = true, one_block_per_row_on_many_rows = true;
  static constexpr int s_cases = 12;
};

KTUNE_OUTPUT_NORM_GPU_TESTS(Rmsnorm)

}  // namespace
