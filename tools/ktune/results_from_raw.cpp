// tools/ktune/results_from_raw.cpp: the selections built from the raw Google Benchmark files (`ktune select`),
// and the retest candidates drawn from them.
#include "results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <tuple>

#include <ktune/spec.hpp>

#include "io.hpp"
#include "list.hpp"

namespace ktune::tool {

using ojson = nlohmann::ordered_json;

namespace {

const char* const kept_context[] = {"ktune_version", "gpu", "arch", "sms", "l2_bytes", "sm_clock_khz",
                                    "mem_clock_khz", "driver_version", "cuda_runtime_version", "git_commit",
                                    "copy_ceiling_gbps", "copy_memcpy_gbps", "copy_kernel_gbps", "empty_kernel_us",
                                    "cold_l2", "date", "library_version", "library_build_type",
                                    // what the tune's GPU step cost (bench/README.md, "Where the time goes")
                                    "measure_wall_s", "startup_s", "slices", "prep_threads", "phase_prepare_s",
                                    "phase_gate_s", "phase_timing_s", "phase_verify_s"};

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
      for (const auto& [k, v] : primary->context)  // the parts of the gate and the checks
        if (is_part_key(k)) sel.environment[k] = v;
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
      sel.spec_held_out = spec.held_out;

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
            s.held_out = s.held_out || spec.held_out_value(spec.dims[i].first, any->name.dims[i].second);
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
        for (const DTypeResult& d : sel.dtypes) {
          // Every screened variant has a row at its shape, passing or not: a variant with a row at another
          // shape of the dtype and none here was left out by a guided screen.
          std::set<std::string> ids;
          for (const ShapeResult& sh : d.shapes)
            for (const VariantResult& v : sh.variants) ids.insert(v.id);
          for (const ShapeResult& sh : d.shapes) sum.guided_out += static_cast<std::int64_t>(ids.size() - sh.variants.size());
          for (const ShapeResult& sh : d.shapes)
            for (const VariantResult& v : sh.variants) {
              if (v.sweep) {
                ++sum.screened;
                sum.remeasured += counted(*v.sweep, "remeasured");
                sum.still_noisy += counted(*v.sweep, "noisy");
                sum.pruned += counted(*v.sweep, "pruned");
              }
              sum.finalists += v.retest.has_value();
            }
        }
        const RawFile& search = **std::find_if(fs.begin(), fs.end(), [](const RawFile* f) { return f->mode == "search"; });
        for (const auto& [key, text] : search.context) {
          if (key.rfind("search_", 0) != 0) continue;
          char* end = nullptr;
          const double v = std::strtod(text.c_str(), &end);
          if (text.empty() || *end != '\0' || !std::isfinite(v))
            throw ToolError(fmt::format("{}: context \"{}\" is \"{}\", not a number", search.path, key, text));
          sum.settings[key.substr(7)] = v;
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

}  // namespace ktune::tool
