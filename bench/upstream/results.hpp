// bench/upstream/results.hpp: what one ktune_vs_flashinfer run measured, and the two files it writes from
// it (report.cpp): flashinfer.json (every figure) and flashinfer.md (the summary and per-shape tables).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ktune/dtype.hpp>

#include "calls.hpp"

namespace ktune::upstream {

struct CallTiming {
  std::vector<double> round_us;  ///< each round's ktune::time_kernel median
  double us = 0;                 ///< the median of round_us
  int batch = 0;                 ///< launches per graph replay (the last round's)
  bool graph = true;             ///< every round replayed a graph (else the call could not be captured)
};

struct ShapeResult {
  std::string op;
  DType dtype = DType::f32;
  std::string shape;  ///< "tokens=16,h=4096"
  std::vector<std::pair<std::string, std::int64_t>> dims;
  std::int64_t bytes = 0;     ///< moved per call, from the spec
  std::uint64_t seed = 0;     ///< of the harness's inputs
  std::size_t rotations = 0;  ///< input/output sets the timings rotate over
  std::size_t set_bytes = 0;
  bool cold_l2 = false;                          ///< the sets exceed twice the L2
  std::string error;                             ///< what stopped this shape; empty when it ran
  bool agrees[call_kinds] = {true, true, true};  ///< within the spec's tolerance of upstream's outputs
  std::string check[call_kinds];                 ///< the comparisons, per output tensor
  CallTiming timing[call_kinds];
  std::string tuned_id, tuned_source;  ///< <op>_choice: the variant the tuned dispatch runs

  bool timed() const { return error.empty() && timing[upstream_call].us > 0; }
  /// timing[c] / upstream's; NaN where the call disagrees with upstream or the shape did not run.
  double ratio(int c) const {
    if (!timed() || !agrees[upstream_call] || !agrees[c]) return std::nan("");
    return timing[c].us / timing[upstream_call].us;
  }
};

struct RunInfo {
  std::string command;  ///< the command line, for the banner
  std::string program;  ///< argv[0], for the per-section commands
  std::string date;     ///< UTC, ISO 8601
  std::string ktune_commit;
  std::string flashinfer_commit;  ///< the one built
  std::string gpu;
  int arch = 0, sms = 0, l2_bytes = 0, driver = 0, runtime = 0;
  int rounds = 0;
  bool held_out_only = false;  ///< --held-out: only the spec's held-out shapes were compared
  std::uint64_t seed = 0;  ///< the run's (--seed)
};

/// Creates `dir` if missing and checks that a file can be written there, so that a run does not find out
/// at its end; throws std::runtime_error saying why not.
void prepare_out_dir(const std::string& dir);

/// Writes <dir>/flashinfer.json and <dir>/flashinfer.md, each through a temporary file renamed into
/// place; throws std::runtime_error (naming the file) when either cannot be written.
void write_reports(const std::string& dir, const RunInfo& run, const std::vector<ShapeResult>& results);

}  // namespace ktune::upstream
