// The profile of the winners: the plan (which calls ktune_profile --plan makes), the results files'
// "profile" section from a recorded ktune_profile JSON (data/profile/profile.json, written by
// data/profile/make_profile_fixture.cpp in the tool's real format), and the report table.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <unistd.h>

#include "ktune/cli.hpp"
#include "ktune/io.hpp"
#include "ktune/profile_section.hpp"
#include "ktune/report.hpp"
#include "ktune/results.hpp"

namespace {

using namespace ktune::tool;
using ktune::cli::run_ktune;
namespace fs = std::filesystem;

ShapeResult shape(std::int64_t tokens, std::int64_t d, const std::string& winner) {
  ShapeResult s;
  s.key = fmt::format("tokens={},d={}", tokens, d);
  s.dims = {{"tokens", tokens}, {"d", d}};
  s.tokens = tokens;
  s.width = d;
  s.bytes = tokens * d * 6;  // silu_and_mul in bf16: 2d read, d written, 2 bytes each
  s.winner = winner;
  return s;
}

Selection selection(std::vector<ShapeResult> shapes) {
  Selection s;
  s.op = "silu_and_mul";
  s.gpu = "NVIDIA H200";
  s.gpu_slug = "nvidia-h200";
  s.arch = 90;
  s.space_hash = "0x0000000000000001";
  s.tokens_dim = "tokens";
  s.width_dim = "d";
  DTypeResult d;
  d.dtype = "bf16";
  d.shapes = std::move(shapes);
  s.dtypes.push_back(std::move(d));
  return s;
}

std::vector<std::string> keys(const std::vector<const ShapeResult*>& v) {
  std::vector<std::string> out;
  for (const ShapeResult* s : v) out.push_back(s->key);
  return out;
}

TEST(ProfilePlan, PicksLargestMidAndTheSmallTokenCountsOfTheWidestRow) {
  // Sorted by (width, tokens) as select writes them. Per token 6*4096 = 24.6 KB and 6*28672 = 172 KB.
  const Selection s = selection({shape(1, 4096, "a"), shape(16, 4096, "a"), shape(8192, 4096, "b"),  // 201 MB
                                 shape(1, 28672, "c"), shape(16, 28672, ""),  // no correct variant: not profiled
                                 shape(512, 28672, "d"),                      // 88 MB
                                 shape(1024, 28672, "d"),                     // 176 MB: nearest 128 MB on a log scale
                                 shape(8192, 28672, "e")});                   // 1409 MB: the largest
  EXPECT_EQ(keys(plan_shapes(s.dtypes[0])),
            (std::vector<std::string>{"tokens=1,d=28672", "tokens=1024,d=28672", "tokens=8192,d=28672"}));
}

TEST(ProfilePlan, NoMidShapeOutsideTheBandAndNoRepeats) {
  // Everything below 64 MB: the largest is also T = 16 of the widest row; it appears once.
  const Selection s = selection({shape(1, 4096, "a"), shape(16, 4096, "a"), shape(1, 8192, "b"), shape(16, 8192, "b")});
  EXPECT_EQ(keys(plan_shapes(s.dtypes[0])), (std::vector<std::string>{"tokens=1,d=8192", "tokens=16,d=8192"}));
  EXPECT_TRUE(plan_shapes(selection({shape(1, 4096, "")}).dtypes[0]).empty());
}

TEST(ProfilePlan, EachCallProfilesSAndTheWinner) {
  const LoadedResults r{"nvidia-h200/silu_and_mul.json", "0x1", selection({shape(1, 28672, "w1"), shape(8192, 28672, "w2")})};
  const nlohmann::ordered_json plan = profile_plan({&r});
  EXPECT_EQ(plan["schema"], profile_plan_schema);
  EXPECT_EQ(plan["gpu_slug"], "nvidia-h200");
  ASSERT_EQ(plan["calls"].size(), 2u);
  EXPECT_EQ(plan["calls"][0].dump(),
            R"({"op":"silu_and_mul","dtype":"bf16","shape":"tokens=1,d=28672","variants":["original","w1"]})");
  EXPECT_EQ(plan["calls"][1]["variants"].dump(), R"(["original","w2"])");
}

// ---- attach and report ---------------------------------------------------------------------------

class ProfileAttach : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("ktune_profile_test_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    const Selection s = selection({shape(1, 28672, "tpb_128.vb_16.ur_1"), shape(16, 28672, "tpb_1024.vb_16.ur_4"),
                                   shape(8192, 28672, "tpb_256.vb_16.ur_2")});
    results_ = results_path(dir_ + "/reports", "nvidia-h200", "silu_and_mul");
    write_atomic(results_, dump_json(to_json(s), 6));
    profile_ = std::string(KTUNE_TOOL_TEST_DATA) + "/profile/profile.json";
  }
  void TearDown() override { fs::remove_all(dir_); }
  Selection load() const { return from_json(nlohmann::ordered_json::parse(read_file(results_)), results_); }
  int attach(const std::string& gpu = "nvidia-h200") const {
    return run_ktune({"profile-attach", "--profile", profile_, "--gpu", gpu, "--results", dir_ + "/reports"});
  }
  std::string dir_, results_, profile_;
};

