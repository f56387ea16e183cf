// CPU tests of merge_attn_states_lse: the float64 reference on hand-computed values and every edge
// case of the semantics, validate(), the spec file, the space (counts, named points, ids), the harness.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ktune/arch.hpp>
#include <ktune/dtype.hpp>
#include <ktune/space.hpp>
#include <ktune/verify.hpp>

#include "kernels/merge_attn_states_lse/args.hpp"
#include "kernels/merge_attn_states_lse/harness.hpp"
#include "kernels/merge_attn_states_lse/reference.hpp"
#include "kernels/merge_attn_states_lse/space.hpp"

namespace {

namespace op = ktune::ops::merge_attn_states_lse;
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// ---- reference ------------------------------------------------------------------------------------------

TEST(MergeAttnStatesLseReference, EqualLsesAverage) {
  // p = s: wp = ws = 1, out = (P + S) / 2, lse = p + log 2.
  EXPECT_DOUBLE_EQ(op::reference_value(0.0, 0.0, 3.0, 5.0), 4.0);
  EXPECT_DOUBLE_EQ(op::reference_weights(0.0, 0.0).lse, std::log(2.0));
  EXPECT_DOUBLE_EQ(op::reference_value(-1000.0, -1000.0, 1.0, -3.0), -1.0);
  EXPECT_DOUBLE_EQ(op::reference_weights(-1000.0, -1000.0).lse, -1000.0 + std::log(2.0));
}

TEST(MergeAttnStatesLseReference, HandComputedWeights) {
  // p = log 3, s = 0: m = log 3, wp = 1, ws = 1/3: out = 0.75 P + 0.25 S, lse = log(4/3) + log 3 = log 4.
  const double p = std::log(3.0);
  const auto w = op::reference_weights(p, 0.0);
  EXPECT_NEAR(w.prefix, 0.75, 1e-15);
  EXPECT_NEAR(w.suffix, 0.25, 1e-15);
  EXPECT_NEAR(w.lse, std::log(4.0), 1e-15);
  EXPECT_NEAR(op::reference_value(p, 0.0, 8.0, -4.0), 5.0, 1e-14);
  // Symmetric: swapping sides swaps the weights.
  EXPECT_NEAR(op::reference_value(0.0, p, 8.0, -4.0), -1.0, 1e-14);
}

TEST(MergeAttnStatesLseReference, InfinityMeansNoKeys) {
  // +inf and -inf both count as -inf: the other side wins outright.
  EXPECT_EQ(op::reference_value(inf, 1.5, 7.0, -2.0), -2.0);
  EXPECT_EQ(op::reference_weights(inf, 1.5).lse, 1.5);
  EXPECT_EQ(op::reference_value(-inf, 1.5, 7.0, -2.0), -2.0);
  EXPECT_EQ(op::reference_value(0.25, inf, 7.0, -2.0), 7.0);
  EXPECT_EQ(op::reference_weights(0.25, -inf).lse, 0.25);
}

TEST(MergeAttnStatesLseReference, BothEmptyGiveZeroAndMinusInfinityNeverNaN) {
  for (double p : {-inf, inf})
    for (double s : {-inf, inf}) {
      EXPECT_EQ(op::reference_value(p, s, 7.0, -2.0), 0.0);
      EXPECT_EQ(op::reference_value(p, s, nan, inf), 0.0);  // values are ignored
      const auto w = op::reference_weights(p, s);
      EXPECT_TRUE(w.empty);
      EXPECT_EQ(w.lse, -inf);
    }
}

TEST(MergeAttnStatesLseReference, NaNPropagatesOnlyWhereItFeeds) {
  EXPECT_TRUE(std::isnan(op::reference_value(nan, 0.0, 1.0, 2.0)));
  EXPECT_TRUE(std::isnan(op::reference_value(0.0, nan, 1.0, 2.0)));
  EXPECT_TRUE(std::isnan(op::reference_weights(nan, -inf).lse));
  EXPECT_TRUE(std::isnan(op::reference_value(nan, -inf, 1.0, 2.0)));
  // A NaN value feeds its own output element, even when its side's weight is 0 (0 * NaN).
  EXPECT_TRUE(std::isnan(op::reference_value(0.0, 0.0, nan, 2.0)));
  EXPECT_TRUE(std::isnan(op::reference_value(0.0, -inf, 1.0, nan)));
  // ...but not the LSE, which does not read values.
  EXPECT_DOUBLE_EQ(op::reference_weights(0.0, 0.0).lse, std::log(2.0));
}

TEST(MergeAttnStatesLseReference, LargeGapsAndMagnitudesStayFinite) {
  // A gap of 500: the loser's weight exp(-500) is negligible next to 1, never inf or NaN.
  EXPECT_DOUBLE_EQ(op::reference_value(0.0, -500.0, 0.5, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(op::reference_weights(0.0, -500.0).lse, 0.0);
  EXPECT_DOUBLE_EQ(op::reference_value(-700.0, 300.0, 0.5, -1.0), -1.0);
  EXPECT_DOUBLE_EQ(op::reference_weights(-700.0, 300.0).lse, 300.0);
  EXPECT_DOUBLE_EQ(op::reference_value(3e38, -3e38, 2.0, 1.0), 2.0);
  // fp16's largest finite value averages to itself.
  EXPECT_DOUBLE_EQ(op::reference_value(1.0, 1.0, 65504.0, 65504.0), 65504.0);
}

TEST(MergeAttnStatesLseReference, WholeOpIndexesStridedRows) {
  // tokens 2, heads 2, head_size 2; prefix rows strided by 6, suffix rows by 5.
  const std::vector<float> prefix = {1, 2, 3, 4, -9, -9, 5, 6, 7, 8, -9, -9};
  const std::vector<float> suffix = {10, 20, 30, 40, -9, 50, 60, 70, 80, -9};
  const std::vector<float> plse = {0.f, static_cast<float>(-inf), 1.f, static_cast<float>(inf)};
  const std::vector<float> slse = {0.f, 2.f, static_cast<float>(-inf), static_cast<float>(-inf)};
  std::vector<double> out(8), lse(4);
  op::reference(prefix.data(), plse.data(), suffix.data(), slse.data(), 2, 2, 2, 6, 5, out.data(), lse.data());
  const std::vector<double> want = {5.5, 11, 30, 40, 5, 6, 0, 0};
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(out[i], want[i]) << i;
  EXPECT_DOUBLE_EQ(lse[0], std::log(2.0));
  EXPECT_DOUBLE_EQ(lse[1], 2.0);
  EXPECT_DOUBLE_EQ(lse[2], 1.0);
  EXPECT_EQ(lse[3], -inf);
}

// ---- validate -----------------------------------------------------------------------------------------------

template <class T>
T* fake(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);  // never dereferenced: validate() only looks at the value
}

template <class E>
op::Args<E> good_args() {
  op::Args<E> a;
  a.out = fake<E>(0x10000);
  a.out_lse = fake<float>(0x20000);
  a.prefix_out = fake<const E>(0x30000);
  a.prefix_lse = fake<const float>(0x40000);
  a.suffix_out = fake<const E>(0x50000);
  a.suffix_lse = fake<const float>(0x60000);
  a.tokens = 3;
  a.heads = 4;
  a.head_size = 8;
  a.out_stride = a.prefix_stride = a.suffix_stride = 32;
  return a;
}

using ktune::StatusCode;

TEST(MergeAttnStatesLseValidate, AcceptsValidInput) {
  EXPECT_TRUE(op::validate(good_args<float>()).ok());
  auto a = good_args<__half>();
  a.out_lse = nullptr;  // not wanted
  EXPECT_TRUE(op::validate(a).ok());
  a.out_stride = 40;  // longer strides, rows aligned only to the element
  a.prefix_out = fake<const __half>(0x30002);
  EXPECT_TRUE(op::validate(a).ok());
  a = good_args<__half>();
  a.tokens = 1;
  a.out_stride = 3;  // one token: the stride is never used
  EXPECT_TRUE(op::validate(a).ok());
}

TEST(MergeAttnStatesLseValidate, TokensZeroIsANoOpWhateverThePointers) {
  op::Args<float> a;
  a.heads = 4;
  a.head_size = 8;
  EXPECT_TRUE(op::validate(a).ok());
  a.heads = 0;
  EXPECT_EQ(op::validate(a).code, StatusCode::invalid_argument);  // sizes are still checked
}

TEST(MergeAttnStatesLseValidate, RefusesBadInput) {
  auto check = [](op::Args<__nv_bfloat16> a, StatusCode want, const char* what) {
    EXPECT_EQ(op::validate(a).code, want) << what;
  };
  const auto g = good_args<__nv_bfloat16>();
  auto a = g; a.out = nullptr;              check(a, StatusCode::invalid_argument, "null out");
  a = g; a.prefix_out = nullptr;            check(a, StatusCode::invalid_argument, "null prefix_out");
  a = g; a.prefix_lse = nullptr;            check(a, StatusCode::invalid_argument, "null prefix_lse");
  a = g; a.suffix_out = nullptr;            check(a, StatusCode::invalid_argument, "null suffix_out");
  a = g; a.suffix_lse = nullptr;            check(a, StatusCode::invalid_argument, "null suffix_lse");
  a = g; a.tokens = -1;                     check(a, StatusCode::invalid_argument, "negative tokens");
  a = g; a.heads = -1;                      check(a, StatusCode::invalid_argument, "negative heads");
  a = g; a.head_size = 0;                   check(a, StatusCode::invalid_argument, "head_size 0");
  a = g; a.suffix_stride = -32;             check(a, StatusCode::invalid_argument, "negative stride");
  a = g; a.out_stride = 31;                 check(a, StatusCode::invalid_argument, "short out stride");
  a = g; a.prefix_stride = 16;              check(a, StatusCode::invalid_argument, "short prefix stride");
  a = g; a.suffix_out = fake<const __nv_bfloat16>(0x50001);
  check(a, StatusCode::invalid_argument, "suffix_out misaligned to its element");
  a = g; a.out_lse = fake<float>(0x20002);  check(a, StatusCode::invalid_argument, "out_lse misaligned");
  a = g; a.heads = 1 << 16; a.head_size = 1 << 15;
  a.out_stride = a.prefix_stride = a.suffix_stride = std::int64_t{1} << 31;
  check(a, StatusCode::too_large, "row of 2^31 elements");
  a = g; a.heads = std::int64_t{1} << 40; a.head_size = std::int64_t{1} << 30;
  check(a, StatusCode::too_large, "heads * head_size overflows int64");
  a = g; a.tokens = std::int64_t{1} << 40; a.out_stride = a.prefix_stride = a.suffix_stride = std::int64_t{1} << 30;
  check(a, StatusCode::too_large, "token offsets overflow int64 bytes");
}

// ---- spec.json -----------------------------------------------------------------------------------------------

nlohmann::ordered_json load_spec() {
  std::ifstream f(std::string(KTUNE_SOURCE_DIR) + "/kernels/merge_attn_states_lse/spec.json");
  EXPECT_TRUE(f.good());
  return nlohmann::ordered_json::parse(f);
}

TEST(MergeAttnStatesLseSpec, MatchesTheIssue) {
  const auto s = load_spec();
  EXPECT_EQ(s.at("op"), "merge_attn_states_lse");
  const auto& dims = s.at("dims");
  std::vector<std::string> names;
  for (const auto& [k, v] : dims.items()) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"tokens", "heads", "head_size"}));
  // tokens and heads come from shapes/catalogue.json (tests/tools/shapes_test.cpp checks they are its grid).
  EXPECT_EQ(dims.at("tokens").get<std::vector<int>>().front(), 1);
  EXPECT_GE(dims.at("heads").size(), 2u);
  EXPECT_EQ(dims.at("head_size").get<std::vector<int>>(), (std::vector<int>{128}));
  EXPECT_EQ(s.at("tokens_dim"), "tokens");
  EXPECT_EQ(s.at("width_dim"), "heads");
  EXPECT_EQ(s.at("dtypes").get<std::vector<std::string>>(), (std::vector<std::string>{"fp32", "fp16", "bf16"}));
  for (ktune::DType d : ktune::all_dtypes) {
    const auto& t = s.at("tolerance").at(ktune::name(d));
    const ktune::Tolerance want = ktune::default_tolerance(d);
    EXPECT_DOUBLE_EQ(t.at("rel_l2").get<double>(), want.rel_l2);
    EXPECT_DOUBLE_EQ(t.at("atol").get<double>(), want.atol);
    EXPECT_DOUBLE_EQ(t.at("rtol").get<double>(), want.rtol);
  }
}

