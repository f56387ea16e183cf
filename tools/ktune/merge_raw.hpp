// tools/ktune/merge_raw.hpp: `ktune merge-raw`, the slices' Google Benchmark JSON files of one tune (each
// written by `ktune_bench --slice K/N`, on its own GPU) merged into one file that `ktune select` reads as it
// reads a one-GPU run.
#pragma once

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace ktune::tool {

/// One input: its path (named in every refusal) and its parsed JSON.
struct RawInput {
  std::string path;
  nlohmann::ordered_json doc;
};

/// Merges the inputs, in order. `names` (may be null): keep only the rows named there, plus the reference
/// rows ktune/copy_ceiling and ktune/empty_kernel. Throws ToolError naming the file and the field when an input
/// is not ktune_bench output, is not complete, differs from the first in gpu_slug, arch, ktune_version,
/// git_commit, mode or quick, or holds a benchmark name that an earlier input holds too.
/// The context is the first input's with the counters summed, measure_wall_s and startup_s the largest,
/// `slices` the number of inputs and `slice<k>.copy_ceiling_gbps` / `slice<k>.run_seed` of each input.
nlohmann::ordered_json merge_raw(const std::vector<RawInput>& inputs, const std::set<std::string>* names);

}  // namespace ktune::tool
