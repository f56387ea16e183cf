// bench/search.hpp: how a run spends its GPU time, independent of the GPU (CPU-tested in tests/bench).
//
// Two methods (bench/README.md, "Search"):
//
// - exhaustive (`--exhaustive`, the method before issue 9): every variant gated and timed with the full
//   settings (run_sweep in sweep.hpp); then `ktune select --topk` and a separate `--retest` process time
//   the top K of each shape in interleaved rounds.
// - halving (the default): per (op, dtype), first every shape's variants are gated and *screened* (a
//   short timing; at a shape guided by an anchor, only the variants the anchor found within reach); a
//   screen whose spread is out of line with the shape's other variants is timed again
//   before it can rank or drop anything; then the general configuration is picked (best geometric mean of
//   the screens), and per shape only the finalists (S, the general configuration, and the fastest
//   variants within reach of the best screen, at most K) are timed in interleaved rounds in the same
//   process, with the graphs captured once, fewer samples where the spread is tight, and finalists that
//   are clearly out after a few rounds left out of the remaining ones.
//
// A variant is dropped from the finalists only on a clean screen: one still out of line after the
// retries stays a finalist unless even its fastest sample is out of reach.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cache.hpp"
#include "result.hpp"
#include "sweep.hpp"

namespace ktune::bench {

/// ktune::TimingOptions, mirrored so host-compiled code can set it.
struct TimingSettings {
  int warmup = 3;
  int min_samples = 10;
  int max_samples = 200;
  double stable_rel = 0.005;
  double max_seconds = 2.0;
  bool graph = true;
  double graph_sample_us = 500.0;
  int max_batch = 256;
  double probe_alone_us = 0;  ///< TimingOptions::probe_alone_us
};
TimingSettings full_timing();   ///< the exhaustive sweep's and the same-size copy's
TimingSettings quick_timing();  ///< --quick
/// The halving search's screen: fewer samples, shorter graph replays (fewer launches to capture).
TimingSettings screen_timing(bool quick);

struct Timed {
  double median_us = 0, min_us = 0, max_us = 0;
  int samples = 0, batch = 1;
  bool abandoned = false;  ///< stopped at its probe or first samples, above the screen's limit (BenchResult::pruned)
};
/// A timing's figures in a result: median, range, samples, batch and the spread they give.
void set_timing(BenchResult& r, const Timed& t);

struct SearchSettings {
  /// Finalists per shape besides S, the general configuration and the incumbent. In three ten-op H200 searches
  /// of 2026-11-27/28 the rounds' fastest was among the four best screens on all but 3-6 of 492 shapes, and
  /// leaving the fifth out cost at most 0.56% there (at three, up to 1.55%).
  int top_k = 4;
  double reach = 0.10;         ///< a finalist's screen is within this of the best screen
  double noise_abs = 0.10;     ///< a screen spread above this ...
  double noise_rel = 4.0;      ///< ... and above this many times the shape's typical spread is out of line
  int noise_retries = 2;       ///< timings again of an out-of-line screen
  int rounds = 5;              ///< interleaved rounds of the finalists (samples per round below)
  int min_rounds = 3;          ///< rounds every finalist gets before any is left out ...
  /// ... but one: after the first round, a finalist whose screen and first round were both above the
  /// leader's by more than this sits out the rest, while three finalists stay in the rounds (their clocks
  /// are compared over those left). Mostly S, timed for the speedups, not as a contender: in a ten-op H100
  /// tune the rounds went from 11.3k to 10.5k and their samples from 29.4 s to 27.5-28.7 s. Two measurements
  /// apart, each beyond the finalists' reach: not the clock of one round.
  double far_out = 0.10;
  /// A finalist whose rounds' median is above its screen's by more than this was made a finalist, and
  /// ranked the others, on a figure its rounds contradict: the finalists are picked again with its rounds'
  /// figure in its screen's place, and all of them timed in rounds again (finalists_again). Finalists'
  /// rounds are within 0.94-1.06x of their screens (p1-p99 in six ten-op tunes of 2026-11-27/28) and at most
  /// 1.26x; a screen replayed from a graph updated in place (not kept) measured 0.29x, and made the shape's
  /// winner one 19.8% slower than a variant its screen had put out of reach. 0: off.
  double contradicted = 0.20;
  double out_margin = 0.03;    ///< left out after min_rounds: fastest round > leader x (1 + max(this, 2 x its spread))
  double tight_spread = 0.02;  ///< a screen spread at most this gets tight_samples per round, else loose_samples
  /// Samples per round. In the H200's ten-op tune of 2026-11-27 (7 rounds of 10 and 20 samples) a finalist's
  /// round medians spread (p50 0.27%) as its samples' scatter alone makes medians of 10 spread: the rounds
  /// did not drift apart, and a figure's precision (about 0.1%) was a tenth of the band a winner is chosen in.
  /// Two tunes at 7 rounds of 5 and 10 took 30 s less but widened that band (the winner's round spread,
  /// DESIGN.md contract 7) past 1% on 40-54 shapes instead of 8. 5 rounds of 7 and 14 cost the same samples as
  /// those and keep the band's expected width (the range of 5 medians of 7 is that of 7 medians of 10): 21
  /// shapes in their tune, a regret of p95 0.7% and max 1.9% in an independent one (docs/scale.md).
  int tight_samples = 7, loose_samples = 14;
  /// A screen measured above prune_ratio x the best median of the shape's screens so far stops there: it
  /// cannot reach the finalists (reach), and what it measured is what the general configuration's mean
  /// counts for it. Its probe (a single call, launch latency included) decides alone above prune_min_us,
  /// where the latency is under 10% of a call; below, the first round of graph-replayed samples does (every
  /// one of them above the limit). Against medians, never other probes or first rounds: a median's timed
  /// calls are checked, a stopped screen's are not, so a variant that skips work in its probe cannot push
  /// its rivals out. S and the incumbent are always timed in full.
  double prune_ratio = 1.3;
  double prune_min_us = 50.0;
  /// Guided screens (screen_guides): a shape with an anchor screens only the variants its anchor found
  /// within guide_ratio of its best screen, those its anchor has no passing screen of, S, the incumbent
  /// and the anchors' general_keep best geometric means. 0: every variant at every shape. 1.3 until
  /// 2026-11-28: in ten guided tunes (H100, H200) every guided shape's winner screened within 1.156-1.176x
  /// of the best at its anchor (p99 1.11-1.13), and 1.2 leaves out 6-7% of the screens (docs/scale.md).
  double guide_ratio = 1.2;
  int general_keep = 5;
  /// Anchors guided too: of the anchors in token order, the second of each pair (16 after 1, 512 after 128,
  /// 8192 after 2048) screens what the first found within this (and S, the incumbent, the first anchors' best
  /// geometric means), and the shapes it guides only what it screened. Wider than guide_ratio: a token count
  /// changes a kernel's regime more than a width does. In three ten-op searches (H100, H200) every such
  /// anchor's winner screened within 1.19x at the anchor before it, and at 1.5 no shape's winner fell outside
  /// (at 1.4, four did on the H200, 2% slower each). 0: every anchor in full.
  double anchor_guide_ratio = 1.5;
  /// Dtypes of one size guided by one another: a unit (op, dtype) whose op was screened earlier in the search
  /// in another dtype of the same element size (bf16 after fp16) screens, at each shape that unit has, only
  /// what it found there within this (and S, the incumbent, that unit's general_keep best geometric means).
  /// Same bytes moved, the same code but for conversions: in two ten-op H200 searches before dtype guides
  /// (7c5eff4), every bf16 shape's winner and fastest screened within 1.07x of the best at fp16; fp32
  /// is not guided (24-50 of 304 winners outside 1.2x). 0: off.
  double dtype_guide_ratio = 1.2;
};

/// The limit a screen is given (SearchSettings::prune_ratio): none when above_us is 0.
struct ScreenLimit {
  double above_us = 0;      ///< a screen measured above this stops (Timed::abandoned)
  double probe_min_us = 0;  ///< its probe alone decides only above this too
};
SearchSettings search_settings(bool quick);
/// The settings a search ran with, as context keys of its results file ("search_<field>", every field of
/// SearchSettings): `ktune select` records them in the results files for the reports to state, and
/// `ktune merge-raw` merges only slices that share them.
std::vector<std::pair<std::string, std::string>> settings_context(const SearchSettings& s);

/// Median of the spreads of the passing results (0 when none).
double typical_spread(const std::vector<BenchResult>& results);

/// A passing result whose spread is out of line: above the absolute level and above `noise_rel` times
/// the shape's typical spread.
bool out_of_line(const BenchResult& r, double typical, const SearchSettings& s);

/// The figure a passing screen competes with: its median when clean, its fastest sample when still noisy.
double effective(const BenchResult& r);

/// The finalists of one shape, as indices into `screened` (parallel to the group's items), in item
/// order: S ("original") and the variants of `always` (the general configuration, the incumbent) whenever
/// they passed, and the fastest `top_k` variants (those of `always` count among them when they are) whose
/// screen median is within `reach` of the best clean screen (a noisy screen competes with its fastest
/// sample, so it is dropped only when even that is out of reach). None when nothing passed.
std::vector<std::size_t> pick_finalists(const std::vector<BenchResult>& screened, const std::vector<std::string>& always,
                                        const SearchSettings& s);

/// The general configuration from the screens of one (op, dtype): the variant (not S) passing on every
/// group with the best geometric mean of its screen medians; ties go to the smaller id (the rule
/// `ktune select` applies to sweep times). Empty when none passes everywhere.
std::string general_of(const std::vector<const std::vector<BenchResult>*>& groups);
/// The `keep` best of general_of's ranking, best first.
std::vector<std::string> general_ranking(const std::vector<const std::vector<BenchResult>*>& groups, std::size_t keep);

/// Dtype guides (SearchSettings::dtype_guide_ratio), kept for run_search and `ktune replay-guides` alike:
/// what the first unit (op, dtype) of each op and element size screened at each shape, and its best
/// geometric means, which guide the later units of that op and size (bf16 after fp16).
class DtypeGuides {
 public:
  struct Shape {
    std::vector<BenchResult> screens;   ///< what the guiding unit screened at the shape
    std::vector<std::string> left_out;  ///< what its own guide left out there
  };
  struct Unit {
    std::map<std::string, Shape> shapes;  ///< by shape key
    std::vector<std::string> general;     ///< its best geometric means: screened at every shape it guides
  };
  /// The unit guiding a unit of `op` with elements of `element_bytes`: null for the first (which guides
  /// the later ones once recorded).
  const Unit* guide_of(const std::string& op, int element_bytes) const;
  /// The first unit of its op and size: per shape key, in plan order, what it screened and left out; its
  /// `general_keep` best geometric means over those screens (general_ranking).
  void record(const std::string& op, int element_bytes, std::vector<std::pair<std::string, Shape>> shapes,
              std::size_t general_keep);

