// tools/ktune/stability.cpp: two tunes compared shape by shape (`ktune compare`) and the reports' run-to-run section.
#include "stability.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "cli.hpp"
#include "commands.hpp"
#include "io.hpp"
#include "regret.hpp"
#include "report.hpp"
#include "report_detail.hpp"
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
      r.regret = regret_of(a->winner, b);
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

// ---- the reports' run-to-run section ----------------------------------------------------------------
// Built once as paragraphs and tables (report_detail.hpp), written as markdown or HTML.

namespace detail {

std::string md_cell(const Cell& c) {
  if (c.kind == Cell::code) return "`" + c.s + "`";
  if (c.kind == Cell::op_link) return fmt::format("[{}]({}.md)", c.s, c.s);
  return md_escape(c.s);
}

std::string html_cell(const Cell& c) {
  if (c.kind == Cell::code) return "<code>" + html_escape(c.s) + "</code>";
  if (c.kind == Cell::op_link) return fmt::format("<a href=\"{}.html\">{}</a>", html_escape(c.s), html_escape(c.s));
  return html_escape(c.s);
}

std::string markdown(const std::vector<Part>& parts) {
  std::string o;
  for (const Part& p : parts) {
    if (p.table.head.empty()) {
      o += p.paragraph + "\n\n";
      continue;
    }
    const Table& t = p.table;
    o += "|";
    for (const std::string& h : t.head) o += fmt::format(" {} |", h);
    o += "\n|";
    for (char a : t.align) o += a == 'l' ? " --- |" : " ---: |";
    o += "\n";
    for (const auto& row : t.rows) {
      o += "|";
      for (const Cell& c : row) o += fmt::format(" {} |", md_cell(c));
      o += "\n";
    }
    o += "\n";
  }
  return o;
}

std::string html(const std::vector<Part>& parts) {
  std::string o;
  for (const Part& p : parts) {
    if (p.table.head.empty()) {
      o += "<p>" + html_escape(p.paragraph) + "</p>\n";
      continue;
    }
    const Table& t = p.table;
    const auto cls = [&](std::size_t i) { return t.align[i] == 'l' ? " class=\"l\"" : ""; };
    o += "<table>\n<tr>";
    for (std::size_t i = 0; i < t.head.size(); ++i) o += fmt::format("<th{}>{}</th>", cls(i), html_escape(t.head[i]));
    o += "</tr>\n";
    for (const auto& row : t.rows) {
      o += "<tr>";
      for (std::size_t i = 0; i < row.size(); ++i) o += fmt::format("<td{}>{}</td>", cls(i), html_cell(row[i]));
      o += "</tr>\n";
    }
    o += "</table>\n";
  }
  return o;
}

}  // namespace detail

