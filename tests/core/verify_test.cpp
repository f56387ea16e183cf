#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <ktune/random.hpp>
#include <ktune/verify.hpp>

namespace {
using ktune::DType;

template <class T>
std::vector<T> as(const std::vector<double>& v) {
  std::vector<T> out;
  for (double x : v) out.push_back(ktune::from_float<T>(static_cast<float>(x)));
  return out;
}

TEST(Verify, ExactOutputPasses) {
  const std::vector<double> ref = {1.0, -2.5, 3.25, 0.125};
  const auto c = ktune::compare(as<float>(ref).data(), ref.data(), ref.size(), ktune::default_tolerance(DType::f32));
  EXPECT_TRUE(c.passed) << c.summary();
  EXPECT_EQ(c.max_abs, 0.0);
  EXPECT_EQ(c.rel_l2, 0.0);
}

TEST(Verify, RelativeL2AndMaxAbsByHand) {
  // out - ref = (0, 0, 0.5, 0): ||err|| = 0.5, ||ref|| = sqrt(1 + 4 + 16 + 4) = 5 -> rel_l2 = 0.1
  const std::vector<double> ref = {1, 2, 4, 2};
  const std::vector<float> out = {1, 2, 4.5f, 2};
  const auto c = ktune::compare(out.data(), ref.data(), 4, {0.2, 1.0, 0.0});
  EXPECT_DOUBLE_EQ(c.rel_l2, 0.1);
  EXPECT_DOUBLE_EQ(c.max_abs, 0.5);
  EXPECT_TRUE(c.passed) << c.summary();
  const auto strict = ktune::compare(out.data(), ref.data(), 4, {0.05, 1.0, 0.0});
  EXPECT_FALSE(strict.passed) << "rel_l2 0.1 > 0.05";
  const auto elementwise = ktune::compare(out.data(), ref.data(), 4, {0.2, 0.25, 0.0});
  EXPECT_FALSE(elementwise.passed) << "|0.5| > atol 0.25";
  EXPECT_EQ(elementwise.mismatched, 1u);
  EXPECT_EQ(elementwise.first_bad, 2u);
}

// An output within atol of zero everywhere: its relative L2 error is taken against atol·√n, not against a
// norm of 1e-9 (one element of gelu_tanh's saturated tail at d = 1 failed with rel_l2 = 1 before).
TEST(Verify, RelativeL2OfAnOutputNearZeroIsAgainstTheAbsoluteTolerance) {
  const ktune::Tolerance tol{1e-3, 5e-3, 1e-3};
  const std::vector<double> ref = {-1e-9};
  const std::vector<float> zero = {0.f};
  const auto c = ktune::compare(zero.data(), ref.data(), 1, tol);
  EXPECT_TRUE(c.passed) << c.summary();
  EXPECT_NEAR(c.rel_l2, 1e-9 / 5e-3, 1e-12);
  // Still a real bound: every element off by half of atol around a zero reference fails it.
  const std::vector<double> zeros(64, 0.0);
  const std::vector<float> off(64, 2.5e-3f);
  const auto d = ktune::compare(off.data(), zeros.data(), 64, tol);
  EXPECT_FALSE(d.passed) << d.summary();
  EXPECT_EQ(d.mismatched, 0u) << "each element is within atol: the relative L2 error alone rejects it";
  EXPECT_NEAR(d.rel_l2, 0.5, 1e-6);
  // A reference well above atol·√n keeps the plain ratio.
  EXPECT_DOUBLE_EQ(ktune::relative_l2(0.25, 25.0, 4, 5e-3), 0.1);
  EXPECT_DOUBLE_EQ(ktune::squared_error(ktune::relative_l2(0.25, 25.0, 4, 5e-3), 25.0, 4, 5e-3), 0.25);
  EXPECT_DOUBLE_EQ(ktune::squared_error(ktune::relative_l2(1e-6, 0.0, 4, 5e-3), 0.0, 4, 5e-3), 1e-6);
}

// A spec's rms_floor raises the norm the relative L2 error is taken against, never lowers it below atol.
TEST(Verify, RmsFloorJudgesSmallOutputsByTheirErrorAgainstTheFloor) {
  const std::vector<double> ref = {1.3e-4};  // gelu at x = -4, y = 1: its fp32 formula off by 3e-8
  const std::vector<float> out = {static_cast<float>(1.3e-4 + 3e-8)};
  ktune::Tolerance tol{1e-5, 1e-5, 1e-5};
  EXPECT_FALSE(ktune::compare(out.data(), ref.data(), 1, tol).passed) << "2.3e-4 of the value itself";
  tol.rms_floor = 1;
  EXPECT_DOUBLE_EQ(tol.l2_floor(), 1.0);
  const auto c = ktune::compare(out.data(), ref.data(), 1, tol);
  EXPECT_TRUE(c.passed) << c.summary();
  EXPECT_NEAR(c.rel_l2, 3e-8, 1e-9);
  // Outputs above the floor keep the plain ratio; an error of 1e-4 of an O(1) output still fails.
  const std::vector<double> big = {2.0, -3.0};
  const std::vector<float> off = {2.0002f, -3.0003f};
  EXPECT_FALSE(ktune::compare(off.data(), big.data(), 2, {1e-5, 1e-3, 1e-3, 1}).passed);
  EXPECT_DOUBLE_EQ((ktune::Tolerance{1e-5, 1e-3, 1e-5, 1e-4}.l2_floor()), 1e-3) << "atol when larger";
}

TEST(Verify, RtolScalesWithTheReference) {
  const std::vector<double> ref = {1000.0};
  const std::vector<float> out = {1001.0f};
  EXPECT_TRUE(ktune::compare(out.data(), ref.data(), 1, {1, 0.0, 2e-3}).passed);   // 1 <= 2
  EXPECT_FALSE(ktune::compare(out.data(), ref.data(), 1, {1, 0.0, 5e-4}).passed);  // 1 > 0.5
}

TEST(Verify, PoisonIsAnUnwrittenElement) {
  const std::vector<double> ref = {1, 2, 3};
  std::vector<__half> out = as<__half>(ref);
  out[1] = ktune::from_bits<__half>(ktune::poison_bits<__half>());
  const auto c = ktune::compare(out.data(), ref.data(), 3, ktune::default_tolerance(DType::f16));
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.unwritten, 1u);
  EXPECT_EQ(c.first_bad, 1u);
}

