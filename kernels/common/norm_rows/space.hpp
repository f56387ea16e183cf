// kernels/common/norm_rows/space.hpp: the tunable parameters θ that the RMS norm ops share (the row structures
// of this folder), their feasibility rules and the family's default and unaligned points, for one op's
// Kind (kind.hpp). Each op's space.hpp derives its Space from RowSpace<its Kind> and adds S's own point.
//
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

#include "kind.hpp"

namespace ktune::ops::norm_rows {

/// How the family maps a row of h elements to threads. "input and residual" below reads "input" for the
/// kinds without a residual, and "both outputs" the one output; "as S does" refers to fused_add_rmsnorm's
/// S (FlashInfer's FusedAddRMSNormKernel); rmsnorm's S (RMSNormKernel) is the reread structure.
///
/// A row is cut into vectors (one access each) of `vb` bytes, or of one element when `vb` is 0. With `cs` > 1 the row is split into
/// `cs` contiguous parts, one per block of a thread-block cluster, whose partial sums of squares are
/// combined through distributed shared memory; with `cs` = 1 one block owns the row. Inside a block the
/// number of threads fits the part, as S sizes its block (S: min(1024, h / vec) threads):
///   stage 0 (registers): ceil(part / vpt) threads, each holding its vpt vectors of x in registers
///                        across the reduction (one pass over global memory);
///   stage 1 (smem):      min(1024, part) threads looping over the part, x staged in shared memory
///                        as fp32 (what FusedAddRMSNormKernel does);
///   stage 2 (reread):    min(1024, part) threads; pass one only sums, pass two reads input and
///                        residual again (from L2) and writes both: no staging, any h (what
///                        RMSNormKernel does).
/// Stages 0-2 give every row its own block (or cluster), for one row, then exit. Stages 3-6 are the
/// semantic rewrite of issue 10 (docs/semantic-rewrite-fused-add-rmsnorm.md), from the profile of the
/// winners of stages 0-2:
///   stage 3 (persistent rows): as stage 0, but a persistent grid (as many blocks as fit on the device
///                        at once, each taking every gridDim.x-th row): each block loads its weights once, keeps
///                        them in registers for all its rows, and issues the next row's input and
///                        residual loads before the current row's reduction, so loads stay in flight
///                        across the reduction's barrier and across rows (no block launch per row);
///   stage 4 (warp rows): the same persistent pipeline with one row per warp (4 warps, so 4 rows at a
///                        time, per block): the row's sum is a warp shuffle, no block-wide barrier and
///                        no shared memory; rows of at most 32 * vpt vectors;
///   stage 5 (cluster, late stores): stage 0 split over a cluster (cs > 1) with both outputs stored
///                        after the cluster's reduction, so the exchange's release has no global
///                        stores to wait for (the profile's membar stall of the stage 0 cluster
///                        winner), and the next kernel (PDL) triggered as soon as the loads are issued;
///   stage 6 (bulk rows): stage 3's persistent blocks and held weights, but rows arrive by bulk copies
///                        (cp.async.bulk, sm_90+) into a ring of shared-memory stages, several rows ahead
///                        (as many as fit in about 108 KB, 2 to 8): more rows in flight per SM than
///                        registers can hold, against the barrier stall of stage 3 at one block per SM
///                        (a row's reduction waits for the row's slowest load).
///   stage 7 (lean registers): stage 0 holding less across the reduction, so that more blocks share an
///                        SM: the weights are loaded after it (every block reads the same h of them,
///                        from L2), and the kinds without a residual keep their input as loaded words
///                        and convert it again for the output, as stages 3 and 4 do across their
///                        barrier. From a profile-free A/B on an H200 (docs/gpu-log.md, 2026-11-27,
///                        "guided screens", call 2): rmsnorm fp16 at T = 8192, 39 registers at vpt 4 (ptxas)
///                        against stage 0's 67, took 1.3-2.6% less time than the best persistent point.
/// `vb` 0 (element accesses) rather than "vb = element size" keeps the fallback one point for every
/// element type: it accepts any alignment, stride and h.
template <class K>
struct RowSpace {
  using Kind = K;
  static constexpr auto space = ktune::make_space(
      ktune::param("vb", "bytes (0: one element)", {0, 16}),
      ktune::param("vpt", "vectors", {1, 2, 4, 8}),
      ktune::param("stage",
                   "0 registers / 1 smem / 2 reread / 3 persistent rows / 4 warp rows / 5 cluster, late stores / "
                   "6 bulk rows / 7 lean registers",
                   {0, 1, 2, 3, 4, 5, 6, 7}),
      ktune::param("cs", "blocks", {1, 2, 4, 8}),
      ktune::param("pdl", "bool", {0, 1}));
  using Point = typename decltype(space)::Point;
  enum : std::size_t { kVb, kVpt, kStage, kCs, kPdl };
  enum StageKind : int {
    registers = 0,
    smem = 1,
    reread = 2,
    persistent_rows = 3,
    warp_rows = 4,
    cluster_late_stores = 5,
    bulk_rows = 6,
    lean_registers = 7
  };

