#include "stability.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "io.hpp"
#include "tables.hpp"

namespace ktune::tool {

namespace {

const ShapeResult* shape_of(const Selection& s, const std::string& dtype, const std::string& key) {
  const DTypeResult* d = s.find(dtype);
  if (!d) return nullptr;
  for (const ShapeResult& sh : d->shapes)
    if (sh.key == key) return &sh;
  return nullptr;
}

/// `id` is within the noise band of the fastest on `s` (on its band source; else on sweep times).
bool in_band(const ShapeResult& s, const std::string& id) {
  if (id.empty()) return false;
  if (std::find(s.within_band.begin(), s.within_band.end(), id) != s.within_band.end()) return true;
  const auto t = s.time_of(id), best = s.time_of(s.fastest);
  return t && best && *t <= *best * (1 + s.noise_band);
}

std::optional<double> variation(std::optional<double> before, std::optional<double> now) {
  if (!before || !now || !(*before > 0) || !std::isfinite(*now)) return std::nullopt;
  return std::fabs(*now - *before) / *before;
}

std::string pct(double v) { return fmt::format("{:.1f}%", 100 * v); }

/// Why a shape misses the goal, from what the two runs measured. `gap_before` / `gap_now`: how far the
/// other run's winner is behind this run's in each run (nullopt where a run has no time for it).
std::string why_not(const StabilityRow& r, std::optional<double> gap_before, std::optional<double> gap_now) {
  std::vector<std::string> what, because;
  const bool changed = !r.held && !r.within_band, moved = r.variation > stability_goal_variation;
  if (changed) what.push_back(fmt::format("the winner changed outside the band ({} -> {})", r.winner_before, r.winner));
  if (moved) what.push_back(fmt::format("its time moved {}", pct(r.variation)));
  if (changed && gap_before && gap_now)
    because.push_back(fmt::format("the two were {} apart in the earlier run and {} in this one, in opposite order, "
                                  "each beyond its run's band ({}, {})",
                                  pct(*gap_before), pct(*gap_now), pct(r.band_before), pct(r.band)));
  const double notable = std::max(0.5 * r.variation, stability_goal_variation / 2);
  if (moved && r.copy_variation && *r.copy_variation >= notable)
    because.push_back(fmt::format("the same-size copy moved {} between the runs too: the device's own run-to-run "
                                  "variation at this size", pct(*r.copy_variation)));
  if (moved && r.original_variation && *r.original_variation >= notable)
    because.push_back(fmt::format("S moved {} too", pct(*r.original_variation)));
  const double band = std::max(r.band, r.band_before);
  if (band > stability_goal_variation)
    because.push_back(fmt::format("within one run the winner's rounds spread {} (noise band)", pct(band)));
  if (std::min(r.time_us, r.time_before_us) < 5.0)
    because.push_back(fmt::format("a {:.3g} us call is launch-bound: a few tens of ns are 1%", std::min(r.time_us, r.time_before_us)));
  std::string s;
  for (std::size_t i = 0; i < what.size(); ++i) s += (i ? " and " : "") + what[i];
  if (because.empty()) {
    s += ": no cause in the controls at this size";
    if (r.copy_variation || r.original_variation)
      s += fmt::format(" (the same-size copy moved {}, S {})", r.copy_variation ? pct(*r.copy_variation) : "-",
                       r.original_variation ? pct(*r.original_variation) : "-");
    return s;
  }
  s += ": ";
  for (std::size_t i = 0; i < because.size(); ++i) s += (i ? "; " : "") + because[i];
  return s;
}

/// How far `behind` is behind `ahead` on `s` (time ratio - 1), on one footing.
std::optional<double> gap(const ShapeResult& s, const std::string& behind, const std::string& ahead) {
  const auto b = s.time_of(behind), a = s.time_of(ahead);
  if (!b || !a || !(*a > 0)) return std::nullopt;
  return *b / *a - 1;
}

}  // namespace

std::vector<StabilityRow> compare_runs(const Selection& before, const Selection& now) {
  std::vector<StabilityRow> rows;
  for (const DTypeResult& d : now.dtypes)
    for (const ShapeResult& b : d.shapes) {
      const ShapeResult* a = shape_of(before, d.dtype, b.key);
      if (!a || a->winner.empty() || b.winner.empty()) continue;
      const auto ta = a->time_of(a->winner), tb = b.time_of(b.winner);
      if (!ta || !tb) continue;
      StabilityRow r;
      r.dtype = d.dtype;
      r.shape = b.key;
      r.winner_before = a->winner;
      r.winner = b.winner;
      r.time_before_us = *ta;
      r.time_us = *tb;
      r.band_before = a->noise_band;
      r.band = b.noise_band;
      r.held = a->winner == b.winner;
      r.within_band = !r.held && (in_band(b, a->winner) || in_band(*a, b.winner));
      r.variation = *variation(ta, tb);
      r.copy_variation = variation(a->copy_same_size_us, b.copy_same_size_us);
      r.original_variation = variation(a->time_of("original"), b.time_of("original"));
      r.meets_goal = (r.held || r.within_band) && r.variation <= stability_goal_variation;
      if (!r.meets_goal) r.note = why_not(r, gap(*a, b.winner, a->winner), gap(b, a->winner, b.winner));
      rows.push_back(std::move(r));
    }
  return rows;
}

std::optional<double> nearest_rank(std::vector<double> v, double q) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size(), std::max<std::size_t>(rank, 1)) - 1];
}

