// The toy space after a change that dropped tpb 64: tables tuned on the old space are stale.
#pragma once

#include <ktune/space.hpp>

namespace ktune::ops::toyop {
struct Space {
  static constexpr auto space = ktune::make_space(ktune::param("tpb", "threads", {128, 256, 512}),
                                                  ktune::param("vb", "bytes", {4, 8, 16}),
                                                  ktune::param("pdl", "bool", {0, 1}));
  using Point = decltype(space)::Point;
  /// \tparam Tpb threads per block  \tparam Vb vector bytes  \tparam Pdl programmatic dependent launch
  template <int Tpb, int Vb, int Pdl>
  struct Config {
    static constexpr int threads = Tpb;
    static constexpr int vector_bytes = Vb;
    static constexpr bool pdl = Pdl != 0;
  };
  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int element_bytes) {
    return ktune::Verdict{}
        .require(p[1] % element_bytes == 0, "vb is a multiple of the element size")
        .require(p[2] == 0 || arch.pdl, "pdl needs programmatic dependent launch (sm_90 and newer)");
  }
  static constexpr Point default_point = {256, 16, 0};
  static constexpr Point unaligned_point = {256, 4, 0};
  static constexpr Point original_point = {128, 16, 0};
};
}  // namespace ktune::ops::toyop
