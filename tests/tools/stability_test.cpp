// Issue 9 on the host side: a search file (screens and the finalists' rounds in one Google Benchmark
// JSON) selects like a sweep plus a re-test and carries the re-measured counts; two runs compare shape by
// shape (the user's regret, held, within band, variation, the controls and the reasons); `ktune compare
// --attach` puts the comparison into the results files and the reports show it; `ktune profile --help`
// answers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "ktune/cli.hpp"
#include "ktune/io.hpp"
#include "ktune/raw.hpp"
#include "ktune/regret.hpp"
#include "ktune/report.hpp"
#include "ktune/results.hpp"
#include "ktune/stability.hpp"
#include "ktune/tables.hpp"

namespace {

using namespace ktune::tool;
using ktune::cli::run_ktune;
using json = nlohmann::json;
namespace fs = std::filesystem;

const std::string data = KTUNE_TOOL_TEST_DATA;

json fixture(const char* name) { return json::parse(read_file(data + "/raw/" + name)); }

/// The search file ktune_bench would write for the fixtures: the sweep's rows as screens (two of them
/// re-measured, one still noisy, one left at its probe) and the re-test's rows as the finalists' rounds, in
/// one file.
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
    if (n == "toyop/fp32/tokens=16,d=1024/tpb_64.vb_4.pdl_0/manual_time") b["pruned"] = 1;
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
  EXPECT_EQ(a.search->pruned, 1);
  EXPECT_EQ(a.search->finalists, static_cast<std::int64_t>(rounds));
  // It survives the results file.
  const Selection back = from_json(to_json(a), "memory");
  ASSERT_TRUE(back.search.has_value());
  EXPECT_EQ(back.search->screened, a.search->screened);
  EXPECT_EQ(back.search->pruned, 1);
  EXPECT_EQ(dump_json(to_json(back), 6), dump_json(to_json(a), 6));
}

