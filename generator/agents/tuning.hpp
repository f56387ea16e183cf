// generator/agents/tuning.hpp: the tuning agent: the existing search stage run on one candidate family
// and this op only: ktune_bench's search (every feasible variant screened with S in the same process,
// the finalists of each shape re-timed in interleaved rounds), then `ktune select` for the normalised
// results file (docs/results-schema.md), from which it returns the ranking. Deterministic code, no LLM.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generator/agents/candidate.hpp"
#include "generator/toolchain/toolchain.hpp"

namespace ktune::gen {

struct TuningOptions {
  bool quick = false;          ///< ktune_bench --quick (fewer samples: smoke runs and tests)
  double timeout_s = 900;      ///< per process: the search, then ktune select (`ktune agent --tune-timeout`)
  std::uint64_t seed = 0;      ///< 0: a fresh seed per run
};

/// One (dtype, shape) of the ranking.
struct ShapeOutcome {
  std::string dtype, shape;
  double s_us = 0;           ///< S's time (0: S did not run here)
  std::string winner;        ///< the results file's winner (empty: no correct variant)
  double winner_us = 0;
  double band = 0.01;        ///< the shape's noise band
  double copy_same_size_us = 0;
};

/// A variant the results file excludes: `verdict` is the results file's name for it (judge::name:
/// ok, incorrect, out_of_bounds_write, ..., rejected, cannot_implement, error), `error` its first message.
struct ExcludedVariant {
  std::string dtype, id, verdict, error;
};

struct Ranking {
  std::string gpu;
  std::vector<ShapeOutcome> shapes;
  std::vector<ExcludedVariant> excluded;
  std::map<std::string, std::string> general;  ///< per dtype: the general configuration
  double geomean_speedup = 0;  ///< over S: geometric mean of s_us / winner_us over shapes with both
  double band = 0.01;          ///< the median noise band over those shapes, at least 1%
  std::string best_id;         ///< the variant that wins most shapes (ties: the first dtype's general)
  std::size_t measured_shapes = 0;
};

/// Reads the ranking out of a results file (docs/results-schema.md). Empty string on success.
std::string read_ranking(const nlohmann::json& results, Ranking& out);

struct TuningResult {
  bool ok = false;
  bool timed_out = false;
  std::string error;
  Ranking ranking;
  std::filesystem::path results_file;
  std::string log;   ///< commands and their output
};

/// Runs the search and the selection on the candidate; files go to out_dir.
TuningResult tune_candidate(const Toolchain& tc, const Candidate& c, const std::filesystem::path& out_dir,
                            const TuningOptions& options);

/// A few lines per dtype for a prompt or a summary: S, the winner and the speedup per shape.
std::string describe_ranking(const Ranking& r);

}  // namespace ktune::gen
