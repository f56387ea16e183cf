// tools/ktune/tables.cpp: kernels/<op>/tuned.cuh from results files (tables.hpp).
#include "tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "dispatch.hpp"
#include "io.hpp"

namespace ktune::tool {

namespace {

constexpr std::int64_t open_end = INT64_MAX;

std::int64_t geometric_midpoint(std::int64_t a, std::int64_t b) {
  // floor(sqrt(a*b)) computed without overflow, clamped into [a, b).
  auto m = static_cast<std::int64_t>(std::floor(std::sqrt(static_cast<long double>(a) * static_cast<long double>(b))));
  while (m > a && static_cast<long double>(m) * m > static_cast<long double>(a) * b) --m;
  return std::clamp(m, a, b - 1);
}

std::string percent(double x) { return fixed(100.0 * x, 1) + "%"; }

std::string dtype_enum(const std::string& d) {
  if (d == "fp32") return "ktune::DType::f32";
  if (d == "fp16") return "ktune::DType::f16";
  return "ktune::DType::bf16";
}
std::string dtype_type(const std::string& d) {
  if (d == "fp32") return "float";
  if (d == "fp16") return "__half";
  return "__nv_bfloat16";
}
int dtype_bytes(const std::string& d) { return d == "fp32" ? 4 : 2; }

std::string bound(std::int64_t v) { return v == open_end ? "INT64_MAX" : std::to_string(v); }

std::string shape_line(const Selection& sel, const ShapeResult& s, bool general_fill) {
  if (general_fill) return fmt::format("{}: no correct variant measured; general configuration", s.key);
  const VariantResult* w = s.find(s.winner);
  const Measure* m = w ? (s.band_source == "retest" && w->retest ? &*w->retest : (w->sweep ? &*w->sweep : nullptr)) : nullptr;
  std::string line = fmt::format("{}: {} us", s.key, m ? sig3(m->median_us) : "?");
  if (auto o = s.time_of("original"); o && m) line += fmt::format(" (S {} us, {}x)", sig3(*o), fixed(*o / m->median_us, 2));
  if (m) line += fmt::format(", spread {}", percent(m->spread));
  line += fmt::format(", band {} ({})", percent(s.noise_band), s.band_source);
  if (m)
    if (auto it = m->counters.find("pct_copy"); it != m->counters.end() && std::isfinite(it->second))
      line += fmt::format(", {}% of copy", fixed(it->second, 1));
  (void)sel;
  return line;
}

/// The start of every tuned.cuh after its banner: includes, namespace, the space hash.
std::string table_head(const std::string& op, const std::string& space_hash, const char* when) {
  std::string o = "#pragma once\n\n#include <cstddef>\n#include <cstdint>\n#include <type_traits>\n#include <utility>\n\n";
  o += "#include <ktune/space.hpp>\n#include <ktune/status.hpp>\n#include <ktune/tuned.hpp>\n\n#include \"space.hpp\"\n\n";
  o += fmt::format("namespace ktune::ops::{}::tuned {{\n\n", op);
  o += fmt::format("inline constexpr std::uint64_t space_hash = {}ull;  // Space::space.hash() {}\n\n", space_hash, when);
  return o;
}

/// The end of every tuned.cuh, inside `namespace detail` (opened by the caller, after its general-configuration
/// candidates): general_point (`choice` is a chain of "usable<Gi>() ? ... : " tests, or empty), the general
/// configuration type and id, and with_variant's switch over `variants` (id, dtype, arch).
std::string general_and_dispatch(const std::string& op, const std::string& choice,
                                 const std::vector<std::tuple<std::string, std::string, int>>& variants) {
  std::string o = fmt::format("inline constexpr Space::Point general_point = {}Space::default_point;\n", choice);
  o += "template <std::size_t... J>\n"
       "auto general_config_of(std::index_sequence<J...>) -> Space::template Config<general_point[J]...>;\n"
       "struct IdText { char text[256] = {}; };\n"
       "constexpr IdText id_text(const Space::Point& p) {\n"
       "  IdText r{};\n"
       "  std::size_t n = 0;\n"
       "  for (std::size_t k = 0; k < p.size(); ++k) {\n"
       "    if (k) r.text[n++] = '.';\n"
       "    for (const char* c = Space::space.params[k].name; *c; ++c) r.text[n++] = *c;\n"
       "    r.text[n++] = '_';\n"
       "    long long v = p[k];\n"
       "    if (v < 0) { r.text[n++] = '-'; v = -v; }\n"
       "    char digits[20] = {};\n"
       "    int m = 0;\n"
       "    do { digits[m++] = static_cast<char>('0' + v % 10); v /= 10; } while (v);\n"
       "    while (m) r.text[n++] = digits[--m];\n"
       "  }\n"
       "  return r;\n"
       "}\n"
       "inline constexpr IdText general_id_text = id_text(general_point);\n";
  o += "}  // namespace detail\n\n";
  o += "/// The general configuration: best geometric mean over the measured shapes and dtypes among the variants\n"
       "/// feasible everywhere, or Space::default_point before the first tune.\n";
  o += "using general_config = decltype(detail::general_config_of(std::make_index_sequence<Space::space.rank>{}));\n";
  o += "inline constexpr const char* general_id = detail::general_id_text.text;\n\n";

  o += "/// Calls f(Config{}) for the table's variant `variant` (element type E); -1 or unknown: the general config.\n";
  o += "template <class E, class F>\nktune::Status with_variant(int variant, F&& f) {\n";
  o += "  switch (variant) {\n";
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const auto& [id, dt, arch] = variants[v];
    o += fmt::format("    case {}: if constexpr (std::is_same_v<E, {}>) return f(ktune::variant_from_id_t<Space, V{}, {}, {}>{{}}); break;\n",
                     v, dtype_type(dt), v, arch, dtype_bytes(dt));
  }
  o += "    default: break;\n  }\n";
  o += "  return f(general_config{});  // general configuration: best geometric mean, or Space::default_point\n";
  o += "}\n\n";
  o += fmt::format("}}  // namespace ktune::ops::{}::tuned\n", op);
  return o;
}

}  // namespace

