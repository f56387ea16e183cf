#include "driver.hpp"

#include <unistd.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <ktune/harness.hpp>
#include <ktune/judge.hpp>
#include <ktune/registry.hpp>

#include "build_info.hpp"
#include "cache.hpp"
#include "measure.hpp"
#include "names.hpp"
#include "options.hpp"
#include "plan.hpp"
#include "retest.hpp"
#include "search.hpp"
#include <ktune/spec.hpp>
#include "sweep.hpp"

namespace ktune::bench {

namespace {

// Bump when how results are measured changes: cached results of another method are not reused.
// Versions of the method in the cache keys: a result judged by an earlier judge is measured again
// (3: the guarded gate and the checks of timed calls, docs/judge.md).
constexpr const char* method_version = "ktune-bench-3";         // --exhaustive
constexpr const char* search_method_version = "ktune-bench-3;search";  // screens (and their rounds, refined_key)

/// Google Benchmark appends "/iterations:N" and "/manual_time" to the name of a benchmark with a
/// fixed iteration count and manual time; the agreed names (contract 5) have neither.
template <class Base>
class AgreedNames : public Base {
 public:
  using Base::Base;
  void ReportRuns(const std::vector<benchmark::BenchmarkReporter::Run>& runs) override {
    std::vector<benchmark::BenchmarkReporter::Run> fixed(runs);
    for (auto& r : fixed) {
      r.run_name.iterations.clear();
      r.run_name.time_type.clear();
    }
    Base::ReportRuns(fixed);
  }
};

/// The console reporter without Google Benchmark's "Library was built as DEBUG" banner. Debian's
/// libbenchmark is built without NDEBUG, so every run printed it; it is about Google Benchmark's own
/// timing loop, which ktune_bench does not use (the times are CUDA-event medians measured before Google
/// Benchmark runs; it only reports them). One line says so instead (bench/README.md).
template <class Base>
class QuietConsole : public Base {
 public:
  using Base::Base;
  bool ReportContext(const benchmark::BenchmarkReporter::Context& context) override {
    std::ostringstream captured;
    std::ostream& err = this->GetErrorStream();
    this->SetErrorStream(&captured);
    const bool ok = Base::ReportContext(context);
    this->SetErrorStream(&err);
    std::istringstream lines(captured.str());
    for (std::string line; std::getline(lines, line);) {
      if (line.find("Library was built as DEBUG") != std::string::npos) {
        err << "(Google Benchmark here is a debug build, as Debian ships it; it only reports ktune's own CUDA-event "
               "times, so no figure depends on it)\n";
        continue;
      }
      err << line << "\n";
    }
    return ok;
  }
};

/// Forwards several RunSpecifiedBenchmarks calls to `to` as one document: the context once, every run,
/// and no end (the caller finalises each reporter once). Google Benchmark 1.7 takes time quadratic in the
/// benchmarks registered for one call (25 s for a tune's 18k rows on a 2-core machine, 11 s on the GPU
/// machine), so the rows are registered and reported in chunks.
class Chunked : public benchmark::BenchmarkReporter {
 public:
  explicit Chunked(std::vector<benchmark::BenchmarkReporter*> to) : to_(std::move(to)) {}
  bool ReportContext(const Context& context) override {
    if (started_) return true;
    started_ = true;
    bool ok = true;
    for (benchmark::BenchmarkReporter* r : to_) ok = r->ReportContext(context) && ok;
    return ok;
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (benchmark::BenchmarkReporter* r : to_) r->ReportRuns(runs);
  }
  void Finalize() override {}

