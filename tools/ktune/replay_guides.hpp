// tools/ktune/replay_guides.hpp: `ktune replay-guides`, the guided screens' rule of the search (bench/search.hpp:
// screen_guides, guided_in, general_ranking, the same functions ktune_bench runs) replayed on a full search, one
// that screened every variant at every shape: what a guide ratio would have kept, and which shapes' winners it
// would have left out.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "raw.hpp"

namespace ktune::tool {

/// A shape whose winner the rule would not have screened.
struct GuidedMiss {
  std::string op, dtype, shape, winner;
  double cost = 0;  ///< the best kept screen over the winner's screen, less 1: what leaving it out costs
};

/// What one guide ratio keeps of a full search.
struct GuidedReplay {
  double ratio = 0, anchor_ratio = 0, dtype_ratio = 0;
  std::size_t kept = 0, total = 0;  ///< (variant, shape) screens the rule keeps, of all in the file
  std::vector<GuidedMiss> misses;   ///< costliest first
};

/// Replays the rule at `ratio` on a search file's screens, per (op, dtype) in file order, with the anchors'
/// `general_keep` best geometric means screened everywhere (the incumbent, which a search also keeps, is not
/// known here), the anchors paired at `anchor_ratio` (SearchSettings::anchor_guide_ratio; 0: none), and a
/// later unit of an op's element size guided by the first at the same shape at `dtype_ratio`
/// (SearchSettings::dtype_guide_ratio; 0: none). A
/// shape's winner is its fastest finalist in the rounds, else its fastest screen. Throws ToolError when the
/// file is not a search, or is a guided one (it left screens out: nothing to replay).
GuidedReplay replay_guides(const RawFile& search, double ratio, std::size_t general_keep, double anchor_ratio = 0,
                           double dtype_ratio = 0);

}  // namespace ktune::tool
