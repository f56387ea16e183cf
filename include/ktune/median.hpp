// ktune/median.hpp: the median of timing samples, and whether more samples could still move it (the stop
// rule of ktune::time_kernel, ktune/timing.cuh). Host-only, no CUDA (g++ and nvcc; CPU-tested in tests/core).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace ktune {

/// The median (the mean of the two middle values of an even count); 0 for no values.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  const double hi = v[m];
  if (v.size() % 2) return hi;
  return (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m))) / 2;
}

/// Whether `more` samples, whatever their values, would leave the median of `samples` within `rel` of
/// where it is. The median only rises or falls with each sample, so its extremes are those of `more`
/// samples all below every other and all above: bounded by the middle order statistics already taken.
/// A sampler that stops once the next round could not move its median by `rel` returns what it would
/// have returned one round later, to within `rel`, without timing that round.
inline bool median_settled(const std::vector<double>& samples, std::size_t more, double rel) {
  if (samples.empty()) return false;
  const double m = median_of(samples);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> low(samples), high(samples);
  low.insert(low.end(), more, -inf);
  high.insert(high.end(), more, inf);
  return m - median_of(std::move(low)) <= rel * m && median_of(std::move(high)) - m <= rel * m;
}

}  // namespace ktune
