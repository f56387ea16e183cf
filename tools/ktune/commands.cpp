#include "commands.hpp"

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

constexpr const char* main_help =
    "ktune " KTUNE_TOOL_VERSION ": the host side of `make tune`\n"
    "\n"
    "usage: ktune <command> [options]     ktune <command> --help\n"
    "\n"
    "commands:\n"
    "  list [op]      a kernel's space per dtype and architecture: total, feasible, pruned per rule\n"
    "  gen            the generated translation units: every op's feasible variants in shards (as the build does)\n"
    "  run            the benchmark sweep on this GPU (runs ktune_bench; tools/tune.sh run adds the retest)\n"
    "  select         Google Benchmark JSON -> retest candidates (--topk) or reports/<gpu>/<op>.json + .t4.json\n"
    "  merge-raw      the slices' Google Benchmark JSON (one per GPU or cluster task) -> one file for select\n"
    "                 (ktune merge-raw --out OUT [--names FILE] IN...)\n"
    "  tables         reports/*/<op>.json -> kernels/<op>/tuned.cuh (--check: fail if out of date)\n"
    "  report         reports/*/<op>.json -> reports/<gpu>/<op>.{md,html} and index.{md,html} (--check)\n"
    "  compare A B    two tunes shape by shape: winners held or within band, run-to-run variation of the winner's\n"
    "                 time (--attach: the reports' run-to-run section)\n"
    "  profile <op>   CUPTI metrics and findings of one op's variants on this GPU (runs ktune_profile:\n"
    "                 ktune profile <op> [--variant ID|original|all] [--shape DIM=V,...] [--dtype T] [--json F])\n"
    "  profile-plan   reports/<gpu>/<op>.json -> the calls `ktune_profile --plan` profiles (S and the winners)\n"
    "  profile-attach ktune_profile's JSON -> the \"profile\" section of reports/<gpu>/<op>.json\n"
    "  derive S.cu    the parts of kernels/OP/ that follow from S and its spec (all but space.hpp and family.cuh)\n"
    "                 (ktune derive S.cu --spec SPEC.json --name OP; see ktune derive --help)\n"
    "  agent S.cu     stage 1: an LLM writes a tunable family of S, judged and tuned here round by round\n"
    "                 (ktune agent S.cu --spec SPEC.json --name OP; see ktune agent --help)\n"
    "\n"
    "exit codes: 0 ok, 1 failure, 2 usage error\n";

/// A minimal option parser: --name value, --name=value, --flag, and positionals.
class Args {
 public:
  Args(const std::vector<std::string>& args, const std::set<std::string>& flags, const std::set<std::string>& options,
       const std::set<std::string>& multi = {}) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      std::string a = args[i];
      if (a.rfind("--", 0) != 0 || a == "--") {
        positional_.push_back(a);
        continue;
      }
      std::string value;
      bool has_value = false;
      if (auto eq = a.find('='); eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_value = true;
      }
      const std::string name = a.substr(2);
      if (flags.count(name)) {
        if (has_value) throw usage_error("--" + name + " takes no value");
        flags_.insert(name);
      } else if (options.count(name) || multi.count(name)) {
        if (!has_value) {
          if (i + 1 >= args.size()) throw usage_error("--" + name + " needs a value");
          value = args[++i];
        }
        values_[name].push_back(value);
        // A multi-valued option takes every following argument up to the next option.
        if (multi.count(name))
          while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) values_[name].push_back(args[++i]);
      } else {
        throw usage_error("unknown option --" + name);
      }
    }
  }
  bool flag(const std::string& n) const { return flags_.count(n) > 0; }
  std::string get(const std::string& n, const std::string& fallback) const {
    auto it = values_.find(n);
    return it == values_.end() ? fallback : it->second.back();
  }
  std::vector<std::string> all(const std::string& n) const {
    auto it = values_.find(n);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
  }
  bool has(const std::string& n) const { return values_.count(n) > 0; }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::set<std::string> flags_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

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

