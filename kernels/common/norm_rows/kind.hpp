// kernels/common/norm_rows/kind.hpp: what distinguishes the four RMS norm ops that share the row structures of
// this folder (fused_add_rmsnorm, rmsnorm, gemma_rmsnorm, gemma_fused_add_rmsnorm): whether a residual is
// added in place, and whether the weight is used as w or as 1 + w. No CUDA types: g++ and nvcc compile it.
//
// Shared device code, not an op: the build takes a folder for an op only when it is kernels/<op>/ with a
// spec.json (CMakeLists.txt globs kernels/*/spec.json), and kernels/common/ has none, so nothing under it
// is built, listed or tuned on its own. The four ops' folders include it; bench/CMakeLists.txt hashes
// kernels/common/ into every op's source hash, so a change here invalidates their cached results.
#pragma once

namespace ktune::ops::norm_rows {

/// One RMS norm op's semantics, per row t of h elements, all arithmetic in fp32:
///   Residual: x = input[t] + residual[t]; residual[t] <- x (rounded); input[t] <- y (rounded), in place;
///   else:     x = input[t];                                           output[t] <- y (rounded);
///   y = x * rsqrt(sum(x^2) / h + eps) * (WeightOffset + weight), the products taken in that order.
/// \tparam Residual     a residual is added and updated in place, and the result overwrites input
///                      (sgl_kernel's fused_add_rmsnorm and gemma_fused_add_rmsnorm); otherwise the result
///                      goes to a separate output (rmsnorm, gemma_rmsnorm)
/// \tparam WeightOffset 0: the weight is w; 1: it is 1 + w, rounded to fp32 (Gemma stores w - 1)
template <bool Residual, int WeightOffset>
struct Kind {
  static_assert(WeightOffset == 0 || WeightOffset == 1, "The weight is used as w or as 1 + w.");
  static constexpr bool residual = Residual;
  static constexpr int weight_offset = WeightOffset;
  /// The result overwrites input exactly when a residual is added: sgl_kernel's four ops, no more.
  static constexpr bool in_place = Residual;
  /// Row tensors a thread loads per vector of a row: input, the residual where there is one, the weight.
  static constexpr int streams = Residual ? 3 : 2;
  /// Row tensors read per row besides the weight (what a ring stage of bulk rows holds).
  static constexpr int row_inputs = Residual ? 2 : 1;
  /// Where the op's Harness lists its tensors (tensors() order; device_preparation.cuh writes them there):
  /// input, the residual where there is one, the weight (then the output where there is one).
  static constexpr int input_tensor = 0, residual_tensor = Residual ? 1 : -1, weight_tensor = Residual ? 2 : 1;
};

using FusedAdd = Kind<true, 0>;       ///< fused_add_rmsnorm
using Plain = Kind<false, 0>;         ///< rmsnorm
using Gemma = Kind<false, 1>;         ///< gemma_rmsnorm
using GemmaFusedAdd = Kind<true, 1>;  ///< gemma_fused_add_rmsnorm

}  // namespace ktune::ops::norm_rows
