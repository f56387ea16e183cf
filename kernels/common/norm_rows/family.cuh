// kernels/common/norm_rows/family.cuh: RowFamily, the host adapter every RMS norm op's Family derives from: it
// plans a configuration's launch, chooses its kernel (row_kernel.cuh: stages 0-2 and 5, a block or a
// cluster per row; rows_kernel.cuh: the persistent stages, 3 and 4 from persistent_rows.cuh, 6 from
// bulk_rows.cuh) and launches it. An op's family.cuh adds its name, Args, Harness and S.
//
// Every configuration computes, per row, what kind.hpp says: x = input (+ residual) in fp32; residual <- x
// (rounded) where there is one; the result x * rsqrt(sum(x^2) / h + eps) * (offset + weight) (rounded),
// the products taken in that order as S does. Configurations differ only in the order the fp32 sum of
// squares is added up, so they may differ in the last bits of the result; each one is deterministic
// (fixed reduction order, no atomics), so the same input gives bitwise the same output on every run.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <ktune/device_info.hpp>
#include <ktune/family.hpp>
#include <ktune/intrinsics.cuh>
#include <ktune/launch.hpp>
#include <ktune/status.hpp>

#include "common.cuh"
#include "kind.hpp"
#include "row_kernel.cuh"
#include "rows_kernel.cuh"
#include "space.hpp"

namespace ktune::ops::norm_rows {

/// Rows are a grid dimension (x), whose limit is 2^31 - 1 blocks.
inline constexpr std::int64_t max_grid_rows = (std::int64_t{1} << 31) - 1;

/// The host adapter shared by the RMS norm ops (docs/kernel-folder.md): everything of Family but the op's
/// name, Args, Harness and S. Args<E> of the residual kinds has input, residual, weight, tokens, h,
/// input_stride, residual_stride, eps; that of the others output, input, weight, tokens, h, output_stride,
/// input_stride, eps; validate() and is_empty() are found beside it (the op's args.hpp).
/// \tparam K      the op's Kind
/// \tparam SpaceT the op's Space (a RowSpace<K> with S's point)
/// \tparam ArgsT  the op's Args template
template <class K, class SpaceT, template <class> class ArgsT>
struct RowFamily : SpaceT {
  using Space = SpaceT;
  template <class E>
  using Args = ArgsT<E>;

  /// The other row tensor of a call besides input: residual or output.
  template <class E>
  static const void* second_row(const Args<E>& a) {
    if constexpr (K::residual) return a.residual;
    else return a.output;
  }
  template <class E>
  static std::int64_t second_stride(const Args<E>& a) {
    if constexpr (K::residual) return a.residual_stride;
    else return a.output_stride;
  }

  /// A call's launch geometry for configuration Cfg.
  struct Plan {
    int part = 0;        ///< vectors per block
    int threads = 0;     ///< per block, a whole number of warps
    std::size_t smem = 0;
    int ring = 0;        ///< stage 6: ring stages
  };

  /// The geometry, or why Cfg cannot run these sizes (assumes validate() passed). No CUDA calls.
  template <class Cfg, class E>
  static Status plan(const Args<E>& a, Plan& out) {
    using T = Traits<K, Cfg, E>;
    const std::int64_t nvec = a.h / T::vec;
    const std::int64_t part = (nvec + T::cluster - 1) / T::cluster;
    if constexpr (T::stage == Space::warp_rows) {
      if (nvec > static_cast<std::int64_t>(T::warp) * T::vpt)
        return Status::unsupported("RMS norm family: the row is longer than one warp's 32 * vpt vectors (warp rows)");
      out.part = static_cast<int>(part);
      out.threads = T::max_threads;  // Space::warp_rows_per_block warps, one row each
      out.smem = 0;
      return Status::success();
    }
    const std::int64_t per_thread = Space::holds_registers(T::stage) ? T::vpt : 1;
    std::int64_t threads = (part + per_thread - 1) / per_thread;
    threads = (threads + T::warp - 1) / T::warp * T::warp;
    if (threads < T::warp) threads = T::warp;
    if (Space::holds_registers(T::stage)) {
      if (threads > T::max_threads)
        return Status::unsupported(
            "RMS norm family: the row part does not fit this configuration's registers (threads * vpt * vec)");
    } else if (threads > T::max_threads) {
      threads = T::max_threads;  // loop over the part in rounds
    }
    out.part = static_cast<int>(part);
    out.threads = static_cast<int>(threads);
    out.smem = T::stage == Space::smem ? static_cast<std::size_t>(part) * T::vec * sizeof(float) : 0;
    if constexpr (T::stage == Space::bulk_rows) {
      // a row of input (and one of residual)
      const std::int64_t pair = K::row_inputs * a.h * static_cast<std::int64_t>(sizeof(E));
      std::int64_t ring = Space::ring_bytes / pair;
      ring = ring < 2 ? 2 : ring > Space::max_ring_stages ? Space::max_ring_stages : ring;
      out.ring = static_cast<int>(ring);
      out.smem = static_cast<std::size_t>(ring * pair);
    }
    if (a.tokens > max_grid_rows / T::cluster)
      return Status::too_large("RMS norm family: tokens * cs blocks exceed the grid's x limit");
    return Status::success();
  }

