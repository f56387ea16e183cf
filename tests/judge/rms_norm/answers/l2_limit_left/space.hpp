// space.hpp of the red-team family `l2_limit_left` (tests/judge/rms_norm/answers/l2_limit_left/meta.json says what it
// attacks). Written as an LLM answer would be; no CUDA types, g++ and nvcc both compile it.
#pragma once

#include <cstddef>

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::rms_norm {

/// One block per row; the parameter is the block size: small blocks for narrow rows, large for wide ones.
struct Space {
  static constexpr auto space = ktune::make_space(ktune::param("tpb", "threads", {128, 256, 512, 1024}));
  using Point = decltype(space)::Point;
  enum : std::size_t { kTpb };

  /// \tparam Tpb threads per block
  template <int Tpb>
  struct Config {
    static constexpr int threads = Tpb;
    static constexpr Point point = {Tpb};
  };

  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int /*element_bytes*/) {
    return ktune::Verdict{}.require(p[kTpb] % arch.warp_size == 0 && p[kTpb] <= arch.max_threads_per_block,
                                     "whole warps, at most the block's thread limit");
  }

  static constexpr Point default_point = {256};
  /// Scalar accesses: every point takes every element-aligned call.
  static constexpr Point unaligned_point(int /*element_bytes*/) { return {256}; }
};

}  // namespace ktune::ops::rms_norm
