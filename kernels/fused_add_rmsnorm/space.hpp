// kernels/fused_add_rmsnorm/space.hpp: the tunable parameters θ of the fused_add_rmsnorm family: the
// parameters, rules and named points every RMS norm op shares (kernels/common/norm_rows/space.hpp, for the
// residual kind), and S's own point.
//
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include "../common/norm_rows/space.hpp"

namespace ktune::ops::fused_add_rmsnorm {

struct Space : norm_rows::RowSpace<norm_rows::FusedAdd> {
  /// S's own configuration: 16-byte vectors, one vector per thread per round, x staged in shared
  /// memory, one block per row, min(1024, h / vec) threads.
  static constexpr Point original_point = {16, 1, smem, 1, 0};
};

}  // namespace ktune::ops::fused_add_rmsnorm
