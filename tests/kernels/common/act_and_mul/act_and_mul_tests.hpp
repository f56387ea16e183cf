// tests/kernels/common/act_and_mul/act_and_mul_tests.hpp: the CPU tests of an act-and-mul op's host-only
// parts (silu_and_mul, gelu_and_mul, gelu_tanh_and_mul), written once and compiled by the host compiler
// (which also proves these headers need no nvcc): the float64 reference's special values, strided rows
// and 16-bit inputs; argument validation; the space (counts, named points, ids, pruning rules); spec.json;
// the harness.
//
// An op's *_test.cpp defines its traits Op (KTUNE_ACT_AND_MUL_HOST_NAMES, act_and_mul_op.hpp, plus
// activation(x) and activation_and_mul(x, y), the activation's float64 reference and the op's) and expands KTUNE_ACT_AND_MUL_HOST_TESTS(Op), which defines the suites
// <Op>Reference, <Op>Validate, <Op>Space, <Op>Spec and <Op>Harness. The reference's hand-computed values,
// its large magnitudes and the spec's tolerances differ from op to op and stay in the op's file.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <ktune/arch.hpp>
#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/space.hpp>
#include <ktune/verify.hpp>

#include "act_and_mul_op.hpp"

namespace ktune::test::act_and_mul {

// ---- reference ------------------------------------------------------------------------------------

template <class Op>
void check_special_values_follow_the_formula() {
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Op::activation(inf), inf);
  EXPECT_TRUE(std::isnan(Op::activation(-inf)));  // -inf * 0 (silu: -inf / inf): the formula has no value there
  EXPECT_TRUE(std::isnan(Op::activation(nan)));
  EXPECT_TRUE(std::isnan(Op::activation_and_mul(1.0, nan)));
  EXPECT_TRUE(std::isnan(Op::activation_and_mul(nan, 0.0)));
  EXPECT_TRUE(std::isnan(Op::activation_and_mul(inf, 0.0)));
  EXPECT_EQ(Op::activation_and_mul(1.0, 0.0), 0.0);
}

template <class Op>
void check_reads_strided_rows_and_propagates_nan_only_where_it_feeds() {
  // tokens = 2, d = 3, in_stride = 8 (two padding elements per row hold NaN that must not be read).
  const float q = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> in = {1, -1, 2, 3, 4, 5, q, q,     // x = (1, -1, 2), y = (3, 4, 5)
                                 q, 0, 1, 2, 2, q, q, q};   // x = (NaN, 0, 1), y = (2, 2, NaN)
  const std::vector<double> out = Op::reference(in.data(), 2, 3, 8);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_DOUBLE_EQ(out[0], Op::activation(1.0) * 3.0);
  EXPECT_DOUBLE_EQ(out[1], Op::activation(-1.0) * 4.0);
  EXPECT_DOUBLE_EQ(out[2], Op::activation(2.0) * 5.0);
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_EQ(out[4], 0.0);
  EXPECT_TRUE(std::isnan(out[5]));
}

template <class Op>
void check_uses_the_stored_values_of_sixteen_bit_types() {
  // 0.1 is not representable: the reference starts from the rounded bf16 / fp16 value.
  const std::vector<__nv_bfloat16> b = {from_float<__nv_bfloat16>(0.1f), from_float<__nv_bfloat16>(2.0f)};
  const double xb = to_float(b[0]);
  EXPECT_NE(xb, 0.1);
  EXPECT_DOUBLE_EQ(Op::reference(b.data(), 1, 1, 2)[0], Op::activation(xb) * 2.0);
  const std::vector<__half> h = {from_float<__half>(65504.0f), from_float<__half>(0.5f)};
  EXPECT_DOUBLE_EQ(Op::reference(h.data(), 1, 1, 2)[0], 32752.0);
}

// ---- validate() -----------------------------------------------------------------------------------

template <class Op, class E>
typename Op::template Args<E> good_args() {
  static E buffer_out[64], buffer_in[128];
  return Op::template make_args<E>(buffer_out, buffer_in, 4, 16, -1, -1);
}

