// kernels/gelu_and_mul/reference.hpp: the float64 CPU reference of gelu_and_mul, used by the tests and by the
// benchmark's correctness gate. g++ and nvcc; its element
// functions run on the device too (kernels/common/act_and_mul/device_preparation.cuh).
//
// Semantics: out[t, i] = gelu(x) * y with x = in[t, i], y = in[t, d + i], gelu(x) = x * Phi(x) =
// 0.5 x (1 + erf(x / sqrt(2))), the exact (erf) GELU. The kernels compute in fp32 and round once to the storage
// type; this computes the same formula in float64 from the stored inputs, so a kernel's only errors are its
// fp32 arithmetic (erff, and the cancellation in 1 + erf(z) for z far below zero: up to 1e-2 of the result,
// about 2e-6 absolute for |x| <= 6, |y| <= 3.2, which the spec's fp32 atol and rms_floor cover) and the final
// rounding; the reference itself avoids that cancellation (erfc). IEEE arithmetic of the formula decides the special cases, as in the kernels:
//   x far below zero: erf(x / sqrt 2) = -1 and x * 0 = -0 (never NaN);
//   x = +inf: +inf;  x = -inf: -inf * 0 = NaN (the formula has no value there);
//   a NaN in x or y gives NaN in out[t, i] and nowhere else.
#pragma once

#include <cuda_runtime_api.h>  // __host__ __device__ for host compilers too

#include <cmath>
#include <cstdint>
#include <vector>

#include <ktune/dtype.hpp>

namespace ktune::ops::gelu_and_mul {

/// x Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2: the same value as 0.5 x (1 + erf(x / sqrt 2)), without that
/// form's cancellation for x far below zero (1 + erf loses every digit there, even in float64).
__host__ __device__ inline double gelu_reference(double x) { return 0.5 * x * erfc(-x * 0.70710678118654752440); }

__host__ __device__ inline double gelu_and_mul_reference(double x, double y) { return gelu_reference(x) * y; }

/// The reference of one element, as a type the device preparation takes.
struct ElementReference {
  __host__ __device__ double operator()(double x, double y) const { return gelu_and_mul_reference(x, y); }
};

/// out [tokens, d] dense (row stride d), from in [tokens, 2*d] with row stride in_stride (elements).
/// \tparam E float, __half or __nv_bfloat16: the storage type of `in`
template <class E>
std::vector<double> reference(const E* in, std::int64_t tokens, std::int64_t d, std::int64_t in_stride) {
  std::vector<double> out(static_cast<std::size_t>(tokens * d));
  for (std::int64_t t = 0; t < tokens; ++t) {
    const E* row = in + t * in_stride;
    for (std::int64_t i = 0; i < d; ++i)
      out[static_cast<std::size_t>(t * d + i)] = gelu_and_mul_reference(static_cast<double>(ktune::to_float(row[i])),
                                                      static_cast<double>(ktune::to_float(row[d + i])));
  }
  return out;
}

}  // namespace ktune::ops::gelu_and_mul
