// `ktune replay-guides`: the search's guided-screen rule (bench/search.hpp) replayed on a made-up full search.
// One op and dtype, tokens 1 and 8 at widths 1024, 2048 and 4096 (the anchor width is 2048). At tokens = 8 the
// winner at width 4096, `w`, screened 1.25x the best at its anchor and is not among the anchors' five best
// geometric means (it is slow at tokens = 1): a ratio of 1.3 keeps it, 1.2 leaves it out, at a cost.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include <unistd.h>

#include "ktune/cli.hpp"
#include "ktune/io.hpp"
#include "ktune/raw.hpp"
#include "ktune/replay_guides.hpp"

namespace {

using namespace ktune::tool;
using json = nlohmann::json;
namespace fs = std::filesystem;

json row(const std::string& name, double us) {
  return {{"name", name + "/manual_time"}, {"run_name", name + "/manual_time"}, {"run_type", "iteration"},
          {"repetitions", 1}, {"repetition_index", 0}, {"threads", 1}, {"iterations", 9}, {"real_time", us},
          {"cpu_time", us}, {"time_unit", "us"}, {"median_us", us}, {"min_us", us}, {"samples", 9}};
}

json full_search() {
  json doc = json::parse(read_file(std::string(KTUNE_TOOL_TEST_DATA) + "/raw/sweep.json"));
  doc["context"]["mode"] = "search";
  json rows = json::array();
  for (const json& b : doc["benchmarks"]) {  // the reference rows only
    const std::string name = b["name"];
    if (name.rfind("ktune/copy_ceiling", 0) == 0 || name.rfind("ktune/empty_kernel", 0) == 0) rows.push_back(b);
  }
  for (int t : {1, 8})
    for (int h : {1024, 2048, 4096}) {
      const std::string shape = "tokens=" + std::to_string(t) + ",h=" + std::to_string(h);
      std::map<std::string, double> times = {{"original", 9.0}, {"a", 1.0},  {"b", 1.1},  {"c", 1.2}, {"d", 1.21},
                                             {"e", 1.22},       {"f", 1.23}, {"g", 1.24}, {"w", 1.5}};
      if (t == 1 && h == 2048) times["w"] = 5.0;   // slow at this anchor: not among the five best means
      if (t == 8 && h == 2048) times["w"] = 1.25;  // at the anchor: 1.25x a
      if (t == 8 && h == 4096) times["w"] = 0.9;   // the winner there
      for (const auto& [v, us] : times) rows.push_back(row("toy/fp16/" + shape + "/" + v, us));
      json failed = row("toy/fp16/" + shape + "/x", 0);  // failed everywhere: no passing screen, always kept
      failed["error_occurred"] = true;
      failed["error_message"] = "incorrect: rel_l2 1 > 1e-3";
      failed["iterations"] = 0;
      rows.push_back(failed);
    }
  doc["benchmarks"] = rows;
  return doc;
}

TEST(ToolReplayGuides, ARatioKeepsWhatItsAnchorFoundWithinReachAndNamesTheWinnersLeftOut) {
  const RawFile search = parse_raw(full_search(), "search.json", "0x1");
  const GuidedReplay wide = replay_guides(search, 1.3, 5);
  // 6 shapes x 10 rows. At 1.3 the guided shapes keep all but w at tokens = 1 (5x a at its anchor).
  EXPECT_EQ(wide.total, 60u);
  EXPECT_EQ(wide.kept, 58u);
  EXPECT_TRUE(wide.misses.empty());
  // At 1.2 they keep S, x (no passing screen at the anchor), a, b, c (1.2x) and, forced, d and e: 7 each.
  const GuidedReplay tight = replay_guides(search, 1.2, 5);
  EXPECT_EQ(tight.kept, 48u);
  ASSERT_EQ(tight.misses.size(), 1u);
  EXPECT_EQ(tight.misses[0].shape, "tokens=8,h=4096");
  EXPECT_EQ(tight.misses[0].winner, "w");
  EXPECT_NEAR(tight.misses[0].cost, 1.0 / 0.9 - 1, 1e-12);  // a, the best kept screen, against w's
  // No forced means: e (1.22x at the anchor) is left out too.
  EXPECT_EQ(replay_guides(search, 1.2, 0).kept, 40u);
}

// Anchors paired across token counts: the anchor at tokens = 8 is guided by the one at tokens = 1, where w took
// 5x the best. At 1.5 it leaves w out, and the shapes it guides never screen it (w's 1.25x there was never
// measured): the winner at (8, 4096) is lost. At 6 it keeps w, and the replay is the width rule's alone.
TEST(ToolReplayGuides, AnAnchorGuidedAcrossTokenCountsLeavesOutWhatItsGuideFoundOutOfReach) {
  const RawFile search = parse_raw(full_search(), "search.json", "0x5");
  const GuidedReplay paired = replay_guides(search, 1.3, 5, 1.5);
  EXPECT_EQ(paired.anchor_ratio, 1.5);
  EXPECT_EQ(paired.kept, 55u);  // 10 at the tokens = 1 anchor, 9 at each other shape
  ASSERT_EQ(paired.misses.size(), 1u);
  EXPECT_EQ(paired.misses[0].shape, "tokens=8,h=4096");
  EXPECT_NEAR(paired.misses[0].cost, 1.0 / 0.9 - 1, 1e-12);
  const GuidedReplay wide = replay_guides(search, 1.3, 5, 6.0);
  EXPECT_EQ(wide.kept, 58u);
  EXPECT_TRUE(wide.misses.empty());
}

// Dtype guides: the same rows again in bf16, but for g, the winner at tokens = 1, h = 1024 in bf16 (0.95), which
// fp16 found at 1.24x its best there. bf16 screens each shape guided by fp16's same shape: S, x, what fp16 kept
// within the ratio, and fp16's five best geometric means (a to e). At 1.2 bf16 keeps 7 rows a shape and w where it
// won in fp16 (tokens = 8, h = 4096), and loses g; at 1.3 it keeps g. Off, bf16 is replayed as its own unit.
TEST(ToolReplayGuides, Bf16IsGuidedByFp16AtTheSameShape) {
  json doc = full_search();
  const json fp16_rows = doc["benchmarks"];
  for (json b : fp16_rows) {
    std::string name = b["name"];
    const auto at = name.find("toy/fp16/");
    if (at != 0) continue;
    name.replace(0, 9, "toy/bf16/");
    if (name.rfind("toy/bf16/tokens=1,h=1024/g/", 0) == 0) b["median_us"] = b["min_us"] = b["real_time"] = 0.95;
    b["name"] = b["run_name"] = name;
    doc["benchmarks"].push_back(b);
  }
  const RawFile search = parse_raw(doc, "search.json", "0x6");
  const GuidedReplay tight = replay_guides(search, 1.3, 5, 0, 1.2);
  EXPECT_EQ(tight.total, 120u);
  EXPECT_EQ(tight.kept, 58u + 6 * 7 + 1);
  ASSERT_EQ(tight.misses.size(), 1u);
  EXPECT_EQ(tight.misses[0].dtype, "bf16");
  EXPECT_EQ(tight.misses[0].shape, "tokens=1,h=1024");
  EXPECT_EQ(tight.misses[0].winner, "g");
  EXPECT_NEAR(tight.misses[0].cost, 1.0 / 0.95 - 1, 1e-12);
  EXPECT_TRUE(replay_guides(search, 1.3, 5, 0, 1.3).misses.empty());
  EXPECT_EQ(replay_guides(search, 1.3, 5, 0, 0).kept, 2 * 58u);
}

TEST(ToolReplayGuides, AFinalistsRoundsNameTheWinner) {
  json doc = full_search();
  // In the rounds at tokens = 8, h = 4096, a beats w (the fastest screen): the winner is a, which 1.2 keeps.
  json a = row("toy/fp16/tokens=8,h=4096/a", 0.85), w = row("toy/fp16/tokens=8,h=4096/w", 0.95);
  a["rounds"] = 7;
  w["rounds"] = 7;
  doc["benchmarks"].push_back(a);
  doc["benchmarks"].push_back(w);
  const RawFile search = parse_raw(doc, "search.json", "0x2");
  EXPECT_TRUE(replay_guides(search, 1.2, 5).misses.empty());
}

TEST(ToolReplayGuides, AGuidedSearchOrASweepIsRefused) {
  json doc = full_search();
  doc["context"]["guided_out"] = "3";
  try {
    replay_guides(parse_raw(doc, "guided.json", "0x3"), 1.3, 5);
    FAIL() << "a guided search was replayed";
  } catch (const ToolError& e) {
    EXPECT_NE(std::string(e.what()).find("a guided search (3 (variant, shape) pairs not screened)"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.code(), exit_failure);
  }
  json sweep = full_search();
  sweep["context"]["mode"] = "sweep";
  EXPECT_THROW(replay_guides(parse_raw(sweep, "sweep.json", "0x4"), 1.3, 5), ToolError);
}

TEST(ToolReplayGuides, TheCommandExitsOneWhenTheFirstRatioLeavesAWinnerOut) {
  const fs::path dir = fs::temp_directory_path() / ("ktune-replay-guides-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "search.json").string();
  write_atomic(path, full_search().dump());
  EXPECT_EQ(ktune::cli::run_ktune({"replay-guides", path, "1.3", "1.2", "--anchor-ratio", "0"}), exit_ok);
  EXPECT_EQ(ktune::cli::run_ktune({"replay-guides", path, "1.2", "1.3", "--anchor-ratio", "0"}), exit_failure);
  // The search's own anchor ratio (1.5): the anchor at tokens = 8 leaves w out (5x at tokens = 1), and so does
  // the shape it guides where w wins.
  EXPECT_EQ(ktune::cli::run_ktune({"replay-guides", path, "1.3"}), exit_failure);
  fs::remove_all(dir);
}

}  // namespace
