// ktune/judge.hpp: the judge's verdicts, one list for both stages (ktune_bench's gate and timing,
// `ktune select` and the reports, the agent's testing agent). docs/judge.md is the threat model they
// implement.
//
// ktune_bench writes a failed variant's verdict as the start of its error message ("<name>: <details>");
// everything downstream reads the verdict back from that prefix with verdict_of_message().
//
// Host-only, no CUDA needed.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace ktune::judge {

enum class Verdict {
  ok,
  // A variant computed something other than S's function, or touched bytes outside its outputs: each
  // rejects the family that holds it (the public API may route any call to any variant).
  incorrect,            ///< an output outside the spec's tolerance of the reference, or a launch failure in the gate
  out_of_bounds_write,  ///< a guard zone before or after a tensor changed
  input_modified,       ///< a read-only tensor is not bitwise what it was
  unwritten_output,     ///< a write-only output still holds the poison it was filled with
  nondeterministic,     ///< the same call twice gave outputs that differ bitwise
  work_skipped,         ///< the timed calls did not compute what the checked call computed
  implausible_time,     ///< timed faster than the spec's bytes can move through DRAM
  state_changed,        ///< the call left the caller's stream, context or device other than it found them
  reads_before_wait,    ///< the call read its inputs before the kernel before it on the stream was done
  // Not the variant's doing, or not a wrong result.
  rejected,             ///< the device check: cannot launch here, spills, timing failed
  cannot_implement,     ///< the variant refuses this call (can_implement); others must answer it
  error,                ///< the run itself failed (allocation, harness)
};

struct VerdictInfo {
  Verdict verdict;
  const char* name;     ///< in results files and reports
  const char* prefix;   ///< how ktune_bench's error message starts
  bool wrong;           ///< the variant is wrong: its family must not be installed
};

inline constexpr std::array<VerdictInfo, 13> verdicts{{
    {Verdict::ok, "ok", "", false},
    {Verdict::incorrect, "incorrect", "incorrect: ", true},
    {Verdict::out_of_bounds_write, "out_of_bounds_write", "out_of_bounds_write: ", true},
    {Verdict::input_modified, "input_modified", "input_modified: ", true},
    {Verdict::unwritten_output, "unwritten_output", "unwritten_output: ", true},
    {Verdict::nondeterministic, "nondeterministic", "nondeterministic: ", true},
    {Verdict::work_skipped, "work_skipped", "work_skipped: ", true},
    {Verdict::implausible_time, "implausible_time", "implausible_time: ", true},
    {Verdict::state_changed, "state_changed", "state_changed: ", true},
    {Verdict::reads_before_wait, "reads_before_wait", "reads_before_wait: ", true},
    {Verdict::rejected, "rejected", "rejected: ", false},
    {Verdict::cannot_implement, "cannot_implement", "cannot implement: ", false},
    {Verdict::error, "error", "error: ", false},
}};

constexpr const VerdictInfo& info(Verdict v) {
  for (const VerdictInfo& i : verdicts)
    if (i.verdict == v) return i;
  return verdicts.back();
}
constexpr const char* name(Verdict v) { return info(v).name; }
constexpr const char* prefix(Verdict v) { return info(v).prefix; }
/// Whether the verdict says the variant computes something else than S (its family is rejected).
constexpr bool is_wrong(Verdict v) { return info(v).wrong; }

/// The verdict a ktune_bench message starts with; an empty message is ok, an unknown one an error.
inline Verdict verdict_of_message(std::string_view message) {
  if (message.empty()) return Verdict::ok;
  for (const VerdictInfo& i : verdicts)
    if (*i.prefix && message.substr(0, std::string_view(i.prefix).size()) == i.prefix) return i.verdict;
  return Verdict::error;
}

/// The verdict of a name as results files write it; false when no verdict has that name.
inline bool verdict_of_name(std::string_view s, Verdict& out) {
  for (const VerdictInfo& i : verdicts)
    if (s == i.name) {
      out = i.verdict;
      return true;
    }
  return false;
}

// The judge's timing rules (docs/judge.md), shared by ktune_bench and the profile's diagnosis.
/// A time below the spec's bytes at the copy ceiling by more than this (or the timing's own spread) is
/// implausible: honest variants reached 103% of the ceiling on an H200 (reads are cheaper than writes).
inline constexpr double implausible_margin = 0.15;
/// A checked call may take this many times the timed calls' median (plus two plain launches: the
/// checked call runs alone, the timed ones may be graph replays) before the timed calls count as
/// having skipped work.
inline constexpr double work_time_factor = 1.5;

/// "<prefix><details>": the message ktune_bench records for a failed variant.
inline std::string message(Verdict v, const std::string& details) { return std::string(prefix(v)) + details; }

}  // namespace ktune::judge
