// tools/ktune/report_dispatch.cpp: the index's "Dispatch" section (report.hpp): the rules compared on shapes left
// out of selection, and the tables' choice at the held-out shapes of the catalogue (docs/shapes.md).
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "dispatch.hpp"
#include "io.hpp"
#include "report.hpp"
#include "report_detail.hpp"

namespace ktune::tool {

using namespace detail;

namespace {

std::string pct(const std::optional<double>& v) { return v ? fixed(100 * *v, 2) + "%" : "–"; }

std::vector<Part> dispatch_parts(const std::vector<const LoadedResults*>& ops) {
  std::vector<const Selection*> sels;
  for (const LoadedResults* r : ops) sels.push_back(&r->selection);
  const DispatchComparison cmp = compare_dispatch(sels);
  if (cmp.pooled.empty()) return {};
  const DispatchRule best = cmp.best();
  std::vector<Part> parts;
  parts.push_back({fmt::format(
      "How a table answers a shape it did not select on. Each rule is fitted on the selection shapes of one op and "
      "dtype and judged where it was not fitted: a regret is the chosen variant's time over the fastest one's there, "
      "minus one. Checks: `shape`, each selection shape left out in turn; `line`, each token count or width left out "
      "in turn (calls between grid lines); `held_out`, the spec's held-out shapes with the rule fitted on every "
      "selection shape; `fit`, the selection shapes themselves (a table answers those too). A choice with no time at "
      "the shape (never screened there) counts as not measured. The tables use the **{}** rule: the least p95 regret "
      "over `shape` and `fit` together, then the least max there, then the least p95 on `line` (chosen on the "
      "selection shapes alone, so `held_out` stays an independent check).", name(best)), {}});
  Table t{{"rule", "check", "shapes judged", "not measured", "p50", "p95", "max"}, "llrrrrr", {}};
  for (const auto& [key, sc] : cmp.pooled)
    t.rows.push_back({std::string(name(key.first)) + (key.first == best ? " (tables)" : ""), key.second,
                      std::to_string(sc.regrets.size()), std::to_string(sc.unmeasured), pct(sc.p50()), pct(sc.p95()),
                      pct(sc.max())});
  parts.push_back({"", std::move(t)});

  // The held-out shapes with the tables' rule: regret, and the speedup over S of what a call there runs.
  Table h{{"op", "dtype", "held-out shapes", "regret p95", "regret max", "geometric-mean speedup over S",
           "slowest against S"}, "llrrrrr", {}};
  for (const LoadedResults* r : ops)
    for (const DTypeResult& d : r->selection.dtypes) {
      const Dispatch fit(best, training_shapes(d), d.general.id);
      RuleScore sc;
      double log_sum = 0;
      int n = 0;
      double slowest = 0;  // the largest time over S's, at slowest_at (none measured: nullptr)
      const ShapeResult* slowest_at = nullptr;
      for (const ShapeResult& s : d.shapes) {
        if (!s.held_out) continue;
        std::string id = fit.choose(s.tokens, s.width);
        if (id.empty()) id = d.general.id;
        if (auto reg = regret_at(s, id)) sc.regrets.push_back(*reg);
        else ++sc.unmeasured;
        if (auto p = pair_times(s, "original", id)) {
          log_sum += std::log(p->first / p->second);
          ++n;
          const double against = p->second / p->first;  // > 1: slower than S
          if (!slowest_at || against > slowest) {
            slowest = against;
            slowest_at = &s;
          }
        }
      }
      if (sc.regrets.empty() && !sc.unmeasured) continue;
      h.rows.push_back({Cell(r->selection.op, Cell::op_link), d.dtype,
                        fmt::format("{}{}", sc.regrets.size() + sc.unmeasured,
                                    sc.unmeasured ? fmt::format(" ({} not measured)", sc.unmeasured) : ""),
                        pct(sc.p95()), pct(sc.max()), n ? opt_x(std::exp(log_sum / n)) : "–",
                        slowest_at ? fmt::format("{}x S's time ({})", fixed(slowest, 3), slowest_at->key) : "–"});
    }
  if (!h.rows.empty()) {
    parts.push_back({fmt::format("The held-out shapes (the spec's `held_out` values, measured in every tune and never "
                                 "selected on), answered by the {} rule:", name(best)), {}});
    parts.push_back({"", std::move(h)});
  }
  return parts;
}

}  // namespace

DispatchSection dispatch_section(const std::vector<const LoadedResults*>& ops) {
  const auto parts = dispatch_parts(ops);
  if (parts.empty()) return {};
  DispatchSection out;
  out.markdown = "\n## Dispatch of shapes the tables did not select on\n\n" + markdown(parts);
  out.markdown.pop_back();
  out.html = "<h2>Dispatch of shapes the tables did not select on</h2>\n" + html(parts);
  return out;
}

}  // namespace ktune::tool
