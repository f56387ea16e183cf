// Selection on synthetic results: per-shape best, ties, noise band, neighbour preference, general
// configuration by geometric mean, excluded variants, top-K candidates; and the same end to end on the
// Google Benchmark fixtures under tests/tools/data/raw (results file, T4 export, round trip).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "ktune/cli.hpp"
#include "ktune/io.hpp"
#include "ktune/raw.hpp"
#include "ktune/results.hpp"

namespace {

using namespace ktune::tool;
using ktune::cli::run_ktune;
using ojson = nlohmann::ordered_json;

struct Timing {
  std::string id;
  double us;
  double spread = 0.002;
  const char* error = nullptr;
};

ShapeResult shape(std::int64_t tokens, std::int64_t width, const std::vector<Timing>& ts, bool retest = false) {
  ShapeResult s;
  s.tokens = tokens;
  s.width = width;
  s.key = "tokens=" + std::to_string(tokens) + ",d=" + std::to_string(width);
  s.dims = {{"tokens", tokens}, {"d", width}};
  for (const Timing& t : ts) {
    VariantResult v;
    v.id = t.id;
    if (t.error) {
      v.error = t.error;
      v.verdict = verdict_of_message(t.error);
    } else {
      Measure m;
      m.median_us = t.us;
      m.spread = t.spread;
      m.samples = 10;
      (retest ? v.retest : v.sweep) = m;
      if (retest) v.sweep = Measure{t.us * 1.1, 0.01, 10, {}};
    }
    s.variants.push_back(v);
  }
  return s;
}

TEST(ToolSelect, BenchmarkNamesFollowTheInterface) {
  auto b = parse_bench_name("silu_and_mul/bf16/tokens=16,d=11008/tpb_256.vb_16/manual_time");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->op, "silu_and_mul");
  EXPECT_EQ(b->dtype, "bf16");
  EXPECT_EQ(b->shape, "tokens=16,d=11008");
  EXPECT_EQ(b->id, "tpb_256.vb_16");
  ASSERT_EQ(b->dims.size(), 2u);
  EXPECT_EQ(b->dims[1].first, "d");
  EXPECT_EQ(b->dims[1].second, 11008);
  EXPECT_TRUE(parse_bench_name("op/fp32/tokens=1/original/repeats:3/manual_time"));
  EXPECT_FALSE(parse_bench_name("op/fp32/tokens=x/original"));
  EXPECT_FALSE(parse_bench_name("op/fp32/original"));
  EXPECT_FALSE(parse_bench_name("op/fp32/tokens=1,=2/original"));
}

TEST(ToolSelect, VerdictComesFromTheMessagePrefix) {
  EXPECT_EQ(verdict_of_message("incorrect: rel_l2 1e-2 seed 3"), Verdict::incorrect);
  EXPECT_EQ(verdict_of_message("rejected: spills"), Verdict::rejected);
  EXPECT_EQ(verdict_of_message("cannot implement: alignment"), Verdict::cannot_implement);
  EXPECT_EQ(verdict_of_message("CUDA error"), Verdict::error);
}

TEST(ToolSelect, FastestCorrectVariantWinsAndOriginalNeverDoes) {
  ShapeResult s = shape(16, 1024, {{"original", 1.0}, {"a_1", 3.0}, {"a_2", 2.0, 0.002, "incorrect: x"}, {"a_3", 2.5}});
  select_shape(s, "", "", {});
  EXPECT_EQ(s.fastest, "a_3");
  EXPECT_EQ(s.winner, "a_3");
  EXPECT_EQ(s.ranking, (std::vector<std::string>{"a_3", "a_1"}));
  EXPECT_EQ(s.band_source, "sweep");
}

TEST(ToolSelect, TiesGoToTheSmallerId) {
  ShapeResult s = shape(16, 1024, {{"b_2", 2.0}, {"b_1", 2.0}, {"b_3", 2.0}});
  select_shape(s, "", "", {});
  EXPECT_EQ(s.fastest, "b_1");
  EXPECT_EQ(s.ranking, (std::vector<std::string>{"b_1", "b_2", "b_3"}));
}

TEST(ToolSelect, NoiseBandIsAtLeastOnePercentOrTheWinnersSpread) {
  ShapeResult s = shape(16, 1024, {{"a_1", 100.0, 0.001}, {"a_2", 100.9}, {"a_3", 101.1}});
  select_shape(s, "", "", {});
  EXPECT_DOUBLE_EQ(s.noise_band, 0.01);
  EXPECT_EQ(s.within_band, (std::vector<std::string>{"a_1", "a_2"}));

  ShapeResult w = shape(16, 1024, {{"a_1", 100.0, 0.03}, {"a_2", 102.9}, {"a_3", 103.1}});
  select_shape(w, "", "", {});
  EXPECT_DOUBLE_EQ(w.noise_band, 0.03);
  EXPECT_EQ(w.within_band, (std::vector<std::string>{"a_1", "a_2"}));
}