TEST(Verify, PoisonPatternsAreNaNsThatArithmeticDoesNotProduce) {
  EXPECT_TRUE(std::isnan(ktune::from_bits<float>(ktune::poison_bits<float>())));
  EXPECT_TRUE(std::isnan(ktune::to_float(ktune::from_bits<__half>(ktune::poison_bits<__half>()))));
  EXPECT_TRUE(std::isnan(ktune::to_float(ktune::from_bits<__nv_bfloat16>(ktune::poison_bits<__nv_bfloat16>()))));
  const float computed_nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(ktune::is_poison(computed_nan));
  EXPECT_FALSE(ktune::is_poison(ktune::from_float<__half>(computed_nan)));
  EXPECT_FALSE(ktune::is_poison(ktune::from_float<__nv_bfloat16>(computed_nan)));
}

TEST(Verify, NaNAndInfMustMatchExactly) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> ref = {nan, -inf, 1.0};
  const float fnan = std::numeric_limits<float>::quiet_NaN();
  const float finf = std::numeric_limits<float>::infinity();
  const std::vector<float> good = {fnan, -finf, 1.0f};
  EXPECT_TRUE(ktune::compare(good.data(), ref.data(), 3, ktune::default_tolerance(DType::f32)).passed);
  const std::vector<float> missing_nan = {0.0f, -finf, 1.0f};
  EXPECT_FALSE(ktune::compare(missing_nan.data(), ref.data(), 3, ktune::default_tolerance(DType::f32)).passed);
  const std::vector<float> extra_nan = {fnan, -finf, fnan};
  EXPECT_FALSE(ktune::compare(extra_nan.data(), ref.data(), 3, ktune::default_tolerance(DType::f32)).passed);
  const std::vector<float> wrong_inf = {fnan, finf, 1.0f};
  EXPECT_FALSE(ktune::compare(wrong_inf.data(), ref.data(), 3, ktune::default_tolerance(DType::f32)).passed);
}

TEST(Verify, DefaultTolerancesAcceptOneRoundingAndRejectTwoUlpsOfBf16Drift) {
  // A value rounded once to bf16 passes; the same value off by 4 bf16 ulps (at 1.0: 4 * 2^-7) fails.
  std::vector<double> ref;
  for (int i = 0; i < 1000; ++i) ref.push_back(1.0 + ktune::uniform_at(7, i, 0.f, 1.f));
  auto once = as<__nv_bfloat16>(ref);
  EXPECT_TRUE(ktune::compare(once.data(), ref.data(), ref.size(), ktune::default_tolerance(DType::bf16)).passed);
  std::vector<double> shifted = ref;
  for (double& x : shifted) x += 4.0 / 128.0;
  auto drifted = as<__nv_bfloat16>(shifted);
  EXPECT_FALSE(ktune::compare(drifted.data(), ref.data(), ref.size(), ktune::default_tolerance(DType::bf16)).passed);
}

TEST(Random, DeterministicPerSeedAndIndexAndInRange) {
  EXPECT_EQ(ktune::uniform_at(1, 5, -1, 1), ktune::uniform_at(1, 5, -1, 1));
  EXPECT_NE(ktune::uniform_at(1, 5, -1, 1), ktune::uniform_at(2, 5, -1, 1));
  EXPECT_NE(ktune::uniform_at(1, 5, -1, 1), ktune::uniform_at(1, 6, -1, 1));
  double sum = 0;
  int zeros = 0;
  for (int i = 0; i < 10000; ++i) {
    const float u = ktune::uniform_at(42, i, -2.f, 3.f);
    ASSERT_GE(u, -2.f);
    ASSERT_LT(u, 3.f);
    zeros += u == 0.f;
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.05);
  EXPECT_EQ(zeros, 0);
}
}  // namespace
