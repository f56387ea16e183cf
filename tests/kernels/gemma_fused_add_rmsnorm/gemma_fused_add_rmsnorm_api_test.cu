// CPU tests of gemma_fused_add_rmsnorm's dispatch, compiled by nvcc but needing no GPU: the checks every
// RMS norm op with a residual shares (tests/kernels/common/norm_rows/rows_dispatch.hpp: the runtime-dtype
// entry and every configuration's can_implement refuse before any CUDA call, the launch geometry), and
// this op's S: FlashInfer's gcd vector and sizing.
#include <gtest/gtest.h>

#include "../common/norm_rows/rows_dispatch.hpp"
#include "kernels/gemma_fused_add_rmsnorm/gemma_fused_add_rmsnorm.cuh"

namespace {
using ktune::StatusCode;

struct GemmaFusedAddRmsnorm {
  KTUNE_NORM_ROWS_DISPATCH_OP(gemma_fused_add_rmsnorm)
};
using D = ktune::test::norm_rows::Dispatch<GemmaFusedAddRmsnorm>;

KTUNE_RESIDUAL_NORM_DISPATCH_TESTS(GemmaFusedAddRmsnorm)

TEST(GemmaFusedAddRmsnormCanImplement, VectorsNeedAlignmentAndWholeVectors) {
  D::check_residual_vectors_need_alignment();
  // S: its vector is gcd(16 / sizeof(E), h) elements; pointers and strides must line up with it.
  EXPECT_EQ(D::original_can_implement<__nv_bfloat16>(D::args_for<__nv_bfloat16>(2, 4096, 2)).code,
            StatusCode::unsupported);
  EXPECT_EQ(D::original_can_implement<__nv_bfloat16>(D::args_for<__nv_bfloat16>(2, 100, 4)).code,
            StatusCode::unsupported)
      << "h = 100: 4-element (8-byte) vectors";
  auto s_strided = D::args_for<float>(4, 4096);
  s_strided.residual_stride = 4098;
  EXPECT_EQ(D::original_can_implement<float>(s_strided).code, StatusCode::unsupported);
}

TEST(GemmaFusedAddRmsnormPlan, FollowsSsSizingRule) {
  D::check_residual_plan_sizing();
  using Geometry = ktune::ops::norm_rows::flashinfer::Geometry;
  const Geometry s(8192, sizeof(float));
  EXPECT_EQ(s.num_warps * 32, 1024u);
  const Geometry s16(5120, sizeof(__half));
  EXPECT_EQ(s16.vec, 8u);
  EXPECT_EQ(s16.num_warps * 32, 640u);
  EXPECT_EQ(s16.smem_fused_add, (20u + 5120u) * 4);
  const Geometry odd(4100, sizeof(__half));
  EXPECT_EQ(odd.vec, 4u) << "gcd(8, 4100)";
  EXPECT_EQ(odd.num_warps, 32u) << "min(1024, 4100 / 4) = 1024 threads";
}

}  // namespace
