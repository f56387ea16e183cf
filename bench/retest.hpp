// bench/retest.hpp: the interleaved top-K re-test (`ktune_bench --retest candidates.json`).
//
// The candidates of a shape are timed round-robin for several rounds, so drifts of clock and
// temperature spread over all of them instead of favouring whichever ran first; a variant's result is
// the median of its per-round medians and its spread (max - min) / median of those (contract 7).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>

namespace ktune::bench {

struct Candidate {
  std::string op;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<std::string> ids;
};

/// Parses {"candidates": [{"op", "dtype", "shape": "tokens=16,d=11008", "ids": [...]}]}.
/// Throws std::runtime_error naming what is wrong.
std::vector<Candidate> parse_candidates(std::string_view json_text);

/// Median (mean of the middle two for an even count); 0 for none.
double median(std::vector<double> v);

struct RoundStats {
  double median = 0, min = 0, max = 0;
  double spread = 0;  ///< (max - min) / median
};
RoundStats round_stats(const std::vector<double>& round_medians);

/// The order of n candidates in round `round`: rotated by one each round.
std::vector<std::size_t> round_order(std::size_t n, std::size_t round);

}  // namespace ktune::bench