TEST_F(ProfileAttach, KeepsSAndTheWinnersInResultsOrderWithTheirFindings) {
  ASSERT_EQ(attach(), exit_ok);
  const Selection s = load();
  ASSERT_TRUE(s.profile.is_object());
  EXPECT_EQ(s.profile["device"], "NVIDIA H200");
  EXPECT_EQ(s.profile["source"]["file"], "profile.json");
  EXPECT_EQ(s.profile["source"]["hash"], content_hash(read_file(profile_)));
  const auto& e = s.profile["entries"];
  // The stale tpb_64 profile and the other op's are left out; the skipped winner stays, marked.
  ASSERT_EQ(e.size(), 5u);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"tokens=1,d=28672", "original"}, {"tokens=1,d=28672", "tpb_128.vb_16.ur_1"},
      {"tokens=16,d=28672", "tpb_1024.vb_16.ur_4"}, {"tokens=8192,d=28672", "original"},
      {"tokens=8192,d=28672", "tpb_256.vb_16.ur_2"}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(e[i]["shape"], want[i].first) << i;
    EXPECT_EQ(e[i]["variant"], want[i].second) << i;
    EXPECT_EQ(e[i]["role"], want[i].second == "original" ? "original" : "winner") << i;
  }
  EXPECT_TRUE(e[2].contains("skipped"));
  EXPECT_EQ(e[3]["findings"].size(), 1u);
  EXPECT_EQ(e[3]["findings"][0]["rule"], "dram_below_ceiling");
  EXPECT_EQ(e[4]["findings"].size(), 0u);
  EXPECT_EQ(e[0]["findings"][0]["rule"], "launch_bound_grid");
  EXPECT_EQ(e[4]["record"]["kernels"][0]["stalls"]["long_scoreboard"], 18.25);  // the whole record travels
}

TEST_F(ProfileAttach, IsDeterministicAndRefusesAnotherGpu) {
  ASSERT_EQ(attach(), exit_ok);
  const std::string first = read_file(results_);
  ASSERT_EQ(attach(), exit_ok);
  EXPECT_EQ(read_file(results_), first);
  EXPECT_EQ(attach("nvidia-h100-80gb-hbm3"), exit_failure);  // no results files of that GPU

  // A profile taken on another device than the results' is refused.
  Selection other = load();
  other.gpu = "NVIDIA H100 80GB HBM3";
  write_atomic(results_, dump_json(to_json(other), 6));
  EXPECT_EQ(attach(), exit_failure);
}

TEST_F(ProfileAttach, ReportTableShowsTimesBandwidthBytesOccupancyAndFindings) {
  ASSERT_EQ(attach(), exit_ok);
  const Selection s = load();
  const std::string md = profile_markdown(s);
  ASSERT_NE(md.find("## Profile of the winners"), std::string::npos);
  // Winner at the largest shape: 344.8 us activity vs 346.1 us events; DRAM 1.00333 x 1409.3 MB over
  // 344.8 us = 4101 GB/s = 95.1% of the 4312.5 GB/s ceiling; occupancy 91%, 32 registers, no finding.
  EXPECT_NE(md.find("| tokens=8192,d=28672 | bf16 | `tpb_256.vb_16.ur_2` | 345 | 346 | 4101 | 95.1% | 1414.0 | 1.00x | "
                    "91% | 32 | none |"),
            std::string::npos)
      << md;
  // S there: 1.00767 x the spec's bytes, and the bandwidth finding with its metric and threshold.
  EXPECT_NE(md.find("| tokens=8192,d=28672 | bf16 | `original` (S) | 452 | 455 | "), std::string::npos) << md;
  EXPECT_NE(md.find("| 1.01x | 86% | 16 | "), std::string::npos) << md;
  EXPECT_NE(md.find(s.profile["entries"][3]["findings"][0]["message"].get<std::string>()), std::string::npos);
  EXPECT_NE(md.find("(graph)"), std::string::npos);  // T = 1 event times came from graph replay
  EXPECT_NE(md.find("skipped: cannot_implement"), std::string::npos);

  const std::string html = profile_html(s);
  EXPECT_NE(html.find("<h2>Profile of the winners</h2>"), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);  // a table, not a plot: the page's plot count is unchanged
  EXPECT_EQ(html.find("http"), std::string::npos);

  // The op pages carry the section; without a profile they are as before.
  const LoadedResults r{"nvidia-h200/silu_and_mul.json", "0x1", s};
  EXPECT_NE(op_markdown(r).find("## Profile of the winners"), std::string::npos);
  EXPECT_NE(op_html(r).find("<h2>Profile of the winners</h2>"), std::string::npos);
  Selection bare = s;
  bare.profile = nullptr;
  EXPECT_EQ(profile_markdown(bare), "");
  EXPECT_EQ(profile_html(bare), "");
  EXPECT_EQ(op_markdown({"x", "0x1", bare}).find("Profile of the winners"), std::string::npos);
}

TEST_F(ProfileAttach, PlanCommandWritesTheCallsOfTheResultsFiles) {
  const std::string out = dir_ + "/plan.json";
  ASSERT_EQ(run_ktune({"profile-plan", "--gpu", "nvidia-h200", "--out", out, "--results", dir_ + "/reports"}), exit_ok);
  const auto plan = nlohmann::json::parse(read_file(out));
  ASSERT_EQ(plan["calls"].size(), 3u);  // T = 1, T = 16 (of the widest row) and the largest
  EXPECT_EQ(plan["calls"][2]["shape"], "tokens=8192,d=28672");
  EXPECT_EQ(run_ktune({"profile-plan", "--gpu", "nvidia-h200", "--out", out, "--results", dir_ + "/reports", "--dtypes",
                       "fp32"}),
            exit_failure);  // nothing to profile is an error, not an empty plan
  EXPECT_EQ(run_ktune({"profile-plan", "--out", out}), exit_usage);
}

}  // namespace
