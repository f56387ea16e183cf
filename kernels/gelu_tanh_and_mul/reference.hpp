// kernels/gelu_tanh_and_mul/reference.hpp: the float64 CPU reference of gelu_tanh_and_mul, used by the tests and by the
// benchmark's correctness gate. g++ and nvcc; its element
// functions run on the device too (kernels/common/act_and_mul/device_preparation.cuh).
//
// Semantics: out[t, i] = gelu_tanh(x) * y with x = in[t, i], y = in[t, d + i], gelu_tanh(x) =
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), the tanh approximation of GELU (as a formula: its own
// exact value, not the erf GELU's). The kernels compute in fp32 with tanh.approx.f32, as SGLang's
// -use_fast_math build does, and round once to the storage type; the spec's tolerances allow that
// instruction's documented error (relative 2^-10.987) on top of the rounding. IEEE arithmetic of the formula
// decides the special cases, as in the kernels:
//   x far below zero: tanh = -1 and x * 0 = -0 (never NaN; x^3 may overflow to -inf, tanh(-inf) = -1);
//   x = +inf: +inf;  x = -inf: -inf * 0 = NaN (the formula has no value there);
//   a NaN in x or y gives NaN in out[t, i] and nowhere else.
#pragma once

#include <cuda_runtime_api.h>  // __host__ __device__ for host compilers too

#include <cmath>
#include <cstdint>
#include <vector>

#include <ktune/dtype.hpp>

namespace ktune::ops::gelu_tanh_and_mul {

/// 0.5 x (1 + tanh(u)) computed as x / (1 + exp(-2u)), the same value without the cancellation of
/// 1 + tanh(u) for u far below zero.
__host__ __device__ inline double gelu_tanh_reference(double x) {
  const double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
  return x / (1.0 + exp(-2.0 * u));
}

__host__ __device__ inline double gelu_tanh_and_mul_reference(double x, double y) { return gelu_tanh_reference(x) * y; }

/// The reference of one element, as a type the device preparation takes.
struct ElementReference {
  __host__ __device__ double operator()(double x, double y) const { return gelu_tanh_and_mul_reference(x, y); }
};

/// out [tokens, d] dense (row stride d), from in [tokens, 2*d] with row stride in_stride (elements).
/// \tparam E float, __half or __nv_bfloat16: the storage type of `in`
template <class E>
std::vector<double> reference(const E* in, std::int64_t tokens, std::int64_t d, std::int64_t in_stride) {
  std::vector<double> out(static_cast<std::size_t>(tokens * d));
  for (std::int64_t t = 0; t < tokens; ++t) {
    const E* row = in + t * in_stride;
    for (std::int64_t i = 0; i < d; ++i)
      out[static_cast<std::size_t>(t * d + i)] = gelu_tanh_and_mul_reference(static_cast<double>(ktune::to_float(row[i])),
                                                      static_cast<double>(ktune::to_float(row[d + i])));
  }
  return out;
}

}  // namespace ktune::ops::gelu_tanh_and_mul
