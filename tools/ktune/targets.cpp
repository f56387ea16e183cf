// tools/ktune/targets.cpp: the targets of targets.hpp in words, for the reports and `ktune compare`.
#include "targets.hpp"

#include <fmt/format.h>

#include "io.hpp"

namespace ktune::tool {

std::string large_shapes_words() { return fmt::format("shapes >= {:g} MB", large_shape_bytes / 1e6); }

std::string small_shapes_words() { return fmt::format("tokens <= {}", small_shape_tokens); }

std::string large_shape_target_label() { return fmt::format("{:g}%", large_shape_min_pct_copy_ceiling); }

std::string performance_target_words() {
  return fmt::format(
      "Targets: {} should reach at least {} of the copy ceiling (the lowest % of copy); shapes with {} should stay "
      "within {:g}x of the same-size copy (the largest best / same-size copy), which, timed like the variants, is the "
      "floor at each size. The largest best / empty kernel is shown for information, not as a target. – where no "
      "shape qualifies or the results have no such time.",
      large_shapes_words(), large_shape_target_label(), small_shapes_words(), small_shape_max_over_same_size_copy);
}

std::string s_target_words() {
  return fmt::format("geometric mean at least {:.2f}x over S per dtype, no shape below {:.2f}x",
                     min_geomean_speedup_over_s, 1 / (1 + max_slowdown_vs_s));
}

std::string op_target_words() {
  return fmt::format("Targets: {} at least {} of the copy ceiling; {} within {:g}x of the same-size copy (timed like the "
                     "variants, the floor at each size); against S, the kernel the op replaces: {}.",
                     large_shapes_words(), large_shape_target_label(), small_shapes_words(),
                     small_shape_max_over_same_size_copy, s_target_words());
}

std::string stability_goal_words() {
  return fmt::format("at least {} of shapes held or within band, p95 variation at most {}",
                     fixed(100 * stability_goal_share, 1) + "%", fixed(100 * stability_goal_variation, 1) + "%");
}

std::string regret_goal_words() {
  return fmt::format("p95 at most {:.1f}%, largest at most {:.1f}%", 100 * regret_goal_p95, 100 * regret_goal_max);
}

}  // namespace ktune::tool
