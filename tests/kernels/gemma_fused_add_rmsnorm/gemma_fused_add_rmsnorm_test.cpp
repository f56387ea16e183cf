// CPU tests of gemma_fused_add_rmsnorm's host-side pieces: the checks every RMS norm op with a residual
// shares (tests/kernels/common/norm_rows/residual_norm_cpu.hpp: the float64 reference and every edge case
// of the semantics, validate(), the space's counts, ids and rules, the harness and spec.json), with the
// weight used as 1 + w; and what is this op's own: input and residual refused where they share an element,
// and its S's point. Compiled by the host compiler.
#include <gtest/gtest.h>

#include "../common/norm_rows/residual_norm_cpu.hpp"
#include "kernels/gemma_fused_add_rmsnorm/args.hpp"
#include "kernels/gemma_fused_add_rmsnorm/harness.hpp"
#include "kernels/gemma_fused_add_rmsnorm/reference.hpp"
#include "kernels/gemma_fused_add_rmsnorm/space.hpp"

namespace {
namespace t = ktune::test::norm_rows;
using ktune::StatusCode;

struct GemmaFusedAddRmsnorm {
  KTUNE_NORM_ROWS_HOST_OP(gemma_fused_add_rmsnorm)
  using Weight = t::GemmaWeight;
};
using Space = GemmaFusedAddRmsnorm::Space;

KTUNE_RESIDUAL_NORM_CPU_TESTS(GemmaFusedAddRmsnorm)
KTUNE_NORM_ROWS_TEST(GemmaFusedAddRmsnormSpec, LoadsAsTheBenchmarkLoadsIt, check_spec_loads<GemmaFusedAddRmsnorm>())

TEST(GemmaFusedAddRmsnormValidate, RefusesBadArguments) {
  t::residual::check_validate_refuses_bad_arguments<GemmaFusedAddRmsnorm>();
  // Any shared element is refused, not only the same pointer.
  using A = GemmaFusedAddRmsnorm::Args<float>;
  auto check = [](auto mutate, StatusCode want, const char* what) {
    t::residual::expect_validate<GemmaFusedAddRmsnorm>(mutate, want, what);
  };
  check([](A& a) { a.residual = a.input + 1; }, StatusCode::invalid_argument, "residual shifted by one element");
  check([](A& a) { a.residual = a.input + 64 * 4; }, StatusCode::ok, "residual right after input");
  check([](A& a) { a.input_stride = a.residual_stride = 128; a.residual = a.input + 64; }, StatusCode::ok,
        "interleaved halves of one buffer");
}

TEST(GemmaFusedAddRmsnormSpace, NamedPointsAreFeasibleEverywhere) {
  t::residual::check_named_points<GemmaFusedAddRmsnorm>();
  EXPECT_TRUE(Space::feasible(Space::original_point, ktune::arch_limits(90), 2).ok()) << "S's point needs sm_90 (PDL)";
  EXPECT_EQ(Space::space.id(Space::original_point), "vb_16.vpt_1.stage_1.cs_1.pdl_1");
}

}  // namespace