std::vector<std::int64_t> bucket_upper_bounds(const std::vector<std::int64_t>& measured) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < measured.size(); ++i)
    out.push_back(i + 1 < measured.size() ? geometric_midpoint(measured[i], measured[i + 1]) : open_end);
  return out;
}

std::map<std::string, DispatchRule> dispatch_rules(
    const std::vector<std::pair<std::string, std::vector<LoadedResults>>>& all) {
  std::map<std::string, std::vector<const Selection*>> by_gpu;
  for (const auto& [op, inputs] : all)
    for (const LoadedResults& r : inputs) by_gpu[r.selection.gpu_slug].push_back(&r.selection);
  std::map<std::string, DispatchRule> out;
  for (const auto& [slug, sels] : by_gpu) out[slug] = compare_dispatch(sels).best();
  return out;
}

std::vector<TableRow> table_rows(const std::vector<LoadedResults>& inputs_in, const std::map<std::string, DispatchRule>& rules) {
  std::vector<const LoadedResults*> inputs;
  for (const LoadedResults& r : inputs_in) inputs.push_back(&r);
  std::sort(inputs.begin(), inputs.end(), [](const LoadedResults* a, const LoadedResults* b) {
    return std::tie(a->selection.arch, a->selection.gpu, a->selection.gpu_slug) <
           std::tie(b->selection.arch, b->selection.gpu, b->selection.gpu_slug);
  });
  std::vector<TableRow> rows;
  for (const LoadedResults* in : inputs) {
    const Selection& sel = in->selection;
    const DispatchRule rule = rules.count(sel.gpu_slug) ? rules.at(sel.gpu_slug) : DispatchRule::bucket;
    for (const DTypeResult& d : sel.dtypes) {
      // (width, tokens) -> shape; the table has no other key, so a third varying dimension is an error.
      std::map<std::pair<std::int64_t, std::int64_t>, const ShapeResult*> grid;
      for (const ShapeResult& s : d.shapes) {
        if (s.held_out) continue;  // measured to judge the table, never to build it
        auto [it, fresh] = grid.emplace(std::make_pair(s.width, s.tokens), &s);
        if (!fresh)
          throw ToolError(fmt::format("{}: shapes {} and {} have the same {} and {}: tuned tables key on those two "
                                      "dimensions only", in->label, it->second->key, s.key, sel.tokens_dim, sel.width_dim));
      }
      const Dispatch fit(rule, training_shapes(d), d.general.id);
      std::vector<std::int64_t> token_max = fit.token_bounds(), width_max = fit.width_bounds();
      token_max.push_back(open_end);
      width_max.push_back(open_end);
      // A cell's representative: the measured value inside it, else its upper end (the rule is constant there).
      auto representative = [](const std::vector<std::int64_t>& bounds, std::size_t i, const auto& measured) {
        const std::int64_t lo = i == 0 ? 0 : bounds[i - 1] + 1, hi = bounds[i];
        for (std::int64_t v : measured)
          if (v >= lo && v <= hi) return v;
        return hi == open_end ? lo : hi;
      };
      std::set<std::int64_t> widths, tokens;
      for (const auto& [key, s] : grid) widths.insert(key.first), tokens.insert(key.second);

      struct Bucket {
        std::int64_t tokens_max;
        std::string id;
        std::vector<std::string> provenance;
      };
      std::vector<std::pair<std::int64_t, std::vector<Bucket>>> columns;  // (width_max, buckets)
      std::vector<std::int64_t> column_min;
      for (std::size_t wi = 0; wi < width_max.size(); ++wi) {
        const std::int64_t w = representative(width_max, wi, widths);
        std::vector<Bucket> buckets;
        for (std::size_t ti = 0; ti < token_max.size(); ++ti) {
          const std::int64_t t = representative(token_max, ti, tokens);
          const std::string id = fit.choose(t, w);
          if (id.empty()) continue;  // nothing to say for this cell: calls fall into the next bucket
          std::string note;
          if (auto it = grid.find({w, t}); it != grid.end()) {
            const ShapeResult& s = *it->second;
            note = shape_line(sel, s, s.winner.empty());
            if (!s.winner.empty() && id != s.winner)
              if (auto r = regret_at(s, id))
                note += fmt::format("; the {} rule's {} here, {} slower", name(rule), id, percent(*r));
          } else {
            note = fmt::format("{}={},{}={}: not measured; {}", sel.tokens_dim, t, sel.width_dim, w,
                               id == d.general.id && rule == DispatchRule::bucket ? "general configuration"
                                                                                  : fmt::format("the {} rule's choice", name(rule)));
          }
          if (!buckets.empty() && buckets.back().id == id) {
            buckets.back().tokens_max = token_max[ti];
            buckets.back().provenance.push_back(note);
          } else {
            buckets.push_back({token_max[ti], id, {note}});
          }
        }
        if (!buckets.empty()) buckets.back().tokens_max = open_end;
        const std::int64_t lo = wi == 0 ? 0 : width_max[wi - 1] + 1;
        auto same = [](const std::vector<Bucket>& a, const std::vector<Bucket>& b) {
          if (a.size() != b.size()) return false;
          for (std::size_t i = 0; i < a.size(); ++i)
            if (a[i].tokens_max != b[i].tokens_max || a[i].id != b[i].id) return false;
          return true;
        };
        if (!columns.empty() && same(columns.back().second, buckets)) {
          columns.back().first = width_max[wi];
          for (std::size_t i = 0; i < buckets.size(); ++i)
            for (auto& p : buckets[i].provenance) columns.back().second[i].provenance.push_back(std::move(p));
        } else {
          columns.emplace_back(width_max[wi], std::move(buckets));
          column_min.push_back(lo);
        }
      }
      for (std::size_t c = 0; c < columns.size(); ++c)
        for (Bucket& b : columns[c].second)
          rows.push_back({sel.arch, sel.gpu, d.dtype, b.id, b.tokens_max, column_min[c], columns[c].first,
                          std::move(b.provenance)});
    }
  }
  return rows;
}

