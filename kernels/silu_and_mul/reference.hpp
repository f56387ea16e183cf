// kernels/silu_and_mul/reference.hpp: the float64 CPU reference of silu_and_mul, used by the tests and
// by the benchmark's correctness gate. g++ and nvcc; its element
// functions run on the device too (kernels/common/act_and_mul/device_preparation.cuh).
//
// Semantics: out[t, i] = silu(x) * y with x = in[t, i], y = in[t, d + i], silu(x) = x / (1 + exp(-x)).
// The kernels compute in fp32 and round once to the storage type; this computes the same formula in
// float64 from the stored inputs, so a kernel's only errors are fp32 arithmetic and the final rounding.
// IEEE arithmetic of the formula decides the special cases, as it does in the kernels:
//   x far below zero: exp(-x) overflows to inf and x / inf = -0 (never NaN);
//   x = +inf: +inf;  x = -inf: -inf / inf = NaN (the formula has no value there);
//   a NaN in x or y gives NaN in out[t, i] and nowhere else.
#pragma once

#include <cuda_runtime_api.h>  // __host__ __device__ for host compilers too

#include <cmath>
#include <cstdint>
#include <vector>

#include <ktune/dtype.hpp>

namespace ktune::ops::silu_and_mul {

__host__ __device__ inline double silu_reference(double x) { return x / (1.0 + exp(-x)); }

__host__ __device__ inline double silu_and_mul_reference(double x, double y) { return silu_reference(x) * y; }

/// The reference of one element, as a type the device preparation takes.
struct ElementReference {
  __host__ __device__ double operator()(double x, double y) const { return silu_and_mul_reference(x, y); }
};

/// out [tokens, d] dense (row stride d), from in [tokens, 2*d] with row stride in_stride (elements).
/// \tparam E float, __half or __nv_bfloat16: the storage type of `in`
template <class E>
std::vector<double> reference(const E* in, std::int64_t tokens, std::int64_t d, std::int64_t in_stride) {
  std::vector<double> out(static_cast<std::size_t>(tokens * d));
  for (std::int64_t t = 0; t < tokens; ++t) {
    const E* row = in + t * in_stride;
    for (std::int64_t i = 0; i < d; ++i)
      out[static_cast<std::size_t>(t * d + i)] = silu_and_mul_reference(static_cast<double>(ktune::to_float(row[i])),
                                                                         static_cast<double>(ktune::to_float(row[d + i])));
  }
  return out;
}

}  // namespace ktune::ops::silu_and_mul
