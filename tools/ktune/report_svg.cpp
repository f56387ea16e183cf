// tools/ktune/report_svg.cpp: the report's plots as inline SVG: grouped bars with guide lines, and the
// chosen θ per shape as a shaded grid.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "io.hpp"
#include "report_detail.hpp"

namespace ktune::tool::detail {

namespace {

std::string short_label(const Selection& s, const ShapeResult& sh) {
  return fmt::format("{}/{}", sh.tokens, sh.width);
  (void)s;
}

}  // namespace

std::string svg_bars(const std::string& title, const std::string& y_label, const std::vector<std::string>& categories,
                     const std::vector<Series>& series, const std::vector<std::pair<double, std::string>>& guides,
                     const std::string& x_label) {
  const int left = 64, right = 16, top = 48, bottom = 92;
  const int group_w = std::max(18, 6 + 8 * static_cast<int>(series.size()));
  int legend_w = 0;  // must match the legend loop at the end
  for (const Series& s : series) legend_w += 24 + 7 * static_cast<int>(s.name.size());
  const int plot_w = std::max({320, group_w * static_cast<int>(categories.size()), legend_w});
  const int plot_h = 240;
  const int width = left + plot_w + right, height = top + plot_h + bottom;
  double vmax = 0;
  for (const Series& s : series)
    for (const auto& v : s.values)
      if (v && std::isfinite(*v)) vmax = std::max(vmax, *v);
  for (const auto& g : guides) vmax = std::max(vmax, g.first);
  if (!(vmax > 0)) vmax = 1;
  // A round axis maximum: 1, 2 or 5 times a power of ten.
  const double mag = std::pow(10.0, std::floor(std::log10(vmax)));
  double axis = mag;
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * mag >= vmax * 1.0001) { axis = f * mag; break; }
  auto y = [&](double v) { return top + plot_h - plot_h * (v / axis); };

  std::string o = fmt::format("<svg role=\"img\" aria-label=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">\n",
                              html_escape(title), width, height, width, height);
  o += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", width, height);
  o += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n", left, html_escape(title));
  for (int i = 0; i <= 4; ++i) {
    const double v = axis * i / 4;
    o += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#dddddd\"/>\n", left, fixed(y(v), 1),
                     left + plot_w, fixed(y(v), 1));
    o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n", left - 4,
                     fixed(y(v) + 3, 1), sig3(v));
  }
  o += fmt::format("<text x=\"12\" y=\"{}\" font-size=\"11\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">{}</text>\n",
                   top + plot_h / 2, top + plot_h / 2, html_escape(y_label));
  const int bar_w = std::max(4, (group_w - 6) / std::max<int>(1, static_cast<int>(series.size())));
  for (std::size_t c = 0; c < categories.size(); ++c) {
    const int gx = left + static_cast<int>(c) * group_w + 3;
    for (std::size_t s = 0; s < series.size(); ++s) {
      const auto& v = series[s].values[c];
      if (!v || !std::isfinite(*v)) continue;
      const double h = std::max(0.0, plot_h * std::min(*v, axis) / axis);
      o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} {}: {}</title></rect>\n",
                       gx + static_cast<int>(s) * bar_w, fixed(top + plot_h - h, 1), bar_w - 1, fixed(h, 1),
                       series[s].color, html_escape(series[s].name), html_escape(categories[c]), sig3(*v));
    }
    const int tx = gx + group_w / 2;
    o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"9\" text-anchor=\"end\" transform=\"rotate(-60 {} {})\">{}</text>\n",
                     tx, top + plot_h + 12, tx, top + plot_h + 12, html_escape(categories[c]));
  }
  for (const auto& [v, label] : guides) {
    o += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/>\n", left,
                     fixed(y(v), 1), left + plot_w, fixed(y(v), 1));
    o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"#c0392b\" text-anchor=\"end\">{}</text>\n",
                     left + plot_w, fixed(y(v) - 3, 1), html_escape(label));
  }
  o += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333333\"/>\n", left, top + plot_h, left + plot_w,
                   top + plot_h);
  o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n", left + plot_w / 2,
                   height - 6, html_escape(x_label));
  int lx = left;  // legend on its own line under the title
  for (const Series& s : series) {
    o += fmt::format("<rect x=\"{}\" y=\"28\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"37\" font-size=\"11\">{}</text>\n",
                     lx, s.color, lx + 14, html_escape(s.name));
    lx += 24 + 7 * static_cast<int>(s.name.size());
  }
  o += "</svg>\n";
  return o;
}