  /// Stages whose threads hold their vectors of x in registers across the reduction (vpt applies).
  static constexpr bool holds_registers(int stage) { return stage != smem && stage != reread; }
  /// Stages with a persistent grid: a block (stages 3, 6) or a warp (stage 4) loops over rows.
  static constexpr bool persistent(int stage) {
    return stage == persistent_rows || stage == warp_rows || stage == bulk_rows;
  }
  /// Stage 6's ring of shared-memory stages (one row of input, and one of residual, each): as many as
  /// fit in ring_bytes, at least 2 and at most max_ring_stages. 108 KB lets two blocks share an SM's
  /// 227 KB.
  static constexpr int ring_bytes = 108 * 1024;
  static constexpr int max_ring_stages = 8;
  /// Warps per block of the warp-rows stage: 4 rows at a time per block, 16 blocks fill an SM's 2048 threads.
  static constexpr int warp_rows_per_block = 4;

  /// Elements per vector access of a point's `vb` for an element size.
  static constexpr int vector_elements(int vb, int element_bytes) { return vb == 0 ? 1 : vb / element_bytes; }
  /// Registers a thread needs besides what scales with vpt (row pointers, indices, the partial sum,
  /// loop state): what ptxas reports for the vpt 1 kernels, rounded up.
  static constexpr int register_overhead = 24;
  /// sm_80 and newer: the register file is four 16384-register quarters, one per scheduler, warps
  /// spread round-robin over them, registers allocated per thread in multiples of 8.
  static constexpr int registers_per_quarter = 16384;
  static constexpr int register_granularity = 8;

  /// Estimated 32-bit registers per thread of a register-staged configuration, rounded to the
  /// allocation granularity; K::streams is 3 (input, residual, weight) or 2 (no residual), and the
  /// numbers for 3 are the ones calibrated on fused_add_rmsnorm. Per vector held, the larger of two moments: after the loads are issued
  /// (input, residual and weight as loaded, plus their three 64-bit addresses) and across the
  /// reduction (x in fp32, the weights as loaded, the input and residual addresses for the stores).
  static constexpr int register_estimate(int vec, int vpt, int element_bytes) {
    const int loaded = (vec * element_bytes + 3) / 4;
    const int at_loads = K::streams * loaded + 2 * K::streams;
    const int across_reduction = vec + loaded + 2 * (K::streams - 1);
    const int per_vector = at_loads > across_reduction ? at_loads : across_reduction;
    const int r = vpt * per_vector + register_overhead;
    return (r + register_granularity - 1) / register_granularity * register_granularity;
  }

