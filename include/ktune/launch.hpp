// ktune/launch.hpp: one launch path for every kernel: grid, block, dynamic shared memory, optional
// thread-block cluster and programmatic dependent launch, checked.
//
// Needs nvcc (it takes a __global__ function pointer). Host-side cost matters here: the public API
// promises at most ~1 µs over a raw launch, so nothing below queries the device per call.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

#include "status.hpp"

namespace ktune {

struct LaunchShape {
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  std::size_t smem = 0;   ///< dynamic shared memory per block, bytes
  unsigned cluster = 1;   ///< blocks per cluster along x (sm_90+); 1 = no cluster
  bool pdl = false;       ///< programmatic dependent launch (sm_90+)
};

namespace detail {
/// Raises `kernel`'s dynamic shared memory limit on the current device to at least `bytes` (the
/// attribute is per function and device; needed above the default, 48 KB less the kernel's static shared
/// memory), and never lowers it.
/// One record per kernel: a record per kernel signature let one kernel's raise stand for another's, and
/// a raise to a smaller size could lower a limit another caller had set higher, so a later launch above
/// it failed with cudaErrorInvalidValue. Every raise in ktune goes through here.
inline Status ensure_dynamic_smem(const void* kernel, std::size_t bytes) {
  if (bytes == 0) return Status::success();
  int dev = 0;
  KTUNE_CUDA_TRY(cudaGetDevice(&dev));
  // The default limit is 48 KB less the kernel's static shared memory, so even a launch below 48 KB may
  // need the opt-in. Each thread remembers the limits it has seen: the launch path takes no lock.
  using Key = std::pair<const void*, int>;
  thread_local std::map<Key, std::size_t> seen;
  if (auto it = seen.find({kernel, dev}); it != seen.end() && it->second >= bytes) return Status::success();
  static std::mutex mutex;
  static std::map<Key, std::size_t> limits;  // 0: not asked yet
  std::lock_guard<std::mutex> lock(mutex);
  std::size_t& limit = limits[{kernel, dev}];
  if (limit == 0) {
    cudaFuncAttributes attributes{};
    KTUNE_CUDA_TRY(cudaFuncGetAttributes(&attributes, kernel));
    limit = static_cast<std::size_t>(attributes.maxDynamicSharedSizeBytes);
  }
  if (limit < bytes) {
    KTUNE_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    limit = bytes;
  }
  seen[{kernel, dev}] = limit;
  return Status::success();
}
}  // namespace detail

/// Launches `kernel` with `shape` on `stream` and checks the launch (KTUNE_CHECK_LAUNCH).
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
  KTUNE_CHECK_LAUNCH();
  return Status::success();
}

}  // namespace ktune