TEST(MergeAttnStatesLseSpec, TensorsMatchTheHarnessAndGiveTheBytesMoved) {
  const auto s = load_spec();
  const op::Harness h;
  const ktune::Shape shape{{{"tokens", 16}, {"heads", 40}, {"head_size", 128}}};
  const auto info = h.tensors(shape, ktune::DType::bf16);
  const auto& tensors = s.at("tensors");
  ASSERT_EQ(tensors.size(), info.size());
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < info.size(); ++i) {
    const auto& t = tensors[i];
    EXPECT_EQ(t.at("name"), info[i].name);
    std::size_t elements = 1;
    for (const auto& dim : t.at("shape")) elements *= static_cast<std::size_t>(shape.at(dim.get<std::string>()));
    EXPECT_EQ(elements, info[i].elements) << info[i].name;
    EXPECT_EQ(t.at("dtype") == "fp32" ? 4 : 2, info[i].element_bytes) << info[i].name;
    EXPECT_EQ(t.at("access") == "write", info[i].is_output()) << info[i].name;
    bytes += info[i].bytes();
  }
  // 3 value tensors of 16*40*128 bf16 and 3 LSE tensors of 16*40 fp32.
  EXPECT_EQ(bytes, 3u * 16 * 40 * 128 * 2 + 3u * 16 * 40 * 4);
}