TEST(ToolSelect, RetestTimesDecideWhenTheShapeWasRetested) {
  ShapeResult s = shape(16, 1024, {{"a_1", 2.0, 0.004}, {"a_2", 1.9, 0.02}}, /*retest=*/true);
  s.variants.push_back(shape(16, 1024, {{"a_3", 1.0}}).variants[0]);  // swept only: not in the retest pool
  select_shape(s, "", "", {});
  EXPECT_EQ(s.band_source, "retest");
  EXPECT_EQ(s.fastest, "a_2");
  EXPECT_DOUBLE_EQ(s.noise_band, 0.02);  // the winner's retest spread
  EXPECT_EQ(s.ranking, (std::vector<std::string>{"a_2", "a_1", "a_3"}));
}

TEST(ToolSelect, WithinTheBandPreferNeighbourThenGeneralThenAlreadyChosen) {
  const std::vector<Timing> ts = {{"fast", 100.0}, {"gen", 100.5}, {"nb", 100.8}, {"other", 100.3}, {"slow", 120.0}};
  ShapeResult s = shape(16, 1024, ts);
  select_shape(s, "gen", "nb", {"other"});
  EXPECT_EQ(s.winner, "nb");
  select_shape(s, "gen", "slow", {"other"});  // the neighbour is outside the band
  EXPECT_EQ(s.winner, "gen");
  select_shape(s, "slow", "", {"other"});
  EXPECT_EQ(s.winner, "other");
  select_shape(s, "slow", "", {});
  EXPECT_EQ(s.winner, "fast");
  EXPECT_EQ(s.reason, "fastest");
}

TEST(ToolSelect, GeneralConfigurationIsTheBestGeometricMeanAmongVariantsCorrectEverywhere) {
  DTypeResult d;
  d.dtype = "fp32";
  // geomeans: a = sqrt(1 * 16) = 4, b = sqrt(2 * 4) = 2.83, c is fastest on both but incorrect on one.
  d.shapes.push_back(shape(1, 1024, {{"original", 9}, {"a_1", 1.0}, {"b_1", 2.0}, {"c_1", 0.5}}));
  d.shapes.push_back(shape(128, 1024, {{"original", 9}, {"a_1", 16.0}, {"b_1", 4.0}, {"c_1", 1.0, 0, "incorrect: y"}}));
  select_dtype(d);
  EXPECT_EQ(d.general.id, "b_1");
  EXPECT_NEAR(d.general.geomean_us, std::sqrt(8.0), 1e-12);
  ASSERT_EQ(d.general.ranking.size(), 2u);
  EXPECT_EQ(d.general.ranking[1].first, "a_1");
  EXPECT_EQ(d.shapes[0].winner, "c_1");
  EXPECT_EQ(d.shapes[1].winner, "b_1");
  ASSERT_EQ(d.excluded.size(), 1u);
  EXPECT_EQ(d.excluded[0].id, "c_1");
  EXPECT_EQ(d.excluded[0].verdict, Verdict::incorrect);
  EXPECT_EQ(d.excluded[0].shapes, (std::vector<std::string>{"tokens=128,d=1024"}));
}

TEST(ToolSelect, ShapesOutsideTheSpecDoNotEnterTheGeneralMean) {
  DTypeResult d;
  d.shapes.push_back(shape(1, 1024, {{"a_1", 1.0}, {"b_1", 1.5}}));
  d.shapes.push_back(shape(3, 1024, {{"a_1", 100.0}, {"b_1", 1.0}}));
  d.shapes.back().in_spec = false;
  select_dtype(d);
  EXPECT_EQ(d.general.id, "a_1");
  EXPECT_EQ(d.general.shapes, 1);
}

std::vector<Selection> fixture_selections() {
  const std::string data = KTUNE_TOOL_TEST_DATA;
  std::vector<RawFile> files = {load_raw(data + "/raw/sweep.json"), load_raw(data + "/raw/retest.json")};
  std::vector<std::string> warnings;
  auto sel = build_selections(files, data + "/kernels", warnings);
  EXPECT_TRUE(warnings.empty());
  return sel;
}

