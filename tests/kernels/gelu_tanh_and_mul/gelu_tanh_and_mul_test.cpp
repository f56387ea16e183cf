// CPU tests of gelu_tanh_and_mul's host-only parts, compiled by the host compiler (which also proves these
// headers need no nvcc): the float64 reference on hand-computed values and every special case,
// argument validation, the space (counts, named points, ids, pruning rules), spec.json, the harness.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <ktune/arch.hpp>
#include <ktune/dtype.hpp>
#include <ktune/space.hpp>
#include <ktune/verify.hpp>

#include "kernels/gelu_tanh_and_mul/args.hpp"
#include "kernels/gelu_tanh_and_mul/harness.hpp"
#include "kernels/gelu_tanh_and_mul/reference.hpp"
#include "kernels/gelu_tanh_and_mul/space.hpp"

namespace {

namespace op = ktune::ops::gelu_tanh_and_mul;
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// ---- reference ------------------------------------------------------------------------------------

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

TEST(GeluTanhAndMulReference, SpecialValuesFollowTheFormula) {
  EXPECT_EQ(op::gelu_tanh_reference(inf), inf);
  EXPECT_TRUE(std::isnan(op::gelu_tanh_reference(-inf)));  // -inf * 0: the formula has no value there
  EXPECT_TRUE(std::isnan(op::gelu_tanh_reference(nan)));
  EXPECT_TRUE(std::isnan(op::gelu_tanh_and_mul_reference(1.0, nan)));
  EXPECT_TRUE(std::isnan(op::gelu_tanh_and_mul_reference(nan, 0.0)));
  EXPECT_EQ(op::gelu_tanh_and_mul_reference(1.0, 0.0), 0.0);
}

TEST(GeluTanhAndMulReference, ReadsStridedRowsAndPropagatesNaNOnlyWhereItFeeds) {
  // tokens = 2, d = 3, in_stride = 8 (two padding elements per row hold NaN that must not be read).
  const float q = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> in = {1, -1, 2, 3, 4, 5, q, q,     // x = (1, -1, 2), y = (3, 4, 5)
                                 q, 0, 1, 2, 2, q, q, q};   // x = (NaN, 0, 1), y = (2, 2, NaN)
  const std::vector<double> out = op::reference(in.data(), 2, 3, 8);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_DOUBLE_EQ(out[0], op::gelu_tanh_reference(1.0) * 3.0);
  EXPECT_DOUBLE_EQ(out[1], op::gelu_tanh_reference(-1.0) * 4.0);
  EXPECT_DOUBLE_EQ(out[2], op::gelu_tanh_reference(2.0) * 5.0);
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_EQ(out[4], 0.0);
  EXPECT_TRUE(std::isnan(out[5]));
}

TEST(GeluTanhAndMulReference, UsesTheStoredValuesOfSixteenBitTypes) {
  // 0.1 is not representable: the reference starts from the rounded bf16 / fp16 value.
  const std::vector<__nv_bfloat16> b = {ktune::from_float<__nv_bfloat16>(0.1f), ktune::from_float<__nv_bfloat16>(2.0f)};
  const double xb = ktune::to_float(b[0]);
  EXPECT_NE(xb, 0.1);
  EXPECT_DOUBLE_EQ(op::reference(b.data(), 1, 1, 2)[0], op::gelu_tanh_reference(xb) * 2.0);
  const std::vector<__half> h = {ktune::from_float<__half>(65504.0f), ktune::from_float<__half>(0.5f)};
  EXPECT_DOUBLE_EQ(op::reference(h.data(), 1, 1, 2)[0], 32752.0);
}

// ---- validate() -----------------------------------------------------------------------------------

template <class E>
op::Args<E> good_args() {
  static E buffer_out[64], buffer_in[128];
  return op::make_args<E>(buffer_out, buffer_in, 4, 16, -1, -1);
}

TEST(GeluTanhAndMulValidate, AcceptsValidAndEmptyCalls) {
  const auto a = good_args<float>();
  EXPECT_EQ(a.out_stride, 16);
  EXPECT_EQ(a.in_stride, 32);
  EXPECT_TRUE(op::validate(a).ok());
  // Empty calls are no-ops whatever the pointers and strides.
  EXPECT_TRUE(op::validate(op::make_args<float>(nullptr, nullptr, 0, 16, -1, -1)).ok());
  EXPECT_TRUE(op::validate(op::make_args<float>(nullptr, nullptr, 5, 0, -1, -1)).ok());
  EXPECT_TRUE(op::is_empty(op::make_args<float>(nullptr, nullptr, 5, 0, -1, -1)));
  // Padded rows and T = 1 with any d.
  auto b = a;
  b.out_stride = 17;
  b.in_stride = 40;
  EXPECT_TRUE(op::validate(b).ok());
  EXPECT_TRUE(op::validate(op::make_args<__half>(good_args<__half>().out, good_args<__half>().in, 1, 13, -1, -1)).ok());
}

TEST(GeluTanhAndMulValidate, RefusesBadArguments) {
  using ktune::StatusCode;
  auto code = [](const op::Args<__nv_bfloat16>& a) { return op::validate(a).code; };
  const auto a = good_args<__nv_bfloat16>();
  auto b = a;
  b.tokens = -1;
  EXPECT_EQ(code(b), StatusCode::invalid_argument);
  b = a;
  b.d = -3;
  EXPECT_EQ(code(b), StatusCode::invalid_argument);
  b = a;
  b.out = nullptr;
  EXPECT_EQ(code(b), StatusCode::invalid_argument);
  b = a;
  b.in = nullptr;
  EXPECT_EQ(code(b), StatusCode::invalid_argument);
  b = a;
  b.out_stride = 15;
  EXPECT_EQ(code(b), StatusCode::invalid_argument);
  b = a;
  b.in_stride = 31;
  EXPECT_EQ(code(b), StatusCode::invalid_argument);
  // Negative strides other than the API's -1 (contiguous) are refused.
  EXPECT_EQ(code(op::make_args(a.out, a.in, 4, 16, -2, -1)), StatusCode::invalid_argument);
  EXPECT_EQ(code(op::make_args(a.out, a.in, 4, 16, -1, -5)), StatusCode::invalid_argument);
  // 0 is not "contiguous" (every ktune op spells that -1): refused with a message saying so, even for
  // one token, where the stride would go unused.
  for (std::int64_t tokens : {1, 4}) {
    const ktune::Status out0 = op::validate(op::make_args(a.out, a.in, tokens, 16, 0, -1));
    const ktune::Status in0 = op::validate(op::make_args(a.out, a.in, tokens, 16, -1, 0));
    EXPECT_EQ(out0.code, StatusCode::invalid_argument);
    EXPECT_EQ(in0.code, StatusCode::invalid_argument);
    EXPECT_NE(std::string(out0.message).find("pass -1"), std::string::npos) << out0.message;
    EXPECT_NE(std::string(in0.message).find("pass -1"), std::string::npos) << in0.message;
  }
  // Pointers misaligned to the element.
  b = a;
  b.out = reinterpret_cast<__nv_bfloat16*>(reinterpret_cast<char*>(a.out) + 1);
  EXPECT_EQ(code(b), StatusCode::invalid_argument);
  b = a;
  b.in = reinterpret_cast<const __nv_bfloat16*>(reinterpret_cast<const char*>(a.in) + 1);
  EXPECT_EQ(code(b), StatusCode::invalid_argument);
}

TEST(GeluTanhAndMulValidate, RefusesWhatOverflowsTheIndexing) {
  using ktune::StatusCode;
  const auto a = good_args<float>();
  // d above 2^28: 32-bit column indices would overflow. make_args keeps -1 strides from overflowing.
  auto big = op::make_args(a.out, a.in, 1, op::max_d + 1, -1, -1);
  EXPECT_EQ(op::validate(big).code, StatusCode::too_large);
  EXPECT_EQ(op::validate(op::make_args(a.out, a.in, 1, std::numeric_limits<std::int64_t>::max(), -1, -1)).code,
            StatusCode::too_large);
  EXPECT_TRUE(op::validate(op::make_args(a.out, a.in, 1, op::max_d, -1, -1)).ok());
  // tokens * row stride beyond 64-bit byte offsets.
  auto far = op::make_args(a.out, a.in, std::int64_t{1} << 40, std::int64_t{1} << 20, -1, -1);
  EXPECT_EQ(op::validate(far).code, StatusCode::too_large);
  auto strided = op::make_args(a.out, a.in, 3, 16, -1, std::numeric_limits<std::int64_t>::max() / 2);
  EXPECT_EQ(op::validate(strided).code, StatusCode::too_large);
}

TEST(GeluTanhAndMulValidate, ShapeKey) {
  const auto a = good_args<float>();
  EXPECT_EQ(op::tokens(a), 4);
  EXPECT_EQ(op::width(a), 16);
}

// ---- space ----------------------------------------------------------------------------------------

std::size_t feasible_count(int arch, int element_bytes) {
  std::size_t n = 0;
  for (const auto& pv : ktune::explain<op::Space>(ktune::arch_limits(arch), element_bytes)) n += pv.verdict.ok();
  return n;
}

TEST(GeluTanhAndMulSpace, TotalAndFeasibleCounts) {
  EXPECT_EQ(op::Space::space.size(), 432u);  // 4 tpb x 3 vb x 3 vpt x 3 rpb x 2 split x 2 pdl
  // sm_90: 16-byte variants (tpb x vpt within the narrowest row) x {rpb 1, 2, 4, split} x pdl, plus the
  // narrow one-step variants (fp32: vb 4 with vpt 2 or 4; 16-bit: vb 2 with vpt 4) x tpb x pdl.
  EXPECT_EQ(feasible_count(90, 4), 104u);  // 11 * 4 * 2 + 8 * 2
  EXPECT_EQ(feasible_count(90, 2), 80u);   // 9 * 4 * 2 + 4 * 2
  static_assert(ktune::FeasibleSet<op::Space, 90, 4>::count == 104);
  static_assert(ktune::FeasibleSet<op::Space, 90, 2>::count == 80);
  // Without PDL (sm_80, sm_86) half of them remain.
  EXPECT_EQ(feasible_count(80, 4), 52u);
  EXPECT_EQ(feasible_count(80, 2), 40u);
  EXPECT_EQ(feasible_count(86, 2), 40u);
}

TEST(GeluTanhAndMulSpace, NamedPointsAreFeasible) {
  const auto sm90 = ktune::arch_limits(90);
  for (int eb : {2, 4}) {
    EXPECT_TRUE(op::Space::feasible(op::Space::original_point, sm90, eb).ok()) << eb;
    EXPECT_TRUE(op::Space::feasible(op::Space::unaligned_point(eb), sm90, eb).ok()) << eb;
    EXPECT_EQ(op::Space::unaligned_point(eb)[op::Space::kVb], eb);
    for (int arch : ktune::supported_archs) {
      // The default and unaligned points must run everywhere: no PDL, no cluster, no shared memory.
      EXPECT_TRUE(op::Space::feasible(op::Space::default_point, ktune::arch_limits(arch), eb).ok()) << arch;
      EXPECT_TRUE(op::Space::feasible(op::Space::unaligned_point(eb), ktune::arch_limits(arch), eb).ok()) << arch;
    }
  }
  EXPECT_EQ(op::Space::space.id(op::Space::original_point), "tpb_1024.vb_16.vpt_1.rpb_1.split_0.pdl_0");
  EXPECT_EQ(op::Space::space.id(op::Space::default_point), "tpb_256.vb_16.vpt_2.rpb_1.split_1.pdl_0");
  EXPECT_EQ(op::Space::space.id(op::Space::unaligned_point(2)), "tpb_256.vb_2.vpt_4.rpb_1.split_1.pdl_0");
  static_assert(op::original_config_t::threads == 1024 && op::original_config_t::vector_bytes == 16 &&
                op::original_config_t::vectors_per_thread == 1 && op::original_config_t::rows_per_block == 1 &&
                !op::original_config_t::split && !op::original_config_t::pdl);
  static_assert(op::unaligned_config_t<4>::vector_bytes == 4 && op::unaligned_config_t<2>::vector_bytes == 2 &&
                op::unaligned_config_t<2>::split);
}

TEST(GeluTanhAndMulSpace, EveryFeasibleIdRoundTrips) {
  for (int eb : {2, 4}) {
    std::set<std::string> ids;
    for (const auto& pv : ktune::explain<op::Space>(ktune::arch_limits(90), eb)) {
      if (!pv.verdict.ok()) continue;
      const std::string id = op::Space::space.id(pv.point);
      const auto parsed = op::Space::space.parse(id);
      ASSERT_TRUE(parsed.ok) << id << ": " << parsed.error;
      EXPECT_EQ(parsed.point, pv.point) << id;
      ids.insert(id);
    }
    EXPECT_EQ(ids.size(), feasible_count(90, eb));
  }
  EXPECT_FALSE(op::Space::space.parse("tpb_256.vb_16.vpt_2.rpb_1.split_1").ok);         // pdl missing
  EXPECT_FALSE(op::Space::space.parse("tpb_96.vb_16.vpt_2.rpb_1.split_1.pdl_0").ok);   // not a candidate
  EXPECT_FALSE(op::Space::space.parse("original").ok);
}

TEST(GeluTanhAndMulSpace, PruningRulesNameTheirReason) {
  const auto sm90 = ktune::arch_limits(90);
  using P = op::Space::Point;
  auto rule = [&](const P& p, int eb) {
    const auto v = op::Space::feasible(p, sm90, eb);
    return std::string(v.ok() ? "" : v.rule);
  };
  EXPECT_NE(rule(P{256, 2, 4, 1, 1, 0}, 4).find("whole number of elements"), std::string::npos);
  EXPECT_NE(rule(P{256, 4, 4, 1, 1, 0}, 2).find("element size or 16 bytes"), std::string::npos);
  EXPECT_NE(rule(P{256, 2, 2, 1, 1, 0}, 2).find("in flight"), std::string::npos);
  EXPECT_NE(rule(P{1024, 16, 2, 1, 0, 0}, 2).find("narrowest spec half-row"), std::string::npos);
  EXPECT_TRUE(rule(P{1024, 16, 2, 1, 0, 0}, 4).empty());  // 32 KB steps fit an fp32 row of 14336
  EXPECT_NE(rule(P{256, 16, 1, 2, 1, 0}, 2).find("split = 1 only with rpb = 1"), std::string::npos);
  EXPECT_NE(rule(P{256, 2, 4, 1, 0, 0}, 2).find("below 16 bytes only with split = 1"), std::string::npos);
  const auto sm80 = ktune::arch_limits(80);
  EXPECT_FALSE(op::Space::feasible(P{256, 16, 1, 1, 1, 1}, sm80, 2).ok());
  EXPECT_TRUE(op::Space::feasible(P{256, 16, 1, 1, 1, 1}, sm90, 2).ok());
}

TEST(GeluTanhAndMulSpace, HashChangesWithTheSpace) {
  constexpr auto other = ktune::make_space(
      ktune::param("tpb", "threads", {128, 256, 512, 1024}), ktune::param("vb", "bytes", {2, 4, 16}),
      ktune::param("vpt", "vectors", {1, 2, 4}), ktune::param("rpb", "rows", {1, 2, 4}),
      ktune::param("split", "bool", {0, 1}), ktune::param("pdl", "bool", {0, 1}));
  EXPECT_EQ(other.hash(), op::Space::space.hash());
  constexpr auto changed = ktune::make_space(
      ktune::param("tpb", "threads", {128, 256, 512, 1024}), ktune::param("vb", "bytes", {2, 4, 16}),
      ktune::param("vpt", "vectors", {1, 2, 4, 8}), ktune::param("rpb", "rows", {1, 2, 4}),
      ktune::param("split", "bool", {0, 1}), ktune::param("pdl", "bool", {0, 1}));
  EXPECT_NE(changed.hash(), op::Space::space.hash());
}

// ---- spec.json ------------------------------------------------------------------------------------

nlohmann::ordered_json load_spec() {
  std::ifstream f(KTUNE_SOURCE_DIR "/kernels/gelu_tanh_and_mul/spec.json");
  EXPECT_TRUE(f.good());
  return nlohmann::ordered_json::parse(f);
}

TEST(GeluTanhAndMulSpec, MatchesTheIssue) {
  const auto j = load_spec();
  EXPECT_EQ(j.at("op"), "gelu_tanh_and_mul");
  EXPECT_FALSE(j.at("summary").get<std::string>().empty());
  // Dimensions in the order written: shapes are tokens-major ("tokens=16,d=14336").
  const auto& dims = j.at("dims");
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_EQ(dims.begin().key(), "tokens");
  EXPECT_EQ(dims.at("tokens").get<std::vector<std::int64_t>>(), (std::vector<std::int64_t>{1, 16, 128, 512, 2048, 8192}));
  EXPECT_EQ(dims.at("d").get<std::vector<std::int64_t>>(), (std::vector<std::int64_t>{14336, 18944, 28672}));
  EXPECT_EQ(j.at("tokens_dim"), "tokens");
  EXPECT_EQ(j.at("width_dim"), "d");
  EXPECT_EQ(j.at("dtypes").get<std::vector<std::string>>(), (std::vector<std::string>{"fp32", "fp16", "bf16"}));
  // Every spec width is what the feasibility rule about the narrowest row assumes.
  for (std::int64_t d : dims.at("d").get<std::vector<std::int64_t>>()) EXPECT_GE(d, op::Space::narrowest_spec_d);
  EXPECT_EQ(dims.at("d").get<std::vector<std::int64_t>>().front(), op::Space::narrowest_spec_d);
}

// tanh.approx.f32 (S's tanh, as SGLang's -use_fast_math build computes it) has a relative error up to
// 2^-10.987: an output 0.5 |x y| |tanh u| 2^-10.987 off, up to 4.6e-3 at the harness's |x| <= 6.25,
// |y| <= 3.125. Where x > 0 that is within rtol of the output (|out| >= 0.5 |x y|); where x < 0 the output
// itself is small and atol must take it. So fp32 and fp16 get atol 5e-3, and fp32 rtol 1e-3; bf16 keeps
// its one-rounding defaults, which are wider already.
TEST(GeluTanhAndMulSpec, TolerancesCoverTanhApprox) {
  const auto j = load_spec();
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

TEST(GeluTanhAndMulSpec, TensorsGiveTheBytesMoved) {
  const auto j = load_spec();
  const auto& tensors = j.at("tensors");
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].at("name"), "in");
  EXPECT_EQ(tensors[0].at("shape").get<std::vector<std::string>>(), (std::vector<std::string>{"tokens", "2*d"}));
  EXPECT_EQ(tensors[0].at("dtype"), "element");
  EXPECT_EQ(tensors[0].at("access"), "read");
  EXPECT_EQ(tensors[1].at("name"), "out");
  EXPECT_EQ(tensors[1].at("shape").get<std::vector<std::string>>(), (std::vector<std::string>{"tokens", "d"}));
  EXPECT_EQ(tensors[1].at("access"), "write");
  // The harness agrees: T = 16, d = 14336, bf16 moves 16 * 3 * 14336 * 2 bytes.
  const op::Harness h;
  const ktune::Shape shape{{{"tokens", 16}, {"d", 14336}}};
  const auto info = h.tensors(shape, ktune::DType::bf16);
  ASSERT_EQ(info.size(), 2u);
  EXPECT_EQ(info[0].name, "in");
  EXPECT_EQ(info[1].name, "out");
  EXPECT_EQ(info[0].bytes() + info[1].bytes(), 16u * 3u * 14336u * 2u);
  EXPECT_TRUE(info[1].is_output());
  EXPECT_FALSE(info[0].is_output());
}

