// Benchmark names, GPU slugs, shape keys and durations, exactly as the bench interface spells them.
#include <gtest/gtest.h>

#include "bench/names.hpp"

namespace ktune::bench {
namespace {

TEST(BenchNames, BenchmarkNameFollowsContract5) {
  EXPECT_EQ(benchmark_name("silu_and_mul", DType::bf16, "tokens=16,d=11008", "tpb_256.vb_16.rpb_1.ept_2.pdl_0"),
            "silu_and_mul/bf16/tokens=16,d=11008/tpb_256.vb_16.rpb_1.ept_2.pdl_0");
  EXPECT_EQ(benchmark_name("fused_add_rmsnorm", DType::f32, "tokens=1,h=4096", "original"),
            "fused_add_rmsnorm/fp32/tokens=1,h=4096/original");
}

TEST(BenchNames, ShapeKeyRoundTrips) {
  Shape s;
  std::string err;
  ASSERT_TRUE(parse_shape_key("tokens=16,heads=32,head_size=128", s, err)) << err;
  ASSERT_EQ(s.dims.size(), 3u);
  EXPECT_EQ(s.dims[0], (std::pair<std::string, std::int64_t>{"tokens", 16}));
  EXPECT_EQ(s.dims[2], (std::pair<std::string, std::int64_t>{"head_size", 128}));
  EXPECT_EQ(s.key(), "tokens=16,heads=32,head_size=128");
}

TEST(BenchNames, ShapeKeyRefusals) {
  Shape s;
  std::string err;
  for (const char* bad : {"", "tokens", "tokens=", "=16", "tokens=1x", "tokens=-1", "tokens=1,,d=2", "t=1,t=2",
                          "tokens=99999999999999999999"})
    EXPECT_FALSE(parse_shape_key(bad, s, err)) << bad;
}

TEST(BenchNames, GpuSlug) {
  EXPECT_EQ(gpu_slug("NVIDIA H200"), "nvidia-h200");
  EXPECT_EQ(gpu_slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(gpu_slug("NVIDIA GeForce RTX 4090"), "nvidia-geforce-rtx-4090");
  EXPECT_EQ(gpu_slug("A_B/c"), "a-b-c");
}

TEST(BenchNames, Durations) {
  EXPECT_EQ(format_duration(0.25), "250ms");
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(59.6), "1m00s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3725), "1h02m");
  EXPECT_EQ(format_duration(-1), "?");
}

}  // namespace
}  // namespace ktune::bench
