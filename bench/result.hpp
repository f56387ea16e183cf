// bench/result.hpp: one benchmark's outcome, as measured, cached and reported.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace ktune::bench {

struct BenchResult {
  std::string name;              ///< benchmark name (contract 5)
  std::string op, dtype, shape, id;
  std::string error;             ///< empty when it passed; else "incorrect: ", "rejected: ", "cannot implement: ", "error: "
  bool cacheable = true;         ///< false for failures of the run itself (allocation), not of the variant
  bool fatal = false;            ///< the variant broke the CUDA context: the run must stop
  bool cached = false;           ///< re-emitted from the cache
  double median_us = 0, min_us = 0, max_us = 0;
  double spread = 0;             ///< (max - min) / median; in a re-test, over the per-round medians
  int samples = 0;
  int batch = 1;                 ///< launches per sample; > 1 means graph replay
  int rounds = 0;                ///< re-test rounds (0 in a sweep)
  int remeasured = 0;            ///< timings again of a screen whose spread was out of line (search)
  bool noisy = false;            ///< still out of line after every retry (search): kept as a finalist
  bool refined = false;          ///< a finalist's rounds (search): reported with a `rounds` counter even on failure
  bool pruned = false;           ///< a screen stopped early, clearly slower than its shape's best (search): its
                                 ///< probe alone or its first round of samples, no check of timed calls
  double bytes = 0;              ///< spec bytes moved per call
  int registers = 0;
  double local_bytes = 0;
  double occupancy = 0;
  double rel_l2 = 0, max_abs = 0;
  bool cold_l2 = true;
  std::uint64_t seed = 0;        ///< < 2^53, so the JSON counter (a double) holds it exactly
  double copy_gbps = 0;          ///< copy ceiling of the process that measured it
  /// The shape's same-size copy median (0: none). Set per run from the group's copy row, not cached
  /// with the variant: a re-measured copy row applies to cached variants too.
  double copy_same_size_us = 0;

  bool ok() const { return error.empty(); }
  double gbps() const { return median_us > 0 ? bytes / (median_us * 1e3) : 0; }
};

/// The user counters of the agreed JSON (bench interface), with % of copy ceiling taken against
/// `copy_gbps` (the current process's ceiling).
std::map<std::string, double> counters(const BenchResult& r, double copy_gbps);

nlohmann::json to_json(const BenchResult& r);
/// Throws nlohmann::json::exception on a malformed record.
BenchResult result_from_json(const nlohmann::json& j);

}  // namespace ktune::bench
