// bench/driver_detail.hpp: what the run's files (bench/driver.cpp and the run_gate.cpp, run_retest.cpp and
// report.cpp it calls) share, private to them: the tally of verdicts, number formatting, and the steps of
// a run that live apart from run_bench.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ktune/judge.hpp>
#include <ktune/spec.hpp>

#include "build_info.hpp"
#include "measure.hpp"
#include "options.hpp"
#include "result.hpp"
#include "retest.hpp"

namespace ktune::bench {

inline std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
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

/// --gate FILE: the correctness gate alone (can_implement, device check, poisoned outputs, comparison
/// with the reference) for every selected variant and shape; no baselines, no timing, no cache. Warm
/// L2 (one input set), so it stays cheap under compute-sanitizer. Verdicts go to FILE as JSON.
int run_gate(const Options& opts, const std::map<std::string, Spec>& specs, const DeviceContext& dev);  // run_gate.cpp

/// Interleaved re-test of the candidates; results in candidate order.
std::vector<BenchResult> run_retest(const std::vector<Candidate>& candidates, const std::map<std::string, Spec>& specs,
                                    GpuMeasurer& m, int device_arch, bool quick, bool& aborted,
                                    std::string& abort_reason);  // run_retest.cpp

/// Reports a run's results through Google Benchmark (report.cpp): the copy ceiling's and the empty
/// kernel's rows first, the run's context, every row to the console and to --benchmark_out. False when
/// the output file cannot be written (said on stderr).
bool report_results(std::vector<BenchResult> results, const Options& opts, const BuildInfo& build, const DeviceContext& dev,
                    const std::map<std::string, Spec>& specs, const Baselines& base, double copy_gbps, bool cold,
                    std::uint64_t run_seed, bool aborted, const std::vector<std::pair<std::string, std::string>>& search_context);

}  // namespace ktune::bench
