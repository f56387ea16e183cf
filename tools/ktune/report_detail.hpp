// tools/ktune/report_detail.hpp: what the report's files share (report.cpp defines these, report_svg.cpp the
// plots): per-shape figures, cell formatting, colours, the HTML page frame and the SVG plots.
// Internal to the report (report_op.cpp, report_index.cpp); the public interface is report.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report.hpp"

namespace ktune::tool::detail {

const char* dtype_color(const std::string& d);
/// The lighter shade of a dtype's colour, for its second series in a plot.
const char* dtype_light_color(const std::string& d);

/// Times of a and b on one footing: both retest times when both were retested, else both sweep times.
std::optional<std::pair<double, double>> pair_times(const ShapeResult& s, const std::string& a, const std::string& b);
const Measure* best_measure(const ShapeResult& s, const std::string& id);
std::optional<double> counter(const Measure* m, const char* name);
const ShapeResult* shape_in(const DTypeResult& d, const std::string& key);

/// A table cell: three significant digits ("–" for none), or a ratio with two decimals and "x".
std::string opt(const std::optional<double>& v, bool percent_sign = false);
std::string opt_x(const std::optional<double>& v);

/// A self-contained HTML page (inline CSS), the banner as a comment.
std::string page(const std::string& title, const std::string& body, const std::string& banner_text);

struct Series {
  std::string name, color;
  std::vector<std::optional<double>> values;  // one per category
};

std::string svg_bars(const std::string& title, const std::string& y_label, const std::vector<std::string>& categories,
                     const std::vector<Series>& series, const std::vector<std::pair<double, std::string>>& guides,
                     const std::string& x_label);
/// The chosen θ per shape: one row per (dtype, parameter), one column per shape, the value in each cell
/// and its shade by the value's rank among the values chosen for that parameter.
std::string svg_theta(const Selection& sel, const std::vector<const ShapeResult*>& axis);

// ---- sections built once as paragraphs and tables, written as markdown or HTML (stability.cpp) ----

/// A cell: text, an id in code type, or an op linked to its page.
struct Cell {
  enum Kind { text, code, op_link } kind = text;
  std::string s;
  Cell(std::string v, Kind k = text) : kind(k), s(std::move(v)) {}  // implicit: rows are brace lists of strings
};
inline Cell code_cell(std::string v) { return Cell(std::move(v), Cell::code); }

struct Table {
  std::vector<std::string> head;
  std::string align;  ///< 'l' or 'r' per column
  std::vector<std::vector<Cell>> rows;
};

/// A paragraph, or a table when `table.head` is not empty.
struct Part {
  std::string paragraph;
  Table table;
};

std::string md_cell(const Cell& c);
std::string html_cell(const Cell& c);
std::string markdown(const std::vector<Part>& parts);
std::string html(const std::vector<Part>& parts);

}  // namespace ktune::tool::detail
