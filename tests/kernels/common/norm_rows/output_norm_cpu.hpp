// tests/kernels/common/norm_rows/output_norm_cpu.hpp: the host-side tests of an RMS norm op with a
// separate output (rmsnorm, gemma_rmsnorm): the float64 reference on hand-computed values and the edge
// cases of the semantics (written with the weight each scale needs, so Op::Weight decides w or 1 + w),
// validate() (in place and overlaps included), the space (the shared row structures for the kind without
// a residual), the harness and spec.json.
//
// An op's *_test.cpp includes its host headers, defines its traits (KTUNE_NORM_ROWS_HOST_OP and Weight)
// and instantiates the tests with KTUNE_OUTPUT_NORM_CPU_TESTS(Op).
#pragma once

#include <algorithm>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ktune/space.hpp>
#include <ktune/verify.hpp>

#include "op_traits.hpp"
#include "rows_cpu.hpp"

namespace ktune::test::norm_rows::output {

// ---- reference ----------------------------------------------------------------------------------

template <class Op>
void check_reference_hand_computed() {
  using W = typename Op::Weight;
  // Row 0: [3, 4], mean(x^2) = 12.5; row 1: [-0.5, 2], mean(x^2) = 2.125; eps 0.
  const double input[] = {3, 4, 99, -0.5, 2, 99};  // stride 3: the 99s are padding
  const double weight[] = {W::stored(1), W::stored(0.5)};
  double out[4];
  Op::reference(input, weight, 2, 2, 3, 0.0, DType::f32, out);
  const double r0 = 1 / std::sqrt(12.5), r1 = 1 / std::sqrt(2.125);
  EXPECT_DOUBLE_EQ(out[0], 3 * r0);
  EXPECT_DOUBLE_EQ(out[1], 4 * r0 * 0.5);
  EXPECT_DOUBLE_EQ(out[2], -0.5 * r1);
  EXPECT_DOUBLE_EQ(out[3], 2 * r1 * 0.5);
  EXPECT_NEAR(out[0], 0.848528137423857, 1e-15);
  // A factor of 0 (Gemma: w = -1) zeroes its column.
  const double zero_first[] = {W::stored(0), W::stored(2)};
  Op::reference(input, zero_first, 1, 2, 3, 0.0, DType::f32, out);
  EXPECT_EQ(out[0], 0);
  EXPECT_DOUBLE_EQ(out[1], 4 * r0 * 2);
}

template <class Op>
void check_reference_eps_and_special_values() {
  using W = typename Op::Weight;
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  constexpr double inf = std::numeric_limits<double>::infinity();
  // h = 1: out = x / sqrt(x^2 + eps) * 2. x = 0.001, eps = 3e-6: sqrt(1e-6 + 3e-6) = 0.002.
  const double x[] = {0.001}, w2[] = {W::stored(2)};
  double o[1];
  Op::reference(x, w2, 1, 1, 1, 3e-6, DType::f32, o);
  EXPECT_NEAR(o[0], 1.0, 1e-12);
  const double zero[] = {0};
  Op::reference(zero, w2, 1, 1, 1, 1e-6, DType::f16, o);
  EXPECT_EQ(o[0], 0) << "eps keeps a zero row at zero";
  // NaN spreads over its row only; an infinite element makes its row's others 0 and itself NaN.
  const double rows[] = {1, nan, 3, 1, 2, 3, inf, 2, 1};
  const double w[] = {W::stored(1), W::stored(1), W::stored(1)};
  double out[9];
  Op::reference(rows, w, 3, 3, 3, 1e-6, DType::bf16, out);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(out[i]));
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isfinite(out[i]));
  EXPECT_TRUE(std::isnan(out[6]));
  EXPECT_EQ(out[7], 0);
  // fp16 inputs whose squares overflow fp16 still normalise to about ±1.
  const double big[] = {60000, -60000, 65504, -30000};
  const double ones[] = {W::stored(1), W::stored(1), W::stored(1), W::stored(1)};
  double ob[4];
  Op::reference(big, ones, 1, 4, 4, 1e-6, DType::f16, ob);
  for (double v : ob) EXPECT_LT(std::fabs(v), 2.0);
  EXPECT_EQ(Op::as_stored(-65520.0, DType::f16), -inf);
  EXPECT_EQ(Op::as_stored(65519.0, DType::f16), 65519.0);
}

