// kernels/gemma_fused_add_rmsnorm/reference.hpp: the float64 CPU reference of gemma_fused_add_rmsnorm, used by
// the tests and the benchmark's correctness gate. Host only: g++ and nvcc both compile it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <ktune/dtype.hpp>

namespace ktune::ops::gemma_fused_add_rmsnorm {

/// The magnitude from which rounding to the storage type gives ±inf (round to nearest even: the
/// largest finite value plus half an ulp).
inline double overflow_threshold(DType t) {
  switch (t) {
    case DType::f16: return 65520.0;                      // 65504 + 16
    case DType::bf16: return std::ldexp(1.0, 128) - std::ldexp(1.0, 119);
    case DType::f32: default: return std::ldexp(1.0, 128) - std::ldexp(1.0, 103);
  }
}

/// A real result as stored: unchanged (the comparison's tolerance covers rounding), except that what
/// rounds beyond the storage type's range is ±inf, as the kernel's rounded store is.
inline double as_stored(double v, DType t) {
  if (std::fabs(v) >= overflow_threshold(t)) return v > 0 ? std::numeric_limits<double>::infinity()
                                                           : -std::numeric_limits<double>::infinity();
  return v;
}

/// Reference of one call on host values (already converted to double from the storage type).
///
/// input [tokens, h] at input_stride, residual [tokens, h] at residual_stride, weight [h]. Writes
/// out_input [tokens, h] and out_residual [tokens, h], contiguous. Per row: x = input + residual;
/// out_residual = x; out_input = x / sqrt(mean(x^2) + eps) * (1 + weight). The mean is over the unrounded
/// x, so NaN or inf anywhere in x spreads over the row's normalised output only.
inline void reference(const double* input, const double* residual, const double* weight, std::int64_t tokens,
                      std::int64_t h, std::int64_t input_stride, std::int64_t residual_stride, double eps, DType dtype,
                      double* out_input, double* out_residual) {
  std::vector<double> x(static_cast<std::size_t>(h));
  for (std::int64_t t = 0; t < tokens; ++t) {
    // eps is an fp32 argument of the kernels: the reference sees the same value.
    double sum = 0;
    for (std::int64_t i = 0; i < h; ++i) {
      x[i] = input[t * input_stride + i] + residual[t * residual_stride + i];
      sum += x[i] * x[i];
    }
    const double inv_rms = 1.0 / std::sqrt(sum / static_cast<double>(h) + eps);
    for (std::int64_t i = 0; i < h; ++i) {
      out_residual[t * h + i] = as_stored(x[i], dtype);
      out_input[t * h + i] = as_stored(x[i] * inv_rms * (1.0 + weight[i]), dtype);
    }
  }
}

}  // namespace ktune::ops::gemma_fused_add_rmsnorm