 private:
  std::vector<benchmark::BenchmarkReporter*> to_;
  bool started_ = false;
};

std::string read_file(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return {};
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string hex64(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string executable_dir(const char* argv0) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) p = std::filesystem::absolute(argv0, ec);
  return p.parent_path().string();
}

void register_result(const BenchResult& r, double copy_gbps) {
  const std::map<std::string, double> c = counters(r, copy_gbps);
  auto* b = benchmark::RegisterBenchmark(r.name.c_str(), [r, c](benchmark::State& state) {
    if (!r.ok()) {
      state.SkipWithError(r.error.c_str());
      for (const auto& [k, v] : c) state.counters[k] = v;
      return;
    }
    const double seconds = r.median_us * 1e-6;
    for (auto _ : state) state.SetIterationTime(seconds);
    for (const auto& [k, v] : c) state.counters[k] = v;
  });
  b->UseManualTime()->Iterations(std::max(1, r.samples))->Unit(benchmark::kMicrosecond);
}

BenchResult baseline_row(const std::string& name, const Timed& t, double bytes, double copy_gbps) {
  BenchResult r;
  r.name = name;
  r.op = "ktune";
  r.median_us = t.median_us;
  r.min_us = t.min_us;
  r.max_us = t.max_us;
  r.samples = t.samples;
  r.batch = t.batch;
  r.spread = t.median_us > 0 ? (t.max_us - t.min_us) / t.median_us : 0;
  r.bytes = bytes;
  r.copy_gbps = copy_gbps;
  return r;
}

struct Tally {
  std::size_t passed = 0, incorrect = 0, rejected = 0, cannot = 0, other = 0, cached = 0;
  std::size_t copies = 0;  ///< same-size copy rows: references, not variants
  std::size_t refined = 0; ///< finalists' rounds (search): a second row of a variant already counted
  void add(const BenchResult& r) {
    if (r.id.empty()) {
      ++copies;
      return;
    }
    if (r.refined) {
      ++refined;
      return;
    }
    cached += r.cached;
    switch (const judge::Verdict v = judge::verdict_of_message(r.error)) {
      case judge::Verdict::ok: ++passed; break;
      case judge::Verdict::rejected: ++rejected; break;
      case judge::Verdict::cannot_implement: ++cannot; break;
      default: judge::is_wrong(v) ? ++incorrect : ++other;
    }
  }
};

/// Interleaved re-test of the candidates; results in candidate order.
std::vector<BenchResult> run_retest(const std::vector<Candidate>& candidates, const std::map<std::string, Spec>& specs,
                                    GpuMeasurer& m, int device_arch, bool quick, bool& aborted, std::string& abort_reason) {
  const int rounds = quick ? 3 : 7;
  TimingSettings per_round = quick ? quick_timing() : full_timing();
  per_round.min_samples = per_round.max_samples = quick ? 4 : 20;
  std::vector<BenchResult> out;
  Progress progress(&std::cerr, candidates.size(), false, 0.0);
  std::vector<Upcoming> order;
  for (const Candidate& c : candidates) order.push_back({c.op, c.dtype, c.shape, true});
  m.expect(order);
  for (const Candidate& c : candidates) {
    ShapeGroup g{c.op, c.dtype, c.shape, {}, {}};
    g.copy = WorkItem{c.op, c.dtype, c.shape, std::string(copy_same_size_id), copy_same_size_name(c.op, c.dtype, c.shape.key()), {}};
    for (const std::string& id : c.ids)
      g.items.push_back({c.op, c.dtype, c.shape, id, benchmark_name(c.op, c.dtype, c.shape.key(), id), {}});
    progress.before(c.op + "/" + name(c.dtype) + "/" + c.shape.key() + " (" + std::to_string(c.ids.size()) + " candidates)");

    std::vector<BenchResult> rs;
    std::string prepare_error;
    auto spec = specs.find(c.op);
    if (spec == specs.end()) prepare_error = "op " + c.op + " is not compiled into this binary (or excluded by --ops)";
    else if (!spec->second.same_dims(c.shape)) prepare_error = "shape " + c.shape.key() + " does not name the spec's dimensions";
    else if (variant_arch(Registry::global(), c.op, c.dtype, device_arch) == 0)
      prepare_error = "no variants of " + c.op + " for this device";
    // The shape's same-size copy, once, before the group's buffers exist (not cached: re-tests never are).
    double copy_us = 0;
    if (prepare_error.empty()) {
      BenchResult copy = m.measure_copy_same_size(g);
      if (copy.ok()) copy_us = copy.median_us;
      if (copy.fatal) {
        aborted = true;
        abort_reason = copy.name + ": " + copy.error;
      }
      out.push_back(std::move(copy));
      if (aborted) break;
    }
    if (prepare_error.empty()) prepare_error = m.begin_shape(g);
    for (const WorkItem& it : g.items) {
      rs.push_back(m.blank(it));
      rs.back().copy_same_size_us = copy_us;
      if (!prepare_error.empty()) {
        rs.back().error = "error: " + prepare_error;
        rs.back().cacheable = false;
      }
    }
    std::vector<bool> live(g.items.size(), prepare_error.empty());
    for (std::size_t i = 0; i < g.items.size() && !aborted; ++i) {
      if (!live[i]) continue;
      live[i] = m.check(g.items[i], rs[i]);
      if (rs[i].fatal) {
        aborted = true;
        abort_reason = g.items[i].name + ": " + rs[i].error;
      }
    }
    std::vector<std::vector<double>> medians(g.items.size());
    for (int round = 0; round < rounds && !aborted; ++round) {
      for (std::size_t i : round_order(g.items.size(), static_cast<std::size_t>(round))) {
        if (!live[i] || aborted) continue;
        Timed t;
        if (!m.time(g.items[i], per_round, t, rs[i])) {
          live[i] = false;
          if (rs[i].fatal) {
            aborted = true;
            abort_reason = g.items[i].name + ": " + rs[i].error;
          }
          continue;
        }
        BenchResult& r = rs[i];
        medians[i].push_back(t.median_us);
        r.min_us = r.samples ? std::min(r.min_us, t.min_us) : t.min_us;
        r.max_us = std::max(r.max_us, t.max_us);
        r.samples += t.samples;
        r.batch = std::max(r.batch, t.batch);
      }
    }
    for (std::size_t i = 0; i < g.items.size(); ++i) {
      if (!live[i] || medians[i].empty()) continue;
      const RoundStats s = round_stats(medians[i]);
      rs[i].median_us = s.median;
      rs[i].spread = s.spread;
      rs[i].rounds = static_cast<int>(medians[i].size());
    }
    m.end_shape();
    progress.after();
    for (BenchResult& r : rs) out.push_back(std::move(r));
    if (aborted) break;
  }
  progress.finish();
  return out;
}

}  // namespace

/// --gate FILE: the correctness gate alone (can_implement, device check, poisoned outputs, comparison
/// with the reference) for every selected variant and shape; no baselines, no timing, no cache. Warm
/// L2 (one input set), so it stays cheap under compute-sanitizer. Verdicts go to FILE as JSON.
static int run_gate(const Options& opts, const std::map<std::string, Spec>& specs, const DeviceContext& dev) {
  const std::uint64_t run_seed = opts.seed ? *opts.seed : (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  GpuMeasurer measurer(specs, dev.arch, quick_timing(), /*cold_l2=*/false, run_seed, 0);
  measurer.set_separate_allocations(opts.separate_allocations);
  measurer.set_wide_values(opts.wide_values);
  nlohmann::json rows = nlohmann::json::array();
  Tally tally;
  bool aborted = false;
  std::string abort_reason;
  for (const ShapeGroup& g : plan_sweep(specs, Registry::global(), dev.arch, opts, [](const WorkItem&) { return std::string(); })) {
    const std::string err = measurer.begin_shape(g);
    for (const WorkItem& it : g.items) {
      BenchResult r = measurer.blank(it);
      if (!err.empty()) r.error = "error: " + err;
      else measurer.check(it, r);
      tally.add(r);
      rows.push_back({{"op", r.op}, {"dtype", r.dtype}, {"shape", r.shape}, {"id", r.id}, {"ok", r.ok()},
                      {"error", r.error}, {"rel_l2", r.rel_l2}, {"max_abs", r.max_abs}, {"seed", r.seed}});
      if (r.fatal) {
        aborted = true;
        abort_reason = it.name + ": " + r.error;
        break;
      }
    }
    measurer.end_shape();
    if (aborted) break;
  }
  const nlohmann::json doc = {{"gpu", dev.name}, {"arch", dev.arch}, {"run_seed", run_seed}, {"complete", !aborted},
                              {"results", rows}};
  std::ofstream out(opts.gate);
  out << doc.dump(1) << "\n";
  if (!out) {
    std::cerr << "ktune_bench: cannot write " << opts.gate << "\n";
    return 1;
  }
  std::cerr << "ktune_bench: gate: " << tally.passed << " passed, " << tally.incorrect << " wrong (any verdict of the judge), " << tally.rejected
            << " rejected, " << tally.cannot << " cannot implement, " << tally.other << " other errors -> " << opts.gate << "\n";
  if (aborted) {
    std::cerr << "ktune_bench: stopped early: " << abort_reason << "\n";
    return 3;
  }
  return 0;
}

int run_bench(int argc, char** argv) {
  const auto process_start = std::chrono::steady_clock::now();
  Options opts;
  {
    std::vector<std::string> args(argv + 1, argv + argc);
    const std::string err = parse_options(args, opts);
    if (!err.empty()) {
      std::cerr << "ktune_bench: " << err << "\n";
      return 2;
    }
  }
  if (opts.help) {
    std::cout << usage();
    return 0;
  }

  // Google Benchmark sees only its own flags, less the output file: ktune_bench writes it (Chunked).
  std::vector<std::string> gb_args{argc > 0 ? argv[0] : "ktune_bench"};
  for (const std::string& a : opts.passthrough)
    if (a.rfind("--benchmark_out=", 0) != 0 && a.rfind("--benchmark_out_format=", 0) != 0) gb_args.push_back(a);
  std::vector<char*> gb_argv;
  for (std::string& a : gb_args) gb_argv.push_back(a.data());
  int gb_argc = static_cast<int>(gb_argv.size());
  benchmark::Initialize(&gb_argc, gb_argv.data());
  benchmark::ClearRegisteredBenchmarks();  // re-entrant: the GPU smoke test runs several in one process
  if (benchmark::ReportUnrecognizedArguments(gb_argc, gb_argv.data())) return 2;

  // Specs of the selected ops: the copy built into the binary, or --kernels DIR.
  const BuildInfo& build = build_info();
  const Registry& registry = Registry::global();
  const std::vector<std::string> compiled = registry.ops();
  std::vector<std::string> ops = opts.ops.empty() ? compiled : opts.ops;
  std::map<std::string, Spec> specs;
  for (const std::string& op : ops) {
    if (std::find(compiled.begin(), compiled.end(), op) == compiled.end()) {
      std::string have;
      for (const std::string& c : compiled) have += (have.empty() ? "" : ", ") + c;
      std::cerr << "ktune_bench: op '" << op << "' is not compiled into this binary (compiled: "
                << (have.empty() ? "none" : have) << ")\n";
      return 2;
    }
    if (!HarnessRegistry::global().find(op)) {
      std::cerr << "ktune_bench: op '" << op << "' has variants but no registered ktune::Harness\n";
      return 1;
    }
    std::string text, origin, err;
    if (!opts.kernels.empty()) {
      origin = opts.kernels + "/" + op + "/spec.json";
      text = read_file(origin, err);
    } else if (const OpBuild* b = build.find(op)) {
      origin = op + "/spec.json (built in)";
      text = b->spec_json;
    } else {
      err = "no spec.json built in for op " + op + " (pass --kernels DIR)";
    }
    if (!err.empty()) {
      std::cerr << "ktune_bench: " << err << "\n";
      return 1;
    }
    try {
      Spec s = parse_spec_text(text, origin);
      if (s.op != op) {
        std::cerr << "ktune_bench: " << origin << " names op '" << s.op << "'\n";
        return 1;
      }
      specs.emplace(op, std::move(s));
    } catch (const std::exception& e) {
      std::cerr << "ktune_bench: " << e.what() << "\n";
      return 1;
    }
  }

  if (opts.list) {
    std::set<std::string> seen;
    std::size_t n = 0;
    const auto none = [](const WorkItem&) { return std::string(); };
    for (const ShapeGroup& g : slice_groups(plan_sweep(specs, registry, 0, opts, none), specs, opts.slice, opts.slices)) {
      if (seen.insert(g.copy.name).second) {
        std::cout << g.copy.name << "\n";
        ++n;
      }
      for (const WorkItem& it : g.items)
        if (seen.insert(it.name).second) {
          std::cout << it.name << "\n";
          ++n;
        }
    }
    std::cerr << "ktune_bench: " << n << " benchmarks\n";
    return 0;
  }

  DeviceContext dev;
  if (const Status st = query_device_context(dev); !st.ok()) {
    std::cerr << "ktune_bench: no usable CUDA device: " << st.message;
    if (st.cuda != cudaSuccess) std::cerr << " (" << cudaGetErrorString(st.cuda) << ")";
    std::cerr << "\n";
    return 1;
  }
  if (opts.print_gpu_slug) {
    std::cout << gpu_slug(dev.name) << "\n";
    return 0;
  }
  if (!opts.gate.empty()) return run_gate(opts, specs, dev);

  const auto run_start = std::chrono::steady_clock::now();
  // Loading the variants, reading the specs and creating the CUDA context: part of a tune's wall time.
  const double startup_s = std::chrono::duration<double>(run_start - process_start).count();
  std::cerr << "ktune_bench: started in " << number(startup_s) << " s (specs, device, CUDA context)\n";
  const TimingSettings timing = opts.quick ? quick_timing() : full_timing();
  std::cerr << "ktune_bench: " << dev.name << " (sm_" << dev.arch << ", " << dev.sms << " SMs): measuring the copy ceiling and an empty kernel\n";
  Baselines base;
  if (const Status st = measure_baselines(timing, base); !st.ok()) {
    std::cerr << "ktune_bench: measuring the baselines failed: " << st.message;
    if (st.cuda != cudaSuccess) std::cerr << " (" << cudaGetErrorString(st.cuda) << ")";
    std::cerr << "\n";
    return 1;
  }
  const double copy_gbps = base.copy_gbps();
  std::cerr << "ktune_bench: copy ceiling " << number(copy_gbps) << " GB/s, empty kernel " << number(base.empty.median_us) << " us\n";

  const std::uint64_t run_seed = opts.seed ? *opts.seed : (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  const bool cold = !opts.warm_l2;
  GpuMeasurer measurer(specs, dev.arch, timing, cold, run_seed, copy_gbps);

  std::vector<BenchResult> results;
  bool aborted = false;
  std::string abort_reason, cache_path;
  std::vector<std::pair<std::string, std::string>> search_context;  // context keys of the method used
  if (!opts.retest.empty()) {
    std::string err;
    const std::string text = read_file(opts.retest, err);
    std::vector<Candidate> candidates;
    if (err.empty()) {
      try {
        candidates = parse_candidates(text);
      } catch (const std::exception& e) {
        err = e.what();
      }
    }
    if (!err.empty()) {
      std::cerr << "ktune_bench: " << opts.retest << ": " << err << "\n";
      return 1;
    }
    std::vector<Candidate> kept;  // --ops / --dtypes / --shapes / --variants narrow a re-test too
    const std::regex shapes_re(opts.shapes.empty() ? "." : opts.shapes), ids_re(opts.variants.empty() ? "." : opts.variants);
    for (Candidate c : candidates) {
      if (!opts.ops.empty() && std::find(opts.ops.begin(), opts.ops.end(), c.op) == opts.ops.end()) continue;
      if (!opts.dtypes.empty() && std::find(opts.dtypes.begin(), opts.dtypes.end(), name(c.dtype)) == opts.dtypes.end()) continue;
      if (!std::regex_search(c.shape.key(), shapes_re)) continue;
      c.ids.erase(std::remove_if(c.ids.begin(), c.ids.end(), [&](const std::string& id) { return !std::regex_search(id, ids_re); }),
                  c.ids.end());
      if (!c.ids.empty()) kept.push_back(std::move(c));
    }
    results = run_retest(kept, specs, measurer, dev.arch, opts.quick, aborted, abort_reason);
  } else {
    const bool search = !opts.exhaustive;
    const std::string method = std::string(search ? search_method_version : method_version) + (cold ? ";cold-l2" : ";warm-l2") +
                               (opts.quick ? ";quick" : ";full");
    auto key_of = [&](const WorkItem& it) {
      const OpBuild* b = build.find(it.op);
      return cache_key({it.op, name(it.dtype), it.shape.key(), it.id, b ? b->source_hash : std::string("unknown"),
                        build.toolchain, dev.name, method});
    };
    const std::vector<ShapeGroup> groups =
        slice_groups(plan_sweep(specs, registry, dev.arch, opts, key_of), specs, opts.slice, opts.slices);
    if (!opts.no_cache) cache_path = opts.cache.empty() ? executable_dir(argv[0]) + "/ktune-bench-cache.jsonl" : opts.cache;
    ResultCache cache(cache_path);
    if (const std::string err = cache.load(); !err.empty()) {
      std::cerr << "ktune_bench: " << err << "\n";
      return 1;
    }
    const WorkCount work = count_work(groups, cache);
    std::cerr << "ktune_bench: " << (search ? "search" : "exhaustive sweep") << ": " << work.variants << " benchmarks and "
              << work.copies << " same-size copies, " << work.cached() << " from the cache"
              << (cache.enabled() ? " (" + cache.path() + ")" : std::string(" (cache off)")) << ", " << work.to_measure()
              << " to measure" << (search ? ", then the finalists of " + std::to_string(groups.size()) + " shapes in rounds" : "")
              << "\n";
    if (search) {
      measurer.set_device_compare(true);
      measurer.set_search(screen_timing(opts.quick), timing);
      const SearchSettings settings = search_settings(opts.quick);
      Progress progress(&std::cerr, work.to_measure() + groups.size(), isatty(2) != 0);
      SearchOutcome o = run_search(groups, cache, measurer, settings, &progress);
      progress.finish();
      for (const std::string& w : o.warnings) std::cerr << "ktune_bench: warning: " << w << "\n";
      std::cerr << "ktune_bench: " << o.screened << " screens passed, " << o.remeasured
                << " timed again because their spread was out of line (" << o.still_noisy
                << " still out of line: kept as finalists); " << o.finalists << " finalists, " << o.rounds_run << " rounds, "
                << o.left_out << " left out of the later rounds\n";
      search_context = {{"search", "halving"},
                        {"screened", std::to_string(o.screened)},
                        {"remeasured", std::to_string(o.remeasured)},
                        {"still_noisy", std::to_string(o.still_noisy)},
                        {"finalists", std::to_string(o.finalists)},
                        {"left_out", std::to_string(o.left_out)}};
      results = std::move(o.results);
      aborted = o.aborted;
      abort_reason = o.abort_reason;
    } else {
      Progress progress(&std::cerr, work.to_measure(), isatty(2) != 0);
      SweepOutcome o = run_sweep(groups, cache, measurer, &progress);
      progress.finish();
      for (const std::string& w : o.warnings) std::cerr << "ktune_bench: warning: " << w << "\n";
      search_context = {{"search", "exhaustive"}};
      results = std::move(o.results);
      aborted = o.aborted;
      abort_reason = o.abort_reason;
    }
  }
  for (const std::string& w : measurer.warnings()) std::cerr << "ktune_bench: warning: " << w << "\n";
  {
    // Where the time went, and whether anything ran on the host while the GPU was timed: during the
    // timing the process's CPU time stays at about one core (the thread waiting on the events).
    const PhaseTimes& p = measurer.phases();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    std::ostringstream line;
    line << "ktune_bench: " << number(wall) << " s in all";
    for (int k = 0; k < PhaseTimes::count; ++k) {
      line << "; " << PhaseTimes::name(k) << " " << number(p.wall_s[k]) << " s (CPU " << number(p.cpu_s[k]) << " s)";
      search_context.emplace_back(std::string("phase_") + PhaseTimes::name(k) + "_s", number(p.wall_s[k]));
      search_context.emplace_back(std::string("phase_") + PhaseTimes::name(k) + "_cpu_s", number(p.cpu_s[k]));
    }
    search_context.emplace_back("measure_wall_s", number(wall));
    search_context.emplace_back("startup_s", number(startup_s));
    std::cerr << line.str() << "\n";
    // The inputs and references prepared on other cores while the GPU timed (bench/prefetch.hpp).
    const HostPrefetcher::Stats h = measurer.prefetch_stats();
    std::cerr << "ktune_bench: host preparation on " << measurer.prefetch_threads() << " threads: " << h.ahead
              << " groups prepared ahead (CPU " << number(h.worker_cpu_s) << " s), " << h.in_line << " in line, "
              << h.dropped << " not needed; waited " << number(h.wait_s) << " s for them";
    for (const auto& [waited, what] : h.longest_waits) std::cerr << (&what == &h.longest_waits.front().second ? " (longest: " : ", ") << what << " " << number(waited) << " s";
    std::cerr << (h.longest_waits.empty() ? "" : ")") << "\n";
    std::cerr << "ktune_bench: prepare spent " << number(measurer.upload_seconds()) << " s copying inputs and references to the GPU\n";
    search_context.emplace_back("prep_threads", std::to_string(measurer.prefetch_threads()));
    search_context.emplace_back("prep_ahead", std::to_string(h.ahead));
    search_context.emplace_back("prep_in_line", std::to_string(h.in_line));
    search_context.emplace_back("prep_worker_cpu_s", number(h.worker_cpu_s));
    search_context.emplace_back("prep_wait_s", number(h.wait_s));
  }

  Tally tally;
  for (const BenchResult& r : results) tally.add(r);
  std::cerr << "ktune_bench: " << tally.passed << " passed, " << tally.incorrect << " wrong (any verdict of the judge), " << tally.rejected
            << " rejected, " << tally.cannot << " cannot implement, " << tally.other << " other errors; " << tally.cached
            << " from the cache; " << tally.copies << " same-size copies"
            << (tally.refined ? "; " + std::to_string(tally.refined) + " finalists' rounds" : std::string()) << "\n";

  // Reported through Google Benchmark below: two reference rows, then every result.
  results.insert(results.begin(), {baseline_row("ktune/copy_ceiling", base.copy, 2 * base.copy_bytes, copy_gbps),
                                   baseline_row("ktune/empty_kernel", base.empty, 0, copy_gbps)});

  benchmark::AddCustomContext("ktune_version", build.version);
  benchmark::AddCustomContext("git_commit", build.git_commit);
  benchmark::AddCustomContext("toolchain", build.toolchain);
  benchmark::AddCustomContext("gpu", dev.name);
  benchmark::AddCustomContext("gpu_slug", gpu_slug(dev.name));
  benchmark::AddCustomContext("arch", std::to_string(dev.arch));
  benchmark::AddCustomContext("sms", std::to_string(dev.sms));
  benchmark::AddCustomContext("l2_bytes", std::to_string(dev.l2_bytes));
  benchmark::AddCustomContext("sm_clock_khz", std::to_string(dev.sm_clock_khz));
  benchmark::AddCustomContext("mem_clock_khz", std::to_string(dev.mem_clock_khz));
  benchmark::AddCustomContext("driver_version", std::to_string(dev.driver_version));
  benchmark::AddCustomContext("cuda_runtime_version", std::to_string(dev.runtime_version));
  benchmark::AddCustomContext("copy_ceiling_gbps", number(copy_gbps));
  benchmark::AddCustomContext("copy_memcpy_gbps", number(base.copy_memcpy_gbps));
  benchmark::AddCustomContext("copy_kernel_gbps", number(base.copy_kernel_gbps));
  benchmark::AddCustomContext("empty_kernel_us", number(base.empty.median_us));
  benchmark::AddCustomContext("cold_l2", cold ? "1" : "0");
  benchmark::AddCustomContext("mode", !opts.retest.empty() ? "retest" : opts.exhaustive ? "sweep" : "search");
  for (const auto& [k, v] : search_context) benchmark::AddCustomContext(k, v);
  benchmark::AddCustomContext("quick", opts.quick ? "1" : "0");
  benchmark::AddCustomContext("run_seed", std::to_string(run_seed));
  benchmark::AddCustomContext("spec_source", opts.kernels.empty() ? "built-in" : opts.kernels);
  benchmark::AddCustomContext("complete", aborted ? "0" : "1");
  for (const auto& [op, spec] : specs) {
    if (const OpBuild* b = build.find(op)) {
      if (b->has_space_hash) benchmark::AddCustomContext("space_hash." + op, hex64(b->space_hash));
      benchmark::AddCustomContext("source_hash." + op, b->source_hash);
    }
  }

  const auto report_start = std::chrono::steady_clock::now();
  const int color = isatty(1) ? benchmark::ConsoleReporter::OO_Color : benchmark::ConsoleReporter::OO_None;
  QuietConsole<AgreedNames<benchmark::ConsoleReporter>> console(
      static_cast<benchmark::ConsoleReporter::OutputOptions>(benchmark::ConsoleReporter::OO_Tabular | color));
  AgreedNames<benchmark::JSONReporter> json_display, json_file;
  QuietConsole<AgreedNames<benchmark::ConsoleReporter>> console_file(benchmark::ConsoleReporter::OO_Tabular);
  std::vector<benchmark::BenchmarkReporter*> to{
      opts.benchmark_format == "json" ? static_cast<benchmark::BenchmarkReporter*>(&json_display) : &console};
  std::ofstream out_file;
  if (!opts.benchmark_out.empty()) {
    out_file.open(opts.benchmark_out, std::ios::binary | std::ios::trunc);
    if (!out_file) {
      std::cerr << "ktune_bench: cannot write " << opts.benchmark_out << "\n";
      return 1;
    }
    benchmark::BenchmarkReporter* file =
        opts.benchmark_out_format == "json" ? static_cast<benchmark::BenchmarkReporter*>(&json_file) : &console_file;
    file->SetOutputStream(&out_file);
    file->SetErrorStream(&out_file);
    to.push_back(file);
  }
  Chunked chunked(to);
  constexpr std::size_t chunk = 1000;
  for (std::size_t first = 0; first < results.size(); first += chunk) {
    benchmark::ClearRegisteredBenchmarks();
    for (std::size_t i = first; i < std::min(results.size(), first + chunk); ++i) register_result(results[i], copy_gbps);
    benchmark::RunSpecifiedBenchmarks(&chunked);
  }
  benchmark::ClearRegisteredBenchmarks();
  for (benchmark::BenchmarkReporter* r : to) r->Finalize();
  out_file.close();
  if (!opts.benchmark_out.empty() && !out_file) {
    std::cerr << "ktune_bench: writing " << opts.benchmark_out << " failed\n";
    return 1;
  }
  std::cerr << "ktune_bench: wrote the results in "
            << number(std::chrono::duration<double>(std::chrono::steady_clock::now() - report_start).count()) << " s\n";
  // No benchmark::Shutdown() here: Google Benchmark 1.7's Shutdown deletes its custom-context map
  // without resetting the pointer, so a second run in the same process (the GPU smoke test) would
  // write into freed memory. main() shuts down once, at exit.

  if (aborted) {
    std::cerr << "ktune_bench: stopped early: " << abort_reason << "\n"
              << (opts.retest.empty() ? "ktune_bench: that failure is cached; run the same command again to resume\n"
                                      : "ktune_bench: drop that variant from the candidates and run again\n");
    return 3;
  }
  return 0;
}

}  // namespace ktune::bench
