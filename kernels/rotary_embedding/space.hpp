// kernels/rotary_embedding/space.hpp: the tunable parameters θ of the rotary-embedding family, their
// feasibility rules, and the family's named points (default, unaligned).
//
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::rotary_embedding {

/// How the family maps work to threads. A rotation pairs element i of a head with element i + R/2
/// (neox) or 2i with 2i + 1 (GPT-J interleaved), R = rotary_dim. A thread's unit is vb / sizeof(E)
/// consecutive pairs: two vector loads (both halves of the pairs, so every element is read once, where
/// S reads each one twice), the matching cos and sin of the token's cache row, and two vector stores.
/// A thread takes the same unit column in `hpt` heads (the concatenation of q's and k's heads, strided
/// so that each of its loads is warp-contiguous) and issues all their loads before any arithmetic; the
/// cos and sin it loaded serve all of them. Units are numbered token by token, so a block of tpb
/// threads covers consecutive (token, head group, column) triples and small token counts spread over
/// the GPU without a separate head-parallel kernel. Columns >= R are never touched: in place, they stay
/// as they are (S reads and rewrites them).
///
/// Tried and not kept (docs/gpu-log.md, 2026-11-27, "norms' registers", call 2): a grid of one wave whose
/// threads take several units with two register sets, the next unit's loads in flight during this one's
/// work. It doubled the registers (vb 16, hpt 2: 64 to 105) and lost 4-20% at T >= 512 on an H200.
struct Space {
  static constexpr auto space = ktune::make_space(
      ktune::param("tpb", "threads", {128, 256, 512}),
      ktune::param("vb", "bytes", {2, 4, 8, 16}),
      ktune::param("hpt", "heads", {1, 2, 4, 8}),
      ktune::param("pdl", "bool", {0, 1}));
  using Point = decltype(space)::Point;

  /// \tparam Tpb  threads per block (a multiple of the warp size)
  /// \tparam Vb   bytes of one vector access of q or k: a multiple of the element size, at most 16;
  ///              vb / sizeof(E) rotation pairs per thread and head
  /// \tparam Hpt  heads per thread: loads of Hpt heads in flight together, one cos/sin load for all
  /// \tparam Pdl  1: launched with programmatic dependent launch (sm_90+); waits for the preceding
  ///              kernel before its first global access
  template <int Tpb, int Vb, int Hpt, int Pdl>
  struct Config {
    static constexpr int threads = Tpb;
    static constexpr int vector_bytes = Vb;
    static constexpr int heads_per_thread = Hpt;
    static constexpr bool pdl = Pdl != 0;
    static constexpr Point point = {Tpb, Vb, Hpt, Pdl};
  };

  /// Bytes of q or k a thread keeps in flight: two vectors per head. 16 bytes at full occupancy is the
  /// least that covers HBM latency on sm_90 (Little's law: ~32 KB in flight per SM, 2048 threads).
  static constexpr int min_bytes_in_flight = 16;

  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int element_bytes) {
    const int tpb = p[0], vb = p[1], hpt = p[2], pdl = p[3];
    return ktune::Verdict{}
        .require(vb >= element_bytes && vb % element_bytes == 0,
                 "vb is a whole number of elements (vb >= element size and a multiple of it)")
        .require(vb <= arch.max_vector_bytes, "vb <= widest global load or store of the architecture")
        .require(tpb <= arch.max_threads_per_block, "tpb <= max threads per block")
        .require(tpb % arch.warp_size == 0, "tpb is a whole number of warps")
        .require(2 * vb * hpt >= min_bytes_in_flight,
                 "2 * vb * hpt >= 16 bytes of q/k in flight per thread (Little's law for HBM at full occupancy)")
        .require(pdl == 0 || arch.pdl, "pdl only where the architecture has programmatic dependent launch");
  }

  /// Valid on every supported architecture (no PDL, 16-byte vectors, no shared memory).
  static constexpr Point default_point = {256, 16, 2, 0};
  /// Implements every valid input: one pair per vector (any rotary_dim, head_size and stride, pointers
  /// aligned only to their element). Depends on the element size because vb is in bytes.
  static constexpr Point unaligned_point(int element_bytes) {
    return {256, element_bytes, element_bytes >= 4 ? 2 : 4, 0};
  }
  // No original_point: S (original.cuh) is a different structure (a block per 128 / (head_size / vec)
  // tokens, heads in a loop or on grid.y), not a point of this family.
};

/// The configuration type of the unaligned point for an element size.
template <int ElementBytes>
using unaligned_config_t =
    Space::Config<Space::unaligned_point(ElementBytes)[0], Space::unaligned_point(ElementBytes)[1],
                  Space::unaligned_point(ElementBytes)[2], Space::unaligned_point(ElementBytes)[3]>;

}  // namespace ktune::ops::rotary_embedding
