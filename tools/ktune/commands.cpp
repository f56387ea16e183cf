// tools/ktune/commands.cpp: the tool's own commands that need no file of their own (`list`, `gen`, `run`,
// `select`, `tables`, `report`, `profile`): each reads its command line and does its work.
#include "commands.hpp"

#include "cli.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include <ktune/dtype.hpp>

#include "io.hpp"
#include "list.hpp"
#include "merge_raw.hpp"
#include "profile_section.hpp"
#include "raw.hpp"
#include "report.hpp"
#include "results.hpp"
#include "stability.hpp"
#include "tables.hpp"

namespace ktune::tool {

namespace {

int parse_int(const std::string& s, const std::string& what) {
  try {
    std::size_t n = 0;
    const int v = std::stoi(s, &n);
    if (n != s.size()) throw 0;
    return v;
  } catch (...) {
    throw usage_error(what + " must be an integer, not '" + s + "'");
  }
}

/// Progress on stderr with an ETA, at most every half second (plus the last step).
class Progress {
 public:
  Progress(std::string what, std::size_t total) : what_(std::move(what)), total_(total), start_(clock::now()) {}
  void step(std::size_t done, const std::string& item) {
    const auto now = clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double eta = done ? elapsed / static_cast<double>(done) * static_cast<double>(total_ - done) : 0.0;
    fmt::print(stderr, "{} {}/{} ({}){}\n", what_, done, total_, item,
               done < total_ && done ? fmt::format(", about {:.0f} s left", eta) : "");
  }

