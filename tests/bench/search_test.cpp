// The halving search's rules and its order of work, with a fake measurer (no GPU): out-of-line screens
// are timed again before they rank, a variant leaves the finalists only on a clean screen, the
// finalists' rounds, resume from the cache, and the run's work count.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "bench/names.hpp"
#include "bench/search.hpp"

namespace ktune::bench {
namespace {

namespace fs = std::filesystem;

BenchResult screen_of(const std::string& id, double median, double spread, bool noisy = false) {
  BenchResult r;
  r.id = id;
  r.name = "toy/fp16/tokens=1/" + id;
  r.median_us = median;
  r.min_us = median * (1 - spread / 2);
  r.max_us = median * (1 + spread / 2);
  r.spread = spread;
  r.samples = 9;
  r.noisy = noisy;
  return r;
}

BenchResult failed(const std::string& id) {
  BenchResult r;
  r.id = id;
  r.error = "incorrect: out: FAIL";
  return r;
}

std::vector<std::string> ids_of(const std::vector<BenchResult>& rs, const std::vector<std::size_t>& idx) {
  std::vector<std::string> out;
  for (std::size_t i : idx) out.push_back(rs[i].id);
  return out;
}

TEST(BenchSearchRules, TheSettingsAreRecordedAsContextKeys) {
  SearchSettings s = search_settings(false);
  s.guide_ratio = 0;             // --screen-every-shape
  s.out_margin = 0.0123456789;   // every digit a setting has is kept
  const auto ctx = settings_context(s);
  const std::map<std::string, std::string> keys(ctx.begin(), ctx.end());
  EXPECT_EQ(keys.size(), ctx.size());  // no key twice
  EXPECT_EQ(ctx.size(), 19u);          // every field of SearchSettings
  for (const auto& kv : ctx) EXPECT_EQ(kv.first.rfind("search_", 0), 0u) << kv.first;
  EXPECT_EQ(keys.at("search_guide_ratio"), "0");
  EXPECT_EQ(keys.at("search_dtype_guide_ratio"), "1.2");
  EXPECT_EQ(keys.at("search_prune_ratio"), "1.3");
  EXPECT_EQ(keys.at("search_reach"), "0.1");
  EXPECT_EQ(keys.at("search_out_margin"), "0.0123456789");
  EXPECT_EQ(keys.at("search_far_out"), "0.1");
  EXPECT_EQ(keys.at("search_contradicted"), "0.2");
  EXPECT_EQ(keys.at("search_prune_min_us"), "50");
  EXPECT_EQ(keys.at("search_rounds"), "5");
  EXPECT_EQ(keys.at("search_tight_samples"), "7");
  EXPECT_EQ(keys.at("search_loose_samples"), "14");
}

TEST(BenchSearchRules, TypicalSpreadIsTheMedianOverPassingScreens) {
  EXPECT_EQ(typical_spread({}), 0);
  EXPECT_DOUBLE_EQ(typical_spread({screen_of("a", 1, 0.01), screen_of("b", 1, 0.03), screen_of("c", 1, 0.5), failed("d")}), 0.03);
}

TEST(BenchSearchRules, OutOfLineNeedsBothTheAbsoluteLevelAndTheShapesTypicalSpread) {
  const SearchSettings s;  // 10% and 4x the typical spread
  EXPECT_TRUE(out_of_line(screen_of("a", 7.95, 0.51), 0.004, s));   // issue 9's first example
  EXPECT_TRUE(out_of_line(screen_of("a", 7.55, 3.0), 0.004, s));    // and its second
  EXPECT_FALSE(out_of_line(screen_of("a", 1, 0.08), 0.004, s));     // under the absolute level
  EXPECT_FALSE(out_of_line(screen_of("a", 1, 0.30), 0.10, s));      // in line with a noisy shape
  EXPECT_FALSE(out_of_line(failed("a"), 0.004, s));
}

TEST(BenchSearchRules, FinalistsAreSTheGeneralAndTheFastestWithinReach) {
  SearchSettings s;
  s.top_k = 2;
  s.reach = 0.10;
  const std::vector<BenchResult> rs = {screen_of("original", 3.0, 0.01), screen_of("a", 1.00, 0.01), screen_of("b", 1.05, 0.01),
                                       screen_of("c", 1.02, 0.01), screen_of("d", 1.50, 0.01), screen_of("g", 2.00, 0.01),
                                       failed("e")};
  EXPECT_EQ(ids_of(rs, pick_finalists(rs, {"g"}, s)), (std::vector<std::string>{"original", "a", "c", "g"}));
  EXPECT_EQ(ids_of(rs, pick_finalists(rs, {}, s)), (std::vector<std::string>{"original", "a", "c"}));
  s.top_k = 5;
  EXPECT_EQ(ids_of(rs, pick_finalists(rs, {}, s)), (std::vector<std::string>{"original", "a", "b", "c"}));  // d is out of reach
  EXPECT_TRUE(pick_finalists({failed("original"), failed("a")}, {"a"}, s).empty());
  // The incumbent (an earlier tune's winner) is a finalist even out of reach, beside the general one.
  s.top_k = 2;
  EXPECT_EQ(ids_of(rs, pick_finalists(rs, {"g", "d"}, s)), (std::vector<std::string>{"original", "a", "c", "d", "g"}));
  EXPECT_EQ(ids_of(rs, pick_finalists(rs, {"", "e"}, s)), (std::vector<std::string>{"original", "a", "c"}));  // e failed
}

TEST(BenchSearchRules, ANoisyScreenIsDroppedOnlyWhenEvenItsFastestSampleIsOutOfReach) {
  SearchSettings s;
  s.top_k = 1;
  std::vector<BenchResult> rs = {screen_of("a", 1.00, 0.01), screen_of("b", 1.01, 0.01), screen_of("n", 8.0, 1.9, true),
                                 screen_of("m", 8.0, 0.2, true)};
  // n: median 8 but fastest sample 0.4: kept beyond the top K; m: even its fastest (7.2) is out of reach.
  EXPECT_EQ(ids_of(rs, pick_finalists(rs, {}, s)), (std::vector<std::string>{"a", "n"}));
  // The best a noisy screen offers does not move the reach of the clean ones.
  rs[2] = screen_of("n", 0.5, 0.01, true);
  rs[2].min_us = 0.5;
  EXPECT_EQ(ids_of(rs, pick_finalists(rs, {}, s)), (std::vector<std::string>{"a", "n"}));
}

TEST(BenchSearchRules, GeneralConfigurationIsTheBestGeometricMeanAmongThoseCorrectEverywhere) {
  const std::vector<BenchResult> g1 = {screen_of("original", 9, 0.01), screen_of("a", 1, 0.01), screen_of("b", 4, 0.01),
                                       screen_of("c", 0.5, 0.01)};
  const std::vector<BenchResult> g2 = {screen_of("original", 9, 0.01), screen_of("a", 4, 0.01), screen_of("b", 1, 0.01),
                                       failed("c")};
  EXPECT_EQ(general_of({&g1, &g2}), "a");  // a and b tie (geomean 2): the smaller id; c failed on g2
  EXPECT_EQ(general_of({&g1}), "c");
  EXPECT_EQ(general_of({}), "");
}

TEST(BenchSearchRules, AFinalistIsClearlyOutWhenItsFastestRoundIsBeyondTheLeadersBand) {
  const SearchSettings s;  // margin max(3%, 2 x leader spread)
  EXPECT_TRUE(clearly_out({1.10, 1.08, 1.09}, {1.00, 1.01, 1.00}, s));
  EXPECT_FALSE(clearly_out({1.10, 1.02, 1.09}, {1.00, 1.01, 1.00}, s));
  EXPECT_FALSE(clearly_out({1.10, 1.08, 1.09}, {1.00, 1.06, 1.00}, s));  // a wide leader widens the margin
  EXPECT_FALSE(clearly_out({}, {1.0}, s));
}

// ---- the run ---------------------------------------------------------------------------------------

/// Times: base(id) x (1 + shape index); `disturbed` ids get one out-of-line screen first (issue 9's case:
/// median 5x, spread 0.5), `always_noisy` ids every time; rounds return the true time.
class FakeSearch : public SearchMeasurer {
 public:
  std::map<std::string, double> base;
  std::set<std::string> disturbed, always_noisy;
  std::map<std::string, double> screen_factor;  ///< ids whose screens measure this times their rounds' time
  std::string crash_on;  ///< a benchmark name
  std::vector<std::string> log;  ///< "screen X", "retime X", "round X", "begin", "rounds", "end", "copy"
  int open = 0;
  std::map<std::string, int> screens_of;