std::string generate_table(const std::string& op, const std::vector<LoadedResults>& inputs,
                           const std::string& current_space_hash, const std::map<std::string, DispatchRule>& rules) {
  if (inputs.empty()) throw ToolError("no results for op '" + op + "'");
  std::string space_hash = inputs.front().selection.space_hash;
  for (const LoadedResults& r : inputs)
    if (r.selection.space_hash == current_space_hash && !current_space_hash.empty()) space_hash = current_space_hash;
  for (const LoadedResults& r : inputs)
    if (r.selection.space_hash != space_hash && space_hash != current_space_hash)
      throw ToolError(fmt::format("results for '{}' come from different spaces ({} in {}, {} in {}), neither of them "
                                  "the current one: re-tune so every GPU is measured on the same space",
                                  op, space_hash, inputs.front().label, r.selection.space_hash, r.label));
  if (space_hash.empty()) throw ToolError(fmt::format("{}: no space hash recorded (context space_hash.{})", inputs.front().label, op));
  const std::vector<TableRow> rows = table_rows(inputs, rules);

  std::string o;
  o += fmt::format("// Generated by `ktune tables` (ktune {}) for op {}. Do not edit: regenerate with `make tune` or "
                   "`ktune tables`.\n", KTUNE_TOOL_VERSION, op);
  o += "// Inputs (results files under the results directory, see docs/results-schema.md):\n";
  std::vector<const LoadedResults*> sorted;
  for (const LoadedResults& r : inputs) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->label < b->label; });
  for (const LoadedResults* r : sorted) {
    const Selection& s = r->selection;
    auto env = [&](const char* k) { return s.environment.count(k) ? s.environment.at(k) : std::string("unknown"); };
    o += fmt::format("//   {} ({}): {} (sm_{}), CUDA runtime {}, driver {}, measured {}, commit {}\n", r->label, r->hash,
                     s.gpu, s.arch, env("cuda_runtime_version"), env("driver_version"), env("date"), env("git_commit"));
    if (auto it = rules.find(s.gpu_slug); it != rules.end() && it->second != DispatchRule::bucket)
      o += fmt::format("//     cells between its measured shapes: the {} rule, the least regret on the measured shapes and those "
                       "left out of selection (docs/shapes.md; its reports' \"Dispatch\" section)\n", name(it->second));
    if (s.space_hash != space_hash)
      o += fmt::format("//     stale: measured on space {}, before the space became {}; its rows name points the space "
                       "still has, and the points added since were not measured on it: re-tune this GPU\n",
                       s.space_hash, space_hash);
  }
  o += "// Buckets: a row serves calls with tokens <= tokens_max (geometric midpoints between measured token\n"
       "// counts; the last bucket is open-ended) and width_min <= width <= width_max (split the same way). Adjacent\n"
       "// buckets with the same winner are merged; within a shape's noise band the winner prefers variants that\n"
       "// keep this table small. Per row: the measured shapes it covers, the winner's median time, S's time and\n"
       "// the speedup over S, the winner's spread, the noise band and its % of the copy ceiling.\n";
  o += table_head(op, space_hash, "when tuned");

  // One struct per distinct (id, dtype, arch): each becomes one instantiated kernel in user code.
  std::vector<std::tuple<std::string, std::string, int>> variants;
  auto variant_index = [&](const TableRow& r) {
    const auto key = std::make_tuple(r.id, r.dtype, r.arch);
    auto it = std::find(variants.begin(), variants.end(), key);
    if (it != variants.end()) return static_cast<int>(it - variants.begin());
    variants.push_back(key);
    return static_cast<int>(variants.size() - 1);
  };
  std::vector<int> index;
  for (const TableRow& r : rows) index.push_back(variant_index(r));
  for (std::size_t v = 0; v < variants.size(); ++v)
    o += fmt::format("struct V{} {{ static constexpr char id[] = \"{}\"; }};  // {}, sm_{}\n", v, std::get<0>(variants[v]),
                     std::get<1>(variants[v]), std::get<2>(variants[v]));
  if (!variants.empty()) o += "\n";

  if (rows.empty()) {
    o += "inline constexpr std::nullptr_t entries = nullptr;  // no correct variant measured\n\n";
  } else {
    o += "inline constexpr ktune::TunedEntry entries[] = {\n";
    std::string group;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const TableRow& r = rows[i];
      const std::string g = fmt::format("{} (sm_{}), {}", r.device, r.arch, r.dtype);
      if (g != group) {
        o += fmt::format("    // {}\n", g);
        group = g;
      }
      for (const std::string& p : r.provenance) o += fmt::format("    //   {}\n", p);
      o += fmt::format("    {{{}, \"{}\", {}, {}, {}, {}, {}, V{}::id}},\n", r.arch, r.device, dtype_enum(r.dtype),
                       bound(r.tokens_max), r.width_min, bound(r.width_max), index[i], index[i]);
    }
    o += "};\n\n";
  }

  // The general configuration: one type for every dtype (the API's fallback when no row matches, e.g.
  // on another architecture). Candidates are the best geometric means over every measured dtype and
  // shape on the first device (by arch, name); the first one feasible on every architecture ktune
  // supports, for every dtype of the table, is used, else the space's default point.
  const LoadedResults* first = nullptr;
  for (const LoadedResults* r : sorted)
    if (!first || std::tie(r->selection.arch, r->selection.gpu) < std::tie(first->selection.arch, first->selection.gpu)) first = r;
  const GeneralChoice general = general_across_dtypes(first->selection);
  std::set<int> sizes;
  for (const LoadedResults* r : sorted)
    for (const DTypeResult& d : r->selection.dtypes) sizes.insert(dtype_bytes(d.dtype));
  std::string size_list;
  for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) size_list += (size_list.empty() ? "" : ", ") + std::to_string(*it);
  o += "namespace detail {\n";
  o += fmt::format("constexpr bool feasible_everywhere(const Space::Point& p) {{\n"
                   "  for (int arch : ktune::supported_archs)\n"
                   "    for (int element_bytes : {{{}}})\n"
                   "      if (!Space::feasible(p, ktune::arch_limits(arch), element_bytes).ok()) return false;\n"
                   "  return true;\n"
                   "}}\n", size_list);
  o += "template <class Named>\n"
       "constexpr bool usable() {\n"
       "  static_assert(Space::space.parse(Named::id).ok,\n"
       "                \"The tuned table's general configuration names a variant id that this kernel's space no longer \"\n"
       "                \"has. The table is stale: regenerate it with `make tune` (or `ktune tables` from existing results).\");\n"
       "  return feasible_everywhere(Space::space.parse(Named::id).point);\n"
       "}\n";
  std::string choice;
  for (std::size_t i = 0; i < general.ranking.size(); ++i) {
    o += fmt::format("struct G{} {{ static constexpr char id[] = \"{}\"; }};  // {}: geometric mean {} us over {} (dtype, shape) pairs\n",
                     i, general.ranking[i].first, first->selection.gpu, sig3(general.ranking[i].second), general.shapes);
    choice += fmt::format("usable<G{}>() ? Space::space.parse(G{}::id).point : ", i, i);
  }
  o += general_and_dispatch(op, choice, variants);
  return o;
}

