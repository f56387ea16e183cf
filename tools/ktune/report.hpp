// tools/ktune/report.hpp: reports/<gpu>/<op>.{md,html} and reports/<gpu>/index.{md,html}.
//
// Generated from the results files only (never from the clock or the raw files), so regenerating
// from the same results gives the same bytes. The HTML is self-contained: inline CSS and inline SVG,
// no script, no external URL.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tables.hpp"
#include "targets.hpp"  // large_shape_bytes, small_shape_tokens and the targets they belong to

namespace ktune::tool {

/// Number of <svg> plots on an op page and on an index page (the HTML test checks these).
inline constexpr int op_page_plots = 4;
inline constexpr int index_page_plots = 1;

/// The chosen variant's time on a shape (its retest time when the band came from the retest, else its
/// sweep time); nullopt when there is no correct winner.
std::optional<double> best_time_us(const ShapeResult& s);

/// The empty kernel's time of the run (references "empty_kernel"); nullopt when the results have none.
std::optional<double> empty_kernel_us(const Selection& s);

/// 100 * same-size copy time / best time: how close the chosen variant is to a plain copy of the same
/// bytes; nullopt when the results have no copy for the shape or no best time.
std::optional<double> pct_of_same_size_copy(const ShapeResult& s);

/// One index row: an op's dtype against the performance targets (targets.hpp).
struct DTypeSummary {
  std::size_t shapes = 0, excluded = 0;
  std::string general;
  std::optional<double> geomean_speedup;           ///< over S, shapes where both are timed alike
  std::optional<double> min_pct_copy_large;        ///< lowest % of copy ceiling, bytes >= large_shape_bytes
  std::optional<double> min_pct_same_size_large;   ///< lowest % of same-size copy, same shapes
  std::optional<double> max_over_empty_small;      ///< largest best / empty kernel, tokens <= small_shape_tokens (information)
  std::optional<double> max_over_same_size_small;  ///< largest best / same-size copy, same shapes (the target)
};
/// `s` gives the empty kernel time (references "empty_kernel"); every field is nullopt where no shape
/// of `d` has what it needs.
DTypeSummary summarise(const Selection& s, const DTypeResult& d);

std::string op_markdown(const LoadedResults& r);
std::string op_html(const LoadedResults& r);
/// `upstream`: pages beside the results, relative to the GPU's folder (upstream/*.md, written by
/// bench/upstream's ktune_vs_flashinfer), which the index links to.
/// The index's section on how the tables answer shapes they did not select on (report_dispatch.cpp), in both
/// forms: the rules' comparison refits every rule many times over, so `ktune report` computes it once per GPU and
/// hands it to both pages. Empty when no op and dtype has two selection shapes.
struct DispatchSection {
  std::string markdown, html;
};
DispatchSection dispatch_section(const std::vector<const LoadedResults*>& ops);
/// `dispatch`: the section computed by dispatch_section(ops); null: computed here.
std::string index_markdown(const std::string& slug, const std::vector<const LoadedResults*>& ops,
                           const std::vector<std::string>& upstream = {}, const DispatchSection* dispatch = nullptr);
std::string index_html(const std::string& slug, const std::vector<const LoadedResults*>& ops,
                       const std::vector<std::string>& upstream = {}, const DispatchSection* dispatch = nullptr);

/// Text made safe for an HTML page, and for a markdown table cell ('|' escaped, newlines as spaces).
std::string html_escape(const std::string& s);
std::string md_escape(const std::string& s);

/// The command that re-runs one shape for S and `id` on the benchmark binary.
std::string reproduce_command(const std::string& op, const std::string& dtype, const std::string& shape,
                              const std::string& id);

}  // namespace ktune::tool
