// kernels/merge_attn_states_lse/reference.hpp: the float64 CPU reference of the op's semantics, used
// by the tests and the benchmark's correctness gate. g++ and nvcc; its element functions run on the device too
// (device_preparation.cuh), so they name no std:: function the device lacks.
//
// Semantics, per (token, head) with LSEs p (prefix) and s (suffix), natural log:
//   an LSE of +inf or -inf means "no keys" and counts as -inf;
//   m = max(p, s), wp = exp(p - m), ws = exp(s - m);
//   out = (wp * prefix_out + ws * suffix_out) / (wp + ws),  out_lse = log(wp + ws) + m;
//   both sides empty (-inf): out = 0 (the values are ignored) and out_lse = -inf, never NaN;
//   NaN in an LSE makes that head's outputs and out_lse NaN; NaN in a value makes the outputs it
//   feeds NaN (also when its weight is 0: 0 * NaN), nothing else.
#pragma once

#include <cuda_runtime_api.h>  // __host__ __device__ for host compilers too

#include <cmath>
#include <cstdint>

#include <ktune/dtype.hpp>

namespace ktune::ops::merge_attn_states_lse {

struct ReferenceWeights {
  double prefix = 0;  ///< wp / (wp + ws)
  double suffix = 0;  ///< ws / (wp + ws)
  double lse = 0;     ///< log(wp + ws) + m
  bool empty = false; ///< both sides have no keys: outputs are 0
};

/// An LSE as the op reads it: +inf ("no keys") counts as -inf.
__host__ __device__ inline double keys_lse(double v) { return v == HUGE_VAL ? -HUGE_VAL : v; }

__host__ __device__ inline ReferenceWeights reference_weights(double p, double s) {
  p = keys_lse(p);
  s = keys_lse(s);
  if (p != p || s != s) return {NAN, NAN, NAN, false};  // a NaN LSE
  if (p == -HUGE_VAL && s == -HUGE_VAL) return {0, 0, -HUGE_VAL, true};
  const double m = p > s ? p : s;
  const double wp = exp(p - m), ws = exp(s - m);
  return {wp / (wp + ws), ws / (wp + ws), log(wp + ws) + m, false};
}

/// One output element: (wp * prefix_value + ws * suffix_value) / (wp + ws), or 0 for an empty pair.
__host__ __device__ inline double reference_value(double p, double s, double prefix_value, double suffix_value) {
  p = keys_lse(p);
  s = keys_lse(s);
  if (p != p || s != s) return NAN;
  if (p == -HUGE_VAL && s == -HUGE_VAL) return 0;
  const double m = p > s ? p : s;
  const double wp = exp(p - m), ws = exp(s - m);
  return (wp * prefix_value + ws * suffix_value) / (wp + ws);
}

/// The whole op on host tensors (layouts as in Args, strides in elements).
///   out     [tokens, heads * head_size]  float64, contiguous
///   out_lse [tokens, heads]              float64, contiguous
template <class E>
void reference(const E* prefix_out, const float* prefix_lse, const E* suffix_out, const float* suffix_lse,
               std::int64_t tokens, std::int64_t heads, std::int64_t head_size, std::int64_t prefix_stride,
               std::int64_t suffix_stride, double* out, double* out_lse) {
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t h = 0; h < heads; ++h) {
      const double p = prefix_lse[t * heads + h];
      const double s = suffix_lse[t * heads + h];
      out_lse[t * heads + h] = reference_weights(p, s).lse;
      for (std::int64_t i = 0; i < head_size; ++i) {
        const std::int64_t col = h * head_size + i;
        out[t * heads * head_size + col] =
            reference_value(p, s, static_cast<double>(ktune::to_float(prefix_out[t * prefix_stride + col])),
                            static_cast<double>(ktune::to_float(suffix_out[t * suffix_stride + col])));
      }
    }
  }
}

}  // namespace ktune::ops::merge_attn_states_lse
