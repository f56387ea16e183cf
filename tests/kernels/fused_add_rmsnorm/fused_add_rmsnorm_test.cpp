// CPU tests of fused_add_rmsnorm's host-side pieces: the checks every RMS norm op with a residual shares
// (tests/kernels/common/norm_rows/residual_norm_cpu.hpp: the float64 reference and every edge case of the
// semantics, validate(), the space's counts, ids and rules, the harness and spec.json), with the weight
// used as stored; and what is this op's own: its S's point, and the points of the space before issue 10.
// Compiled by the host compiler: none of these headers needs CUDA.
#include <gtest/gtest.h>

#include "../common/norm_rows/residual_norm_cpu.hpp"
#include "kernels/fused_add_rmsnorm/args.hpp"
#include "kernels/fused_add_rmsnorm/harness.hpp"
#include "kernels/fused_add_rmsnorm/reference.hpp"
#include "kernels/fused_add_rmsnorm/space.hpp"

namespace {
namespace t = ktune::test::norm_rows;

struct FusedAddRmsnorm {
  KTUNE_NORM_ROWS_HOST_OP(fused_add_rmsnorm)
  using Weight = t::PlainWeight;
};
using Space = FusedAddRmsnorm::Space;

KTUNE_RESIDUAL_NORM_CPU_TESTS(FusedAddRmsnorm)
KTUNE_NORM_ROWS_TEST(FusedAddRmsnormValidate, RefusesBadArguments,
                     residual::check_validate_refuses_bad_arguments<FusedAddRmsnorm>())

TEST(FusedAddRmsnormSpace, PointsOfStagesZeroToTwoKeepTheirIdsAndVerdicts) {
  // Issue 10 added stage values only: every point of the space before it is still a point, with the
  // same id, and feasible exactly where it was (96 on sm_90, 12 on sm_80).
  for (int arch : {80, 90}) {
    for (int eb : {2, 4}) {
      std::size_t old_feasible = 0;
      for (const auto& pv : ktune::explain<Space>(ktune::arch_limits(arch), eb)) {
        if (pv.point[Space::kStage] > Space::reread) continue;
        if (pv.verdict.ok()) ++old_feasible;
      }
      EXPECT_EQ(old_feasible, arch == 90 ? 96u : 12u) << arch << ", " << eb;
    }
  }
  // The ids of the tuned table before issue 10 parse to the same points.
  for (const char* id : {"vb_16.vpt_4.stage_0.cs_1.pdl_1", "vb_16.vpt_1.stage_2.cs_1.pdl_1", "vb_16.vpt_1.stage_0.cs_8.pdl_1",
                         "vb_16.vpt_1.stage_1.cs_1.pdl_1"}) {
    const auto parsed = Space::space.parse(id);
    ASSERT_TRUE(parsed.ok) << id;
    EXPECT_EQ(Space::space.id(parsed.point), id);
    EXPECT_TRUE(Space::feasible(parsed.point, ktune::arch_limits(90), 2).ok()) << id;
  }
}

TEST(FusedAddRmsnormSpace, NamedPointsAreFeasibleEverywhere) {
  t::residual::check_named_points<FusedAddRmsnorm>();
  // S: shared-memory staging without PDL, so sm_80 runs it too.
  for (int arch : ktune::supported_archs)
    for (int eb : {2, 4})
      EXPECT_TRUE(Space::feasible(Space::original_point, ktune::arch_limits(arch), eb).ok()) << arch;
  EXPECT_EQ(Space::space.id(Space::original_point), "vb_16.vpt_1.stage_1.cs_1.pdl_0");
}

}  // namespace