// ---- harness --------------------------------------------------------------------------------------

TEST(GeluTanhAndMulHarness, InputsAreSeededNonZeroAndInRange) {
  const op::Harness h;
  const ktune::Shape shape{{{"tokens", 3}, {"d", 100}}};
  ktune::HostTensors a, b, c;
  h.fill_inputs(shape, ktune::DType::f32, 7, a);
  h.fill_inputs(shape, ktune::DType::f32, 7, b);
  h.fill_inputs(shape, ktune::DType::f32, 8, c);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(a[0].size(), 3u * 200u * 4u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_NE(a[0], c[0]);
  const auto* in = reinterpret_cast<const float*>(a[0].data());
  int zeros = 0, x_below = 0, x_above = 0;
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 200; ++i) {
      const float v = in[t * 200 + i];
      zeros += v == 0.0f;
      if (i < 100) {
        EXPECT_GE(v, op::Harness::x_lo);
        EXPECT_LT(v, op::Harness::x_hi);
        x_below += v < -3.0f;
        x_above += v > 3.0f;
      } else {
        EXPECT_GE(v, op::Harness::y_lo);
        EXPECT_LT(v, op::Harness::y_hi);
      }
    }
  EXPECT_EQ(zeros, 0);
  EXPECT_GT(x_below, 0);  // both tails of gelu_tanh are exercised
  EXPECT_GT(x_above, 0);
}

