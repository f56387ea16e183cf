// kernels/merge_attn_states_lse/space.hpp: the tunable parameters θ of the merge family, their
// feasibility rules, and the family's named points (default, unaligned, original S).
//
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::merge_attn_states_lse {

/// How the kernel maps work to threads. Each token's row of `heads * head_size` elements is cut into
/// packs of `vb` bytes; a block covers `tpb * ppt` consecutive packs of one row (a chunk), so a row is
/// split across ceil(row packs / (tpb * ppt)) blocks (grid.x): small token counts still fill the GPU.
/// grid.y walks the tokens: one block per (chunk, token) when pg = 0, a persistent grid of about one
/// resident wave looping over the tokens when pg = 1.
struct Space {
  static constexpr auto space = ktune::make_space(
      ktune::param("tpb", "threads", {128, 256, 512}),
      ktune::param("vb", "bytes", {2, 4, 8, 16}),
      ktune::param("ppt", "packs", {1, 2, 4}),
      ktune::param("pg", "bool", {0, 1}),
      ktune::param("pdl", "bool", {0, 1}));
  using Point = decltype(space)::Point;

  /// Bytes of each input a thread must keep in flight. Little's law on sm_90: HBM3 delivers about
  /// 25-36 B/ns per SM (H100 3.35 TB/s, H200 4.8 TB/s over 132 SMs), loaded latency is about 0.9 µs,
  /// so an SM needs roughly 25-32 KB of loads in flight; 2048 threads x 2 inputs x 8 B = 32 KB.
  /// Architectures with fewer threads per SM also have far less bandwidth per SM.
  static constexpr int min_bytes_in_flight_per_input = 8;

  /// \tparam Tpb  threads per block (a multiple of the warp size)
  /// \tparam Vb   bytes per vector access (a pack): a multiple of the element size, at most 16
  /// \tparam Ppt  packs per thread per token: independent loads a thread issues before using any
  /// \tparam Pg   1: persistent grid (about one resident wave, looping over tokens); 0: one block per
  ///              (chunk, token)
  /// \tparam Pdl  1: launched with programmatic dependent launch (sm_90+); waits for the preceding
  ///              kernel before its first global access
  template <int Tpb, int Vb, int Ppt, int Pg, int Pdl>
  struct Config {
    static constexpr int threads = Tpb;
    static constexpr int vector_bytes = Vb;
    static constexpr int packs_per_thread = Ppt;
    static constexpr bool persistent = Pg != 0;
    static constexpr bool pdl = Pdl != 0;
    static constexpr Point point = {Tpb, Vb, Ppt, Pg, Pdl};
  };

  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int element_bytes) {
    const int tpb = p[0], vb = p[1], ppt = p[2], pdl = p[4];
    return ktune::Verdict{}
        .require(vb >= element_bytes && vb % element_bytes == 0,
                 "vb is a whole number of elements (vb >= element size and a multiple of it)")
        .require(vb <= arch.max_vector_bytes, "vb <= widest global load or store of the architecture")
        .require(tpb <= arch.max_threads_per_block, "tpb <= max threads per block")
        .require(tpb % arch.warp_size == 0, "tpb is a whole number of warps")
        .require(vb * ppt >= min_bytes_in_flight_per_input,
                 "vb * ppt >= 8 bytes of each input in flight per thread (Little's law for HBM at full occupancy)")
        .require(pdl == 0 || arch.pdl, "pdl only where the architecture has programmatic dependent launch");
  }

  /// Valid on every supported architecture (no PDL, 16-byte vectors, no shared memory).
  static constexpr Point default_point = {256, 16, 1, 0, 0};
  /// S's own configuration: 128 threads, one 16-byte pack per thread, one block per 128 packs.
  static constexpr Point original_point = {128, 16, 1, 0, 0};
  /// Implements every valid input: one element per access (any head_size, pointers aligned only to
  /// the element, any token stride). Depends on the element size because vb is in bytes.
  static constexpr Point unaligned_point(int element_bytes) { return {256, element_bytes, 4, 0, 0}; }
};

/// The configuration type of a point given as a constexpr value.
template <int ElementBytes>
using unaligned_config_t =
    Space::Config<Space::unaligned_point(ElementBytes)[0], Space::unaligned_point(ElementBytes)[1],
                  Space::unaligned_point(ElementBytes)[2], Space::unaligned_point(ElementBytes)[3],
                  Space::unaligned_point(ElementBytes)[4]>;

using original_config_t = Space::Config<Space::original_point[0], Space::original_point[1], Space::original_point[2],
                                        Space::original_point[3], Space::original_point[4]>;

}  // namespace ktune::ops::merge_attn_states_lse