 private:
  using clock = std::chrono::steady_clock;
  std::string what_;
  std::size_t total_;
  clock::time_point start_, last_{};
};

}  // namespace

// ---- list -----------------------------------------------------------------------------------------

int cmd_list(const std::vector<std::string>& argv) {
  std::string known;
  for (const SpaceInfo& s : known_spaces()) known += " " + s.op;
  CLI::App app{"Prints each kernel's space θ (parameters and candidate values), then per dtype the total number of\n"
               "points, how many are feasible for the architecture, and how many each feasibility rule pruned (the\n"
               "rule's own text). Known ops (compiled into this binary from kernels/*/space.hpp):" +
                   (known.empty() ? std::string(" none") : known),
               "ktune list"};
  cli::style(app);
  std::string only, dtype_name;
  int arch = 90;
  bool points = false;
  app.add_option("op", only, "only this op");
  app.add_option("--arch", arch, "the architecture, as SM (default 90)");
  app.add_option("--dtype", dtype_name, "only this dtype: fp32, fp16 or bf16");
  app.add_flag("--points", points, "also list every point with its verdict");
  if (auto done = cli::parse(app, argv)) return *done;
  const ArchLimits limits = arch_limits(arch);
  if (!limits.known()) {
    std::string known;
    for (int s : supported_archs) known += " " + std::to_string(s);
    throw usage_error(fmt::format("--arch {} has no row in ktune/arch.hpp (known:{})", arch, known));
  }
  std::vector<DType> dtypes(std::begin(all_dtypes), std::end(all_dtypes));
  if (!dtype_name.empty()) {
    DType t{};
    if (!parse_dtype(dtype_name, t)) throw usage_error("--dtype must be fp32, fp16 or bf16");
    dtypes = {t};
  }
  bool found = false;
  for (const SpaceInfo& s : known_spaces()) {
    if (!only.empty() && s.op != only) continue;
    found = true;
    fmt::print("{}  (space hash 0x{:016x})\n", s.op, s.hash);
    for (const ParamInfo& p : s.params) {
      std::string vals;
      for (int v : p.values) vals += (vals.empty() ? "" : ", ") + std::to_string(v);
      fmt::print("  {:<8} {:<28} {{{}}}\n", p.name, p.unit, vals);
    }
    fmt::print("  default   {}\n  original  {}\n", s.default_id,
               s.original_id.empty() ? "(none: S's configuration is not a point of this space)" : s.original_id);
    for (DType t : dtypes) {
      const SpaceListing l = s.describe(limits, size_of(t));
      fmt::print("  sm_{} {}: {} points, {} feasible, {} pruned (unaligned fallback {})\n", arch, name(t), l.total, l.feasible,
                 l.total - l.feasible, s.unaligned_id(size_of(t)));
      for (const auto& [rule, n] : l.pruned) fmt::print("    {:>6} pruned by: {}\n", n, rule);
      if (points)
        for (const PointInfo& p : l.points) fmt::print("    {} {}\n", p.id, p.rule.empty() ? "feasible" : "pruned: " + p.rule);
    }
  }
  if (!found) {
    if (only.empty()) {
      fmt::print(stderr, "ktune list: no kernel spaces were compiled into this binary (no kernels/*/space.hpp at build time)\n");
      return exit_failure;
    }
    throw usage_error("unknown op '" + only + "' (see ktune list --help for the known ones)");
  }
  return exit_ok;
}

// ---- select ---------------------------------------------------------------------------------------

int cmd_select(const std::vector<std::string>& argv) {
  CLI::App app{"Reads Google Benchmark JSON written by ktune_bench (sweep and, later, retest runs), excludes the variants\n"
               "that failed the correctness gate or the device check (listed with their error), and per (op, dtype,\n"
               "shape) ranks the correct variants. With --topk K --candidates OUT it writes the retest candidates (S,\n"
               "the top K by sweep time and the general configuration per shape) for `ktune_bench --retest OUT` and\n"
               "nothing else; otherwise the normalised results <results>/<gpu>/<op>.json (docs/results-schema.md) and\n"
               "the Kernel Tuner T4 export <op>.t4.json beside it. Later files override earlier ones for the same\n"
               "benchmark and mode, so a resumed run is given last.",
               "ktune select"};
  cli::style(app);
  std::vector<std::string> raw, files_after;
  std::string candidates, kernels, results_dir = "reports", build_path = "build/ktune-build.json";
  int topk = 0;
  app.add_option("--raw", raw, "the raw files, in order")->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("files", files_after, "more raw files");
  auto* topk_opt = app.add_option("--topk", topk, "retest candidates: the top K by sweep time per shape")
                       ->check(CLI::PositiveNumber);
  auto* candidates_opt = app.add_option("--candidates", candidates, "where the retest candidates go");
  topk_opt->needs(candidates_opt);
  candidates_opt->needs(topk_opt);
  app.add_option("--kernels", kernels,
                 "kernel folders with spec.json (default: where the build found each op: kernels/ and the "
                 "KTUNE_KERNEL_ROOTS folders)");
  app.add_option("--results", results_dir, "where results go (default: reports)");
  auto* build_opt = app.add_option("--build-json", build_path,
                                   "build record kept in the results for the report (default: build/ktune-build.json "
                                   "if present; none: no record)");
  if (auto done = cli::parse(app, argv)) return *done;
  raw.insert(raw.end(), files_after.begin(), files_after.end());
  if (raw.empty()) throw usage_error("ktune select needs --raw FILE... (see --help)");

  std::vector<RawFile> files;
  Progress progress("ktune select: read", raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    files.push_back(load_raw(raw[i]));
    progress.step(i + 1, raw[i]);
  }
  std::vector<std::string> warnings;
  std::vector<Selection> selections = build_selections(files, kernels, warnings);
  for (const std::string& w : warnings) fmt::print(stderr, "ktune select: warning: {}\n", w);
  if (selections.empty()) {
    fmt::print(stderr, "ktune select: no kernel benchmarks in the inputs\n");
    return exit_failure;
  }

  std::size_t excluded = 0;
  for (const Selection& s : selections)
    for (const DTypeResult& d : s.dtypes)
      for (const Excluded& e : d.excluded) {
        ++excluded;
        fmt::print("excluded {}/{}/{} on {} shape(s) [{}]: {}\n", s.op, d.dtype, e.id, e.shapes.size(), to_string(e.verdict),
                   e.error);
      }

  if (topk > 0) {
    const auto cand = candidates_json(selections, topk);
    write_atomic(candidates, dump_json(cand, 3));
    fmt::print("ktune select: {} retest candidate groups (top {}) -> {}\n", cand["candidates"].size(), topk, candidates);
    return exit_ok;
  }

  nlohmann::ordered_json build;
  if (build_path == "none") {
    // explicitly no build record
  } else if (file_exists(build_path)) {
    try {
      build = nlohmann::ordered_json::parse(read_file(build_path));
    } catch (const nlohmann::json::exception& e) {
      throw ToolError(build_path + ": not valid JSON: " + e.what());
    }
  } else if (build_opt->count()) {
    throw ToolError(build_path + " does not exist");
  }
  for (Selection& s : selections) {
    s.build = build;
    const std::string path = results_path(results_dir, s.gpu_slug, s.op);
    write_atomic(path, dump_json(to_json(s), 6));
    const std::string t4 = path.substr(0, path.size() - 5) + ".t4.json";
    write_atomic(t4, dump_json(to_t4(s), 3));
    fmt::print("{} ({}):\n", s.op, s.gpu);
    for (const DTypeResult& d : s.dtypes) {
      std::set<std::string> winners;
      for (const ShapeResult& sh : d.shapes)
        if (!sh.winner.empty()) winners.insert(sh.winner);
      fmt::print("  {}: {} shapes, {} distinct winners, general {}, {} excluded\n", d.dtype, d.shapes.size(),
                 winners.size(), d.general.id.empty() ? "(none)" : d.general.id, d.excluded.size());
    }
    fmt::print("  -> {}\n  -> {}\n", path, t4);
  }
  if (excluded) fmt::print("ktune select: {} variant(s) excluded, listed above\n", excluded);
  return exit_ok;
}

// ---- tables ---------------------------------------------------------------------------------------

namespace {
/// The first variant id a table could take from `sel` (a winner, a general configuration or one of its
/// runners-up) that is no point of `space`; empty when there is none.
std::string first_id_not_in(const SpaceInfo& space, const Selection& sel) {
  for (const DTypeResult& d : sel.dtypes) {
    std::vector<std::string> ids = {d.general.id};
    for (const auto& [id, geomean] : d.general.ranking) ids.push_back(id);
    for (const ShapeResult& sh : d.shapes) ids.push_back(sh.winner);
    for (const std::string& id : ids)
      if (!id.empty() && id != "original" && !names_point(space, id)) return id;
  }
  return {};
}
}  // namespace

int cmd_tables(const std::vector<std::string>& argv) {
  CLI::App app{"Writes kernels/<op>/tuned.cuh for every op that has results files (<results>/<gpu>/<op>.json): per\n"
               "architecture, device and dtype, token-count and width buckets -> variant, the general configuration as\n"
               "fallback, the space hash and per-entry provenance. Deterministic; written atomically.",
               "ktune tables"};
  cli::style(app);
  std::string results_dir = "reports", kernels_dir;
  bool check = false;
  app.add_option("--results", results_dir, "default: reports");
  app.add_option("--kernels", kernels_dir,
                 "default: where the build found each op (kernels/ and the KTUNE_KERNEL_ROOTS folders; the op's "
                 "folder must exist)");
  app.add_flag("--check", check, "regenerate in memory and fail (exit 1) if any file differs");
  if (auto done = cli::parse(app, argv)) return *done;
  const auto all = load_all_results(results_dir);
  if (all.empty()) {
    fmt::print("ktune tables: no results files under {}; nothing to do\n", results_dir);
    return exit_ok;
  }
  int stale = 0;
  const std::map<std::string, DispatchRule> rules = dispatch_rules(all);
  for (const auto& [slug, rule] : rules) fmt::print("{}: dispatch rule {}\n", slug, name(rule));
  for (const auto& [op, inputs] : all) {
    const std::string dir = kernel_folder(op, kernels_dir);
    if (!is_directory(dir)) {
      fmt::print(stderr, "ktune tables: results for '{}' but no kernel folder {}; skipped\n", op, dir);
      continue;
    }
    std::string current;  // the op's space hash in this build, when it knows the op
    for (const SpaceInfo& s : known_spaces())
      if (s.op == op) {
        current = fmt::format("0x{:016x}", s.hash);
        for (const LoadedResults& r : inputs)
          if (r.selection.space_hash != current) {
            fmt::print(stderr, "ktune tables: warning: {} was measured on space {}, the space is now {}: re-tune\n",
                       r.label, r.selection.space_hash, current);
            if (const std::string id = first_id_not_in(s, r.selection); !id.empty())
              throw ToolError(fmt::format("{} names {}, which is no point of {}'s space now: re-tune that GPU (or remove "
                                          "its results) before building the table", r.label, id, op));
          }
      }
    const std::string text = generate_table(op, inputs, current, rules);
    const std::string path = join_path(dir, "tuned.cuh");
    if (check) {
      const bool same = file_exists(path) && read_file(path) == text;
      if (!same) {
        ++stale;
        fmt::print(stderr, "ktune tables --check: {} is out of date with {}: run `ktune tables --results {}{}`\n", path,
                   results_dir, results_dir, kernels_dir.empty() ? "" : " --kernels " + kernels_dir);
      } else {
        fmt::print("{} is up to date\n", path);
      }
    } else {
      fmt::print("{} {}\n", path, write_atomic(path, text) ? "written" : "unchanged");
    }
  }
  return stale ? exit_failure : exit_ok;
}

// ---- report ---------------------------------------------------------------------------------------

/// The markdown pages in <gpu folder>/upstream/ (bench/upstream's comparisons), relative to the GPU's
/// folder and sorted, for the index to link to.
std::vector<std::string> upstream_pages(const std::string& gpu_dir) {
  std::vector<std::string> pages;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(join_path(gpu_dir, "upstream"), ec))
    if (e.is_regular_file() && e.path().extension() == ".md") pages.push_back("upstream/" + e.path().filename().string());
  std::sort(pages.begin(), pages.end());
  return pages;
}

