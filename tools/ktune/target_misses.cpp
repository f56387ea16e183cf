// tools/ktune/target_misses.cpp: the missed targets of an op's results, with reasons (target_misses.hpp).
#include "target_misses.hpp"

#include <fmt/format.h>

#include <cmath>
#include <ktune/diagnose.hpp>

#include "io.hpp"
#include "report.hpp"
#include "report_detail.hpp"

namespace ktune::tool {

namespace {

std::string pct(double v) { return fmt::format("{:.1f}%", v); }

/// The findings of the winner's profile at (dtype, shape), from the results' profile section.
const nlohmann::ordered_json* winner_profile(const Selection& sel, const std::string& dtype, const ShapeResult& sh) {
  if (!sel.profile.is_object() || !sel.profile.contains("entries")) return nullptr;
  for (const auto& e : sel.profile["entries"])
    if (e.value("dtype", "") == dtype && e.value("shape", "") == sh.key && e.value("variant", "") == sh.winner &&
        !e.contains("skipped"))
      return &e;
  return nullptr;
}

/// The reason and next structure from the winner's profile at this shape: its findings' messages, and
/// the structure the first finding that is advice asks for. False when the winner was not profiled here.
bool from_profile(const Selection& sel, const std::string& dtype, const ShapeResult& sh, TargetMiss& m) {
  const nlohmann::ordered_json* e = winner_profile(sel, dtype, sh);
  if (!e) return false;
  m.profiled = true;
  for (const auto& f : e->value("findings", nlohmann::ordered_json::array())) {
    m.reason += (m.reason.empty() ? "" : "; ") + f.value("message", std::string());
    if (m.next.empty()) m.next = profile::next_structure(f.value("rule", std::string()));
  }
  if (m.reason.empty()) m.reason = "profiled here: no rule of ktune/diagnose.hpp fired";
  return true;
}

constexpr const char* not_profiled =
    "not profiled at this shape: `KTUNE_PROFILE=1 make tune` (or `tools/tune.sh profile`) profiles every shape that "
    "misses a target";

}  // namespace

std::vector<TargetMiss> target_misses(const Selection& sel) {
  std::vector<TargetMiss> out;
  const std::optional<double> empty_us = empty_kernel_us(sel);
  for (const DTypeResult& d : sel.dtypes) {
    const DTypeSummary sum = summarise(sel, d);
    if (sum.geomean_speedup && *sum.geomean_speedup < min_geomean_speedup_over_s) {
      // Where S already runs near a copy of its bytes, no structure can win much: say how often that is.
      std::size_t near_copy = 0, timed = 0;
      for (const ShapeResult& sh : d.shapes)
        if (auto s_us = sh.time_of("original"); s_us && sh.copy_same_size_us && *sh.copy_same_size_us > 0) {
          ++timed;
          near_copy += *s_us <= small_shape_max_over_same_size_copy * *sh.copy_same_size_us;
        }
      out.push_back({d.dtype, "all shapes", fmt::format("geometric mean >= {:.2f}x over S", min_geomean_speedup_over_s),
                     fmt::format("{:.2f}x", *sum.geomean_speedup),
                     fmt::format("S is within {:g}x of a same-size copy at {} of {} shapes: little is left to win there",
                                 small_shape_max_over_same_size_copy, near_copy, timed),
                     "the shapes where S is far from the copy (the rows of this dtype below, and the table above)", false});
    }
    for (const ShapeResult& sh : d.shapes) {
      if (sh.winner.empty()) continue;
      const std::optional<double> best = best_time_us(sh);
      // Slower than S: the family lacks S's own structure at this shape.
      if (auto p = detail::pair_times(sh, "original", sh.winner); p && p->first / p->second < 1 / (1 + max_slowdown_vs_s)) {
        TargetMiss m{d.dtype, sh.key, fmt::format("no slower than S by more than {:.0f}%", 100 * max_slowdown_vs_s),
                     fmt::format("{:.2f}x over S ({} us against S's {} us)", p->first / p->second, sig3(p->second), sig3(p->first))};
        if (!from_profile(sel, d.dtype, sh, m)) m.reason = "S is faster than every variant of the family here. " + std::string(not_profiled);
        const std::string contains_s = "S's own launch configuration as a point of the space, so that the family contains S";
        m.next = m.next.empty() ? contains_s : contains_s + "; then " + m.next;
        out.push_back(std::move(m));
      }
      if (sh.bytes >= large_shape_bytes) {
        const std::optional<double> pc = detail::counter(detail::best_measure(sh, sh.winner), "pct_copy");
        if (pc && *pc < large_shape_min_pct_copy_ceiling) {
          const std::optional<double> same = pct_of_same_size_copy(sh);
          const std::optional<double> copy_pct =
              same && *same > 0 ? std::optional<double>(*pc * 100 / *same) : std::nullopt;  // the copy's own % of the ceiling
          TargetMiss m{d.dtype, sh.key, fmt::format(">= {} of the copy ceiling ({})", large_shape_target_label(), large_shapes_words()),
                       pct(*pc) + (copy_pct ? fmt::format(" (a copy of the same bytes: {})", pct(*copy_pct)) : "")};
          // Where a plain copy of the same bytes falls short too and the winner keeps up with it, the size
          // sets the limit, whatever a profile of the winner says.
          if (copy_pct && *copy_pct < large_shape_min_pct_copy_ceiling && same && *same >= large_shape_min_pct_copy_ceiling) {
            m.reason = fmt::format("a plain copy of these bytes reaches only {} of the ceiling at this size, and the winner is at {} "
                                   "of that copy: the size, not the kernel, sets the limit", pct(*copy_pct), pct(*same));
            m.next = "none in this kernel's structure; fusing it with a neighbouring kernel saves the call";
          } else if (!from_profile(sel, d.dtype, sh, m)) {
            m.reason = not_profiled;
          }
          if (m.next.empty()) m.next = profile::next_structure(profile::rules::dram_below_ceiling);
          out.push_back(std::move(m));
        }
      }
      if (sh.tokens <= small_shape_tokens && best && sh.copy_same_size_us && *sh.copy_same_size_us > 0) {
        const double over = *best / *sh.copy_same_size_us;
        if (over > small_shape_max_over_same_size_copy) {
          TargetMiss m{d.dtype, sh.key, fmt::format("<= {:g}x the same-size copy ({})", small_shape_max_over_same_size_copy, small_shapes_words()),
                       fmt::format("{:.2f}x ({} us against the copy's {} us)", over, sig3(*best), sig3(*sh.copy_same_size_us))};
          // The diagnosis's own launch floor: a call within this factor of the empty kernel.
          const bool at_floor = empty_us && *best <= profile::Thresholds{}.launch_floor_ratio * *empty_us;
          if (!from_profile(sel, d.dtype, sh, m))
            m.reason = at_floor ? fmt::format("at the launch floor: {:.2f}x the empty kernel ({} us)", *best / *empty_us,
                                              sig3(*empty_us))
                                : std::string(not_profiled);
          if (m.next.empty())
            m.next = profile::next_structure(at_floor ? profile::rules::launch_bound_time : profile::rules::launch_bound_grid);
          out.push_back(std::move(m));
        }
      }
    }
  }
  return out;
}

std::string targets_markdown(const Selection& sel) {
  const std::vector<TargetMiss> misses = target_misses(sel);
  std::string o = "## Targets\n\n" + op_target_words() + "\n\n";
  if (misses.empty()) return o + "Every target is met on every shape of this tune.\n\n";
  o += fmt::format("{} missed, each with the reason and the next structure to try:\n\n", misses.size());
  o += "| dtype | shape | target | measured | reason | next structure |\n| --- | --- | --- | --- | --- | --- |\n";
  for (const TargetMiss& m : misses)
    o += fmt::format("| {} | {} | {} | {} | {} | {} |\n", m.dtype, m.shape, md_escape(m.target), md_escape(m.measured),
                     md_escape(m.reason), md_escape(m.next));
  return o + "\n";
}

std::string targets_html(const Selection& sel) {
  const std::vector<TargetMiss> misses = target_misses(sel);
  std::string o = "<h2>Targets</h2>\n<p>" + html_escape(op_target_words()) + "</p>\n";
  if (misses.empty()) return o + "<p>Every target is met on every shape of this tune.</p>\n";
  o += fmt::format("<p>{} missed, each with the reason and the next structure to try:</p>\n", misses.size());
  o += "<table>\n<tr><th class=\"l\">dtype</th><th class=\"l\">shape</th><th class=\"l\">target</th><th class=\"l\">measured</th>"
       "<th class=\"l\">reason</th><th class=\"l\">next structure</th></tr>\n";
  for (const TargetMiss& m : misses)
    o += fmt::format("<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
                     "<td class=\"l\">{}</td><td class=\"l\">{}</td></tr>\n",
                     html_escape(m.dtype), html_escape(m.shape), html_escape(m.target), html_escape(m.measured),
                     html_escape(m.reason), html_escape(m.next));
  return o + "</table>\n";
}

}  // namespace ktune::tool