std::string svg_theta(const Selection& sel, const std::vector<const ShapeResult*>& axis) {
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::vector<std::optional<std::int64_t>>>>>> blocks;
  for (const DTypeResult& d : sel.dtypes) {
    std::vector<std::string> names;
    std::map<std::string, std::vector<std::optional<std::int64_t>>> values;
    for (std::size_t c = 0; c < axis.size(); ++c) {
      const ShapeResult* sh = shape_in(d, axis[c]->key);
      if (!sh || sh->winner.empty()) continue;
      for (const auto& [k, v] : parse_id(sh->winner)) {
        if (!values.count(k)) {
          names.push_back(k);
          values[k].assign(axis.size(), std::nullopt);
        }
        values[k][c] = v;
      }
    }
    std::vector<std::pair<std::string, std::vector<std::optional<std::int64_t>>>> rows;
    for (const std::string& n : names) rows.emplace_back(n, values[n]);
    blocks.emplace_back(d.dtype, std::move(rows));
  }
  int nrows = 0;
  for (const auto& b : blocks) nrows += 1 + static_cast<int>(b.second.size());
  const int left = 96, top = 36, cell_w = 46, cell_h = 18, bottom = 70;
  const int width = std::max(420, left + cell_w * static_cast<int>(axis.size()) + 16);
  const int height = top + cell_h * std::max(1, nrows) + bottom;
  std::string o = fmt::format("<svg role=\"img\" aria-label=\"chosen configuration per shape\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">\n",
                              width, height, width, height);
  o += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", width, height);
  o += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">Chosen configuration (θ) per shape</text>\n", 8);
  static const char* shades[] = {"#eef4fb", "#d3e4f3", "#b3d0ea", "#8db9de", "#66a1d2", "#4a8bc4", "#3274b0", "#1f5d96"};
  int row = 0;
  for (const auto& [dtype, rows] : blocks) {
    const int yb = top + row * cell_h;
    o += fmt::format("<text x=\"4\" y=\"{}\" font-size=\"11\" font-weight=\"bold\" fill=\"{}\">{}</text>\n", yb + 13,
                     dtype_color(dtype), dtype);
    ++row;
    for (const auto& [param, vals] : rows) {
      const int yr = top + row * cell_h;
      std::set<std::int64_t> distinct;
      for (const auto& v : vals)
        if (v) distinct.insert(*v);
      std::vector<std::int64_t> order(distinct.begin(), distinct.end());
      o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n", left - 6, yr + 13,
                       html_escape(param));
      for (std::size_t c = 0; c < vals.size(); ++c) {
        if (!vals[c]) continue;
        const auto rank = std::find(order.begin(), order.end(), *vals[c]) - order.begin();
        const std::size_t shade = order.size() <= 1 ? 1 : static_cast<std::size_t>(rank) * 7 / (order.size() - 1);
        const int x = left + static_cast<int>(c) * cell_w;
        o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#ffffff\"/>\n", x, yr,
                         cell_w, cell_h, shades[shade]);
        o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
                         x + cell_w / 2, yr + 13, shade >= 5 ? "#ffffff" : "#000000", *vals[c]);
      }
      ++row;
    }
  }
  const int ya = top + row * cell_h + 10;
  for (std::size_t c = 0; c < axis.size(); ++c) {
    const int tx = left + static_cast<int>(c) * cell_w + cell_w / 2;
    o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"9\" text-anchor=\"end\" transform=\"rotate(-60 {} {})\">{}</text>\n",
                     tx, ya, tx, ya, html_escape(short_label(sel, *axis[c])));
  }
  o += "</svg>\n";
  return o;
}

}  // namespace ktune::tool::detail
