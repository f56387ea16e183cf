// A synthetic family for the core tests: 6 parameters, 3840 points, a few hundred feasible on sm_90.
// Its rules mirror the kinds real families use (hardware limits, element size, arch features).
#pragma once

#include <ktune/space.hpp>

namespace ktune::test {

struct TestSpace {
  static constexpr auto space = make_space(param("tpb", "threads", {32, 64, 128, 256, 512, 1024}),
                                           param("vb", "bytes", {2, 4, 8, 16, 32}),
                                           param("rpb", "rows", {1, 2, 4, 8}),
                                           param("ept", "vectors", {1, 2, 4, 8}),
                                           param("cl", "blocks", {1, 2, 4, 8}),
                                           param("pdl", "0/1", {0, 1}));
  using Point = decltype(space)::Point;
  enum : std::size_t { kTpb, kVb, kRpb, kEpt, kCl, kPdl };

  static constexpr Verdict feasible(const Point& p, const ArchLimits& arch, int element_bytes) {
    return Verdict{}
        .require(p[kVb] >= element_bytes, "vb >= element bytes")
        .require(p[kVb] <= arch.max_vector_bytes, "vb <= widest vector access of the architecture")
        .require(p[kTpb] * p[kRpb] <= arch.max_threads_per_block, "tpb * rpb <= max threads per block")
        .require(p[kCl] == 1 || arch.clusters, "cl > 1 needs thread-block clusters")
        .require(p[kCl] <= arch.max_cluster_size, "cl <= portable cluster size")
        .require(p[kPdl] == 0 || arch.pdl, "pdl needs programmatic dependent launch")
        .require(p[kVb] * p[kEpt] <= 64, "vb * ept <= 64 bytes in flight per thread")
        .require(p[kCl] == 1 || p[kRpb] == 1, "a cluster splits one row: rpb == 1");
  }

  static constexpr Point default_point = {256, 16, 1, 1, 1, 0};

  template <int Tpb, int Vb, int Rpb, int Ept, int Cl, int Pdl>
  struct Config {
    static constexpr int threads = Tpb * Rpb;
    static constexpr int vector_bytes = Vb;
    static constexpr int cluster = Cl;
    static constexpr bool pdl = Pdl != 0;
  };
};

}  // namespace ktune::test