bool wants_help(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--help") != args.end() ||
         std::find(args.begin(), args.end(), "-h") != args.end();
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
  if (wants_help(argv)) {
    fmt::print(
        "usage: ktune list [op] [--arch SM] [--dtype fp32|fp16|bf16] [--points]\n"
        "\n"
        "Prints each kernel's space θ (parameters and candidate values), then per dtype the total number of\n"
        "points, how many are feasible for the architecture (default sm_90), and how many each feasibility rule\n"
        "pruned (the rule's own text). --points also lists every point with its verdict.\n"
        "Known ops (compiled into this binary from kernels/*/space.hpp):");
    for (const SpaceInfo& s : known_spaces()) fmt::print(" {}", s.op);
    fmt::print("{}\n", known_spaces().empty() ? " none" : "");
    return exit_ok;
  }
  const Args a(argv, {"points"}, {"arch", "dtype"});
  const int arch = parse_int(a.get("arch", "90"), "--arch");
  const ArchLimits limits = arch_limits(arch);
  if (!limits.known()) {
    std::string known;
    for (int s : supported_archs) known += " " + std::to_string(s);
    throw usage_error(fmt::format("--arch {} has no row in ktune/arch.hpp (known:{})", arch, known));
  }
  std::vector<DType> dtypes(std::begin(all_dtypes), std::end(all_dtypes));
  if (a.has("dtype")) {
    DType t{};
    if (!parse_dtype(a.get("dtype", ""), t)) throw usage_error("--dtype must be fp32, fp16 or bf16");
    dtypes = {t};
  }
  if (a.positional().size() > 1) throw usage_error("ktune list takes at most one op");
  const std::string only = a.positional().empty() ? "" : a.positional().front();
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
      if (a.flag("points"))
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
  if (wants_help(argv)) {
    fmt::print(
        "usage: ktune select --raw FILE... [--topk K --candidates OUT] [--kernels DIR] [--results DIR]\n"
        "                    [--build-json FILE]\n"
        "\n"
        "Reads Google Benchmark JSON written by ktune_bench (sweep and, later, retest runs), excludes the variants\n"
        "that failed the correctness gate or the device check (listed with their error), and per (op, dtype, shape)\n"
        "ranks the correct variants.\n"
        "  --topk K --candidates OUT  write the retest candidates (S, the top K by sweep time and the general\n"
        "                             configuration per shape) for `ktune_bench --retest OUT`; nothing else.\n"
        "  otherwise                  write the normalised results <results>/<gpu>/<op>.json (docs/results-schema.md)\n"
        "                             and the Kernel Tuner T4 export <op>.t4.json beside it.\n"
        "  --kernels DIR   kernel folders with spec.json (default: where the build found each op: kernels/ and the\n"
        "                  KTUNE_KERNEL_ROOTS folders)\n"
        "  --results DIR   where results go (default: reports)\n"
        "  --build-json F  build record kept in the results for the report (default: build/ktune-build.json if\n"
        "                  present; none: no record)\n"
        "Later files override earlier ones for the same benchmark and mode, so a resumed run is given last.\n");
    return exit_ok;
  }
  const Args a(argv, {}, {"topk", "candidates", "kernels", "results", "build-json"}, {"raw"});
  std::vector<std::string> raw = a.all("raw");
  for (const std::string& p : a.positional()) raw.push_back(p);
  if (raw.empty()) throw usage_error("ktune select needs --raw FILE... (see --help)");
  if (a.has("topk") != a.has("candidates")) throw usage_error("--topk and --candidates go together");
  const int topk = a.has("topk") ? parse_int(a.get("topk", "5"), "--topk") : 0;
  if (a.has("topk") && topk < 1) throw usage_error("--topk must be at least 1");

  std::vector<RawFile> files;
  Progress progress("ktune select: read", raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    files.push_back(load_raw(raw[i]));
    progress.step(i + 1, raw[i]);
  }
  std::vector<std::string> warnings;
  std::vector<Selection> selections = build_selections(files, a.get("kernels", ""), warnings);
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
    write_atomic(a.get("candidates", ""), dump_json(cand, 3));
    fmt::print("ktune select: {} retest candidate groups (top {}) -> {}\n", cand["candidates"].size(), topk,
               a.get("candidates", ""));
    return exit_ok;
  }

  const std::string build_path = a.get("build-json", "build/ktune-build.json");
  nlohmann::ordered_json build;
  if (build_path == "none") {
    // explicitly no build record
  } else if (file_exists(build_path)) {
    try {
      build = nlohmann::ordered_json::parse(read_file(build_path));
    } catch (const nlohmann::json::exception& e) {
      throw ToolError(build_path + ": not valid JSON: " + e.what());
    }
  } else if (a.has("build-json")) {
    throw ToolError(build_path + " does not exist");
  }
  const std::string results_dir = a.get("results", "reports");
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

