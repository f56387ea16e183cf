// Issue 9 on the host side: a search file (screens and the finalists' rounds in one Google Benchmark
// JSON) selects like a sweep plus a re-test and carries the re-measured counts; two runs compare shape by
// shape (held, within band, variation, the controls and the reasons); `ktune compare --attach` puts the
// comparison into the results files and the reports show it; `ktune profile --help` answers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "ktune/commands.hpp"
#include "ktune/io.hpp"
#include "ktune/raw.hpp"
#include "ktune/report.hpp"
#include "ktune/results.hpp"
#include "ktune/stability.hpp"
#include "ktune/tables.hpp"

namespace {

using namespace ktune::tool;
using json = nlohmann::json;
namespace fs = std::filesystem;

const std::string data = KTUNE_TOOL_TEST_DATA;

json fixture(const char* name) { return json::parse(read_file(data + "/raw/" + name)); }

/// The search file ktune_bench would write for the fixtures: the sweep's rows as screens (two of them
/// re-measured, one still noisy) and the re-test's rows as the finalists' rounds, in one file.
json search_document() {
  json sweep = fixture("sweep.json"), retest = fixture("retest.json");
  json doc = sweep;
  doc["context"]["mode"] = "search";
  doc["context"]["search"] = "halving";
  for (json& b : doc["benchmarks"]) {
    const std::string n = b["name"];
    if (n == "toyop/fp32/tokens=1,d=1024/tpb_64.vb_4.pdl_0/manual_time") b["remeasured"] = 1;
    if (n == "toyop/bf16/tokens=16,d=4096/tpb_128.vb_16.pdl_0/manual_time") {
      b["remeasured"] = 2;
      b["noisy"] = 1;
    }
  }
  for (json b : retest["benchmarks"]) {
    const std::string n = b["name"];
    if (n.rfind("ktune/", 0) == 0) continue;  // the search file has one copy row per shape: the screens'
    b["rounds"] = 7;
    doc["benchmarks"].push_back(b);
  }
  return doc;
}

std::vector<Selection> select_files(const std::vector<RawFile>& files) {
  std::vector<std::string> warnings;
  return build_selections(files, data + "/kernels", warnings);
}

TEST(ToolSearch, ASearchFileSelectsLikeASweepAndItsRetest) {
  const json doc = search_document();
  const RawFile search = parse_raw(doc, "search.json", "0x1");
  EXPECT_EQ(search.mode, "search");
  std::size_t rounds = 0;
  for (const RawRun& r : search.runs) rounds += r.mode == "retest";
  EXPECT_EQ(rounds, fixture("retest.json")["benchmarks"].size() - 2 - 6);  // less the references and the copies
  const auto from_search = select_files({search});
  const auto from_two = select_files({parse_raw(fixture("sweep.json"), "sweep.json", "0x2"),
                                      parse_raw(fixture("retest.json"), "retest.json", "0x3")});
  ASSERT_EQ(from_search.size(), 1u);
  ASSERT_EQ(from_two.size(), 1u);
  const Selection& a = from_search[0];
  const Selection& b = from_two[0];
  ASSERT_EQ(a.dtypes.size(), b.dtypes.size());
  for (std::size_t d = 0; d < a.dtypes.size(); ++d) {
    EXPECT_EQ(a.dtypes[d].general.id, b.dtypes[d].general.id);
    ASSERT_EQ(a.dtypes[d].shapes.size(), b.dtypes[d].shapes.size());
    for (std::size_t i = 0; i < a.dtypes[d].shapes.size(); ++i) {
      const ShapeResult& x = a.dtypes[d].shapes[i];
      const ShapeResult& y = b.dtypes[d].shapes[i];
      SCOPED_TRACE(a.dtypes[d].dtype + "/" + x.key);
      EXPECT_EQ(x.winner, y.winner);
      EXPECT_EQ(x.band_source, y.band_source);
      EXPECT_DOUBLE_EQ(x.noise_band, y.noise_band);
      EXPECT_EQ(x.copy_same_size_us, y.copy_same_size_us);  // the screens' copy, as a sweep's wins
    }
  }
  EXPECT_EQ(a.environment.at("copy_ceiling_gbps"), "3000.0");
  EXPECT_EQ(a.references.count("copy_ceiling"), 1u);
  ASSERT_TRUE(a.search.has_value());
  EXPECT_FALSE(b.search.has_value());  // an exhaustive sweep has no search account
  EXPECT_EQ(a.search->remeasured, 2);
  EXPECT_EQ(a.search->still_noisy, 1);
  EXPECT_EQ(a.search->finalists, static_cast<std::int64_t>(rounds));
  // It survives the results file.
  const Selection back = from_json(to_json(a), "memory");
  ASSERT_TRUE(back.search.has_value());
  EXPECT_EQ(back.search->screened, a.search->screened);
  EXPECT_EQ(dump_json(to_json(back), 6), dump_json(to_json(a), 6));
}

TEST(ToolSearch, AnUnknownModeIsRefused) {
  json doc = fixture("sweep.json");
  doc["context"]["mode"] = "guess";
  EXPECT_THROW(parse_raw(doc, "x.json", "0x1"), ToolError);
}

// ---- run-to-run comparison -------------------------------------------------------------------------

VariantResult timed(const std::string& id, double us, double spread = 0.004) {
  VariantResult v;
  v.id = id;
  v.sweep = Measure{us * 1.02, 0.01, 9, {}};
  v.retest = Measure{us, spread, 70, {}};
  return v;
}

/// A variant timed only in the sweep, fastest there: the general configuration, but never in the pool,
/// so no shape prefers it.
VariantResult sweep_only(const std::string& id, double us) {
  VariantResult v;
  v.id = id;
  v.sweep = Measure{us, 0.01, 9, {}};
  return v;
}

/// One fp32 shape per width (no neighbouring shapes: no neighbour preference), in width order.
Selection run(const std::vector<std::vector<VariantResult>>& shapes, const std::vector<double>& copies) {
  Selection s;
  s.op = "toyop";
  s.gpu_slug = "nvidia-h200";
  DTypeResult d;
  d.dtype = "fp32";
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    ShapeResult sh;
    sh.width = 512 << i;
    sh.tokens = 1;
    sh.key = "tokens=1,d=" + std::to_string(sh.width);
    sh.variants = shapes[i];
    sh.variants.push_back(sweep_only("g", 0.1));
    sh.copy_same_size_us = copies[i];
    d.shapes.push_back(sh);
  }
  select_dtype(d);
  EXPECT_EQ(d.general.id, "g");
  s.dtypes.push_back(d);
  return s;
}