// ---- the space ------------------------------------------------------------------------------------------------

TEST(MergeAttnStatesLseSpace, FeasibleCountsPerDtype) {
  EXPECT_EQ(op::Space::space.size(), 144u);
  // sm_90, fp32: vb in {4, 8, 16}; vb * ppt >= 8 leaves 8 (vb, ppt) pairs; x 3 tpb x 2 pg x 2 pdl.
  EXPECT_EQ((ktune::FeasibleSet<op::Space, 90, 4>::count), 96u);
  // fp16 / bf16: vb = 2 adds (2, 4).
  EXPECT_EQ((ktune::FeasibleSet<op::Space, 90, 2>::count), 108u);
  // sm_80 has no PDL: half of each.
  EXPECT_EQ((ktune::FeasibleSet<op::Space, 80, 4>::count), 48u);
  EXPECT_EQ((ktune::FeasibleSet<op::Space, 80, 2>::count), 54u);
}

TEST(MergeAttnStatesLseSpace, EveryPrunedPointNamesItsRule) {
  std::set<std::string> rules;
  for (const auto& pv : ktune::explain<op::Space>(ktune::arch_limits(90), 4))
    if (!pv.verdict.ok()) rules.insert(pv.verdict.rule);
  EXPECT_EQ(rules.size(), 2u);  // element size and bytes in flight; nothing else prunes on sm_90
  const auto p = op::Space::feasible({256, 2, 4, 0, 0}, ktune::arch_limits(90), 4);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(std::string(p.rule).find("whole number of elements"), std::string::npos);
  const auto q = op::Space::feasible({256, 4, 1, 0, 0}, ktune::arch_limits(90), 4);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(std::string(q.rule).find("in flight"), std::string::npos);
  const auto r = op::Space::feasible({256, 16, 1, 0, 1}, ktune::arch_limits(80), 2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.rule).find("pdl"), std::string::npos);
}

