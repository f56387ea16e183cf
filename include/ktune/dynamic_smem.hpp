// ktune/dynamic_smem.hpp: the one place ktune raises a kernel's dynamic shared memory limit.
//
// The limit (cudaFuncAttributeMaxDynamicSharedMemorySize) is per kernel and device, and setting it is
// absolute: a caller that sets it to what it needs now lowers it under what another caller raised it
// to, and that caller's next launch above the new limit fails with cudaErrorInvalidValue. So nothing in
// ktune sets it directly; every raise comes here, which keeps one record per kernel and never lowers it.
// Host-only (the CUDA runtime API); g++ and nvcc both compile it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

#include "status.hpp"

namespace ktune {
namespace detail {
/// Raises `kernel`'s dynamic shared memory limit on the current device to at least `bytes` (needed above
/// the default, 48 KB less the kernel's static shared memory), and never lowers it.
/// One record per kernel: a record per kernel signature let one kernel's raise stand for another's.
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
}  // namespace ktune