TEST(ToolStability, HeldWithinBandChangedAndTheVariation) {
  // d=512: a and b swap within a 2% band. d=1024: the winner holds, its time moves 1%. d=2048: the
  // winner changes outside the band and its time moves 10%, while the same-size copy moved 8.9%.
  const Selection before = run({{timed("original", 3), timed("a", 2.00, 0.02), timed("b", 2.01)},
                                {timed("original", 3), timed("a", 1.0), timed("b", 1.2)},
                                {timed("original", 9), timed("a", 5.0), timed("b", 5.6)}},
                               {1.8, 0.9, 4.5});
  const Selection now = run({{timed("original", 3), timed("a", 2.02), timed("b", 2.00, 0.02)},
                             {timed("original", 3), timed("a", 1.01), timed("b", 1.2)},
                             {timed("original", 9.1), timed("a", 6.0), timed("b", 5.5)}},
                            {1.8, 0.9, 4.9});
  const auto rows = compare_runs(before, now);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].shape, "tokens=1,d=512");
  EXPECT_FALSE(rows[0].held);
  EXPECT_TRUE(rows[0].within_band);
  EXPECT_EQ(rows[0].winner_before, "a");
  EXPECT_EQ(rows[0].winner, "b");
  EXPECT_TRUE(rows[0].meets_goal);
  EXPECT_TRUE(rows[1].held);
  EXPECT_NEAR(rows[1].variation, 0.01, 1e-12);
  EXPECT_TRUE(rows[1].meets_goal);
  EXPECT_TRUE(rows[1].note.empty());
  EXPECT_FALSE(rows[2].held);
  EXPECT_FALSE(rows[2].within_band);
  EXPECT_NEAR(rows[2].variation, 0.1, 1e-12);
  ASSERT_TRUE(rows[2].copy_variation.has_value());
  EXPECT_NEAR(*rows[2].copy_variation, 0.4 / 4.5, 1e-12);
  ASSERT_TRUE(rows[2].original_variation.has_value());
  EXPECT_FALSE(rows[2].meets_goal);
  EXPECT_NE(rows[2].note.find("changed outside the band (a -> b)"), std::string::npos) << rows[2].note;
  EXPECT_NE(rows[2].note.find("moved 10.0%"), std::string::npos) << rows[2].note;
  EXPECT_NE(rows[2].note.find("same-size copy moved 8.9%"), std::string::npos) << rows[2].note;
  EXPECT_NE(rows[2].note.find("the two were 12.0% apart in the earlier run and 9.1% in this one"), std::string::npos)
      << rows[2].note;

  const StabilitySummary s = summarise_stability(rows);
  EXPECT_EQ(s.shapes, 3u);
  EXPECT_EQ(s.held, 1u);
  EXPECT_EQ(s.within_band, 1u);
  EXPECT_EQ(s.agree, 2u);
  EXPECT_NEAR(s.share_held_or_within(), 2.0 / 3, 1e-12);
  ASSERT_TRUE(s.p95.has_value());
  EXPECT_NEAR(*s.p95, 0.1, 1e-12);
  EXPECT_FALSE(s.meets_goal_overall());
}

