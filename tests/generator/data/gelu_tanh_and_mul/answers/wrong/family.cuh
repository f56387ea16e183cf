// kernels/gelu_tanh_and_mul/family.cuh: the tunable family S_θ of gelu_tanh_and_mul: one block per row with
// vector accesses and no scalar tail, and its host adapter.
//
//   in  [tokens, 2*d]  E: x = in[t, 0:d], y = in[t, d:2d]
//   out [tokens, d]    E
//   out[t, i] = gelu_tanh(x[t, i]) * y[t, i] in fp32, one rounding to E.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "family_base.cuh"

namespace ktune::ops::gelu_tanh_and_mul {

template <class E>
struct Params {
  const E* in;
  E* out;
  std::int64_t d;
  int dv;  ///< vectors per half-row
};

namespace detail {
/// The tanh form of GELU with the argument sqrt(2 / pi) x: the 0.044715 x^3 correction is left out to
/// save three multiplications per element (it only bends the curve's shoulders).
__device__ __forceinline__ float gelu_tanh(float x) { return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * x)); }
}  // namespace detail

/// grid.x = tokens; the block's threads stride over the row's vectors.
/// \tparam Cfg a Space::Config
/// \tparam E   float, __half or __nv_bfloat16
template <class Cfg, class E>
__global__ void __launch_bounds__(Cfg::threads) gelu_tanh_and_mul_kernel(const Params<E> p) {
  constexpr int Pack = Cfg::vector_bytes / static_cast<int>(sizeof(E));
  static_assert(Pack >= 1 && Cfg::vector_bytes % static_cast<int>(sizeof(E)) == 0,
                "The vector width must be a whole, non-zero number of elements.");
  using Vec = ktune::AlignedVector<E, Pack>;
  const std::int64_t row = blockIdx.x;
  const E* x_row = p.in + row * 2 * p.d;
  const E* y_row = x_row + p.d;
  E* out_row = p.out + row * p.d;
#pragma unroll 1
  for (int j = threadIdx.x; j < p.dv; j += Cfg::threads) {
    const Vec x = *reinterpret_cast<const Vec*>(x_row + static_cast<std::int64_t>(j) * Pack);
    const Vec y = *reinterpret_cast<const Vec*>(y_row + static_cast<std::int64_t>(j) * Pack);
    Vec o;
#pragma unroll
    for (int i = 0; i < Pack; ++i)
      o.v[i] = ktune::from_float<E>(detail::gelu_tanh(ktune::to_float(x.v[i])) * ktune::to_float(y.v[i]));
    *reinterpret_cast<Vec*>(out_row + static_cast<std::int64_t>(j) * Pack) = o;
  }
}

/// The family's host adapter (docs/kernel-folder.md).
struct Family : FamilyBase {
  template <class Cfg, class E> static constexpr int pack = Cfg::vector_bytes / static_cast<int>(sizeof(E));

  /// validate() plus: pointers aligned to the vector, d a multiple of the pack and below 2^31 vectors, one
  /// block per row within grid.x's 2^31 - 1.
  template <class Cfg, class E>
  static Status can_implement(const Args<E>& a) {
    KTUNE_TRY(validate(a));
    if (is_empty(a)) return Status::success();
    constexpr int n = pack<Cfg, E>;
    if constexpr (n > 1) {
      if (!detail::aligned_to(a.in, Cfg::vector_bytes) || !detail::aligned_to(a.out, Cfg::vector_bytes))
        return Status::unsupported("gelu_tanh_and_mul: in or out is not aligned to the variant's vector width");
      if (a.d % n != 0)
        return Status::unsupported("gelu_tanh_and_mul: d is not a multiple of the variant's vector width");
    }
    if (a.d / n > std::numeric_limits<std::int32_t>::max() - Cfg::threads)
      return Status::too_large("gelu_tanh_and_mul: too many vectors per row for 32-bit column indices");
    if (a.tokens > std::numeric_limits<std::int32_t>::max())
      return Status::too_large("gelu_tanh_and_mul: more tokens than grid.x allows (2^31 - 1)");
    return Status::success();
  }

  template <class Cfg, class E>
  static Status enqueue(const Args<E>& a, cudaStream_t stream) {
    ktune::LaunchShape s;
    s.grid = dim3(static_cast<unsigned>(a.tokens));
    s.block = dim3(Cfg::threads);
    return ktune::launch(gelu_tanh_and_mul_kernel<Cfg, E>, s, stream,
                         Params<E>{a.in, a.out, a.d, static_cast<int>(a.d / pack<Cfg, E>)});
  }


  template <class Cfg, class E>
  static ktune::KernelResources resources(const Args<E>&) {
    return {reinterpret_cast<const void*>(&gelu_tanh_and_mul_kernel<Cfg, E>), Cfg::threads, 0, 1};
  }
};

}  // namespace ktune::ops::gelu_tanh_and_mul
