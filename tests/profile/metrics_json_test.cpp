// CPU tests of the profile record's JSON form (metrics and findings round-trip through text) and of
// CUPTI's host-side metric scheduling, which needs no GPU: every metric ktune asks for must be known
// for the H100/H200 chip (GH100), so a renamed metric fails here rather than on the device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ktune/diagnose.hpp>
#include <ktune/profile/cupti.hpp>
#include <ktune/profile/metrics.hpp>

namespace {

using ktune::profile::KernelMetrics;
using ktune::profile::ProfileRecord;

// Every field set, each to a distinct value, so a field lost in either direction shows.
ProfileRecord full_record() {
  ProfileRecord r;
  r.op = "silu_and_mul";
  r.dtype = "bf16";
  r.shape = "tokens=16,d=11008";
  r.variant = "tpb_256.vb_16";
  r.device.name = "NVIDIA H200";
  r.device.arch = 90;
  r.device.sms = 132;
  r.device.l2_bytes = 62914560;
  r.device.max_threads_per_sm = 2048;
  r.device.max_blocks_per_sm = 32;
  r.device.regs_per_sm = 65536;
  r.device.smem_per_sm = 233472;
  r.device.reg_alloc_unit = 256;
  r.tokens = 16;
  r.expected_bytes = 1056768;
  r.copy_ceiling_gbps = 4281.5;
  r.empty_kernel_us = 2.125;
  r.event_us = 3.75;
  r.event_spread = 0.0125;
  r.event_graph = true;
  r.warm_l2 = true;
  r.activity_status = "ok";
  r.metrics_status = "ok";
  r.metric_passes = 17;
  for (int i = 0; i < 2; ++i) {
    KernelMetrics k;
    k.name = "_Z6kernelILi" + std::to_string(i) + "EEvv";
    k.grid[0] = 16 + i, k.grid[1] = 2, k.grid[2] = 3;
    k.block[0] = 256, k.block[1] = 1 + i, k.block[2] = 1;
    k.cluster = 2;
    k.registers = 40 + i;
    k.static_smem = 1024;
    k.dynamic_smem = 2048 + i;
    k.local_bytes = i;
    k.duration_us = 1.5 + i;
    k.duration_spread = 0.02;
    k.duration_samples = 20;
    double v = 1.0;
    for (const auto& f : KernelMetrics::hardware_fields()) k.*(f.member) = (v += 1.25) + i;
    k.stalls["long_scoreboard"] = 3.5;
    k.stalls["barrier"] = 0.25 + i;
    r.kernels.push_back(k);
  }
  return r;
}

TEST(ProfileJson, RecordRoundTripsThroughText) {
  const ProfileRecord a = full_record();
  const std::string text = ktune::profile::to_json(a).dump(2);
  const ProfileRecord b = ktune::profile::record_from_json(nlohmann::ordered_json::parse(text));
  EXPECT_EQ(b.op, a.op);
  EXPECT_EQ(b.dtype, a.dtype);
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.variant, a.variant);
  EXPECT_EQ(b.device.name, a.device.name);
  EXPECT_EQ(b.device.arch, a.device.arch);
  EXPECT_EQ(b.device.sms, a.device.sms);
  EXPECT_EQ(b.device.l2_bytes, a.device.l2_bytes);
  EXPECT_EQ(b.device.max_threads_per_sm, a.device.max_threads_per_sm);
  EXPECT_EQ(b.device.max_blocks_per_sm, a.device.max_blocks_per_sm);
  EXPECT_EQ(b.device.regs_per_sm, a.device.regs_per_sm);
  EXPECT_EQ(b.device.smem_per_sm, a.device.smem_per_sm);
  EXPECT_EQ(b.device.reg_alloc_unit, a.device.reg_alloc_unit);
  EXPECT_EQ(b.tokens, a.tokens);
  EXPECT_EQ(b.expected_bytes, a.expected_bytes);
  EXPECT_EQ(b.copy_ceiling_gbps, a.copy_ceiling_gbps);
  EXPECT_EQ(b.empty_kernel_us, a.empty_kernel_us);
  EXPECT_EQ(b.event_us, a.event_us);
  EXPECT_EQ(b.event_spread, a.event_spread);
  EXPECT_EQ(b.event_graph, a.event_graph);
  EXPECT_EQ(b.warm_l2, a.warm_l2);
  EXPECT_EQ(b.activity_status, a.activity_status);
  EXPECT_EQ(b.metrics_status, a.metrics_status);
  EXPECT_EQ(b.metric_passes, a.metric_passes);
  ASSERT_EQ(b.kernels.size(), a.kernels.size());
  for (std::size_t i = 0; i < a.kernels.size(); ++i) {
    const KernelMetrics& x = a.kernels[i];
    const KernelMetrics& y = b.kernels[i];
    EXPECT_EQ(y.name, x.name);
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(y.grid[d], x.grid[d]);
      EXPECT_EQ(y.block[d], x.block[d]);
    }
    EXPECT_EQ(y.cluster, x.cluster);
    EXPECT_EQ(y.registers, x.registers);
    EXPECT_EQ(y.static_smem, x.static_smem);
    EXPECT_EQ(y.dynamic_smem, x.dynamic_smem);
    EXPECT_EQ(y.local_bytes, x.local_bytes);
    EXPECT_EQ(y.duration_us, x.duration_us);
    EXPECT_EQ(y.duration_spread, x.duration_spread);
    EXPECT_EQ(y.duration_samples, x.duration_samples);
    for (const auto& f : KernelMetrics::hardware_fields()) {
      ASSERT_TRUE((y.*(f.member)).has_value()) << f.key;
      EXPECT_EQ(*(y.*(f.member)), *(x.*(f.member))) << f.key;
    }
    EXPECT_EQ(y.stalls, x.stalls);
  }
  EXPECT_EQ(ktune::profile::to_json(b).dump(2), text) << "serialising again gives the same bytes";
}

