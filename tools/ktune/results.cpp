#include "results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <ktune/spec.hpp>

#include "io.hpp"
#include "list.hpp"
#include "regret.hpp"

namespace ktune::tool {

using ojson = nlohmann::ordered_json;

// ---- small queries --------------------------------------------------------------------------------

const VariantResult* ShapeResult::find(const std::string& id) const {
  for (const VariantResult& v : variants)
    if (v.id == id) return &v;
  return nullptr;
}

std::optional<double> ShapeResult::time_of(const std::string& id) const {
  const VariantResult* v = find(id);
  if (!v || v->verdict != Verdict::ok) return std::nullopt;
  if (band_source == "retest" && v->retest) return v->retest->median_us;
  if (v->sweep) return v->sweep->median_us;
  return std::nullopt;
}

const DTypeResult* Selection::find(const std::string& dtype) const {
  for (const DTypeResult& d : dtypes)
    if (d.dtype == dtype) return &d;
  return nullptr;
}

std::vector<std::pair<std::string, std::int64_t>> parse_id(const std::string& id) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  if (id == "original") return out;
  std::size_t pos = 0;
  while (pos <= id.size()) {
    std::size_t end = id.find('.', pos);
    if (end == std::string::npos) end = id.size();
    const std::string field = id.substr(pos, end - pos);
    const std::size_t us = field.rfind('_');
    if (us == std::string::npos || us == 0 || us + 1 == field.size()) return {};
    std::int64_t v = 0;
    bool neg = field[us + 1] == '-';
    for (std::size_t i = us + 1 + (neg ? 1 : 0); i < field.size(); ++i) {
      if (field[i] < '0' || field[i] > '9') return {};
      v = v * 10 + (field[i] - '0');
    }
    out.emplace_back(field.substr(0, us), neg ? -v : v);
    pos = end + 1;
  }
  return out;
}

std::string results_path(const std::string& results_dir, const std::string& slug, const std::string& op) {
  return join_path(join_path(results_dir, slug), op + ".json");
}

// ---- selection ------------------------------------------------------------------------------------

namespace {
std::vector<const ShapeResult*> general_shapes(const DTypeResult& d) {
  std::vector<const ShapeResult*> shapes;
  for (const ShapeResult& s : d.shapes)
    if (s.in_spec) shapes.push_back(&s);
  if (shapes.empty())
    for (const ShapeResult& s : d.shapes) shapes.push_back(&s);
  return shapes;
}

GeneralChoice best_geomean(const std::vector<const ShapeResult*>& shapes, int keep);
}  // namespace

GeneralChoice general_configuration(const DTypeResult& d, int keep) { return best_geomean(general_shapes(d), keep); }

GeneralChoice general_across_dtypes(const Selection& sel, int keep) {
  std::vector<const ShapeResult*> shapes;
  for (const DTypeResult& d : sel.dtypes)
    for (const ShapeResult* s : general_shapes(d)) shapes.push_back(s);
  return best_geomean(shapes, keep);
}

namespace {
GeneralChoice best_geomean(const std::vector<const ShapeResult*>& shapes, int keep) {
  GeneralChoice g;
  g.shapes = static_cast<int>(shapes.size());
  if (shapes.empty()) return g;

  std::set<std::string> ids;
  for (const VariantResult& v : shapes.front()->variants)
    if (v.id != "original") ids.insert(v.id);
  std::vector<std::pair<std::string, double>> means;
  for (const std::string& id : ids) {
    double log_sum = 0;
    bool all = true;
    for (const ShapeResult* s : shapes) {
      const VariantResult* v = s->find(id);
      if (!v || v->verdict != Verdict::ok || !v->sweep) { all = false; break; }
      log_sum += std::log(v->sweep->median_us);
    }
    if (all) means.emplace_back(id, std::exp(log_sum / static_cast<double>(shapes.size())));
  }
  std::sort(means.begin(), means.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second, a.first) < std::tie(b.second, b.first);
  });
  if (means.empty()) return g;
  g.id = means.front().first;
  g.geomean_us = means.front().second;
  means.resize(std::min<std::size_t>(means.size(), static_cast<std::size_t>(keep)));
  g.ranking = std::move(means);
  return g;
}
}  // namespace