int cmd_report(const std::vector<std::string>& argv) {
  CLI::App app{"From the results files <results>/<gpu>/<op>.json writes <op>.md and a self-contained <op>.html (inline\n"
               "SVG: speedup over S, % of copy ceiling, general configuration vs per-shape best, chosen θ per shape;\n"
               "excluded variants, noise band, cost, and the command that reproduces each row), and index.{md,html}\n"
               "per GPU.",
               "ktune report"};
  cli::style(app);
  std::string results_dir = "reports";
  bool check = false;
  app.add_option("--results", results_dir, "default: reports");
  app.add_flag("--check", check, "regenerate in memory and fail (exit 1) if any file differs");
  if (auto done = cli::parse(app, argv)) return *done;
  const auto all = load_all_results(results_dir);
  if (all.empty()) {
    fmt::print("ktune report: no results files under {}; nothing to do\n", results_dir);
    return exit_ok;
  }
  std::map<std::string, std::vector<const LoadedResults*>> by_gpu;
  for (const auto& [op, inputs] : all)
    for (const LoadedResults& r : inputs) by_gpu[r.selection.gpu_slug].push_back(&r);
  std::vector<std::pair<std::string, std::string>> outputs;  // path, content
  for (auto& [slug, list] : by_gpu) {
    std::sort(list.begin(), list.end(), [](auto* x, auto* y) { return x->selection.op < y->selection.op; });
    const std::string dir = join_path(results_dir, slug);
    for (const LoadedResults* r : list) {
      outputs.emplace_back(join_path(dir, r->selection.op + ".md"), op_markdown(*r));
      outputs.emplace_back(join_path(dir, r->selection.op + ".html"), op_html(*r));
    }
    const std::vector<std::string> upstream = upstream_pages(dir);
    const DispatchSection dispatch = dispatch_section(list);  // once for both pages
    outputs.emplace_back(join_path(dir, "index.md"), index_markdown(slug, list, upstream, &dispatch));
    outputs.emplace_back(join_path(dir, "index.html"), index_html(slug, list, upstream, &dispatch));
  }
  int stale = 0;
  for (const auto& [path, text] : outputs) {
    if (check) {
      if (!file_exists(path) || read_file(path) != text) {
        ++stale;
        fmt::print(stderr, "ktune report --check: {} is out of date: run `ktune report --results {}`\n", path, results_dir);
      }
    } else {
      fmt::print("{} {}\n", path, write_atomic(path, text) ? "written" : "unchanged");
    }
  }
  if (check && !stale) fmt::print("ktune report --check: {} files up to date\n", outputs.size());
  return stale ? exit_failure : exit_ok;
}