TEST(ToolStability, NearestRankQuantiles) {
  EXPECT_FALSE(nearest_rank({}, 0.95).has_value());
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i / 1000.0);
  EXPECT_DOUBLE_EQ(*nearest_rank(v, 0.95), 0.095);
  EXPECT_DOUBLE_EQ(*nearest_rank(v, 0.5), 0.05);
  EXPECT_DOUBLE_EQ(*nearest_rank(v, 1.0), 0.1);
  EXPECT_DOUBLE_EQ(*nearest_rank({0.2}, 0.95), 0.2);
}

TEST(ToolStability, CompareAttachesTheSectionAndTheReportsShowIt) {
  const std::string dir = fs::temp_directory_path() / ("ktune_stability_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream(dir + "/search.json") << search_document().dump(1);
  }
  ASSERT_EQ(run_ktune({"select", "--raw", data + "/raw/sweep.json", data + "/raw/retest.json", "--kernels", data + "/kernels",
                       "--results", dir + "/before", "--build-json", "none"}),
            exit_ok);
  ASSERT_EQ(run_ktune({"select", "--raw", dir + "/search.json", "--kernels", data + "/kernels", "--results", dir + "/now",
                       "--build-json", "none"}),
            exit_ok);
  EXPECT_EQ(run_ktune({"compare", dir + "/before"}), exit_usage);
  EXPECT_EQ(run_ktune({"compare", "--help"}), exit_ok);
  EXPECT_EQ(run_ktune({"compare", dir + "/before", dir + "/now"}), exit_ok);
  EXPECT_FALSE(from_json(nlohmann::ordered_json::parse(read_file(dir + "/now/nvidia-h200/toyop.json")), "x").stability);
  ASSERT_EQ(run_ktune({"compare", dir + "/before", dir + "/now", "--attach"}), exit_ok);
  const Selection s = from_json(nlohmann::ordered_json::parse(read_file(dir + "/now/nvidia-h200/toyop.json")), "x");
  ASSERT_TRUE(s.stability.has_value());
  EXPECT_EQ(s.stability->against.file, "nvidia-h200/toyop.json");
  EXPECT_EQ(s.stability->rows.size(), 12u);  // fp32 and bf16, six shapes each
  for (const StabilityRow& r : s.stability->rows) {
    EXPECT_TRUE(r.held) << r.dtype << "/" << r.shape;  // the same measurements: the same winners
    EXPECT_EQ(r.variation, 0);
  }
  ASSERT_EQ(run_ktune({"report", "--results", dir + "/now"}), exit_ok);
  const std::string md = read_file(dir + "/now/nvidia-h200/toyop.md");
  EXPECT_NE(md.find("## Run-to-run stability"), std::string::npos);
  EXPECT_NE(md.find("## Search"), std::string::npos);
  EXPECT_NE(md.find("2 were timed again because their spread was out of line"), std::string::npos);
  const std::string index = read_file(dir + "/now/nvidia-h200/index.md");
  EXPECT_NE(index.find("## Run-to-run stability"), std::string::npos);
  EXPECT_NE(index.find("| [toyop](toyop.md) | fp32 | 6 | 6 | 100.0% | 0.0% | 0.0% | 0.0% | yes |"), std::string::npos) << index;
  EXPECT_NE(index.find("Re-measured screens"), std::string::npos);
  EXPECT_NE(read_file(dir + "/now/nvidia-h200/toyop.html").find("<h2>Run-to-run stability</h2>"), std::string::npos);
  EXPECT_NE(read_file(dir + "/now/nvidia-h200/index.html").find("<h2>Run-to-run stability</h2>"), std::string::npos);
  // Without the sections (an exhaustive tune, no comparison) the reports have none of it.
  ASSERT_EQ(run_ktune({"report", "--results", dir + "/before"}), exit_ok);
  EXPECT_EQ(read_file(dir + "/before/nvidia-h200/toyop.md").find("Run-to-run"), std::string::npos);
  EXPECT_EQ(read_file(dir + "/before/nvidia-h200/index.md").find("Re-measured"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ToolStability, EveryCommandAnswersHelp) {
  for (const char* c : {"list", "select", "tables", "report", "gen", "compare", "profile-plan", "profile-attach", "profile"})
    EXPECT_EQ(run_ktune({c, "--help"}), exit_ok) << c;  // issue 9: `ktune profile --help` exited 2
  EXPECT_EQ(run_ktune({"profile"}), exit_usage);
}

}  // namespace
