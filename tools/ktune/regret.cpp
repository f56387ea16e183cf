// tools/ktune/regret.cpp: the user's regret between two tunes (regret.hpp), and nothing else.
#include "regret.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "stability.hpp"

namespace ktune::tool {

namespace {

std::string pct(double v) { return fmt::format("{:.1f}%", 100 * v); }

nlohmann::ordered_json opt_json(const std::optional<double>& v) { return v ? nlohmann::ordered_json(*v) : nullptr; }

}  // namespace

double regret_ratio(double winner_us, double fastest_us) { return std::max(0.0, winner_us / fastest_us - 1); }

Regret regret_of(const std::string& winner_before, const ShapeResult& now) {
  Regret r;
  const VariantResult* w = now.find(winner_before);
  if (!w) {
    r.none = "not measured in this run";
    return r;
  }
  if (w->verdict != Verdict::ok) {
    r.none = fmt::format("{} in this run", to_string(w->verdict));
    return r;
  }
  // The fastest at each level by (time, id): the smaller id breaks a tie, as the selection's ranking does.
  const auto key = [](const Measure& m, const VariantResult& v) { return std::make_pair(m.median_us, v.id); };
  const VariantResult *round_v = nullptr, *screen_v = nullptr;
  for (const VariantResult& v : now.variants) {
    if (v.id == "original" || v.verdict != Verdict::ok) continue;
    if (v.retest && (!round_v || key(*v.retest, v) < key(*round_v->retest, *round_v))) round_v = &v;
    if (v.sweep && (!screen_v || key(*v.sweep, v) < key(*screen_v->sweep, *screen_v))) screen_v = &v;
  }
  // Both times on one footing: round medians where the winner was a finalist here (the footing the
  // selection ranks finalists on), else screen medians.
  const auto take = [&](const char* level, const Measure& winner, const VariantResult& fastest, const Measure& f) {
    r.level = level;
    r.winner_before_us = winner.median_us;
    r.winner_before_spread = winner.spread;
    r.fastest = fastest.id;
    r.fastest_us = f.median_us;
    r.fastest_spread = f.spread;
  };
  if (w->retest && round_v) {
    take("rounds", *w->retest, *round_v, *round_v->retest);
  } else if (w->sweep && screen_v) {
    take("screens", *w->sweep, *screen_v, *screen_v->sweep);
  } else {
    r.none = "not timed in this run";
    return r;
  }
  if (!(r.fastest_us > 0) || !std::isfinite(r.winner_before_us)) {
    r.none = "no usable time in this run";
    return r;
  }
  r.value = regret_ratio(r.winner_before_us, r.fastest_us);
  return r;
}

void derive_regret(Selection& s) {
  if (!s.stability) return;
  for (StabilityRow& row : s.stability->rows) {
    if (row.regret) continue;
    const DTypeResult* d = s.find(row.dtype);
    const ShapeResult* sh = nullptr;
    if (d)
      for (const ShapeResult& x : d->shapes)
        if (x.key == row.shape) sh = &x;
    if (sh) {
      row.regret = regret_of(row.winner_before, *sh);
    } else {
      row.regret = Regret{};
      row.regret->none = "the shape is not in this run";
    }
  }
}

RegretSummary summarise_regret(const std::vector<StabilityRow>& rows) {
  RegretSummary s;
  std::vector<double> v;
  for (const StabilityRow& r : rows) {
    ++s.compared;
    if (!r.regret || !r.regret->value) continue;
    ++s.shapes;
    s.screens += r.regret->level == "screens";
    v.push_back(*r.regret->value);
  }
  s.p50 = nearest_rank(v, 0.50);
  s.p95 = nearest_rank(v, 0.95);
  s.max = nearest_rank(v, 1.0);
  return s;
}

std::vector<OpRow> worst_regrets(const std::vector<OpRow>& rows, std::size_t n) {
  std::vector<OpRow> out;
  for (const OpRow& r : rows)
    if (r.row.regret && r.row.regret->value && *r.row.regret->value > 0) out.push_back(r);
  std::stable_sort(out.begin(), out.end(),
                   [](const OpRow& a, const OpRow& b) { return *a.row.regret->value > *b.row.regret->value; });
  if (out.size() > n) out.resize(n);
  return out;
}

std::string regret_pct(const std::optional<double>& v, const char* none) {
  return v ? fmt::format("{:.2f}%", 100 * *v) : none;
}

std::string regret_words(const std::optional<Regret>& r) {
  if (!r) return "none";
  if (!r->value) return "none: " + r->none;
  return r->level == "screens" ? regret_pct(r->value) + " (screens)" : regret_pct(r->value);
}

nlohmann::ordered_json regret_json(const Regret& r) {
  if (!r.value) return {{"none", r.none}};
  return {{"level", r.level},
          {"value", *r.value},
          {"fastest", r.fastest},
          {"winner_before_us", r.winner_before_us},
          {"fastest_us", r.fastest_us},
          {"winner_before_spread", r.winner_before_spread},
          {"fastest_spread", r.fastest_spread}};
}

Regret regret_from_json(const nlohmann::ordered_json& j) {
  Regret r;
  if (j.contains("none")) {
    r.none = j.at("none").get<std::string>();
    return r;
  }
  r.level = j.at("level").get<std::string>();
  r.value = j.at("value").get<double>();
  r.fastest = j.at("fastest").get<std::string>();
  r.winner_before_us = j.at("winner_before_us").get<double>();
  r.fastest_us = j.at("fastest_us").get<double>();
  r.winner_before_spread = j.value("winner_before_spread", 0.0);  // absent from sections before 2026-11-27
  r.fastest_spread = j.value("fastest_spread", 0.0);
  return r;
}

nlohmann::ordered_json regret_summary_json(const std::vector<StabilityRow>& rows) {
  const RegretSummary s = summarise_regret(rows);
  return {{"shapes", s.shapes}, {"screens", s.screens}, {"without", s.without()}, {"p50", opt_json(s.p50)},
          {"p95", opt_json(s.p95)}, {"max", opt_json(s.max)}, {"meets_goal", s.meets_goal()}};
}

std::string regret_text(const std::vector<std::pair<std::string, std::vector<StabilityRow>>>& ops) {
  std::string o = fmt::format(
      "regret: BEFORE's winner timed in NOW against NOW's fastest variant at the same level, t(winner) / t(fastest) - 1,\n"
      "never below 0; on round medians where that winner was a finalist in NOW, else on screen medians (\"screens\").\n"
      "What shipping BEFORE's tables costs a user against NOW's. Target: {}.\n",
      regret_goal_words());
  const auto line = [](const std::string& label, const RegretSummary& s) {
    return fmt::format("{:<48} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7}  {}\n", label, s.shapes, s.screens, s.without(),
                       regret_pct(s.p50, "-"), regret_pct(s.p95, "-"), regret_pct(s.max, "-"), s.meets_goal() ? "met" : "missed");
  };
  o += fmt::format("{:<48} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7}  {}\n", "op/dtype", "shapes", "screens", "without", "p50",
                   "p95", "max", "target");
  std::vector<StabilityRow> all;
  std::vector<OpRow> labelled;
  for (const auto& [op, rows] : ops) {
    std::vector<std::string> dtypes;
    for (const StabilityRow& r : rows)
      if (std::find(dtypes.begin(), dtypes.end(), r.dtype) == dtypes.end()) dtypes.push_back(r.dtype);
    for (const std::string& d : dtypes) {
      std::vector<StabilityRow> mine;
      for (const StabilityRow& r : rows)
        if (r.dtype == d) mine.push_back(r);
      o += line(op + "/" + d, summarise_regret(mine));
    }
    if (dtypes.size() > 1) o += line(op + " (all dtypes)", summarise_regret(rows));
    all.insert(all.end(), rows.begin(), rows.end());
    for (const StabilityRow& r : rows) labelled.push_back({op, r});
  }
  o += line("all", summarise_regret(all));
  const auto worst = worst_regrets(labelled);
  if (!worst.empty()) o += "largest regrets:\n";
  for (const OpRow& w : worst) {
    const Regret& r = *w.row.regret;
    o += fmt::format("  {}/{}/{}: {} on {}: {} {:.3g} us (spread {}) against {} {:.3g} us (spread {})\n", w.op,
                     w.row.dtype, w.row.shape, regret_pct(r.value), r.level, w.row.winner_before, r.winner_before_us,
                     pct(r.winner_before_spread), r.fastest, r.fastest_us, pct(r.fastest_spread));
  }
  bool any = false;
  for (const OpRow& w : labelled)
    if (!w.row.regret || !w.row.regret->value) {
      if (!any) o += "shapes without a regret:\n";
      any = true;
      o += fmt::format("  {}/{}/{}: BEFORE's winner {}: {}\n", w.op, w.row.dtype, w.row.shape, w.row.winner_before,
                       w.row.regret ? w.row.regret->none : "not judged");
    }
  return o;
}

}  // namespace ktune::tool
