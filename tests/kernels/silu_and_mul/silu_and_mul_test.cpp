// CPU tests of silu_and_mul's host-only parts, compiled by the host compiler (which also proves these
// headers need no nvcc): the float64 silu on hand-computed values and large magnitudes, the spec's
// tolerances, and the checks every act-and-mul op shares
// (tests/kernels/common/act_and_mul/act_and_mul_tests.hpp: special values, strided rows, argument
// validation, the space, spec.json, the harness).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "../common/act_and_mul/act_and_mul_tests.hpp"
#include "kernels/silu_and_mul/args.hpp"
#include "kernels/silu_and_mul/harness.hpp"
#include "kernels/silu_and_mul/reference.hpp"
#include "kernels/silu_and_mul/space.hpp"

namespace {

namespace op = ktune::ops::silu_and_mul;

struct SiluAndMul {
  KTUNE_ACT_AND_MUL_HOST_NAMES(silu_and_mul)
  static double activation(double x) { return op::silu_reference(x); }
  static double activation_and_mul(double x, double y) { return op::silu_and_mul_reference(x, y); }
};

KTUNE_ACT_AND_MUL_HOST_TESTS(SiluAndMul)

TEST(SiluAndMulReference, HandComputedValues) {
  // silu(x) = x / (1 + e^-x): e^-1 = 0.36787944117144233, e^-2 = 0.1353352832366127.
  EXPECT_DOUBLE_EQ(op::silu_reference(0.0), 0.0);
  EXPECT_DOUBLE_EQ(op::silu_reference(1.0), 1.0 / 1.36787944117144233);       // 0.7310585786300049
  EXPECT_DOUBLE_EQ(op::silu_reference(-1.0), -1.0 / 3.718281828459045);      // -0.2689414213699951
  EXPECT_DOUBLE_EQ(op::silu_reference(2.0), 2.0 / 1.1353352832366127);        // 1.7615941559557649
  EXPECT_NEAR(op::silu_reference(1.0), 0.7310585786300049, 1e-15);
  EXPECT_NEAR(op::silu_reference(-1.0), -0.2689414213699951, 1e-15);
  EXPECT_DOUBLE_EQ(op::silu_and_mul_reference(2.0, 3.0), 3.0 * 1.7615941559557649);
  EXPECT_DOUBLE_EQ(op::silu_and_mul_reference(-1.0, -2.0), 2.0 / 3.718281828459045);
}

TEST(SiluAndMulReference, LargeMagnitudesNeverGiveNaN) {
  // Far below zero exp(-x) overflows to inf and x / inf = -0: the answer, not NaN.
  const double far = op::silu_reference(-1000.0);
  EXPECT_EQ(far, 0.0);
  EXPECT_TRUE(std::signbit(far));
  EXPECT_FALSE(std::isnan(op::silu_and_mul_reference(-1000.0, 5.0)));
  // A tiny negative where the double still resolves it: -100 e^-100 = -3.72e-42.
  EXPECT_NEAR(op::silu_reference(-100.0), -100.0 * std::exp(-100.0), 1e-55);
  EXPECT_LT(op::silu_reference(-100.0), 0.0);
  // Far above zero silu(x) = x; fp16's largest finite value times 0.75 stays finite (49128).
  EXPECT_DOUBLE_EQ(op::silu_reference(65504.0), 65504.0);
  EXPECT_DOUBLE_EQ(op::silu_and_mul_reference(65504.0, 0.75), 49128.0);
  EXPECT_DOUBLE_EQ(op::silu_and_mul_reference(-65504.0, 0.75), -0.0);
  EXPECT_DOUBLE_EQ(op::silu_reference(3.0e38), 3.0e38);
}

TEST(SiluAndMulSpec, TolerancesAreTheDefaultsForOneRounding) {
  ktune::test::act_and_mul::check_tolerances_are_the_defaults_for_one_rounding<SiluAndMul>();
}

}  // namespace
