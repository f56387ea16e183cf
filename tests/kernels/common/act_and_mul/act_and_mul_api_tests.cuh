// tests/kernels/common/act_and_mul/act_and_mul_api_tests.cuh: the CPU tests of an act-and-mul op's
// nvcc-side host logic (silu_and_mul, gelu_and_mul, gelu_tanh_and_mul), written once, no GPU needed: the
// public API refuses bad calls before any CUDA call (on a machine without a GPU a CUDA call would surface
// as cuda_error, so these codes prove the order), the variants' can_implement and grid arithmetic, the
// index mapping of every feasible configuration simulated on the CPU, and the committed tuned table.
//
// An op's *_api_test.cu defines its traits Op (KTUNE_ACT_AND_MUL_CUDA_NAMES and
// KTUNE_ACT_AND_MUL_TABLE_NAMES, act_and_mul_op.hpp) and expands KTUNE_ACT_AND_MUL_API_TESTS(Op), which
// defines the suites <Op>Api, <Op>Family, <Op>Original, <Op>Tiling and <Op>Tuned.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <ktune/arch.hpp>
#include <ktune/dtype.hpp>
#include <ktune/instantiate.hpp>
#include <ktune/space.hpp>
#include <ktune/status.hpp>
#include <ktune/tuned.hpp>

#include "act_and_mul_op.hpp"
#include "kernels/common/act_and_mul/family.cuh"
#include "kernels/common/act_and_mul/original.cuh"