TEST(ProfileJson, MissingValuesStayMissing) {
  ProfileRecord a;
  a.op = "x";
  a.kernels.emplace_back();
  a.kernels[0].name = "k";
  const nlohmann::ordered_json j = ktune::profile::to_json(a);
  EXPECT_FALSE(j.contains("event_us")) << "absent values are omitted, never written as 0";
  EXPECT_FALSE(j.contains("warm_l2")) << "cold L2, the default, is not written";
  EXPECT_FALSE(j["kernels"][0].contains("dram_read_bytes"));
  EXPECT_FALSE(j["kernels"][0].contains("stalls"));
  const ProfileRecord b = ktune::profile::record_from_json(nlohmann::ordered_json::parse(j.dump()));
  EXPECT_FALSE(b.event_us.has_value());
  EXPECT_FALSE(b.kernels[0].dram_read_bytes.has_value());
  EXPECT_FALSE(b.kernels[0].registers.has_value());
  EXPECT_EQ(b.activity_status, "not run");
}

TEST(ProfileJson, FindingsRoundTrip) {
  ProfileRecord r = full_record();
  r.kernels[0].local_bytes = 64;  // fires the spill rule
  r.kernels[0].grid[0] = 1;       // and the grid rule (2 x 3 x 1 = 6 blocks for 132 SMs)
  const auto fs = ktune::profile::diagnose(r);
  ASSERT_GE(fs.size(), 2u);
  const nlohmann::ordered_json j = ktune::profile::to_json(fs);
  const auto parsed = nlohmann::ordered_json::parse(j.dump());
  ASSERT_EQ(parsed.size(), fs.size());
  for (std::size_t i = 0; i < fs.size(); ++i) {
    const auto g = ktune::profile::finding_from_json(parsed[i]);
    EXPECT_EQ(g.rule, fs[i].rule);
    EXPECT_EQ(g.kernel, fs[i].kernel);
    EXPECT_EQ(g.metric, fs[i].metric);
    EXPECT_EQ(g.value, fs[i].value);
    EXPECT_EQ(g.comparison, fs[i].comparison);
    EXPECT_EQ(g.threshold, fs[i].threshold);
    EXPECT_EQ(g.message, fs[i].message);
  }
}

