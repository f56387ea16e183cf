// space.hpp of the red-team family `writes_input_timed` (tests/judge/rms_norm/answers/writes_input_timed/meta.json says
// what it attacks). Written as an LLM answer would be; no CUDA types, g++ and nvcc both compile it.
#pragma once

#include <cstddef>

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::rms_norm {

/// One block per row; `reuse` 1 keeps the normalised row in the input for the next call's rows ("a cache").
struct Space {
  static constexpr auto space =
      ktune::make_space(ktune::param("tpb", "threads", {256}), ktune::param("reuse", "", {0, 1}));
  using Point = decltype(space)::Point;
  enum : std::size_t { kTpb, kReuse };

  /// \tparam Tpb   threads per block
  /// \tparam Reuse 1: write the normalised row back into the input
  template <int Tpb, int Reuse>
  struct Config {
    static constexpr int threads = Tpb;
    static constexpr bool reuse = Reuse != 0;
    static constexpr Point point = {Tpb, Reuse};
  };

  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int /*element_bytes*/) {
    return ktune::Verdict{}.require(p[kTpb] % arch.warp_size == 0 && p[kTpb] <= arch.max_threads_per_block,
                                     "whole warps, at most the block's thread limit");
  }

  static constexpr Point default_point = {256, 0};
  /// Scalar accesses: every point takes every element-aligned call.
  static constexpr Point unaligned_point(int /*element_bytes*/) { return {256, 0}; }
};

}  // namespace ktune::ops::rms_norm
