// kernels/gelu_tanh_and_mul/space.hpp: the tunable parameters θ of the gelu_tanh_and_mul family, their
// feasibility rules, and its named points (default, unaligned).
//
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include <cstddef>

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::gelu_tanh_and_mul {

/// One warp per row: block t (32 threads) walks row t, lane l taking elements l, l + 32, ... one element
/// per access, so any d and any element-aligned pointer works without a separate fallback.
///   stage = 1: x and y pass through a 32-element shared-memory tile per step before the arithmetic.
///   pdl = 1:   programmatic dependent launch (sm_90+).
struct Space {
  static constexpr auto space = ktune::make_space(ktune::param("stage", "bool", {0, 1}),
                                                  ktune::param("pdl", "bool", {0, 1}));
  using Point = decltype(space)::Point;
  enum : std::size_t { kStage, kPdl };

  /// \tparam Stage 1: stage x and y through shared memory
  /// \tparam Pdl   1: launched with programmatic dependent launch; waits for the preceding kernel first
  template <int Stage, int Pdl>
  struct Config {
    static constexpr bool stage = Stage != 0;
    static constexpr bool pdl = Pdl != 0;
    static constexpr Point point = {Stage, Pdl};
  };

  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int /*element_bytes*/) {
    return ktune::Verdict{}
        .require(arch.warp_size == 32, "one warp of 32 lanes per row")
        .require(p[kPdl] == 0 || arch.pdl, "pdl only where the architecture has programmatic dependent launch");
  }

  static constexpr Point default_point = {0, 0};
  /// Every point handles every input (one element per access); this one is valid on every architecture.
  static constexpr Point unaligned_point(int /*element_bytes*/) { return {0, 0}; }
};

}  // namespace ktune::ops::gelu_tanh_and_mul