int cmd_tables(const std::vector<std::string>& argv) {
  if (wants_help(argv)) {
    fmt::print(
        "usage: ktune tables [--results DIR] [--kernels DIR] [--check]\n"
        "\n"
        "Writes kernels/<op>/tuned.cuh for every op that has results files (<results>/<gpu>/<op>.json): per\n"
        "architecture, device and dtype, token-count and width buckets -> variant, the general configuration as\n"
        "fallback, the space hash and per-entry provenance. Deterministic; written atomically.\n"
        "  --results DIR   default: reports\n"
        "  --kernels DIR   default: where the build found each op (kernels/ and the KTUNE_KERNEL_ROOTS folders;\n"
        "                  the op's folder must exist)\n"
        "  --check         regenerate in memory and fail (exit 1) if any file differs\n");
    return exit_ok;
  }
  const Args a(argv, {"check"}, {"results", "kernels"});
  if (!a.positional().empty()) throw usage_error("ktune tables takes no positional arguments");
  const std::string results_dir = a.get("results", "reports");
  const std::string kernels_dir = a.get("kernels", "");
  const auto all = load_all_results(results_dir);
  if (all.empty()) {
    fmt::print("ktune tables: no results files under {}; nothing to do\n", results_dir);
    return exit_ok;
  }
  int stale = 0;
  for (const auto& [op, inputs] : all) {
    const std::string dir = kernel_folder(op, kernels_dir);
    if (!is_directory(dir)) {
      fmt::print(stderr, "ktune tables: results for '{}' but no kernel folder {}; skipped\n", op, dir);
      continue;
    }
    for (const SpaceInfo& s : known_spaces())
      if (s.op == op)
        for (const LoadedResults& r : inputs)
          if (r.selection.space_hash != fmt::format("0x{:016x}", s.hash))
            fmt::print(stderr, "ktune tables: warning: {} was measured on space {}, the space is now 0x{:016x}: re-tune\n",
                       r.label, r.selection.space_hash, s.hash);
    const std::string text = generate_table(op, inputs);
    const std::string path = join_path(dir, "tuned.cuh");
    if (a.flag("check")) {
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

int cmd_report(const std::vector<std::string>& argv) {
  if (wants_help(argv)) {
    fmt::print(
        "usage: ktune report [--results DIR] [--check]\n"
        "\n"
        "From the results files <results>/<gpu>/<op>.json writes <op>.md and a self-contained <op>.html (inline SVG:\n"
        "speedup over S, % of copy ceiling, general configuration vs per-shape best, chosen θ per shape; excluded\n"
        "variants, noise band, cost, and the command that reproduces each row), and index.{{md,html}} per GPU.\n"
        "  --results DIR   default: reports\n"
        "  --check         regenerate in memory and fail (exit 1) if any file differs\n");
    return exit_ok;
  }
  const Args a(argv, {"check"}, {"results"});
  if (!a.positional().empty()) throw usage_error("ktune report takes no positional arguments");
  const std::string results_dir = a.get("results", "reports");
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
    outputs.emplace_back(join_path(dir, "index.md"), index_markdown(slug, list));
    outputs.emplace_back(join_path(dir, "index.html"), index_html(slug, list));
  }
  int stale = 0;
  for (const auto& [path, text] : outputs) {
    if (a.flag("check")) {
      if (!file_exists(path) || read_file(path) != text) {
        ++stale;
        fmt::print(stderr, "ktune report --check: {} is out of date: run `ktune report --results {}`\n", path, results_dir);
      }
    } else {
      fmt::print("{} {}\n", path, write_atomic(path, text) ? "written" : "unchanged");
    }
  }
  if (a.flag("check") && !stale) fmt::print("ktune report --check: {} files up to date\n", outputs.size());
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

constexpr const char* profile_help =
    "usage: ktune profile <op> [--variant ID|original|all] [--shape DIM=V,...] [--dtype T] [--json F] [ktune_profile options]\n"
    "\n"
    "Runs ktune_profile (found beside ktune or in the build's tools/profile/) for one op on this GPU: CUPTI metrics\n"
    "and the diagnosis findings of S and the variants asked for. `ktune profile <op> --help` lists ktune_profile's\n"
    "own options; `ktune profile-plan` and `ktune profile-attach` profile the winners of a tune.\n";

[[noreturn]] void cmd_profile(const std::vector<std::string>& args) {
  if (args.empty() || args[0].rfind("-", 0) == 0)
    throw usage_error("profile needs the op first: ktune profile <op> [ktune_profile options] (ktune_profile --help)");
  std::vector<std::string> forwarded = {"--op", args[0]};
  forwarded.insert(forwarded.end(), args.begin() + 1, args.end());
  exec_tool(find_sibling("ktune_profile", "profile"), forwarded);
}

[[noreturn]] void cmd_run(const std::vector<std::string>& args) { exec_tool(find_sibling("ktune_bench", "bench"), args); }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (std::size_t at; (at = s.find(sep, from)) != std::string::npos; from = at + 1) out.push_back(s.substr(from, at - from));
  out.push_back(s.substr(from));
  return out;
}

int cmd_gen(const std::vector<std::string>& argv) {
  if (wants_help(argv)) {
    fmt::print(
        "usage: ktune gen --out DIR [--archs 90,...] [--shards N] [--templates DIR] [op...]\n"
        "\n"
        "Writes the generated translation units the build compiles (cmake/KtuneVariants.cmake makes the same\n"
        "files in <build>/generated/): per op and architecture, N shard units from bench/shard.cu.in (shard k\n"
        "instantiates feasible points k, k+N, ... for fp32, fp16 and bf16) and one unit for the original kernel\n"
        "from bench/original.cu.in, as DIR/<op>/sm<arch>_shard<k>.cu and DIR/<op>/sm<arch>_original.cu.\n"
        "Deterministic; prints how many variants each shard holds per dtype.\n");
    return exit_ok;
  }
  const Args a(argv, {}, {"out", "archs", "shards", "templates"});
  if (!a.has("out")) throw usage_error("ktune gen needs --out DIR");
  const std::string out = a.get("out", "");
  const std::string templates = a.get("templates", "bench");
  const int shards = parse_int(a.get("shards", "8"), "--shards");
  if (shards < 1) throw usage_error("--shards must be at least 1");
  std::vector<int> archs;
  for (const std::string& s : split(a.get("archs", "90"), ',')) {
    const int arch = parse_int(s, "--archs");
    if (!arch_limits(arch).known()) throw usage_error("--archs: sm_" + s + " has no row in ktune/arch.hpp");
    archs.push_back(arch);
  }
  const std::string shard_in = read_file(join_path(templates, "shard.cu.in"));
  const std::string original_in = read_file(join_path(templates, "original.cu.in"));
  std::set<std::string> only(a.positional().begin(), a.positional().end());
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

// ---- dispatch -------------------------------------------------------------------------------------

int run_ktune(const std::vector<std::string>& args) {
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      fmt::print("{}", main_help);
      return args.empty() ? exit_usage : exit_ok;
    }
    if (args[0] == "--version") {
      fmt::print("ktune {}\n", KTUNE_TOOL_VERSION);
      return exit_ok;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "list") return cmd_list(rest);
    if (args[0] == "select") return cmd_select(rest);
    if (args[0] == "merge-raw") return cmd_merge_raw(rest);
    if (args[0] == "tables") return cmd_tables(rest);
    if (args[0] == "report") return cmd_report(rest);
    if (args[0] == "gen") return cmd_gen(rest);
    if (args[0] == "run") cmd_run(rest);
    if (args[0] == "compare") return cmd_compare(rest);
    if (args[0] == "profile" && !rest.empty() && (rest[0] == "--help" || rest[0] == "-h")) {
      fmt::print("{}", profile_help);  // every command answers --help (issue 9: this one exited 2)
      return exit_ok;
    }
    if (args[0] == "profile") cmd_profile(rest);
    if (args[0] == "profile-plan") return cmd_profile_plan(rest);
    if (args[0] == "profile-attach") return cmd_profile_attach(rest);
    throw usage_error("unknown command '" + args[0] + "'");
  } catch (const ToolError& e) {
    fmt::print(stderr, "ktune: {}\n", e.what());
    if (e.code() == exit_usage) fmt::print(stderr, "(ktune --help lists the commands; ktune <command> --help their options)\n");
    return e.code();
  } catch (const std::exception& e) {
    fmt::print(stderr, "ktune: {}\n", e.what());
    return exit_failure;
  }
}

}  // namespace ktune::tool
