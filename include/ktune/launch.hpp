// ktune/launch.hpp: one launch path for every kernel: grid, block, dynamic shared memory, optional
// thread-block cluster and programmatic dependent launch, checked.
//
// Needs nvcc (it takes a __global__ function pointer). Host-side cost matters here: the public API
// promises at most ~1 µs over a raw launch, so nothing below queries the device per call.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "dynamic_smem.hpp"
#include "status.hpp"

namespace ktune {

struct LaunchShape {
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  std::size_t smem = 0;   ///< dynamic shared memory per block, bytes
  unsigned cluster = 1;   ///< blocks per cluster along x (sm_90+); 1 = no cluster
  bool pdl = false;       ///< programmatic dependent launch (sm_90+)
};

/// Launches `kernel` with `shape` on `stream` and returns the launch's own error: cudaLaunchKernelEx's
/// result, taken out of the thread's last error again when it failed (KTUNE_CUDA_TRY). A launch that
/// succeeds leaves the last error alone, so an error the caller had pending is neither reported as this
/// launch's nor lost (status.hpp). With KTUNE_DEBUG_SYNC, also the kernel's execution error.
template <class... Params, class... Args>
Status launch(void (*kernel)(Params...), const LaunchShape& shape, cudaStream_t stream, Args&&... args) {
  KTUNE_TRY(detail::ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), shape.smem));
  cudaLaunchAttribute attrs[2];
  unsigned n = 0;
  if (shape.cluster > 1) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n].val.clusterDim.x = shape.cluster;
    attrs[n].val.clusterDim.y = 1;
    attrs[n].val.clusterDim.z = 1;
    ++n;
  }
  if (shape.pdl) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = shape.grid;
  config.blockDim = shape.block;
  config.dynamicSmemBytes = shape.smem;
  config.stream = stream;
  config.attrs = n ? attrs : nullptr;
  config.numAttrs = n;
  KTUNE_CUDA_TRY(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
  KTUNE_DEBUG_SYNC_CHECK();
  return Status::success();
}

}  // namespace ktune
