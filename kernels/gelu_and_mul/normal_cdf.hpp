// kernels/gelu_and_mul/normal_cdf.hpp: Phi(x), the standard normal CDF, in fp32 with one exp2 and no erff,
// for the variants of gelu_and_mul (gelu(x) = x Phi(x)). Host and device (g++ and nvcc).
//
// Why not S's 0.5 (1 + erff(x / sqrt 2)): erff costs about 22 instructions, seven of them selects on the
// half-rate ALU pipe, and at 16-bit dtypes that made the kernel compute-bound: the same variant moved a
// 64 MB+ call at 91-94% of a same-size copy, against 102-103% for gelu_tanh_and_mul and silu_and_mul
// (reports/nvidia-h200, 2026-11-27). Here Phi takes a degree-9 polynomial, one MUFU.EX2 and four ALU
// operations; with it the 16-bit calls of 16 MB and more run at 98-102% of a same-size copy on an H200
// (docs/gpu-log.md, 2026-11-27, "one batch per shape").
//
// The form: with t = |x| / sqrt 2, h(t) = erfc(t) / 2 = 2^p(t / 4) where p is a polynomial fitted to
// log2(erfc(4u) / 2) on u in [0, 1] (tools/fit_normal_cdf.py prints these coefficients and the error
// below); Phi(x) = 1 - h for x >= 0 and h for x < 0. Past t = 4, h < 7.8e-9 is taken as 0 exactly.
//
// Accuracy, against float64 (fp32 Horner and an exact exp2, every 2^-12 of [-8, 8]): at most 7.8e-8
// absolute, where S's form with a correctly rounded erf is at 6.0e-8 and libdevice's erff adds up to one
// ulp; for x < 0 at most 1.2e-5 relative down to x = -5.4, where S's form loses every digit to the
// cancellation in 1 + erf (33% there). The device's ex2.approx.ftz adds at most 2 ulp of h. Special values
// are the formula's, as S's are: x = +inf gives Phi = 1, x = -inf gives 0 (so gelu = -inf * 0 = NaN, as S
// and the reference give), NaN gives 0 (the product stays NaN through x).
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace ktune::ops::gelu_and_mul {

/// 2^p; on the device ex2.approx.ftz.f32 (one MUFU.EX2: p is in [-26, -1], no denormal in or out).
__host__ __device__ __forceinline__ float exp2_approx(float p) {
#ifdef __CUDA_ARCH__
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(p));
  return r;
#else
  return std::exp2(p);
#endif
}

/// Phi(x) = P(X <= x), X standard normal, in fp32 (the header's comment says how and how accurate).
__host__ __device__ __forceinline__ float normal_cdf(float x) {
  constexpr float kUnit = 0.17677669529663688110f;  // 1 / (4 sqrt 2): u = t / 4
  const float u = fabsf(x) * kUnit;
  // p(u), highest degree first (tools/fit_normal_cdf.py).
  float p = 0x1.0030ccp+0f;
  p = fmaf(p, u, -0x1.15956ap+2f);
  p = fmaf(p, u, 0x1.dd2fbap+2f);
  p = fmaf(p, u, -0x1.60136ap+2f);
  p = fmaf(p, u, -0x1.2f0e96p+0f);
  p = fmaf(p, u, 0x1.d57f9cp+2f);
  p = fmaf(p, u, -0x1.3080eap+3f);
  p = fmaf(p, u, -0x1.d634acp+3f);
  p = fmaf(p, u, -0x1.a0bedep+2f);
  p = fmaf(p, u, -0x1.fffffep-1f);
  const float h = u < 1.0f ? exp2_approx(p) : 0.0f;  // erfc(t) / 2; 0 past the fitted range and for NaN
  return x >= 0.0f ? 1.0f - h : h;
}

}  // namespace ktune::ops::gelu_and_mul