TEST(ProfileJson, L2HitRateFromTheSectorCountsOfARecord) {
  // A kernel record as ktune_profile writes it for a call too short to fill the GPU: Nsight's ratio
  // (lookup hits over all L2 sectors, counted in different replay passes) above 100%.
  const auto j = nlohmann::ordered_json::parse(R"({"name": "k", "grid": [1, 1, 1], "block": [256, 1, 1],
      "l2_hit_pct": 141.2, "l2_hit_sectors": 96, "l2_miss_sectors": 32})");
  const KernelMetrics k = ktune::profile::kernel_from_json(j);
  ASSERT_TRUE(k.l2_hit_rate_pct().has_value());
  EXPECT_DOUBLE_EQ(*k.l2_hit_rate_pct(), 75.0);
  EXPECT_TRUE(k.l2_counters_disagree());
  EXPECT_EQ(ktune::profile::to_json(k)["l2_hit_pct"], 141.2) << "the value read stays in the record";
}

TEST(ProfileJson, DerivedRatios) {
  KernelMetrics k;
  EXPECT_FALSE(k.ld_sectors_per_request().has_value());
  k.ld_sectors = 3200;
  k.ld_requests = 100;
  k.ld_bytes = 12800;  // 128 bytes per request: 4-byte loads by 32 lanes
  EXPECT_DOUBLE_EQ(*k.ld_sectors_per_request(), 32.0);
  EXPECT_DOUBLE_EQ(*k.ld_ideal_sectors_per_request(), 4.0);
  k.ld_bytes = 400;  // 4 bytes per request: a warp-uniform (broadcast) load still needs one sector
  EXPECT_DOUBLE_EQ(*k.ld_ideal_sectors_per_request(), 1.0);
  k.ld_requests = 0;
  EXPECT_FALSE(k.ld_sectors_per_request().has_value()) << "no requests: no ratio, not a division by zero";
}

// ---- CUPTI's host API: metric names and passes for the chips ktune tunes on --------------------------
TEST(ProfileCuptiHost, MetricsAreKnownForGH100) {
  std::size_t passes = 0;
  std::string why;
  const ktune::Status st =
      ktune::profile::check_metrics_for_chip("GH100", ktune::profile::default_metric_names(true), passes, why);
  ASSERT_TRUE(st.ok()) << st.message << ": " << why;
  std::size_t passes_without_stalls = 0;
  ASSERT_TRUE(ktune::profile::check_metrics_for_chip("GH100", ktune::profile::default_metric_names(false),
                                                      passes_without_stalls, why)
                  .ok())
      << why;
  EXPECT_GE(passes, 1u);
  EXPECT_GE(passes, passes_without_stalls);
  std::printf("[ passes ] GH100: %zu replay passes with stall reasons, %zu without\n", passes, passes_without_stalls);
}

TEST(ProfileCuptiHost, UnknownMetricIsNamed) {
  std::size_t passes = 0;
  std::string why;
  const ktune::Status st = ktune::profile::check_metrics_for_chip(
      "GH100", {"dram__bytes_read.sum", "ktune__no_such_metric.sum"}, passes, why);
  EXPECT_EQ(st.code, ktune::StatusCode::invalid_argument);
  EXPECT_NE(why.find("ktune__no_such_metric.sum"), std::string::npos) << why;
}

TEST(ProfileCuptiHost, UnknownChipIsAClearError) {
  std::size_t passes = 0;
  std::string why;
  const ktune::Status st =
      ktune::profile::check_metrics_for_chip("NO_SUCH_CHIP", {"dram__bytes_read.sum"}, passes, why);
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(why.empty());
  EXPECT_NE(std::string(st.message).find("CUPTI"), std::string::npos) << st.message;
}

}  // namespace