// ---- validate -----------------------------------------------------------------------------------

template <class Op, class E>
typename Op::template Args<E> good_args() {
  // Fake, never dereferenced addresses: validate only looks at their values.
  return Op::make_args(reinterpret_cast<E*>(0x100000), reinterpret_cast<const E*>(0x200000),
                       reinterpret_cast<const E*>(0x300000), 4, 64, 1e-6f, -1, -1);
}

template <class Op>
void check_validate_resolves_contiguous_strides() {
  const auto a = good_args<Op, __half>();
  EXPECT_EQ(a.output_stride, 64);
  EXPECT_EQ(a.input_stride, 64);
  EXPECT_TRUE(Op::validate(a).ok());
  EXPECT_EQ(Op::tokens(a), 4);
  EXPECT_EQ(Op::width(a), 64);
}

template <class Op>
void check_validate_refuses_bad_arguments() {
  auto check = [](auto mutate, StatusCode want, const char* what) {
    auto a = good_args<Op, float>();
    mutate(a);
    const Status s = Op::validate(a);
    EXPECT_EQ(s.code, want) << what << ": " << s.message;
  };
  using A = typename Op::template Args<float>;
  check([](A& a) { a.tokens = -1; }, StatusCode::invalid_argument, "negative tokens");
  check([](A& a) { a.h = 0; }, StatusCode::invalid_argument, "h = 0");
  check([](A& a) { a.input_stride = 63; }, StatusCode::invalid_argument, "short input stride");
  check([](A& a) { a.output_stride = -2; }, StatusCode::invalid_argument, "negative output stride");
  check([](A& a) { a.eps = -1e-6f; }, StatusCode::invalid_argument, "negative eps");
  check([](A& a) { a.eps = std::numeric_limits<float>::quiet_NaN(); }, StatusCode::invalid_argument, "NaN eps");
  check([](A& a) { a.eps = std::numeric_limits<float>::infinity(); }, StatusCode::invalid_argument, "inf eps");
  check([](A& a) { a.output = nullptr; }, StatusCode::invalid_argument, "null output");
  check([](A& a) { a.input = nullptr; }, StatusCode::invalid_argument, "null input");
  check([](A& a) { a.weight = nullptr; }, StatusCode::invalid_argument, "null weight");
  check([](A& a) { a.output = reinterpret_cast<float*>(0x100002); }, StatusCode::invalid_argument, "misaligned output");
  check([](A& a) { a.weight = reinterpret_cast<const float*>(0x300001); }, StatusCode::invalid_argument,
        "misaligned weight");
  check([](A& a) { a.h = (std::int64_t{1} << 30) + 1; a.input_stride = a.output_stride = a.h; },
        StatusCode::too_large, "h beyond 2^30");
  check([](A& a) { a.tokens = std::int64_t{1} << 31; }, StatusCode::too_large, "tokens beyond the grid");
  check([](A& a) { a.tokens = 1 << 30; a.input_stride = std::int64_t{1} << 40; }, StatusCode::too_large,
        "extent beyond 64-bit byte offsets");
  // Overlaps: in place (same pointer, same stride) is allowed; anything else that shares an element is not.
  check([](A& a) { a.output = const_cast<float*>(a.input); }, StatusCode::ok, "in place");
  check([](A& a) { a.output = const_cast<float*>(a.input); a.output_stride = 128; }, StatusCode::invalid_argument,
        "in place with another stride");
  check([](A& a) { a.output = const_cast<float*>(a.input) + 1; }, StatusCode::invalid_argument, "shifted by one");
  check([](A& a) { a.output = const_cast<float*>(a.input) + 64 * 3; }, StatusCode::invalid_argument,
        "output's first row on input's last");
  check([](A& a) { a.output = const_cast<float*>(a.input) + 64 * 4; }, StatusCode::ok, "output right after input");
  // [T, 2h] halves: input in columns [0, h), output in [h, 2h), both at stride 2h: no shared element.
  check([](A& a) { a.input_stride = a.output_stride = 128; a.output = const_cast<float*>(a.input) + 64; },
        StatusCode::ok, "interleaved halves of one buffer");
  check([](A& a) { a.input_stride = a.output_stride = 128; a.output = const_cast<float*>(a.input) + 63; },
        StatusCode::invalid_argument, "interleaved, one element shared per row");
  check([](A& a) { a.input_stride = a.output_stride = 128; a.output = const_cast<float*>(a.input) - 64; },
        StatusCode::ok, "interleaved, output first");
  // Different strides, decided by element too (ktune/overlap.hpp): input rows of 4h hold [0, h), output rows of
  // 2h start at h, so they hold [h, 2h) and [3h, 4h) of input's rows; one element to the left they share one.
  check([](A& a) { a.input_stride = 256; a.output_stride = 128; a.output = const_cast<float*>(a.input) + 64; },
        StatusCode::ok, "interleaved at strides 4h and 2h");
  check([](A& a) { a.input_stride = 256; a.output_stride = 128; a.output = const_cast<float*>(a.input) + 63; },
        StatusCode::invalid_argument, "strides 4h and 2h, one element shared");
}