StabilitySummary summarise_stability(const std::vector<StabilityRow>& rows) {
  StabilitySummary s;
  std::vector<double> v;
  for (const StabilityRow& r : rows) {
    ++s.shapes;
    s.held += r.held;
    s.within_band += r.within_band;
    s.agree += r.held || r.within_band || r.variation <= std::max(r.band, r.band_before);
    s.meets_goal += r.meets_goal;
    v.push_back(r.variation);
  }
  s.p50 = nearest_rank(v, 0.50);
  s.p95 = nearest_rank(v, 0.95);
  s.max = nearest_rank(v, 1.0);
  return s;
}

// ---- ktune compare --------------------------------------------------------------------------------

namespace {

/// Results files by "<slug>/<op>" from a results directory or one results file.
std::map<std::string, LoadedResults> load_side(const std::string& path) {
  std::map<std::string, LoadedResults> out;
  if (is_directory(path)) {
    for (auto& [op, inputs] : load_all_results(path))
      for (LoadedResults& r : inputs) out.emplace(r.selection.gpu_slug + "/" + op, std::move(r));
    if (out.empty()) throw ToolError(path + " holds no results files (<dir>/<gpu>/<op>.json)");
    return out;
  }
  const std::string text = read_file(path);
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ToolError(path + ": not valid JSON: " + e.what());
  }
  Selection s = from_json(j, path);
  std::string label = path;
  if (auto slash = label.find_last_of('/'); slash != std::string::npos) label = label.substr(slash + 1);
  const std::string key = s.gpu_slug + "/" + s.op;
  out.emplace(key, LoadedResults{label, content_hash(text), std::move(s)});
  return out;
}

std::string opt_pct(const std::optional<double>& v) { return v ? pct(*v) : "-"; }

}  // namespace