  double truth(const WorkItem& it) const { return base.at(it.id) * (1 + static_cast<double>(it.shape.dims[0].second)); }
  BenchResult timed(const WorkItem& it, bool noisy) {
    BenchResult r;
    r.name = it.name;
    r.op = it.op;
    r.dtype = name(it.dtype);
    r.shape = it.shape.key();
    r.id = it.id;
    const double t = truth(it);
    r.median_us = noisy ? 5 * t : t;
    r.spread = noisy ? 0.5 : 0.01;
    r.min_us = noisy ? 0.9 * t : t;
    r.max_us = r.median_us * (1 + r.spread);
    r.samples = 9;
    r.batch = 4;
    return r;
  }
  std::string begin_shape(const ShapeGroup& g) override {
    ++open;
    log.push_back("begin");
    shape = g.shape.key();
    return {};
  }
  /// Shapes whose first settles report that their verdicts cannot stand (a background check that failed),
  /// how many times each; until then their `misjudged` variant fails its screen as a faulty check made it.
  std::map<std::string, int> unsound;
  std::string misjudged, shape;
  std::string settle_shape() override {
    log.push_back("settle");
    int& left = unsound[shape];
    if (left == 0) return {};
    --left;
    return "toy " + shape + ": the device comparison disagrees with the host's";
  }
  BenchResult measure(const WorkItem& it) override { return timed(it, false); }
  void end_shape() override {
    --open;
    log.push_back("end");
  }
  BenchResult measure_copy_same_size(const ShapeGroup& g) override {
    log.push_back("copy");
    BenchResult r;
    r.name = g.copy.name;
    r.median_us = 0.5;
    r.samples = 10;
    return r;
  }
  std::map<std::string, ScreenLimit> limit_of;  ///< the limit each screen was given
  BenchResult screen(const WorkItem& it, const ScreenLimit& limit) override {
    log.push_back("screen " + it.id);
    limit_of[it.name] = limit;
    const int n = ++screens_of[it.name];
    if (it.id == misjudged && unsound[shape] > 0) {
      BenchResult r = timed(it, false);
      r.error = "incorrect: judged by a faulty comparison";
      return r;
    }
    if (it.name == crash_on) {  // in the gate, before any timing
      BenchResult r = timed(it, false);
      r.error = "incorrect: an illegal memory access; this broke the CUDA context";
      r.fatal = true;
      return r;
    }
    // The probe: a single call with 10% of launch latency on top; past the limit and its floor, the
    // screen stops there.
    const double probe = 1.1 * truth(it);
    if (limit.above_us > 0 && probe > std::max(limit.above_us, limit.probe_min_us)) {
      BenchResult r = timed(it, false);
      set_timing(r, Timed{probe, probe, probe, 1, 1, true});
      return r;
    }
    BenchResult r = timed(it, always_noisy.count(it.id) || (disturbed.count(it.id) && n == 1));
    if (const auto f = screen_factor.find(it.id); f != screen_factor.end()) {
      r.median_us *= f->second;
      r.min_us *= f->second;
      r.max_us *= f->second;
    }
    // The first round of samples (three, none faster than the screen's min): all past the limit, the
    // screen stops there.
    if (limit.above_us > 0 && r.min_us > limit.above_us) {
      set_timing(r, Timed{r.median_us, r.min_us, r.max_us, 3, r.batch, true});
      return r;
    }
    return r;
  }
  BenchResult retime(const WorkItem& it, const BenchResult& previous) override {
    log.push_back("retime " + it.id);
    BenchResult r = timed(it, always_noisy.count(it.id) > 0);
    r.registers = previous.registers;
    return r;
  }
  std::string rounds_error;  ///< what begin_rounds says (empty: the rounds begin)
  std::string begin_rounds(const ShapeGroup&) override {
    ++open;
    log.push_back("rounds");
    return rounds_error;
  }
  std::set<std::string> slow_rounds;  ///< ids whose rounds are disturbed: 1.5x, 1.3x, 1.7x, ... the truth
  std::map<std::string, int> rounds_of;
  std::vector<std::string> graphed;     ///< "id:graph" per round
  /// Per round of a shape: every finalist's times that round multiplied by it (the GPU's clock moving
  /// between rounds); cycled.
  std::vector<double> round_clock{1.0};
  std::map<std::string, int> shape_rounds;
  std::map<std::string, int> judged_wrong_in_round;  ///< id -> the round (from 0) whose check it fails
  void round(std::vector<RoundEntry>& finalists) override {
    const WorkItem* first = finalists.empty() ? nullptr : finalists.front().item;
    const std::string shape = first ? first->op + "/" + name(first->dtype) + "/" + first->shape.key() : "";
    const double clock = round_clock[static_cast<std::size_t>(shape_rounds[shape]++) % round_clock.size()];
    for (RoundEntry& e : finalists) {
      const WorkItem& it = *e.item;
      log.push_back("round " + it.id);
      graphed.push_back(it.id + (e.graph ? ":graph" : ":plain"));
      const int n = rounds_of[it.name]++;
      if (const auto w = judged_wrong_in_round.find(it.id); w != judged_wrong_in_round.end() && w->second == n) {
        e.result->error = "work_skipped: its timed calls in round " + std::to_string(n);
        e.ok = false;
        continue;
      }
      const double f = slow_rounds.count(it.id) ? (n % 2 ? 1.3 : 1.5 + 0.2 * (n / 2)) : 1.0;
      e.timed.median_us = e.timed.min_us = e.timed.max_us = truth(it) * f * clock;
      e.timed.samples = e.samples;
      e.ok = true;
    }
  }
  std::size_t count(const std::string& entry) const { return static_cast<std::size_t>(std::count(log.begin(), log.end(), entry)); }
};

std::vector<ShapeGroup> toy_groups(int shapes, const std::vector<std::string>& ids) {
  std::vector<ShapeGroup> out;
  for (int s = 0; s < shapes; ++s) {
    ShapeGroup g;
    g.op = "toy";
    g.dtype = DType::f16;
    g.shape.dims = {{"tokens", s}};
    g.copy = WorkItem{g.op, g.dtype, g.shape, std::string(copy_same_size_id), "ktune/copy_same_size/toy/fp16/" + g.shape.key(), ""};
    g.copy.key = "key:" + g.copy.name;
    for (const std::string& id : ids) {
      WorkItem it{g.op, g.dtype, g.shape, id, "toy/fp16/" + g.shape.key() + "/" + id, ""};
      it.key = "key:" + it.name;
      g.items.push_back(it);
    }
    out.push_back(g);
  }
  return out;
}

class BenchSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    path = (fs::temp_directory_path() /
            ("ktune_search_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".jsonl"))
               .string();
    fs::remove(path);
    m.base = {{"original", 3.0}, {"a", 1.0}, {"b", 1.02}, {"c", 1.5}, {"d", 1.04}, {"e", 1.06}, {"f", 2.5}};
    settings.top_k = 2;
  }
  void TearDown() override { fs::remove(path); }
  /// A first run of `work` from an empty cache at `path`, closed afterwards (for rerun()).
  SearchOutcome fresh_run(const std::vector<ShapeGroup>& work) {
    ResultCache cache(path);
    EXPECT_EQ(cache.load(), "");
    return run_search(work, cache, m, settings, nullptr);
  }
  /// The same work from an empty cache again, with another fake of the same times (other settings).
  SearchOutcome fresh_run(const std::vector<ShapeGroup>& work, FakeSearch& other) {
    fs::remove(path);
    other.base = m.base;
    ResultCache cache(path);
    EXPECT_EQ(cache.load(), "");
    return run_search(work, cache, other, settings, nullptr);
  }
  /// The same work again with a fresh fake, from the cache the first run filled.
  SearchOutcome rerun(const std::vector<ShapeGroup>& work, FakeSearch& again) {
    ResultCache cache(path);
    EXPECT_EQ(cache.load(), "");
    again.base = m.base;
    return run_search(work, cache, again, settings, nullptr);
  }
  std::string path;
  FakeSearch m;
  SearchSettings settings;
  const std::vector<std::string> ids{"original", "a", "b", "c", "d", "e", "f"};
};

const BenchResult* find(const SearchOutcome& o, const std::string& name, bool refined) {
  for (const BenchResult& r : o.results)
    if (r.name == name && r.refined == refined) return &r;
  return nullptr;
}

TEST_F(BenchSearch, ScreensEveryVariantThenRoundsOnlyForTheFinalists) {
  const auto work = toy_groups(2, ids);
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  const SearchOutcome o = run_search(work, cache, m, settings, nullptr);
  ASSERT_FALSE(o.aborted) << o.abort_reason;
  EXPECT_EQ(m.open, 0);
  EXPECT_EQ(o.screened, 14u);
  EXPECT_EQ(o.remeasured, 0u);
  // Every screen of the op and dtype comes before any round (the general configuration needs them all).
  const auto first_round = std::find(m.log.begin(), m.log.end(), "rounds") - m.log.begin();
  const auto last_screen = std::find(m.log.rbegin(), m.log.rend(), "screen f").base() - m.log.begin();
  EXPECT_LT(last_screen, first_round);
  // General configuration: a (fastest everywhere). Finalists per shape: S, a (general, and first of the top
  // 2), b.
  EXPECT_EQ(m.count("round a"), 2u * settings.rounds);
  EXPECT_EQ(m.count("round b"), 2u * settings.rounds);
  EXPECT_EQ(m.count("round c"), 0u);
  EXPECT_EQ(m.count("round f"), 0u);
  EXPECT_EQ(m.count("round d"), 0u);  // 1.04: within reach but not in the top 2
  // Per group: the copy row, seven screens, then the finalists' rounds.
  ASSERT_EQ(o.results.size(), 2u * (1 + 7 + 3));
  EXPECT_EQ(o.results[0].name, "ktune/copy_same_size/toy/fp16/tokens=0");
  EXPECT_EQ(o.results[1].name, "toy/fp16/tokens=0/original");
  EXPECT_FALSE(o.results[1].refined);
  const BenchResult* a = find(o, "toy/fp16/tokens=1/a", true);
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->median_us, 2.0);
  EXPECT_EQ(a->rounds, settings.rounds);
  EXPECT_EQ(a->samples, settings.rounds * settings.tight_samples);  // a tight screen: fewer samples per round
  EXPECT_DOUBLE_EQ(a->copy_same_size_us, 0.5);
  EXPECT_EQ(counters(*a, 1000).at("rounds"), settings.rounds);
}

TEST_F(BenchSearch, ClearlySlowerFinalistsSitOutTheLaterRounds) {
  const auto work = toy_groups(1, ids);
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  const SearchOutcome o = run_search(work, cache, m, settings, nullptr);
  // S (3x the leader) is out after min_rounds, not after its first round (a, b and S: three must stay, see
  // below); b (2% behind) stays within the margin.
  EXPECT_EQ(m.count("round original"), static_cast<std::size_t>(settings.min_rounds));
  EXPECT_EQ(m.count("round b"), static_cast<std::size_t>(settings.rounds));
  EXPECT_EQ(o.left_out, 1u);
  const BenchResult* s = find(o, "toy/fp16/tokens=0/original", true);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->rounds, settings.min_rounds);  // still a refined figure: the speedup over S needs it
}

