// tools/ktune/report_op.cpp: an op's page on one GPU, reports/<gpu>/<op>.{md,html}: the device, the winners
// per dtype and shape, the plots, the profile, search and run-to-run sections, the excluded variants, the cost.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <tuple>

#include "io.hpp"
#include "profile_section.hpp"
#include "report_detail.hpp"
#include "stability.hpp"
#include "target_misses.hpp"

namespace ktune::tool {

using namespace detail;

namespace {

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
  // The parts of the gate and the checks, by name.
  std::string parts;
  for (const auto& [k, v] : e)
    if (is_part_key(k)) parts += fmt::format("{}{} {} s", parts.empty() ? "" : ", ", part_label(k), sig3(std::strtod(v.c_str(), nullptr)));
  if (!parts.empty()) line += "; within them: " + parts;
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

/// A setting of the search as its results file recorded it; a search recorded before 2026-11-27 ran with
/// `before`, the value every search had until then.
double setting(const SearchSummary& x, const char* name, double before) {
  const auto it = x.settings.find(name);
  return it != x.settings.end() ? it->second : before;
}

/// The halving search's account, one sentence (empty for exhaustive sweeps).
std::string search_sentence(const Selection& s) {
  if (!s.search) return {};
  const SearchSummary& x = *s.search;
  const double retries = setting(x, "noise_retries", 2);
  return fmt::format("Halving search: {} screens passed the gate; {} were timed again because their spread was out of line "
                     "with their shape's other variants (above {:g}% and above {:g}x the shape's median spread), before they "
                     "could rank or drop a variant; {} stayed out of line after {:g} {} and were kept among the finalists "
                     "(a variant leaves them only on a clean screen); {} stopped early, measured above {:g}x the shape's best "
                     "checked median (by their probe, a single call, where it took over {:g} us; else, in searches since "
                     "2026-11-27, by their first three graph replays), too slow to reach the finalists; {} finalists were "
                     "timed in up to {:g} interleaved rounds of {:g} samples ({:g} after a noisy screen).",
                     x.screened, x.remeasured, 100 * setting(x, "noise_abs", 0.10), setting(x, "noise_rel", 4),
                     x.still_noisy, retries, retries == 1 ? "retry" : "retries", x.pruned, setting(x, "prune_ratio", 1.3),
                     setting(x, "prune_min_us", 50), x.finalists, setting(x, "rounds", 7), setting(x, "tight_samples", 10),
                     setting(x, "loose_samples", 20)) +
         (x.guided_out > 0 ? fmt::format(" {} (variant, shape) pairs were not screened: the shape was guided by its anchor "
                                         "(the shape of the same token count at the middle width, screened in full), where "
                                         "those variants were more than {:g}x the best.",
                                         x.guided_out, setting(x, "guide_ratio", 1.3)) +
                                 (setting(x, "anchor_guide_ratio", 0) > 0
                                      ? fmt::format(" The anchors were paired by token count (1 and 16, 128 and 512, ...): "
                                                    "the second of each pair was guided by the first, at {:g}x, and the "
                                                    "shapes it guided screened only what it screened.",
                                                    setting(x, "anchor_guide_ratio", 0))
                                      : std::string()) +
                                 (setting(x, "dtype_guide_ratio", 0) > 0
                                      ? fmt::format(" The dtypes of one element size guided one another: bf16, searched "
                                                    "after fp16, screened at each shape only what fp16 found there within "
                                                    "{:g}x (and S, the incumbent, fp16's best geometric means).",
                                                    setting(x, "dtype_guide_ratio", 0))
                                      : std::string())
                           : std::string());
}

std::string banner(const LoadedResults& r, const char* what) {
  return fmt::format("Generated by `ktune report` (ktune {}) from {} ({}). Do not edit: regenerate with `ktune report`. {}",
                     KTUNE_TOOL_VERSION, r.label, r.hash, what);
}

}  // namespace

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
  o += targets_markdown(s);  // target_misses.hpp: the missed targets, each with its reason and next structure
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
                   any_same_size ? "% of copy (ceiling, same-size)" : "% of copy ceiling", cats, pct, {{large_shape_min_pct_copy_ceiling, large_shape_target_label()}, {100.0, ""}}, x_label);
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
  body += targets_html(s);
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

}  // namespace ktune::tool
