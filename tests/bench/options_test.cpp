// The benchmark's command line: ktune flags, Google Benchmark pass-through, and refusals.
#include <gtest/gtest.h>

#include "bench/options.hpp"

namespace ktune::bench {
namespace {

TEST(BenchOptions, DefaultsWithNoArguments) {
  Options o;
  ASSERT_EQ(parse_options({}, o), "");
  EXPECT_TRUE(o.ops.empty());
  EXPECT_FALSE(o.quick);
  EXPECT_FALSE(o.warm_l2);
  EXPECT_EQ(o.benchmark_out_format, "json");
  EXPECT_FALSE(o.seed.has_value());
}

TEST(BenchOptions, KtuneFlagsInBothSpellings) {
  Options o;
  ASSERT_EQ(parse_options({"--ops", "silu_and_mul,fused_add_rmsnorm", "--dtypes=bf16,fp16", "--shapes", "tokens=16,",
                           "--variants=^tpb_256", "--quick", "--warm-l2", "--cache", "/tmp/c.jsonl", "--seed=42",
                           "--kernels", "kernels"},
                          o),
            "");
  EXPECT_EQ(o.ops, (std::vector<std::string>{"silu_and_mul", "fused_add_rmsnorm"}));
  EXPECT_EQ(o.dtypes, (std::vector<std::string>{"bf16", "fp16"}));
  EXPECT_EQ(o.shapes, "tokens=16,");
  EXPECT_EQ(o.variants, "^tpb_256");
  EXPECT_TRUE(o.quick);
  EXPECT_TRUE(o.warm_l2);
  EXPECT_EQ(o.cache, "/tmp/c.jsonl");
  ASSERT_TRUE(o.seed.has_value());
  EXPECT_EQ(*o.seed, 42u);
  EXPECT_EQ(o.kernels, "kernels");
}

TEST(BenchOptions, GoogleBenchmarkFlagsPassThroughAndOutputIsRead) {
  Options o;
  ASSERT_EQ(parse_options({"--benchmark_out=r.json", "--list", "--benchmark_filter=silu", "--benchmark_out_format=json"}, o), "");
  EXPECT_EQ(o.passthrough,
            (std::vector<std::string>{"--benchmark_out=r.json", "--benchmark_filter=silu", "--benchmark_out_format=json"}));
  EXPECT_EQ(o.benchmark_out, "r.json");
  EXPECT_TRUE(o.list);
}

TEST(BenchOptions, RetestTakesAFile) {
  Options o;
  ASSERT_EQ(parse_options({"--retest", "candidates.json"}, o), "");
  EXPECT_EQ(o.retest, "candidates.json");
}

TEST(BenchOptions, Refusals) {
  Options o;
  EXPECT_NE(parse_options({"--dtypes", "fp8"}, o).find("unknown dtype 'fp8'"), std::string::npos);
  EXPECT_NE(parse_options({"--ops"}, o).find("needs a value"), std::string::npos);
  EXPECT_NE(parse_options({"--shapes", "("}, o).find("invalid regular expression"), std::string::npos);
  EXPECT_NE(parse_options({"--frobnicate"}, o).find("unknown flag"), std::string::npos);
  EXPECT_NE(parse_options({"stray"}, o).find("unexpected argument"), std::string::npos);
  EXPECT_NE(parse_options({"--quick=1"}, o).find("takes no value"), std::string::npos);
  EXPECT_NE(parse_options({"--seed", "-3"}, o).find("non-negative integer"), std::string::npos);
  EXPECT_NE(parse_options({"--benchmark_out_format=csv"}, o).find("json or console"), std::string::npos);
  EXPECT_NE(parse_options({"--retest", "c.json", "--list"}, o).find("cannot be combined"), std::string::npos);
}

TEST(BenchOptions, TheJudgesGateFlagsGoWithGate) {
  Options o;
  ASSERT_EQ(parse_options({"--gate", "g.json", "--separate-allocations", "--value-range=wide"}, o), "");
  EXPECT_TRUE(o.separate_allocations);
  EXPECT_TRUE(o.wide_values);
  ASSERT_EQ(parse_options({"--gate=g.json", "--value-range", "default"}, o), "");
  EXPECT_FALSE(o.wide_values);
  EXPECT_FALSE(o.separate_allocations);
  EXPECT_NE(parse_options({"--gate", "g.json", "--value-range", "huge"}, o).find("'default' or 'wide'"), std::string::npos);
  // They change what the gate checks; a timed run's figures must come from the standard gate.
  EXPECT_NE(parse_options({"--separate-allocations"}, o).find("use them with --gate"), std::string::npos);
  EXPECT_NE(parse_options({"--value-range", "wide"}, o).find("use them with --gate"), std::string::npos);
}

TEST(BenchOptions, UsageNamesEveryFlag) {
  const std::string u = usage();
  for (const char* f : {"--ops", "--dtypes", "--shapes", "--variants", "--quick", "--warm-l2", "--retest", "--list",
                        "--kernels", "--cache", "--no-cache", "--seed", "--print-gpu-slug", "--benchmark_out", "--gate",
                        "--separate-allocations", "--value-range"})
    EXPECT_NE(u.find(f), std::string::npos) << f;
}

TEST(BenchOptions, SliceKOfN) {
  Options o;
  ASSERT_EQ(parse_options({"--slice", "1/3"}, o), "");
  EXPECT_EQ(o.slice, 1);
  EXPECT_EQ(o.slices, 3);
  for (const char* bad : {"3/3", "1", "-1/2", "a/2", "0/0", "1/", "/2"})
    EXPECT_NE(parse_options({"--slice", bad}, o).find("--slice K/N"), std::string::npos) << bad;
  EXPECT_NE(parse_options({"--slice=0/2", "--retest", "c.json"}, o), "");
}

}  // namespace
}  // namespace ktune::bench