namespace ktune::test::act_and_mul {

namespace family = ::ktune::ops::act_and_mul;

template <class E>
E* fake_device_pointer(std::uintptr_t address) {
  return reinterpret_cast<E*>(address);  // never dereferenced on the host: only its alignment matters
}

// ---- public API: refusals before any CUDA call ----------------------------------------------------

template <class Op>
void check_runtime_dtype_entry_refuses_unknown_dtypes() {
  std::vector<unsigned char> out(64, 0xAB), in(128, 0xCD);
  const auto bad = static_cast<DType>(7);
  const Status st = Op::call(bad, out.data(), in.data(), 2, 8);
  EXPECT_EQ(st.code, StatusCode::unsupported);
  EXPECT_NE(std::string(st.message).find("dtype"), std::string::npos);
  for (unsigned char b : out) EXPECT_EQ(b, 0xAB);
  for (unsigned char b : in) EXPECT_EQ(b, 0xCD);
  TunedChoice c;
  EXPECT_EQ(Op::choice(bad, 1, 8, c).code, StatusCode::unsupported);
}

template <class Op>
void check_refuses_bad_arguments_before_any_cuda_call() {
  auto* out = fake_device_pointer<__half>(0x10000);
  const auto* in = fake_device_pointer<const __half>(0x20000);
  EXPECT_EQ(Op::template call<__half>(nullptr, in, 4, 8).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::template call<__half>(out, nullptr, 4, 8).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(out, in, -1, 8).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(out, in, 4, -8).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(out, in, 4, 8, nullptr, 7).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(out, in, 4, 8, nullptr, -1, 15).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(out, in, 4, 8, nullptr, -3).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(fake_device_pointer<__half>(0x10001), in, 4, 8).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(out, in, 1, Op::max_d + 1).code, StatusCode::too_large);
  // The runtime-dtype entry forwards to the same checks.
  EXPECT_EQ(Op::call(DType::f32, nullptr, in, 4, 8).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(DType::bf16, out, in, -4, 8).code, StatusCode::invalid_argument);
  TunedChoice c;
  EXPECT_EQ(Op::choice(DType::f16, -1, 8, c).code, StatusCode::invalid_argument);
}

template <class Op>
void check_empty_calls_succeed_without_any_cuda_call() {
  EXPECT_TRUE(Op::template call<float>(nullptr, nullptr, 0, 4096).ok());
  EXPECT_TRUE(Op::template call<__nv_bfloat16>(nullptr, nullptr, 16, 0).ok());
  EXPECT_TRUE(Op::call(DType::f16, nullptr, nullptr, 0, Op::Space::widest_spec_d).ok());
}

// ---- can_implement and the grid -------------------------------------------------------------------

template <class Op>
using Vec16 = typename Op::Space::template Config<256, 16, 2, 1, 1, 0>;
template <class Op>
using Rows4 = typename Op::Space::template Config<512, 16, 1, 4, 0, 1>;

template <class Op>
void check_can_implement_needs_vector_alignment() {
  using E = __nv_bfloat16;
  using Family = typename Op::Family;
  using Unaligned = typename Op::template UnalignedConfig<2>;
  auto* out = fake_device_pointer<E>(0x10000);
  const auto* in = fake_device_pointer<const E>(0x20000);
  const auto a = Op::make_args(out, in, 3, 64, -1, -1);
  EXPECT_TRUE((Family::template can_implement<Vec16<Op>, E>(a)).ok());
  EXPECT_TRUE((Family::template can_implement<Rows4<Op>, E>(a)).ok());
  EXPECT_TRUE((Family::template can_implement<Unaligned, E>(a)).ok());
  auto b = a;
  b.in = in + 1;  // 2-byte aligned only
  EXPECT_EQ((Family::template can_implement<Vec16<Op>, E>(b)).code, StatusCode::unsupported);
  EXPECT_TRUE((Family::template can_implement<Unaligned, E>(b)).ok());
  b = a;
  b.d = 60;  // not a multiple of the 8-element pack: y = in + d is misaligned
  b.in_stride = 128;
  EXPECT_EQ((Family::template can_implement<Vec16<Op>, E>(b)).code, StatusCode::unsupported);
  EXPECT_TRUE((Family::template can_implement<Unaligned, E>(b)).ok());
  b = a;
  b.out_stride = 68;  // rows after the first misaligned
  EXPECT_EQ((Family::template can_implement<Vec16<Op>, E>(b)).code, StatusCode::unsupported);
  b = a;
  b.in_stride = 136;  // padded but still a multiple of the pack: fine
  EXPECT_TRUE((Family::template can_implement<Vec16<Op>, E>(b)).ok());
  // validate() comes first.
  b = a;
  b.tokens = -1;
  EXPECT_EQ((Family::template can_implement<Vec16<Op>, E>(b)).code, StatusCode::invalid_argument);
}

template <class Op>
void check_grid_sizes() {
  using Family = typename Op::Family;
  using Unaligned = typename Op::template UnalignedConfig<4>;
  auto* out = fake_device_pointer<float>(0x10000);
  const auto* in = fake_device_pointer<const float>(0x20000);
  // fp32 at the widest spec width: d / 4 vectors of 16 bytes per row.
  constexpr std::int64_t d = Op::Space::widest_spec_d;
  constexpr unsigned dv = static_cast<unsigned>(d / 4);
  const auto a = Op::make_args(out, in, 16, d, -1, -1);
  // One step of 256 * 2 vectors per block over 16 * dv vectors.
  EXPECT_EQ((Family::template launch_shape<Vec16<Op>, float>(a).grid.x), (16u * dv + 511u) / 512u);
  EXPECT_EQ((Family::template launch_shape<Vec16<Op>, float>(a).block.x), 256u);
  EXPECT_FALSE((Family::template launch_shape<Vec16<Op>, float>(a).pdl));
  // Four rows per block, PDL.
  EXPECT_EQ((Family::template launch_shape<Rows4<Op>, float>(a).grid.x), 4u);
  EXPECT_TRUE((Family::template launch_shape<Rows4<Op>, float>(a).pdl));
  const auto odd = Op::make_args(out, in, 17, d, -1, -1);
  EXPECT_EQ((Family::template launch_shape<Rows4<Op>, float>(odd).grid.x), 5u);
  // The unaligned configuration: one element per vector.
  EXPECT_EQ((Family::template launch_shape<Unaligned, float>(odd).grid.x),
            (17u * static_cast<unsigned>(d) + 1023u) / 1024u);
  // S: one block per token, min(1024, d / pack) threads.
  EXPECT_EQ(family::original::launch_shape(a).grid.x, 16u);
  EXPECT_EQ(family::original::launch_shape(a).block.x, 1024u);
  EXPECT_EQ(family::original::launch_shape(Op::make_args(out, in, 2, 64, -1, -1)).block.x, 16u);
  // A grid beyond 2^31 - 1 blocks is refused: 2^40 rows of 4 elements are 2^32 steps of 1024 vectors.
  const auto huge = Op::make_args(out, in, std::int64_t{1} << 40, 4, -1, -1);
  EXPECT_TRUE(Op::validate(huge).ok());
  EXPECT_EQ((Family::template can_implement<Unaligned, float>(huge)).code, StatusCode::too_large);
}

template <class Op>
void check_original_accepts_only_what_s_reads() {
  using E = __half;
  using Family = typename Op::Family;
  auto* out = fake_device_pointer<E>(0x10000);
  const auto* in = fake_device_pointer<const E>(0x20000);
  const auto a = Op::make_args(out, in, 3, 64, -1, -1);
  EXPECT_TRUE(Family::template original_can_implement<E>(a).ok());
  auto b = a;
  b.in_stride = 136;
  EXPECT_EQ(Family::template original_can_implement<E>(b).code, StatusCode::unsupported);  // strided
  b = a;
  b.out = out + 4;
  EXPECT_EQ(Family::template original_can_implement<E>(b).code, StatusCode::unsupported);  // 8-byte aligned only
  const auto narrow = Op::make_args(out, in, 3, 60, -1, -1);  // d not a multiple of the pack
  EXPECT_EQ(Family::template original_can_implement<E>(narrow).code, StatusCode::unsupported);
  const auto empty = Op::template make_args<E>(nullptr, nullptr, 0, 60, -1, -1);
  EXPECT_TRUE(Family::template original_can_implement<E>(empty).ok());
}

// ---- index mapping: every vector exactly once -----------------------------------------------------

/// Replays the kernel's loops over blocks, threads and vectors on the CPU with the same Tiling helpers
/// and returns how often each vector of [tokens, dv] was visited (-1 at the first out-of-range one).
template <class Cfg>
std::vector<int> visits(std::int64_t tokens, int dv) {
  using Tile = family::Tiling<Cfg>;
  constexpr int tpb = Cfg::threads, vpt = Cfg::vectors_per_thread;
  std::vector<int> seen(static_cast<std::size_t>(tokens * dv), 0);
  const std::int64_t total = tokens * dv;
  bool bad = false;
  auto visit = [&](family::VectorCoord at) {
    if (at.row < 0 || at.row >= tokens || at.col < 0 || at.col >= dv) {
      bad = true;
      return;
    }
    ++seen[static_cast<std::size_t>(at.row * dv + at.col)];
  };
  for (std::int64_t b = 0; b < Tile::blocks(tokens, dv); ++b) {
    for (int tid = 0; tid < tpb; ++tid) {
      if constexpr (Cfg::split) {
        const std::int64_t first = b * Tile::step;
        const family::VectorCoord origin = Tile::locate(first, dv);
        for (int k = 0; k < vpt; ++k) {
          const int off = tid + k * tpb;
          const family::VectorCoord at = Tile::advance(origin, off, dv);
          if (first + off < total) {
            if (at.row * dv + at.col != first + off) bad = true;
            visit(at);
          }
        }
      } else {
        const std::int64_t first_row = b * Cfg::rows_per_block;
        const int count = Tile::block_vectors(first_row, tokens, dv);
        for (int base = tid; base < count; base += Tile::step)
          for (int k = 0; k < vpt; ++k)
            if (base + k * tpb < count) visit(Tile::in_rows(first_row, base + k * tpb, dv));
      }
    }
  }
  if (bad) seen.assign(1, -1);
  return seen;
}

template <class Op, class E>
void check_every_feasible_config_covers_each_vector_once() {
  using Space = typename Op::Space;
  int configs = 0;
  for_each_feasible<Space, 90, E, 0, 1>([&](auto cfg, const auto& point) {
    using Cfg = typename decltype(cfg)::type;
    ++configs;
    const struct {
      std::int64_t tokens;
      int dv;
    } shapes[] = {{1, 1}, {1, 7}, {3, 5}, {2, 1376}, {5, 1000}, {7, 2752}, {1, 5000}, {13, 64}, {6, 3}};
    for (const auto& s : shapes) {
      const std::vector<int> seen = visits<Cfg>(s.tokens, s.dv);
      const std::string what = Space::space.id(point) + " tokens=" + std::to_string(s.tokens) +
                               " dv=" + std::to_string(s.dv);
      ASSERT_EQ(seen.size(), static_cast<std::size_t>(s.tokens * s.dv)) << what << ": an index left the tensor";
      for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << what << " vector " << i;
    }
  });
  EXPECT_EQ(static_cast<std::size_t>(configs), (FeasibleSet<Space, 90, sizeof(E)>::count));
}

template <class Op>
void check_locate_and_advance_beyond_32_bits() {
  using Tile = family::Tiling<Vec16<Op>>;
  const int dv = 3584;
  const std::int64_t flat = (std::int64_t{1} << 33) + 12345;
  const family::VectorCoord at = Tile::locate(flat, dv);
  EXPECT_EQ(at.row, flat / dv);
  EXPECT_EQ(at.col, flat % dv);
  const family::VectorCoord small = Tile::locate(0xfffffffell, 7);
  EXPECT_EQ(small.row, 0xfffffffell / 7);
  EXPECT_EQ(small.col, 0xfffffffell % 7);
  // Several row ends crossed at once (dv smaller than a block step).
  const family::VectorCoord wrapped = Tile::advance({5, 2}, 1000, 3);
  EXPECT_EQ(wrapped.row * 3 + wrapped.col, 5 * 3 + 2 + 1000);
  EXPECT_LT(wrapped.col, 3);
}

// ---- the committed tuned table --------------------------------------------------------------------

/// Every row of a table (none before the first tune: `entries` is then nullptr) names a feasible point that
/// with_variant dispatches to. A template, so the loop is not compiled for the default-only table.
template <class Op, class Entries>
void check_rows(const Entries& entries) {
  using Space = typename Op::Space;
  if constexpr (!std::is_same_v<Entries, std::nullptr_t>) {
    for (const TunedEntry& e : entries) {
      const auto parsed = Space::space.parse(e.id);
      ASSERT_TRUE(parsed.ok) << e.id;
      EXPECT_TRUE(Space::feasible(parsed.point, arch_limits(e.arch), size_of(e.dtype)).ok()) << e.id;
      const auto run = [&](auto element) {
        using E = decltype(element);
        return Op::template with_variant<E>(e.variant, [&](auto cfg) {
          EXPECT_EQ(decltype(cfg)::point, parsed.point) << e.id;
          return Status::success();
        });
      };
      EXPECT_TRUE(visit_dtype(e.dtype, run).ok());
    }
  }
}

// Holds for the default-only table committed before the first tune and for every generated one.
template <class Op>
void check_table_matches_the_space() {
  using Space = typename Op::Space;
  using General = typename Op::GeneralConfig;
  EXPECT_EQ(Op::tuned_space_hash, Space::space.hash())
      << "kernels/" << Op::name << "/tuned.cuh is stale: regenerate it with 'make tune' (or 'ktune tables')";
  EXPECT_EQ(std::string(Op::general_id), Space::space.id(General::point));
  for (int sm : supported_archs)
    for (int bytes : {2, 4})
      EXPECT_TRUE(Space::feasible(General::point, arch_limits(sm), bytes).ok())
          << "the general configuration runs on every supported architecture: sm_" << sm;
  int calls = 0;
  const Status st = Op::template with_variant<float>(-1, [&](auto cfg) {
    ++calls;
    EXPECT_EQ(decltype(cfg)::point, General::point);
    return Status::success();
  });
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(calls, 1);
  check_rows<Op>(Op::tuned_entries);
}

}  // namespace ktune::test::act_and_mul