TEST(MergeAttnStatesLseSpace, NamedPointsAreFeasibleEverywhere) {
  for (int arch : ktune::supported_archs) {
    const auto limits = ktune::arch_limits(arch);
    for (int eb : {2, 4}) {
      EXPECT_TRUE(op::Space::feasible(op::Space::default_point, limits, eb).ok()) << arch;
      EXPECT_TRUE(op::Space::feasible(op::Space::original_point, limits, eb).ok()) << arch;
      EXPECT_TRUE(op::Space::feasible(op::Space::unaligned_point(eb), limits, eb).ok()) << arch;
      EXPECT_EQ(op::Space::unaligned_point(eb)[1], eb);  // one element per access
    }
  }
  EXPECT_EQ(op::Space::space.id(op::Space::original_point), "tpb_128.vb_16.ppt_1.pg_0.pdl_0");
  EXPECT_EQ(op::Space::default_point[4], 0);  // no PDL in the default
  EXPECT_EQ((op::original_config_t::threads), 128);
  EXPECT_EQ((op::unaligned_config_t<2>::vector_bytes), 2);
}

TEST(MergeAttnStatesLseSpace, EveryVariantIdRoundTrips) {
  auto check = [](const auto& points) {
    for (const auto& p : points) {
      const std::string id = op::Space::space.id(p);
      const auto parsed = op::Space::space.parse(id);
      ASSERT_TRUE(parsed.ok) << id << ": " << parsed.error;
      EXPECT_EQ(parsed.point, p) << id;
    }
  };
  check(ktune::FeasibleSet<op::Space, 90, 4>::points);
  check(ktune::FeasibleSet<op::Space, 90, 2>::points);
  EXPECT_FALSE(op::Space::space.parse("tpb_128.vb_16.ppt_1.pg_0").ok);
  EXPECT_FALSE(op::Space::space.parse("tpb_64.vb_16.ppt_1.pg_0.pdl_0").ok);
}

