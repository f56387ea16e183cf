#include "report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "io.hpp"
#include "profile_section.hpp"
#include "stability.hpp"

namespace ktune::tool {

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string md_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else o += c;
  }
  return o;
}

namespace {

const char* const dtype_order[] = {"fp32", "fp16", "bf16"};
const char* dtype_color(const std::string& d) {
  if (d == "fp32") return "#4e79a7";
  if (d == "fp16") return "#f28e2b";
  return "#59a14f";
}

/// The lighter shade of a dtype's colour, for its second series in a plot.
const char* dtype_light_color(const std::string& d) {
  if (d == "fp32") return "#a0cbe8";
  if (d == "fp16") return "#ffbe7d";
  return "#8cd17d";
}

/// Times of a and b on one footing: both retest times when both were retested, else both sweep times.
std::optional<std::pair<double, double>> pair_times(const ShapeResult& s, const std::string& a, const std::string& b) {
  const VariantResult* va = s.find(a);
  const VariantResult* vb = s.find(b);
  if (!va || !vb || va->verdict != Verdict::ok || vb->verdict != Verdict::ok) return std::nullopt;
  if (va->retest && vb->retest) return std::make_pair(va->retest->median_us, vb->retest->median_us);
  if (va->sweep && vb->sweep) return std::make_pair(va->sweep->median_us, vb->sweep->median_us);
  return std::nullopt;
}

const Measure* best_measure(const ShapeResult& s, const std::string& id) {
  const VariantResult* v = s.find(id);
  if (!v || v->verdict != Verdict::ok) return nullptr;
  if (s.band_source == "retest" && v->retest) return &*v->retest;
  return v->sweep ? &*v->sweep : nullptr;
}

std::optional<double> counter(const Measure* m, const char* name) {
  if (!m) return std::nullopt;
  auto it = m->counters.find(name);
  if (it == m->counters.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

std::string env(const Selection& s, const char* k) {
  auto it = s.environment.find(k);
  return it == s.environment.end() || it->second.empty() ? "unknown" : it->second;
}

/// Shape keys across dtypes in (width, tokens) order.
std::vector<const ShapeResult*> shape_axis(const Selection& s) {
  std::map<std::tuple<std::int64_t, std::int64_t, std::string>, const ShapeResult*> keys;
  for (const DTypeResult& d : s.dtypes)
    for (const ShapeResult& sh : d.shapes) keys.emplace(std::make_tuple(sh.width, sh.tokens, sh.key), &sh);
  std::vector<const ShapeResult*> out;
  for (auto& [k, v] : keys) out.push_back(v);
  return out;
}

const ShapeResult* shape_in(const DTypeResult& d, const std::string& key) {
  for (const ShapeResult& s : d.shapes)
    if (s.key == key) return &s;
  return nullptr;
}

std::string short_label(const Selection& s, const ShapeResult& sh) {
  return fmt::format("{}/{}", sh.tokens, sh.width);
  (void)s;
}

// ---- SVG ------------------------------------------------------------------------------------------

struct Series {
  std::string name, color;
  std::vector<std::optional<double>> values;  // one per category
};

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

/// The chosen θ per shape: one row per (dtype, parameter), one column per shape, the value in each cell
/// and its shade by the value's rank among the values chosen for that parameter.
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

// ---- shared content -------------------------------------------------------------------------------

struct Row {
  std::string dtype, shape, winner, reason, band, band_source, reproduce;
  std::optional<double> s_us, best_us, speedup, pct_copy, pct_same_size, general_us;
  std::int64_t bytes = 0;
};

std::vector<Row> rows_of(const Selection& sel) {
  std::vector<Row> rows;
  for (const DTypeResult& d : sel.dtypes)
    for (const ShapeResult& sh : d.shapes) {
      Row r;
      r.dtype = d.dtype;
      r.shape = sh.key;
      r.bytes = sh.bytes;
      r.winner = sh.winner.empty() ? "(none)" : sh.winner;
      r.reason = sh.reason;
      r.band = fixed(100 * sh.noise_band, 1) + "%";
      r.band_source = sh.band_source;
      if (const VariantResult* o = sh.find("original"); o && o->verdict == Verdict::ok)
        r.s_us = o->retest ? o->retest->median_us : (o->sweep ? std::optional<double>(o->sweep->median_us) : std::nullopt);
      const Measure* m = best_measure(sh, sh.winner);
      r.best_us = best_time_us(sh);
      r.pct_copy = counter(m, "pct_copy");
      r.pct_same_size = pct_of_same_size_copy(sh);
      if (auto p = pair_times(sh, "original", sh.winner)) r.speedup = p->first / p->second;
      if (!d.general.id.empty())
        if (const VariantResult* g = sh.find(d.general.id); g && g->verdict == Verdict::ok)
          r.general_us = (sh.band_source == "retest" && g->retest) ? g->retest->median_us : g->sweep->median_us;
      r.reproduce = reproduce_command(sel.op, d.dtype, sh.key, sh.winner.empty() ? "original" : sh.winner);
      rows.push_back(std::move(r));
    }
  return rows;
}

std::string opt(const std::optional<double>& v, bool percent_sign = false) {
  if (!v) return "–";
  return sig3(*v) + (percent_sign ? "%" : "");
}

std::string opt_x(const std::optional<double>& v) { return v ? fixed(*v, 2) + "x" : "–"; }

struct Cost {
  std::size_t sweep_rows = 0, retest_rows = 0, excluded = 0;
  double kernel_seconds = 0;  ///< Σ median × samples × batch: GPU time spent inside timed kernels
};

Cost cost_of(const Selection& sel) {
  Cost c;
  for (const DTypeResult& d : sel.dtypes) {
    c.excluded += d.excluded.size();
    for (const ShapeResult& sh : d.shapes)
      for (const VariantResult& v : sh.variants)
        for (const auto* m : {v.sweep ? &*v.sweep : nullptr, v.retest ? &*v.retest : nullptr}) {
          if (!m) continue;
          (m == (v.sweep ? &*v.sweep : nullptr) ? c.sweep_rows : c.retest_rows)++;
          auto b = m->counters.find("batch");
          const double batch = b != m->counters.end() && b->second >= 1 ? b->second : 1.0;
          c.kernel_seconds += m->median_us * 1e-6 * static_cast<double>(m->samples) * batch;
        }
  }
  return c;
}

/// The tune's GPU step as the run's context recorded it (all ops of that run, not this op alone), or
/// nothing for results selected before it was recorded.
std::string tune_line(const Selection& s) {
  const auto& e = s.environment;
  const auto get = [&](const char* k) { return e.count(k) ? e.at(k) : std::string(); };
  const auto num = [&](const char* k) { return sig3(std::strtod(get(k).c_str(), nullptr)); };
  if (get("measure_wall_s").empty()) return {};
  const std::string slices = get("slices").empty() ? "1" : get("slices");
  std::string line = fmt::format("Tune (the whole run, every op in it): {} s of wall time on {} GPU process(es)",
                                 num("measure_wall_s"), slices);
  if (!get("phase_timing_s").empty())
    line += fmt::format("; prepare {} s, gate {} s, timing {} s, verify {} s{}", num("phase_prepare_s"), num("phase_gate_s"),
                        num("phase_timing_s"), num("phase_verify_s"), slices == "1" ? "" : " (summed over the processes)");
  if (!get("prep_threads").empty()) line += fmt::format("; inputs and references prepared ahead on {} host threads", get("prep_threads"));
  return line;
}

std::vector<std::string> build_lines(const Selection& sel) {
  std::vector<std::string> out;
  if (!sel.build.is_object()) return out;
  for (const auto& [k, v] : sel.build.items()) {
    if (v.is_number_float()) out.push_back(fmt::format("{}: {}", k, sig3(v.get<double>())));
    else if (v.is_number() || v.is_boolean()) out.push_back(fmt::format("{}: {}", k, v.dump()));
    else if (v.is_string()) out.push_back(fmt::format("{}: {}", k, v.get<std::string>()));
    else if (v.is_array()) out.push_back(fmt::format("{}: {} entries", k, v.size()));
  }
  return out;
}

/// The halving search's account, one sentence (empty for exhaustive sweeps).
std::string search_sentence(const Selection& s) {
  if (!s.search) return {};
  const SearchSummary& x = *s.search;
  return fmt::format("Halving search: {} screens passed the gate; {} were timed again because their spread was out of line "
                     "with their shape's other variants (above 10% and above 4x the shape's median spread), before they could "
                     "rank or drop a variant; {} stayed out of line after two retries and were kept among the finalists (a "
                     "variant leaves them only on a clean screen); {} finalists were timed in interleaved rounds.",
                     x.screened, x.remeasured, x.still_noisy, x.finalists);
}

std::string banner(const LoadedResults& r, const char* what) {
  return fmt::format("Generated by `ktune report` (ktune {}) from {} ({}). Do not edit: regenerate with `ktune report`. {}",
                     KTUNE_TOOL_VERSION, r.label, r.hash, what);
}

}  // namespace

std::string reproduce_command(const std::string& op, const std::string& dtype, const std::string& shape,
                              const std::string& id) {
  std::string escaped;
  for (char c : id) {
    if (c == '.') escaped += "\\.";
    else escaped += c;
  }
  const std::string ids = id == "original" ? "original" : "(original|" + escaped + ")";
  return fmt::format("build/bench/ktune_bench --ops {} --dtypes {} --shapes '{}' --variants '^{}$'", op, dtype, shape, ids);
}

// ---- markdown -------------------------------------------------------------------------------------

std::string op_markdown(const LoadedResults& r) {
  const Selection& s = r.selection;
  std::string o = fmt::format("# {} on {}\n\n<!-- {} -->\n\n", s.op, s.gpu, banner(r, ""));
  o += fmt::format("- Device: {} (sm_{}, {} SMs, L2 {} bytes), driver {}, CUDA runtime {}\n", s.gpu, s.arch, env(s, "sms"),
                   env(s, "l2_bytes"), env(s, "driver_version"), env(s, "cuda_runtime_version"));
  o += fmt::format("- Measured {} at commit {} with ktune {}; cold L2: {}\n", env(s, "date"), env(s, "git_commit"),
                   env(s, "ktune_version"), env(s, "cold_l2"));
  o += fmt::format("- Copy ceiling: {} GB/s (memcpy {}, copy kernel {}); empty kernel: {} us\n", env(s, "copy_ceiling_gbps"),
                   env(s, "copy_memcpy_gbps"), env(s, "copy_kernel_gbps"), env(s, "empty_kernel_us"));
  o += fmt::format("- Space hash {}; noise band per shape = max(1%, the winner's spread in the interleaved retest)\n",
                   s.space_hash);
  o += fmt::format("- The HTML page ({}.html) has the plots.\n\n", s.op);
  const std::vector<Row> rows = rows_of(s);
  for (const DTypeResult& d : s.dtypes) {
    o += fmt::format("## {}\n\n", d.dtype);
    if (d.general.id.empty()) o += "General configuration: none (no variant is correct on every shape).\n\n";
    else
      o += fmt::format("General configuration: `{}` (geometric mean {} us over {} shapes).\n\n", d.general.id,
                       sig3(d.general.geomean_us), d.general.shapes);
    o += "| shape | MB | S (us) | best (us) | speedup over S | % of copy | % of same-size copy | general (us) | winner | noise band | why | reproduce |\n";
    o += "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | --- |\n";
    for (const Row& row : rows) {
      if (row.dtype != d.dtype) continue;
      o += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | `{}` | {} ({}) | {} | `{}` |\n", row.shape,
                       fixed(row.bytes / 1e6, 1), opt(row.s_us), opt(row.best_us), opt_x(row.speedup), opt(row.pct_copy, true),
                       opt(row.pct_same_size, true), opt(row.general_us), row.winner, row.band, row.band_source, md_escape(row.reason), row.reproduce);
    }
    o += "\n";
  }
  o += profile_markdown(s);  // profile_section.hpp: empty unless the results hold a profile
  if (s.search) o += "## Search\n\n" + search_sentence(s) + "\n\n";
  o += stability_markdown(s);  // stability.hpp: empty unless the results hold a run-to-run section
  o += "## Excluded variants\n\n";
  bool any = false;
  for (const DTypeResult& d : s.dtypes)
    for (const Excluded& e : d.excluded) {
      if (!any) o += "| dtype | variant | verdict | shapes | first error |\n| --- | --- | --- | ---: | --- |\n";
      any = true;
      o += fmt::format("| {} | `{}` | {} | {} | {} |\n", d.dtype, e.id, to_string(e.verdict), e.shapes.size(), md_escape(e.error));
    }
  if (!any) o += "None: every variant passed the correctness gate and the device check on every shape.\n";
  const Cost c = cost_of(s);
  o += "\n## Cost\n\n";
  for (const std::string& l : build_lines(s)) o += "- Build " + l + "\n";
  if (build_lines(s).empty()) o += "- Build: no build record (build/ktune-build.json) was given to `ktune select`\n";
  o += fmt::format("- Run: {} sweep and {} retest measurements, {} excluded variants; {} s of GPU time inside timed kernels\n",
                   c.sweep_rows, c.retest_rows, c.excluded, sig3(c.kernel_seconds));
  if (const std::string t = tune_line(s); !t.empty()) o += "- " + t + "\n";
  o += "- Inputs:";
  for (const Source& src : s.sources) o += fmt::format(" {} ({}, {}, {})", src.file, src.mode, src.date, src.hash);
  o += "\n";
  return o;
}

// ---- HTML -----------------------------------------------------------------------------------------

namespace {
const char* const css =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}"
    "table{border-collapse:collapse;margin:8px 0 20px 0;font-size:12px}"
    "th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}"
    "th{background:#f3f3f3}td.l,th.l{text-align:left}code{font-size:11px}"
    "svg{display:block;margin:12px 0;border:1px solid #eee}";

std::string page(const std::string& title, const std::string& body, const std::string& banner_text) {
  return fmt::format("<!DOCTYPE html>\n<!-- {} -->\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
                     "<style>{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
                     html_escape(banner_text), html_escape(title), css, body);
}
}  // namespace

