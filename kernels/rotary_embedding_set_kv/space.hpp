// kernels/rotary_embedding_set_kv/space.hpp: the tunable parameters θ of the rotary-embedding-with-KV-store
// family, their feasibility rules, and the family's named points (default, unaligned).
//
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::rotary_embedding_set_kv {

/// How the family maps work to threads: rotary_embedding's family (kernels/rotary_embedding/space.hpp) with the
/// store added. A head is cut into units of 2V elements, V = vb / sizeof(E): a unit below rotary_dim is V
/// rotation pairs (two vectors: the pairs' first and second elements), a unit at or past it two consecutive
/// vectors (the tail of the head). The heads of a token are q's, then k's, then value's (as extra heads): a q
/// head's rotation units rotate q in place (its tail is not touched); a k head's rotate k in place and store the
/// result in k_buffer's slot too, its tail units copy k's tail there; a value head's units copy value into
/// v_buffer's slot. A thread takes the same unit column in `hpt` heads (strided so that each load is
/// warp-contiguous) and issues all their loads before any arithmetic; one cos/sin load serves all of them.
struct Space {
  static constexpr auto space = ktune::make_space(
      ktune::param("tpb", "threads", {128, 256, 512}),
      ktune::param("vb", "bytes", {2, 4, 8, 16}),
      ktune::param("hpt", "heads", {1, 2, 4, 8}),
      ktune::param("pdl", "bool", {0, 1}));
  using Point = decltype(space)::Point;

  /// \tparam Tpb  threads per block (a multiple of the warp size)
  /// \tparam Vb   bytes of one vector access of q, k, value or a buffer: a multiple of the element size, at
  ///              most 16; a unit is two vectors of vb / sizeof(E) elements
  /// \tparam Hpt  heads per thread: loads of Hpt heads in flight together, one cos/sin load for all
  /// \tparam Pdl  1: launched with programmatic dependent launch (sm_90+); waits for the preceding kernel
  ///              before its first global access
  template <int Tpb, int Vb, int Hpt, int Pdl>
  struct Config {
    static constexpr int threads = Tpb;
    static constexpr int vector_bytes = Vb;
    static constexpr int heads_per_thread = Hpt;
    static constexpr bool pdl = Pdl != 0;
    static constexpr Point point = {Tpb, Vb, Hpt, Pdl};
  };

  /// Bytes a thread keeps in flight: two vectors per head; 16 bytes at full occupancy is the least that
  /// covers HBM latency on sm_90 (Little's law: ~32 KB in flight per SM, 2048 threads).
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
                 "2 * vb * hpt >= 16 bytes in flight per thread (Little's law for HBM at full occupancy)")
        .require(hpt < 8 || vb <= 4,
                 "hpt 8 only with vb <= 4: eight heads' vectors of 8 or 16 bytes with their q/k/cache addresses spill "
                 "(ptxas for sm_90: 8-184 bytes a thread at tpb 128-512, docs/gpu-log.md)")
        .require(pdl == 0 || arch.pdl, "pdl only where the architecture has programmatic dependent launch");
  }

  /// Valid on every supported architecture (no PDL, 16-byte vectors, no shared memory).
  static constexpr Point default_point = {256, 16, 2, 0};
  /// Implements every valid input: one element per vector (any rotary_dim, head_size and stride, pointers
  /// aligned only to their element). Depends on the element size because vb is in bytes.
  static constexpr Point unaligned_point(int element_bytes) {
    return {256, element_bytes, element_bytes >= 4 ? 2 : 4, 0};
  }
  // No original_point: S (original.cuh) is FlashInfer's structure (a block per 128 / (head_size / vec) tokens,
  // heads in a loop or on grid.y), not a point of this family.
};

/// The configuration type of the unaligned point for an element size.
template <int ElementBytes>
using unaligned_config_t =
    Space::Config<Space::unaligned_point(ElementBytes)[0], Space::unaligned_point(ElementBytes)[1],
                  Space::unaligned_point(ElementBytes)[2], Space::unaligned_point(ElementBytes)[3]>;

}  // namespace ktune::ops::rotary_embedding_set_kv
