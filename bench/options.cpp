// bench/options.cpp: ktune_bench's command line (options.hpp): ktune's flags here, --benchmark_* passed to Google Benchmark.
#include "options.hpp"

#include <regex>

#include <ktune/dtype.hpp>

namespace ktune::bench {

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    if (end > pos) out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::string parse_options(const std::vector<std::string>& args, Options& out) {
  out = Options{};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (starts_with(a, "--benchmark_")) {
      out.passthrough.push_back(a);
      const std::size_t eq = a.find('=');
      const std::string flag = a.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : a.substr(eq + 1);
      if (flag == "--benchmark_out") out.benchmark_out = value;
      if (flag == "--benchmark_out_format") out.benchmark_out_format = value;
      if (flag == "--benchmark_format") out.benchmark_format = value;
      if ((flag == "--benchmark_out" || flag == "--benchmark_out_format" || flag == "--benchmark_format") &&
          eq == std::string::npos)
        return flag + " takes its value after '=' (Google Benchmark's syntax)";
      continue;
    }
    if (!starts_with(a, "--")) return "unexpected argument '" + a + "' (see --help)";

    // --flag VALUE or --flag=VALUE
    std::string flag = a, value;
    bool has_value = false;
    const std::size_t eq = a.find('=');
    if (eq != std::string::npos) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_value = true;
    }
    auto take = [&](std::string& dst) -> std::string {
      if (!has_value) {
        if (i + 1 >= args.size()) return flag + " needs a value";
        value = args[++i];
      }
      if (value.empty()) return flag + " needs a non-empty value";
      dst = value;
      return {};
    };
    auto toggle = [&](bool& dst) -> std::string {
      if (has_value) return flag + " takes no value";
      dst = true;
      return {};
    };

    std::string err, v;
    if (flag == "--ops") {
      if ((err = take(v)).empty()) out.ops = split_list(v);
    } else if (flag == "--dtypes") {
      if ((err = take(v)).empty()) {
        out.dtypes = split_list(v);
        for (const std::string& d : out.dtypes) {
          DType t;
          if (!parse_dtype(d, t)) return "--dtypes: unknown dtype '" + d + "' (fp32, fp16, bf16)";
        }
      }
    } else if (flag == "--shapes") {
      err = take(out.shapes);
    } else if (flag == "--variants") {
      err = take(out.variants);
    } else if (flag == "--retest") {
      err = take(out.retest);
    } else if (flag == "--gate") {
      err = take(out.gate);
    } else if (flag == "--kernels") {
      err = take(out.kernels);
    } else if (flag == "--incumbents") {
      err = take(out.incumbents);
    } else if (flag == "--value-range") {
      if ((err = take(v)).empty()) {
        if (v != "default" && v != "wide") return "--value-range: 'default' or 'wide'";
        out.wide_values = v == "wide";
      }
    } else if (flag == "--separate-allocations") {
      err = toggle(out.separate_allocations);
    } else if (flag == "--slice") {
      if ((err = take(v)).empty()) {
        const std::size_t slash = v.find('/');
        auto number = [](const std::string& t, int& out) {
          if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string::npos) return false;
          out = std::stoi(t);
          return true;
        };
        if (slash == std::string::npos || !number(v.substr(0, slash), out.slice) ||
            !number(v.substr(slash + 1), out.slices) || out.slices < 1 || out.slice >= out.slices)
          return "--slice K/N: 0 <= K < N, for example --slice 0/2";
      }
    } else if (flag == "--cache") {
      err = take(out.cache);
    } else if (flag == "--seed") {
      if ((err = take(v)).empty()) {
        std::uint64_t s = 0;
        for (char c : v) {
          if (c < '0' || c > '9' || s > (UINT64_MAX - 9) / 10) return "--seed needs a non-negative integer";
          s = s * 10 + static_cast<std::uint64_t>(c - '0');
        }
        out.seed = s;
      }
    } else if (flag == "--quick") {
      err = toggle(out.quick);
    } else if (flag == "--exhaustive") {
      err = toggle(out.exhaustive);
    } else if (flag == "--screen-every-shape") {
      err = toggle(out.every_shape);
    } else if (flag == "--warm-l2") {
      err = toggle(out.warm_l2);
    } else if (flag == "--list") {
      err = toggle(out.list);
    } else if (flag == "--no-cache") {
      err = toggle(out.no_cache);
    } else if (flag == "--print-gpu-slug") {
      err = toggle(out.print_gpu_slug);
    } else if (flag == "--help" || flag == "-h") {
      err = toggle(out.help);
    } else {
      return "unknown flag '" + flag + "' (see --help)";
    }
    if (!err.empty()) return err;
  }

  for (const std::string* re : {&out.shapes, &out.variants}) {
    if (re->empty()) continue;
    try {
      std::regex check(*re);
    } catch (const std::regex_error& e) {
      return "invalid regular expression '" + *re + "': " + e.what();
    }
  }
  if (out.benchmark_out_format != "json" && out.benchmark_out_format != "console")
    return "--benchmark_out_format: ktune_bench writes json or console";
  if (out.benchmark_format != "json" && out.benchmark_format != "console")
    return "--benchmark_format: ktune_bench prints json or console";
  if (!out.retest.empty() && out.list) return "--retest and --list cannot be combined";
  if (out.slices > 1 && (!out.retest.empty() || !out.gate.empty()))
    return "--slice splits a search or a sweep, not a --retest or a --gate";
  if (!out.incumbents.empty() && (out.exhaustive || !out.retest.empty() || !out.gate.empty()))
    return "--incumbents sets the finalists of a search: not with --exhaustive, --retest or --gate";
  if (out.exhaustive && !out.retest.empty()) return "--exhaustive is a way of sweeping; a --retest is timed one way";
  if (out.every_shape && (out.exhaustive || !out.retest.empty() || !out.gate.empty()))
    return "--screen-every-shape changes the search's screens: not with --exhaustive, --retest or --gate";
  if (!out.gate.empty() && (out.list || !out.retest.empty())) return "--gate cannot be combined with --list or --retest";
  if ((out.separate_allocations || out.wide_values) && out.gate.empty())
    return "--separate-allocations and --value-range wide change the gate: use them with --gate";
  return {};
}