TEST_F(BenchSearch, AFinalistFarBehindInItsScreenAndFirstRoundSitsOutTheRestWhileThreeStay) {
  settings.top_k = 4;  // a, b, d and e (1.00-1.06), and S (3x); c and f are out of reach
  const SearchOutcome o = fresh_run(toy_groups(1, ids));
  ASSERT_FALSE(o.aborted) << o.abort_reason;
  EXPECT_EQ(m.count("round original"), 1u);
  const BenchResult* s = find(o, "toy/fp16/tokens=0/original", true);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->rounds, 1);  // its figure, the speedups' baseline, from its one round
  EXPECT_NEAR(s->median_us / find(o, "toy/fp16/tokens=0/a", true)->median_us, 3.0, 1e-9);
  EXPECT_EQ(m.count("round a"), static_cast<std::size_t>(settings.rounds));
  EXPECT_EQ(m.count("round d"), static_cast<std::size_t>(settings.min_rounds));  // 4% behind: out after min_rounds
  EXPECT_EQ(o.left_out, 3u);                                                     // S, d and e
}

TEST_F(BenchSearch, AFinalistFarBehindInOneRoundButNotInItsScreenKeepsItsRounds) {
  settings.top_k = 4;
  m.slow_rounds = {"b"};  // 1.5x in its first round: a disturbance, its screen was 2% behind
  const SearchOutcome o = fresh_run(toy_groups(1, ids));
  ASSERT_FALSE(o.aborted) << o.abort_reason;
  EXPECT_GE(m.count("round b"), static_cast<std::size_t>(settings.min_rounds));
  EXPECT_EQ(m.count("round original"), 1u);
}