void select_shape(ShapeResult& s, const std::string& general, const std::string& neighbour,
                  const std::set<std::string>& chosen) {
  s.ranking.clear();
  s.within_band.clear();
  s.fastest.clear();
  s.winner.clear();
  s.reason.clear();
  bool any_retest = false;
  for (const VariantResult& v : s.variants)
    any_retest = any_retest || (v.id != "original" && v.verdict == Verdict::ok && v.retest);
  s.band_source = any_retest ? "retest" : "sweep";

  // The pool is compared on one footing: retest times when the shape was retested, else sweep times.
  std::vector<std::pair<double, std::string>> pool, rest;
  for (const VariantResult& v : s.variants) {
    if (v.id == "original" || v.verdict != Verdict::ok) continue;
    if (any_retest ? bool(v.retest) : bool(v.sweep))
      pool.emplace_back(any_retest ? v.retest->median_us : v.sweep->median_us, v.id);
    else if (v.sweep)
      rest.emplace_back(v.sweep->median_us, v.id);
  }
  std::sort(pool.begin(), pool.end());
  std::sort(rest.begin(), rest.end());
  for (const auto& p : pool) s.ranking.push_back(p.second);
  for (const auto& p : rest) s.ranking.push_back(p.second);
  if (pool.empty()) {
    s.reason = "no correct variant";
    return;
  }
  s.fastest = pool.front().second;
  const VariantResult* best = s.find(s.fastest);
  const Measure& m = any_retest ? *best->retest : *best->sweep;
  s.noise_band = std::max(min_noise_band, m.spread);
  const double limit = pool.front().first * (1.0 + s.noise_band);
  for (const auto& p : pool)
    if (p.first <= limit) s.within_band.push_back(p.second);

  auto in_band = [&](const std::string& id) {
    return !id.empty() && std::find(s.within_band.begin(), s.within_band.end(), id) != s.within_band.end();
  };
  if (in_band(neighbour) && neighbour != s.fastest) {
    s.winner = neighbour;
    s.reason = "within the noise band: same as the neighbouring shape";
  } else if (in_band(general) && general != s.fastest) {
    s.winner = general;
    s.reason = "within the noise band: the general configuration";
  } else {
    s.winner = s.fastest;
    s.reason = "fastest";
    if (!chosen.count(s.fastest))
      for (const std::string& id : s.within_band)
        if (chosen.count(id)) {
          s.winner = id;
          s.reason = "within the noise band: already chosen for another shape";
          break;
        }
  }
}

void select_dtype(DTypeResult& d) {
  std::sort(d.shapes.begin(), d.shapes.end(), [](const ShapeResult& a, const ShapeResult& b) {
    return std::tie(a.width, a.tokens, a.key) < std::tie(b.width, b.tokens, b.key);
  });
  d.general = general_configuration(d);
  std::set<std::string> chosen;
  std::string neighbour;
  std::int64_t width = -1;
  for (ShapeResult& s : d.shapes) {
    if (s.width != width) neighbour.clear();
    width = s.width;
    select_shape(s, d.general.id, neighbour, chosen);
    neighbour = s.winner;
    if (!s.winner.empty()) chosen.insert(s.winner);
  }
  std::map<std::string, Excluded> by_id;
  for (const ShapeResult& s : d.shapes)
    for (const VariantResult& v : s.variants) {
      if (v.verdict == Verdict::ok) continue;
      Excluded& e = by_id[v.id];
      if (e.shapes.empty()) {
        e.id = v.id;
        e.verdict = v.verdict;
        e.error = v.error;
      }
      e.shapes.push_back(s.key);
    }
  d.excluded.clear();
  for (auto& [id, e] : by_id) d.excluded.push_back(std::move(e));
}