int cmd_compare(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--help") != args.end() || std::find(args.begin(), args.end(), "-h") != args.end()) {
    fmt::print(
        "usage: ktune compare BEFORE NOW [--attach]\n"
        "\n"
        "Compares two tunes of the same ops on the same GPU shape by shape. BEFORE and NOW are results directories\n"
        "(<dir>/<gpu>/<op>.json, as `ktune select --results DIR` writes them) or single results files. Per op and dtype:\n"
        "how many winners held, how many changed within the band (each run's winner within the other run's noise\n"
        "band), how many winners' times agree within the band (held, within band, or |t_now - t_before| / t_before\n"
        "at most the larger band), and the median, p95 and largest run-to-run variation of the winner's time; then\n"
        "the shapes that miss issue 9's goal (held or within band, variation <= 3%%) with what the controls (the\n"
        "same-size copy, S, the band) say about why. Two runs of one tune measure stability; an exhaustive and a\n"
        "halving search of the same build compare the methods.\n"
        "  --attach   write the comparison into NOW's results files (section \"stability\"; NOW must be a directory),\n"
        "             then run `ktune tables` and `ktune report` for the reports' run-to-run section\n"
        "exit 0 when every op pair compared (whatever the figures), 1 when nothing matched\n");
    return exit_ok;
  }
  bool attach = false;
  std::vector<std::string> paths;
  for (const std::string& a : args) {
    if (a == "--attach") attach = true;
    else if (a.rfind("--", 0) == 0) throw usage_error("unknown option " + a + " (ktune compare --help)");
    else paths.push_back(a);
  }
  if (paths.size() != 2) throw usage_error("ktune compare needs BEFORE and NOW (ktune compare --help)");
  if (attach && !is_directory(paths[1])) throw usage_error("--attach needs NOW to be a results directory");
  const auto before = load_side(paths[0]);
  auto now = load_side(paths[1]);

  std::vector<StabilityRow> all;
  std::vector<std::string> op_of;  // parallel to `all`
  int matched = 0;
  fmt::print("{:<34} {:>6} {:>5} {:>7} {:>7} {:>9} {:>7} {:>7} {:>7}\n", "op/dtype", "shapes", "held", "in band",
             "h or b", "agree", "p50", "p95", "max");
  for (auto& [key, n] : now) {
    auto b = before.find(key);
    if (b == before.end()) {
      fmt::print(stderr, "ktune compare: {} has no counterpart in {}\n", key, paths[0]);
      continue;
    }
    ++matched;
    const std::vector<StabilityRow> rows = compare_runs(b->second.selection, n.selection);
    for (const DTypeResult& d : n.selection.dtypes) {
      std::vector<StabilityRow> mine;
      for (const StabilityRow& r : rows)
        if (r.dtype == d.dtype) mine.push_back(r);
      if (mine.empty()) continue;
      const StabilitySummary s = summarise_stability(mine);
      fmt::print("{:<34} {:>6} {:>5} {:>7} {:>7} {:>9} {:>7} {:>7} {:>7}\n", key + "/" + d.dtype, s.shapes, s.held,
                 s.within_band, pct(s.share_held_or_within()), pct(s.share_agree()), opt_pct(s.p50), opt_pct(s.p95),
                 opt_pct(s.max));
    }
    all.insert(all.end(), rows.begin(), rows.end());
    op_of.insert(op_of.end(), rows.size(), n.selection.op);
    if (attach) {
      Stability st;
      st.against = {b->second.label, "results", b->second.hash,
                    b->second.selection.environment.count("date") ? b->second.selection.environment.at("date") : ""};
      st.rows = rows;
      n.selection.stability = std::move(st);
      const std::string path = results_path(paths[1], n.selection.gpu_slug, n.selection.op);
      fmt::print(stderr, "{} {}\n", path, write_atomic(path, dump_json(to_json(n.selection), 6)) ? "written" : "unchanged");
    }
  }
  if (!matched) {
    fmt::print(stderr, "ktune compare: no op of {} is in {}\n", paths[1], paths[0]);
    return exit_failure;
  }
  const StabilitySummary s = summarise_stability(all);
  fmt::print("all: {} shapes; winner held {}, changed within the band {}: {} held or within band (goal {}); times agree "
             "within the band on {}; variation of the winner's time p50 {}, p95 {} (goal {}), max {}\n",
             s.shapes, s.held, s.within_band, pct(s.share_held_or_within()), pct(stability_goal_share), pct(s.share_agree()),
             opt_pct(s.p50), opt_pct(s.p95), pct(stability_goal_variation), opt_pct(s.max));
  std::size_t missing = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (!all[i].meets_goal) {
      const StabilityRow& r = all[i];
      if (!missing++) fmt::print("shapes that miss the goal:\n");
      fmt::print("  {}/{}/{}: {:.3g} -> {:.3g} us: {}\n", op_of[i], r.dtype, r.shape, r.time_before_us, r.time_us, r.note);
    }
  return exit_ok;
}

}  // namespace ktune::tool
