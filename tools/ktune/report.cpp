// tools/ktune/report.cpp: what the report pages share: escaping, the per-shape figures (best time, % of
// the same-size copy), cell formatting, colours, the HTML page frame, the reproduce command.
#include "report.hpp"

#include <fmt/format.h>

#include <cmath>

#include "io.hpp"
#include "report_detail.hpp"

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

namespace detail {

const char* dtype_color(const std::string& d) {
  if (d == "fp32") return "#4e79a7";
  if (d == "fp16") return "#f28e2b";
  return "#59a14f";
}

const char* dtype_light_color(const std::string& d) {
  if (d == "fp32") return "#a0cbe8";
  if (d == "fp16") return "#ffbe7d";
  return "#8cd17d";
}

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

const ShapeResult* shape_in(const DTypeResult& d, const std::string& key) {
  for (const ShapeResult& s : d.shapes)
    if (s.key == key) return &s;
  return nullptr;
}

std::string opt(const std::optional<double>& v, bool percent_sign) {
  if (!v) return "–";
  return sig3(*v) + (percent_sign ? "%" : "");
}

std::string opt_x(const std::optional<double>& v) { return v ? fixed(*v, 2) + "x" : "–"; }

namespace {
const char* const css =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}"
    "table{border-collapse:collapse;margin:8px 0 20px 0;font-size:12px}"
    "th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}"
    "th{background:#f3f3f3}td.l,th.l{text-align:left}code{font-size:11px}"
    "svg{display:block;margin:12px 0;border:1px solid #eee}";
}  // namespace

std::string page(const std::string& title, const std::string& body, const std::string& banner_text) {
  return fmt::format("<!DOCTYPE html>\n<!-- {} -->\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
                     "<style>{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
                     html_escape(banner_text), html_escape(title), css, body);
}

}  // namespace detail

using namespace detail;

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

std::optional<double> best_time_us(const ShapeResult& s) {
  const Measure* m = best_measure(s, s.winner);
  return m ? std::optional<double>(m->median_us) : std::nullopt;
}

std::optional<double> empty_kernel_us(const Selection& s) {
  const auto it = s.references.find("empty_kernel");
  if (it == s.references.end() || !(it->second.time_us > 0) || !std::isfinite(it->second.time_us)) return std::nullopt;
  return it->second.time_us;
}

std::optional<double> pct_of_same_size_copy(const ShapeResult& s) {
  const auto best = best_time_us(s);
  if (!s.copy_same_size_us || !best || !(*best > 0) || !std::isfinite(*s.copy_same_size_us)) return std::nullopt;
  return 100 * *s.copy_same_size_us / *best;
}

}  // namespace ktune::tool
