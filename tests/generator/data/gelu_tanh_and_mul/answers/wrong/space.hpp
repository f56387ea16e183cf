// kernels/gelu_tanh_and_mul/space.hpp: the tunable parameters θ of the gelu_tanh_and_mul family, their
// feasibility rules, and its named points (default, unaligned).
//
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include <cstddef>

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::gelu_tanh_and_mul {

/// One block per row, as S, without S's scalar tail: the block's threads stride over the row's d / pack
/// vectors of vb bytes (pack = vb / sizeof(E)); vb = the element size takes any d and alignment.
struct Space {
  static constexpr auto space = ktune::make_space(ktune::param("tpb", "threads", {256, 512, 1024}),
                                                  ktune::param("vb", "bytes", {2, 4, 16}));
  using Point = decltype(space)::Point;
  enum : std::size_t { kTpb, kVb };

  /// \tparam Tpb threads per block (whole warps), striding over one row
  /// \tparam Vb  bytes per vector access: 16 or the element size (any alignment)
  template <int Tpb, int Vb>
  struct Config {
    static constexpr int threads = Tpb;
    static constexpr int vector_bytes = Vb;
    static constexpr Point point = {Tpb, Vb};
  };

  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int element_bytes) {
    const int tpb = p[kTpb], vb = p[kVb];
    return ktune::Verdict{}
        .require(vb >= element_bytes && vb % element_bytes == 0, "vb is a whole number of elements")
        .require(vb <= arch.max_vector_bytes, "vb <= widest global load or store of the architecture")
        .require(vb == element_bytes || vb == 16, "vb is the element size or 16 bytes")
        .require(vb == 16 || tpb == 256, "vb below 16 bytes only as the fallback point (tpb = 256)")
        .require(tpb <= arch.max_threads_per_block, "tpb <= max threads per block")
        .require(tpb % arch.warp_size == 0, "tpb is a whole number of warps");
  }

  static constexpr Point default_point = {256, 16};
  static constexpr Point unaligned_point(int element_bytes) { return {256, element_bytes}; }
};

}  // namespace ktune::ops::gelu_tanh_and_mul
