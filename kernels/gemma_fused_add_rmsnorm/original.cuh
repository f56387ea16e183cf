// kernels/gemma_fused_add_rmsnorm/original.cuh: the original kernel S, as SGLang runs it.
//
// sgl_kernel.gemma_fused_add_rmsnorm(input, residual, weight, eps, enable_pdl)
// (sgl-kernel/python/sgl_kernel/elementwise.py at sglang 00390b8633f913f53d98d3acdbc1ab8f0d62da1b) calls
// FlashInfer's csrc/norm.cu gemma_fused_add_rmsnorm, built into sgl-kernel's library, which launches
// norm::GemmaFusedAddRMSNorm: FusedAddRMSNormKernel with weight_bias 1 (kernels/common/norm_rows/
// flashinfer.cuh says which FlashInfer commit and what is kept). enable_pdl defaults to
// is_arch_support_pdl(), true on sm_90: the launch asks for PDL there, as here.
//
// Deviations, to accept every call the public API could route here and refuse the rest with a Status
// instead of a fault: FlashInfer checks neither the pointers' nor the strides' alignment to its vector
// (gcd(16 / sizeof(T), h) elements) nor its 32-bit offsets, and asks for (ceil(warps / 4) * 4 + h) floats
// of shared memory whether or not they fit; can_implement() refuses what would break them. PDL is asked
// for on sm_90 and newer only (FlashInfer's attribute is its caller's flag).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <ktune/device_info.hpp>
#include <ktune/intrinsics.cuh>
#include <ktune/launch.hpp>
#include <ktune/registry.hpp>
#include <ktune/status.hpp>

#include "../common/norm_rows/flashinfer.cuh"
#include "args.hpp"

namespace ktune::ops::gemma_fused_add_rmsnorm::original {

/// weight_bias of FlashInfer's launcher for this op.
inline constexpr float weight_bias = 1.f;

template <class E>
Status can_implement(const Args<E>& a) {
  KTUNE_TRY(validate(a));
  if (is_empty(a)) return Status::success();
  const norm_rows::flashinfer::Geometry g(a.h, sizeof(E));
  const unsigned bytes = g.vec * sizeof(E);
  if (misalignment(a.input, bytes) || misalignment(a.residual, bytes) || misalignment(a.weight, bytes))
    return Status::unsupported(
        "original gemma_fused_add_rmsnorm: pointers must be aligned to its vector (gcd(16 / sizeof(E), h) elements)");
  if (a.input_stride % g.vec || a.residual_stride % g.vec)
    return Status::unsupported("original gemma_fused_add_rmsnorm: the strides must be multiples of its vector");
  // FlashInfer's 32-bit offsets: bx * stride + column must stay below 2^32.
  const std::int64_t limit = std::int64_t{1} << 32;
  if ((a.tokens - 1) * a.input_stride + a.h >= limit || (a.tokens - 1) * a.residual_stride + a.h >= limit)
    return Status::too_large("original gemma_fused_add_rmsnorm: row offsets beyond its 32-bit indexing");
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  if (g.smem_fused_add > static_cast<std::size_t>(dev->smem_per_block_optin))
    return Status::unsupported("original gemma_fused_add_rmsnorm: the row does not fit in shared memory");
  return Status::success();
}

template <class E>
KernelResources resources(const Args<E>& a) {
  const norm_rows::flashinfer::Geometry g(a.h, sizeof(E));
  return norm_rows::flashinfer::with_vec<E>(g.vec, [&](auto v) -> KernelResources {
    return {reinterpret_cast<const void*>(&norm_rows::flashinfer::fused_add_rms_norm_kernel<decltype(v)::value, E>),
            static_cast<int>(g.num_warps * 32), g.smem_fused_add, 1};
  });
}

template <class E>
Status run(const Args<E>& a, cudaStream_t stream) {
  KTUNE_TRY(can_implement(a));
  if (is_empty(a)) return Status::success();
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  const norm_rows::flashinfer::Geometry g(a.h, sizeof(E));
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(a.tokens));
  shape.block = dim3(32, g.num_warps);
  shape.smem = g.smem_fused_add;
  shape.pdl = dev->arch >= 90;
  return norm_rows::flashinfer::with_vec<E>(g.vec, [&](auto v) -> Status {
    // ktune::launch raises the kernel's dynamic shared memory limit to what it asks for, as FlashInfer does.
    return launch(&norm_rows::flashinfer::fused_add_rms_norm_kernel<decltype(v)::value, E>, shape, stream, a.input, a.residual, a.weight, static_cast<std::uint32_t>(a.h),
                  static_cast<std::uint32_t>(a.input_stride), static_cast<std::uint32_t>(a.residual_stride),
                  weight_bias, a.eps);
  });
}

}  // namespace ktune::ops::gemma_fused_add_rmsnorm::original
