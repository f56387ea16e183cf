// space.hpp of the red-team family `reads_before_wait` (tests/judge/rms_norm/answers/reads_before_wait/meta.json says
// what it attacks). Written as an LLM answer would be; no CUDA types, g++ and nvcc both compile it.
#pragma once

#include <cstddef>

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::rms_norm {

/// One block per row; the block size, and programmatic dependent launch (the reduction overlaps the tail of the
/// kernel before it on the stream).
struct Space {
  static constexpr auto space =
      ktune::make_space(ktune::param("tpb", "threads", {128, 256, 512, 1024}), ktune::param("pdl", "bool", {0, 1}));
  using Point = decltype(space)::Point;
  enum : std::size_t { kTpb, kPdl };

  /// \tparam Tpb threads per block
  /// \tparam Pdl 1: launched with programmatic dependent launch
  template <int Tpb, int Pdl>
  struct Config {
    static constexpr int threads = Tpb;
    static constexpr bool pdl = Pdl != 0;
    static constexpr Point point = {Tpb, Pdl};
  };

  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int /*element_bytes*/) {
    return ktune::Verdict{}
        .require(p[kTpb] % arch.warp_size == 0 && p[kTpb] <= arch.max_threads_per_block,
                 "whole warps, at most the block's thread limit")
        .require(p[kPdl] == 0 || arch.pdl, "pdl needs programmatic dependent launch (sm_90+)");
  }

  static constexpr Point default_point = {256, 0};
  /// Scalar accesses: every point takes every element-aligned call.
  static constexpr Point unaligned_point(int /*element_bytes*/) { return {256, 0}; }
};

}  // namespace ktune::ops::rms_norm