std::string op_html(const LoadedResults& r) {
  const Selection& s = r.selection;
  const std::vector<const ShapeResult*> axis = shape_axis(s);
  std::vector<std::string> cats;
  for (const ShapeResult* sh : axis) cats.push_back(sh->key);
  std::vector<Series> speedup, pct, general;
  const bool any_same_size = std::any_of(s.dtypes.begin(), s.dtypes.end(), [](const DTypeResult& d) {
                               return std::any_of(d.shapes.begin(), d.shapes.end(),
                                                  [](const ShapeResult& sh) { return pct_of_same_size_copy(sh).has_value(); });
                             });
  for (const DTypeResult& d : s.dtypes) {
    Series a{d.dtype, dtype_color(d.dtype), {}}, b = a, g = a;
    Series same{d.dtype + " same-size", dtype_light_color(d.dtype), {}};
    if (any_same_size) b.name = d.dtype + " ceiling";
    for (const ShapeResult* key : axis) {
      const ShapeResult* sh = shape_in(d, key->key);
      std::optional<double> sp, pc, ps, gr;
      if (sh && !sh->winner.empty()) {
        if (auto p = pair_times(*sh, "original", sh->winner)) sp = p->first / p->second;
        pc = counter(best_measure(*sh, sh->winner), "pct_copy");
        ps = pct_of_same_size_copy(*sh);
        if (!d.general.id.empty())
          if (auto p = pair_times(*sh, d.general.id, sh->winner)) gr = p->first / p->second;
      }
      a.values.push_back(sp);
      b.values.push_back(pc);
      same.values.push_back(ps);
      g.values.push_back(gr);
    }
    speedup.push_back(std::move(a));
    pct.push_back(std::move(b));
    if (any_same_size) pct.push_back(std::move(same));
    general.push_back(std::move(g));
  }
  const std::string x_label = fmt::format("shape ({})", s.tokens_dim + ", " + s.width_dim);
  std::string body = fmt::format("<h1>{} on {}</h1>\n", html_escape(s.op), html_escape(s.gpu));
  body += fmt::format("<p>Device {} (sm_{}, {} SMs), driver {}, CUDA runtime {}; measured {} at commit {} with ktune {}; "
                      "cold L2: {}. Copy ceiling {} GB/s (memcpy {}, copy kernel {}); empty kernel {} us. Space hash {}. "
                      "Noise band per shape = max(1%, the winner's spread in the interleaved retest).</p>\n",
                      html_escape(s.gpu), s.arch, html_escape(env(s, "sms")), html_escape(env(s, "driver_version")),
                      html_escape(env(s, "cuda_runtime_version")), html_escape(env(s, "date")),
                      html_escape(env(s, "git_commit")), html_escape(env(s, "ktune_version")), html_escape(env(s, "cold_l2")),
                      html_escape(env(s, "copy_ceiling_gbps")), html_escape(env(s, "copy_memcpy_gbps")),
                      html_escape(env(s, "copy_kernel_gbps")), html_escape(env(s, "empty_kernel_us")), html_escape(s.space_hash));
  body += "<h2>Plots</h2>\n";
  body += svg_bars("Speedup of the chosen variant over S", "S time / chosen time", cats, speedup, {{1.0, "S"}}, x_label);
  // Without same-size copies in the results the plot keeps one series per dtype, named by the dtype.
  body += svg_bars(any_same_size ? "Chosen variant: % of the copy ceiling and % of the same-size copy"
                                 : "Chosen variant: % of the copy ceiling",
                   any_same_size ? "% of copy (ceiling, same-size)" : "% of copy ceiling", cats, pct, {{95.0, "95%"}, {100.0, ""}}, x_label);
  body += svg_bars("General configuration vs per-shape best", "general time / best time", cats, general, {{1.0, "best"}}, x_label);
  body += svg_theta(s, axis);

  const std::vector<Row> rows = rows_of(s);
  for (const DTypeResult& d : s.dtypes) {
    body += fmt::format("<h2>{}</h2>\n", d.dtype);
    if (d.general.id.empty()) body += "<p>General configuration: none (no variant is correct on every shape).</p>\n";
    else
      body += fmt::format("<p>General configuration: <code>{}</code> (geometric mean {} us over {} shapes).</p>\n",
                          html_escape(d.general.id), sig3(d.general.geomean_us), d.general.shapes);
    body += "<table>\n<tr><th class=\"l\">shape</th><th>MB</th><th>S (us)</th><th>best (us)</th><th>speedup over S</th>"
            "<th>% of copy</th><th>% of same-size copy</th><th>general (us)</th><th class=\"l\">winner</th><th>noise band</th><th class=\"l\">why</th>"
            "<th class=\"l\">reproduce</th></tr>\n";
    for (const Row& row : rows) {
      if (row.dtype != d.dtype) continue;
      body += fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                          "<td class=\"l\"><code>{}</code></td><td>{} ({})</td><td class=\"l\">{}</td>"
                          "<td class=\"l\"><code>{}</code></td></tr>\n",
                          html_escape(row.shape), fixed(row.bytes / 1e6, 1), opt(row.s_us), opt(row.best_us),
                          opt_x(row.speedup), opt(row.pct_copy, true), opt(row.pct_same_size, true), opt(row.general_us),
                          html_escape(row.winner),
                          row.band, row.band_source, html_escape(row.reason), html_escape(row.reproduce));
    }
    body += "</table>\n";
  }
  body += profile_html(s);  // profile_section.hpp: empty unless the results hold a profile
  if (s.search) body += "<h2>Search</h2>\n<p>" + html_escape(search_sentence(s)) + "</p>\n";
  body += stability_html(s);  // stability.hpp: empty unless the results hold a run-to-run section
  body += "<h2>Excluded variants</h2>\n";
  bool any = false;
  for (const DTypeResult& d : s.dtypes)
    for (const Excluded& e : d.excluded) {
      if (!any) body += "<table>\n<tr><th class=\"l\">dtype</th><th class=\"l\">variant</th><th class=\"l\">verdict</th><th>shapes</th><th class=\"l\">first error</th></tr>\n";
      any = true;
      body += fmt::format("<tr><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>\n",
                          d.dtype, html_escape(e.id), to_string(e.verdict), e.shapes.size(), html_escape(e.error));
    }
  body += any ? "</table>\n" : "<p>None: every variant passed the correctness gate and the device check on every shape.</p>\n";
  const Cost c = cost_of(s);
  body += "<h2>Cost</h2>\n<ul>\n";
  const auto build = build_lines(s);
  for (const std::string& l : build) body += "<li>Build " + html_escape(l) + "</li>\n";
  if (build.empty()) body += "<li>Build: no build record (build/ktune-build.json) was given to <code>ktune select</code></li>\n";
  body += fmt::format("<li>Run: {} sweep and {} retest measurements, {} excluded variants; {} s of GPU time inside timed kernels</li>\n",
                      c.sweep_rows, c.retest_rows, c.excluded, sig3(c.kernel_seconds));
  if (const std::string t = tune_line(s); !t.empty()) body += "<li>" + html_escape(t) + "</li>\n";
  for (const Source& src : s.sources)
    body += fmt::format("<li>Input {} ({}, {}, {})</li>\n", html_escape(src.file), src.mode, html_escape(src.date), src.hash);
  body += "</ul>\n";
  return page(s.op + " on " + s.gpu, body, banner(r, ""));
}

