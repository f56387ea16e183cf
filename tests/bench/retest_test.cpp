// The re-test's input file and its statistics (contract 7).
#include <gtest/gtest.h>

#include "bench/retest.hpp"

namespace ktune::bench {
namespace {

TEST(BenchRetest, ParsesCandidates) {
  const auto c = parse_candidates(R"({"candidates": [
    {"op": "silu_and_mul", "dtype": "bf16", "shape": "tokens=16,d=11008", "ids": ["original", "tpb_256.vb_16", "original"]},
    {"op": "fused_add_rmsnorm", "dtype": "fp32", "shape": "tokens=1,h=4096", "ids": ["tpb_128"]}]})");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].op, "silu_and_mul");
  EXPECT_EQ(c[0].dtype, DType::bf16);
  EXPECT_EQ(c[0].shape.key(), "tokens=16,d=11008");
  EXPECT_EQ(c[0].ids, (std::vector<std::string>{"original", "tpb_256.vb_16"}));  // duplicates dropped
  EXPECT_EQ(c[1].dtype, DType::f32);
}

TEST(BenchRetest, RefusesMalformedCandidates) {
  auto error_of = [](const char* text) {
    try {
      (void)parse_candidates(text);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("[").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"cands": []})").find("missing or mistyped"), std::string::npos);
  EXPECT_NE(error_of(R"({"candidates": [{"op": "x", "dtype": "fp8", "shape": "t=1", "ids": ["a"]}]})").find("unknown dtype"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"candidates": [{"op": "x", "dtype": "fp16", "shape": "t=", "ids": ["a"]}]})").find("candidates:"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"candidates": [{"op": "x", "dtype": "fp16", "shape": "t=1", "ids": []}]})").find("no ids"),
            std::string::npos);
}

TEST(BenchRetest, StatisticsOfRoundMedians) {
  const RoundStats s = round_stats({10.0, 10.4, 9.8, 10.1, 10.2});
  EXPECT_DOUBLE_EQ(s.median, 10.1);
  EXPECT_DOUBLE_EQ(s.min, 9.8);
  EXPECT_DOUBLE_EQ(s.max, 10.4);
  EXPECT_NEAR(s.spread, 0.6 / 10.1, 1e-12);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(round_stats({}).median, 0);
}

TEST(BenchRetest, WhatARoundSharesIsTakenOut) {
  // Three candidates (10, 11, 15 us) in five rounds whose clock moved by up to 30%: normalised, each is its
  // own level in every round, the levels' ratios kept, and the median round's clock is the unit.
  const std::vector<double> clock{1.0, 1.3, 0.85, 1.2, 0.9};
  std::vector<std::vector<double>> m(3);
  for (double c : clock) {
    m[0].push_back(10 * c);
    m[1].push_back(11 * c);
    m[2].push_back(15 * c);
  }
  m[2].resize(3);  // left out after three rounds
  const auto n = clock_normalised(m);
  ASSERT_EQ(n.size(), 3u);
  ASSERT_EQ(n[2].size(), 3u);
  for (std::size_t r = 0; r < 5; ++r) {
    EXPECT_NEAR(n[0][r], 10.0, 1e-9);
    EXPECT_NEAR(n[1][r], 11.0, 1e-9);
    if (r < 3) EXPECT_NEAR(n[2][r], 15.0, 1e-9);
  }
  EXPECT_NEAR(round_stats(n[0]).spread, 0.0, 1e-12);
  EXPECT_NEAR(round_stats(m[0]).spread, 0.45, 1e-12);  // as measured: the clock's swing
}

TEST(BenchRetest, NormalisingKeepsACandidatesOwnScatter) {
  // One candidate scattered (a 4% jump in round 2) against two steady ones, no clock: the jump stays its
  // own, widened back for the degree of freedom the fit took, and the steady ones move by far less.
  std::vector<std::vector<double>> m{{10, 10, 10.4, 10, 10}, {20, 20, 20, 20, 20}, {30, 30, 30, 30, 30}};
  const auto n = clock_normalised(m);
  EXPECT_NEAR(round_stats(n[0]).spread, 0.04, 0.01);
  EXPECT_LT(round_stats(n[1]).spread, 0.005);
  EXPECT_LT(round_stats(n[2]).spread, 0.005);
  // A round of one candidate has nothing to compare with: left as measured.
  const auto alone = clock_normalised({{10, 12}, {20}});
  EXPECT_DOUBLE_EQ(alone[0][1], 12.0);
  EXPECT_TRUE(clock_normalised({}).empty());
}

TEST(BenchRetest, EveryCandidateLeadsOneRound) {
  EXPECT_EQ(round_order(3, 0), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(round_order(3, 1), (std::vector<std::size_t>{1, 2, 0}));
  EXPECT_EQ(round_order(3, 5), (std::vector<std::size_t>{2, 0, 1}));
}

}  // namespace
}  // namespace ktune::bench