  template <class Cfg, class E>
  static Status can_implement(const Args<E>& a) {
    using T = Traits<K, Cfg, E>;
    KTUNE_TRY(validate(a));
    if (is_empty(a)) return Status::success();
    if constexpr (T::vec > 1) {
      constexpr unsigned bytes = T::vec * sizeof(E);
      if (misalignment(a.input, bytes) || misalignment(second_row(a), bytes) || misalignment(a.weight, bytes))
        return Status::unsupported("RMS norm family: pointers are not aligned to this configuration's vector");
      if (a.h % T::vec || a.input_stride % T::vec || second_stride(a) % T::vec)
        return Status::unsupported("RMS norm family: h or a stride is not a multiple of this configuration's vector");
    }
    Plan pl;
    KTUNE_TRY((plan<Cfg, E>(a, pl)));
    if (pl.smem > 48 * 1024) {
      const DeviceInfo* dev = nullptr;
      KTUNE_TRY(current_device(dev));
      // The kernel's static shared memory (warp sums, the block total; stage 6: two warp-sum slots and
      // the ring's mbarriers, under 512 bytes) comes on top.
      if (pl.smem + 512 > static_cast<std::size_t>(dev->smem_per_block_optin))
        return Status::unsupported(
            "RMS norm family: the row part (stage 1) or two rows of the ring (stage 6) do not fit in shared memory");
    }
    return Status::success();
  }

  /// The __global__ function of configuration Cfg.
  template <class Cfg, class E>
  static constexpr auto kernel() {
    if constexpr (Space::persistent(Cfg::stage)) return &rows_kernel<K, Cfg, E>;
    else return &row_kernel<K, Cfg, E>;
  }

  template <class Cfg, class E>
  static KernelResources resources(const Args<E>& a) {
    Plan pl;
    (void)plan<Cfg, E>(a, pl);
    return {reinterpret_cast<const void*>(kernel<Cfg, E>()), pl.threads, pl.smem, Cfg::cluster};
  }

  /// Lets Cfg's kernel take `bytes` of dynamic shared memory (beyond the default limit): through
  /// ktune::launch's record per kernel, so no raise here or there ever lowers the other's.
  template <class Cfg, class E>
  static Status allow_dynamic_smem(std::size_t bytes) {
    return ktune::detail::ensure_dynamic_smem(reinterpret_cast<const void*>(kernel<Cfg, E>()), bytes);
  }

