// bench/trace_analysis.hpp: what KTUNE_TRACE (gpu_trace.hpp) makes of a run's GPU activity and the host's
// spans of its phases and parts. Host-only, no CUDA or CUPTI (CPU-tested in tests/bench).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ktune::bench {

namespace trace {
/// One activity of the GPU, compact (a tune records millions): a kernel, a copy or a fill; `name` is the
/// kernel's (CUPTI's string, shared by every launch of it) or the kind of copy ("host_to_device", "fill").
struct Activity {
  std::uint64_t start = 0, end = 0, bytes = 0;
  const char* name = "";
  bool kernel = false;
};
/// A host span of a phase or part (PhaseScope, PartScope); `label` a string literal.
struct Span {
  const char* label;
  std::uint64_t begin, end;
};
/// What KTUNE_TRACE writes of a run recorded from `started` to `stopped` (one clock, ns): the wall and busy
/// time, the idle time by the length of its gap, the same per label over its spans (merged where they
/// overlap), the 60 kernels that took the most time and the copies and fills by kind. `summary`: one line,
/// the whole run and the phases (labels without a dot).
nlohmann::json analyse(const std::vector<Activity>& activities, const std::vector<Span>& spans, std::uint64_t started,
                       std::uint64_t stopped, std::string& summary);
}  // namespace trace

}  // namespace ktune::bench