template <class Op>
void check_accepts_valid_and_empty_calls() {
  const auto a = good_args<Op, float>();
  EXPECT_EQ(a.out_stride, 16);
  EXPECT_EQ(a.in_stride, 32);
  EXPECT_TRUE(Op::validate(a).ok());
  // Empty calls are no-ops whatever the pointers and strides.
  EXPECT_TRUE(Op::validate(Op::template make_args<float>(nullptr, nullptr, 0, 16, -1, -1)).ok());
  EXPECT_TRUE(Op::validate(Op::template make_args<float>(nullptr, nullptr, 5, 0, -1, -1)).ok());
  EXPECT_TRUE(Op::is_empty(Op::template make_args<float>(nullptr, nullptr, 5, 0, -1, -1)));
  // Padded rows and T = 1 with any d.
  auto b = a;
  b.out_stride = 17;
  b.in_stride = 40;
  EXPECT_TRUE(Op::validate(b).ok());
  const auto h = good_args<Op, __half>();
  EXPECT_TRUE(Op::validate(Op::make_args(h.out, h.in, 1, 13, -1, -1)).ok());
}

template <class Op>
void check_refuses_bad_arguments() {
  using E = __nv_bfloat16;
  auto code = [](const typename Op::template Args<E>& a) { return Op::validate(a).code; };
  const auto a = good_args<Op, E>();
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
  EXPECT_EQ(code(Op::make_args(a.out, a.in, 4, 16, -2, -1)), StatusCode::invalid_argument);
  EXPECT_EQ(code(Op::make_args(a.out, a.in, 4, 16, -1, -5)), StatusCode::invalid_argument);
  // 0 is not "contiguous" (every ktune op spells that -1): refused with a message saying so, even for
  // one token, where the stride would go unused.
  for (std::int64_t tokens : {1, 4}) {
    const Status out0 = Op::validate(Op::make_args(a.out, a.in, tokens, 16, 0, -1));
    const Status in0 = Op::validate(Op::make_args(a.out, a.in, tokens, 16, -1, 0));
    EXPECT_EQ(out0.code, StatusCode::invalid_argument);
    EXPECT_EQ(in0.code, StatusCode::invalid_argument);
    EXPECT_NE(std::string(out0.message).find("pass -1"), std::string::npos) << out0.message;
    EXPECT_NE(std::string(in0.message).find("pass -1"), std::string::npos) << in0.message;
  }
  // Pointers misaligned to the element.
  b = a;
  b.out = reinterpret_cast<E*>(reinterpret_cast<char*>(a.out) + 1);
  EXPECT_EQ(code(b), StatusCode::invalid_argument);
  b = a;
  b.in = reinterpret_cast<const E*>(reinterpret_cast<const char*>(a.in) + 1);
  EXPECT_EQ(code(b), StatusCode::invalid_argument);
}

template <class Op>
void check_refuses_what_overflows_the_indexing() {
  const auto a = good_args<Op, float>();
  // d above 2^28: 32-bit column indices would overflow. make_args keeps -1 strides from overflowing.
  const auto big = Op::make_args(a.out, a.in, 1, Op::max_d + 1, -1, -1);
  EXPECT_EQ(Op::validate(big).code, StatusCode::too_large);
  EXPECT_EQ(Op::validate(Op::make_args(a.out, a.in, 1, std::numeric_limits<std::int64_t>::max(), -1, -1)).code,
            StatusCode::too_large);
  EXPECT_TRUE(Op::validate(Op::make_args(a.out, a.in, 1, Op::max_d, -1, -1)).ok());
  // tokens * row stride beyond 64-bit byte offsets.
  const auto far = Op::make_args(a.out, a.in, std::int64_t{1} << 40, std::int64_t{1} << 20, -1, -1);
  EXPECT_EQ(Op::validate(far).code, StatusCode::too_large);
  const auto strided = Op::make_args(a.out, a.in, 3, 16, -1, std::numeric_limits<std::int64_t>::max() / 2);
  EXPECT_EQ(Op::validate(strided).code, StatusCode::too_large);
}

template <class Op>
void check_shape_key() {
  const auto a = good_args<Op, float>();
  EXPECT_EQ(Op::tokens(a), 4);
  EXPECT_EQ(Op::width(a), 16);
}

// ---- space ----------------------------------------------------------------------------------------

template <class Op>
std::size_t feasible_count(int arch, int element_bytes) {
  std::size_t n = 0;
  for (const auto& pv : explain<typename Op::Space>(arch_limits(arch), element_bytes)) n += pv.verdict.ok();
  return n;
}