TEST_F(BenchSearch, TheClockMovingBetweenRoundsIsTakenOut) {
  // The GPU's clock moves every finalist's time by up to 30% from round to round (a power cap): compared
  // within their rounds, a stays 2% ahead of b with no spread of its own, which would otherwise be a 45% noise
  // band, wide enough for the general configuration or a neighbour's choice to win a shape they lose.
  m.round_clock = {1.0, 1.3, 0.85, 1.2, 0.9};
  const SearchOutcome o = fresh_run(toy_groups(1, ids));
  ASSERT_FALSE(o.aborted) << o.abort_reason;
  const BenchResult* a = find(o, "toy/fp16/tokens=0/a", true);
  const BenchResult* b = find(o, "toy/fp16/tokens=0/b", true);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->rounds, settings.rounds);
  EXPECT_NEAR(b->median_us / a->median_us, 1.02, 1e-9);
  EXPECT_LT(a->spread, 1e-9);
  EXPECT_LT(b->spread, 1e-9);
  EXPECT_EQ(o.left_out, 1u);  // S, 3x slower, as with a steady clock
}

TEST_F(BenchSearch, AFinalistJudgedWrongInARoundLeavesTheRoundsAndKeepsTheVerdict) {
  m.judged_wrong_in_round["b"] = 1;
  m.round_clock = {1.0, 1.2, 0.9, 1.1, 1.0};
  const SearchOutcome o = fresh_run(toy_groups(1, ids));
  ASSERT_FALSE(o.aborted) << o.abort_reason;
  EXPECT_EQ(m.count("round b"), 2u);  // its first round, then the one it failed: no more
  const BenchResult* b = find(o, "toy/fp16/tokens=0/b", true);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->error, "work_skipped: its timed calls in round 1");
  const BenchResult* a = find(o, "toy/fp16/tokens=0/a", true);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->ok());
  EXPECT_EQ(a->rounds, settings.min_rounds);  // then alone: S, 3x slower, is out after them
  EXPECT_LT(a->spread, 1e-9);  // its rounds still compared within each round, b's first among them
}

TEST_F(BenchSearch, ALeaderLeftAloneEndsItsRounds) {
  m.base["b"] = m.base["d"] = m.base["e"] = 1.5;  // out of reach: the finalists are a and S (3x slower)
  const SearchOutcome o = fresh_run(toy_groups(1, ids));
  ASSERT_FALSE(o.aborted) << o.abort_reason;
  EXPECT_EQ(m.count("round a"), static_cast<std::size_t>(settings.min_rounds));
  const BenchResult* a = find(o, "toy/fp16/tokens=0/a", true);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->rounds, settings.min_rounds);
}

TEST_F(BenchSearch, AFinalistWhoseRoundsAreDisturbedIsNotLeftOutOnThem) {
  m.slow_rounds = {"b"};  // b (2% behind a) has disturbed rounds: 1.5x, 1.3x, 1.7x, ... spread far out of line
  settings.contradicted = 0;  // else rounds that far above its screen have the finalists picked again (below)
  const auto work = toy_groups(1, ids);
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  const SearchOutcome o = run_search(work, cache, m, settings, nullptr);
  EXPECT_EQ(m.count("round b"), static_cast<std::size_t>(settings.rounds));  // kept for every round
  EXPECT_EQ(m.count("round original"), static_cast<std::size_t>(settings.min_rounds));  // clean and 3x slower: out
  EXPECT_EQ(o.left_out, 1u);
}

TEST_F(BenchSearch, RoundsTimeTheWayTheScreenDid) {
  const auto work = toy_groups(1, ids);
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  run_search(work, cache, m, settings, nullptr);
  ASSERT_FALSE(m.graphed.empty());
  for (const std::string& g : m.graphed) EXPECT_NE(g.find(":graph"), std::string::npos) << g;  // screens had batch 4
}

TEST_F(BenchSearch, AnOutOfLineScreenIsTimedAgainBeforeItRanks) {
  m.disturbed = {"a"};  // the fastest variant, disturbed at its first screen
  const auto work = toy_groups(1, ids);
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  const SearchOutcome o = run_search(work, cache, m, settings, nullptr);
  EXPECT_EQ(m.count("retime a"), 1u);
  EXPECT_EQ(o.remeasured, 1u);
  EXPECT_EQ(o.still_noisy, 0u);
  const BenchResult* a = find(o, "toy/fp16/tokens=0/a", false);
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->median_us, 1.0);  // the clean figure
  EXPECT_EQ(a->remeasured, 1);
  EXPECT_FALSE(a->noisy);
  EXPECT_EQ(counters(*a, 1000).at("remeasured"), 1);
  EXPECT_EQ(m.count("round a"), static_cast<std::size_t>(settings.rounds));  // and it is a finalist
  // The retime happens while the group is open, before its end.
  const auto retime = std::find(m.log.begin(), m.log.end(), "retime a") - m.log.begin();
  const auto end = std::find(m.log.begin(), m.log.end(), "end") - m.log.begin();
  EXPECT_LT(retime, end);
}

TEST_F(BenchSearch, AScreenStillOutOfLineAfterTheRetriesStaysAFinalist) {
  m.always_noisy = {"b"};
  const auto work = toy_groups(1, ids);
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  const SearchOutcome o = run_search(work, cache, m, settings, nullptr);
  EXPECT_EQ(m.count("retime b"), static_cast<std::size_t>(settings.noise_retries));
  EXPECT_EQ(o.still_noisy, 1u);
  const BenchResult* b = find(o, "toy/fp16/tokens=0/b", false);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->noisy);
  EXPECT_EQ(b->remeasured, settings.noise_retries);
  EXPECT_EQ(counters(*b, 1000).at("noisy"), 1);
  // Its median (5.1) is out of reach, its fastest sample is not: not dropped on a disturbed figure.
  EXPECT_GT(m.count("round b"), 0u);
}

TEST_F(BenchSearch, ARerunComesFromTheCacheWithTheSameFigures) {
  m.disturbed = {"a"};
  const auto work = toy_groups(2, ids);
  const SearchOutcome first = fresh_run(work);
  FakeSearch again;
  const SearchOutcome o = rerun(work, again);
  EXPECT_EQ(o.measured, 0u);
  EXPECT_TRUE(again.log.empty());
  ASSERT_EQ(o.results.size(), first.results.size());
  for (std::size_t i = 0; i < o.results.size(); ++i) {
    SCOPED_TRACE(o.results[i].name);
    EXPECT_TRUE(o.results[i].cached);
    EXPECT_EQ(o.results[i].refined, first.results[i].refined);
    EXPECT_DOUBLE_EQ(o.results[i].median_us, first.results[i].median_us);
    EXPECT_EQ(o.results[i].remeasured, first.results[i].remeasured);
    EXPECT_EQ(o.results[i].rounds, first.results[i].rounds);
  }
  EXPECT_EQ(first.remeasured, 2u);  // a's first screen on each shape
  EXPECT_EQ(o.remeasured, 2u);      // counted from the re-emitted screens too
}

