// kernels/add_bias/space.hpp (examples/03_your_own_kernel): the tunable parameters θ of the add_bias
// family, their feasibility rules, and its named points. Written by hand: this is one of the two files
// of a kernel folder that a person (or `ktune agent`'s LLM) writes; `ktune derive` writes the rest.
//
// No CUDA types and no device code: g++ (the `ktune` tool) and nvcc both compile it.
#pragma once

#include <cstddef>

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::add_bias {

/// How the kernel maps work to threads. A row of d elements is cut into vectors of vb bytes (pack = vb /
/// sizeof(E) elements, dv = d / pack vectors per row). A block covers tpb consecutive vectors of columns
/// (one per thread) in rpb consecutive rows: each thread loads its bias vector once and keeps it in
/// registers for all rpb rows, and issues the rpb loads of x before it adds anything.
struct Space {
  static constexpr auto space = ktune::make_space(
      ktune::param("tpb", "threads", {64, 128, 256, 512}),
      ktune::param("vb", "bytes", {2, 4, 16}),
      ktune::param("rpb", "rows", {1, 2, 4, 8}),
      ktune::param("pdl", "bool", {0, 1}));
  using Point = decltype(space)::Point;
  enum : std::size_t { kTpb, kVb, kRpb, kPdl };

  /// \tparam Tpb threads per block (whole warps), one vector of columns each
  /// \tparam Vb  bytes per vector access: 16 (one 128-bit load or store) or the element size (any alignment)
  /// \tparam Rpb rows per block: the bias vector is loaded once per block and reused for every row
  /// \tparam Pdl 1: launched with programmatic dependent launch (sm_90+)
  template <int Tpb, int Vb, int Rpb, int Pdl>
  struct Config {
    static constexpr int threads = Tpb;
    static constexpr int vector_bytes = Vb;
    static constexpr int rows_per_block = Rpb;
    static constexpr bool pdl = Pdl != 0;
    static constexpr Point point = {Tpb, Vb, Rpb, Pdl};
  };

  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int element_bytes) {
    const int tpb = p[kTpb], vb = p[kVb], rpb = p[kRpb], pdl = p[kPdl];
    return ktune::Verdict{}
        .require(vb >= element_bytes && vb % element_bytes == 0,
                 "vb is a whole number of elements (vb >= element size and a multiple of it)")
        .require(vb <= arch.max_vector_bytes, "vb <= widest global load or store of the architecture")
        .require(vb == element_bytes || vb == 16,
                 "vb is the element size or 16 bytes (an aligned access in between moves the same bytes in more "
                 "instructions; the element size is the any-alignment fallback)")
        .require(vb == 16 || (tpb == 256 && rpb == 1 && pdl == 0),
                 "vb below 16 bytes only as the fallback point (tpb = 256, rpb = 1, pdl = 0): one such variant serves "
                 "every input the 16-byte variants refuse")
        .require(tpb <= arch.max_threads_per_block, "tpb <= max threads per block")
        .require(tpb % arch.warp_size == 0, "tpb is a whole number of warps")
        .require(pdl == 0 || arch.pdl, "pdl only where the architecture has programmatic dependent launch");
  }

  /// Valid on every supported architecture: no PDL, no shared memory, 16-byte vectors.
  static constexpr Point default_point = {256, 16, 1, 0};
  /// Implements every valid input: one element per access, so any d and element-aligned pointers.
  static constexpr Point unaligned_point(int element_bytes) { return {256, element_bytes, 1, 0}; }
};

}  // namespace ktune::ops::add_bias
