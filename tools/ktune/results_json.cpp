// tools/ktune/results_json.cpp: a selection as JSON: the results file both ways (docs/results-schema.md),
// Kernel Tuner's T4 export, and the deterministic JSON text they are written as.
#include "results.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cmath>
#include <limits>

#include "io.hpp"
#include "regret.hpp"

namespace ktune::tool {

using ojson = nlohmann::ordered_json;

// ---- JSON -----------------------------------------------------------------------------------------

namespace {

ojson counters_json(const std::map<std::string, double>& c) {
  ojson j = ojson::object();
  for (const auto& [k, v] : c) j[k] = std::isfinite(v) ? ojson(v) : ojson(nullptr);
  return j;
}

std::map<std::string, double> counters_from(const ojson& j) {
  std::map<std::string, double> c;
  for (const auto& [k, v] : j.items()) c[k] = v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
  return c;
}

ojson measure_json(const Measure& m, bool with_counters = true) {
  return ojson{{"median_us", m.median_us}, {"spread", m.spread}, {"samples", m.samples},
               {"counters", with_counters ? counters_json(m.counters) : ojson::object()}};
}

Measure measure_from(const ojson& j) {
  Measure m;
  m.median_us = j.at("median_us").get<double>();
  m.spread = j.at("spread").get<double>();
  m.samples = j.at("samples").get<std::int64_t>();
  m.counters = counters_from(j.at("counters"));
  return m;
}

ojson dims_json(const std::vector<std::pair<std::string, std::int64_t>>& dims) {
  ojson j = ojson::object();
  for (const auto& [k, v] : dims) j[k] = v;
  return j;
}

ojson strings(const std::vector<std::string>& v) {
  ojson j = ojson::array();
  for (const auto& s : v) j.push_back(s);
  return j;
}

std::vector<std::string> strings_from(const ojson& j) { return j.get<std::vector<std::string>>(); }

}  // namespace

ojson to_json(const Selection& s) {
  ojson j;
  j["schema"] = "ktune.results";
  j["schema_version"] = results_schema_version;
  j["generator"] = "ktune select " KTUNE_TOOL_VERSION;
  j["op"] = s.op;
  j["gpu"] = s.gpu;
  j["gpu_slug"] = s.gpu_slug;
  j["arch"] = s.arch;
  j["space_hash"] = s.space_hash;
  ojson env = ojson::object();
  for (const auto& [k, v] : s.environment) env[k] = v;
  j["environment"] = env;
  ojson sources = ojson::array();
  for (const Source& src : s.sources)
    sources.push_back({{"file", src.file}, {"mode", src.mode}, {"hash", src.hash}, {"date", src.date}});
  j["sources"] = sources;
  ojson dims = ojson::object();
  for (const auto& [k, v] : s.spec_dims) dims[k] = v;
  j["spec"] = {{"tokens_dim", s.tokens_dim}, {"width_dim", s.width_dim}, {"dims", dims}};
  if (!s.spec_held_out.empty()) {
    ojson held = ojson::object();
    for (const auto& [k, v] : s.spec_held_out) held[k] = v;
    j["spec"]["held_out"] = held;
  }
  ojson refs = ojson::object();
  for (const auto& [k, r] : s.references) refs[k] = {{"time_us", r.time_us}, {"counters", counters_json(r.counters)}};
  j["references"] = refs;
  j["build"] = s.build;
  ojson dtypes = ojson::array();
  for (const DTypeResult& d : s.dtypes) {
    ojson dj;
    dj["dtype"] = d.dtype;
    ojson ranking = ojson::array();
    for (const auto& [id, g] : d.general.ranking) ranking.push_back({{"id", id}, {"geomean_us", g}});
    dj["general"] = {{"id", d.general.id}, {"geomean_us", d.general.geomean_us}, {"shapes", d.general.shapes},
                     {"ranking", ranking}};
    ojson shapes = ojson::array();
    for (const ShapeResult& sh : d.shapes) {
      ojson sj;
      sj["shape"] = sh.key;
      sj["dims"] = dims_json(sh.dims);
      sj["tokens"] = sh.tokens;
      sj["width"] = sh.width;
      sj["bytes"] = sh.bytes;
      sj["in_spec"] = sh.in_spec;
      if (sh.held_out) sj["held_out"] = true;
      if (sh.copy_same_size_us) sj["copy_same_size_us"] = *sh.copy_same_size_us;
      sj["winner"] = sh.winner;
      sj["reason"] = sh.reason;
      sj["fastest"] = sh.fastest;
      sj["band_source"] = sh.band_source;
      sj["noise_band"] = sh.noise_band;
      sj["within_band"] = strings(sh.within_band);
      sj["ranking"] = strings(sh.ranking);
      ojson vs = ojson::array();
      for (const VariantResult& v : sh.variants) {
        // A screen no report or table looks at keeps its time and spread, not its counters (the T4 export has
        // them): a catalogue tune's 2,400 shapes would otherwise write 10 MB per op.
        const bool counters = v.id == "original" || v.retest || v.verdict != Verdict::ok || v.id == sh.winner ||
                              v.id == sh.fastest || v.id == d.general.id ||
                              std::find(sh.within_band.begin(), sh.within_band.end(), v.id) != sh.within_band.end();
        ojson vj;
        vj["id"] = v.id;
        vj["verdict"] = to_string(v.verdict);
        if (!v.error.empty()) vj["error"] = v.error;
        if (v.sweep) vj["sweep"] = measure_json(*v.sweep, counters);
        if (v.retest) vj["retest"] = measure_json(*v.retest);
        vs.push_back(std::move(vj));
      }
      sj["variants"] = std::move(vs);
      shapes.push_back(std::move(sj));
    }
    dj["shapes"] = std::move(shapes);
    ojson ex = ojson::array();
    for (const Excluded& e : d.excluded)
      ex.push_back({{"id", e.id}, {"verdict", to_string(e.verdict)}, {"error", e.error}, {"shapes", strings(e.shapes)}});
    dj["excluded"] = std::move(ex);
    dtypes.push_back(std::move(dj));
  }
  j["dtypes"] = std::move(dtypes);
  if (!s.profile.is_null()) j["profile"] = s.profile;  // profile_section.hpp; absent when not profiled
  if (s.search)
    j["search"] = {{"method", "halving"}, {"screened", s.search->screened}, {"remeasured", s.search->remeasured},
                   {"still_noisy", s.search->still_noisy}, {"finalists", s.search->finalists}, {"pruned", s.search->pruned}};
  if (s.search && s.search->guided_out > 0) j["search"]["guided_out"] = s.search->guided_out;  // guided screens
  if (s.search && !s.search->settings.empty()) j["search"]["settings"] = s.search->settings;   // recorded since 2026-11-27
  if (s.stability) {
    const Stability& st = *s.stability;
    ojson rows = ojson::array();
    for (const StabilityRow& r : st.rows) {
      ojson row{{"dtype", r.dtype}, {"shape", r.shape}, {"winner_before", r.winner_before}, {"winner", r.winner},
                {"time_before_us", r.time_before_us}, {"time_us", r.time_us}, {"band_before", r.band_before},
                {"band", r.band}, {"held", r.held}, {"within_band", r.within_band}, {"variation", r.variation}};
      if (r.copy_variation) row["copy_variation"] = *r.copy_variation;
      if (r.original_variation) row["original_variation"] = *r.original_variation;
      row["meets_goal"] = r.meets_goal;
      if (!r.note.empty()) row["note"] = r.note;
      if (r.regret) row["regret"] = regret_json(*r.regret);
      rows.push_back(std::move(row));
    }
    j["stability"] = {{"against", {{"file", st.against.file}, {"hash", st.against.hash}, {"date", st.against.date}}},
                      {"goal", {{"held_or_within_band", stability_goal_share}, {"p95_variation", stability_goal_variation},
                                {"p95_regret", regret_goal_p95}, {"max_regret", regret_goal_max}}},
                      {"regret", regret_summary_json(st.rows)},
                      {"shapes", std::move(rows)}};
  }
  return j;
}

Selection from_json(const ojson& j, const std::string& where) {
  try {
    if (j.at("schema").get<std::string>() != "ktune.results")
      throw ToolError(where + ": not a ktune results file (\"schema\" is not \"ktune.results\")");
    if (j.at("schema_version").get<int>() != results_schema_version)
      throw ToolError(fmt::format("{}: results schema_version {} (this ktune reads {}): rerun `ktune select`", where,
                                  j.at("schema_version").get<int>(), results_schema_version));
    Selection s;
    s.op = j.at("op").get<std::string>();
    s.gpu = j.at("gpu").get<std::string>();
    s.gpu_slug = j.at("gpu_slug").get<std::string>();
    s.arch = j.at("arch").get<int>();
    s.space_hash = j.at("space_hash").get<std::string>();
    for (const auto& [k, v] : j.at("environment").items()) s.environment[k] = v.get<std::string>();
    for (const auto& src : j.at("sources"))
      s.sources.push_back({src.at("file").get<std::string>(), src.at("mode").get<std::string>(),
                           src.at("hash").get<std::string>(), src.at("date").get<std::string>()});
    s.tokens_dim = j.at("spec").at("tokens_dim").get<std::string>();
    s.width_dim = j.at("spec").at("width_dim").get<std::string>();
    for (const auto& [k, v] : j.at("spec").at("dims").items()) s.spec_dims.emplace_back(k, v.get<std::vector<std::int64_t>>());
    if (auto h = j.at("spec").find("held_out"); h != j.at("spec").end())
      for (const auto& [k, v] : h->items()) s.spec_held_out.emplace_back(k, v.get<std::vector<std::int64_t>>());
    for (const auto& [k, r] : j.at("references").items())
      s.references[k] = {r.at("time_us").get<double>(), counters_from(r.at("counters"))};
    s.build = j.at("build");
    for (const auto& dj : j.at("dtypes")) {
      DTypeResult d;
      d.dtype = dj.at("dtype").get<std::string>();
      const auto& g = dj.at("general");
      d.general.id = g.at("id").get<std::string>();
      d.general.geomean_us = g.at("geomean_us").get<double>();
      d.general.shapes = g.at("shapes").get<int>();
      for (const auto& r : g.at("ranking")) d.general.ranking.emplace_back(r.at("id").get<std::string>(), r.at("geomean_us").get<double>());
      for (const auto& sj : dj.at("shapes")) {
        ShapeResult sh;
        sh.key = sj.at("shape").get<std::string>();
        for (const auto& [k, v] : sj.at("dims").items()) sh.dims.emplace_back(k, v.get<std::int64_t>());
        sh.tokens = sj.at("tokens").get<std::int64_t>();
        sh.width = sj.at("width").get<std::int64_t>();
        sh.bytes = sj.at("bytes").get<std::int64_t>();
        sh.in_spec = sj.at("in_spec").get<bool>();
        sh.held_out = sj.value("held_out", false);
        if (sj.contains("copy_same_size_us")) sh.copy_same_size_us = sj.at("copy_same_size_us").get<double>();
        sh.winner = sj.at("winner").get<std::string>();
        sh.reason = sj.at("reason").get<std::string>();
        sh.fastest = sj.at("fastest").get<std::string>();
        sh.band_source = sj.at("band_source").get<std::string>();
        sh.noise_band = sj.at("noise_band").get<double>();
        sh.within_band = strings_from(sj.at("within_band"));
        sh.ranking = strings_from(sj.at("ranking"));
        for (const auto& vj : sj.at("variants")) {
          VariantResult v;
          v.id = vj.at("id").get<std::string>();
          v.verdict = parse_verdict_name(vj.at("verdict").get<std::string>());
          v.error = vj.value("error", std::string());
          if (vj.contains("sweep")) v.sweep = measure_from(vj.at("sweep"));
          if (vj.contains("retest")) v.retest = measure_from(vj.at("retest"));
          sh.variants.push_back(std::move(v));
        }
        d.shapes.push_back(std::move(sh));
      }
      for (const auto& e : dj.at("excluded"))
        d.excluded.push_back({e.at("id").get<std::string>(), parse_verdict_name(e.at("verdict").get<std::string>()),
                              e.at("error").get<std::string>(), strings_from(e.at("shapes"))});
      s.dtypes.push_back(std::move(d));
    }
    if (auto p = j.find("profile"); p != j.end()) s.profile = *p;
    if (auto p = j.find("search"); p != j.end()) {
      SearchSummary x;
      x.screened = p->at("screened").get<std::int64_t>();
      x.remeasured = p->at("remeasured").get<std::int64_t>();
      x.still_noisy = p->at("still_noisy").get<std::int64_t>();
      x.finalists = p->at("finalists").get<std::int64_t>();
      x.pruned = p->value("pruned", std::int64_t{0});          // absent before screens were pruned
      x.guided_out = p->value("guided_out", std::int64_t{0});  // absent before guided screens
      if (p->contains("settings")) x.settings = p->at("settings").get<std::map<std::string, double>>();  // and before 2026-11-27
      s.search = std::move(x);
    }
    if (auto p = j.find("stability"); p != j.end()) {
      Stability st;
      const auto& a = p->at("against");
      st.against = {a.at("file").get<std::string>(), "results", a.at("hash").get<std::string>(), a.at("date").get<std::string>()};
      for (const auto& r : p->at("shapes")) {
        StabilityRow row;
        row.dtype = r.at("dtype").get<std::string>();
        row.shape = r.at("shape").get<std::string>();
        row.winner_before = r.at("winner_before").get<std::string>();
        row.winner = r.at("winner").get<std::string>();
        row.time_before_us = r.at("time_before_us").get<double>();
        row.time_us = r.at("time_us").get<double>();
        row.band_before = r.at("band_before").get<double>();
        row.band = r.at("band").get<double>();
        row.held = r.at("held").get<bool>();
        row.within_band = r.at("within_band").get<bool>();
        row.variation = r.at("variation").get<double>();
        if (r.contains("copy_variation")) row.copy_variation = r.at("copy_variation").get<double>();
        if (r.contains("original_variation")) row.original_variation = r.at("original_variation").get<double>();
        row.meets_goal = r.at("meets_goal").get<bool>();
        row.note = r.value("note", std::string());
        if (r.contains("regret")) row.regret = regret_from_json(r.at("regret"));
        st.rows.push_back(std::move(row));
      }
      s.stability = std::move(st);
      derive_regret(s);  // the section's "regret" summary is derived from the rows: not read back
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw ToolError(where + ": malformed results file (" + e.what() + "): rerun `ktune select`");
  }
}

// ---- Kernel Tuner's T4 ----------------------------------------------------------------------------

namespace {

/// A context key of what the run's GPU step cost: for the report's cost section, not a fact of the device.
bool is_run_cost(const std::string& key) {
  return key == "measure_wall_s" || key == "startup_s" || key == "slices" || key == "prep_threads" || is_phase_key(key) ||
         is_part_key(key);
}

}  // namespace

ojson to_t4(const Selection& s) {
  ojson results = ojson::array();
  const std::string timestamp = s.environment.count("date") ? s.environment.at("date") : "";
  for (const DTypeResult& d : s.dtypes)
    for (const ShapeResult& sh : d.shapes)
      for (const VariantResult& v : sh.variants) {
        ojson r;
        r["timestamp"] = timestamp;
        // T4 keys a result by its configuration; the problem (dtype, shape) is part of it here because
        // one file holds every problem of the op.
        ojson config;
        config["variant"] = v.id;
        for (const auto& [k, x] : parse_id(v.id)) config[k] = x;
        config["dtype"] = d.dtype;
        for (const auto& [k, x] : sh.dims) config[k] = x;
        r["configuration"] = config;
        const Measure* m = v.retest ? &*v.retest : (v.sweep ? &*v.sweep : nullptr);
        ojson runtimes = ojson::array();
        if (m) runtimes.push_back(m->median_us * 1e-3);  // Kernel Tuner's unit: milliseconds
        r["times"] = {{"runtimes", runtimes}};
        // Kernel Tuner's invalidity classes: every wrong verdict of the judge is a correctness failure.
        const char* invalidity = "runtime";
        if (v.verdict == Verdict::ok) invalidity = "correct";
        else if (judge::is_wrong(v.verdict)) invalidity = "correctness";
        else if (v.verdict == Verdict::cannot_implement) invalidity = "constraints";
        r["invalidity"] = invalidity;
        r["correctness"] = judge::is_wrong(v.verdict) ? 0 : 1;
        ojson ms = ojson::array();
        if (m) {
          ms.push_back({{"name", "time"}, {"value", m->median_us * 1e-3}, {"unit", "ms"}});
          ms.push_back({{"name", "spread"}, {"value", m->spread}, {"unit", ""}});
          for (const auto& [k, x] : m->counters)
            if (std::isfinite(x) && k != "spread")
              ms.push_back({{"name", k}, {"value", x}, {"unit", k == "GBps" ? "GB/s" : (k.size() > 3 && k.substr(k.size() - 3) == "_us" ? "us" : "")}});
          ms.push_back({{"name", "source"}, {"value", v.retest ? "retest" : "sweep"}, {"unit", ""}});
        }
        if (!v.error.empty()) ms.push_back({{"name", "error"}, {"value", v.error}, {"unit", ""}});
        r["measurements"] = ms;
        r["objectives"] = ojson::array({"time"});
        results.push_back(std::move(r));
      }
  ojson env = ojson::object();  // the device and the build; what the run cost stays in the results file
  for (const auto& [k, v] : s.environment)
    if (!is_run_cost(k)) env[k] = v;
  ojson j;
  j["schema_version"] = "1.0.0";
  j["metadata"] = {
      {"hardware", {{"hardware_description", ojson::array({{{"gpu", s.gpu}, {"arch", s.arch}}})}}},
      {"environment", {{"device_query", env}, {"requirements", ojson::array({"ktune " KTUNE_TOOL_VERSION})}}},
      {"ktune", {{"op", s.op}, {"space_hash", s.space_hash}, {"objective", "time (median, ms)"}}}};
  j["environment"] = env;
  j["results"] = std::move(results);
  return j;
}

// ---- deterministic text ---------------------------------------------------------------------------

namespace {
void dump_rec(const ojson& j, int depth, int max_depth, std::string& out) {
  const bool container = j.is_object() || j.is_array();
  if (!container || j.empty() || depth >= max_depth) {
    out += j.dump();
    return;
  }
  const std::string pad(static_cast<std::size_t>(2 * (depth + 1)), ' ');
  out += j.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) out += ",\n";
    first = false;
    out += pad;
    if (j.is_object()) {
      out += ojson(it.key()).dump();
      out += ": ";
    }
    dump_rec(it.value(), depth + 1, max_depth, out);
  }
  out += "\n";
  out += std::string(static_cast<std::size_t>(2 * depth), ' ');
  out += j.is_object() ? "}" : "]";
}
}  // namespace

std::string dump_json(const ojson& j, int max_depth) {
  std::string out;
  dump_rec(j, 0, max_depth, out);
  out += "\n";
  return out;
}

}  // namespace ktune::tool