std::string generate_default_table(const std::string& op, std::uint64_t space_hash) {
  const std::string hash = fmt::format("0x{:016x}", space_hash);
  std::string o;
  o += fmt::format("// Generated by `ktune tables` (ktune {}) for op {} before its first tune.\n"
                   "// Do not edit: regenerate with `make tune` or `ktune tables`.\n", KTUNE_TOOL_VERSION, op);
  o += fmt::format("// Inputs: kernels/{}/space.hpp (space hash {}); no results yet, so no tuned rows:\n"
                   "// every call runs the general configuration, Space::default_point.\n", op, hash);
  o += table_head(op, hash, "when generated");
  o += "inline constexpr std::nullptr_t entries = nullptr;  // no results yet\n\n";
  o += "namespace detail {\n";
  o += general_and_dispatch(op, "", {});
  return o;
}

std::vector<std::pair<std::string, std::vector<LoadedResults>>> load_all_results(const std::string& results_dir) {
  std::map<std::string, std::vector<LoadedResults>> by_op;
  for (const std::string& gpu : list_dirs(results_dir)) {
    const std::string dir = join_path(results_dir, gpu);
    for (const std::string& file : list_files(dir, ".json")) {
      if (file.size() > 8 && file.compare(file.size() - 8, 8, ".t4.json") == 0) continue;
      const std::string path = join_path(dir, file);
      const std::string text = read_file(path);
      nlohmann::ordered_json j;
      try {
        j = nlohmann::ordered_json::parse(text);
      } catch (const nlohmann::json::exception& e) {
        throw ToolError(path + ": not valid JSON: " + e.what());
      }
      if (!j.is_object() || j.value("schema", std::string()) != "ktune.results") continue;  // e.g. index files
      LoadedResults r{gpu + "/" + file, content_hash(text), from_json(j, path)};
      by_op[r.selection.op].push_back(std::move(r));
    }
  }
  return {by_op.begin(), by_op.end()};
}

}  // namespace ktune::tool