  /// The persistent stages (3, 4) hold per vector x in fp32 and its products with the weights (2 vec),
  /// the weights and the next row's input and residual as loaded (3 loaded, in flight across this row's
  /// reduction), and the halves of the next row's two addresses (4); besides, more loop state (the row,
  /// the next row, both row pointers) than the one-row stages. Calibrated on ptxas -v (sm_90, CUDA 13.0)
  /// of fused_add_rmsnorm's stages 3 and 4 at vpt 1-8: never below what ptxas uses, at most 25% above.
  /// The kinds without a residual hold no x across the barrier since 2026-11-27 (persistent_rows.cuh):
  /// for them the estimate is up to 71% above (fp16 at vpt 4: 136 against 80), which bounds the block
  /// (max_threads) as before and predicts no occupancy.
  static constexpr int persistent_register_overhead = 28;
  static constexpr int persistent_register_estimate(int vec, int vpt, int element_bytes) {
    const int loaded = (vec * element_bytes + 3) / 4;
    const int r = vpt * (2 * vec + K::streams * loaded + 2 * (K::streams - 1)) + persistent_register_overhead;
    return (r + register_granularity - 1) / register_granularity * register_granularity;
  }
  /// Stage 5 keeps the rounded residual (as loaded) across the reduction too: it is stored after it.
  static constexpr int late_store_register_estimate(int vec, int vpt, int element_bytes) {
    if constexpr (!K::residual) return register_estimate(vec, vpt, element_bytes);  // no residual to hold
    const int loaded = (vec * element_bytes + 3) / 4;
    const int at_loads = K::streams * loaded + 2 * K::streams;
    const int across_reduction = vec + 2 * loaded + 2 * (K::streams - 1);
    const int per_vector = at_loads > across_reduction ? at_loads : across_reduction;
    const int r = vpt * per_vector + register_overhead;
    return (r + register_granularity - 1) / register_granularity * register_granularity;
  }
  /// Stage 6 keeps no next row in registers (it waits in shared memory): x in fp32, its products with
  /// the weights, the weights as loaded, and a 64-bit address per vector.
  static constexpr int bulk_register_estimate(int vec, int vpt, int element_bytes) {
    const int loaded = (vec * element_bytes + 3) / 4;
    const int r = vpt * (2 * vec + loaded + 2) + persistent_register_overhead;
    return (r + register_granularity - 1) / register_granularity * register_granularity;
  }
  /// Stage 7 holds per vector the input as loaded (the kinds without a residual) or x in fp32 and, while
  /// the row's loads are in flight, the input and residual as loaded with their addresses; the weights
  /// come after the reduction, with the result's address.
  static constexpr int lean_register_estimate(int vec, int vpt, int element_bytes) {
    const int loaded = (vec * element_bytes + 3) / 4;
    const int rows = K::streams - 1;  // input (and residual): the row streams
    const int at_loads = rows * loaded + 2 * rows;
    const int held = K::residual ? vec : loaded;
    const int at_output = held + loaded + 2;
    const int per_vector = at_loads > at_output ? at_loads : at_output;
    const int r = vpt * per_vector + register_overhead;
    return (r + register_granularity - 1) / register_granularity * register_granularity;
  }
  /// The register estimate of a register-holding stage.
  static constexpr int stage_register_estimate(int stage, int vec, int vpt, int element_bytes) {
    if (stage == lean_registers) return lean_register_estimate(vec, vpt, element_bytes);
    if (stage == bulk_rows) return bulk_register_estimate(vec, vpt, element_bytes);
    if (persistent(stage)) return persistent_register_estimate(vec, vpt, element_bytes);
    if (stage == cluster_late_stores) return late_store_register_estimate(vec, vpt, element_bytes);
    return register_estimate(vec, vpt, element_bytes);
  }

  /// Largest block a configuration is compiled for (its __launch_bounds__): 1024 threads, fewer when
  /// the register estimate would not fit (a whole number of warps: ceil(warps / 4) warps share a quarter);
  /// the warp-rows stage always runs blocks of warp_rows_per_block warps.
  static constexpr int max_threads(int vec, int vpt, int stage, int element_bytes, const ktune::ArchLimits& arch) {
    if (stage == warp_rows) return warp_rows_per_block * arch.warp_size;
    if (!holds_registers(stage)) return arch.max_threads_per_block;
    const int warps_per_quarter =
        registers_per_quarter / (stage_register_estimate(stage, vec, vpt, element_bytes) * arch.warp_size);
    const int t = 4 * warps_per_quarter * arch.warp_size;
    return t < arch.max_threads_per_block ? t : arch.max_threads_per_block;
  }

