// CPU tests of gelu_and_mul's nvcc-side host logic, no GPU needed: the public API refuses bad calls
// before any CUDA call (on a machine without a GPU a CUDA call would surface as cuda_error, so these
// codes prove the order), the variants' can_implement and grid arithmetic, the index mapping of every
// feasible configuration simulated on the CPU, and the committed tuned table.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <ktune/instantiate.hpp>
#include <ktune/space.hpp>

#include "kernels/gelu_and_mul/gelu_and_mul.cuh"

namespace {

namespace op = ktune::ops::gelu_and_mul;
using ktune::StatusCode;

template <class E>
E* fake_device_pointer(std::uintptr_t address) {
  return reinterpret_cast<E*>(address);  // never dereferenced on the host: only its alignment matters
}

// ---- public API: refusals before any CUDA call ----------------------------------------------------

TEST(GeluAndMulApi, RuntimeDtypeEntryRefusesUnknownDtypesWithoutTouchingMemory) {
  std::vector<unsigned char> out(64, 0xAB), in(128, 0xCD);
  const auto bad = static_cast<ktune::DType>(7);
  const ktune::Status st = ktune::gelu_and_mul(bad, out.data(), in.data(), 2, 8);
  EXPECT_EQ(st.code, StatusCode::unsupported);
  EXPECT_NE(std::string(st.message).find("dtype"), std::string::npos);
  for (unsigned char b : out) EXPECT_EQ(b, 0xAB);
  for (unsigned char b : in) EXPECT_EQ(b, 0xCD);
  ktune::TunedChoice c;
  EXPECT_EQ(ktune::gelu_and_mul_choice(bad, 1, 8, c).code, StatusCode::unsupported);
}

TEST(GeluAndMulApi, RefusesBadArgumentsBeforeAnyCudaCall) {
  auto* out = fake_device_pointer<__half>(0x10000);
  const auto* in = fake_device_pointer<const __half>(0x20000);
  EXPECT_EQ(ktune::gelu_and_mul<__half>(nullptr, in, 4, 8).code, StatusCode::invalid_argument);
  EXPECT_EQ(ktune::gelu_and_mul<__half>(out, nullptr, 4, 8).code, StatusCode::invalid_argument);
  EXPECT_EQ(ktune::gelu_and_mul(out, in, -1, 8).code, StatusCode::invalid_argument);
  EXPECT_EQ(ktune::gelu_and_mul(out, in, 4, -8).code, StatusCode::invalid_argument);
  EXPECT_EQ(ktune::gelu_and_mul(out, in, 4, 8, nullptr, 7).code, StatusCode::invalid_argument);
  EXPECT_EQ(ktune::gelu_and_mul(out, in, 4, 8, nullptr, -1, 15).code, StatusCode::invalid_argument);
  EXPECT_EQ(ktune::gelu_and_mul(out, in, 4, 8, nullptr, -3).code, StatusCode::invalid_argument);
  EXPECT_EQ(ktune::gelu_and_mul(fake_device_pointer<__half>(0x10001), in, 4, 8).code, StatusCode::invalid_argument);
  EXPECT_EQ(ktune::gelu_and_mul(out, in, 1, op::max_d + 1).code, StatusCode::too_large);
  // The runtime-dtype entry forwards to the same checks.
  EXPECT_EQ(ktune::gelu_and_mul(ktune::DType::f32, nullptr, in, 4, 8).code, StatusCode::invalid_argument);
  EXPECT_EQ(ktune::gelu_and_mul(ktune::DType::bf16, out, in, -4, 8).code, StatusCode::invalid_argument);
  ktune::TunedChoice c;
  EXPECT_EQ(ktune::gelu_and_mul_choice(ktune::DType::f16, -1, 8, c).code, StatusCode::invalid_argument);
}

TEST(GeluAndMulApi, EmptyCallsSucceedWithoutAnyCudaCall) {
  EXPECT_TRUE(ktune::gelu_and_mul<float>(nullptr, nullptr, 0, 4096).ok());
  EXPECT_TRUE(ktune::gelu_and_mul<__nv_bfloat16>(nullptr, nullptr, 16, 0).ok());
  EXPECT_TRUE(ktune::gelu_and_mul(ktune::DType::f16, nullptr, nullptr, 0, 14336).ok());
}

// ---- can_implement and the grid -------------------------------------------------------------------

using Vec16 = op::Space::Config<256, 16, 2, 1, 1, 0>;
using Rows4 = op::Space::Config<512, 16, 1, 4, 0, 1>;

TEST(GeluAndMulFamily, CanImplementNeedsVectorAlignment) {
  auto* out = fake_device_pointer<__nv_bfloat16>(0x10000);
  const auto* in = fake_device_pointer<const __nv_bfloat16>(0x20000);
  const auto a = op::make_args(out, in, 3, 64, -1, -1);
  EXPECT_TRUE((op::Family::can_implement<Vec16, __nv_bfloat16>(a)).ok());
  EXPECT_TRUE((op::Family::can_implement<Rows4, __nv_bfloat16>(a)).ok());
  EXPECT_TRUE((op::Family::can_implement<op::unaligned_config_t<2>, __nv_bfloat16>(a)).ok());
  auto b = a;
  b.in = in + 1;  // 2-byte aligned only
  EXPECT_EQ((op::Family::can_implement<Vec16, __nv_bfloat16>(b)).code, StatusCode::unsupported);
  EXPECT_TRUE((op::Family::can_implement<op::unaligned_config_t<2>, __nv_bfloat16>(b)).ok());
  b = a;
  b.d = 60;  // not a multiple of the 8-element pack: y = in + d is misaligned
  b.in_stride = 128;
  EXPECT_EQ((op::Family::can_implement<Vec16, __nv_bfloat16>(b)).code, StatusCode::unsupported);
  EXPECT_TRUE((op::Family::can_implement<op::unaligned_config_t<2>, __nv_bfloat16>(b)).ok());
  b = a;
  b.out_stride = 68;  // rows after the first misaligned
  EXPECT_EQ((op::Family::can_implement<Vec16, __nv_bfloat16>(b)).code, StatusCode::unsupported);
  b = a;
  b.in_stride = 136;  // padded but still a multiple of the pack: fine
  EXPECT_TRUE((op::Family::can_implement<Vec16, __nv_bfloat16>(b)).ok());
  // validate() comes first.
  b = a;
  b.tokens = -1;
  EXPECT_EQ((op::Family::can_implement<Vec16, __nv_bfloat16>(b)).code, StatusCode::invalid_argument);
}

TEST(GeluAndMulFamily, GridSizes) {
  auto* out = fake_device_pointer<float>(0x10000);
  const auto* in = fake_device_pointer<const float>(0x20000);
  // fp32, d = 14336: 3584 vectors per row.
  const auto a = op::make_args(out, in, 16, 14336, -1, -1);
  // One step of 256 * 2 vectors per block over 16 * 3584 vectors.
  EXPECT_EQ((op::Family::launch_shape<Vec16, float>(a).grid.x), (16u * 3584u + 511u) / 512u);
  EXPECT_EQ((op::Family::launch_shape<Vec16, float>(a).block.x), 256u);
  EXPECT_FALSE((op::Family::launch_shape<Vec16, float>(a).pdl));
  // Four rows per block, PDL.
  EXPECT_EQ((op::Family::launch_shape<Rows4, float>(a).grid.x), 4u);
  EXPECT_TRUE((op::Family::launch_shape<Rows4, float>(a).pdl));
  const auto odd = op::make_args(out, in, 17, 14336, -1, -1);
  EXPECT_EQ((op::Family::launch_shape<Rows4, float>(odd).grid.x), 5u);
  // The unaligned configuration: one element per vector.
  EXPECT_EQ((op::Family::launch_shape<op::unaligned_config_t<4>, float>(odd).grid.x), (17u * 14336u + 1023u) / 1024u);
  // S: one block per token, min(1024, d / pack) threads.
  EXPECT_EQ(op::original::launch_shape(a).grid.x, 16u);
  EXPECT_EQ(op::original::launch_shape(a).block.x, 1024u);
  EXPECT_EQ(op::original::launch_shape(op::make_args(out, in, 2, 64, -1, -1)).block.x, 16u);
  // A grid beyond 2^31 - 1 blocks is refused: 2^40 rows of 4 elements are 2^32 steps of 1024 vectors.
  const auto huge = op::make_args(out, in, std::int64_t{1} << 40, 4, -1, -1);
  EXPECT_TRUE(op::validate(huge).ok());
  EXPECT_EQ((op::Family::can_implement<op::unaligned_config_t<4>, float>(huge)).code, StatusCode::too_large);
}

TEST(GeluAndMulOriginal, AcceptsOnlyWhatSReads) {
  auto* out = fake_device_pointer<__half>(0x10000);
  const auto* in = fake_device_pointer<const __half>(0x20000);
  const auto a = op::make_args(out, in, 3, 64, -1, -1);
  EXPECT_TRUE(op::original::can_implement(a).ok());
  auto b = a;
  b.in_stride = 136;
  EXPECT_EQ(op::original::can_implement(b).code, StatusCode::unsupported);  // strided
  b = a;
  b.out = out + 4;
  EXPECT_EQ(op::original::can_implement(b).code, StatusCode::unsupported);  // 8-byte aligned only
  EXPECT_EQ(op::original::can_implement(op::make_args(out, in, 3, 60, -1, -1)).code, StatusCode::unsupported);
  EXPECT_TRUE(op::original::can_implement(op::make_args<__half>(nullptr, nullptr, 0, 60, -1, -1)).ok());
}

// ---- index mapping: every vector exactly once -----------------------------------------------------

/// Replays the kernel's loops over blocks, threads and vectors on the CPU with the same Tiling helpers
/// and returns how often each vector of [tokens, dv] was visited (-1 at the first out-of-range one).
template <class Cfg>
std::vector<int> visits(std::int64_t tokens, int dv) {
  using Tile = op::Tiling<Cfg>;
  constexpr int tpb = Cfg::threads, vpt = Cfg::vectors_per_thread;
  std::vector<int> seen(static_cast<std::size_t>(tokens * dv), 0);
  const std::int64_t total = tokens * dv;
  bool bad = false;
  auto visit = [&](op::VectorCoord at) {
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
        const op::VectorCoord origin = Tile::locate(first, dv);
        for (int k = 0; k < vpt; ++k) {
          const int off = tid + k * tpb;
          const op::VectorCoord at = Tile::advance(origin, off, dv);
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

template <class E>
void check_every_feasible_config_covers_each_vector_once() {
  int configs = 0;
  ktune::for_each_feasible<op::Space, 90, E, 0, 1>([&](auto cfg, const auto& point) {
    using Cfg = typename decltype(cfg)::type;
    ++configs;
    const struct {
      std::int64_t tokens;
      int dv;
    } shapes[] = {{1, 1}, {1, 7}, {3, 5}, {2, 1376}, {5, 1000}, {7, 2752}, {1, 5000}, {13, 64}, {6, 3}};
    for (const auto& s : shapes) {
      const std::vector<int> seen = visits<Cfg>(s.tokens, s.dv);
      const std::string what = op::Space::space.id(point) + " tokens=" + std::to_string(s.tokens) +
                               " dv=" + std::to_string(s.dv);
      ASSERT_EQ(seen.size(), static_cast<std::size_t>(s.tokens * s.dv)) << what << ": an index left the tensor";
      for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << what << " vector " << i;
    }
  });
  EXPECT_EQ(static_cast<std::size_t>(configs), (ktune::FeasibleSet<op::Space, 90, sizeof(E)>::count));
}

TEST(GeluAndMulTiling, EveryFp32ConfigCoversEachVectorOnce) { check_every_feasible_config_covers_each_vector_once<float>(); }
TEST(GeluAndMulTiling, EveryBf16ConfigCoversEachVectorOnce) {
  check_every_feasible_config_covers_each_vector_once<__nv_bfloat16>();
}

TEST(GeluAndMulTiling, LocateAndAdvanceBeyond32Bits) {
  using Tile = op::Tiling<Vec16>;
  const int dv = 3584;
  const std::int64_t flat = (std::int64_t{1} << 33) + 12345;
  const op::VectorCoord at = Tile::locate(flat, dv);
  EXPECT_EQ(at.row, flat / dv);
  EXPECT_EQ(at.col, flat % dv);
  const op::VectorCoord small = Tile::locate(0xfffffffell, 7);
  EXPECT_EQ(small.row, 0xfffffffell / 7);
  EXPECT_EQ(small.col, 0xfffffffell % 7);
  // Several row ends crossed at once (dv smaller than a block step).
  const op::VectorCoord wrapped = Tile::advance({5, 2}, 1000, 3);
  EXPECT_EQ(wrapped.row * 3 + wrapped.col, 5 * 3 + 2 + 1000);
  EXPECT_LT(wrapped.col, 3);
}

// ---- the committed tuned table --------------------------------------------------------------------

/// Every row of a table (none before the first tune: `entries` is then nullptr) names a feasible point that
/// with_variant dispatches to. A template, so the loop is not compiled for the default-only table.
template <class Entries>
void check_rows(const Entries& entries) {
  if constexpr (!std::is_same_v<Entries, std::nullptr_t>) {
    for (const ktune::TunedEntry& e : entries) {
      const auto parsed = op::Space::space.parse(e.id);
      ASSERT_TRUE(parsed.ok) << e.id;
      EXPECT_TRUE(op::Space::feasible(parsed.point, ktune::arch_limits(e.arch), ktune::size_of(e.dtype)).ok()) << e.id;
      const auto run = [&](auto element) {
        using E = decltype(element);
        return op::tuned::with_variant<E>(e.variant, [&](auto cfg) {
          EXPECT_EQ(decltype(cfg)::point, parsed.point) << e.id;
          return ktune::Status::success();
        });
      };
      EXPECT_TRUE(ktune::visit_dtype(e.dtype, run).ok());
    }
  }
}

// Holds for the default-only table committed before the first tune and for every generated one.
TEST(GeluAndMulTuned, TableMatchesTheSpace) {
  EXPECT_EQ(op::tuned::space_hash, op::Space::space.hash())
      << "kernels/gelu_and_mul/tuned.cuh is stale: regenerate it with 'make tune' (or 'ktune tables')";
  EXPECT_EQ(std::string(op::tuned::general_id), op::Space::space.id(op::tuned::general_config::point));
  for (int sm : ktune::supported_archs)
    for (int bytes : {2, 4})
      EXPECT_TRUE(op::Space::feasible(op::tuned::general_config::point, ktune::arch_limits(sm), bytes).ok())
          << "the general configuration runs on every supported architecture: sm_" << sm;
  int calls = 0;
  const ktune::Status st = op::tuned::with_variant<float>(-1, [&](auto cfg) {
    ++calls;
    EXPECT_EQ(decltype(cfg)::point, op::tuned::general_config::point);
    return ktune::Status::success();
  });
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(calls, 1);
  check_rows(op::tuned::entries);
}

}  // namespace
