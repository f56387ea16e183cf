// tools/ktune/replay_guides.cpp: `ktune replay-guides` (replay_guides.hpp).
#include "replay_guides.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "cli.hpp"
#include "io.hpp"
#include "search.hpp"  // bench/: the rule itself

namespace ktune::tool {

namespace {

using bench::BenchResult;

/// A screen as the search held it: enough for guided_in and general_ranking.
BenchResult screen_of(const RawRun& r) {
  auto counter = [&](const char* name, double fallback) {
    const auto it = r.counters.find(name);
    return it == r.counters.end() ? fallback : it->second;
  };
  BenchResult b;
  b.op = r.name.op;
  b.dtype = r.name.dtype;
  b.shape = r.name.shape;
  b.id = r.name.id;
  if (r.verdict != Verdict::ok) b.error = r.error.empty() ? "error: " : r.error;
  b.median_us = counter("median_us", r.time_us);
  b.min_us = counter("min_us", b.median_us);
  b.samples = static_cast<int>(counter("samples", static_cast<double>(r.iterations)));
  b.noisy = counter("noisy", 0) != 0;
  b.pruned = counter("pruned", 0) != 0;
  return b;
}

/// The figure a passing screen competes with (the search's own), none for a failed one.
std::optional<double> figure(const BenchResult& b) {
  if (!b.ok() || b.samples == 0) return std::nullopt;
  return bench::effective(b);
}

struct ShapeRows {
  std::string key;
  ktune::Shape dims;
  std::vector<BenchResult> screens;       ///< in file order
  std::map<std::string, double> rounds;   ///< a finalist's round median, by id
};

/// The winner the search would name: the fastest finalist (not S) in the rounds, else the fastest screen.
std::string winner_of(const ShapeRows& s) {
  std::string best;
  double t = std::numeric_limits<double>::infinity();
  for (const auto& [id, us] : s.rounds)
    if (id != "original" && us < t) std::tie(best, t) = std::tie(id, us);
  if (!best.empty()) return best;
  for (const BenchResult& b : s.screens)
    if (const auto f = figure(b); f && b.id != "original" && *f < t) std::tie(best, t) = std::tie(b.id, *f);
  return best;
}

}  // namespace

GuidedReplay replay_guides(const RawFile& search, double ratio, std::size_t general_keep, double anchor_ratio,
                           double dtype_ratio) {
  if (search.mode != "search")
    throw ToolError(search.path + ": a " + search.mode + " file, not a search: nothing to replay");
  const auto guided_out = search.context.find("guided_out");
  if (guided_out != search.context.end() && !guided_out->second.empty() && guided_out->second != "0")
    throw ToolError(fmt::format("{}: a guided search ({} (variant, shape) pairs not screened): replay a full one "
                                "(ktune_bench --screen-every-shape, or a search before 2026-11-27)",
                                search.path, guided_out->second));

  // (op, dtype) units and their shapes, in the order the file first names them (the plan's order).
  std::vector<std::pair<std::string, std::string>> units;
  std::map<std::pair<std::string, std::string>, std::vector<ShapeRows>> shapes;
  for (const RawRun& r : search.runs) {
    const auto unit = std::make_pair(r.name.op, r.name.dtype);
    auto [at, fresh] = shapes.try_emplace(unit);
    if (fresh) units.push_back(unit);
    auto s = std::find_if(at->second.begin(), at->second.end(),
                          [&](const ShapeRows& x) { return x.key == r.name.shape; });
    if (s == at->second.end()) {
      at->second.push_back({r.name.shape, {}, {}, {}});
      s = std::prev(at->second.end());
      s->dims.dims = r.name.dims;
    }
    if (r.mode == "retest") {
      if (r.verdict == Verdict::ok) s->rounds[r.name.id] = r.time_us;
    } else {
      s->screens.push_back(screen_of(r));
    }
  }

  GuidedReplay out;
  out.ratio = ratio;
  out.anchor_ratio = anchor_ratio;
  out.dtype_ratio = dtype_ratio;
  bench::DtypeGuides dtype_guides;  // what the first unit of each (op, element size) kept, to guide the later ones
  for (const auto& unit : units) {
    const std::vector<ShapeRows>& unit_shapes = shapes.at(unit);
    std::vector<const ktune::Shape*> dims;
    for (const ShapeRows& s : unit_shapes) dims.push_back(&s.dims);
    const std::vector<bench::ScreenGuide> guide = bench::screen_guides(dims, anchor_ratio > 0);
    DType dtype{};
    const bool known = parse_dtype(unit.second, dtype);
    const int element_bytes = known ? size_of(dtype) : 0;
    const bench::DtypeGuides::Unit* partner = dtype_ratio > 0 && known ? dtype_guides.guide_of(unit.first, element_bytes) : nullptr;
    std::vector<std::string> forced;
    if (partner) {
      forced = partner->general;
    } else {
      std::vector<const std::vector<BenchResult>*> anchors;
      for (std::size_t j = 0; j < guide.size(); ++j)
        if (guide[j].by == j) anchors.push_back(&unit_shapes[j].screens);
      forced = bench::general_ranking(anchors, general_keep);
    }

    // Each shape after its guide, as the search screens them: a guided anchor keeps part of its screens, and
    // the shapes it guides see only those.
    std::vector<std::vector<BenchResult>> kept(unit_shapes.size());
    std::vector<std::vector<std::string>> left_out(unit_shapes.size());
    for (std::size_t i : bench::screen_order(guide)) {
      const ShapeRows& s = unit_shapes[i];
      out.total += s.screens.size();
      const std::size_t by = guide[i].by;
      const bench::DtypeGuides::Shape* across = nullptr;  // the same shape, guide dtype
      if (partner)
        if (const auto it = partner->shapes.find(s.key); it != partner->shapes.end()) across = &it->second;
      const bool by_dtype = across != nullptr;
      if (by == i && !by_dtype) {  // an anchor, or no anchor of its token count: screened in full
        out.kept += s.screens.size();
        kept[i] = s.screens;
        continue;
      }
      const double r = by_dtype ? dtype_ratio : guide[i].across_tokens ? anchor_ratio : ratio;
      const std::vector<BenchResult>& guide_kept = by_dtype ? across->screens : kept[by];
      const std::vector<std::string>& guide_left_out = by_dtype ? across->left_out : left_out[by];
      std::optional<double> best_kept, winner_screen;
      const std::string winner = winner_of(s);
      bool winner_kept = winner.empty();
      for (const BenchResult& b : s.screens) {
        if (!bench::guided_in(b.id, guide_kept, forced, r, guide_left_out)) {
          left_out[i].push_back(b.id);
          if (b.id == winner) winner_screen = figure(b);
          continue;
        }
        ++out.kept;
        kept[i].push_back(b);
        winner_kept = winner_kept || b.id == winner;
        if (const auto f = figure(b); f && b.id != "original") best_kept = std::min(best_kept.value_or(*f), *f);
      }
      if (!winner_kept && winner_screen && best_kept)
        out.misses.push_back({unit.first, unit.second, s.key, winner, *best_kept / *winner_screen - 1});
    }
    if (dtype_ratio > 0 && known && !partner) {
      std::vector<std::pair<std::string, bench::DtypeGuides::Shape>> guided;
      for (std::size_t i = 0; i < unit_shapes.size(); ++i) guided.push_back({unit_shapes[i].key, {kept[i], left_out[i]}});
      dtype_guides.record(unit.first, element_bytes, std::move(guided), general_keep);
    }
  }
  std::sort(out.misses.begin(), out.misses.end(),
            [](const GuidedMiss& a, const GuidedMiss& b) { return a.cost > b.cost; });
  return out;
}

int cmd_replay_guides(const std::vector<std::string>& args) {
  CLI::App app{
      "Replays the guided screens' rule of the search (bench/search.hpp: a shape of another width screens only what\n"
      "the anchor of its token count found within RATIO of its best, S, and the anchors' five best geometric means;\n"
      "bf16 only what fp16 kept within --dtype-ratio at the same shape)\n"
      "on a full search, one that screened every variant at every shape (ktune_bench --screen-every-shape, or any\n"
      "search before 2026-11-27; decompress a committed raw file with zcat first). Per ratio: how many screens it\n"
      "keeps, and the shapes whose winner it would leave out, with what that costs (the best kept screen against\n"
      "the winner's). Exit status 1 when a winner falls outside at the first ratio given, or when the file is not a\n"
      "full search.",
      "ktune replay-guides"};
  cli::style(app);
  std::string path;
  std::vector<double> ratios;
  const bench::SearchSettings defaults = bench::search_settings(false);
  app.add_option("search", path, "a full search's Google Benchmark JSON")->required();
  app.add_option("ratios", ratios, fmt::format("guide ratios (default: the search's, {})", defaults.guide_ratio))
      ->check(CLI::PositiveNumber);
  double anchor_ratio = defaults.anchor_guide_ratio;
  app.add_option("--anchor-ratio", anchor_ratio,
                 fmt::format("the ratio an anchor is guided with by the anchor of the token count before it (default: "
                             "the search's, {}; 0: every anchor in full)", defaults.anchor_guide_ratio))
      ->check(CLI::NonNegativeNumber);
  double dtype_ratio = defaults.dtype_guide_ratio;
  app.add_option("--dtype-ratio", dtype_ratio,
                 fmt::format("the ratio bf16 is guided with by fp16 at the same shape (default: the search's, {}; 0: "
                             "every dtype in full)", defaults.dtype_guide_ratio))
      ->check(CLI::NonNegativeNumber);
  if (auto done = cli::parse(app, args)) return *done;
  if (ratios.empty()) ratios.push_back(defaults.guide_ratio);

  const RawFile search = load_raw(path);
  int status = exit_ok;
  for (std::size_t k = 0; k < ratios.size(); ++k) {
    const GuidedReplay r =
        replay_guides(search, ratios[k], static_cast<std::size_t>(defaults.general_keep), anchor_ratio, dtype_ratio);
    fmt::print("ratio {} (anchors {}, dtypes {}): {} of {} screens kept ({:.0f}%); {} shapes whose winner would be left out\n",
               r.ratio, r.anchor_ratio, r.dtype_ratio, r.kept,
               r.total, r.total ? 100.0 * static_cast<double>(r.kept) / static_cast<double>(r.total) : 0.0,
               r.misses.size());
    for (std::size_t m = 0; m < r.misses.size() && m < 10; ++m) {
      const GuidedMiss& x = r.misses[m];
      fmt::print("  {}/{}/{}: {}, the best kept screen {:+.1f}%\n", x.op, x.dtype, x.shape, x.winner, 100 * x.cost);
    }
    if (k == 0 && !r.misses.empty()) status = exit_failure;
  }
  return status;
}

}  // namespace ktune::tool