// ---- space --------------------------------------------------------------------------------------

template <class Op>
void check_space_of_the_kind() {
  using Space = typename Op::Space;
  // The same parameters as fused_add_rmsnorm (the row structures are shared), so the same ids and hash.
  EXPECT_EQ(Space::space.size(), 512u);
  EXPECT_EQ(Space::space.hash(), 0xf571d0c5d623c591ull);
  // sm_90: stages 0-2, 96 points as for fused_add_rmsnorm; persistent rows at vpt 1, 2, 4 x pdl; warp rows
  // at vpt 2, 4, 8 x pdl for both element sizes (one row stream fewer: 16-bit vpt 8 fits 255 registers,
  // 8 * (16 + 8 + 2) + 28 = 236); late stores at vpt 1, 2 x cs 2, 4, 8; bulk rows at vpt 2, 4, 8 x pdl.
  EXPECT_EQ(Space::persistent_register_estimate(8, 8, 2), 240);
  EXPECT_EQ((FeasibleSet<Space, 90, 4>::count), 96u + 6 + 6 + 6 + 6 + 8);
  EXPECT_EQ((FeasibleSet<Space, 90, 2>::count), 96u + 6 + 6 + 6 + 6 + 8);
  EXPECT_EQ((FeasibleSet<Space, 80, 4>::count), 12u + 3 + 3 + 4);
  // Stage 7 holds the input as loaded: fp16 at vpt 4, per vector max(4 + 2, 4 + 4 + 2) = 10; 4 * 10 + 24 = 64
  // (ptxas: 40 for the A/B's kernel of the same structure).
  EXPECT_EQ(Space::lean_register_estimate(8, 4, 2), 64);
  // One stream fewer than fused_add_rmsnorm's estimate: fp16 vpt 8 register staging,
  // per vector max(2 * 4 + 4, 8 + 4 + 2) = 14; 8 * 14 + 24 = 136.
  EXPECT_EQ(Space::register_estimate(8, 8, 2), 136);
  EXPECT_EQ(Space::late_store_register_estimate(8, 2, 2), Space::register_estimate(8, 2, 2))
      << "no residual to hold across the reduction";
}

