// KTUNE_TRACE's analysis (bench/trace_analysis.hpp): a run's GPU activity against the host's spans of its
// phases and parts, on a made-up run of 10 ms (times in ns).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trace_analysis.hpp"

namespace ktune::bench {
namespace {

constexpr std::uint64_t us = 1000;

TEST(TraceAnalysis, BusyAndIdleTimeOfTheRunAndOfEachLabel) {
  const char* kernel = "_Z6kernelv";
  // Two launches of one kernel overlapping (busy 100-300 us once), a copy at 1000-1100 us, a fill at 5000-5020 us.
  const std::vector<trace::Activity> activities = {{100 * us, 200 * us, 0, kernel, true},
                                                   {150 * us, 300 * us, 0, kernel, true},
                                                   {1000 * us, 1100 * us, 64, "host_to_device", false},
                                                   {5000 * us, 5020 * us, 4096, "fill", false}};
  // A phase, a part within it, and a phase whose two spans overlap (counted once).
  const std::vector<trace::Span> spans = {{"gate", 0, 500 * us},
                                          {"gate.runs", 100 * us, 250 * us},
                                          {"timing", 900 * us, 2000 * us},
                                          {"timing", 1900 * us, 2100 * us}};
  std::string summary;
  const nlohmann::json out = trace::analyse(activities, spans, 0, 10000 * us, summary);

  EXPECT_NEAR(out["wall_s"].get<double>(), 10e-3, 1e-12);
  EXPECT_NEAR(out["busy_s"].get<double>(), 320e-6, 1e-12);
  EXPECT_EQ(out["activities"].get<std::size_t>(), 4u);
  // Gaps: 0-100 us (100 us), 300-1000 (700 us), 1100-5000 (3.9 ms), 5020-10000 (4.98 ms).
  const nlohmann::json& idle = out["idle_by_gap_s"];
  EXPECT_NEAR(idle["under_10us"].get<double>(), 0, 1e-12);
  EXPECT_NEAR(idle["50_200us"].get<double>(), 100e-6, 1e-12);
  EXPECT_NEAR(idle["200us_1ms"].get<double>(), 700e-6, 1e-12);
  EXPECT_NEAR(idle["over_1ms"].get<double>(), 3.9e-3 + 4.98e-3, 1e-12);

  const nlohmann::json& gate = out["labels"]["gate"];
  EXPECT_NEAR(gate["wall_s"].get<double>(), 500e-6, 1e-12);
  EXPECT_NEAR(gate["busy_s"].get<double>(), 200e-6, 1e-12);
  // Its idle time, by the length of the whole gap each piece lies in: 0-100 us, and 300-500 us of a 700 us gap.
  EXPECT_NEAR(gate["idle_by_gap_s"]["50_200us"].get<double>(), 100e-6, 1e-12);
  EXPECT_NEAR(gate["idle_by_gap_s"]["200us_1ms"].get<double>(), 200e-6, 1e-12);
  EXPECT_NEAR(out["labels"]["gate.runs"]["busy_s"].get<double>(), 150e-6, 1e-12);
  EXPECT_NEAR(out["labels"]["timing"]["wall_s"].get<double>(), 1200e-6, 1e-12);
  EXPECT_NEAR(out["labels"]["timing"]["busy_s"].get<double>(), 100e-6, 1e-12);

  ASSERT_EQ(out["kernels"].size(), 1u);
  EXPECT_EQ(out["kernels"][0]["name"], kernel);
  EXPECT_EQ(out["kernels"][0]["count"], 2);
  EXPECT_NEAR(out["kernels"][0]["total_s"].get<double>(), 250e-6, 1e-12);  // each launch's own time
  EXPECT_EQ(out["copies"]["host_to_device"]["bytes"].get<double>(), 64);
  EXPECT_EQ(out["copies"]["fill"]["count"].get<double>(), 1);

  // The phases in the summary, the parts not.
  EXPECT_EQ(summary.rfind("GPU busy 0.0 s of 0.0 s (3%)", 0), 0u) << summary;
  EXPECT_NE(summary.find("; gate 0.0 s, busy 0.0 s"), std::string::npos) << summary;
  EXPECT_NE(summary.find("; timing "), std::string::npos) << summary;
  EXPECT_EQ(summary.find("gate.runs"), std::string::npos) << summary;
}

TEST(TraceAnalysis, ARunWithoutActivityIsIdleThroughout) {
  std::string summary;
  const nlohmann::json out = trace::analyse({}, {{"prepare", 0, 2000 * us}}, 0, 2000 * us, summary);
  EXPECT_EQ(out["busy_s"].get<double>(), 0);
  EXPECT_NEAR(out["idle_by_gap_s"]["over_1ms"].get<double>(), 2e-3, 1e-12);
  EXPECT_NEAR(out["labels"]["prepare"]["idle_by_gap_s"]["over_1ms"].get<double>(), 2e-3, 1e-12);
  EXPECT_TRUE(out["kernels"].empty());
}

}  // namespace
}  // namespace ktune::bench