// ---- from raw files -------------------------------------------------------------------------------

namespace {

const char* const kept_context[] = {"ktune_version", "gpu", "arch", "sms", "l2_bytes", "sm_clock_khz",
                                    "mem_clock_khz", "driver_version", "cuda_runtime_version", "git_commit",
                                    "copy_ceiling_gbps", "copy_memcpy_gbps", "copy_kernel_gbps", "empty_kernel_us",
                                    "cold_l2", "date", "library_version", "library_build_type",
                                    // what the tune's GPU step cost (bench/README.md, "Where the time goes")
                                    "measure_wall_s", "startup_s", "slices", "prep_threads", "phase_prepare_s",
                                    "phase_gate_s", "phase_timing_s", "phase_verify_s"};

/// A context key of what the run's GPU step cost: for the report's cost section, not a fact of the device.
bool is_run_cost(const std::string& key) {
  return key == "measure_wall_s" || key == "startup_s" || key == "slices" || key == "prep_threads" ||
         (key.rfind("phase_", 0) == 0 && key.size() > 8 && key.compare(key.size() - 2, 2, "_s") == 0);
}

Measure measure_of(const RawRun& r) {
  Measure m;
  m.median_us = r.time_us;
  m.samples = r.iterations;
  m.counters = r.counters;
  auto it = r.counters.find("spread");
  m.spread = it != r.counters.end() && std::isfinite(it->second) ? it->second : 0.0;
  if (auto s = r.counters.find("samples"); s != r.counters.end()) m.samples = static_cast<std::int64_t>(s->second);
  return m;
}

std::int64_t dim_of(const BenchName& b, const std::string& name, const std::string& where) {
  for (const auto& [n, v] : b.dims)
    if (n == name) return v;
  throw ToolError(fmt::format("{}: benchmark shape '{}' has no dimension '{}'", where, b.shape, name));
}

}  // namespace