TEST(ToolSearch, TheSettingsItRanWithReachTheResultsFile) {
  json doc = search_document();
  doc["context"]["search_rounds"] = "5";
  doc["context"]["search_guide_ratio"] = "1.3";
  doc["context"]["search_noise_abs"] = "0.1";
  const auto sel = select_files({parse_raw(doc, "search.json", "0x1")});
  ASSERT_EQ(sel.size(), 1u);
  ASSERT_TRUE(sel[0].search.has_value());
  const std::map<std::string, double> want{{"guide_ratio", 1.3}, {"noise_abs", 0.1}, {"rounds", 5}};
  EXPECT_EQ(sel[0].search->settings, want);
  const Selection back = from_json(to_json(sel[0]), "memory");
  ASSERT_TRUE(back.search.has_value());
  EXPECT_EQ(back.search->settings, want);
  EXPECT_EQ(dump_json(to_json(back), 6), dump_json(to_json(sel[0]), 6));
  // A search recorded before 2026-11-27 has none; a setting that is not a number is refused.
  const auto before = select_files({parse_raw(search_document(), "search.json", "0x1")});
  ASSERT_TRUE(before[0].search.has_value());
  EXPECT_TRUE(before[0].search->settings.empty());
  EXPECT_FALSE(to_json(before[0])["search"].contains("settings"));
  doc["context"]["search_rounds"] = "five";
  EXPECT_THROW(select_files({parse_raw(doc, "search.json", "0x1")}), ToolError);
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

// ---- the user's regret ------------------------------------------------------------------------------

/// A finalist: screened at `screen_us`, then timed in rounds at `round_us`.
VariantResult finalist(const std::string& id, double screen_us, double round_us) {
  VariantResult v;
  v.id = id;
  v.sweep = Measure{screen_us, 0.01, 9, {}};
  v.retest = Measure{round_us, 0.004, 70, {}};
  return v;
}

ShapeResult shape_with(std::vector<VariantResult> variants) {
  ShapeResult s;
  s.key = "tokens=16,d=4096";
  s.variants = std::move(variants);
  return s;
}

TEST(ToolRegret, ZeroWhenTheWinnerIsAlsoTheFastestHere) {
  // S is faster than every variant: no table can pick it, so it is not the fastest.
  const ShapeResult now = shape_with({finalist("original", 0.5, 0.5), finalist("a", 1.00, 1.00), finalist("b", 1.01, 1.02)});
  const Regret r = regret_of("a", now);
  ASSERT_TRUE(r.value.has_value()) << r.none;
  EXPECT_EQ(*r.value, 0.0);
  EXPECT_EQ(r.level, "rounds");
  EXPECT_EQ(r.fastest, "a");
  EXPECT_EQ(regret_words(r), "0.00%");
}

TEST(ToolRegret, RoundMediansWhenTheWinnerWasAFinalistHere) {
  // On screens a would be 2.4 / 1.9 - 1 against c; on rounds it is 2.2 / 2.0 - 1 against b. c, screened
  // fastest, was not a finalist: it is not the fastest at the rounds' level.
  const ShapeResult now =
      shape_with({finalist("original", 3, 3), finalist("a", 2.4, 2.2), finalist("b", 2.1, 2.0), sweep_only("c", 1.9)});
  const Regret r = regret_of("a", now);
  ASSERT_TRUE(r.value.has_value()) << r.none;
  EXPECT_EQ(r.level, "rounds");
  EXPECT_EQ(r.fastest, "b");
  EXPECT_DOUBLE_EQ(r.winner_before_us, 2.2);
  EXPECT_DOUBLE_EQ(r.fastest_us, 2.0);
  EXPECT_NEAR(*r.value, 0.1, 1e-12);
  // Each time's spread at its level goes with it (the finalists' rounds: 0.004), kept through the JSON.
  EXPECT_DOUBLE_EQ(r.winner_before_spread, 0.004);
  EXPECT_DOUBLE_EQ(r.fastest_spread, 0.004);
  const Regret back = regret_from_json(regret_json(r));
  EXPECT_DOUBLE_EQ(back.winner_before_spread, r.winner_before_spread);
  EXPECT_DOUBLE_EQ(back.fastest_spread, r.fastest_spread);
}

TEST(ToolRegret, ScreenMediansWhenTheWinnerWasNotAFinalistHere) {
  // a was screened only: against the fastest screen (c, which no round timed), not the fastest round (b).
  const ShapeResult now =
      shape_with({finalist("original", 3, 3), sweep_only("a", 2.5), finalist("b", 2.1, 2.0), sweep_only("c", 1.9),
                  finalist("d", 2.0, 2.05)});
  const Regret r = regret_of("a", now);
  ASSERT_TRUE(r.value.has_value()) << r.none;
  EXPECT_EQ(r.level, "screens");
  EXPECT_EQ(r.fastest, "c");
  EXPECT_DOUBLE_EQ(r.winner_before_us, 2.5);
  EXPECT_DOUBLE_EQ(r.fastest_us, 1.9);
  EXPECT_DOUBLE_EQ(r.winner_before_spread, 0.01) << "the screens' spreads at the screens' level";
  EXPECT_NEAR(*r.value, 2.5 / 1.9 - 1, 1e-12);
  EXPECT_EQ(regret_words(r), "31.58% (screens)");
}

TEST(ToolRegret, NeverNegative) {
  EXPECT_EQ(regret_ratio(1.0, 1.1), 0.0);  // a winner faster than the fastest costs nothing
  EXPECT_EQ(regret_ratio(2.0, 2.0), 0.0);
  EXPECT_NEAR(regret_ratio(1.1, 1.0), 0.1, 1e-12);
  // Tied with the fastest (the smaller id is the fastest): no regret either.
  const Regret r = regret_of("b", shape_with({finalist("a", 1, 1.5), finalist("b", 1, 1.5)}));
  EXPECT_EQ(r.fastest, "a");
  ASSERT_TRUE(r.value.has_value());
  EXPECT_EQ(*r.value, 0.0);
}

TEST(ToolRegret, AMissingOrWrongWinnerHasNoneAndSaysWhy) {
  const Regret missing = regret_of("z", shape_with({finalist("a", 1, 1)}));
  EXPECT_FALSE(missing.value.has_value());
  EXPECT_EQ(missing.none, "not measured in this run");
  EXPECT_EQ(regret_words(missing), "none: not measured in this run");
  VariantResult wrong = finalist("b", 0.5, 0.5);
  wrong.verdict = Verdict::incorrect;
  const Regret incorrect = regret_of("b", shape_with({finalist("a", 1, 1), wrong}));
  EXPECT_FALSE(incorrect.value.has_value());
  EXPECT_EQ(incorrect.none, std::string(to_string(Verdict::incorrect)) + " in this run");
  // Counted apart, never as a zero.
  StabilityRow a, b;
  a.regret = missing;
  b.regret = regret_of("a", shape_with({finalist("a", 1, 1.2), finalist("c", 1, 1)}));
  const RegretSummary s = summarise_regret({a, b});
  EXPECT_EQ(s.compared, 2u);
  EXPECT_EQ(s.shapes, 1u);
  EXPECT_EQ(s.without(), 1u);
  EXPECT_NEAR(*s.p50, 0.2, 1e-12);
}

StabilityRow regret_row(const std::string& shape, std::optional<double> value, const std::string& level = "rounds") {
  StabilityRow r;
  r.dtype = "fp16";
  r.shape = shape;
  r.winner_before = "w_" + shape;
  Regret g;
  g.value = value;
  g.level = value ? level : "";
  g.fastest = "f_" + shape;
  g.winner_before_us = value ? 1 + *value : 0;
  g.fastest_us = value ? 1 : 0;
  if (!value) g.none = "not measured in this run";
  r.regret = g;
  return r;
}

TEST(ToolRegret, MedianP95AndMaxOverShapesAgainstTheTarget) {
  std::vector<StabilityRow> rows;
  for (int i = 20; i >= 1; --i) rows.push_back(regret_row("s" + std::to_string(i), i / 1000.0, i % 4 ? "rounds" : "screens"));
  rows.push_back(regret_row("missing", std::nullopt));
  RegretSummary s = summarise_regret(rows);
  EXPECT_EQ(s.compared, 21u);
  EXPECT_EQ(s.shapes, 20u);
  EXPECT_EQ(s.screens, 5u);
  EXPECT_EQ(s.without(), 1u);
  EXPECT_DOUBLE_EQ(*s.p50, 0.010);
  EXPECT_DOUBLE_EQ(*s.p95, 0.019);  // nearest rank: the 19th of 20
  EXPECT_DOUBLE_EQ(*s.max, 0.020);
  EXPECT_FALSE(s.meets_goal());  // p95 above 1%
  // p95 at 1% and the largest at 3% meet the target; one shape above 3% misses it.
  rows.clear();
  for (int i = 0; i < 19; ++i) rows.push_back(regret_row("s" + std::to_string(i), i < 18 ? 0.0 : regret_goal_p95));
  rows.push_back(regret_row("top", regret_goal_max));
  s = summarise_regret(rows);
  EXPECT_DOUBLE_EQ(*s.p95, regret_goal_p95);
  EXPECT_TRUE(s.meets_goal());
  rows.back() = regret_row("top", 0.031);
  EXPECT_FALSE(summarise_regret(rows).meets_goal());
  EXPECT_FALSE(summarise_regret({}).meets_goal());  // nothing compared meets nothing
  EXPECT_EQ(regret_goal_words(), "p95 at most 1.0%, largest at most 3.0%");
}

TEST(ToolRegret, TheLargestFirstAtMostFiveWithoutZerosOrNone) {
  std::vector<OpRow> rows;
  const std::vector<std::optional<double>> values = {0.01, 0.05, 0.0, std::nullopt, 0.05, 0.02, 0.03, 0.04, 0.005};
  for (std::size_t i = 0; i < values.size(); ++i)
    rows.push_back({i < 4 ? "opa" : "opb", regret_row("s" + std::to_string(i), values[i])});
  const auto worst = worst_regrets(rows);
  ASSERT_EQ(worst.size(), 5u);
  EXPECT_EQ(worst[0].row.shape, "s1");  // 5%, first in order
  EXPECT_EQ(worst[0].op, "opa");
  EXPECT_EQ(worst[1].row.shape, "s4");  // 5%, second
  EXPECT_EQ(worst[1].op, "opb");
  EXPECT_EQ(worst[2].row.shape, "s7");
  EXPECT_EQ(worst[3].row.shape, "s6");
  EXPECT_EQ(worst[4].row.shape, "s5");
  EXPECT_EQ(worst_regrets(rows, 2).size(), 2u);
  EXPECT_TRUE(worst_regrets({{"op", regret_row("z", 0.0)}, {"op", regret_row("n", std::nullopt)}}).empty());
}

/// Two runs of one op: d=512 holds (a fastest in both); d=1024 changes (a in the earlier run, b 5% ahead
/// of a in this one); d=2048's earlier winner c is not measured in this run.
std::pair<Selection, Selection> two_runs() {
  const Selection before = run({{timed("original", 3), timed("a", 1.0), timed("b", 1.2)},
                                {timed("original", 3), timed("a", 1.0), timed("b", 1.1)},
                                {timed("original", 9), timed("c", 4.0), timed("b", 5.0)}},
                               {0.9, 0.9, 4.5});
  const Selection now = run({{timed("original", 3), timed("a", 1.0), timed("b", 1.2)},
                             {timed("original", 3), timed("a", 1.05), timed("b", 1.0)},
                             {timed("original", 9), timed("b", 5.0)}},
                            {0.9, 0.9, 4.5});
  return {before, now};
}

TEST(ToolRegret, CompareJudgesTheEarlierWinnerInThisRunOnly) {
  const auto [before, now] = two_runs();
  const auto rows = compare_runs(before, now);
  ASSERT_EQ(rows.size(), 3u);
  for (const StabilityRow& r : rows) ASSERT_TRUE(r.regret.has_value()) << r.shape;
  ASSERT_TRUE(rows[0].regret->value.has_value());
  EXPECT_EQ(*rows[0].regret->value, 0.0);
  EXPECT_EQ(rows[1].winner_before, "a");
  ASSERT_TRUE(rows[1].regret->value.has_value());
  EXPECT_NEAR(*rows[1].regret->value, 0.05, 1e-12);  // not 10%: b judged in the earlier run
  EXPECT_EQ(rows[1].regret->fastest, "b");
  EXPECT_FALSE(rows[2].regret->value.has_value());
  EXPECT_EQ(rows[2].regret->none, "not measured in this run");
  const std::string text = regret_text({{"nvidia-h200/toyop", rows}});
  EXPECT_NE(text.find("Target: p95 at most 1.0%, largest at most 3.0%."), std::string::npos) << text;
  EXPECT_NE(text.find("nvidia-h200/toyop/fp32"), std::string::npos) << text;
  EXPECT_NE(text.find("nvidia-h200/toyop/fp32/tokens=1,d=1024: 5.00% on rounds: a 1.05 us (spread 0.4%) against b 1 us "
                      "(spread 0.4%)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nvidia-h200/toyop/fp32/tokens=1,d=2048: BEFORE's winner c: not measured in this run"),
            std::string::npos)
      << text;
}

nlohmann::ordered_json with_section(Selection now, const Selection& before) {
  Stability st;
  st.against = {"nvidia-h200/toyop.json", "results", "0x1", "2026-01-01"};
  st.rows = compare_runs(before, now);
  now.stability = st;
  return to_json(now);
}

TEST(ToolRegret, TheSectionRoundTripsWithItsRegret) {
  const auto [before, now] = two_runs();
  const nlohmann::ordered_json j = with_section(now, before);
  const auto& st = j.at("stability");
  EXPECT_EQ(st.at("goal").at("p95_regret"), regret_goal_p95);
  EXPECT_EQ(st.at("goal").at("max_regret"), regret_goal_max);
  EXPECT_EQ(st.at("regret").at("shapes"), 2);
  EXPECT_EQ(st.at("regret").at("without"), 1);
  EXPECT_NEAR(st.at("regret").at("max").get<double>(), 0.05, 1e-12);
  EXPECT_EQ(st.at("regret").at("meets_goal"), false);
  EXPECT_EQ(st.at("shapes").at(1).at("regret").at("level"), "rounds");
  EXPECT_EQ(st.at("shapes").at(1).at("regret").at("fastest"), "b");
  EXPECT_EQ(st.at("shapes").at(2).at("regret").at("none"), "not measured in this run");
  const Selection back = from_json(j, "memory");
  ASSERT_TRUE(back.stability.has_value());
  ASSERT_EQ(back.stability->rows.size(), 3u);
  const Regret& r = *back.stability->rows[1].regret;
  EXPECT_NEAR(*r.value, 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(r.winner_before_us, 1.05);
  EXPECT_DOUBLE_EQ(r.fastest_us, 1.0);
  EXPECT_EQ(dump_json(to_json(back), 6), dump_json(j, 6));
}

TEST(ToolRegret, ASectionWrittenBeforeRegretLoadsWithItDerivedAndRenders) {
  const auto [before, now] = two_runs();
  const nlohmann::ordered_json with = with_section(now, before);
  nlohmann::ordered_json old = with;
  auto& st = old.at("stability");
  st.erase("regret");
  st.at("goal").erase("p95_regret");
  st.at("goal").erase("max_regret");
  for (auto& row : st.at("shapes")) row.erase("regret");
  ASSERT_EQ(old.dump().find("regret"), std::string::npos);
  const Selection back = from_json(old, "old");
  ASSERT_TRUE(back.stability.has_value());
  for (const StabilityRow& r : back.stability->rows) ASSERT_TRUE(r.regret.has_value()) << r.shape;
  EXPECT_NEAR(*back.stability->rows[1].regret->value, 0.05, 1e-12);
  EXPECT_EQ(back.stability->rows[2].regret->none, "not measured in this run");
  EXPECT_EQ(dump_json(to_json(back), 6), dump_json(with, 6));  // as `ktune compare` would have written it
  const std::string md = stability_markdown(back);
  EXPECT_NE(md.find("| fp32 | 2 | 0.00% | 5.00% | 5.00% | 0 | 1 | no |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fp32 | tokens=1,d=1024 | `a` | `b` | 1.05 | 1.00 | 0.4% / 0.4% | rounds | 5.00% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| none: not measured in this run |"), std::string::npos) << md;
}

TEST(ToolRegret, TheReportsLeadTheRunToRunSectionWithRegret) {
  const auto [before, now] = two_runs();
  const LoadedResults r{"nvidia-h200/toyop.json", "0x2", from_json(with_section(now, before), "memory")};
  const std::string md = op_markdown(r), html = op_html(r);
  const std::size_t section = md.find("## Run-to-run stability");
  ASSERT_NE(section, std::string::npos);
  EXPECT_NE(md.find("Target: p95 at most 1.0%, largest at most 3.0%.", section), std::string::npos);
  EXPECT_NE(md.find("| dtype | shapes | p50 regret | p95 regret | max regret |", section), std::string::npos);
  EXPECT_NE(md.find("Largest regrets:", section), std::string::npos);
  EXPECT_NE(md.find("| fp32 | tokens=1,d=1024 | `a` | 5.00% | `b` | `b` | changed |", section), std::string::npos) << md;
  EXPECT_EQ(md.find("issue 9", section), std::string::npos);
  EXPECT_NE(html.find("<th>p95 regret</th>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"l\"><code>a</code></td><td class=\"l\"><code>b</code></td><td>1.05</td>"), std::string::npos);
  // The index: per op and dtype, per op (when it has several dtypes), overall, the largest regrets.
  const std::string index = index_markdown("nvidia-h200", {&r});
  EXPECT_NE(index.find("All: 2 shapes with a regret (0 on screens, 1 without), p50 0.00%, p95 5.00%, largest 5.00%: misses "
                       "the target."),
            std::string::npos)
      << index;
  EXPECT_NE(index.find("| [toyop](toyop.md) | fp32 | 2 | 0.00% | 5.00% | 5.00% | 0 | 1 | no |"), std::string::npos) << index;
  EXPECT_NE(index.find("| [toyop](toyop.md) | fp32 | tokens=1,d=1024 | `a` | `b` | 1.05 | 1.00 | 0.4% / 0.4% | rounds | 5.00% |"),
            std::string::npos)
      << index;
  EXPECT_EQ(index.find("winner held"), std::string::npos);
  EXPECT_NE(index_html("nvidia-h200", {&r}).find("<h2>Run-to-run stability</h2>"), std::string::npos);
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
    // A run against itself: the selection rule alone, which keeps a winner within the band of the fastest.
    ASSERT_TRUE(r.regret && r.regret->value) << r.dtype << "/" << r.shape;
    EXPECT_LE(*r.regret->value, r.band) << r.dtype << "/" << r.shape;
  }
  ASSERT_EQ(run_ktune({"report", "--results", dir + "/now"}), exit_ok);
  const std::string md = read_file(dir + "/now/nvidia-h200/toyop.md");
  EXPECT_NE(md.find("## Run-to-run stability"), std::string::npos);
  EXPECT_NE(md.find("## Search"), std::string::npos);
  EXPECT_NE(md.find("2 were timed again because their spread was out of line"), std::string::npos);
  const std::string index = read_file(dir + "/now/nvidia-h200/index.md");
  EXPECT_NE(index.find("## Run-to-run stability"), std::string::npos);
  // d=4096 fp32 keeps tpb_256.vb_16.pdl_1, 0.3% behind the fastest within the band; bf16 has no rounds.
  EXPECT_NE(index.find("| [toyop](toyop.md) | fp32 | 6 | 0.00% | 0.33% | 0.33% | 0 | 0 | yes | 100.0% | 0.0% |"),
            std::string::npos)
      << index;
  EXPECT_NE(index.find("| [toyop](toyop.md) | bf16 | 6 | 0.00% | 0.00% | 0.00% | 6 | 0 | yes | 100.0% | 0.0% |"),
            std::string::npos)
      << index;
  EXPECT_NE(index.find("| [toyop](toyop.md) | all | 12 | 0.00% | 0.33% | 0.33% | 6 | 0 | yes | 100.0% | 0.0% |"),
            std::string::npos)
      << index;
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