// ---- harness --------------------------------------------------------------------------------------------------

TEST(MergeAttnStatesLseHarness, InputsAreRandomWithEdgeCasesAndTheReferenceMatches) {
  const op::Harness h;
  const ktune::Shape shape{{{"tokens", 3}, {"heads", 40}, {"head_size", 16}}};
  ktune::HostTensors host;
  h.fill_inputs(shape, ktune::DType::f16, 1234, host);
  ASSERT_EQ(host.size(), 6u);
  const auto* pv = reinterpret_cast<const __half*>(host[op::Harness::prefix_out].data());
  const auto* pl = reinterpret_cast<const float*>(host[op::Harness::prefix_lse].data());
  const auto* sl = reinterpret_cast<const float*>(host[op::Harness::suffix_lse].data());
  int zeros = 0, neg_inf = 0, pos_inf = 0;
  for (int i = 0; i < 3 * 40 * 16; ++i) zeros += ktune::to_float(pv[i]) == 0.f;
  for (int i = 0; i < 3 * 40; ++i) {
    neg_inf += std::isinf(pl[i]) && pl[i] < 0;
    pos_inf += std::isinf(sl[i]) && sl[i] > 0;
  }
  EXPECT_LT(zeros, 8);
  EXPECT_GT(neg_inf, 0);
  EXPECT_GT(pos_inf, 0);
  const auto ref = h.reference(shape, ktune::DType::f16, host);
  ASSERT_EQ(ref.size(), 2u);
  ASSERT_EQ(ref[0].size(), 3u * 40 * 16);
  ASSERT_EQ(ref[1].size(), 3u * 40);
  for (int i = 0; i < 3 * 40; ++i) EXPECT_EQ(ref[1][i], op::reference_weights(pl[i], sl[i]).lse) << i;
  // A different seed gives different data.
  ktune::HostTensors other;
  h.fill_inputs(shape, ktune::DType::f16, 1235, other);
  EXPECT_NE(host[op::Harness::prefix_out], other[op::Harness::prefix_out]);
}

}  // namespace