std::string usage() {
  return R"(ktune_bench: check and time every compiled kernel variant on the spec shapes of its op.

Usage: ktune_bench [flags] [--benchmark_* flags]

  Search (default): for each op, dtype, spec shape and variant: the correctness gate against the float64
  reference (fresh random inputs, poisoned outputs; compared on the device), the device check, then a
  short CUDA-event timing (the screen) with cold L2 and graph replay for short launches. A screen whose
  spread is out of line with the shape's other variants is timed again before it can rank or drop
  anything. Shapes of one width (the dimensions after the token count), the anchors, screen every
  variant (but the second of each pair of anchors in token order: what the first found within 1.5x);
  any other shape screens only those its anchor of the same token count found within 1.3x of the best,
  S, the incumbent and the anchors' 5 best geometric means; bf16, after fp16, screens at each shape
  what fp16 found there within 1.2x. Then per shape the finalists (S, the general configuration, the
  fastest within reach of the best, at most 4, and the incumbent: see --incumbents) are timed in
  interleaved rounds. One JSON file (context mode "search") holds the screens and the finalists' rounds
  (rows with a "rounds" counter). Results are cached; a rerun re-emits cached results and times only
  what is missing or changed.

  --incumbents DIR     results files (DIR/*.json) of an earlier tune on this GPU model: each shape's winner
                       there is a finalist here whenever it passes (tools/tune.sh passes reports/<gpu>)
  --screen-every-shape every variant screened at every shape and dtype (no guided screens)
  --exhaustive         the method before the halving search: every variant timed in full (context mode "sweep");
                       tools/tune.sh then re-tests the top K in a separate --retest run

  --ops a,b            ops to run (default: every op compiled in)
  --dtypes fp16,bf16   dtypes to run (default: the spec's)
  --shapes REGEX       shapes whose key ("tokens=16,d=11008") matches
  --variants REGEX     variants whose id ("tpb_256.vb_16...", "original") matches
  --slice K/N          only slice K (0-based) of N: the (op, element size) units spread over N slices by expected
                       cost, each whole (tools/tune.sh runs one slice per GPU and merges them; with
                       --list, the slice's benchmarks, no GPU needed)
  --quick              few samples (smoke runs; cached separately from full runs)
  --warm-l2            no rotation of input sets (L2 stays warm)
  --retest FILE        interleaved re-test of {"candidates": [{"op", "dtype", "shape", "ids"}]}
  --gate FILE          the correctness gate only: every selected variant on every selected shape, warm
                       L2, no timing, no baselines, no cache; verdicts as JSON to FILE (the generator's
                       judge runs this on edge shapes and under compute-sanitizer)
  --separate-allocations  with --gate: every tensor of a checked call in a cudaMalloc of its own instead
                       of guarded regions of one allocation (run under compute-sanitizer memcheck)
  --value-range R      default, or wide: the gate's inputs scaled to reach the hundreds with exact
                       zeros, as far as the reference stays finite in the outputs' type
  --list               print the benchmarks that would run and exit (no GPU needed)
  --kernels DIR        read DIR/<op>/spec.json instead of the copy built into the binary
  --cache FILE         result cache (default: ktune-bench-cache.jsonl beside the executable)
  --no-cache           neither read nor write the cache
  --seed N             seed of the run's random inputs (default: fresh each run)
  --print-gpu-slug     print the current device's slug ("nvidia-h200") and exit
  --benchmark_out=FILE --benchmark_out_format=json   Google Benchmark JSON (the raw results)
  --benchmark_*        other Google Benchmark flags, passed through (e.g. --benchmark_filter)

Exit status: 0 done; 1 error; 2 bad usage; 3 stopped early because a kernel broke the CUDA context
(its failure is cached: rerun the same command to resume).
)";
}

}  // namespace ktune::bench