TEST(ToolSelect, FixturesGiveTheDesignedWinners) {
  const auto sels = fixture_selections();
  ASSERT_EQ(sels.size(), 1u);
  const Selection& s = sels[0];
  EXPECT_EQ(s.op, "toyop");
  EXPECT_EQ(s.gpu, "NVIDIA H200");
  EXPECT_EQ(s.arch, 90);
  EXPECT_EQ(s.space_hash, "0x542fc4b14933b2f0");
  ASSERT_EQ(s.dtypes.size(), 2u);
  EXPECT_EQ(s.dtypes[0].dtype, "fp32");
  const DTypeResult& f = s.dtypes[0];
  std::vector<std::string> winners;
  for (const ShapeResult& sh : f.shapes) winners.push_back(sh.key + " " + sh.winner);
  EXPECT_EQ(winners, (std::vector<std::string>{
                         "tokens=1,d=1024 tpb_64.vb_4.pdl_0", "tokens=16,d=1024 tpb_256.vb_16.pdl_1",
                         "tokens=128,d=1024 tpb_256.vb_16.pdl_1", "tokens=1,d=4096 tpb_256.vb_16.pdl_1",
                         "tokens=16,d=4096 tpb_512.vb_16.pdl_1", "tokens=128,d=4096 tpb_512.vb_16.pdl_1"}));
  EXPECT_EQ(f.shapes[3].fastest, "tpb_512.vb_16.pdl_1");
  EXPECT_EQ(f.shapes[3].reason, "within the noise band: the general configuration");
  EXPECT_EQ(f.general.id, "tpb_256.vb_16.pdl_1");
  EXPECT_EQ(f.excluded.size(), 2u);
  EXPECT_EQ(s.references.count("copy_ceiling"), 1u);
  EXPECT_EQ(s.dtypes[1].shapes[0].band_source, "sweep");
}

TEST(ToolSelect, EachShapeCarriesTheSweepsSameSizeCopy) {
  const auto sels = fixture_selections();
  ASSERT_EQ(sels.size(), 1u);
  const Selection& s = sels[0];
  EXPECT_EQ(s.references.count("copy_same_size"), 0u);  // per shape, not a global reference
  // fp32 tokens=1,d=1024: fastest sweep time 2.0 us; the sweep's copy (0.85x) wins over the re-test's (0.87x).
  const ShapeResult& first = s.dtypes[0].shapes[0];
  ASSERT_EQ(first.key, "tokens=1,d=1024");
  ASSERT_TRUE(first.copy_same_size_us.has_value());
  EXPECT_DOUBLE_EQ(*first.copy_same_size_us, 1.7);
  // bf16 (sweep only, 0.6x the fp32 times).
  ASSERT_TRUE(s.dtypes[1].shapes[0].copy_same_size_us.has_value());
  EXPECT_DOUBLE_EQ(*s.dtypes[1].shapes[0].copy_same_size_us, 1.02);
  // Written to the results file and read back.
  const Selection back = from_json(to_json(s), "memory");
  ASSERT_TRUE(back.dtypes[0].shapes[0].copy_same_size_us.has_value());
  EXPECT_DOUBLE_EQ(*back.dtypes[0].shapes[0].copy_same_size_us, 1.7);
  // An older results file without the field still reads.
  ojson j = to_json(s);
  for (auto& d : j["dtypes"])
    for (auto& sh : d["shapes"]) sh.erase("copy_same_size_us");
  EXPECT_FALSE(from_json(j, "memory").dtypes[0].shapes[0].copy_same_size_us.has_value());
}

TEST(ToolSelect, CandidatesHoldOriginalTopKAndTheGeneralConfiguration) {
  const auto c = candidates_json(fixture_selections(), 2);
  ASSERT_EQ(c["candidates"].size(), 12u);
  const auto& first = c["candidates"][0];  // fp32 tokens=1,d=1024: A 2.0, D 2.3 by sweep; general D
  EXPECT_EQ(first["op"], "toyop");
  EXPECT_EQ(first["dtype"], "fp32");
  EXPECT_EQ(first["shape"], "tokens=1,d=1024");
  EXPECT_EQ(first["ids"], ojson::parse(R"(["original", "tpb_64.vb_4.pdl_0", "tpb_256.vb_16.pdl_1"])"));
  const auto& last_fp32 = c["candidates"][5];  // tokens=128,d=4096: F 24, E 26; general D appended
  EXPECT_EQ(last_fp32["ids"], ojson::parse(R"(["original", "tpb_512.vb_16.pdl_1", "tpb_512.vb_8.pdl_0", "tpb_256.vb_16.pdl_1"])"));
}

TEST(ToolSelect, ResultsFileRoundTripsAndIsDeterministic) {
  const auto sels = fixture_selections();
  const std::string a = dump_json(to_json(sels[0]), 6);
  const std::string b = dump_json(to_json(fixture_selections()[0]), 6);
  EXPECT_EQ(a, b);
  const Selection back = from_json(ojson::parse(a), "memory");
  EXPECT_EQ(dump_json(to_json(back), 6), a);
}