// c's screens measure 0.45 (0.3x its 1.5): S and c alone are finalists, c's rounds contradict its screen, and
// the finalists picked again without it (a and b, within reach of a's 1.0) are timed with S and c. A rerun
// takes them all from the cache.
TEST_F(BenchSearch, AFinalistWhoseRoundsContradictItsScreenHasTheFinalistsPickedAgain) {
  m.screen_factor["c"] = 0.3;
  const auto work = toy_groups(1, ids);
  const SearchOutcome first = fresh_run(work);
  ASSERT_FALSE(first.aborted) << first.abort_reason;
  EXPECT_EQ(first.picked_again, 1u);
  EXPECT_EQ(first.finalists, 4u);  // S and c, then a and b
  for (const std::string id : {"original", "a", "b", "c"}) {
    const BenchResult* r = find(first, "toy/fp16/tokens=0/" + id, true);
    ASSERT_NE(r, nullptr) << id;
    EXPECT_GT(r->rounds, 0) << id;
  }
  EXPECT_NEAR(find(first, "toy/fp16/tokens=0/a", true)->median_us, 1.0, 1e-9);
  EXPECT_NEAR(find(first, "toy/fp16/tokens=0/c", true)->median_us, 1.5, 1e-9);
  EXPECT_EQ(find(first, "toy/fp16/tokens=0/d", true), nullptr);  // within reach, but past top_k
  EXPECT_EQ(std::count(m.log.begin(), m.log.end(), "rounds"), 1);  // the group prepared for rounds once
  ASSERT_EQ(first.warnings.size(), 1u);
  EXPECT_NE(first.warnings[0].find("contradict"), std::string::npos) << first.warnings[0];

  FakeSearch again;
  again.screen_factor = m.screen_factor;
  const SearchOutcome o = rerun(work, again);
  EXPECT_EQ(o.measured, 0u);
  EXPECT_TRUE(again.log.empty());
  ASSERT_EQ(o.results.size(), first.results.size());
  for (std::size_t i = 0; i < o.results.size(); ++i) {
    EXPECT_EQ(o.results[i].name, first.results[i].name);
    EXPECT_DOUBLE_EQ(o.results[i].median_us, first.results[i].median_us) << o.results[i].name;
  }
}

TEST_F(BenchSearch, RoundsThatCannotBeginLeaveTheScreensStandingAndTheShapeEnded) {
  m.rounds_error = "out of memory for the rotation sets";
  const SearchOutcome o = fresh_run(toy_groups(1, ids));
  ASSERT_FALSE(o.aborted) << o.abort_reason;
  EXPECT_EQ(m.open, 0);  // end_shape() after the failed begin_rounds()
  EXPECT_EQ(m.count("round a"), 0u);
  EXPECT_EQ(find(o, "toy/fp16/tokens=0/a", true), nullptr);
  ASSERT_NE(find(o, "toy/fp16/tokens=0/a", false), nullptr);
  ASSERT_EQ(o.warnings.size(), 1u);
  EXPECT_NE(o.warnings[0].find("no rounds: out of memory"), std::string::npos) << o.warnings[0];
}

TEST(BenchSearchRules, FinalistsArePickedAgainOnlyWhenAFinalistsRoundsContradictItsScreen) {
  SearchSettings s;
  s.top_k = 2;
  std::vector<BenchResult> screens = {screen_of("original", 3.0, 0.01), screen_of("a", 1.0, 0.01), screen_of("b", 1.02, 0.01),
                                      screen_of("c", 0.45, 0.01), screen_of("d", 1.04, 0.01)};
  const std::vector<std::size_t> fin = {0, 3};  // S and c
  auto rounds = [](double s_us, double c_us) {
    std::vector<BenchResult> r(2);
    r[0].median_us = s_us;
    r[1].median_us = c_us;
    for (BenchResult& x : r) x.rounds = 5;
    return r;
  };
  EXPECT_EQ(finalists_again(screens, fin, rounds(3.0, 1.5), {}, s), (std::vector<std::size_t>{1, 2}));
  EXPECT_TRUE(finalists_again(screens, fin, rounds(3.0, 0.53), {}, s).empty());  // within 1.2x of its screen
  EXPECT_TRUE(finalists_again(screens, fin, rounds(9.0, 0.45), {}, s).empty());  // S's figure ranks nothing
  std::vector<BenchResult> failed = rounds(3.0, 1.5);
  failed[1].error = "work_skipped: its timed calls in round 0";
  EXPECT_TRUE(finalists_again(screens, fin, failed, {}, s).empty());  // a verdict, not a figure
  s.contradicted = 0;
  EXPECT_TRUE(finalists_again(screens, fin, rounds(3.0, 1.5), {}, s).empty());
}

// Medians in item order at tokens = 0: S 3, a 1, b 1.02, c 1.5, d 1.04, e 1.06, f 2.5; probes 1.1x those.
// With the floor at 0, c and f exceed 1.3 x the best median before them (a's) and stop at their probe; S and
// the incumbent are timed in full whatever their probe; a rerun brings the pruned screens back from the cache.
TEST_F(BenchSearch, AClearlySlowerScreenStopsAtItsProbe) {
  settings.prune_min_us = 0;
  auto work = toy_groups(2, ids);
  for (ShapeGroup& g : work) g.incumbent = "f";
  const SearchOutcome first = fresh_run(work);
  ASSERT_FALSE(first.aborted) << first.abort_reason;
  EXPECT_EQ(first.pruned, 2u);  // c on both shapes
  EXPECT_EQ(m.limit_of.at("toy/fp16/tokens=0/original").above_us, 0.0) << "S is never pruned";
  EXPECT_EQ(m.limit_of.at("toy/fp16/tokens=0/f").above_us, 0.0) << "nor the incumbent";
  EXPECT_DOUBLE_EQ(m.limit_of.at("toy/fp16/tokens=0/a").above_us, 1.3 * 3.0);  // S's median only
  EXPECT_DOUBLE_EQ(m.limit_of.at("toy/fp16/tokens=0/c").above_us, 1.3 * 1.0);  // the best of S's, a's, b's
  EXPECT_EQ(m.limit_of.at("toy/fp16/tokens=0/c").probe_min_us, 0.0);
  for (const std::string shape : {"tokens=0", "tokens=1"}) {
    const BenchResult* c = find(first, "toy/fp16/" + shape + "/c", false);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(c->ok()) << c->error;
    EXPECT_TRUE(c->pruned);
    EXPECT_EQ(c->samples, 1);
    EXPECT_NEAR(c->median_us, 1.1 * 1.5 * (shape == "tokens=0" ? 1 : 2), 1e-12);  // its probe
    EXPECT_EQ(counters(*c, 1000).at("pruned"), 1);
    const BenchResult* f = find(first, "toy/fp16/" + shape + "/f", false);
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->pruned);
    EXPECT_EQ(counters(*f, 1000).count("pruned"), 0u);
  }
  EXPECT_EQ(m.count("round c"), 0u);
  EXPECT_GT(m.count("round f"), 0u);  // the incumbent is a finalist, timed in full
  // The pruned screens count for the general configuration at their probe: a still wins it.
  EXPECT_EQ(m.count("round a"), 2u * settings.rounds);

  FakeSearch again;
  const SearchOutcome o = rerun(work, again);
  EXPECT_EQ(o.measured, 0u);
  EXPECT_EQ(o.pruned, 2u);
  const BenchResult* c = find(o, "toy/fp16/tokens=1/c", false);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->pruned);
  EXPECT_NEAR(c->median_us, 1.1 * 3.0, 1e-12);
}

