// ktune/device_check.hpp: the run-time half of feasibility. The compile-time rules (space.hpp) prune
// what cannot work on an architecture; this asks the device about the compiled kernel itself:
// registers, local memory (spills), the block size it can launch with, and occupancy.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "device_info.hpp"
#include "dynamic_smem.hpp"
#include "registry.hpp"
#include "status.hpp"

namespace ktune {

struct DeviceCheck {
  bool ok = false;
  std::string reason;             ///< why it was rejected; empty when ok
  int registers = 0;              ///< per thread
  std::size_t local_bytes = 0;    ///< local memory per thread: spills or runtime-indexed arrays
  std::size_t static_smem = 0;
  int max_threads = 0;            ///< largest block the compiled kernel can launch with
  int blocks_per_sm = 0;
  double occupancy = 0;           ///< resident threads / max threads per SM, in [0, 1]
};

/// Fills `out` for the kernel in `r` on the current device. A CUDA failure is returned as a Status;
/// a kernel that cannot run well is a successful check with out.ok == false and a reason.
inline Status check_on_device(const KernelResources& r, DeviceCheck& out) {
  out = DeviceCheck{};
  const DeviceInfo* dev = nullptr;
  KTUNE_TRY(current_device(dev));
  cudaFuncAttributes a{};
  KTUNE_CUDA_TRY(cudaFuncGetAttributes(&a, r.func));
  out.registers = a.numRegs;
  out.local_bytes = a.localSizeBytes;
  out.static_smem = a.sharedSizeBytes;
  out.max_threads = a.maxThreadsPerBlock;
  if (r.threads > a.maxThreadsPerBlock) {
    out.reason = "cannot launch: needs " + std::to_string(r.threads) + " threads per block, the compiled kernel allows " +
                 std::to_string(a.maxThreadsPerBlock) + " (" + std::to_string(a.numRegs) + " registers per thread)";
    return Status::success();
  }
  if (r.smem + a.sharedSizeBytes > static_cast<std::size_t>(dev->smem_per_block_optin)) {
    out.reason = "cannot launch: " + std::to_string(r.smem + a.sharedSizeBytes) +
                 " bytes of shared memory per block exceed the device's " + std::to_string(dev->smem_per_block_optin);
    return Status::success();
  }
  // Through the one record per kernel: setting the attribute here to this shape's size would lower the
  // limit a wider shape's launch had raised, and that shape's next launch would fail.
  KTUNE_TRY(detail::ensure_dynamic_smem(r.func, r.smem));
  KTUNE_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&out.blocks_per_sm, r.func, r.threads, r.smem));
  out.occupancy = static_cast<double>(out.blocks_per_sm) * r.threads / dev->max_threads_per_sm;
  if (out.blocks_per_sm == 0) {
    out.reason = "cannot be resident: zero blocks per SM with " + std::to_string(r.threads) + " threads and " +
                 std::to_string(r.smem) + " bytes of dynamic shared memory";
    return Status::success();
  }
  if (a.localSizeBytes > 0) {
    out.reason = "spills: " + std::to_string(a.localSizeBytes) +
                 " bytes of local memory per thread (register spills or a register array indexed at run time)";
    return Status::success();
  }
  out.ok = true;
  return Status::success();
}

}  // namespace ktune
