#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>

#include <ktune/space.hpp>

#include "core/test_family.hpp"

namespace {
using ktune::test::TestSpace;
using Point = TestSpace::Point;

// Counted by hand from the rules (element size 2, sm_90: vb <= 16, clusters <= 8, PDL):
//   vb in {2,4,8,16}, ept with vb*ept <= 64: vb2:4, vb4:4, vb8:4, vb16:3 -> 15 (vb, ept) pairs
//   (tpb, rpb) with tpb*rpb <= 1024: tpb32:4 64:4 128:4 256:3 512:2 1024:1 -> 18 pairs, of which rpb == 1: 6
//   cl == 1: 18 pairs; cl in {2,4,8}: 6 pairs each -> 18 + 18 = 36 (tpb, rpb, cl) triples
//   pdl: 2  ->  15 * 36 * 2 = 1080 feasible of 6*5*4*4*4*2 = 3840.
using Sm90Half = ktune::FeasibleSet<TestSpace, 90, 2>;
static_assert(Sm90Half::total == 3840, "the test space has 3840 points");
static_assert(Sm90Half::count == 1080, "hand-counted feasible points for sm_90, 2-byte elements");

// sm_80: no clusters, no PDL -> 15 * 18 * 1 = 270. fp32 on sm_80: vb >= 4 -> 11 (vb, ept) pairs -> 198.
static_assert(ktune::FeasibleSet<TestSpace, 80, 2>::count == 270, "sm_80 prunes clusters and PDL");
static_assert(ktune::FeasibleSet<TestSpace, 80, 4>::count == 198, "fp32 prunes vb = 2");
// sm_100 allows 32-byte vectors: vb32 with ept 1, 2 -> 17 (vb, ept) pairs -> 17 * 36 * 2 = 1224.
static_assert(ktune::FeasibleSet<TestSpace, 100, 2>::count == 1224, "sm_100 allows 32-byte vectors");

TEST(Space, SizeAndMixedRadixOrder) {
  constexpr auto& s = TestSpace::space;
  EXPECT_EQ(s.size(), 3840u);
  EXPECT_EQ(s.point(0), (Point{32, 2, 1, 1, 1, 0}));
  EXPECT_EQ(s.point(1), (Point{32, 2, 1, 1, 1, 1}));          // last parameter fastest
  EXPECT_EQ(s.point(2), (Point{32, 2, 1, 1, 2, 0}));
  EXPECT_EQ(s.point(3839), (Point{1024, 32, 8, 8, 8, 1}));
  std::set<Point> all;
  for (std::size_t i = 0; i < s.size(); ++i) all.insert(s.point(i));
  EXPECT_EQ(all.size(), s.size()) << "every index maps to a distinct point";
}

TEST(Space, FeasiblePointsAreExactlyThoseTheRulesAccept) {
  const auto arch = ktune::arch_limits(90);
  std::size_t n = 0;
  for (std::size_t i = 0; i < TestSpace::space.size(); ++i) {
    const Point p = TestSpace::space.point(i);
    if (!TestSpace::feasible(p, arch, 2).ok()) continue;
    ASSERT_LT(n, Sm90Half::count);
    EXPECT_EQ(Sm90Half::points[n], p) << "feasible points keep space order";
    ++n;
  }
  EXPECT_EQ(n, Sm90Half::count);
}

TEST(Space, PrunedPointsNameTheRuleThatPrunedThem) {
  const auto verdicts = ktune::explain<TestSpace>(ktune::arch_limits(90), 2);
  ASSERT_EQ(verdicts.size(), 3840u);
  std::map<std::string, std::size_t> by_rule;
  std::size_t feasible = 0;
  for (const auto& v : verdicts) {
    if (v.verdict.ok()) ++feasible;
    else ++by_rule[v.verdict.rule];
  }
  EXPECT_EQ(feasible, 1080u);
  // First failing rule wins. vb = 32 (768 points) fails "widest vector" on sm_90 before anything else.
  EXPECT_EQ(by_rule["vb <= widest vector access of the architecture"], 768u);
  EXPECT_EQ(by_rule.count("vb >= element bytes"), 0u) << "vb = 2 is fine for 2-byte elements";
  // A specific point and its rule.
  EXPECT_STREQ(TestSpace::feasible(Point{1024, 16, 2, 1, 1, 0}, ktune::arch_limits(90), 2).rule,
               "tpb * rpb <= max threads per block");
  EXPECT_STREQ(TestSpace::feasible(Point{256, 16, 1, 1, 2, 0}, ktune::arch_limits(80), 2).rule,
               "cl > 1 needs thread-block clusters");
  EXPECT_STREQ(TestSpace::feasible(Point{256, 2, 1, 1, 1, 0}, ktune::arch_limits(90), 4).rule,
               "vb >= element bytes");
  std::size_t total = feasible;
  for (const auto& [rule, count] : by_rule) total += count;
  EXPECT_EQ(total, 3840u);
}

TEST(Space, IdsFollowDeclarationOrder) {
  EXPECT_EQ(TestSpace::space.id(Point{256, 16, 2, 4, 1, 0}), "tpb_256.vb_16.rpb_2.ept_4.cl_1.pdl_0");
}

TEST(Space, IdsRoundTripForEveryFeasiblePoint) {
  for (const Point& p : Sm90Half::points) {
    const std::string id = TestSpace::space.id(p);
    const auto parsed = TestSpace::space.parse(id);
    ASSERT_TRUE(parsed.ok) << id << ": " << parsed.error;
    EXPECT_EQ(parsed.point, p);
  }
}

TEST(Space, ParseAcceptsAnyOrderAndRejectsBadIds) {
  const auto any_order = TestSpace::space.parse("pdl_1.cl_2.ept_1.rpb_1.vb_8.tpb_64");
  ASSERT_TRUE(any_order.ok);
  EXPECT_EQ(any_order.point, (Point{64, 8, 1, 1, 2, 1}));
  struct Bad { const char* id; const char* why; };
  for (const Bad& b : {Bad{"", "a field is not name_value"},
                       Bad{"tpb_256.vb_16.rpb_2.ept_4.cl_1", "a parameter is missing"},
                       Bad{"tpb_256.vb_16.rpb_2.ept_4.cl_1.pdl_0.pdl_1", "parameter given twice"},
                       Bad{"tpb_300.vb_16.rpb_2.ept_4.cl_1.pdl_0", "value is not a candidate"},
                       Bad{"tpb_256.vb_16.rpb_2.ept_4.cl_1.xyz_0", "unknown parameter name"},
                       Bad{"tpb_2x6.vb_16.rpb_2.ept_4.cl_1.pdl_0", "value is not an integer"},
                       Bad{"tpb256.vb_16.rpb_2.ept_4.cl_1.pdl_0", "a field is not name_value"},
                       Bad{"original", "a field is not name_value"}}) {
    const auto r = TestSpace::space.parse(b.id);
    EXPECT_FALSE(r.ok) << b.id;
    EXPECT_STREQ(r.error, b.why) << b.id;
  }
}

struct OtherValues {
  static constexpr auto space = ktune::make_space(ktune::param("tpb", "threads", {32, 64, 128, 256, 512}),
                                                  ktune::param("vb", "bytes", {2, 4, 8, 16, 32}));
};
struct OtherUnit {
  static constexpr auto space = ktune::make_space(ktune::param("tpb", "threads", {32, 64, 128, 256, 512, 1024}),
                                                  ktune::param("vb", "elements", {2, 4, 8, 16, 32}));
};
struct Same {
  static constexpr auto space = ktune::make_space(ktune::param("tpb", "threads", {32, 64, 128, 256, 512, 1024}),
                                                  ktune::param("vb", "bytes", {2, 4, 8, 16, 32}));
};
struct SameAgain {
  static constexpr auto space = ktune::make_space(ktune::param("tpb", "threads", {32, 64, 128, 256, 512, 1024}),
                                                  ktune::param("vb", "bytes", {2, 4, 8, 16, 32}));
};

TEST(Space, HashIsStableAndSeesEveryChange) {
  static_assert(Same::space.hash() == SameAgain::space.hash(), "equal spaces hash equal at compile time");
  EXPECT_NE(Same::space.hash(), OtherValues::space.hash());
  EXPECT_NE(Same::space.hash(), OtherUnit::space.hash());
  EXPECT_NE(Same::space.hash(), TestSpace::space.hash());
}

struct NamedVariant {
  static constexpr char id[] = "tpb_128.vb_8.rpb_2.ept_2.cl_1.pdl_1";
};

TEST(Space, TypeViewOfFeasiblePoints) {
  using C = ktune::config_at_t<Sm90Half, 0>;
  EXPECT_EQ(C::threads, Sm90Half::points[0][0] * Sm90Half::points[0][2]);
  using D = ktune::default_config_t<TestSpace>;
  EXPECT_EQ(D::threads, 256);
  EXPECT_EQ(D::vector_bytes, 16);
  using V = ktune::variant_from_id_t<TestSpace, NamedVariant, 90, 2>;
  EXPECT_EQ(V::threads, 256);
  EXPECT_EQ(V::vector_bytes, 8);
  EXPECT_TRUE(V::pdl);
}

TEST(Space, DefaultPointIsFeasibleEverywhere) {
  for (int sm : ktune::supported_archs)
    for (int eb : {2, 4})
      EXPECT_TRUE(TestSpace::feasible(TestSpace::default_point, ktune::arch_limits(sm), eb).ok()) << sm;
}
}  // namespace
