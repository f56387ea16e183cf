// kernels/gemma_fused_add_rmsnorm/space.hpp: the tunable parameters θ of the gemma_fused_add_rmsnorm
// family: the parameters, rules and named points every RMS norm op shares
// (kernels/common/norm_rows/space.hpp, for the residual kind with the weight used as 1 + w), and S's point.
//
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include "../common/norm_rows/space.hpp"

namespace ktune::ops::gemma_fused_add_rmsnorm {

struct Space : norm_rows::RowSpace<norm_rows::GemmaFusedAdd> {
  /// S's own configuration on sm_90 (FlashInfer's FusedAddRMSNormKernel, h a multiple of 16 bytes):
  /// 16-byte vectors, one vector per thread per round, x staged in shared memory, one block per row of
  /// min(1024, h / vec) threads, launched with PDL.
  static constexpr Point original_point = {16, 1, smem, 1, 1};
};

}  // namespace ktune::ops::gemma_fused_add_rmsnorm
