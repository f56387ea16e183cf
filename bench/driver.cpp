// bench/driver.cpp: run_bench, one run of ktune_bench from the command line to its exit status: options,
// the specs, --list, the device and baselines, then the search, the exhaustive sweep or the re-test
// (run_retest.cpp), the summary of where the time went, and the report (report.cpp). --gate runs apart
// (run_gate.cpp).
#include "driver.hpp"

#include <unistd.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <ktune/harness.hpp>
#include <ktune/registry.hpp>

#include "build_info.hpp"
#include "cache.hpp"
#include "driver_detail.hpp"
#include "gpu_trace.hpp"
#include "incumbents.hpp"
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
// (3: the guarded gate and the checks of timed calls, docs/judge.md; 4: every call of a shape replays the
// same batch, ktune/replay_batch.hpp; 5: replays of whole rotations without an L2 read, and samples stopped
// once a further round could not move their median, ktune/timing.cuh; 6: every rotation set checked after
// every timing, a stopped screen's too, and screens of three samples first, bench/search.cpp).
constexpr const char* method_version = "ktune-bench-6";         // --exhaustive
constexpr const char* search_method_version = "ktune-bench-6;search";  // screens (and their rounds, refined_key)

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

std::string executable_dir(const char* argv0) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) p = std::filesystem::absolute(argv0, ec);
  return p.parent_path().string();
}

}  // namespace

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
  std::string trace_error;
  const std::unique_ptr<GpuTrace> trace = GpuTrace::from_env(trace_error);
  if (!trace_error.empty()) std::cerr << "ktune_bench: warning: " << trace_error << " (the run goes on untraced)\n";
  measurer.set_trace(trace.get());

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
    std::vector<ShapeGroup> groups =
        slice_groups(plan_sweep(specs, registry, dev.arch, opts, key_of), specs, opts.slice, opts.slices);
    if (!opts.incumbents.empty()) {
      Incumbents incumbents;
      if (const std::string err = load_incumbents(opts.incumbents, gpu_slug(dev.name), incumbents); !err.empty()) {
        std::cerr << "ktune_bench: --incumbents: " << err << "\n";
        return 1;
      }
      std::size_t shapes = 0;
      for (ShapeGroup& g : groups) shapes += !(g.incumbent = incumbents.find(g.op, name(g.dtype), g.shape.key())).empty();
      std::cerr << "ktune_bench: incumbents: " << shapes << " of " << groups.size() << " shapes have a winner in "
                << incumbents.files << " results files of " << opts.incumbents << "\n";
    }
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
      SearchSettings settings = search_settings(opts.quick);
      if (opts.every_shape) settings.guide_ratio = settings.dtype_guide_ratio = 0;
      Progress progress(&std::cerr, work.to_measure() + groups.size(), isatty(2) != 0);
      std::cerr << "ktune_bench: set-up before the search (copy ceiling, plan, incumbents, cache) "
                << number(std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count()) << " s\n";
      SearchOutcome o = run_search(groups, cache, measurer, settings, &progress);
      progress.finish();
      for (const std::string& w : o.warnings) std::cerr << "ktune_bench: warning: " << w << "\n";
      std::cerr << "ktune_bench: " << o.screened << " screens passed, " << o.remeasured
                << " timed again because their spread was out of line (" << o.still_noisy
                << " still out of line: kept as finalists), " << o.pruned << " stopped early (clearly slower), "
                << o.guided_out << " not screened (guided: out of reach at their anchor, or at the shape in the other dtype of their size); "
                << o.finalists << " finalists, " << o.rounds_run << " rounds, " << o.left_out << " left out of the later rounds, "
                << o.picked_again << " shapes' finalists picked again (a finalist's rounds contradicted its screen)\n";
      search_context = {{"search", "halving"},
                        {"screened", std::to_string(o.screened)},
                        {"remeasured", std::to_string(o.remeasured)},
                        {"still_noisy", std::to_string(o.still_noisy)},
                        {"pruned", std::to_string(o.pruned)},
                        {"guided_out", std::to_string(o.guided_out)},
                        {"finalists", std::to_string(o.finalists)},
                        {"left_out", std::to_string(o.left_out)}};
      for (auto& kv : settings_context(settings)) search_context.push_back(std::move(kv));
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
    if (!p.part_s.empty()) {
      const char* sep = "ktune_bench: within them: ";
      for (const auto& [part, seconds] : p.part_s) {
        std::cerr << std::exchange(sep, ", ") << part << " " << number(seconds) << " s";
        std::string key = "part_" + part + "_s";  // part_gate_runs_s
        std::replace(key.begin(), key.end(), '.', '_');
        search_context.emplace_back(key, number(seconds));
      }
      std::cerr << "\n";
    }
    // The inputs and references prepared on other cores while the GPU timed (bench/prefetch.hpp).
    const HostPrefetcher::Stats h = measurer.prefetch_stats();
    std::cerr << "ktune_bench: host preparation on " << measurer.prefetch_threads() << " threads: " << h.ahead
              << " groups prepared ahead (CPU " << number(h.worker_cpu_s) << " s), " << h.in_line << " in line, "
              << h.dropped << " not needed, " << h.staged << " staged in pinned memory; waited " << number(h.wait_s)
              << " s for them (" << number(h.stage_wait_s) << " s for their staging)";
    for (const auto& [waited, what] : h.longest_waits) std::cerr << (&what == &h.longest_waits.front().second ? " (longest: " : ", ") << what << " " << number(waited) << " s";
    std::cerr << (h.longest_waits.empty() ? "" : ")") << "\n";
    std::cerr << "ktune_bench: prepare spent " << number(measurer.upload_seconds()) << " s copying inputs and references to the GPU";
    const GpuMeasurer::Staging staging = measurer.staging();
    std::cerr << "; " << staging.buffers << " pinned staging buffer" << (staging.buffers == 1 ? "" : "s") << " of "
              << (staging.bytes >> 20) << " MiB, registered in " << number(staging.registering_s) << " s\n";
    // The judge's dependent chain (docs/judge.md, item 12): how early a dependent started here, and how long
    // the producer waited before it wrote the chained calls' inputs.
    const GpuMeasurer::Chain chain = measurer.chain();
    if (chain.calibrated) {
      if (chain.effective)
        std::cerr << "ktune_bench: dependent chain: a dependent launched with PDL started " << number(chain.release_to_start_us)
                  << " us after its producer's release (the slowest of five); the producer wrote the chained calls' inputs "
                  << number(chain.delay_us) << " us after it\n";
      else
        std::cerr << "ktune_bench: dependent chain: no dependent started before its producer was done (stream order only)\n";
      search_context.emplace_back("chain_release_to_start_us", number(chain.release_to_start_us));
      search_context.emplace_back("chain_delay_us", number(chain.delay_us));
    }
    const GpuMeasurer::OnDevice on_device = measurer.on_device();
    std::cerr << "ktune_bench: " << on_device.groups << " groups' inputs and references drawn and computed on the GPU, "
              << on_device.checked << " of them against the host's\n";
    search_context.emplace_back("prep_on_device", std::to_string(on_device.groups));
    search_context.emplace_back("prep_on_device_checked", std::to_string(on_device.checked));
    search_context.emplace_back("prep_threads", std::to_string(measurer.prefetch_threads()));
    search_context.emplace_back("prep_ahead", std::to_string(h.ahead));
    search_context.emplace_back("prep_staged", std::to_string(h.staged));
    search_context.emplace_back("prep_in_line", std::to_string(h.in_line));
    search_context.emplace_back("prep_worker_cpu_s", number(h.worker_cpu_s));
    search_context.emplace_back("prep_wait_s", number(h.wait_s));
    search_context.emplace_back("prep_stage_wait_s", number(h.stage_wait_s));
    if (trace) {
      (void)cudaDeviceSynchronize();
      std::string summary;
      const std::string err = trace->finish(summary);
      std::cerr << "ktune_bench: trace: " << summary << "\n";
      if (!err.empty()) std::cerr << "ktune_bench: warning: " << err << "\n";
    }
  }

  Tally tally;
  for (const BenchResult& r : results) tally.add(r);
  std::cerr << "ktune_bench: " << tally.passed << " passed, " << tally.incorrect << " wrong (any verdict of the judge), " << tally.rejected
            << " rejected, " << tally.cannot << " cannot implement, " << tally.other << " other errors; " << tally.cached
            << " from the cache; " << tally.copies << " same-size copies"
            << (tally.refined ? "; " + std::to_string(tally.refined) + " finalists' rounds" : std::string()) << "\n";

  if (!report_results(std::move(results), opts, build, dev, specs, base, copy_gbps, cold, run_seed, aborted, search_context))
    return 1;

  if (aborted) {
    std::cerr << "ktune_bench: stopped early: " << abort_reason << "\n"
              << (opts.retest.empty() ? "ktune_bench: that failure is cached; run the same command again to resume\n"
                                      : "ktune_bench: drop that variant from the candidates and run again\n");
    return 3;
  }
  return 0;
}

}  // namespace ktune::bench