template <class Op>
void check_total_and_feasible_counts() {
  using Space = typename Op::Space;
  EXPECT_EQ(Space::space.size(), 432u);  // 4 tpb x 3 vb x 3 vpt x 3 rpb x 2 split x 2 pdl
  // sm_90: 16-byte variants (tpb x vpt within the widest row: every op's widest spec d is at least 18432, so fp32
  // keeps all 12 and 16-bit all but 1024 x 4) x {rpb 1, 2, 4, split} x pdl, plus the narrow one-step variants
  // (fp32: vb 4 with vpt 2 or 4; 16-bit: vb 2 with vpt 4) x tpb x pdl.
  EXPECT_EQ(feasible_count<Op>(90, 4), 112u);  // 12 * 4 * 2 + 8 * 2
  EXPECT_EQ(feasible_count<Op>(90, 2), 96u);   // 11 * 4 * 2 + 4 * 2
  static_assert(FeasibleSet<Space, 90, 4>::count == 112);
  static_assert(FeasibleSet<Space, 90, 2>::count == 96);
  // Without PDL (sm_80, sm_86) half of them remain.
  EXPECT_EQ(feasible_count<Op>(80, 4), 56u);
  EXPECT_EQ(feasible_count<Op>(80, 2), 48u);
  EXPECT_EQ(feasible_count<Op>(86, 2), 48u);
}

template <class Op>
void check_named_points_are_feasible() {
  using Space = typename Op::Space;
  const auto sm90 = arch_limits(90);
  for (int eb : {2, 4}) {
    EXPECT_TRUE(Space::feasible(Space::original_point, sm90, eb).ok()) << eb;
    EXPECT_TRUE(Space::feasible(Space::unaligned_point(eb), sm90, eb).ok()) << eb;
    EXPECT_EQ(Space::unaligned_point(eb)[Space::kVb], eb);
    for (int arch : supported_archs) {
      // The default and unaligned points must run everywhere: no PDL, no cluster, no shared memory.
      EXPECT_TRUE(Space::feasible(Space::default_point, arch_limits(arch), eb).ok()) << arch;
      EXPECT_TRUE(Space::feasible(Space::unaligned_point(eb), arch_limits(arch), eb).ok()) << arch;
    }
  }
  EXPECT_EQ(Space::space.id(Space::original_point), "tpb_1024.vb_16.vpt_1.rpb_1.split_0.pdl_0");
  EXPECT_EQ(Space::space.id(Space::default_point), "tpb_256.vb_16.vpt_2.rpb_1.split_1.pdl_0");
  EXPECT_EQ(Space::space.id(Space::unaligned_point(2)), "tpb_256.vb_2.vpt_4.rpb_1.split_1.pdl_0");
  using Original = typename Op::OriginalConfig;
  static_assert(Original::threads == 1024 && Original::vector_bytes == 16 && Original::vectors_per_thread == 1 &&
                Original::rows_per_block == 1 && !Original::split && !Original::pdl);
  using Unaligned2 = typename Op::template UnalignedConfig<2>;
  static_assert(Op::template UnalignedConfig<4>::vector_bytes == 4 && Unaligned2::vector_bytes == 2 &&
                Unaligned2::split);
}

template <class Op>
void check_every_feasible_id_round_trips() {
  using Space = typename Op::Space;
  for (int eb : {2, 4}) {
    std::set<std::string> ids;
    for (const auto& pv : explain<Space>(arch_limits(90), eb)) {
      if (!pv.verdict.ok()) continue;
      const std::string id = Space::space.id(pv.point);
      const auto parsed = Space::space.parse(id);
      ASSERT_TRUE(parsed.ok) << id << ": " << parsed.error;
      EXPECT_EQ(parsed.point, pv.point) << id;
      ids.insert(id);
    }
    EXPECT_EQ(ids.size(), feasible_count<Op>(90, eb));
  }
  EXPECT_FALSE(Space::space.parse("tpb_256.vb_16.vpt_2.rpb_1.split_1").ok);         // pdl missing
  EXPECT_FALSE(Space::space.parse("tpb_96.vb_16.vpt_2.rpb_1.split_1.pdl_0").ok);   // not a candidate
  EXPECT_FALSE(Space::space.parse("original").ok);
}