  /// \tparam Vb    bytes per vector access; 0: one element per access (any alignment, stride and h)
  /// \tparam Vpt   vectors per thread per input held in registers (stages 0, 3-6); the block has
  ///               ceil(part / Vpt) threads (stage 4: a warp's lanes hold a row of up to 32 * Vpt vectors)
  /// \tparam Stage where x lives between the reduction and the normalisation, and how rows map to the
  ///               grid: 0 registers, 1 shared memory (fp32, as S), 2 nowhere (input and residual are
  ///               read again), each one row per block (or cluster); 3 registers, persistent blocks
  ///               with the next row's loads in flight and the weights held; 4 the same with one row
  ///               per warp; 5 registers, a cluster per row, outputs stored after the reduction;
  ///               6 as 3, rows fed by bulk copies into a ring of shared-memory stages; 7 as 0, the
  ///               weights loaded after the reduction and (no residual) the input held as loaded
  /// \tparam Cs    blocks per row, one thread-block cluster (sm_90+): the row's sum of squares is
  ///               combined through distributed shared memory
  /// \tparam Pdl   1: launched with programmatic dependent launch (sm_90+); waits for the preceding
  ///               kernel before its first global access
  template <int Vb, int Vpt, int Stage, int Cs, int Pdl>
  struct Config {
    static constexpr int vector_bytes = Vb;
    /// Elements per access for element type E.
    template <class E>
    static constexpr int vec = vector_elements(Vb, static_cast<int>(sizeof(E)));
    static constexpr int vpt = Vpt;
    static constexpr int stage = Stage;
    static constexpr int cluster = Cs;
    static constexpr bool pdl = Pdl != 0;
    static constexpr Point point = {Vb, Vpt, Stage, Cs, Pdl};
  };

  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int element_bytes) {
    const int vb = p[kVb], vpt = p[kVpt], stage = p[kStage], cs = p[kCs], pdl = p[kPdl];
    const int vec = vector_elements(vb, element_bytes);
    return ktune::Verdict{}
        .require(vb % element_bytes == 0, "vb is a whole number of elements")
        .require(vb <= arch.max_vector_bytes, "vb <= widest global access of the architecture")
        .require(vpt == 1 || holds_registers(stage),
                 "vpt > 1 only with register staging (smem and reread stagings move one vector per thread "
                 "per round, as S does, so vpt would not change the kernel)")
        .require((stage != registers && stage != lean_registers) ||
                     stage_register_estimate(stage, vec, vpt, element_bytes) <= arch.max_regs_per_thread,
                 "register staging: vpt * vec fp32 values of x plus the weights fit the per-thread register limit")
        // Issue 10's stages (3-5).
        .require(stage <= reread || vb != 0,
                 "stages 3-7 move 16-byte vectors (vb 16): they exist to keep more bytes in flight per thread "
                 "and per row than stages 0-2, and element accesses move 2-4 bytes each; the element-access "
                 "fallback for any alignment, stride and h is stage 2")
        .require(!persistent(stage) || cs == 1,
                 "persistent rows, warp rows and bulk rows (stages 3, 4, 6) give a row to one block or one warp "
                 "(cs 1): a row split over a cluster would need a cluster barrier per row, and a cluster's "
                 "blocks cannot hold their weights across rows they share out")
        .require(!persistent(stage) ||
                     stage_register_estimate(stage, vec, vpt, element_bytes) <= arch.max_regs_per_thread,
                 "persistent stages: vpt * vec fp32 values of x, the weights and (stages 3, 4) the next row's "
                 "input and residual fit the per-thread register limit")
        .require(stage != bulk_rows || arch.clusters,
                 "bulk rows (stage 6) need cp.async.bulk and mbarrier transaction counts (sm_90+, as clusters)")
        // Pruned on measurements (H200 tune of issue 10, reports/nvidia-h200/raw/fused_add_rmsnorm/), to keep
        // the family's compile time in budget. Measured on fused_add_rmsnorm; the kinds without a residual run
        // the same structures with one row stream fewer and keep these prunes until their own tune says otherwise.
        .require(stage != bulk_rows || vpt >= 2,
                 "bulk rows hold at least 2 vectors per thread (vpt >= 2): at vpt 1 no stage 6 point came within 4% "
                 "of its shape's best in the H200 tune of issue 10")
        .require(stage != persistent_rows || vpt <= 4,
                 "persistent rows hold at most 4 vectors per thread (vpt <= 4): fp32 at vpt 8 needs about 220 "
                 "registers, 8 warps per SM, and came within 2% of no shape's best in the H200 tune of issue 10")
        .require(stage != warp_rows || vpt >= 2,
                 "warp rows hold at least 2 vectors per lane (vpt >= 2): with vpt 1 a warp row is at most 32 "
                 "vectors (256 bf16 or 128 fp32 elements), which a stage 3 block of one warp covers as well")
        .require(stage != lean_registers || cs == 1,
                 "lean registers (stage 7) give a row to one block (cs 1): they serve the calls of many rows, "
                 "where a row split over a cluster waits for the cluster's exchange and gains no bytes in flight")
        .require(stage != cluster_late_stores || cs > 1,
                 "late stores (stage 5) are for rows split over a cluster (cs > 1): with one block per row "
                 "there is no cluster barrier, and the point would be stage 0 with its residual store moved")
        .require(stage != cluster_late_stores || vpt <= 2,
                 "late stores (stage 5) hold 1 or 2 vectors per thread: they serve launch-bound calls (T <= 16), "
                 "where in the H200 tune of 2026-11-23 no stage 0 cluster point with vpt 4 came within 4% of "
                 "the best cluster point, and none with vpt 8 within 13%")
        .require(stage != cluster_late_stores || pdl == 1,
                 "late stores (stage 5) launch with PDL (pdl 1): they serve launch-bound calls (T <= 16), where "
                 "in the H200 tune of 2026-11-23 every stage 0 cluster point (216 of 216) was faster with PDL "
                 "than without")
        .require(cs == 1 || arch.clusters, "cs > 1 needs thread-block clusters (sm_90+)")
        .require(cs <= arch.max_cluster_size, "cs <= portable cluster size")
        .require(pdl == 0 || arch.pdl, "pdl needs programmatic dependent launch (sm_90+)");
  }

  /// Valid on every supported architecture (no cluster, no PDL, no staging shared memory) and for
  /// every 16-byte-aligned input of any h: the reread staging has no row-length limit.
  static constexpr Point default_point = {16, 1, reread, 1, 0};
  /// Implements every valid input: element accesses (any alignment, any stride, any h).
  static constexpr Point unaligned_point = {0, 1, reread, 1, 0};
};

}  // namespace ktune::ops::norm_rows
