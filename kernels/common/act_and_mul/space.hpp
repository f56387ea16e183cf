// kernels/common/act_and_mul/space.hpp: the tunable parameters θ shared by the act-and-mul ops
// (silu_and_mul, gelu_and_mul, gelu_tanh_and_mul), their feasibility rules and named points. Each op's
// space.hpp derives its Space from ActAndMulSpace with the narrowest width of its own spec, so the three
// spaces have the same parameters (the same hash, the same variant ids) and differ only in that bound.
//
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include <array>
#include <cstddef>

#include <ktune/arch.hpp>
#include <ktune/space.hpp>

namespace ktune::ops::act_and_mul {

/// One configuration of the family (family.cuh reads nothing else of it).
/// \tparam Tpb   threads per block (whole warps)
/// \tparam Vb    bytes per vector access: the element size (any alignment) or 16 (one LDG.128/STG.128)
/// \tparam Vpt   vectors per thread per step: independent loads of x and of y issued before any is used
/// \tparam Rpb   rows per block in whole-row mode (1 in split mode)
/// \tparam Split 1: one step per block over the flattened [tokens, d/pack] space; 0: whole rows
/// \tparam Pdl   1: launched with programmatic dependent launch (sm_90+); waits for the preceding
///               kernel before its first global access and lets the next one launch early
template <int Tpb, int Vb, int Vpt, int Rpb, int Split, int Pdl>
struct Config {
  static constexpr int threads = Tpb;
  static constexpr int vector_bytes = Vb;
  static constexpr int vectors_per_thread = Vpt;
  static constexpr int rows_per_block = Rpb;
  static constexpr bool split = Split != 0;
  static constexpr bool pdl = Pdl != 0;
  static constexpr std::array<int, 6> point = {Tpb, Vb, Vpt, Rpb, Split, Pdl};
};

/// How the kernel maps work to threads. Each half-row of `d` elements (x = in[t, 0:d], y = in[t, d:2d])
/// is cut into vectors of `vb` bytes; vector j of row t reads x and y at column j and writes out[t, j].
/// A block moves `tpb * vpt` vectors per step, thread i taking vectors i, i + tpb, ..., so every load
/// instruction of a warp is one contiguous segment, and all 2 * vpt loads of a step are issued before
/// any of them is used.
///   split = 0: block b walks whole rows b*rpb .. b*rpb + rpb - 1, as one flattened range of rpb * d/pack
///              vectors (only the range's last step is partial, not each row's). S is this with rpb = 1.
///   split = 1: block b takes exactly one step of the flattened [tokens, d/pack] vector space. Rows are
///              split across blocks, so even T = 1 spreads over many SMs, and a tile may cross a row end.
/// \tparam WidestSpecD the widest d of the op's spec: a block step wider than that half-row is pruned
template <int WidestSpecD>
struct ActAndMulSpace {
  static constexpr auto space = ktune::make_space(
      ktune::param("tpb", "threads", {128, 256, 512, 1024}),
      ktune::param("vb", "bytes", {2, 4, 16}),
      ktune::param("vpt", "vectors", {1, 2, 4}),
      ktune::param("rpb", "rows", {1, 2, 4}),
      ktune::param("split", "bool", {0, 1}),
      ktune::param("pdl", "bool", {0, 1}));
  using Point = typename decltype(space)::Point;
  enum : std::size_t { kTpb, kVb, kVpt, kRpb, kSplit, kPdl };

  /// Bytes of loads each thread must keep in flight, both inputs together. Little's law on sm_90:
  /// HBM3 delivers about 25-36 B/ns per SM (H100 3.35 TB/s, H200 4.8 TB/s over 132 SMs) at a loaded
  /// latency near 1 µs, so an SM needs about 32 KB of loads in flight: 2048 threads x 16 B.
  static constexpr int min_bytes_in_flight_per_thread = 16;

  /// The widest row of the op's spec (shapes/catalogue.json's widest tuned width). A block step wider than
  /// this leaves threads idle at T = 1 in either mode and on every row in whole-row mode, at every spec shape.
  static constexpr int widest_spec_d = WidestSpecD;

  /// The configuration type of a point (act_and_mul::Config; a class, not an alias template, because
  /// nvcc 13.0's front end crashes on a member alias template reached through the derived op Space in
  /// ktune::config_at_t).
  template <int Tpb, int Vb, int Vpt, int Rpb, int Split, int Pdl>
  struct Config : act_and_mul::Config<Tpb, Vb, Vpt, Rpb, Split, Pdl> {};

  static constexpr ktune::Verdict feasible(const Point& p, const ktune::ArchLimits& arch, int element_bytes) {
    const int tpb = p[kTpb], vb = p[kVb], vpt = p[kVpt], rpb = p[kRpb], split = p[kSplit], pdl = p[kPdl];
    return ktune::Verdict{}
        .require(vb >= element_bytes && vb % element_bytes == 0,
                 "vb is a whole number of elements (vb >= element size and a multiple of it)")
        .require(vb <= arch.max_vector_bytes, "vb <= widest global load or store of the architecture")
        .require(vb == element_bytes || vb == 16,
                 "vb is the element size or 16 bytes (an aligned access in between moves the same sectors as a "
                 "16-byte one in more instructions; the element size is the any-alignment fallback)")
        .require(tpb <= arch.max_threads_per_block, "tpb <= max threads per block")
        .require(tpb % arch.warp_size == 0, "tpb is a whole number of warps")
        .require(2 * vpt * vb >= min_bytes_in_flight_per_thread,
                 "2 * vpt * vb >= 16 bytes of loads in flight per thread (Little's law for HBM at full occupancy)")
        .require(tpb * vpt * vb <= widest_spec_d * element_bytes,
                 "tpb * vpt * vb <= the widest spec half-row (widest_spec_d elements): a wider block step "
                 "leaves threads idle on every spec shape")
        .require(split == 0 || rpb == 1, "split = 1 only with rpb = 1 (a one-step block has no rows to group)")
        .require(vb == 16 || split == 1,
                 "vb below 16 bytes only with split = 1 (narrow vectors serve inputs that 16-byte variants refuse; "
                 "the flat one-step tiling handles any T and d without per-row tails)")
        .require(pdl == 0 || arch.pdl, "pdl only where the architecture has programmatic dependent launch");
  }

  /// Valid on every supported architecture (no PDL, 16-byte vectors, no shared memory) and good at every
  /// T: one-step tiles fill the GPU for small T and keep every thread busy for large T.
  static constexpr Point default_point = {256, 16, 2, 1, 1, 0};
  /// S's own configuration at every spec shape: 1024 threads (= min(1024, d / pack) for d >= 1024 * pack),
  /// one 16-byte vector of x and of y per thread per step, one block per row.
  static constexpr Point original_point = {1024, 16, 1, 1, 0, 0};
  /// Implements every valid input: one element per access (any d, pointers aligned only to the element,
  /// any row stride). Depends on the element size because vb is in bytes.
  static constexpr Point unaligned_point(int element_bytes) { return {256, element_bytes, 4, 1, 1, 0}; }
};

}  // namespace ktune::ops::act_and_mul