// Below the probe's floor (the toy's calls take 1-7.5 us, the floor is 50 us) the first round of samples
// decides: c (1.5 at tokens = 0, 3.0 at tokens = 1) is past 1.3 x a's median and stops after three samples,
// with their figure rather than its probe's; b, d and e (within 1.3x) are timed in full, and so are S and
// the incumbent f whatever they measure.
TEST_F(BenchSearch, ASlowerScreenBelowTheProbeFloorStopsAfterItsFirstSamples) {
  auto work = toy_groups(2, ids);
  for (ShapeGroup& g : work) g.incumbent = "f";
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  const SearchOutcome o = run_search(work, cache, m, settings, nullptr);
  ASSERT_FALSE(o.aborted) << o.abort_reason;
  EXPECT_EQ(o.pruned, 2u);
  EXPECT_EQ(m.limit_of.at("toy/fp16/tokens=0/c").probe_min_us, settings.prune_min_us);
  for (const std::string shape : {"tokens=0", "tokens=1"}) {
    const BenchResult* c = find(o, "toy/fp16/" + shape + "/c", false);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(c->pruned);
    EXPECT_EQ(c->samples, 3);
    EXPECT_NEAR(c->median_us, 1.5 * (shape == "tokens=0" ? 1 : 2), 1e-12);  // its samples, not its probe
    for (const char* id : {"original", "b", "d", "e", "f"}) {
      const BenchResult* r = find(o, "toy/fp16/" + shape + "/" + id, false);
      ASSERT_NE(r, nullptr);
      EXPECT_FALSE(r->pruned) << id;
      EXPECT_EQ(r->samples, 9) << id;
    }
  }
  EXPECT_EQ(m.count("round c"), 0u);
}

TEST_F(BenchSearch, AKernelThatBreaksTheContextStopsTheRunAndTheRerunResumesAfterIt) {
  m.crash_on = "toy/fp16/tokens=0/c";
  const auto work = toy_groups(2, ids);
  {
    ResultCache cache(path);
    ASSERT_EQ(cache.load(), "");
    const SearchOutcome o = run_search(work, cache, m, settings, nullptr);
    EXPECT_TRUE(o.aborted);
    EXPECT_NE(o.abort_reason.find("toy/fp16/tokens=0/c"), std::string::npos);
    EXPECT_EQ(m.open, 0);
    EXPECT_EQ(m.count("rounds"), 0u);
  }
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  FakeSearch again;
  again.base = m.base;
  again.crash_on = "toy/fp16/tokens=0/c";  // would crash again if it were re-run
  const SearchOutcome o = run_search(work, cache, again, settings, nullptr);
  EXPECT_FALSE(o.aborted);
  EXPECT_EQ(again.count("screen c"), 1u);  // only on the second shape
  const BenchResult* c = find(o, "toy/fp16/tokens=0/c", false);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->cached);
  EXPECT_FALSE(c->ok());
}

TEST_F(BenchSearch, AShapeWhoseVerdictsCannotStandIsScreenedAgainAndOnlyTheNewVerdictsAreStored) {
  // GpuMeasurer checks each shape's device comparison on the host in the background and settles it after
  // the screens: when the two disagree, nothing of the shape's screens may be cached or ranked.
  const auto work = toy_groups(2, ids);
  m.unsound["tokens=0"] = 1;
  m.misjudged = "b";
  const SearchOutcome o = fresh_run(work);
  ASSERT_FALSE(o.aborted) << o.abort_reason;
  EXPECT_EQ(m.open, 0);
  EXPECT_EQ(m.count("settle"), 3u);  // the first shape twice, the second once
  EXPECT_EQ(m.screens_of["toy/fp16/tokens=0/b"], 2);
  EXPECT_EQ(m.screens_of["toy/fp16/tokens=1/b"], 1);
  ASSERT_EQ(o.warnings.size(), 1u);
  EXPECT_NE(o.warnings[0].find("disagrees"), std::string::npos);
  EXPECT_NE(o.warnings[0].find("measured again"), std::string::npos);
  // One screen per variant and shape, the second screening's: b passed and reached the rounds.
  EXPECT_EQ(o.measured, 2u * 7 + 2);  // 7 screens and a copy per shape, once each
  const BenchResult* b = find(o, "toy/fp16/tokens=0/b", false);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->ok()) << b->error;
  EXPECT_NE(find(o, "toy/fp16/tokens=0/b", true), nullptr);
  std::size_t rows = 0;
  for (const BenchResult& r : o.results) rows += r.name == "toy/fp16/tokens=0/b" && !r.refined;
  EXPECT_EQ(rows, 1u);
  // The cache holds the second verdict only: a rerun measures nothing and sees b pass.
  FakeSearch again;
  const SearchOutcome o2 = rerun(work, again);
  EXPECT_EQ(again.count("screen b"), 0u);
  const BenchResult* cached = find(o2, "toy/fp16/tokens=0/b", false);
  ASSERT_NE(cached, nullptr);
  EXPECT_TRUE(cached->cached);
  EXPECT_TRUE(cached->ok());
}

TEST_F(BenchSearch, AShapeWhoseVerdictsCannotStandTwiceStopsTheRunWithNothingOfItStored) {
  const auto work = toy_groups(2, ids);
  m.unsound["tokens=0"] = 2;
  m.misjudged = "b";
  const SearchOutcome o = fresh_run(work);
  EXPECT_TRUE(o.aborted);
  EXPECT_NE(o.abort_reason.find("disagrees"), std::string::npos);
  EXPECT_EQ(m.open, 0);
  EXPECT_EQ(m.count("rounds"), 0u);
  FakeSearch again;
  const SearchOutcome o2 = rerun(work, again);
  EXPECT_FALSE(o2.aborted);
  EXPECT_EQ(again.screens_of["toy/fp16/tokens=0/b"], 1);  // nothing of the first shape was cached
  EXPECT_EQ(again.screens_of["toy/fp16/tokens=0/a"], 1);
}

/// Groups of one op and dtype over tokens x widths, in plan order (tokens outer, as the specs list them).
std::vector<ShapeGroup> toy_grid(const std::vector<int>& tokens, const std::vector<int>& widths,
                                 const std::vector<std::string>& ids) {
  std::vector<ShapeGroup> out;
  for (int t : tokens)
    for (int w : widths) {
      ShapeGroup g = toy_groups(1, ids).front();
      g.shape.dims = {{"tokens", t}, {"h", w}};
      g.copy.name = "ktune/copy_same_size/toy/fp16/" + g.shape.key();
      g.copy.key = "key:" + g.copy.name;
      for (WorkItem& it : g.items) {
        it.shape = g.shape;
        it.name = "toy/fp16/" + g.shape.key() + "/" + it.id;
        it.key = "key:" + it.name;
      }
      out.push_back(g);
    }
  return out;
}