/// The shared nvcc-side CPU tests of the act-and-mul op whose traits struct is `Op`; the suites are named
/// after it.
#define KTUNE_ACT_AND_MUL_API_TESTS(Op)                                                                      \
  TEST(Op##Api, RuntimeDtypeEntryRefusesUnknownDtypesWithoutTouchingMemory) {                                \
    ::ktune::test::act_and_mul::check_runtime_dtype_entry_refuses_unknown_dtypes<Op>();                      \
  }                                                                                                          \
  TEST(Op##Api, RefusesBadArgumentsBeforeAnyCudaCall) {                                                      \
    ::ktune::test::act_and_mul::check_refuses_bad_arguments_before_any_cuda_call<Op>();                      \
  }                                                                                                          \
  TEST(Op##Api, EmptyCallsSucceedWithoutAnyCudaCall) {                                                       \
    ::ktune::test::act_and_mul::check_empty_calls_succeed_without_any_cuda_call<Op>();                       \
  }                                                                                                          \
  TEST(Op##Family, CanImplementNeedsVectorAlignment) {                                                       \
    ::ktune::test::act_and_mul::check_can_implement_needs_vector_alignment<Op>();                            \
  }                                                                                                          \
  TEST(Op##Family, GridSizes) {                                                                              \
    ::ktune::test::act_and_mul::check_grid_sizes<Op>();                                                      \
  }                                                                                                          \
  TEST(Op##Original, AcceptsOnlyWhatSReads) {                                                                \
    ::ktune::test::act_and_mul::check_original_accepts_only_what_s_reads<Op>();                              \
  }                                                                                                          \
  TEST(Op##Tiling, EveryFp32ConfigCoversEachVectorOnce) {                                                    \
    ::ktune::test::act_and_mul::check_every_feasible_config_covers_each_vector_once<Op, float>();            \
  }                                                                                                          \
  TEST(Op##Tiling, EveryBf16ConfigCoversEachVectorOnce) {                                                    \
    ::ktune::test::act_and_mul::check_every_feasible_config_covers_each_vector_once<Op, __nv_bfloat16>();    \
  }                                                                                                          \
  TEST(Op##Tiling, LocateAndAdvanceBeyond32Bits) {                                                           \
    ::ktune::test::act_and_mul::check_locate_and_advance_beyond_32_bits<Op>();                               \
  }                                                                                                          \
  TEST(Op##Tuned, TableMatchesTheSpace) {                                                                    \
    ::ktune::test::act_and_mul::check_table_matches_the_space<Op>();                                         \
  }
