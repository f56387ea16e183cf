// tools/ktune/tables.hpp: kernels/<op>/tuned.cuh from results files (docs/kernel-folder.md, "tuned.cuh").
//
// Per device and dtype the measured shapes form a grid of (width, tokens). Token buckets end at the
// geometric midpoint between neighbouring measured token counts, the last one open-ended; width
// ranges split at geometric midpoints the same way, the first from 0 and the last open-ended. Adjacent
// token buckets with the same winner merge, then adjacent width ranges whose buckets are identical.
// Rows are written in lookup order (ktune::lookup takes the first match): device by device, dtype by
// dtype, width range by width range, tokens_max increasing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dispatch.hpp"
#include "results.hpp"

namespace ktune::tool {

/// A results file as read for generation; `label` names it in banners (relative to the results dir).
struct LoadedResults {
  std::string label;
  std::string hash;
  Selection selection;
};

/// One row of the generated table, before it is printed (exposed for tests).
struct TableRow {
  int arch = 0;
  std::string device, dtype, id;
  std::int64_t tokens_max = 0, width_min = 0, width_max = 0;
  std::vector<std::string> provenance;  ///< one comment line per measured shape inside the bucket
};

/// Upper ends of token buckets for sorted measured token counts: geometric midpoints, last open-ended.
std::vector<std::int64_t> bucket_upper_bounds(const std::vector<std::int64_t>& measured);

/// The rows of one op's table, in lookup order. Throws ToolError when the inputs disagree (different
/// spaces) or a shape cannot be keyed by (tokens, width).
/// The cells are those of the dispatch rule fitted on each dtype's selection shapes (dispatch.hpp); the bucket
/// rule gives the grid described above.
/// `rules`: the rule per GPU slug (dispatch_rules()); a GPU not in it gets the bucket rule.
std::vector<TableRow> table_rows(const std::vector<LoadedResults>& inputs, const std::map<std::string, DispatchRule>& rules = {});

/// The complete text of kernels/<op>/tuned.cuh. Deterministic: depends only on `inputs` and `space_hash`.
/// `space_hash` is the op's current Space::space.hash() as "0x..." (empty: unknown). Results measured on an
/// older space (before points were added) still give their GPU's rows, named stale in the header, as long
/// as the caller has checked that their ids are points of the current space; the table's hash is then the
/// current one, when any input was measured on it. Inputs on different spaces none of which is current are
/// refused: no space says what their ids mean.
std::string generate_table(const std::string& op, const std::vector<LoadedResults>& inputs,
                           const std::string& space_hash = {}, const std::map<std::string, DispatchRule>& rules = {});

/// The dispatch rule of each GPU's tables: the best of compare_dispatch() over that GPU's results of every op.
std::map<std::string, DispatchRule> dispatch_rules(
    const std::vector<std::pair<std::string, std::vector<LoadedResults>>>& all);

/// The complete text of kernels/<op>/tuned.cuh before the first tune (no results): no rows, the general
/// configuration is Space::default_point. Same shape as generate_table's, so a tune rewrites it in place.
/// `space_hash` is Space::space.hash() of the op's space.hpp. Deterministic.
std::string generate_default_table(const std::string& op, std::uint64_t space_hash);

/// Every results file of every GPU under `results_dir`, by op (ops sorted, GPUs sorted).
std::vector<std::pair<std::string, std::vector<LoadedResults>>> load_all_results(const std::string& results_dir);

}  // namespace ktune::tool
