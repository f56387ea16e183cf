// tools/ktune/report.hpp: reports/<gpu>/<op>.{md,html} and reports/<gpu>/index.{md,html}.
//
// Generated from the results files only (never from the clock or the raw files), so regenerating
// from the same results gives the same bytes. The HTML is self-contained: inline CSS and inline SVG,
// no script, no external URL.
#pragma once

#include <string>
#include <vector>

#include "tables.hpp"

namespace ktune::tool {

/// Number of <svg> plots on an op page and on an index page (the HTML test checks these).
inline constexpr int op_page_plots = 4;
inline constexpr int index_page_plots = 1;

std::string op_markdown(const LoadedResults& r);
std::string op_html(const LoadedResults& r);
std::string index_markdown(const std::string& slug, const std::vector<const LoadedResults*>& ops);
std::string index_html(const std::string& slug, const std::vector<const LoadedResults*>& ops);

/// The command that re-runs one shape for S and `id` on the benchmark binary.
std::string reproduce_command(const std::string& op, const std::string& dtype, const std::string& shape,
                              const std::string& id);

}  // namespace ktune::tool