namespace {

using namespace detail;

std::string pct1(double v) { return fixed(100 * v, 1) + "%"; }
std::string opt_pct1(const std::optional<double>& v) { return v ? pct1(*v) : "–"; }

std::string yes_no(bool v) { return v ? "yes" : "no"; }

const char* const regret_intro =
    "The headline is the user's regret: the earlier run's winner (the committed tune's) timed in this run against this "
    "run's fastest variant at the same level, t(winner before) / t(fastest) - 1, never below 0: on round medians where "
    "that winner was a finalist here, else on screen medians (marked \"screens\"); a shape whose earlier winner is missing "
    "or not correct here has none, and says why. The largest regrets give both times' spreads here (winner before / "
    "fastest): a winner's spread far above the fastest's marks a disturbed measurement of it, not a slower kernel.";

const char* const stability_controls =
    "The winners' stability follows as controls: whether the winner held, changed within the band (each run's winner "
    "within the other run's noise band: a tie broken the other way) or changed outside it, and the run-to-run variation "
    "of the winner's time (each winner timed in its own run); the same-size copy's and S's variations say how much the "
    "device itself moved at that size.";

/// The summary columns after the label columns: regret, then the stability controls.
std::vector<Cell> summary_cells(const std::vector<StabilityRow>& rows) {
  const RegretSummary r = summarise_regret(rows);
  const StabilitySummary x = summarise_stability(rows);
  return {std::to_string(r.shapes), regret_pct(r.p50), regret_pct(r.p95), regret_pct(r.max), std::to_string(r.screens),
          std::to_string(r.without()), yes_no(r.meets_goal()), pct1(x.share_held_or_within()), opt_pct1(x.p95)};
}
const std::vector<std::string> summary_head = {"shapes", "p50 regret", "p95 regret", "max regret", "on screens",
                                               "without regret", "meets the target", "held or within band", "p95 variation"};
const std::string summary_align = "rrrrrrlrr";

Table worst_table(const std::vector<OpRow>& rows, bool with_op) {
  Table t{{"dtype", "shape", "winner before", "fastest here", "winner before (us)", "fastest (us)", "spreads", "level",
           "regret"},
          "llllrrrlr",
          {}};
  if (with_op) {
    t.head.insert(t.head.begin(), "op");
    t.align.insert(t.align.begin(), 'l');
  }
  for (const OpRow& w : worst_regrets(rows)) {
    const Regret& r = *w.row.regret;
    std::vector<Cell> row{w.row.dtype, w.row.shape, code_cell(w.row.winner_before), code_cell(r.fastest),
                          sig3(r.winner_before_us), sig3(r.fastest_us),
                          pct1(r.winner_before_spread) + " / " + pct1(r.fastest_spread), r.level, regret_pct(r.value)};
    if (with_op) row.insert(row.begin(), Cell(w.op, Cell::op_link));
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string stability_status(const StabilityRow& r) {
  return r.held ? "held" : r.within_band ? "within band" : "changed";
}

/// An op page's run-to-run section (without its heading).
std::vector<Part> op_stability(const Selection& s) {
  const Stability& st = *s.stability;
  std::vector<Part> parts;
  parts.push_back({fmt::format("Against {} (measured {}, {}). {} Target: {}. {} Their goal: {}.", st.against.file,
                               st.against.date, st.against.hash, regret_intro, regret_goal_words(), stability_controls,
                               stability_goal_words()),
                   {}});
  Table sum{{"dtype"}, "l", {}};
  sum.head.insert(sum.head.end(), summary_head.begin(), summary_head.end());
  sum.align += summary_align;
  std::size_t dtypes = 0;
  for (const DTypeResult& d : s.dtypes) {
    std::vector<StabilityRow> mine;
    for (const StabilityRow& row : st.rows)
      if (row.dtype == d.dtype) mine.push_back(row);
    if (mine.empty()) continue;
    ++dtypes;
    std::vector<Cell> row{d.dtype};
    for (Cell& c : summary_cells(mine)) row.push_back(std::move(c));
    sum.rows.push_back(std::move(row));
  }
  if (dtypes > 1) {
    std::vector<Cell> row{std::string("all")};
    for (Cell& c : summary_cells(st.rows)) row.push_back(std::move(c));
    sum.rows.push_back(std::move(row));
  }
  parts.push_back({"", std::move(sum)});
  std::vector<OpRow> labelled;
  for (const StabilityRow& row : st.rows) labelled.push_back({s.op, row});
  Table worst = worst_table(labelled, false);
  if (!worst.rows.empty()) {
    parts.push_back({"Largest regrets:", {}});
    parts.push_back({"", std::move(worst)});
  }
  Table shapes{{"dtype", "shape", "winner before", "regret", "fastest here", "winner", "status", "before (us)", "now (us)",
                "variation", "copy variation", "S variation", "why it misses the stability goal"},
               "lllrlllrrrrrl",
               {}};
  for (const StabilityRow& row : st.rows)
    shapes.rows.push_back({row.dtype, row.shape, code_cell(row.winner_before), regret_words(row.regret),
                           row.regret && row.regret->value ? code_cell(row.regret->fastest) : Cell("–"),
                           code_cell(row.winner), stability_status(row), sig3(row.time_before_us), sig3(row.time_us),
                           pct1(row.variation), opt_pct1(row.copy_variation), opt_pct1(row.original_variation), row.note});
  parts.push_back({"", std::move(shapes)});
  return parts;
}

/// The index's run-to-run section (without its heading); empty when no results file has one.
std::vector<Part> index_stability(const std::vector<const LoadedResults*>& ops) {
  std::vector<StabilityRow> all;
  std::vector<OpRow> labelled;
  Table t{{"op", "dtype"}, "ll", {}};
  t.head.insert(t.head.end(), summary_head.begin(), summary_head.end());
  t.align += summary_align;
  for (const LoadedResults* r : ops) {
    if (!r->selection.stability) continue;
    const std::vector<StabilityRow>& rows = r->selection.stability->rows;
    std::size_t dtypes = 0;
    for (const DTypeResult& d : r->selection.dtypes) {
      std::vector<StabilityRow> mine;
      for (const StabilityRow& row : rows)
        if (row.dtype == d.dtype) mine.push_back(row);
      if (mine.empty()) continue;
      ++dtypes;
      std::vector<Cell> row{Cell(r->selection.op, Cell::op_link), d.dtype};
      for (Cell& c : summary_cells(mine)) row.push_back(std::move(c));
      t.rows.push_back(std::move(row));
    }
    if (dtypes > 1) {
      std::vector<Cell> row{Cell(r->selection.op, Cell::op_link), std::string("all")};
      for (Cell& c : summary_cells(rows)) row.push_back(std::move(c));
      t.rows.push_back(std::move(row));
    }
    all.insert(all.end(), rows.begin(), rows.end());
    for (const StabilityRow& row : rows) labelled.push_back({r->selection.op, row});
  }
  if (all.empty()) return {};
  const RegretSummary g = summarise_regret(all);
  const StabilitySummary x = summarise_stability(all);
  std::vector<Part> parts;
  parts.push_back({fmt::format("Two tunes compared shape by shape (each op page says against which run, and lists every "
                               "shape). {} Target: {}. All: {} shapes with a regret ({} on screens, {} without), p50 {}, "
                               "p95 {}, largest {}: {} the target. Controls: {} of the winners held or stayed within the band "
                               "(goal {}), p95 run-to-run variation of the winner's time {} (goal {}).",
                               regret_intro, regret_goal_words(), g.shapes, g.screens, g.without(), regret_pct(g.p50),
                               regret_pct(g.p95), regret_pct(g.max), g.meets_goal() ? "meets" : "misses",
                               pct1(x.share_held_or_within()), pct1(stability_goal_share), opt_pct1(x.p95),
                               pct1(stability_goal_variation)),
                   {}});
  parts.push_back({"", std::move(t)});
  Table worst = worst_table(labelled, true);
  if (!worst.rows.empty()) {
    parts.push_back({"Largest regrets:", {}});
    parts.push_back({"", std::move(worst)});
  }
  return parts;
}

}  // namespace

std::string stability_markdown(const Selection& s) {
  return s.stability ? "## Run-to-run stability\n\n" + markdown(op_stability(s)) : "";
}

std::string stability_html(const Selection& s) {
  return s.stability ? "<h2>Run-to-run stability</h2>\n" + html(op_stability(s)) : "";
}

std::string stability_index_markdown(const std::vector<const LoadedResults*>& ops) {
  const auto parts = index_stability(ops);
  if (parts.empty()) return "";
  std::string o = "\n## Run-to-run stability\n\n" + markdown(parts);
  o.pop_back();  // the page ends here: one newline, not a blank line
  return o;
}

std::string stability_index_html(const std::vector<const LoadedResults*>& ops) {
  const auto parts = index_stability(ops);
  return parts.empty() ? "" : "<h2>Run-to-run stability</h2>\n" + html(parts);
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
  CLI::App app{fmt::format(
                   "Compares two tunes of the same ops on the same GPU shape by shape. BEFORE and NOW are results directories\n"
                   "(<dir>/<gpu>/<op>.json, as `ktune select --results DIR` writes them) or single results files. BEFORE is the\n"
                   "committed (earlier) tune, NOW an independent second one.\n"
                   "\n"
                   "First the user's regret: BEFORE's winner timed in NOW against NOW's fastest variant at the same level,\n"
                   "t(winner) / t(fastest) - 1, never below 0, on round medians where that winner was a finalist in NOW, else on\n"
                   "screen medians. Per op and dtype, per op and overall: the shapes, how many were judged on screens, how many\n"
                   "have no regret (BEFORE's winner missing or not correct in NOW), the median, p95 and largest regret against\n"
                   "the target ({}); then the largest regrets and the shapes without one.\n"
                   "\n"
                   "Then the winners' stability, as controls: how many winners held, how many changed within the band (each\n"
                   "run's winner within the other run's noise band), how many winners' times agree within the band (held,\n"
                   "within band, or |t_now - t_before| / t_before at most the larger band), the median, p95 and largest\n"
                   "run-to-run variation of the winner's time, and the shapes that miss that goal (at least {} held or within\n"
                   "band, p95 variation at most {}) with what the controls (the same-size copy, S, the band) say about why.\n"
                   "Two runs of one tune measure stability; an exhaustive and a halving search of the same build compare the\n"
                   "methods. Exit 0 when every op pair compared (whatever the figures), 1 when nothing matched.",
                   regret_goal_words(), pct(stability_goal_share), pct(stability_goal_variation)),
               "ktune compare"};
  cli::style(app);
  bool attach = false;
  std::vector<std::string> paths;
  app.add_option("tunes", paths, "BEFORE and NOW: results directories or files")
      ->required()
      ->expected(2)
      ->type_name("BEFORE NOW");
  app.add_flag("--attach", attach,
               "write the comparison into NOW's results files (section \"stability\"; NOW must be a directory); the "
               "reports' run-to-run section and the tables' headers follow once `ktune tables` and `ktune report` run "
               "after it, as `tools/tune.sh finish` does");
  if (auto done = cli::parse(app, args)) return *done;
  if (paths.size() != 2) throw usage_error("ktune compare needs BEFORE and NOW");
  if (attach && !is_directory(paths[1])) throw usage_error("--attach needs NOW to be a results directory");
  const auto before = load_side(paths[0]);
  auto now = load_side(paths[1]);

  std::vector<StabilityRow> all;
  std::vector<std::string> op_of;  // parallel to `all`
  std::vector<std::pair<std::string, std::vector<StabilityRow>>> by_op;
  std::string table = fmt::format("{:<40} {:>6} {:>5} {:>7} {:>7} {:>9} {:>7} {:>7} {:>7}\n", "op/dtype", "shapes", "held",
                                  "in band", "h or b", "agree", "p50", "p95", "max");
  for (auto& [key, n] : now) {
    auto b = before.find(key);
    if (b == before.end()) {
      fmt::print(stderr, "ktune compare: {} has no counterpart in {}\n", key, paths[0]);
      continue;
    }
    const std::vector<StabilityRow> rows = compare_runs(b->second.selection, n.selection);
    by_op.emplace_back(key, rows);
    for (const DTypeResult& d : n.selection.dtypes) {
      std::vector<StabilityRow> mine;
      for (const StabilityRow& r : rows)
        if (r.dtype == d.dtype) mine.push_back(r);
      if (mine.empty()) continue;
      const StabilitySummary s = summarise_stability(mine);
      table += fmt::format("{:<40} {:>6} {:>5} {:>7} {:>7} {:>9} {:>7} {:>7} {:>7}\n", key + "/" + d.dtype, s.shapes,
                           s.held, s.within_band, pct(s.share_held_or_within()), pct(s.share_agree()), opt_pct(s.p50),
                           opt_pct(s.p95), opt_pct(s.max));
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
  if (by_op.empty()) {
    fmt::print(stderr, "ktune compare: no op of {} is in {}\n", paths[1], paths[0]);
    return exit_failure;
  }
  fmt::print("{}\nwinner stability (controls):\n{}", regret_text(by_op), table);
  const StabilitySummary s = summarise_stability(all);
  fmt::print("all: {} shapes; winner held {}, changed within the band {}: {} held or within band (goal {}); times agree "
             "within the band on {}; variation of the winner's time p50 {}, p95 {} (goal {}), max {}\n",
             s.shapes, s.held, s.within_band, pct(s.share_held_or_within()), pct(stability_goal_share), pct(s.share_agree()),
             opt_pct(s.p50), opt_pct(s.p95), pct(stability_goal_variation), opt_pct(s.max));
  std::size_t missing = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (!all[i].meets_goal) {
      const StabilityRow& r = all[i];
      if (!missing++) fmt::print("shapes that miss the stability goal:\n");
      fmt::print("  {}/{}/{}: {:.3g} -> {:.3g} us: {}\n", op_of[i], r.dtype, r.shape, r.time_before_us, r.time_us, r.note);
    }
  return exit_ok;
}

}  // namespace ktune::tool
