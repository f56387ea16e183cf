// tools/ktune/regret.hpp: the user's regret between two tunes of the same ops on the same GPU: what the
// committed tune's winner costs against an independent second tune's fastest variant, shape by shape, and
// its summaries (per op and dtype, per op, overall, the worst shapes) for `ktune compare` and the reports.
//
// One direction only: BEFORE is the committed (earlier) tune, NOW the independent second one; BEFORE's
// winner W is judged in NOW. Where W was a finalist in NOW, regret = t(W) / t(fastest) - 1 on round
// (retest) medians; where it was not, on screen (sweep) medians against NOW's fastest screen, and the
// shape says so. Never negative. Where W is missing or not correct in NOW the shape has no value and says
// why. A run against itself measures the selection rule alone: the winner it keeps within the band.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "results.hpp"

namespace ktune::tool {

/// max(0, winner_us / fastest_us - 1): a winner at least as fast as the fastest costs the user nothing.
double regret_ratio(double winner_us, double fastest_us);

/// `winner_before` judged on `now` (a shape of the second tune). The fastest at a level is among the
/// correct variants other than "original", which no table can pick.
Regret regret_of(const std::string& winner_before, const ShapeResult& now);

/// Gives every row of `s.stability` without a regret one, from its winner_before and `s`'s own measures
/// (what `ktune compare` computes): sections written before regret existed load with it.
void derive_regret(Selection& s);

struct RegretSummary {
  std::size_t compared = 0;  ///< rows
  std::size_t shapes = 0;    ///< rows with a value
  std::size_t screens = 0;   ///< of those, judged on screen medians
  std::optional<double> p50, p95, max;  ///< nearest rank, over the values
  std::size_t without() const { return compared - shapes; }
  bool meets_goal() const {
    return shapes > 0 && p95 && max && *p95 <= regret_goal_p95 && *max <= regret_goal_max;
  }
};

RegretSummary summarise_regret(const std::vector<StabilityRow>& rows);

/// A compared shape and the op (or any label) it belongs to.
struct OpRow {
  std::string op;
  StabilityRow row;
};

/// The `n` rows with the largest regret above 0, largest first; ties keep the order of `rows`.
std::vector<OpRow> worst_regrets(const std::vector<OpRow>& rows, std::size_t n = 5);

/// A regret as every table prints it: two decimals, so that a p95 of 1.04% does not read as the 1.0% it misses
/// (the target is judged on the figure itself); `none` where there is no figure.
std::string regret_pct(const std::optional<double>& v, const char* none = "–");

/// "1.20%", "1.20% (screens)", or "none: <why>".
std::string regret_words(const std::optional<Regret>& r);

nlohmann::ordered_json regret_json(const Regret& r);
Regret regret_from_json(const nlohmann::ordered_json& j);
/// The section's summary (derived from its rows, kept for readers of the JSON).
nlohmann::ordered_json regret_summary_json(const std::vector<StabilityRow>& rows);

/// `ktune compare`'s regret part, per op label (in order) with its rows: per op and dtype, per op,
/// overall, the worst shapes and the shapes without a regret.
std::string regret_text(const std::vector<std::pair<std::string, std::vector<StabilityRow>>>& ops);

}  // namespace ktune::tool