TEST(ToolSelect, T4ExportHasTheRequiredFieldsAndTypes) {
  const ojson t4 = to_t4(fixture_selections()[0]);
  ASSERT_TRUE(t4["schema_version"].is_string());
  EXPECT_EQ(t4["schema_version"], "1.0.0");
  EXPECT_TRUE(t4["metadata"].is_object());
  EXPECT_TRUE(t4["metadata"]["environment"].is_object());
  EXPECT_TRUE(t4["metadata"]["hardware"]["hardware_description"].is_array());
  EXPECT_TRUE(t4["environment"].is_object());
  ASSERT_TRUE(t4["results"].is_array());
  EXPECT_EQ(t4["results"].size(), 2u * 6u * 7u);  // dtypes x shapes x (6 variants + original)
  const std::set<std::string> invalidity = {"timeout", "compile", "runtime", "correctness", "constraints", "correct"};
  int incorrect = 0;
  for (const auto& r : t4["results"]) {
    ASSERT_TRUE(r["configuration"].is_object());
    ASSERT_TRUE(r["times"].is_object());
    ASSERT_TRUE(r["times"]["runtimes"].is_array());
    ASSERT_TRUE(r["invalidity"].is_string());
    EXPECT_TRUE(invalidity.count(r["invalidity"].get<std::string>()));
    ASSERT_TRUE(r["correctness"].is_number());
    ASSERT_TRUE(r["timestamp"].is_string());
    ASSERT_TRUE(r["objectives"].is_array());
    ASSERT_TRUE(r["measurements"].is_array());
    for (const auto& m : r["measurements"]) {
      EXPECT_TRUE(m["name"].is_string());
      EXPECT_TRUE(m["value"].is_number() || m["value"].is_string() || m["value"].is_array());
      EXPECT_TRUE(m["unit"].is_string());
    }
    if (r["invalidity"] == "correctness") {
      ++incorrect;
      EXPECT_EQ(r["correctness"], 0);
      EXPECT_TRUE(r["times"]["runtimes"].empty());
    }
  }
  EXPECT_EQ(incorrect, 2);  // E at tokens=16,d=4096 in fp32 and bf16
  const auto& first = t4["results"][1];  // fp32 tokens=1,d=1024, the first variant after S
  EXPECT_EQ(first["configuration"]["tpb"], 128);
  EXPECT_EQ(first["configuration"]["dtype"], "fp32");
  EXPECT_EQ(first["configuration"]["tokens"], 1);
}

TEST(ToolSelect, CommandLineExitCodes) {
  EXPECT_EQ(run_ktune({}), exit_usage);
  EXPECT_EQ(run_ktune({"--help"}), exit_ok);
  EXPECT_EQ(run_ktune({"frobnicate"}), exit_usage);
  EXPECT_EQ(run_ktune({"select"}), exit_usage);
  EXPECT_EQ(run_ktune({"select", "--help"}), exit_ok);
  EXPECT_EQ(run_ktune({"select", "--raw", "x.json", "--topk", "3"}), exit_usage);  // --topk needs --candidates
  EXPECT_EQ(run_ktune({"select", "--raw", "/nonexistent/x.json"}), exit_failure);
  EXPECT_EQ(run_ktune({"list", "--arch", "75"}), exit_usage);
  EXPECT_EQ(run_ktune({"list", "no_such_op"}), exit_usage);
  EXPECT_EQ(run_ktune({"tables", "--results", "/nonexistent"}), exit_ok);  // nothing to do
}

TEST(ToolSelect, SelectWritesResultsAndT4AndCandidates) {
  const std::string data = KTUNE_TOOL_TEST_DATA;
  const std::string dir = std::filesystem::temp_directory_path() / ("ktune_select_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ASSERT_EQ(run_ktune({"select", "--raw", data + "/raw/sweep.json", "--topk", "3", "--candidates", dir + "/cand.json",
                       "--kernels", data + "/kernels"}),
            exit_ok);
  EXPECT_EQ(ojson::parse(read_file(dir + "/cand.json"))["candidates"].size(), 12u);
  ASSERT_EQ(run_ktune({"select", "--raw", data + "/raw/sweep.json", data + "/raw/retest.json", "--kernels",
                       data + "/kernels", "--results", dir + "/reports", "--build-json", "none"}),
            exit_ok);
  const std::string results = read_file(dir + "/reports/nvidia-h200/toyop.json");
  EXPECT_EQ(ojson::parse(results)["schema"], "ktune.results");
  EXPECT_TRUE(file_exists(dir + "/reports/nvidia-h200/toyop.t4.json"));
  // Same inputs, same bytes; no temporary files left behind.
  ASSERT_EQ(run_ktune({"select", "--raw", data + "/raw/sweep.json", data + "/raw/retest.json", "--kernels",
                       data + "/kernels", "--results", dir + "/reports", "--build-json", "none"}),
            exit_ok);
  EXPECT_EQ(read_file(dir + "/reports/nvidia-h200/toyop.json"), results);
  for (const auto& e : std::filesystem::directory_iterator(dir + "/reports/nvidia-h200"))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  std::filesystem::remove_all(dir);
}

}  // namespace