template <class Op>
void check_pruning_rules_name_their_reason() {
  using Space = typename Op::Space;
  using P = typename Space::Point;
  const auto sm90 = arch_limits(90);
  auto rule = [&](const P& p, int eb) {
    const auto v = Space::feasible(p, sm90, eb);
    return std::string(v.ok() ? "" : v.rule);
  };
  EXPECT_NE(rule(P{256, 2, 4, 1, 1, 0}, 4).find("whole number of elements"), std::string::npos);
  EXPECT_NE(rule(P{256, 4, 4, 1, 1, 0}, 2).find("element size or 16 bytes"), std::string::npos);
  EXPECT_NE(rule(P{256, 2, 2, 1, 1, 0}, 2).find("in flight"), std::string::npos);
  EXPECT_NE(rule(P{1024, 16, 4, 1, 0, 0}, 2).find("widest spec half-row"), std::string::npos);
  EXPECT_TRUE(rule(P{1024, 16, 2, 1, 0, 0}, 4).empty());  // 32 KB steps fit the widest fp32 spec row
  EXPECT_NE(rule(P{256, 16, 1, 2, 1, 0}, 2).find("split = 1 only with rpb = 1"), std::string::npos);
  EXPECT_NE(rule(P{256, 2, 4, 1, 0, 0}, 2).find("below 16 bytes only with split = 1"), std::string::npos);
  const auto sm80 = arch_limits(80);
  EXPECT_FALSE(Space::feasible(P{256, 16, 1, 1, 1, 1}, sm80, 2).ok());
  EXPECT_TRUE(Space::feasible(P{256, 16, 1, 1, 1, 1}, sm90, 2).ok());
}

template <class Op>
void check_hash_changes_with_the_space() {
  constexpr auto other =
      make_space(param("tpb", "threads", {128, 256, 512, 1024}), param("vb", "bytes", {2, 4, 16}),
                 param("vpt", "vectors", {1, 2, 4}), param("rpb", "rows", {1, 2, 4}), param("split", "bool", {0, 1}),
                 param("pdl", "bool", {0, 1}));
  EXPECT_EQ(other.hash(), Op::Space::space.hash());
  constexpr auto changed =
      make_space(param("tpb", "threads", {128, 256, 512, 1024}), param("vb", "bytes", {2, 4, 16}),
                 param("vpt", "vectors", {1, 2, 4, 8}), param("rpb", "rows", {1, 2, 4}),
                 param("split", "bool", {0, 1}), param("pdl", "bool", {0, 1}));
  EXPECT_NE(changed.hash(), Op::Space::space.hash());
}

// ---- spec.json ------------------------------------------------------------------------------------

template <class Op>
nlohmann::ordered_json load_spec() {
  std::ifstream f(std::string(KTUNE_SOURCE_DIR "/kernels/") + Op::name + "/spec.json");
  EXPECT_TRUE(f.good());
  return nlohmann::ordered_json::parse(f);
}

template <class Op>
void check_spec_matches_the_issue() {
  const auto j = load_spec<Op>();
  EXPECT_EQ(j.at("op"), Op::name);
  EXPECT_FALSE(j.at("summary").template get<std::string>().empty());
  // Dimensions in the order written: shapes are tokens-major ("tokens=16,d=<width>").
  const auto& dims = j.at("dims");
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_EQ(dims.begin().key(), "tokens");
  // The values come from shapes/catalogue.json (tests/tools/shapes_test.cpp checks they are its grid).
  const auto widths = dims.at("d").template get<std::vector<std::int64_t>>();
  const auto tokens = dims.at("tokens").template get<std::vector<std::int64_t>>();
  EXPECT_TRUE(std::is_sorted(widths.begin(), widths.end()) && std::is_sorted(tokens.begin(), tokens.end()));
  EXPECT_EQ(tokens.front(), 1);
  EXPECT_EQ(j.at("tokens_dim"), "tokens");
  EXPECT_EQ(j.at("width_dim"), "d");
  EXPECT_EQ(j.at("dtypes").template get<std::vector<std::string>>(),
            (std::vector<std::string>{"fp32", "fp16", "bf16"}));
  // Every spec width is what the feasibility rule about the narrowest row assumes.
  for (std::int64_t d : widths) EXPECT_LE(d, Op::Space::widest_spec_d);
  EXPECT_EQ(widths.back(), Op::Space::widest_spec_d);
}

