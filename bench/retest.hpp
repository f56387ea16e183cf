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

/// The candidates' round medians with what their round shared taken out. medians[k][r] is candidate k's
/// median in round r (a candidate's rounds are its first ones: one that stopped is not timed again). A
/// round times its candidates one right after the other, so they run at the same clock, and the clock
/// moves between rounds: under its power cap an H200's SM clock swings between about 1400 and 1980 MHz
/// within a second (docs/gpu-log.md), so much that four copies of one kernel, timed in rounds, differed by
/// up to 2.3%. Each median is divided by its round's factor, fitted with the candidates' own levels in
/// the logs by median polish, so every figure is compared with the others' of its round; the factors'
/// median is 1, so figures stay in microseconds. A round that timed one candidate alone is left as it was
/// measured (nothing in it to compare with). The residuals are widened by sqrt(n / (n - 1)) for a round of
/// n candidates, which the fit took one degree of freedom from: a spread (the noise band) stays as wide as
/// the measurements' own scatter, not narrower because the fit absorbed some of it.
std::vector<std::vector<double>> clock_normalised(const std::vector<std::vector<double>>& medians);

/// The order of n candidates in round `round`: rotated by one each round.
std::vector<std::size_t> round_order(std::size_t n, std::size_t round);

}  // namespace ktune::bench
