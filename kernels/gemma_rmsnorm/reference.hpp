// kernels/gemma_rmsnorm/reference.hpp: the float64 CPU reference of gemma_rmsnorm, used by the tests and the
// benchmark's correctness gate. Host only: g++ and nvcc both compile it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include <ktune/dtype.hpp>

namespace ktune::ops::gemma_rmsnorm {

/// The magnitude from which rounding to the storage type gives ±inf (round to nearest even: the
/// largest finite value plus half an ulp).
inline double overflow_threshold(DType t) {
  switch (t) {
    case DType::f16: return 65520.0;  // 65504 + 16
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
/// input [tokens, h] at input_stride, weight [h]; writes out [tokens, h], contiguous:
/// out = input / sqrt(mean(input^2) + eps) * (1 + weight). NaN or inf in a row spreads over that row only.
inline void reference(const double* input, const double* weight, std::int64_t tokens, std::int64_t h,
                      std::int64_t input_stride, double eps, DType dtype, double* out) {
  constexpr double weight_offset = 1.0;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const double* x = input + t * input_stride;
    double sum = 0;
    for (std::int64_t i = 0; i < h; ++i) sum += x[i] * x[i];
    // eps is an fp32 argument of the kernels: the caller passes that value.
    const double inv_rms = 1.0 / std::sqrt(sum / static_cast<double>(h) + eps);
    for (std::int64_t i = 0; i < h; ++i) out[t * h + i] = as_stored(x[i] * inv_rms * (weight_offset + weight[i]), dtype);
  }
}

}  // namespace ktune::ops::gemma_rmsnorm
