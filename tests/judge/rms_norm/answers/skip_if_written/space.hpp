// space.hpp of the red-team family `skip_if_written` (tests/judge/rms_norm/answers/skip_if_written/meta.json says what it
// attacks). Written as an LLM answer would be; no CUDA types, g++ and nvcc both compile it.
#pragma once

#include <cstddef>

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::rms_norm {

/// One block per row; the parameter is the block size.
struct Space {
  static constexpr auto space = ktune::make_space(ktune::param("tpb", "threads", {256}));
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