// ---- executables of their own: the benchmark and the profiler link every compiled variant (and
// CUPTI), which this host-only tool does not; `ktune run` / `ktune profile` run them in its place.
std::filesystem::path find_sibling(const std::string& name, const std::string& build_subdir) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (const std::filesystem::path& p : {self / name, self / build_subdir / name, self.parent_path() / build_subdir / name})
    if (std::filesystem::exists(p)) return p;
  throw ToolError(name + " was not found beside ktune (" + self.string() + ") or in its build folder", exit_failure);
}

[[noreturn]] void exec_tool(const std::filesystem::path& tool, std::vector<std::string> args) {
  args.insert(args.begin(), tool.string());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execv(tool.c_str(), argv.data());
  throw ToolError("could not run " + tool.string() + ": " + std::strerror(errno), exit_failure);
}

int cmd_profile(const std::vector<std::string>& args) {
  // Everything after the op is ktune_profile's own (`ktune profile <op> --help` lists it); this parser
  // reads only a call without the op.
  if (args.empty() || args[0].rfind("-", 0) == 0) {
    CLI::App app{"Runs ktune_profile (found beside ktune or in the build's tools/profile/) for one op on this GPU:\n"
                 "CUPTI metrics and the diagnosis findings of S and the variants asked for, e.g. --variant ID|original|all\n"
                 "--shape DIM=V,... --dtype T --json F. `ktune profile <op> --help` lists ktune_profile's own options;\n"
                 "`ktune profile-plan` and `ktune profile-attach` profile the winners of a tune.",
                 "ktune profile"};
    cli::style(app);
    std::string op;
    app.add_option("op", op, "the op, then ktune_profile's options")->required();
    if (auto done = cli::parse(app, args)) return *done;
  }
  std::vector<std::string> forwarded = {"--op", args[0]};
  forwarded.insert(forwarded.end(), args.begin() + 1, args.end());
  exec_tool(find_sibling("ktune_profile", "profile"), forwarded);
}