/// For an op whose kernels compute in fp32 and round once (silu_and_mul, gelu_and_mul).
template <class Op>
void check_tolerances_are_the_defaults_for_one_rounding() {
  const auto j = load_spec<Op>();
  for (DType t : all_dtypes) {
    const auto& tol = j.at("tolerance").at(name(t));
    const Tolerance def = default_tolerance(t);
    EXPECT_DOUBLE_EQ(tol.at("rel_l2").template get<double>(), def.rel_l2) << name(t);
    EXPECT_DOUBLE_EQ(tol.at("atol").template get<double>(), def.atol) << name(t);
    EXPECT_DOUBLE_EQ(tol.at("rtol").template get<double>(), def.rtol) << name(t);
  }
}

template <class Op>
void check_tensors_give_the_bytes_moved() {
  const auto j = load_spec<Op>();
  const auto& tensors = j.at("tensors");
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].at("name"), "in");
  EXPECT_EQ(tensors[0].at("shape").template get<std::vector<std::string>>(),
            (std::vector<std::string>{"tokens", "2*d"}));
  EXPECT_EQ(tensors[0].at("dtype"), "element");
  EXPECT_EQ(tensors[0].at("access"), "read");
  EXPECT_EQ(tensors[1].at("name"), "out");
  EXPECT_EQ(tensors[1].at("shape").template get<std::vector<std::string>>(), (std::vector<std::string>{"tokens", "d"}));
  EXPECT_EQ(tensors[1].at("access"), "write");
  // The harness agrees: T = 16 at the widest spec width, bf16 moves 16 * 3 * d * 2 bytes.
  constexpr std::int64_t d = Op::Space::widest_spec_d;
  const typename Op::Harness h;
  const Shape shape{{{"tokens", 16}, {"d", d}}};
  const auto info = h.tensors(shape, DType::bf16);
  ASSERT_EQ(info.size(), 2u);
  EXPECT_EQ(info[0].name, "in");
  EXPECT_EQ(info[1].name, "out");
  EXPECT_EQ(info[0].bytes() + info[1].bytes(), 16u * 3u * static_cast<std::size_t>(d) * 2u);
  EXPECT_TRUE(info[1].is_output());
  EXPECT_FALSE(info[0].is_output());
}

// ---- harness --------------------------------------------------------------------------------------

template <class Op>
void check_inputs_are_seeded_non_zero_and_in_range() {
  using Harness = typename Op::Harness;
  const Harness h;
  const Shape shape{{{"tokens", 3}, {"d", 100}}};
  HostTensors a, b, c;
  h.fill_inputs(shape, DType::f32, 7, a);
  h.fill_inputs(shape, DType::f32, 7, b);
  h.fill_inputs(shape, DType::f32, 8, c);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(a[0].size(), 3u * 200u * 4u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_NE(a[0], c[0]);
  const auto* in = reinterpret_cast<const float*>(a[0].data());
  // The tails of the activation: x beyond half of x_lo's magnitude on either side.
  const float tail = -Harness::x_lo / 2;
  int zeros = 0, x_below = 0, x_above = 0;
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 200; ++i) {
      const float v = in[t * 200 + i];
      zeros += v == 0.0f;
      if (i < 100) {
        EXPECT_GE(v, Harness::x_lo);
        EXPECT_LT(v, Harness::x_hi);
        x_below += v < -tail;
        x_above += v > tail;
      } else {
        EXPECT_GE(v, Harness::y_lo);
        EXPECT_LT(v, Harness::y_hi);
      }
    }
  EXPECT_EQ(zeros, 0);
  EXPECT_GT(x_below, 0);  // both tails of the activation are exercised
  EXPECT_GT(x_above, 0);
}

template <class Op>
void check_harness_reference_is_the_op_reference() {
  using E = __nv_bfloat16;
  const typename Op::Harness h;
  const Shape shape{{{"tokens", 2}, {"d", 9}}};
  HostTensors host;
  h.fill_inputs(shape, DType::bf16, 11, host);
  const auto ref = h.reference(shape, DType::bf16, host);
  ASSERT_EQ(ref.size(), 1u);
  EXPECT_EQ(ref[0], Op::reference(reinterpret_cast<const E*>(host[0].data()), 2, 9, 18));
  // A strided copy of the same shape holds the same values.
  std::vector<E> strided(2 * 25);
  Op::Harness::random_input(strided.data(), 2, 9, 25, 11);
  EXPECT_EQ(Op::reference(strided.data(), 2, 9, 25), ref[0]);
  int dummy_out = 0, dummy_in = 0;
  const auto args = h.make_args(shape, DType::bf16, {&dummy_in, &dummy_out});
  const auto* a = static_cast<const typename Op::template Args<E>*>(args.get());
  EXPECT_EQ(static_cast<const void*>(a->in), &dummy_in);
  EXPECT_EQ(static_cast<void*>(a->out), &dummy_out);
  EXPECT_EQ(a->tokens, 2);
  EXPECT_EQ(a->d, 9);
  EXPECT_EQ(a->out_stride, 9);
  EXPECT_EQ(a->in_stride, 18);
}

}  // namespace ktune::test::act_and_mul