std::vector<Selection> build_selections(const std::vector<RawFile>& files, const std::string& kernels_dir,
                                        std::vector<std::string>& warnings) {
  // slug -> op -> dtype -> shape key -> id -> mode -> run (the last one wins)
  using Runs = std::map<std::string, const RawRun*>;
  std::map<std::string, std::map<std::string, std::map<std::string, std::map<std::string, std::map<std::string, Runs>>>>> all;
  std::map<std::string, std::vector<const RawFile*>> files_of;
  std::map<std::string, std::pair<double, std::string>> copies;  // slug/op/dtype/shape -> (us, mode)
  for (const RawFile& f : files) {
    for (const std::string& w : f.warnings) warnings.push_back(w);
    auto slug = f.context.find("gpu_slug");
    if (slug == f.context.end() || slug->second.empty())
      throw ToolError(f.path + ": context has no \"gpu_slug\" (the interface requires it)");
    files_of[slug->second].push_back(&f);
    for (const RawRun& r : f.runs)
      all[slug->second][r.name.op][r.name.dtype][r.name.shape][r.name.id][r.mode] = &r;
    // Same-size copies: a sweep's (or search's) wins over a re-test's, a later file over an earlier one.
    const std::string copy_mode = f.mode == "retest" ? "retest" : "sweep";
    for (const RawSameSizeCopy& c : f.same_size_copies) {
      auto& slot = copies[slug->second + "/" + c.op + "/" + c.dtype + "/" + c.shape];
      if (copy_mode == "sweep" || slot.second != "sweep") slot = {c.time_us, copy_mode};
    }
  }

  std::vector<Selection> out;
  std::map<std::string, Spec> specs;
  for (auto& [slug, ops] : all) {
    const std::vector<const RawFile*>& fs = files_of[slug];
    const RawFile* primary = fs.front();
    for (const RawFile* f : fs)
      if (f->mode != "retest") { primary = f; break; }
    for (const RawFile* f : fs)
      if (f->context.count("gpu") && primary->context.count("gpu") && f->context.at("gpu") != primary->context.at("gpu"))
        throw ToolError(fmt::format("{} and {} name different GPUs under one slug", f->path, primary->path));

    for (auto& [op, dtypes] : ops) {
      if (!specs.count(op)) {
        const std::string path = join_path(kernel_folder(op, kernels_dir), "spec.json");
        if (!file_exists(path)) throw ToolError(fmt::format("no spec for op '{}': {} does not exist (see --kernels)", op, path));
        try {
          specs.emplace(op, load_spec(path));
        } catch (const SpecError& e) {
          throw ToolError(e.what());
        }
      }
      const Spec& spec = specs.at(op);
      Selection sel;
      sel.op = op;
      sel.gpu_slug = slug;
      sel.gpu = primary->context.count("gpu") ? primary->context.at("gpu") : slug;
      try {
        sel.arch = primary->context.count("arch") ? std::stoi(primary->context.at("arch")) : 0;
      } catch (const std::exception&) {
        throw ToolError(primary->path + ": context \"arch\" is not a number");
      }
      for (const char* k : kept_context)
        if (primary->context.count(k)) sel.environment[k] = primary->context.at(k);
      const std::string hash_key = "space_hash." + op;
      for (const RawFile* f : fs) {
        auto h = f->context.find(hash_key);
        if (h == f->context.end()) continue;
        if (sel.space_hash.empty()) sel.space_hash = h->second;
        else if (sel.space_hash != h->second)
          throw ToolError(fmt::format("{}: {} is {}, another input has {}: the space changed between runs; "
                                      "rerun the sweep", f->path, hash_key, h->second, sel.space_hash));
      }
      for (const RawFile* f : fs) {
        Source src{f->label, f->mode, f->hash, f->context.count("date") ? f->context.at("date") : ""};
        sel.sources.push_back(src);
        if (f == primary || (f->mode != "retest" && primary->mode == "retest"))
          for (const RawReference& r : f->references) sel.references[r.name] = {r.time_us, r.counters};
      }
      sel.tokens_dim = spec.tokens_dim;
      sel.width_dim = spec.width_dim;
      sel.spec_dims = spec.dims;

      for (DType t : all_dtypes) {
        auto dt = dtypes.find(name(t));
        if (dt == dtypes.end()) continue;
        DTypeResult d;
        d.dtype = name(t);
        for (auto& [key, ids] : dt->second) {
          const RawRun* any = ids.begin()->second.begin()->second;
          const std::string where = fmt::format("{}/{}/{}", op, d.dtype, key);
          ShapeResult s;
          s.key = key;
          Shape shape;
          if (any->name.dims.size() != spec.dims.size())
            throw ToolError(fmt::format("{}: the shape does not name the spec's dimensions", where));
          for (std::size_t i = 0; i < spec.dims.size(); ++i) {
            if (any->name.dims[i].first != spec.dims[i].first)
              throw ToolError(fmt::format("{}: dimension {} is '{}', the spec says '{}'", where, i,
                                          any->name.dims[i].first, spec.dims[i].first));
            const auto& values = spec.dims[i].second;
            s.in_spec = s.in_spec && std::find(values.begin(), values.end(), any->name.dims[i].second) != values.end();
          }
          s.dims = any->name.dims;
          shape.dims = s.dims;
          s.tokens = dim_of(any->name, spec.tokens_dim, where);
          s.width = dim_of(any->name, spec.width_dim, where);
          s.bytes = spec.bytes(shape, t);
          if (auto c = copies.find(slug + "/" + op + "/" + d.dtype + "/" + key); c != copies.end())
            s.copy_same_size_us = c->second.first;
          for (auto& [id, modes] : ids) {
            VariantResult v;
            v.id = id;
            for (const char* mode : {"sweep", "retest"}) {
              auto it = modes.find(mode);
              if (it == modes.end()) continue;
              const RawRun& r = *it->second;
              if (r.verdict != Verdict::ok) {
                if (v.verdict == Verdict::ok) {
                  v.verdict = r.verdict;
                  v.error = r.error;
                }
              } else {
                (std::string(mode) == "sweep" ? v.sweep : v.retest) = measure_of(r);
              }
            }
            s.variants.push_back(std::move(v));
          }
          std::stable_sort(s.variants.begin(), s.variants.end(), [](const VariantResult& a, const VariantResult& b) {
            return std::make_tuple(a.id != "original", a.id) < std::make_tuple(b.id != "original", b.id);
          });
          d.shapes.push_back(std::move(s));
        }
        select_dtype(d);
        sel.dtypes.push_back(std::move(d));
      }
      if (std::any_of(fs.begin(), fs.end(), [](const RawFile* f) { return f->mode == "search"; })) {
        SearchSummary sum;
        auto counted = [](const Measure& m, const char* k) {
          auto it = m.counters.find(k);
          return it != m.counters.end() && std::isfinite(it->second) && it->second > 0;
        };
        for (const DTypeResult& d : sel.dtypes)
          for (const ShapeResult& sh : d.shapes)
            for (const VariantResult& v : sh.variants) {
              if (v.sweep) {
                ++sum.screened;
                sum.remeasured += counted(*v.sweep, "remeasured");
                sum.still_noisy += counted(*v.sweep, "noisy");
              }
              sum.finalists += v.retest.has_value();
            }
        sel.search = sum;
      }
      out.push_back(std::move(sel));
    }
  }
  return out;
}

