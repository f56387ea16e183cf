// CPU tests of gemma_rmsnorm's dispatch, compiled by nvcc but needing no GPU: the checks every RMS norm op
// with a separate output shares (tests/kernels/common/norm_rows/rows_dispatch.hpp: the runtime-dtype entry and
// can_implement refuse before any CUDA call, S's gcd vector, the launch geometry).
#include <gtest/gtest.h>

#include "../common/norm_rows/rows_dispatch.hpp"
#include "kernels/gemma_rmsnorm/gemma_rmsnorm.cuh"

namespace {

struct GemmaRmsnorm {
  KTUNE_NORM_ROWS_DISPATCH_OP(gemma_rmsnorm)
};

KTUNE_OUTPUT_NORM_DISPATCH_TESTS(GemmaRmsnorm)

}  // namespace
