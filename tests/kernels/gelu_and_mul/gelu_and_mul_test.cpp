// CPU tests of gelu_and_mul's host-only parts, compiled by the host compiler (which also proves these
// headers need no nvcc): the float64 erf GELU on hand-computed values and large magnitudes, the spec's
// tolerances, and the checks every act-and-mul op shares
// (tests/kernels/common/act_and_mul/act_and_mul_tests.hpp: special values, strided rows, argument
// validation, the space, spec.json, the harness).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <ktune/spec.hpp>

#include "../common/act_and_mul/act_and_mul_tests.hpp"
#include "kernels/gelu_and_mul/args.hpp"
#include "kernels/gelu_and_mul/harness.hpp"
#include "kernels/gelu_and_mul/reference.hpp"
#include "kernels/gelu_and_mul/space.hpp"

namespace {

namespace op = ktune::ops::gelu_and_mul;

struct GeluAndMul {
  KTUNE_ACT_AND_MUL_HOST_NAMES(gelu_and_mul)
  static double activation(double x) { return op::gelu_reference(x); }
  static double activation_and_mul(double x, double y) { return op::gelu_and_mul_reference(x, y); }
  static std::vector<std::int64_t> spec_d() { return {14336, 18944, 28672}; }
};

KTUNE_ACT_AND_MUL_HOST_TESTS(GeluAndMul)

TEST(GeluAndMulReference, HandComputedValues) {
  // gelu(x) = x Phi(x): Phi(1) = 0.8413447460685429, Phi(-1) = 0.15865525393145707, Phi(2) = 0.9772498680518208.
  EXPECT_DOUBLE_EQ(op::gelu_reference(0.0), 0.0);
  EXPECT_NEAR(op::gelu_reference(1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(op::gelu_reference(-1.0), -0.15865525393145707, 1e-15);
  EXPECT_NEAR(op::gelu_reference(2.0), 2.0 * 0.9772498680518208, 1e-15);
  EXPECT_NEAR(op::gelu_and_mul_reference(2.0, 3.0), 3.0 * 2.0 * 0.9772498680518208, 1e-14);
  EXPECT_NEAR(op::gelu_and_mul_reference(-1.0, -2.0), 2.0 * 0.15865525393145707, 1e-15);
}

TEST(GeluAndMulReference, LargeMagnitudesNeverGiveNaN) {
  // Far below zero erf = -1 and x * 0 = -0: the answer, not NaN.
  const double far = op::gelu_reference(-1000.0);
  EXPECT_EQ(far, 0.0);
  EXPECT_TRUE(std::signbit(far));
  EXPECT_FALSE(std::isnan(op::gelu_and_mul_reference(-1000.0, 5.0)));
  // A tiny negative where the double still resolves it: -6 Phi(-6) = -5.9e-9.
  EXPECT_NEAR(op::gelu_reference(-6.0), -6.0 * 9.865876450376946e-10, 1e-22);
  // Far above zero gelu(x) = x; fp16's largest finite value times 0.75 stays finite (49128).
  EXPECT_DOUBLE_EQ(op::gelu_reference(65504.0), 65504.0);
  EXPECT_DOUBLE_EQ(op::gelu_and_mul_reference(65504.0, 0.75), 49128.0);
  EXPECT_DOUBLE_EQ(op::gelu_reference(3.0e38), 3.0e38);
}

TEST(GeluAndMulSpec, TolerancesAreTheDefaultsForOneRounding) {
  ktune::test::act_and_mul::check_tolerances_are_the_defaults_for_one_rounding<GeluAndMul>();
}

// S's own fp32 formula, x * (0.5 * (1 + erff(x / sqrt 2))) * y, loses its relative accuracy where 1 + erf
// cancels (x below about -3): on an H200 every fp32 variant of the d = 1 edge shape once failed the gate
// with rel_l2 = 8e-4 and an error below 5e-7. One element over the harness's whole input range, evaluated
// as S does (the host's erff): within the spec's fp32 tolerance everywhere, which it was not without the
// spec's rms_floor.
TEST(GeluAndMulSpec, FloatFormulaOfSPassesTheSpecToleranceAtOneElement) {
  const ktune::Tolerance tol =
      ktune::parse_spec(ktune::test::act_and_mul::load_spec<GeluAndMul>()).tolerance_for(ktune::DType::f32);
  ktune::Tolerance without_floor = tol;
  without_floor.rms_floor = 0;
  int failed_without_floor = 0;
  for (int i = 0; i <= 2000; ++i) {
    const float x = op::Harness::x_lo + (op::Harness::x_hi - op::Harness::x_lo) * static_cast<float>(i) / 2000.0f;
    for (const float y : {op::Harness::y_lo, 0.37f, op::Harness::y_hi}) {
      const float out = x * (0.5f * (1.0f + std::erf(x * 0.70710677f))) * y;
      const double ref = op::gelu_and_mul_reference(x, y);
      const auto c = ktune::compare(&out, &ref, 1, tol);
      ASSERT_TRUE(c.passed) << "x = " << x << ", y = " << y << ": " << c.summary();
      failed_without_floor += !ktune::compare(&out, &ref, 1, without_floor).passed;
    }
  }
  EXPECT_GT(failed_without_floor, 0) << "the floor is needed: S's formula fails the bare relative L2 bound";
}

}  // namespace