TEST(GeluTanhAndMulHarness, ReferenceIsTheOpReference) {
  const op::Harness h;
  const ktune::Shape shape{{{"tokens", 2}, {"d", 9}}};
  ktune::HostTensors host;
  h.fill_inputs(shape, ktune::DType::bf16, 11, host);
  const auto ref = h.reference(shape, ktune::DType::bf16, host);
  ASSERT_EQ(ref.size(), 1u);
  EXPECT_EQ(ref[0], op::reference(reinterpret_cast<const __nv_bfloat16*>(host[0].data()), 2, 9, 18));
  // A strided copy of the same shape holds the same values.
  std::vector<__nv_bfloat16> strided(2 * 25);
  op::Harness::random_input(strided.data(), 2, 9, 25, 11);
  EXPECT_EQ(op::reference(strided.data(), 2, 9, 25), ref[0]);
  int dummy_out = 0, dummy_in = 0;
  const auto args = h.make_args(shape, ktune::DType::bf16, {&dummy_in, &dummy_out});
  const auto* a = static_cast<const op::Args<__nv_bfloat16>*>(args.get());
  EXPECT_EQ(static_cast<const void*>(a->in), &dummy_in);
  EXPECT_EQ(static_cast<void*>(a->out), &dummy_out);
  EXPECT_EQ(a->tokens, 2);
  EXPECT_EQ(a->d, 9);
  EXPECT_EQ(a->out_stride, 9);
  EXPECT_EQ(a->in_stride, 18);
}

}  // namespace