std::vector<const Shape*> shapes_of(const std::vector<ShapeGroup>& groups) {
  std::vector<const Shape*> out;
  for (const ShapeGroup& g : groups) out.push_back(&g.shape);
  return out;
}

std::vector<std::size_t> guided_by(const std::vector<ScreenGuide>& guides) {
  std::vector<std::size_t> out;
  for (const ScreenGuide& g : guides) out.push_back(g.by);
  return out;
}

TEST(BenchSearchRules, AShapeIsGuidedByTheShapeOfItsTokenCountAtTheMiddleWidth) {
  auto grid = toy_grid({1, 16}, {4096, 5120, 8192}, {"a"});
  ShapeGroup lone = grid.front();
  lone.shape.dims = {{"tokens", 7}, {"h", 4096}};  // no anchor has 7 tokens: screened in full
  grid.push_back(lone);
  // Plan order: (1, 4096) (1, 5120) (1, 8192) (16, 4096) (16, 5120) (16, 8192) (7, 4096).
  EXPECT_EQ(guided_by(screen_guides(shapes_of(grid), false)), (std::vector<std::size_t>{1, 1, 1, 4, 4, 4, 6}));
  // One width: every shape is its own anchor (the ops whose specs vary the token count alone).
  EXPECT_EQ(guided_by(screen_guides(shapes_of(toy_groups(3, {"a"})), true)), (std::vector<std::size_t>{0, 1, 2}));
  // A scalar is part of the width: is_neox = 0 and 1 are two widths.
  auto neox = toy_grid({1, 16}, {128}, {"a"});
  for (int i = 0; i < 2; ++i) {
    ShapeGroup g = neox[static_cast<std::size_t>(i)];
    g.shape.scalars = {{"is_neox", 0.0}};
    neox.push_back(g);
  }
  EXPECT_EQ(guided_by(screen_guides(shapes_of(neox), false)), (std::vector<std::size_t>{2, 3, 2, 3}));
}

TEST(BenchSearchRules, PairedAnchorsTheSecondOfEachPairGuidedByTheFirst) {
  // Tokens 128, 1, 16, 2048, 512 in plan order (not sorted), widths 4096 and 8192 (the anchor width: 8192).
  auto grid = toy_grid({128, 1, 16, 2048, 512}, {4096, 8192}, {"a"});
  // Anchors in token order: 1 (index 3), 16 (5), 128 (1), 512 (9), 2048 (7): 16 after 1, 512 after 128; 2048
  // has no pair and is screened in full.
  const std::vector<ScreenGuide> g = screen_guides(shapes_of(grid), true);
  EXPECT_EQ(guided_by(g), (std::vector<std::size_t>{1, 1, 3, 3, 5, 3, 7, 7, 9, 1}));
  for (std::size_t i = 0; i < g.size(); ++i)
    EXPECT_EQ(g[i].across_tokens, i == 5 || i == 9) << i;
  EXPECT_EQ(guide_depth(g, 1), 0u);
  EXPECT_EQ(guide_depth(g, 9), 1u);  // the anchor of 512, guided by 128's
  EXPECT_EQ(guide_depth(g, 8), 2u);  // (512, 4096), guided by 512's anchor
  EXPECT_EQ(guide_depth(g, 6), 1u);  // (2048, 4096)
}

TEST(BenchSearchRules, AGuidedShapeScreensWhatItsAnchorFoundWithinReach) {
  std::vector<BenchResult> anchor = {screen_of("original", 3.0, 0.01), screen_of("a", 1.0, 0.01),
                                     screen_of("b", 1.29, 0.01),       screen_of("c", 1.31, 0.01),
                                     screen_of("n", 2.0, 0.8, true),   failed("x")};
  anchor.back().samples = 0;
  EXPECT_TRUE(guided_in("original", anchor, {}, 1.3));
  EXPECT_TRUE(guided_in("a", anchor, {}, 1.3));
  EXPECT_TRUE(guided_in("b", anchor, {}, 1.3));
  EXPECT_FALSE(guided_in("c", anchor, {}, 1.3));
  EXPECT_TRUE(guided_in("c", anchor, {"c"}, 1.3));  // forced: the general's candidates, the incumbent
  EXPECT_TRUE(guided_in("n", anchor, {}, 1.3));     // noisy: its fastest sample (1.2) decides
  EXPECT_TRUE(guided_in("x", anchor, {}, 1.3));     // failed at the anchor: that says nothing here
  EXPECT_TRUE(guided_in("y", anchor, {}, 1.3));     // never screened there
  EXPECT_FALSE(guided_in("y", anchor, {}, 1.3, {"y"}));    // ... because its anchor's own guide left it out
  EXPECT_TRUE(guided_in("y", anchor, {"y"}, 1.3, {"y"}));  // forced all the same
}

// Two widths per token count: the anchors are the second width's shapes (the middle of two). Their screens
// put c (1.5x) and f (2.5x) out of reach; the guided shapes screen S, a, b, d, e, the incumbent f, and the
// anchors' best geometric means (general_keep = 2: a and b), and never c.
TEST_F(BenchSearch, GuidedShapesScreenOnlyWhatTheirAnchorFoundWithinReach) {
  settings.general_keep = 2;
  auto work = toy_grid({1, 2}, {4096, 8192}, ids);
  for (ShapeGroup& g : work) g.incumbent = "f";
  const SearchOutcome first = fresh_run(work);
  ASSERT_FALSE(first.aborted) << first.abort_reason;
  EXPECT_EQ(first.guided_out, 2u);  // c at (1, 4096) and (2, 4096)
  for (const char* shape : {"tokens=1,h=4096", "tokens=2,h=4096"}) {
    EXPECT_EQ(m.screens_of.count(std::string("toy/fp16/") + shape + "/c"), 0u) << shape;
    EXPECT_EQ(find(first, std::string("toy/fp16/") + shape + "/c", false), nullptr) << shape;
    for (const char* id : {"original", "a", "b", "d", "e", "f"})
      EXPECT_EQ(m.screens_of.at(std::string("toy/fp16/") + shape + "/" + id), 1) << shape << " " << id;
  }
  for (const char* shape : {"tokens=1,h=8192", "tokens=2,h=8192"})
    EXPECT_EQ(m.screens_of.at(std::string("toy/fp16/") + shape + "/c"), 1) << "an anchor screens everything";
  // Both anchors are screened before any guided shape; results stay in plan order.
  ASSERT_EQ(first.results.front().name, "ktune/copy_same_size/toy/fp16/tokens=1,h=4096");
  const auto first_guided = std::find_if(m.log.begin(), m.log.end(), [](const std::string& e) { return e == "screen c"; });
  EXPECT_EQ(std::count(m.log.begin(), first_guided, "screen original"), 1);  // c's first screen is at the first anchor
  EXPECT_EQ(std::count(m.log.begin(), m.log.end(), "screen c"), 2);
  // The general configuration is still a: screened everywhere, the best geometric mean.
  EXPECT_EQ(m.count("round a"), 4u * settings.rounds);

  FakeSearch again;
  const SearchOutcome o = rerun(work, again);
  EXPECT_EQ(o.measured, 0u);
  EXPECT_TRUE(again.log.empty()) << "a guided shape whose screens are cached prepares nothing";
  EXPECT_EQ(o.guided_out, 2u);
  ASSERT_EQ(o.results.size(), first.results.size());
  for (std::size_t i = 0; i < o.results.size(); ++i) EXPECT_EQ(o.results[i].name, first.results[i].name);
}

