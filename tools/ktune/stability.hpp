// tools/ktune/stability.hpp: two tunes of the same ops on the same GPU, compared shape by shape
// (`ktune compare BEFORE NOW`), and the run-to-run section the reports show (`--attach`). Its headline
// is the user's regret (regret.hpp); what follows here are the winners' stability figures, its controls.
//
// Per shape: whether the winner held; if not, whether each run's winner is within the other run's noise
// band (a tie broken the other way: "within band"); the run-to-run variation of the winner's time,
// |t_now - t_before| / t_before, each winner timed in its own run; and as controls the variation of the
// same-size copy and of S between the runs, which say how much the device itself moved at that size. Two
// searches of one run (exhaustive and halving) compare the same way: their winners' times agree within
// the band when held, within band, or the variation is at most the larger of the two bands.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tables.hpp"

namespace ktune::tool {

/// The shapes both selections measured, in the order of `now`'s dtypes and shapes.
std::vector<StabilityRow> compare_runs(const Selection& before, const Selection& now);

struct StabilitySummary {
  std::size_t shapes = 0, held = 0, within_band = 0, agree = 0, meets_goal = 0;
  std::optional<double> p50, p95, max;  ///< of the variation (nearest rank)
  double share_held_or_within() const { return shapes ? static_cast<double>(held + within_band) / shapes : 0; }
  double share_agree() const { return shapes ? static_cast<double>(agree) / shapes : 0; }
  bool meets_goal_overall() const {
    return shapes > 0 && share_held_or_within() >= stability_goal_share && p95 && *p95 <= stability_goal_variation;
  }
};

/// Over `rows` (all of them, or one dtype's).
StabilitySummary summarise_stability(const std::vector<StabilityRow>& rows);

/// Nearest-rank quantile of `v` (q in [0, 1]); nullopt for none.
std::optional<double> nearest_rank(std::vector<double> v, double q);

/// An op page's run-to-run section, heading included; empty when `s` has no stability section.
std::string stability_markdown(const Selection& s);
std::string stability_html(const Selection& s);
/// The index's run-to-run section (per op and dtype, per op, overall, the largest regrets); empty when no
/// results file has a stability section.
std::string stability_index_markdown(const std::vector<const LoadedResults*>& ops);
std::string stability_index_html(const std::vector<const LoadedResults*>& ops);

}  // namespace ktune::tool