template <class Op>
void check_named_points() {
  using Space = typename Op::Space;
  for (int arch : supported_archs) {
    for (int eb : {2, 4}) {
      const auto limits = arch_limits(arch);
      EXPECT_TRUE(Space::feasible(Space::default_point, limits, eb).ok()) << arch;
      EXPECT_TRUE(Space::feasible(Space::unaligned_point, limits, eb).ok()) << arch;
    }
  }
  EXPECT_TRUE(Space::feasible(Space::original_point, arch_limits(90), 2).ok());
  EXPECT_EQ(Space::space.id(Space::original_point), "vb_16.vpt_1.stage_2.cs_1.pdl_1") << "RMSNormKernel: reread, PDL";
  EXPECT_EQ(Space::space.id(Space::unaligned_point), "vb_0.vpt_1.stage_2.cs_1.pdl_0");
  EXPECT_EQ(Space::space.id(Space::default_point), "vb_16.vpt_1.stage_2.cs_1.pdl_0");
}

// ---- harness and spec ---------------------------------------------------------------------------

template <class Op>
void check_harness() {
  typename Op::Harness harness;
  const Shape shape{{{"tokens", 5}, {"h", 300}}};
  for (DType dt : all_dtypes) {
    HostTensors host;
    harness.fill_inputs(shape, dt, 1234, host);
    ASSERT_EQ(host.size(), 3u);
    const auto ref = harness.reference(shape, dt, host);
    ASSERT_EQ(ref.size(), 1u) << "one output tensor";
    ASSERT_EQ(ref[0].size(), 1500u);
    visit_dtype(dt, [&](auto element) {
      using E = decltype(element);
      const auto* in = reinterpret_cast<const E*>(host[0].data());
      const auto* w = reinterpret_cast<const E*>(host[1].data());
      for (std::size_t i = 0; i < 1500; ++i) {
        ASSERT_GE(std::fabs(to_float(in[i])), 0.25f);
        ASSERT_LE(std::fabs(to_float(in[i])), 4.0f);
        ASSERT_NE(ref[0][i], 0.0);
      }
      for (std::size_t i = 0; i < 300; ++i) ASSERT_TRUE(Op::Weight::harness_value(to_float(w[i])));
    });
  }
  const Shape small{{{"tokens", 3}, {"h", 7}}};
  const auto t = harness.tensors(small, DType::f16);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].name, "input");
  EXPECT_EQ(t[0].access, Access::read);
  EXPECT_EQ(t[2].name, "output");
  EXPECT_EQ(t[2].access, Access::write);
  int bufs[3];
  const auto args = harness.make_args(small, DType::f32, {&bufs[0], &bufs[1], &bufs[2]});
  const auto* a = static_cast<const typename Op::template Args<float>*>(args.get());
  EXPECT_EQ(a->input, reinterpret_cast<const float*>(&bufs[0]));
  EXPECT_EQ(a->weight, reinterpret_cast<const float*>(&bufs[1]));
  EXPECT_EQ(a->output, reinterpret_cast<float*>(&bufs[2]));
  EXPECT_EQ(a->output_stride, 7);
  EXPECT_EQ(a->eps, 1e-6f);
  Shape with_eps = small;
  with_eps.scalars.push_back({"eps", 1e-5});
  const auto args5 = harness.make_args(with_eps, DType::f32, {&bufs[0], &bufs[1], &bufs[2]});
  EXPECT_EQ(static_cast<const typename Op::template Args<float>*>(args5.get())->eps, 1e-5f);
}

