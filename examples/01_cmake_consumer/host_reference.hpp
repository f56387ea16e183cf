// examples/01_cmake_consumer/host_reference.hpp: the three operations written plainly on the host, in
// double, for the consumers to check the GPU's results against. Strides are in elements.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

namespace example {

/// out[t, i] = silu(in[t, i]) * in[t, d + i];  in [tokens, 2*d] (row stride in_stride), out [tokens, d].
inline std::vector<double> silu_and_mul(const std::vector<double>& in, std::int64_t tokens, std::int64_t d,
                                        std::int64_t in_stride) {
  std::vector<double> out(static_cast<std::size_t>(tokens * d));
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t i = 0; i < d; ++i) {
      const double x = in[t * in_stride + i], y = in[t * in_stride + d + i];
      out[t * d + i] = x / (1.0 + std::exp(-x)) * y;
    }
  return out;
}

/// Per row: x = input + residual; residual <- x; input <- x / sqrt(mean(x^2) + eps) * weight.
/// input and residual [tokens, h] contiguous, weight [h]; both results [tokens, h].
inline void fused_add_rmsnorm(const std::vector<double>& input, const std::vector<double>& residual,
                              const std::vector<double>& weight, std::int64_t tokens, std::int64_t h, double eps,
                              std::vector<double>& out, std::vector<double>& new_residual) {
  out.assign(static_cast<std::size_t>(tokens * h), 0);
  new_residual.assign(out.size(), 0);
  for (std::int64_t t = 0; t < tokens; ++t) {
    double sum_sq = 0;
    for (std::int64_t i = 0; i < h; ++i) {
      const double x = input[t * h + i] + residual[t * h + i];
      new_residual[t * h + i] = x;
      sum_sq += x * x;
    }
    const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(h) + eps);
    for (std::int64_t i = 0; i < h; ++i) out[t * h + i] = new_residual[t * h + i] * inv_rms * weight[i];
  }
}

/// Merges two partial attention results by their log-sum-exps: v [tokens, heads, head_size],
/// s [tokens, heads] (natural log), all contiguous.
inline void merge_attn_states(const std::vector<double>& va, const std::vector<double>& sa,
                              const std::vector<double>& vb, const std::vector<double>& sb, std::int64_t tokens,
                              std::int64_t heads, std::int64_t head_size, std::vector<double>& v,
                              std::vector<double>& s) {
  v.assign(va.size(), 0);
  s.assign(sa.size(), 0);
  for (std::int64_t th = 0; th < tokens * heads; ++th) {
    const double m = std::max(sa[th], sb[th]);
    const double wa = std::exp(sa[th] - m), wb = std::exp(sb[th] - m);
    s[th] = std::log(wa + wb) + m;
    for (std::int64_t k = 0; k < head_size; ++k)
      v[th * head_size + k] = (wa * va[th * head_size + k] + wb * vb[th * head_size + k]) / (wa + wb);
  }
}

/// Largest |got - want| / (atol + rtol * |want|) over the elements: at most 1 means within tolerance.
/// NaN anywhere gives infinity (never a pass).
inline double worst_error(const std::vector<double>& got, const std::vector<double>& want, double atol, double rtol) {
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double e = std::fabs(got[i] - want[i]) / (atol + rtol * std::fabs(want[i]));
    if (!(e == e)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, e);
  }
  return worst;
}

/// Deterministic values in [lo, hi), never all zeros (zeros would hide unwritten outputs).
inline std::vector<double> values(std::size_t n, unsigned seed, double lo, double hi) {
  std::vector<double> v(n);
  std::uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (double& e : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    e = lo + (hi - lo) * static_cast<double>(x >> 11) / 9007199254740992.0;
  }
  return v;
}

}  // namespace example
