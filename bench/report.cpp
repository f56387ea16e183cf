// bench/report.cpp: a run's results reported through Google Benchmark: each result registered as a
// benchmark that replays its measured median (manual time), the run's context, and reporters that keep
// the agreed names, drop the debug-build banner and write a tune's rows in chunks (bench/README.md).
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include "driver_detail.hpp"
#include "names.hpp"

namespace ktune::bench {

namespace {

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
/// machine), so the rows are registered and reported in chunks: of 100 (28k rows to a JSON file in 0.63 s
/// on a 2-core machine, against 1.23 s in chunks of 1000 and 0.62 s in chunks of 50).
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

std::string hex64(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
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
  set_timing(r, t);
  r.bytes = bytes;
  r.copy_gbps = copy_gbps;
  return r;
}

}  // namespace

bool report_results(std::vector<BenchResult> results, const Options& opts, const BuildInfo& build, const DeviceContext& dev,
                    const std::map<std::string, Spec>& specs, const Baselines& base, double copy_gbps, bool cold,
                    std::uint64_t run_seed, bool aborted, const std::vector<std::pair<std::string, std::string>>& search_context) {
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
      return false;
    }
    benchmark::BenchmarkReporter* file =
        opts.benchmark_out_format == "json" ? static_cast<benchmark::BenchmarkReporter*>(&json_file) : &console_file;
    file->SetOutputStream(&out_file);
    file->SetErrorStream(&out_file);
    to.push_back(file);
  }
  Chunked chunked(to);
  constexpr std::size_t chunk = 100;
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
    return false;
  }
  std::cerr << "ktune_bench: wrote the results in "
            << number(std::chrono::duration<double>(std::chrono::steady_clock::now() - report_start).count()) << " s\n";
  // No benchmark::Shutdown() here: Google Benchmark 1.7's Shutdown deletes its custom-context map
  // without resetting the pointer, so a second run in the same process (the GPU smoke test) would
  // write into freed memory. main() shuts down once, at exit.
  return true;
}

}  // namespace ktune::bench
