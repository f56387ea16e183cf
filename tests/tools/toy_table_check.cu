// Compiles the tuned table that `ktune select` + `ktune tables` generate from the toy fixtures
// (tests/tools/data/raw/*.json) with nvcc, and checks its bucket lookup and variant dispatch. The
// expected winners follow from the fixture times (tests/tools/data/make_fixtures.py).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "toyop/tuned.cuh"  // generated into the build tree, next to a copy of the toy space.hpp

namespace {

namespace tuned = ktune::ops::toyop::tuned;
using Space = ktune::ops::toyop::Space;
using ktune::DType;
using ktune::TunedSource;

constexpr const char* A = "tpb_64.vb_4.pdl_0";
constexpr const char* D = "tpb_256.vb_16.pdl_1";
constexpr const char* F = "tpb_512.vb_16.pdl_1";

std::string lookup_id(DType t, std::int64_t tokens, std::int64_t width, const char* device = "NVIDIA H200", int arch = 90) {
  const ktune::TunedChoice c = ktune::lookup(tuned::entries, arch, device, t, tokens, width);
  return c.variant < 0 ? std::string("general") : std::string(c.id);
}

// The buckets are settled at compile time: lookup is constexpr.
static_assert(ktune::lookup(tuned::entries, 90, "NVIDIA H200", DType::f32, 1, 1024).source == TunedSource::device);
static_assert(ktune::lookup(tuned::entries, 80, "NVIDIA A100", DType::f32, 1, 1024).variant == -1);

TEST(ToyTable, SpaceHashIsTheToySpace) { EXPECT_EQ(tuned::space_hash, Space::space.hash()); }

TEST(ToyTable, TokenBucketsEndAtGeometricMidpoints) {
  // Measured tokens 1, 16, 128: buckets end at 4 and 45 (sqrt(16 * 128) = 45.25), the last is open.
  EXPECT_EQ(lookup_id(DType::f32, 1, 1024), A);
  EXPECT_EQ(lookup_id(DType::f32, 4, 1024), A);
  EXPECT_EQ(lookup_id(DType::f32, 5, 1024), D);  // 16 and 128 share D: merged into one open bucket
  EXPECT_EQ(lookup_id(DType::f32, 1000000, 1024), D);
}

TEST(ToyTable, WidthRangesSplitAtGeometricMidpoint) {
  // Widths 1024 and 4096 split at 2048; the first range starts at 0, the last is open-ended.
  EXPECT_EQ(lookup_id(DType::f32, 1, 1), A);
  EXPECT_EQ(lookup_id(DType::f32, 1, 2048), A);
  EXPECT_EQ(lookup_id(DType::f32, 1, 2049), D);  // D and F within 1% at tokens=1,d=4096: the general config wins
  EXPECT_EQ(lookup_id(DType::f32, 16, 4096), F);
  EXPECT_EQ(lookup_id(DType::f32, 128, 1 << 30), F);
}

TEST(ToyTable, DTypesHaveTheirOwnRows) {
  EXPECT_EQ(lookup_id(DType::bf16, 1, 1024), A);
  EXPECT_EQ(lookup_id(DType::bf16, 16, 1024), D);
  EXPECT_EQ(lookup_id(DType::bf16, 1, 4096), F);  // sweep only: F is 3% faster than D, beyond the band
  EXPECT_EQ(lookup_id(DType::f16, 16, 1024), "general");  // fp16 was not measured
}

TEST(ToyTable, OtherDeviceOfTheSameArchUsesTheRowsAndSaysSo) {
  const auto c = ktune::lookup(tuned::entries, 90, "NVIDIA H100 80GB HBM3", DType::f32, 16, 4096);
  EXPECT_EQ(c.source, TunedSource::arch);
  EXPECT_STREQ(c.id, F);
  EXPECT_EQ(lookup_id(DType::f32, 16, 4096, "NVIDIA A100", 80), "general");
}

template <int Tpb, int Vb, int Pdl>
ktune::Status record(Space::Config<Tpb, Vb, Pdl>, std::string& out) {
  out = Space::space.id({Tpb, Vb, Pdl});
  return ktune::Status::success();
}

std::string dispatched(DType t, std::int64_t tokens, std::int64_t width, int arch = 90) {
  const ktune::TunedChoice c = ktune::lookup(tuned::entries, arch, "NVIDIA H200", t, tokens, width);
  std::string id;
  auto f = [&](auto cfg) { return record(cfg, id); };
  ktune::Status s = t == DType::f32 ? tuned::with_variant<float>(c.variant, f)
                  : t == DType::f16 ? tuned::with_variant<__half>(c.variant, f)
                                    : tuned::with_variant<__nv_bfloat16>(c.variant, f);
  EXPECT_TRUE(s.ok());
  return id;
}

TEST(ToyTable, WithVariantRunsTheConfigurationOfTheRow) {
  EXPECT_EQ(dispatched(DType::f32, 1, 1024), A);
  EXPECT_EQ(dispatched(DType::f32, 16, 1024), D);
  EXPECT_EQ(dispatched(DType::f32, 16, 4096), F);
  EXPECT_EQ(dispatched(DType::bf16, 1, 4096), F);
}

TEST(ToyTable, GeneralConfigurationIsFeasibleOnEveryArchitecture) {
  // The best geometric means (pdl_1 variants) need PDL, which sm_80 lacks, so the general configuration
  // is the best one without it.
  EXPECT_STREQ(tuned::general_id, "tpb_256.vb_16.pdl_0");
  EXPECT_TRUE((std::is_same_v<tuned::general_config, Space::Config<256, 16, 0>>));
  EXPECT_EQ(dispatched(DType::f32, 16, 4096, 80), "tpb_256.vb_16.pdl_0");
  EXPECT_EQ(dispatched(DType::f16, 16, 4096), "tpb_256.vb_16.pdl_0");
}

}  // namespace