 private:
  std::map<std::pair<std::string, int>, Unit> units_;
};

/// How one shape's screens are guided: by the shape `by` (itself: screened in full), the anchor of its token
/// count or, for an anchor, the anchor of the neighbouring token count (`across_tokens`).
struct ScreenGuide {
  std::size_t by = 0;
  bool across_tokens = false;
  bool operator==(const ScreenGuide& o) const { return by == o.by && across_tokens == o.across_tokens; }
};

/// Guided screens: the guide of each shape of one (op, dtype), by index into `unit`. The widths (a shape's
/// dimensions after the first, the token count, and its scalars) in plan order fall into ceil(n / 3) groups
/// of neighbours as even as can be, and each group's anchors are the shapes of its middle width (three widths:
/// the middle one; the catalogue's five to seven widths, 128 to 16384 for the norms, get two or three, so that
/// no width is guided by one 30x wider); any shape whose token count its anchor width lacks is screened in
/// full. Every other shape is guided by its anchor of the same token count: in the ten ops' committed H100 and
/// H200 searches, every shape's winner screened within 1.2x of the best at its anchor (bench/README.md). With
/// `pair_anchors`, the anchors in token order pair up, and the second of each pair is guided by the first
/// (SearchSettings::anchor_guide_ratio). One width: every shape is its own anchor.
std::vector<ScreenGuide> screen_guides(const std::vector<const Shape*>& unit, bool pair_anchors);

/// How many links from shape `i` to a shape screened in full.
std::size_t guide_depth(const std::vector<ScreenGuide>& guides, std::size_t i);
/// The order a unit's shapes are screened in: every shape after its guide (by depth, then plan order).
std::vector<std::size_t> screen_order(const std::vector<ScreenGuide>& guides);

/// What a guided group screens besides `always`: the variants whose anchor screen competes within
/// `ratio` of the anchor's best (a noisy one with its fastest sample), and those without a passing
/// anchor screen (their anchor could not tell: a shape-specific failure decides nothing elsewhere), unless
/// the anchor left them out itself (`left_out`: its own guide found them out of reach).
bool guided_in(const std::string& id, const std::vector<BenchResult>& anchor, const std::vector<std::string>& always,
               double ratio, const std::vector<std::string>& left_out = {});

/// The finalists to add when some finalist's rounds contradict its screen (SearchSettings::contradicted):
/// those pick_finalists gives with such a finalist's rounds' median (refined, parallel to fin) in its screen's
/// place, and not already in fin. Empty when no finalist's rounds contradict its screen.
std::vector<std::size_t> finalists_again(const std::vector<BenchResult>& screened, const std::vector<std::size_t>& fin,
                                         const std::vector<BenchResult>& refined, const std::vector<std::string>& always,
                                         const SearchSettings& s);

/// After at least `min_rounds`: whether a finalist is clearly out, i.e. its fastest round median is
/// above the leader's median by more than max(out_margin, 2 x the leader's spread over its rounds). A
/// finalist whose rounds spread out of line with the other finalists' (out_of_line's rule on the spread
/// of its round medians) is never left out: it is not dropped on a disturbed measurement.
bool clearly_out(const std::vector<double>& mine, const std::vector<double>& leader, const SearchSettings& s);

/// A finalist of a round: what to time, and after SearchMeasurer::round its timing, or its refined row's
/// error (and fatal flag) when timing or judging failed.
struct RoundEntry {
  const WorkItem* item = nullptr;
  int samples = 0;
  bool graph = true;
  BenchResult* result = nullptr;
  Timed timed;
  bool ok = false;
};

/// The halving search's GPU half (bench/measure*.cu implement it; tests fake it).
class SearchMeasurer : public Measurer {
 public:
  /// Gate, device check and a screening timing of one variant of the current group (begin_shape); past
  /// `limit`, it stops at its probe or first round of samples (Timed::abandoned).
  virtual BenchResult screen(const WorkItem& item, const ScreenLimit& limit) = 0;
  /// Times again a variant of the current group that passed screen() (no new gate). Returns the new
  /// timing in a copy of `previous`, or an error result.
  virtual BenchResult retime(const WorkItem& item, const BenchResult& previous) = 0;
  /// Prepares the group for rounds of timing only: inputs and rotation, no reference and no gate (the
  /// finalists passed it). end_shape() releases it.
  virtual std::string begin_rounds(const ShapeGroup& g) = 0;
  /// After a group's screens (and their re-timings), before any of their verdicts is stored: empty when they
  /// stand, else why they cannot (a check of the measurer's own, run while the screens went on, failed); the
  /// search then screens the group again, which the measurer must make sound (GpuMeasurer compares on the
  /// host from then on).
  virtual std::string settle_shape() { return {}; }
  /// One round of a shape's finalists, in the order given: each finalist's samples right after the
  /// previous one's, every one of them judged after the last (so that they run at the same clock, which
  /// clock_normalised then takes out). With `graph` (its screen was graph-replayed) a finalist's graph is
  /// captured on its first round and replayed in the later ones, else plain launches, so one slow probe
  /// cannot switch a finalist's rounds to another way of timing than its screen's.
  virtual void round(std::vector<RoundEntry>& finalists) = 0;
};

/// The cache key of a variant's refined (rounds) result, from its screen key.
std::string refined_key(const std::string& screen_key);

struct SearchOutcome {
  std::vector<BenchResult> results;  ///< per group: the copy row, every screen, then the finalists' refined rows
  std::size_t measured = 0, from_cache = 0;
  std::size_t screened = 0;          ///< passing screens
  std::size_t remeasured = 0;        ///< screens timed again because their spread was out of line
  std::size_t still_noisy = 0;       ///< of those, out of line after every retry
  std::size_t pruned = 0;            ///< passing screens stopped early (SearchSettings::prune_ratio)
  std::size_t guided_out = 0;        ///< variants a guided shape did not screen (SearchSettings::guide_ratio)
  std::size_t finalists = 0, rounds_run = 0, left_out = 0;
  std::size_t picked_again = 0;  ///< shapes whose finalists were picked again (SearchSettings::contradicted)
  bool aborted = false;
  std::string abort_reason;
  std::vector<std::string> warnings;
};

/// Runs the halving search over `groups` (plan order: groups of one op and dtype are contiguous).
/// Screens and refined rows are cached (refined under refined_key); a rerun re-emits them and times
/// only what is missing. Progress counts screens to time and groups to refine.
SearchOutcome run_search(const std::vector<ShapeGroup>& groups, ResultCache& cache, SearchMeasurer& m,
                         const SearchSettings& s, Progress* progress);

/// What a run has to do: benchmarks (variants), same-size copy rows, and how many of both the cache
/// holds. `to_measure()` never exceeds `total()`.
struct WorkCount {
  std::size_t variants = 0, copies = 0, cached_variants = 0, cached_copies = 0;
  std::size_t total() const { return variants + copies; }
  std::size_t cached() const { return cached_variants + cached_copies; }
  std::size_t to_measure() const { return total() - cached(); }
};
WorkCount count_work(const std::vector<ShapeGroup>& groups, const ResultCache& cache);

}  // namespace ktune::bench