// Paired anchors (anchor_guide_ratio 1.4): the anchor at tokens = 2 is guided by the one at tokens = 1, where c
// (1.5x) and f (2.5x) were out of reach; the shape it guides, (2, 4096), leaves them out as it did, and only the
// anchor at tokens = 1 screens them. (Screened before its guide, (2, 4096) would have found nothing there to go
// by, and screened both.)
TEST_F(BenchSearch, AnAnchorGuidedByTheTokenCountBeforeItPassesOnWhatItLeftOut) {
  settings.general_keep = 2;
  settings.anchor_guide_ratio = 1.4;
  const auto work = toy_grid({1, 2}, {4096, 8192}, ids);
  const SearchOutcome o = fresh_run(work);
  ASSERT_FALSE(o.aborted) << o.abort_reason;
  EXPECT_EQ(o.guided_out, 6u);  // c and f at each of the three guided shapes
  for (const char* id : {"c", "f"}) {
    EXPECT_EQ(m.screens_of.count(std::string("toy/fp16/tokens=1,h=8192/") + id), 1u) << id;
    for (const char* shape : {"tokens=1,h=4096", "tokens=2,h=4096", "tokens=2,h=8192"})
      EXPECT_EQ(m.screens_of.count(std::string("toy/fp16/") + shape + "/" + id), 0u) << shape << " " << id;
  }
  // Without pairing, the anchor at tokens = 2 screens c and f again.
  settings.anchor_guide_ratio = 0;
  FakeSearch unpaired;
  EXPECT_EQ(fresh_run(work, unpaired).guided_out, 4u);
  EXPECT_EQ(unpaired.screens_of.count("toy/fp16/tokens=2,h=8192/c"), 1u);
}

/// `groups` in another dtype (names and keys renamed).
std::vector<ShapeGroup> retyped(std::vector<ShapeGroup> groups, DType dtype) {
  auto rename = [&](std::string& s) {
    const auto at = s.find("/fp16/");
    if (at != std::string::npos) s.replace(at, 6, "/" + std::string(name(dtype)) + "/");
  };
  for (ShapeGroup& g : groups) {
    g.dtype = g.copy.dtype = dtype;
    rename(g.copy.name);
    rename(g.copy.key);
    for (WorkItem& it : g.items) {
      it.dtype = dtype;
      rename(it.name);
      rename(it.key);
    }
  }
  return groups;
}

// Dtypes of one size guide one another (dtype_guide_ratio 1.2): bf16, after fp16, screens at each shape S, what
// fp16 found there within 1.2x (a, b, d, e), fp16's best geometric means (general_keep = 2: a and b) and its
// incumbent; never c (1.5x) or f (2.5x). fp32, another size, is not guided by either.
TEST_F(BenchSearch, Bf16ScreensWhatFp16FoundWithinReachAtTheSameShape) {
  settings.general_keep = 2;
  settings.guide_ratio = 0;  // the dtype rule alone
  const auto fp16 = toy_groups(2, ids);
  std::vector<ShapeGroup> work = retyped(fp16, DType::f32);
  work.insert(work.end(), fp16.begin(), fp16.end());
  for (ShapeGroup& g : retyped(fp16, DType::bf16)) work.push_back(g);
  work.back().incumbent = "f";
  const SearchOutcome o = fresh_run(work);
  ASSERT_FALSE(o.aborted) << o.abort_reason;
  EXPECT_EQ(o.guided_out, 3u);  // c at both bf16 shapes, f at the first
  for (const char* shape : {"tokens=0", "tokens=1"}) {
    for (const char* dtype : {"fp32", "fp16"})
      for (const std::string& id : ids)
        EXPECT_EQ(m.screens_of.count("toy/" + std::string(dtype) + "/" + shape + "/" + id), 1u) << dtype << " " << shape << " " << id;
    for (const char* id : {"original", "a", "b", "d", "e"})
      EXPECT_EQ(m.screens_of.count(std::string("toy/bf16/") + shape + "/" + id), 1u) << shape << " " << id;
    EXPECT_EQ(m.screens_of.count(std::string("toy/bf16/") + shape + "/c"), 0u) << shape;
  }
  EXPECT_EQ(m.screens_of.count("toy/bf16/tokens=0/f"), 0u);
  EXPECT_EQ(m.screens_of.count("toy/bf16/tokens=1/f"), 1u) << "the incumbent is always screened";
  // bf16's general configuration is still a, and its rounds run as fp16's.
  EXPECT_NE(find(o, "toy/bf16/tokens=0/a", true), nullptr);

  // Off: bf16 screens everything.
  settings.dtype_guide_ratio = 0;
  FakeSearch unguided;
  EXPECT_EQ(fresh_run(work, unguided).guided_out, 0u);
  EXPECT_EQ(unguided.screens_of.count("toy/bf16/tokens=0/c"), 1u);
}

TEST_F(BenchSearch, WithoutGuidanceEveryShapeScreensEveryVariant) {
  settings.guide_ratio = 0;
  const auto work = toy_grid({1, 2}, {4096, 8192}, ids);
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  const SearchOutcome o = run_search(work, cache, m, settings, nullptr);
  EXPECT_EQ(o.guided_out, 0u);
  EXPECT_EQ(m.count("screen c"), 4u);
  EXPECT_EQ(o.screened, 4u * ids.size());
}

TEST(BenchWorkCount, CopiesCountAsWorkAndNothingUnderflows) {
  // Issue 9: "15714 benchmarks, 18446744073709551454 from the cache, 15876 to measure": the copy rows
  // were counted to measure but not among the benchmarks.
  const auto work = toy_groups(3, {"original", "a"});
  const fs::path p = fs::temp_directory_path() / "ktune_work_count.jsonl";
  fs::remove(p);
  ResultCache cache(p.string());
  ASSERT_EQ(cache.load(), "");
  WorkCount c = count_work(work, cache);
  EXPECT_EQ(c.variants, 6u);
  EXPECT_EQ(c.copies, 3u);
  EXPECT_EQ(c.total(), 9u);
  EXPECT_EQ(c.cached(), 0u);
  EXPECT_EQ(c.to_measure(), 9u);
  BenchResult r;
  r.median_us = 1;
  ASSERT_EQ(cache.store(work[0].copy.key, r), "");
  ASSERT_EQ(cache.store(work[0].items[1].key, r), "");
  ASSERT_EQ(cache.store("key:not/in/the/plan", r), "");  // a cached row the plan does not name counts for nothing
  c = count_work(work, cache);
  EXPECT_EQ(c.cached_copies, 1u);
  EXPECT_EQ(c.cached_variants, 1u);
  EXPECT_EQ(c.to_measure(), 7u);
  EXPECT_LE(c.to_measure(), c.total());
  fs::remove(p);
}

}  // namespace
}  // namespace ktune::bench