ojson candidates_json(const std::vector<Selection>& selections, int k) {
  ojson list = ojson::array();
  for (const Selection& sel : selections)
    for (const DTypeResult& d : sel.dtypes)
      for (const ShapeResult& s : d.shapes) {
        // Rank by sweep time alone: the candidates file is what the retest is about to measure.
        std::vector<std::pair<double, std::string>> by_sweep;
        for (const VariantResult& v : s.variants)
          if (v.id != "original" && v.verdict == Verdict::ok && v.sweep) by_sweep.emplace_back(v.sweep->median_us, v.id);
        std::sort(by_sweep.begin(), by_sweep.end());
        ojson ids = ojson::array();
        if (s.find("original")) ids.push_back("original");
        for (std::size_t i = 0; i < by_sweep.size() && static_cast<int>(i) < k; ++i) ids.push_back(by_sweep[i].second);
        const std::string& g = d.general.id;
        if (!g.empty() && std::find(ids.begin(), ids.end(), ojson(g)) == ids.end()) {
          const VariantResult* v = s.find(g);
          if (v && v->verdict == Verdict::ok) ids.push_back(g);
        }
        if (ids.size() < 2) continue;  // nothing to compare
        list.push_back({{"op", sel.op}, {"dtype", d.dtype}, {"shape", s.key}, {"ids", ids}});
      }
  return ojson{{"candidates", list}};
}

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

ojson measure_json(const Measure& m) {
  return ojson{{"median_us", m.median_us}, {"spread", m.spread}, {"samples", m.samples}, {"counters", counters_json(m.counters)}};
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
        ojson vj;
        vj["id"] = v.id;
        vj["verdict"] = to_string(v.verdict);
        if (!v.error.empty()) vj["error"] = v.error;
        if (v.sweep) vj["sweep"] = measure_json(*v.sweep);
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
                   {"still_noisy", s.search->still_noisy}, {"finalists", s.search->finalists}};
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
    if (auto p = j.find("search"); p != j.end())
      s.search = SearchSummary{p->at("screened").get<std::int64_t>(), p->at("remeasured").get<std::int64_t>(),
                               p->at("still_noisy").get<std::int64_t>(), p->at("finalists").get<std::int64_t>()};
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