// ---- index ----------------------------------------------------------------------------------------

std::optional<double> best_time_us(const ShapeResult& s) {
  const Measure* m = best_measure(s, s.winner);
  return m ? std::optional<double>(m->median_us) : std::nullopt;
}

std::optional<double> pct_of_same_size_copy(const ShapeResult& s) {
  const auto best = best_time_us(s);
  if (!s.copy_same_size_us || !best || !(*best > 0) || !std::isfinite(*s.copy_same_size_us)) return std::nullopt;
  return 100 * *s.copy_same_size_us / *best;
}

DTypeSummary summarise(const Selection& sel, const DTypeResult& d) {
  const auto lowest = [](std::optional<double>& acc, std::optional<double> v) {
    if (v) acc = acc ? std::min(*acc, *v) : *v;
  };
  const auto largest = [](std::optional<double>& acc, std::optional<double> v) {
    if (v) acc = acc ? std::max(*acc, *v) : *v;
  };
  std::optional<double> empty_us;
  if (auto it = sel.references.find("empty_kernel");
      it != sel.references.end() && it->second.time_us > 0 && std::isfinite(it->second.time_us))
    empty_us = it->second.time_us;
  DTypeSummary s;
  double log_sum = 0;
  int n = 0;
  for (const ShapeResult& sh : d.shapes) {
    ++s.shapes;
    if (auto p = pair_times(sh, "original", sh.winner)) {
      log_sum += std::log(p->first / p->second);
      ++n;
    }
    const auto best = best_time_us(sh);
    if (sh.bytes >= large_shape_bytes) {
      lowest(s.min_pct_copy_large, counter(best_measure(sh, sh.winner), "pct_copy"));
      lowest(s.min_pct_same_size_large, pct_of_same_size_copy(sh));
    }
    if (sh.tokens <= small_shape_tokens && best) {
      if (empty_us) largest(s.max_over_empty_small, *best / *empty_us);
      if (sh.copy_same_size_us && *sh.copy_same_size_us > 0 && std::isfinite(*sh.copy_same_size_us))
        largest(s.max_over_same_size_small, *best / *sh.copy_same_size_us);
    }
  }
  if (n) s.geomean_speedup = std::exp(log_sum / n);
  s.excluded = d.excluded.size();
  s.general = d.general.id;
  return s;
}

