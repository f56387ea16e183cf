// tools/ktune/profile_section.hpp: profiling the winners after selection (issue 5, `make tune` with
// KTUNE_PROFILE=1).
//
//   ktune profile-plan    results files -> the calls ktune_profile --plan profiles: per op and dtype,
//                         S and the winner at a few representative shapes
//   ktune profile-attach  ktune_profile's JSON -> a "profile" section in each results file (records and
//                         the diagnose.hpp findings, for the report and the planning agent)
//   report hook           the "Profile of the winners" table of an op page, from that section
//
// Everything here reads and writes files only: deterministic, no clock, no GPU.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tables.hpp"

namespace ktune::tool {

inline constexpr const char* profile_plan_schema = "ktune.profile_plan";

/// The shapes of one dtype worth profiling, in the dtype's shape order, without repeats: the largest
/// (most bytes), the one closest to 128 MB (geometrically) among those within [64, 256] MB, and T = 1
/// and T = 16 of the widest row, and every shape of `missed` (the keys of shapes that miss a target:
/// their reason comes from the profile). Only shapes with a winner count.
std::vector<const ShapeResult*> plan_shapes(const DTypeResult& d, const std::set<std::string>& missed = {});

/// The plan for every results file of `gpu_slug` (every GPU when empty) and op in `ops` (all when
/// empty): {"schema", "gpu_slug", "calls": [{op, dtype, shape, variants: ["original", winner]}]}.
nlohmann::ordered_json profile_plan(const std::vector<const LoadedResults*>& inputs);

/// The "profile" section of `sel`'s results file from a ktune_profile JSON document: the entries of
/// `sel.op` whose (dtype, shape) is in the results and whose variant is S or that shape's winner,
/// ordered as the results are (dtype, shape, S first). Entries of other variants (winners of an
/// older selection) are left out with a warning. Null when no entry applies.
nlohmann::ordered_json profile_section(const nlohmann::json& doc, const std::string& source_name,
                                       const std::string& source_hash, const Selection& sel,
                                       std::vector<std::string>& warnings);

/// The "Profile of the winners" part of an op page; empty when the results have no profile section.
std::string profile_markdown(const Selection& sel);
std::string profile_html(const Selection& sel);

}  // namespace ktune::tool
