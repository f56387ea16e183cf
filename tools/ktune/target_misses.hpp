// tools/ktune/target_misses.hpp: the shapes whose chosen variant misses a target of targets.hpp, each with
// the reason (the winner's profile findings at that shape where it was profiled, else what the measurements
// say) and the next structure to try. The op pages list them; `ktune profile-plan` profiles them.
#pragma once

#include <string>
#include <vector>

#include "results.hpp"

namespace ktune::tool {

struct TargetMiss {
  std::string dtype;
  std::string shape;     ///< the shape key; "all shapes" for a per-dtype target
  std::string target;    ///< the target in words: ">= 95% of the copy ceiling (shapes >= 64 MB)"
  std::string measured;  ///< what this tune measured: "74.3% (the same-size copy: 77.2%)"
  std::string reason;    ///< why, from the profile of the winner at this shape, else from the measurements
  std::string next;      ///< the next structure to try
  bool profiled = false; ///< the reason comes from a profile
};

/// Every missed target of `sel`, per dtype in the results' order: the geometric mean over S first, then
/// per shape (slower than S, large shapes under the copy ceiling, small shapes over the same-size copy).
std::vector<TargetMiss> target_misses(const Selection& sel);

/// The op page's "Targets" section (markdown; the HTML page escapes the same text).
std::string targets_markdown(const Selection& sel);
std::string targets_html(const Selection& sel);

}  // namespace ktune::tool