/// The shared host-only tests of the act-and-mul op whose traits struct is `Op`; the suites are named after
/// it.
#define KTUNE_ACT_AND_MUL_HOST_TESTS(Op)                                                                     \
  TEST(Op##Reference, SpecialValuesFollowTheFormula) {                                                       \
    ::ktune::test::act_and_mul::check_special_values_follow_the_formula<Op>();                               \
  }                                                                                                          \
  TEST(Op##Reference, ReadsStridedRowsAndPropagatesNaNOnlyWhereItFeeds) {                                    \
    ::ktune::test::act_and_mul::check_reads_strided_rows_and_propagates_nan_only_where_it_feeds<Op>();       \
  }                                                                                                          \
  TEST(Op##Reference, UsesTheStoredValuesOfSixteenBitTypes) {                                                \
    ::ktune::test::act_and_mul::check_uses_the_stored_values_of_sixteen_bit_types<Op>();                     \
  }                                                                                                          \
  TEST(Op##Validate, AcceptsValidAndEmptyCalls) {                                                            \
    ::ktune::test::act_and_mul::check_accepts_valid_and_empty_calls<Op>();                                   \
  }                                                                                                          \
  TEST(Op##Validate, RefusesBadArguments) {                                                                  \
    ::ktune::test::act_and_mul::check_refuses_bad_arguments<Op>();                                           \
  }                                                                                                          \
  TEST(Op##Validate, RefusesWhatOverflowsTheIndexing) {                                                      \
    ::ktune::test::act_and_mul::check_refuses_what_overflows_the_indexing<Op>();                             \
  }                                                                                                          \
  TEST(Op##Validate, ShapeKey) {                                                                             \
    ::ktune::test::act_and_mul::check_shape_key<Op>();                                                       \
  }                                                                                                          \
  TEST(Op##Space, TotalAndFeasibleCounts) {                                                                  \
    ::ktune::test::act_and_mul::check_total_and_feasible_counts<Op>();                                       \
  }                                                                                                          \
  TEST(Op##Space, NamedPointsAreFeasible) {                                                                  \
    ::ktune::test::act_and_mul::check_named_points_are_feasible<Op>();                                       \
  }                                                                                                          \
  TEST(Op##Space, EveryFeasibleIdRoundTrips) {                                                               \
    ::ktune::test::act_and_mul::check_every_feasible_id_round_trips<Op>();                                   \
  }                                                                                                          \
  TEST(Op##Space, PruningRulesNameTheirReason) {                                                             \
    ::ktune::test::act_and_mul::check_pruning_rules_name_their_reason<Op>();                                 \
  }                                                                                                          \
  TEST(Op##Space, HashChangesWithTheSpace) {                                                                 \
    ::ktune::test::act_and_mul::check_hash_changes_with_the_space<Op>();                                     \
  }                                                                                                          \
  TEST(Op##Spec, MatchesTheIssue) {                                                                          \
    ::ktune::test::act_and_mul::check_spec_matches_the_issue<Op>();                                          \
  }                                                                                                          \
  TEST(Op##Spec, TensorsGiveTheBytesMoved) {                                                                 \
    ::ktune::test::act_and_mul::check_tensors_give_the_bytes_moved<Op>();                                    \
  }                                                                                                          \
  TEST(Op##Harness, InputsAreSeededNonZeroAndInRange) {                                                      \
    ::ktune::test::act_and_mul::check_inputs_are_seeded_non_zero_and_in_range<Op>();                         \
  }                                                                                                          \
  TEST(Op##Harness, ReferenceIsTheOpReference) {                                                             \
    ::ktune::test::act_and_mul::check_harness_reference_is_the_op_reference<Op>();                           \
  }
