// bench/gpu_trace.hpp: where a run leaves the GPU idle (KTUNE_TRACE=FILE). CUPTI's activity records of every
// kernel, copy and fill, set against the host's spans of each phase and part (PhaseScope, PartScope): per
// label, its wall time and the GPU's busy time within it, the idle gaps by length, and the kernels and copies
// that took the GPU's time (trace_analysis.hpp). A diagnosis for the next thing to make faster
// (docs/scale.md), not a measurement to report: recording every activity costs the run host time of its own.
//
// libcupti is loaded when a trace is asked for (dlopen), so ktune_bench links and starts without it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace ktune::bench {

class GpuTrace {
 public:
  /// Recording from now when KTUNE_TRACE names a file (call it after the CUDA context exists); null, with
  /// `error` empty, when it does not; null with `error` set when CUPTI cannot record.
  static std::unique_ptr<GpuTrace> from_env(std::string& error);
  ~GpuTrace();
  GpuTrace(const GpuTrace&) = delete;
  GpuTrace& operator=(const GpuTrace&) = delete;

  /// CUPTI's clock, the one its activity records carry (ns).
  std::uint64_t now() const;
  /// A host span of `label` (a phase's or part's name, a string literal that lives as long as the run).
  void span(const char* label, std::uint64_t begin, std::uint64_t end);
  /// Stops recording (the caller has synchronised the device), writes the analysis to the file and a
  /// one-line summary to `summary`; an error when the file cannot be written or records were lost.
  std::string finish(std::string& summary);

  struct Impl;

 private:
  explicit GpuTrace(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktune::bench