std::string index_markdown(const std::string& slug, const std::vector<const LoadedResults*>& ops) {
  std::string o = fmt::format("# ktune reports: {}\n\n", slug);
  o += fmt::format("<!-- Generated by `ktune report` (ktune {}) from the results files of {}. Do not edit. -->\n\n",
                   KTUNE_TOOL_VERSION, slug);
  o += "Shapes >= 64 MB should reach 95% of the copy ceiling and shapes with tokens <= 16 should stay within 1.5x "
       "of an empty kernel (issue 3); the same-size copy, timed like the variants, is the floor at each size. "
       "– where no shape qualifies or the results have no such time.\n\n";
  o += "| op | dtype | shapes | geometric-mean speedup over S | lowest % of copy (shapes >= 64 MB) "
       "| lowest % of same-size copy (shapes >= 64 MB) | largest best / empty kernel (tokens <= 16) "
       "| largest best / same-size copy (tokens <= 16) | general configuration | excluded variants |\n";
  o += "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n";
  for (const LoadedResults* r : ops)
    for (const DTypeResult& d : r->selection.dtypes) {
      const DTypeSummary s = summarise(r->selection, d);
      o += fmt::format("| [{}]({}.md) | {} | {} | {} | {} | {} | {} | {} | `{}` | {} |\n", r->selection.op, r->selection.op,
                       d.dtype, s.shapes, opt_x(s.geomean_speedup), opt(s.min_pct_copy_large, true),
                       opt(s.min_pct_same_size_large, true), opt_x(s.max_over_empty_small), opt_x(s.max_over_same_size_small),
                       s.general.empty() ? "none" : s.general, s.excluded);
    }
  bool any_search = false;
  for (const LoadedResults* r : ops) any_search = any_search || r->selection.search.has_value();
  if (any_search) {
    o += "\nRe-measured screens (a spread out of line with the shape's other variants, timed again before it could rank or "
         "drop a variant):";
    for (const LoadedResults* r : ops)
      if (r->selection.search)
        o += fmt::format(" {} {} of {} ({} still out of line, kept as finalists);", r->selection.op, r->selection.search->remeasured,
                         r->selection.search->screened, r->selection.search->still_noisy);
    o.back() = '.';
    o += "\n";
  }
  o += stability_index_markdown(ops);
  return o;
}

