// tools/ktune/profile_section.cpp: the profile of S and the winners in results files and reports; `ktune profile-plan` and `profile-attach`.
#include "profile_section.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <ktune/diagnose.hpp>
#include <ktune/profile/metrics.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "io.hpp"
#include "report.hpp"
#include "results.hpp"
#include "target_misses.hpp"

namespace ktune::tool {

namespace prof = ktune::profile;

// ---- the plan -------------------------------------------------------------------------------------

std::vector<const ShapeResult*> plan_shapes(const DTypeResult& d, const std::set<std::string>& missed) {
  std::vector<const ShapeResult*> pool;
  for (const ShapeResult& s : d.shapes)
    if (!s.winner.empty()) pool.push_back(&s);
  if (pool.empty()) return {};
  std::set<const ShapeResult*> pick;
  // Largest: most bytes; ties to the later shape in (width, tokens) order, i.e. the wider row.
  const ShapeResult* largest = pool.front();
  for (const ShapeResult* s : pool)
    if (s->bytes >= largest->bytes) largest = s;
  pick.insert(largest);
  // Mid: within [64, 256] MB, closest to 128 MB on a log scale (several times the L2 of today's GPUs,
  // where DRAM bytes are comparable to the spec's bytes); ties to the earlier shape.
  const ShapeResult* mid = nullptr;
  double best = 0;
  for (const ShapeResult* s : pool) {
    if (s == largest || s->bytes < 64'000'000 || s->bytes > 256'000'000) continue;
    const double dist = std::fabs(std::log(static_cast<double>(s->bytes) / 128e6));
    if (!mid || dist < best) mid = s, best = dist;
  }
  if (mid) pick.insert(mid);
  // The launch-bound end: T = 1 and T = 16 of the widest row.
  std::int64_t widest = 0;
  for (const ShapeResult* s : pool) widest = std::max(widest, s->width);
  for (const ShapeResult* s : pool)
    if ((s->width == widest && (s->tokens == 1 || s->tokens == 16)) || missed.count(s->key)) pick.insert(s);
  std::vector<const ShapeResult*> out;
  for (const ShapeResult* s : pool)
    if (pick.count(s)) out.push_back(s);
  return out;
}

nlohmann::ordered_json profile_plan(const std::vector<const LoadedResults*>& inputs) {
  nlohmann::ordered_json plan;
  plan["schema"] = profile_plan_schema;
  std::set<std::string> slugs;
  for (const LoadedResults* r : inputs) slugs.insert(r->selection.gpu_slug);
  plan["gpu_slug"] = slugs.size() == 1 ? *slugs.begin() : std::string();
  plan["calls"] = nlohmann::ordered_json::array();
  for (const LoadedResults* r : inputs) {
    std::map<std::string, std::set<std::string>> missed;  // dtype -> shapes that miss a target
    for (const TargetMiss& m : target_misses(r->selection)) missed[m.dtype].insert(m.shape);
    for (const DTypeResult& d : r->selection.dtypes)
      for (const ShapeResult* s : plan_shapes(d, missed[d.dtype])) {
        nlohmann::ordered_json variants = {"original"};
        if (s->winner != "original") variants.push_back(s->winner);
        plan["calls"].push_back({{"op", r->selection.op}, {"dtype", d.dtype}, {"shape", s->key}, {"variants", variants}});
      }
  }
  return plan;
}

// ---- the results section --------------------------------------------------------------------------

nlohmann::ordered_json profile_section(const nlohmann::json& doc, const std::string& source_name,
                                       const std::string& source_hash, const Selection& sel,
                                       std::vector<std::string>& warnings) {
  const auto profiles = doc.find("profiles");
  if (!doc.is_object() || profiles == doc.end() || !profiles->is_array())
    throw ToolError(source_name + ": not a ktune_profile JSON document (no \"profiles\" array)");
  if (const std::string dev = doc.value("device", std::string()); !dev.empty() && dev != sel.gpu)
    throw ToolError(fmt::format("{}: profiled on {}, but {} was tuned on {}", source_name, dev, sel.op, sel.gpu));

  // (dtype, shape, variant) -> the profile entry; a later entry for the same call replaces an earlier one.
  std::map<std::tuple<std::string, std::string, std::string>, const nlohmann::json*> found;
  for (const auto& e : *profiles) {
    const auto& rec = e.at("record");
    if (rec.value("op", std::string()) != sel.op) continue;
    found[{rec.value("dtype", std::string()), rec.value("shape", std::string()), rec.value("variant", std::string())}] = &e;
  }
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  std::set<const nlohmann::json*> used;
  for (const DTypeResult& d : sel.dtypes)
    for (const ShapeResult& s : d.shapes)
      for (const std::string& role : {std::string("original"), std::string("winner")}) {
        const std::string id = role == "original" ? "original" : s.winner;
        if (id.empty() || (role == "winner" && id == "original")) continue;
        const auto it = found.find({d.dtype, s.key, id});
        if (it == found.end()) continue;
        used.insert(it->second);
        const nlohmann::json& e = *it->second;
        const prof::ProfileRecord rec = prof::record_from_json(e.at("record"));
        nlohmann::ordered_json entry;
        entry["dtype"] = d.dtype;
        entry["shape"] = s.key;
        entry["variant"] = id;
        entry["role"] = role;
        if (auto sk = e.find("skipped"); sk != e.end()) entry["skipped"] = sk->get<std::string>();
        // The findings of today's rules, from the record: a profile taken before a rule changed reads as
        // one taken now (ktune_profile's own findings are those of the rules it was built with).
        std::vector<prof::Finding> fs;
        if (!entry.contains("skipped")) fs = prof::diagnose(rec);
        entry["findings"] = prof::to_json(fs);
        entry["record"] = prof::to_json(rec);
        entries.push_back(std::move(entry));
      }
  for (const auto& [key, e] : found)
    if (!used.count(e))
      warnings.push_back(fmt::format("{}: {}/{}/{}/{} is neither S nor the winner of that shape in the results: left out "
                                     "(re-profile after a new selection)",
                                     source_name, sel.op, std::get<0>(key), std::get<1>(key), std::get<2>(key)));
  if (entries.empty()) return nullptr;
  nlohmann::ordered_json section;
  section["source"] = {{"file", source_name}, {"hash", source_hash}};
  section["device"] = doc.value("device", std::string());
  if (auto c = doc.find("copy_ceiling_gbps"); c != doc.end() && c->is_number()) section["copy_ceiling_gbps"] = *c;
  if (auto c = doc.find("empty_kernel_us"); c != doc.end() && c->is_number()) section["empty_kernel_us"] = *c;
  section["entries"] = std::move(entries);
  return section;
}

// ---- the report part ------------------------------------------------------------------------------

namespace {

/// One row of the "Profile of the winners" table, formatted.
struct ProfileRow {
  std::string shape, dtype, variant, role;
  std::string activity_us, event_us, dram_gbps, pct_copy, dram_bytes, bytes_ratio, occupancy, registers;
  std::vector<std::string> findings;
  std::string note;  ///< why a measurement is missing
};

std::string num(const std::optional<double>& v, int digits = -1) {
  if (!v) return "–";
  return digits < 0 ? sig3(*v) : fixed(*v, digits);
}

std::vector<ProfileRow> profile_rows(const Selection& sel) {
  std::vector<ProfileRow> rows;
  if (!sel.profile.is_object()) return rows;
  for (const auto& e : sel.profile.at("entries")) {
    const prof::ProfileRecord r = prof::record_from_json(e.at("record"));
    ProfileRow row;
    row.shape = e.at("shape").get<std::string>();
    row.dtype = e.at("dtype").get<std::string>();
    row.variant = e.at("variant").get<std::string>();
    row.role = e.at("role").get<std::string>();
    if (auto sk = e.find("skipped"); sk != e.end()) {
      row.note = "skipped: " + sk->get<std::string>();
      rows.push_back(std::move(row));
      continue;
    }
    row.activity_us = num(r.activity_us());
    row.event_us = num(r.event_us) + (r.event_graph ? " (graph)" : "");
    const std::optional<double> t = prof::device_time_us(r);
    const std::optional<double> dram = r.dram_bytes();
    std::optional<double> gbps;
    if (dram && t && *t > 0) gbps = *dram / (*t * 1e3);
    row.dram_gbps = num(gbps, 0);
    if (gbps && r.copy_ceiling_gbps && *r.copy_ceiling_gbps > 0) row.pct_copy = fixed(100 * *gbps / *r.copy_ceiling_gbps, 1) + "%";
    else row.pct_copy = "–";
    row.dram_bytes = dram ? fixed(*dram / 1e6, 1) : "–";
    row.bytes_ratio = dram && r.expected_bytes && *r.expected_bytes > 0 ? fixed(*dram / *r.expected_bytes, 2) + "x" : "–";
    // Per kernel in launch order: most calls launch one kernel; several are joined with '+'.
    std::string occ, regs;
    for (const prof::KernelMetrics& k : r.kernels) {
      occ += (occ.empty() ? "" : " + ") + (k.achieved_occupancy ? fixed(100 * *k.achieved_occupancy, 0) + "%" : "–");
      regs += (regs.empty() ? "" : " + ") + (k.registers ? std::to_string(*k.registers) : "–") +
              (k.local_bytes && *k.local_bytes > 0 ? fmt::format(" ({} B local)", *k.local_bytes) : "");
    }
    row.occupancy = occ.empty() ? "–" : occ;
    row.registers = regs.empty() ? "–" : regs;
    for (const auto& f : e.at("findings")) row.findings.push_back(f.at("message").get<std::string>());
    if (r.metrics_status != "ok") row.note = "metrics: " + r.metrics_status;
    if (r.activity_status != "ok") row.note += (row.note.empty() ? "" : "; ") + ("activity: " + r.activity_status);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string intro(const Selection& sel, bool html) {
  const auto& p = sel.profile;
  std::string ceiling = p.contains("copy_ceiling_gbps") ? sig3(p.at("copy_ceiling_gbps").get<double>()) : "–";
  std::string file = p.at("source").at("file").get<std::string>(), hash = p.at("source").at("hash").get<std::string>();
  const char* code_open = html ? "<code>" : "`";
  const char* code_close = html ? "</code>" : "`";
  return fmt::format(
      "S and the winner at representative shapes, profiled with CUPTI by {}ktune_profile --plan{} ({} {}). Time: the "
      "activity API's kernel durations vs CUDA events; DRAM GB/s: measured DRAM bytes over the activity time, vs the "
      "{} GB/s copy ceiling of the profiling run; DRAM bytes vs the bytes the spec says the call moves; occupancy: "
      "achieved; findings: the rules of ktune/diagnose.hpp (each names its metric and threshold).",
      code_open, code_close, file, hash, ceiling);
}

}  // namespace

std::string profile_markdown(const Selection& sel) {
  const std::vector<ProfileRow> rows = profile_rows(sel);
  if (rows.empty()) return "";
  std::string o = "## Profile of the winners\n\n" + intro(sel, false) + "\n\n";
  o += "| shape | dtype | variant | activity (us) | events (us) | DRAM GB/s | % of copy | DRAM MB | DRAM / spec bytes | occupancy | registers | findings |\n";
  o += "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
  for (const ProfileRow& r : rows) {
    std::string f;
    for (const std::string& m : r.findings) f += (f.empty() ? "" : "; ") + md_escape(m);
    if (!r.note.empty()) f += (f.empty() ? "" : "; ") + md_escape(r.note);
    if (f.empty()) f = "none";
    o += fmt::format("| {} | {} | `{}`{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.shape, r.dtype, r.variant,
                     r.role == "original" ? " (S)" : "", r.activity_us, r.event_us, r.dram_gbps, r.pct_copy, r.dram_bytes,
                     r.bytes_ratio, r.occupancy, r.registers, f);
  }
  return o + "\n";
}

std::string profile_html(const Selection& sel) {
  const std::vector<ProfileRow> rows = profile_rows(sel);
  if (rows.empty()) return "";
  std::string o = "<h2>Profile of the winners</h2>\n<p>" + intro(sel, true) + "</p>\n";
  o += "<table>\n<tr><th class=\"l\">shape</th><th class=\"l\">dtype</th><th class=\"l\">variant</th><th>activity (us)</th>"
       "<th>events (us)</th><th>DRAM GB/s</th><th>% of copy</th><th>DRAM MB</th><th>DRAM / spec bytes</th>"
       "<th>occupancy</th><th>registers</th><th class=\"l\">findings</th></tr>\n";
  for (const ProfileRow& r : rows) {
    std::string f;
    for (const std::string& m : r.findings) f += (f.empty() ? "" : "<br>") + html_escape(m);
    if (!r.note.empty()) f += (f.empty() ? "" : "<br>") + html_escape(r.note);
    if (f.empty()) f = "none";
    o += fmt::format("<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\"><code>{}</code>{}</td><td>{}</td>"
                     "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>\n",
                     html_escape(r.shape), html_escape(r.dtype), html_escape(r.variant), r.role == "original" ? " (S)" : "", r.activity_us,
                     r.event_us, r.dram_gbps, r.pct_copy, r.dram_bytes, r.bytes_ratio, r.occupancy, html_escape(r.registers), f);
  }
  return o + "</table>\n";
}

// ---- the commands ---------------------------------------------------------------------------------

int cmd_profile_plan(const std::vector<std::string>& argv) {
  CLI::App app{"Writes the calls `ktune_profile --plan FILE` profiles after selection: per op and dtype of the results\n"
               "files <results>/<SLUG>/<op>.json, S and the winner at the largest shape, the shape nearest 128 MB within\n"
               "[64, 256] MB, T = 1 and T = 16 of the widest row, and every shape that misses a target of the reports.",
               "ktune profile-plan"};
  cli::style(app);
  std::map<std::string, std::string> o{{"results", "reports"}};
  app.add_option("--gpu", o["gpu"], "the GPU's slug (reports/<SLUG>/)")->required();
  app.add_option("--out", o["out"], "the plan file")->required();
  app.add_option("--results", o["results"], "default: reports");
  app.add_option("--ops", o["ops"], "only these ops (A,B)");
  app.add_option("--dtypes", o["dtypes"], "only these dtypes (fp32,bf16)");
  if (auto done = cli::parse(app, argv)) return *done;
  const std::vector<std::string> op_list = cli::split_list(o["ops"]), dtype_list = cli::split_list(o["dtypes"]);
  const std::set<std::string> ops(op_list.begin(), op_list.end()), dtypes(dtype_list.begin(), dtype_list.end());
  const auto all = load_all_results(o["results"]);
  std::vector<LoadedResults> kept;  // copies, so dtypes can be filtered
  for (const auto& [op, inputs] : all)
    for (const LoadedResults& r : inputs) {
      if (r.selection.gpu_slug != o["gpu"] || (!ops.empty() && !ops.count(op))) continue;
      LoadedResults c = r;
      if (!dtypes.empty())
        c.selection.dtypes.erase(std::remove_if(c.selection.dtypes.begin(), c.selection.dtypes.end(),
                                                [&](const DTypeResult& d) { return !dtypes.count(d.dtype); }),
                                 c.selection.dtypes.end());
      kept.push_back(std::move(c));
    }
  if (kept.empty()) {
    fmt::print(stderr, "ktune profile-plan: no results files for GPU '{}' (and the --ops given)\n", o["gpu"]);
    return exit_failure;
  }
  std::vector<const LoadedResults*> ptrs;
  for (const LoadedResults& r : kept) ptrs.push_back(&r);
  nlohmann::ordered_json plan = profile_plan(ptrs);
  plan["gpu_slug"] = o["gpu"];
  if (plan["calls"].empty()) {
    fmt::print(stderr, "ktune profile-plan: the results files of '{}' have no shape with a winner (for the --dtypes given)\n",
               o["gpu"]);
    return exit_failure;
  }
  write_atomic(o["out"], dump_json(plan, 3));
  fmt::print("ktune profile-plan: {} calls ({} profiles) -> {}\n", plan["calls"].size(),
             [&] {
               std::size_t n = 0;
               for (const auto& c : plan["calls"]) n += c["variants"].size();
               return n;
             }(),
             o["out"]);
  return exit_ok;
}

int cmd_profile_attach(const std::vector<std::string>& argv) {
  CLI::App app{"Puts the records and findings of a `ktune_profile --plan` JSON (normally <results>/<SLUG>/raw/profile.json)\n"
               "into the \"profile\" section of every results file <results>/<SLUG>/<op>.json it covers (the section is\n"
               "replaced; a results file the profile does not cover loses its section). Profiles of variants that are\n"
               "neither S nor a shape's winner any more are left out with a warning. Then run `ktune report`.",
               "ktune profile-attach"};
  cli::style(app);
  std::map<std::string, std::string> o{{"results", "reports"}};
  app.add_option("--profile", o["profile"], "ktune_profile's JSON")->required();
  app.add_option("--gpu", o["gpu"], "the GPU's slug (reports/<SLUG>/)")->required();
  app.add_option("--results", o["results"], "default: reports");
  if (auto done = cli::parse(app, argv)) return *done;
  const std::string results_dir = o["results"];
  const std::string text = read_file(o["profile"]);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ToolError(o["profile"] + ": not valid JSON: " + e.what());
  }
  std::string name = o["profile"];
  if (auto slash = name.find_last_of('/'); slash != std::string::npos) name = name.substr(slash + 1);
  const std::string hash = content_hash(text);
  int attached = 0;
  for (auto& [op, inputs] : load_all_results(results_dir))
    for (LoadedResults& r : inputs) {
      if (r.selection.gpu_slug != o["gpu"]) continue;
      std::vector<std::string> warnings;
      r.selection.profile = profile_section(doc, name, hash, r.selection, warnings);
      for (const std::string& w : warnings) fmt::print(stderr, "ktune profile-attach: warning: {}\n", w);
      const std::string path = results_path(results_dir, r.selection.gpu_slug, op);
      const bool changed = write_atomic(path, dump_json(to_json(r.selection), 6));
      const std::size_t n = r.selection.profile.is_object() ? r.selection.profile["entries"].size() : 0;
      attached += n > 0;
      fmt::print("{}: {} profiled calls, {}\n", path, n, changed ? "written" : "unchanged");
    }
  if (!attached) {
    fmt::print(stderr, "ktune profile-attach: {} covers no results file of GPU '{}' under {}\n", o["profile"], o["gpu"],
               results_dir);
    return exit_failure;
  }
  return exit_ok;
}

}  // namespace ktune::tool
