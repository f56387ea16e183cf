// CPU tests of gelu_tanh_and_mul's host-only parts, compiled by the host compiler (which also proves these
// headers need no nvcc): the float64 tanh GELU on hand-computed values and large magnitudes, the spec's
// tolerances (wide enough for S's tanh.approx.f32), and the checks every act-and-mul op shares
// (tests/kernels/common/act_and_mul/act_and_mul_tests.hpp: special values, strided rows, argument
// validation, the space, spec.json, the harness).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "../common/act_and_mul/act_and_mul_tests.hpp"
#include "kernels/gelu_tanh_and_mul/args.hpp"
#include "kernels/gelu_tanh_and_mul/harness.hpp"
#include "kernels/gelu_tanh_and_mul/reference.hpp"
#include "kernels/gelu_tanh_and_mul/space.hpp"

namespace {

namespace op = ktune::ops::gelu_tanh_and_mul;

struct GeluTanhAndMul {
  KTUNE_ACT_AND_MUL_HOST_NAMES(gelu_tanh_and_mul)
  static double activation(double x) { return op::gelu_tanh_reference(x); }
  static double activation_and_mul(double x, double y) { return op::gelu_tanh_and_mul_reference(x, y); }
};

KTUNE_ACT_AND_MUL_HOST_TESTS(GeluTanhAndMul)

TEST(GeluTanhAndMulReference, HandComputedValues) {
  // gelu_tanh(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3): u(1) = 0.8296759101...,
  // tanh(u(1)) = 0.6808..., so gelu_tanh(1) = 0.8411919906082768; gelu_tanh(-1) = -(1 - 0.8411919906082768).
  const double u1 = 0.79788456080286535588 * (1.0 + 0.044715);
  EXPECT_DOUBLE_EQ(op::gelu_tanh_reference(0.0), 0.0);
  EXPECT_NEAR(op::gelu_tanh_reference(1.0), 0.5 * (1.0 + std::tanh(u1)), 1e-15);
  EXPECT_NEAR(op::gelu_tanh_reference(1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(op::gelu_tanh_reference(-1.0), -0.15880800939172324, 1e-15);
  // Close to the erf GELU (0.8413447460685429 at 1) but not equal: it is its own formula.
  EXPECT_GT(std::fabs(op::gelu_tanh_reference(1.0) - 0.8413447460685429), 1e-4);
  EXPECT_DOUBLE_EQ(op::gelu_tanh_and_mul_reference(1.0, 3.0), 3.0 * op::gelu_tanh_reference(1.0));
}

TEST(GeluTanhAndMulReference, LargeMagnitudesNeverGiveNaN) {
  // Far below zero tanh = -1 and x * 0 = -0 (x^3 may overflow to -inf on the way: tanh(-inf) = -1).
  const double far = op::gelu_tanh_reference(-1000.0);
  EXPECT_EQ(far, 0.0);
  EXPECT_TRUE(std::signbit(far));
  EXPECT_FALSE(std::isnan(op::gelu_tanh_and_mul_reference(-1.0e300, 5.0)));
  // A tiny negative where the double still resolves it: u(-6) = -12.4939..., -6 / (1 + e^24.99) = -8.44e-11.
  EXPECT_NEAR(op::gelu_tanh_reference(-6.0), -6.0 / (1.0 + std::exp(2.0 * 0.79788456080286535588 * (6.0 + 0.044715 * 216.0))), 1e-24);
  EXPECT_LT(op::gelu_tanh_reference(-6.0), -8.0e-11);
  EXPECT_DOUBLE_EQ(op::gelu_tanh_reference(65504.0), 65504.0);
  EXPECT_DOUBLE_EQ(op::gelu_tanh_and_mul_reference(65504.0, 0.75), 49128.0);
}

// tanh.approx.f32 (S's tanh, as SGLang's -use_fast_math build computes it) has a relative error up to
// 2^-10.987: an output 0.5 |x y| |tanh u| 2^-10.987 off, up to 4.6e-3 at the harness's |x| <= 6.25,
// |y| <= 3.125. Where x > 0 that is within rtol of the output (|out| >= 0.5 |x y|); where x < 0 the output
// itself is small and atol must take it. So fp32 and fp16 get atol 5e-3, and fp32 rtol 1e-3; bf16 keeps
// its one-rounding defaults, which are wider already.
TEST(GeluTanhAndMulSpec, TolerancesCoverTanhApprox) {
  const auto j = ktune::test::act_and_mul::load_spec<GeluTanhAndMul>();
  const double bound = 0.5 * op::Harness::x_hi * op::Harness::y_hi * std::ldexp(1.0, -11) * 1.01;  // 2^-10.987
  for (ktune::DType t : ktune::all_dtypes) {
    const auto& tol = j.at("tolerance").at(ktune::name(t));
    const ktune::Tolerance def = ktune::default_tolerance(t);
    EXPECT_GE(tol.at("atol").get<double>(), bound) << ktune::name(t);
    EXPECT_GE(tol.at("atol").get<double>(), def.atol) << ktune::name(t);
    EXPECT_GE(tol.at("rtol").get<double>(), def.rtol) << ktune::name(t);
    EXPECT_GE(tol.at("rel_l2").get<double>(), def.rel_l2) << ktune::name(t);
    EXPECT_GE(tol.at("rtol").get<double>(), 2 * std::ldexp(1.0, -11)) << ktune::name(t);
  }
  const auto& bf16 = j.at("tolerance").at("bf16");
  EXPECT_DOUBLE_EQ(bf16.at("atol").get<double>(), ktune::default_tolerance(ktune::DType::bf16).atol);
}

}  // namespace
