// tools/ktune/raw.hpp: the benchmark's Google Benchmark JSON, read into plain records.
//
// The interface (written by bench/, read here): one benchmark per (op, dtype, shape, variant) named
// `<op>/<dtype>/<dim>=<v>,.../<id>` (Google Benchmark appends `/manual_time`), manual time in
// microseconds = the median sample, user counters per call, `error_occurred` + `error_message`
// (starting with a verdict of the judge, include/ktune/judge.hpp) for excluded variants, two reference rows
// `ktune/copy_ceiling` and `ktune/empty_kernel`, one `ktune/copy_same_size/<op>/<dtype>/<shape>` per
// shape, and custom context strings (gpu, arch, mode, ...).
#pragma once

#include <nlohmann/json.hpp>

#include <ktune/judge.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ktune::tool {

/// Why a variant is not eligible on a shape, from the benchmark's error message.
/// The judge's verdicts (include/ktune/judge.hpp): one list for ktune_bench, the tools and the agent.
using Verdict = ktune::judge::Verdict;
const char* to_string(Verdict v);
Verdict parse_verdict_name(const std::string& s);  ///< inverse of to_string; throws on unknown
/// The verdict an error message states (`incorrect: ...` -> incorrect; unknown prefix -> error).
Verdict verdict_of_message(const std::string& message);

/// Context keys of what the GPU step cost, in seconds (bench/driver.cpp writes them): `phase_<name>_s` and
/// `phase_<name>_cpu_s`, and the named parts within a phase, `part_<name>_s` (part_gate_runs_s: "gate.runs").
bool is_phase_key(const std::string& key);
bool is_part_key(const std::string& key);
/// A part key's name for people: "gate runs" of part_gate_runs_s.
std::string part_label(const std::string& key);

/// The parts of a benchmark name `<op>/<dtype>/<shape>/<id>`.
struct BenchName {
  std::string op, dtype, shape, id;
  std::vector<std::pair<std::string, std::int64_t>> dims;  ///< parsed `shape`, in order
};
/// Parses a benchmark name; strips Google Benchmark suffixes (`/manual_time`, `/real_time`,
/// `/repeats:N`, `/iterations:N`, `/threads:N`). Returns nullopt for names outside the interface.
std::optional<BenchName> parse_bench_name(const std::string& name);

/// One benchmark row.
struct RawRun {
  BenchName name;
  /// "sweep" or "retest": the file's mode, except in a search file (mode "search"), where the rows of a
  /// finalist's rounds (a `rounds` counter) are "retest" and the screens "sweep".
  std::string mode;
  Verdict verdict = Verdict::ok;
  std::string error;                      ///< error_message for excluded runs
  double time_us = 0;                     ///< real_time in microseconds (the median)
  std::int64_t iterations = 0;            ///< the sample count
  std::map<std::string, double> counters; ///< user counters, by name
};

/// A reference row (`ktune/copy_ceiling`, `ktune/empty_kernel`).
struct RawReference {
  std::string name;  ///< copy_ceiling, empty_kernel
  double time_us = 0;
  std::map<std::string, double> counters;
};

/// A shape's same-size copy row (`ktune/copy_same_size/<op>/<dtype>/<shape>`): the copy of the shape's
/// spec bytes (half read, half written) timed like its variants, the fair floor at that size.
struct RawSameSizeCopy {
  std::string op, dtype, shape;
  double time_us = 0;
};

/// One Google Benchmark JSON file.
struct RawFile {
  std::string path;                           ///< as given on the command line
  std::string label;                          ///< file name only (provenance, independent of cwd)
  std::string hash;                           ///< content_hash of its bytes
  std::map<std::string, std::string> context; ///< every context value, as a string
  std::string mode;                           ///< "sweep", "retest" or "search" (screens and rounds in one file)
  std::vector<RawRun> runs;
  std::vector<RawReference> references;
  std::vector<RawSameSizeCopy> same_size_copies;
  std::vector<std::string> warnings;          ///< rows skipped (aggregates, names outside the interface)
};

/// Parses a file's JSON; throws ToolError naming `path` when it does not follow the interface.
RawFile parse_raw(const nlohmann::json& j, const std::string& path, const std::string& hash);
RawFile load_raw(const std::string& path);

/// Converts a Google Benchmark time to microseconds.
double to_microseconds(double value, const std::string& unit);

}  // namespace ktune::tool