int cmd_run(const std::vector<std::string>& args) { exec_tool(find_sibling("ktune_bench", "bench"), args); }

int cmd_gen(const std::vector<std::string>& argv) {
  CLI::App app{"Writes the generated translation units the build compiles (cmake/KtuneVariants.cmake makes the same\n"
               "files in <build>/generated/): per op and architecture, N shard units from bench/shard.cu.in (shard k\n"
               "instantiates feasible points k, k+N, ... for fp32, fp16 and bf16) and one unit for the original kernel\n"
               "from bench/original.cu.in, as DIR/<op>/sm<arch>_shard<k>.cu and DIR/<op>/sm<arch>_original.cu.\n"
               "Deterministic; prints how many variants each shard holds per dtype.",
               "ktune gen"};
  cli::style(app);
  std::string out, templates = "bench", arch_list = "90";
  std::vector<std::string> ops;
  int shards = 8;
  app.add_option("ops", ops, "only these ops (default: every op compiled into this binary)");
  app.add_option("--out", out, "where the units go")->required();
  app.add_option("--archs", arch_list, "architectures, as SM,SM,... (default 90)");
  app.add_option("--shards", shards, "shard units per op and architecture (default 8)")->check(CLI::PositiveNumber);
  app.add_option("--templates", templates, "the folder of shard.cu.in and original.cu.in (default: bench)");
  if (auto done = cli::parse(app, argv)) return *done;
  std::vector<int> archs;
  for (const std::string& s : cli::split_list(arch_list)) {
    const int arch = parse_int(s, "--archs");
    if (!arch_limits(arch).known()) throw usage_error("--archs: sm_" + s + " has no row in ktune/arch.hpp");
    archs.push_back(arch);
  }
  const std::string shard_in = read_file(join_path(templates, "shard.cu.in"));
  const std::string original_in = read_file(join_path(templates, "original.cu.in"));
  std::set<std::string> only(ops.begin(), ops.end());
  int written = 0;
  for (const SpaceInfo& sp : known_spaces()) {
    if (!only.empty() && !only.count(sp.op)) continue;
    only.erase(sp.op);
    const std::map<std::string, std::string> op_values = {
        {"KTUNE_OP", sp.op}, {"KTUNE_FAMILY", "ktune::ops::" + sp.op + "::Family"},
        {"KTUNE_FAMILY_HEADER", "kernels/" + sp.op + "/family.cuh"}, {"KTUNE_SHARDS", std::to_string(shards)}};
    for (int arch : archs) {
      auto values = op_values;
      values["KTUNE_ARCH"] = std::to_string(arch);
      const std::string dir = join_path(out, sp.op);
      const std::string prefix = join_path(dir, "sm" + std::to_string(arch) + "_");
      std::filesystem::create_directories(dir);
      write_atomic(prefix + "original.cu", substitute(original_in, values));
      ++written;
      std::string counts;
      for (DType t : all_dtypes) {
        const std::size_t feasible = sp.describe(arch_limits(arch), size_of(t)).feasible;
        counts += fmt::format(" {} {} ({}-{} per shard)", name(t), feasible, feasible / shards,
                              (feasible + shards - 1) / shards);
      }
      for (int k = 0; k < shards; ++k) {
        values["KTUNE_SHARD"] = std::to_string(k);
        write_atomic(prefix + "shard" + std::to_string(k) + ".cu", substitute(shard_in, values));
        ++written;
      }
      fmt::print("{} sm_{}: {} shards + original;{}\n", sp.op, arch, shards, counts);
    }
  }
  if (!only.empty()) throw usage_error("unknown op '" + *only.begin() + "' (ktune list shows the known ones)");
  fmt::print("ktune gen: {} units in {}\n", written, out);
  return exit_ok;
}

}  // namespace ktune::tool
