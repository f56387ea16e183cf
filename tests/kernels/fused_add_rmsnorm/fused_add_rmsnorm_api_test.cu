// CPU tests of fused_add_rmsnorm's dispatch, compiled by nvcc but needing no GPU: the checks every RMS
// norm op with a residual shares (tests/kernels/common/norm_rows/rows_dispatch.hpp: the runtime-dtype
// entry and every configuration's can_implement refuse before any CUDA call, the launch geometry), and
// this op's S: 16-byte vectors only, sized by its own launcher.
#include <gtest/gtest.h>

#include "../common/norm_rows/rows_dispatch.hpp"
#include "kernels/fused_add_rmsnorm/fused_add_rmsnorm.cuh"

namespace {
using ktune::StatusCode;

struct FusedAddRmsnorm {
  KTUNE_NORM_ROWS_DISPATCH_OP(fused_add_rmsnorm)
};
using D = ktune::test::norm_rows::Dispatch<FusedAddRmsnorm>;

KTUNE_RESIDUAL_NORM_DISPATCH_TESTS(FusedAddRmsnorm)

TEST(FusedAddRmsnormCanImplement, VectorsNeedAlignmentAndWholeVectors) {
  D::check_residual_vectors_need_alignment();
  // S: 16-byte aligned, h a multiple of the pack.
  EXPECT_EQ(D::original_can_implement<__nv_bfloat16>(D::args_for<__nv_bfloat16>(2, 4096, 2)).code,
            StatusCode::unsupported);
  EXPECT_EQ(D::original_can_implement<__nv_bfloat16>(D::args_for<__nv_bfloat16>(2, 100)).code, StatusCode::unsupported);
}

TEST(FusedAddRmsnormPlan, FollowsSsSizingRule) {
  D::check_residual_plan_sizing();
  namespace original = ktune::ops::fused_add_rmsnorm::original;
  const original::Launch<float> s(8192);
  EXPECT_EQ(s.num_warps * 32, 1024u);
  const original::Launch<__half> s16(5120);
  EXPECT_EQ(s16.num_warps * 32, 640u);
  EXPECT_EQ(s16.smem, (20u + 5120u) * 4);
}

}  // namespace
