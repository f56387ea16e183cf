// tools/ktune/targets.hpp: every target the reports state, and the words that state them. The reports,
// `ktune compare` and the results file's "goal" read the figures from here and nowhere else, so a target
// changes in one place, and only current targets are stated.
#pragma once

#include <cstdint>
#include <string>

namespace ktune::tool {

// ---- performance of the chosen variants (the index pages) -------------------------------------------

/// Shapes moving at least this many bytes (MB = 1e6, as the tables' MB column) are large: memory-bound,
/// so the copy ceiling is what they can reach.
inline constexpr std::int64_t large_shape_bytes = 64'000'000;
/// A large shape's chosen variant should reach this share of the copy ceiling (percent): what is left
/// is what a kernel that only moves its bytes could still win.
inline constexpr double large_shape_min_pct_copy_ceiling = 95.0;
/// Shapes with at most this many tokens are small: a few rows, bound by latency rather than bandwidth.
inline constexpr std::int64_t small_shape_tokens = 16;
/// A small shape's chosen variant should take at most this many times the same-size copy: that copy,
/// timed like the variants, is the floor at each size (an empty kernel ignores the bytes to move).
inline constexpr double small_shape_max_over_same_size_copy = 1.15;

/// Against S, the kernel the op replaces (faithful to what the serving engine runs): the geometric mean
/// of the speedups over S per op and dtype at least this (S's time at most 0.9x) ...
inline constexpr double min_geomean_speedup_over_s = 1.0 / 0.9;
/// ... and no shape slower than S by more than this fraction.
inline constexpr double max_slowdown_vs_s = 0.02;

// ---- run-to-run (two tunes of the same ops on the same GPU: stability.hpp, regret.hpp) --------------

/// Shapes whose winner held or stayed within the band: a second tune should mostly agree with the first.
inline constexpr double stability_goal_share = 0.98;
/// p95 of the winners' run-to-run variation: a winner's time should not move by more than this.
inline constexpr double stability_goal_variation = 0.03;
/// p95 of the user's regret: a faster tune must not cost the user speed. The selection rule alone (a
/// run against itself) costs about 0.9% at p95 on an H200.
inline constexpr double regret_goal_p95 = 0.01;
/// The largest regret over the shapes of two tunes.
inline constexpr double regret_goal_max = 0.03;

// ---- the words ------------------------------------------------------------------------------------

/// Which shapes a target is about, as the index's column headings name them: "shapes >= 64 MB",
/// "tokens <= 16" (plain text: the HTML page escapes it).
std::string large_shapes_words();
std::string small_shapes_words();
/// The large-shape target as a plot's guide label: "95%".
std::string large_shape_target_label();
/// The performance targets, one paragraph for an index page (markdown and HTML say the same; the HTML
/// page escapes it): large shapes against the copy ceiling, small shapes against the same-size copy.
std::string performance_target_words();
/// The targets against S: "geometric mean at least 1.11x over S per dtype, no shape below 0.98x".
std::string s_target_words();
/// Every performance target in one sentence, for an op page's "Targets" section.
std::string op_target_words();
/// The stability goal: "at least 98.0% of shapes held or within band, p95 variation at most 3.0%".
std::string stability_goal_words();
/// The regret target: "p95 at most 1.0%, largest at most 3.0%".
std::string regret_goal_words();

}  // namespace ktune::tool
