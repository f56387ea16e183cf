// ktune/device_info.hpp: facts about the current device, queried once per device and cached.
//
// The public kernel APIs call current_device() on every call, so it must cost next to nothing after
// the first call on a device: one cudaGetDevice and an atomic load. Safe across threads; entries live
// for the whole process.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <mutex>

#include "arch.hpp"
#include "status.hpp"

namespace ktune {

struct DeviceInfo {
  int ordinal = -1;
  int arch = 0;            ///< compute capability as 10*major+minor
  int table_arch = 0;      ///< the row of arch.hpp used for it (nearest_known_arch)
  int sms = 0;
  int l2_bytes = 0;
  int smem_per_block_optin = 0;
  int max_threads_per_sm = 0;
  char name[256] = {};
};

namespace detail {
inline constexpr int max_cached_devices = 64;

inline Status query_device(int ordinal, DeviceInfo& d) {
  cudaDeviceProp p{};
  KTUNE_CUDA_TRY(cudaGetDeviceProperties(&p, ordinal));
  d.ordinal = ordinal;
  d.arch = p.major * 10 + p.minor;
  d.table_arch = nearest_known_arch(d.arch);
  d.sms = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.smem_per_block_optin = static_cast<int>(p.sharedMemPerBlockOptin);
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  for (std::size_t i = 0; i + 1 < sizeof(d.name) && p.name[i]; ++i) d.name[i] = p.name[i];
  return Status::success();
}
}  // namespace detail

/// Facts about the device current on the calling thread. `out` points into a process-lifetime cache.
inline Status current_device(const DeviceInfo*& out) {
  static std::array<std::atomic<const DeviceInfo*>, detail::max_cached_devices> cache{};
  static std::mutex fill;
  int ordinal = 0;
  KTUNE_CUDA_TRY(cudaGetDevice(&ordinal));
  if (ordinal < 0 || ordinal >= detail::max_cached_devices)
    return Status::unsupported("device ordinal beyond ktune's per-device cache (64 devices)");
  const DeviceInfo* hit = cache[static_cast<std::size_t>(ordinal)].load(std::memory_order_acquire);
  if (!hit) {
    std::lock_guard<std::mutex> lock(fill);
    hit = cache[static_cast<std::size_t>(ordinal)].load(std::memory_order_relaxed);
    if (!hit) {
      auto* d = new DeviceInfo{};  // lives until the process ends, like the CUDA context
      const Status st = detail::query_device(ordinal, *d);
      if (!st.ok()) {
        delete d;
        return st;
      }
      cache[static_cast<std::size_t>(ordinal)].store(d, std::memory_order_release);
      hit = d;
    }
  }
  out = hit;
  return Status::success();
}

}  // namespace ktune
