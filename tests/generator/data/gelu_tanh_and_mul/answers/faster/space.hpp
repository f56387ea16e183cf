// kernels/gelu_tanh_and_mul/space.hpp: the tunable parameters θ of the gelu_tanh_and_mul family, their
// feasibility rules, and its named points (default, unaligned).
//
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include <cstddef>

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::gelu_tanh_and_mul {

/// How the kernel maps work to threads. Each half-row of `d` elements (x = in[t, 0:d], y = in[t, d:2d])
/// is cut into vectors of `vb` bytes (pack = vb / sizeof(E) elements, dv = d / pack per row). The output
/// is one flattened range of tokens * dv vectors; block b takes exactly one step of it, tpb * vpt
/// consecutive vectors, thread i the vectors i, i + tpb, ..., so every load instruction of a warp is one
/// contiguous segment and all 2 * vpt loads of a thread (x and y) are in flight before any is used. A step
/// may cross row ends: T = 1 spreads over dv / (tpb * vpt) blocks instead of S's single block, and no row
/// has a tail of its own.
struct Space {
  static constexpr auto space = ktune::make_space(
      ktune::param("tpb", "threads", {128, 256}),
      ktune::param("vb", "bytes", {2, 4, 16}),
      ktune::param("vpt", "vectors", {1, 2, 4}),
      ktune::param("pdl", "bool", {0, 1}));
  using Point = decltype(space)::Point;
  enum : std::size_t { kTpb, kVb, kVpt, kPdl };

  /// At most this many vectors per block step: at the narrowest spec row (d = 4096, 512 16-byte vectors
  /// of a 2-byte dtype) a larger step would leave threads idle at T = 1.
  static constexpr int max_step_vectors = 512;

  /// \tparam Tpb threads per block (whole warps)
  /// \tparam Vb  bytes per vector access: 16 (one LDG.128/STG.128) or the element size (any alignment)
  /// \tparam Vpt vectors per thread: independent loads of x and of y issued before any is used
  /// \tparam Pdl 1: launched with programmatic dependent launch (sm_90+); waits for the preceding kernel
  ///             before its first global access and lets the next one launch once its loads are issued
  template <int Tpb, int Vb, int Vpt, int Pdl>
  struct Config {
    static constexpr int threads = Tpb;
    static constexpr int vector_bytes = Vb;
    static constexpr int vectors_per_thread = Vpt;
    static constexpr bool pdl = Pdl != 0;
    static constexpr Point point = {Tpb, Vb, Vpt, Pdl};
  };

  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int element_bytes) {
    const int tpb = p[kTpb], vb = p[kVb], vpt = p[kVpt], pdl = p[kPdl];
    return ktune::Verdict{}
        .require(vb >= element_bytes && vb % element_bytes == 0,
                 "vb is a whole number of elements (vb >= element size and a multiple of it)")
        .require(vb <= arch.max_vector_bytes, "vb <= widest global load or store of the architecture")
        .require(vb == element_bytes || vb == 16,
                 "vb is the element size or 16 bytes (an aligned access in between moves the same sectors in more "
                 "instructions; the element size is the any-alignment fallback)")
        .require(vb == 16 || (tpb == 128 && vpt == 4 && pdl == 0),
                 "vb below 16 bytes only as the fallback point (tpb = 128, vpt = 4, pdl = 0): it serves the inputs "
                 "the 16-byte variants refuse, and one such variant is enough")
        .require(tpb <= arch.max_threads_per_block, "tpb <= max threads per block")
        .require(tpb % arch.warp_size == 0, "tpb is a whole number of warps")
        .require(tpb * vpt <= max_step_vectors,
                 "tpb * vpt <= 512 vectors per block step (the narrowest spec row of a 2-byte dtype)")
        .require(pdl == 0 || arch.pdl, "pdl only where the architecture has programmatic dependent launch");
  }

  /// Valid on every supported architecture (no PDL, no shared memory, 16-byte vectors).
  static constexpr Point default_point = {256, 16, 2, 0};
  /// Implements every valid input: one element per access, so any d and element-aligned pointers.
  static constexpr Point unaligned_point(int element_bytes) { return {128, element_bytes, 4, 0}; }
};

}  // namespace ktune::ops::gelu_tanh_and_mul
