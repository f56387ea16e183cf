// kernels/fused_add_rmsnorm/space.hpp: the tunable parameters θ of the fused_add_rmsnorm family, their
// feasibility rules, and the family's named points (default, unaligned, original S).
//
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::fused_add_rmsnorm {

/// How the family maps a row of h elements to threads.
///
/// A row is cut into vectors (one access each) of `vb` bytes, or of one element when `vb` is 0. With `cs` > 1 the row is split into
/// `cs` contiguous parts, one per block of a thread-block cluster, whose partial sums of squares are
/// combined through distributed shared memory; with `cs` = 1 one block owns the row. Inside a block the
/// number of threads fits the part, as S sizes its block (S: min(1024, h / vec) threads):
///   stage 0 (registers): ceil(part / vpt) threads, each holding its vpt vectors of x in registers
///                        across the reduction (one pass over global memory);
///   stage 1 (smem):      min(1024, part) threads looping over the part, x staged in shared memory
///                        as fp32 (what S does);
///   stage 2 (reread):    min(1024, part) threads; pass one only sums, pass two reads input and
///                        residual again (from L2) and writes both: no staging, any h.
/// `vb` 0 (element accesses) rather than "vb = element size" keeps the fallback one point for every
/// element type: it accepts any alignment, stride and h.
struct Space {
  static constexpr auto space = ktune::make_space(
      ktune::param("vb", "bytes (0: one element)", {0, 16}),
      ktune::param("vpt", "vectors", {1, 2, 4, 8}),
      ktune::param("stage", "0 registers / 1 smem / 2 reread", {0, 1, 2}),
      ktune::param("cs", "blocks", {1, 2, 4, 8}),
      ktune::param("pdl", "bool", {0, 1}));
  using Point = decltype(space)::Point;
  enum : std::size_t { kVb, kVpt, kStage, kCs, kPdl };
  enum StageKind : int { registers = 0, smem = 1, reread = 2 };

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
  /// allocation granularity. Per vector held, the larger of two moments: after the loads are issued
  /// (input, residual and weight as loaded, plus their three 64-bit addresses) and across the
  /// reduction (x in fp32, the weights as loaded, the input and residual addresses for the stores).
  static constexpr int register_estimate(int vec, int vpt, int element_bytes) {
    const int loaded = (vec * element_bytes + 3) / 4;
    const int at_loads = 3 * loaded + 6;
    const int across_reduction = vec + loaded + 4;
    const int per_vector = at_loads > across_reduction ? at_loads : across_reduction;
    const int r = vpt * per_vector + register_overhead;
    return (r + register_granularity - 1) / register_granularity * register_granularity;
  }

  /// Largest block a configuration is compiled for (its __launch_bounds__): 1024 threads, fewer when
  /// the register estimate would not fit (a whole number of warps: ceil(warps / 4) warps share a quarter).
  static constexpr int max_threads(int vec, int vpt, int stage, int element_bytes, const ktune::ArchLimits& arch) {
    if (stage != registers) return arch.max_threads_per_block;
    const int warps_per_quarter = registers_per_quarter / (register_estimate(vec, vpt, element_bytes) * arch.warp_size);
    const int t = 4 * warps_per_quarter * arch.warp_size;
    return t < arch.max_threads_per_block ? t : arch.max_threads_per_block;
  }

  /// \tparam Vb    bytes per vector access; 0: one element per access (any alignment, stride and h)
  /// \tparam Vpt   vectors per thread per input held in registers (register staging only); the block
  ///               has ceil(part / Vpt) threads
  /// \tparam Stage where x lives between the reduction and the normalisation: 0 registers, 1 shared
  ///               memory (fp32, as S), 2 nowhere (input and residual are read again)
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
        .require(vpt == 1 || stage == registers,
                 "vpt > 1 only with register staging (smem and reread stagings move one vector per thread "
                 "per round, as S does, so vpt would not change the kernel)")
        .require(stage != registers ||
                     register_estimate(vec, vpt, element_bytes) <= arch.max_regs_per_thread,
                 "register staging: vpt * vec fp32 values of x plus the weights fit the per-thread register limit")
        .require(cs == 1 || arch.clusters, "cs > 1 needs thread-block clusters (sm_90+)")
        .require(cs <= arch.max_cluster_size, "cs <= portable cluster size")
        .require(pdl == 0 || arch.pdl, "pdl needs programmatic dependent launch (sm_90+)");
  }

  /// Valid on every supported architecture (no cluster, no PDL, no staging shared memory) and for
  /// every 16-byte-aligned input of any h: the reread staging has no row-length limit.
  static constexpr Point default_point = {16, 1, reread, 1, 0};
  /// Implements every valid input: element accesses (any alignment, any stride, any h).
  static constexpr Point unaligned_point = {0, 1, reread, 1, 0};
  /// S's own configuration: 16-byte vectors, one vector per thread per round, x staged in shared
  /// memory, one block per row, min(1024, h / vec) threads.
  static constexpr Point original_point = {16, 1, smem, 1, 0};
};

}  // namespace ktune::ops::fused_add_rmsnorm