  /// Blocks of `threads` threads and `smem` bytes of dynamic shared memory of Cfg's kernel resident on
  /// the current device at once (all SMs), from the occupancy calculator. Cached per kernel in 16 slots
  /// keyed by (device, threads, smem): one atomic load per call once a shape has been seen.
  template <class Cfg, class E>
  static Status resident_blocks(int threads, std::size_t smem, std::int64_t& out) {
    static std::array<std::atomic<std::uint64_t>, 16> cache{};
    const DeviceInfo* dev = nullptr;
    KTUNE_TRY(current_device(dev));
    if (threads < 32 || threads > 1024 || threads % 32 || smem % 16 || smem >= (std::size_t{1} << 20))
      return Status::invalid("RMS norm family: a block is 1 to 32 whole warps and under 1 MB of shared memory");
    // key: device (8 bits), warps (6), smem / 16 (16); value: blocks per SM (8); bit 63: filled
    const std::uint64_t key = static_cast<std::uint64_t>(dev->ordinal) << 22 |
                              static_cast<std::uint64_t>(threads / 32) << 16 | smem / 16;
    std::atomic<std::uint64_t>& slot = cache[(key * 0x9e3779b97f4a7c15ull) >> 60];
    const std::uint64_t entry = slot.load(std::memory_order_acquire);
    int per_sm = 0;
    if ((entry >> 63) && ((entry >> 8) & 0x3fffffffull) == key) {
      per_sm = static_cast<int>(entry & 0xff);
    } else {
      // Above 48 KB (stage 6's ring) the calculator counts 0 blocks until the kernel may take that much.
      KTUNE_TRY((allow_dynamic_smem<Cfg, E>(smem)));
      KTUNE_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &per_sm, reinterpret_cast<const void*>(kernel<Cfg, E>()), threads, smem));
      if (per_sm < 1 || per_sm > 255)
        return Status::unsupported("RMS norm family: this configuration's block cannot be resident on the device");
      slot.store(std::uint64_t{1} << 63 | key << 8 | static_cast<std::uint64_t>(per_sm), std::memory_order_release);
    }
    out = static_cast<std::int64_t>(per_sm) * dev->sms;
    return Status::success();
  }

  /// Blocks of the grid. Stages 0-2 and 5: one per (row, cluster rank). Stages 3, 4 and 6 (persistent):
  /// as many row groups (blocks; warps for stage 4) as are resident at once, or one per row when there
  /// are fewer rows. All resident groups take rows, even when some take one row fewer than others: a
  /// memory-bound row loop runs faster with more loads in flight, and the groups that finish first
  /// leave their bandwidth to the rest.
  template <class Cfg, class E>
  static Status plan_grid(const Args<E>& a, const Plan& pl, std::int64_t& blocks) {
    if constexpr (!Space::persistent(Cfg::stage)) {
      blocks = a.tokens * Cfg::cluster;
      return Status::success();
    } else {
      std::int64_t resident = 0;
      KTUNE_TRY((resident_blocks<Cfg, E>(pl.threads, pl.smem, resident)));
      const std::int64_t per_block = Cfg::stage == Space::warp_rows ? pl.threads / 32 : 1;  // row groups
      const std::int64_t groups = a.tokens < resident * per_block ? a.tokens : resident * per_block;
      blocks = (groups + per_block - 1) / per_block;
      return Status::success();
    }
  }

  /// Plans and launches without checking: the caller (ktune::run_variant) has seen can_implement<Cfg, E>(a)
  /// succeed on a non-empty call.
  template <class Cfg, class E>
  static Status enqueue(const Args<E>& a, cudaStream_t stream) {
    Plan pl;
    KTUNE_TRY((plan<Cfg, E>(a, pl)));
    std::int64_t blocks = 0;
    KTUNE_TRY((plan_grid<Cfg, E>(a, pl, blocks)));
    KTUNE_TRY((allow_dynamic_smem<Cfg, E>(pl.smem)));
    Params<E> p{};
    if constexpr (K::residual) {
      p = Params<E>{a.input, a.residual, a.weight, a.input_stride, a.residual_stride, a.tokens,
                    static_cast<int>(a.h), pl.part, pl.ring, a.eps, nullptr, 0};
    } else {
      // input is only read by these kinds' kernels: Params holds one pointer type for all kinds.
      p = Params<E>{const_cast<E*>(a.input), nullptr, a.weight, a.input_stride, 0, a.tokens,
                    static_cast<int>(a.h), pl.part, pl.ring, a.eps, a.output, a.output_stride};
    }
    LaunchShape shape;
    shape.grid = dim3(static_cast<unsigned>(blocks));
    shape.block = dim3(static_cast<unsigned>(pl.threads));
    shape.smem = pl.smem;
    shape.cluster = static_cast<unsigned>(Cfg::cluster);
    shape.pdl = Cfg::pdl;
    return launch(kernel<Cfg, E>(), shape, stream, p);
  }
};

}  // namespace ktune::ops::norm_rows