std::string index_html(const std::string& slug, const std::vector<const LoadedResults*>& ops) {
  std::vector<std::string> cats;
  std::vector<Series> series;
  for (const char* dt : dtype_order) series.push_back({dt, dtype_color(dt), {}});
  std::string table = "<table>\n<tr><th class=\"l\">op</th><th class=\"l\">dtype</th><th>shapes</th><th>geometric-mean speedup over S</th>"
                      "<th>lowest % of copy (shapes &gt;= 64 MB)</th><th>lowest % of same-size copy (shapes &gt;= 64 MB)</th>"
                      "<th>largest best / empty kernel (tokens &lt;= 16)</th><th>largest best / same-size copy (tokens &lt;= 16)</th>"
                      "<th class=\"l\">general configuration</th><th>excluded variants</th></tr>\n";
  for (const LoadedResults* r : ops) {
    cats.push_back(r->selection.op);
    for (Series& se : series) {
      const DTypeResult* d = r->selection.find(se.name);
      se.values.push_back(d ? summarise(r->selection, *d).geomean_speedup : std::nullopt);
    }
    for (const DTypeResult& d : r->selection.dtypes) {
      const DTypeSummary s = summarise(r->selection, d);
      table += fmt::format("<tr><td class=\"l\"><a href=\"{}.html\">{}</a></td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
                           "<td>{}</td><td>{}</td><td>{}</td><td class=\"l\"><code>{}</code></td><td>{}</td></tr>\n",
                           html_escape(r->selection.op), html_escape(r->selection.op), d.dtype, s.shapes,
                           opt_x(s.geomean_speedup), opt(s.min_pct_copy_large, true), opt(s.min_pct_same_size_large, true),
                           opt_x(s.max_over_empty_small), opt_x(s.max_over_same_size_small),
                           html_escape(s.general.empty() ? "none" : s.general), s.excluded);
    }
  }
  table += "</table>\n";
  std::string body = fmt::format("<h1>ktune reports: {}</h1>\n", html_escape(slug));
  body += svg_bars("Geometric-mean speedup over S per op", "speedup over S", cats, series, {{1.0, "S"}}, "op");
  body += "<p>Shapes &gt;= 64 MB should reach 95% of the copy ceiling and shapes with tokens &lt;= 16 should stay within "
          "1.5x of an empty kernel (issue 3); the same-size copy, timed like the variants, is the floor at each size. "
          "– where no shape qualifies or the results have no such time.</p>\n";
  body += table;
  std::string searched;
  for (const LoadedResults* r : ops)
    if (r->selection.search)
      searched += fmt::format(" {} {} of {} ({} still out of line, kept as finalists);", html_escape(r->selection.op),
                              r->selection.search->remeasured, r->selection.search->screened, r->selection.search->still_noisy);
  if (!searched.empty()) {
    searched.back() = '.';
    body += "<p>Re-measured screens (a spread out of line with the shape's other variants, timed again before it could rank "
            "or drop a variant):" + searched + "</p>\n";
  }
  body += stability_index_html(ops);
  return page("ktune reports: " + slug, body,
              fmt::format("Generated by `ktune report` (ktune {}) from the results files of {}. Do not edit.", KTUNE_TOOL_VERSION, slug));
}

}  // namespace ktune::tool