template <class Op>
void check_spec_matches_the_issue() {
  std::ifstream f(spec_path(Op::name));
  ASSERT_TRUE(f) << "cannot open spec.json";
  const auto j = nlohmann::ordered_json::parse(f);
  EXPECT_EQ(j.at("schema"), 2);
  EXPECT_EQ(j.at("op"), Op::name);
  const auto& dims = j.at("dims");
  // The values come from shapes/catalogue.json (tests/tools/shapes_test.cpp checks they are its grid).
  const auto tokens = dims.at("tokens").get<std::vector<int>>(), widths = dims.at("h").get<std::vector<int>>();
  EXPECT_TRUE(std::is_sorted(tokens.begin(), tokens.end()) && std::is_sorted(widths.begin(), widths.end()));
  EXPECT_EQ(tokens.front(), 1);
  EXPECT_EQ(j.at("dtypes").get<std::vector<std::string>>(), (std::vector<std::string>{"fp32", "fp16", "bf16"}));
  for (DType dt : all_dtypes) {
    const auto& t = j.at("tolerance").at(name(dt));
    const Tolerance d = default_tolerance(dt);
    EXPECT_EQ(t.at("rel_l2").get<double>(), d.rel_l2) << name(dt);
  }
  const auto& eps = j.at("scalars").at(0);
  EXPECT_EQ(eps.at("name"), "eps");
  EXPECT_EQ(eps.at("default").get<double>(), 1e-6);
  EXPECT_EQ(eps.at("values").get<std::vector<double>>(), (std::vector<double>{1e-5}));
  // Bytes moved: input read, output written, weight read. T = 2048, h = 4096, fp16: 2 x 2048 x 4096 x 2 B
  // + 4096 x 2 B = 33,562,624 B (a copy of the rows, plus the weight).
  std::int64_t bytes = 0;
  for (const auto& t : j.at("tensors")) {
    std::int64_t n = 1;
    for (const auto& e : t.at("shape")) n *= e.get<std::string>() == "tokens" ? 2048 : 4096;
    bytes += n * 2 * (t.at("access") == "read_write" ? 2 : 1);
  }
  EXPECT_EQ(bytes, 33562624);
  const auto ht = typename Op::Harness{}.tensors(Shape{{{"tokens", 2048}, {"h", 4096}}}, DType::f16);
  ASSERT_EQ(ht.size(), j.at("tensors").size());
  for (std::size_t i = 0; i < ht.size(); ++i) EXPECT_EQ(ht[i].name, j.at("tensors")[i].at("name"));
}

}  // namespace ktune::test::norm_rows::output

/// Every host-side test of an op with a separate output, Op its traits struct.
#define KTUNE_OUTPUT_NORM_CPU_TESTS(Op)                                                                           \
  KTUNE_NORM_ROWS_TEST(Op##Reference, HandComputedRowsWithStride, output::check_reference_hand_computed<Op>())    \
  KTUNE_NORM_ROWS_TEST(Op##Reference, EpsAndSpecialValues, output::check_reference_eps_and_special_values<Op>())  \
  KTUNE_NORM_ROWS_TEST(Op##Validate, AcceptsAndResolvesContiguousStrides,                                         \
                       output::check_validate_resolves_contiguous_strides<Op>())                                  \
  KTUNE_NORM_ROWS_TEST(Op##Validate, RefusesBadArguments, output::check_validate_refuses_bad_arguments<Op>())     \
  KTUNE_NORM_ROWS_TEST(Op##Validate, StrideZeroIsAnErrorNotContiguous, check_stride_zero_refused<Op>())           \
  KTUNE_NORM_ROWS_TEST(Op##Validate, ZeroTokensIsValidWithEmptyTensors, check_zero_tokens_valid<Op>())            \
  KTUNE_NORM_ROWS_TEST(Op##Harness, DrawIsWhatFillInputsStores,                                                   \
                       check_draw_is_what_fill_inputs_stores<Op, ::ktune::ops::norm_rows::Plain>())               \
  KTUNE_NORM_ROWS_TEST(Op##Space, TheSharedSpaceForTheKindWithoutResidual, output::check_space_of_the_kind<Op>()) \
  KTUNE_NORM_ROWS_TEST(Op##Space, NamedPoints, output::check_named_points<Op>())                                  \
  KTUNE_NORM_ROWS_TEST(Op##Harness, InputsTensorsAndArgs, output::check_harness<Op>())                            \
  KTUNE_NORM_ROWS_TEST(Op##Spec, MatchesTheIssue, output::check_spec_matches_the_issue<Op>())                     \
  KTUNE_NORM_ROWS_TEST(Op##Spec, LoadsAsTheBenchmarkLoadsIt, check_spec_loads<Op>())
