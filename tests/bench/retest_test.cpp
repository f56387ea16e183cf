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

TEST(BenchRetest, EveryCandidateLeadsOneRound) {
  EXPECT_EQ(round_order(3, 0), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(round_order(3, 1), (std::vector<std::size_t>{1, 2, 0}));
  EXPECT_EQ(round_order(3, 5), (std::vector<std::size_t>{2, 0, 1}));
}

}  // namespace
}  // namespace ktune::bench
