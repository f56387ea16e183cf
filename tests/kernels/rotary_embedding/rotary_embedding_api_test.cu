// CPU tests of rotary_embedding's public API and host adapter: everything that must happen before any
// CUDA call (argument checks, dtype refusal, T = 0), the variants' and S's can_implement rules, the grid
// and the kernel's grid-stride walk, and the generated tuned table. Runs without a GPU: a stray CUDA call
// would show up as a cuda_error status instead of the expected code.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/rotary_embedding/rotary_embedding.cuh"

namespace {

namespace op = ktune::ops::rotary_embedding;
using ktune::DType;
using ktune::StatusCode;

template <class T>
T* fake(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);  // never dereferenced
}

TEST(RotaryEmbeddingApiHost, RuntimeEntryRefusesUnknownDtypesBeforeAnything) {
  for (int bad : {-1, 3, 7}) {
    const ktune::Status st =
        ktune::rotary_embedding(static_cast<DType>(bad), fake<const std::int64_t>(0x1000), fake<void>(0x2000),
                                fake<void>(0x3000), 128, fake<const float>(0x4000), true, 4, 32, 8, 128, 4096);
    EXPECT_EQ(st.code, StatusCode::unsupported) << bad;
  }
  ktune::TunedChoice c;
  EXPECT_EQ(ktune::rotary_embedding_choice(static_cast<DType>(5), 1, 32, c).code, StatusCode::unsupported);
  EXPECT_EQ(ktune::rotary_embedding_choice(DType::f16, -1, 32, c).code, StatusCode::invalid_argument);
  EXPECT_EQ(ktune::rotary_embedding_choice(DType::f16, 1, 0, c).code, StatusCode::invalid_argument);
}

TEST(RotaryEmbeddingApiHost, ArgumentChecksComeBeforeAnyCudaCall) {
  for (DType dt : ktune::all_dtypes) {
    auto call = [&](const std::int64_t* pos, void* q, std::int64_t head_size, std::int64_t tokens, std::int64_t q_heads,
                    std::int64_t kv_heads, std::int64_t rotary_dim, std::int64_t max_pos, std::int64_t q_stride = -1) {
      return ktune::rotary_embedding(dt, pos, q, fake<void>(0x3000), head_size, fake<const float>(0x4000), true, tokens,
                                     q_heads, kv_heads, rotary_dim, max_pos, nullptr, q_stride);
    };
    const auto* pos = fake<const std::int64_t>(0x1000);
    void* q = fake<void>(0x2000);
    EXPECT_EQ(call(nullptr, q, 128, 4, 32, 8, 128, 4096).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(pos, nullptr, 128, 4, 32, 8, 128, 4096).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(pos, q, 128, -4, 32, 8, 128, 4096).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(pos, q, 128, 4, 0, 8, 128, 4096).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(pos, q, 128, 4, 32, 0, 128, 4096).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(pos, q, 128, 4, 32, 8, 127, 4096).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(pos, q, 64, 4, 32, 8, 128, 4096).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(pos, q, 128, 4, 32, 8, 128, 0).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(pos, q, 128, 4, 32, 8, 128, 4096, 100).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(pos, q, 128, 4, 32, 8, 128, 4096, -2).code, StatusCode::invalid_argument);
    const ktune::Status zero = call(pos, q, 128, 1, 32, 8, 128, 4096, 0);
    EXPECT_EQ(zero.code, StatusCode::invalid_argument);
    EXPECT_NE(std::string(zero.message).find("pass -1"), std::string::npos) << zero.message;
    EXPECT_EQ(call(fake<const std::int64_t>(0x1004), q, 128, 4, 32, 8, 128, 4096).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(pos, fake<void>(0x3000), 128, 4, 32, 8, 128, 4096).code, StatusCode::invalid_argument);  // q == k
    EXPECT_EQ(call(pos, q, 128, 4, std::int64_t{1} << 24, 8, 128, 4096).code, StatusCode::too_large);
    // T = 0: a no-op that reaches no CUDA call (this machine may have no GPU at all).
    EXPECT_TRUE(call(pos, q, 128, 0, 32, 8, 128, 4096).ok());
    EXPECT_TRUE(call(nullptr, nullptr, 128, 0, 32, 8, 128, 4096).ok());
  }
}

TEST(RotaryEmbeddingApiHost, StrideMinusOneMeansContiguous) {
  const auto a = op::make_args<__half>(fake<const std::int64_t>(0x1000), fake<__half>(0x2000), fake<__half>(0x3000),
                                       128, fake<const float>(0x4000), false, 3, 32, 8, 64, 4096, -1, 6144);
  EXPECT_EQ(a.query_stride, 32 * 128);
  EXPECT_EQ(a.key_stride, 6144);
  EXPECT_FALSE(a.is_neox);
  EXPECT_EQ(a.rotary_dim, 64);
  EXPECT_EQ(a.max_pos, 4096);
}

// ---- can_implement per configuration ------------------------------------------------------------

template <class E>
op::Args<E> aligned_args() {
  op::Args<E> a;
  a.positions = fake<const std::int64_t>(0x10000);
  a.query = fake<E>(0x20000);
  a.key = fake<E>(0x30000);
  a.head_size = 128;
  a.cos_sin_cache = fake<const float>(0x40000);
  a.tokens = 5;
  a.q_heads = 32;
  a.kv_heads = 8;
  a.rotary_dim = 128;
  a.max_pos = 4096;
  a.query_stride = 32 * 128;
  a.key_stride = 8 * 128;
  return a;
}

using Vb16 = op::Space::Config<256, 16, 2, 0>;  // 8 fp16 pairs per unit
using Vb4 = op::Space::Config<128, 4, 4, 1>;    // 2 fp16 pairs per unit

TEST(RotaryEmbeddingFamily, CanImplementChecksUnitsAlignmentAndCache) {
  auto a = aligned_args<__half>();
  EXPECT_TRUE((op::Family::can_implement<Vb16, __half>(a).ok()));
  EXPECT_TRUE(op::original::can_implement(a).ok());
  // rotary_dim 36: 18 pairs is no whole number of 8-pair units, but of 2-pair ones.
  a.rotary_dim = 36;
  EXPECT_EQ((op::Family::can_implement<Vb16, __half>(a).code), StatusCode::unsupported);
  EXPECT_TRUE((op::Family::can_implement<Vb4, __half>(a).ok()));
  EXPECT_EQ(op::original::can_implement(a).code, StatusCode::unsupported);
  // head_size 100: heads are not 16-byte aligned.
  a = aligned_args<__half>();
  a.head_size = 100;
  a.rotary_dim = 64;
  a.query_stride = 32 * 100;
  a.key_stride = 8 * 100;
  EXPECT_EQ((op::Family::can_implement<Vb16, __half>(a).code), StatusCode::unsupported);
  EXPECT_TRUE((op::Family::can_implement<Vb4, __half>(a).ok()));
  EXPECT_EQ(op::original::can_implement(a).code, StatusCode::unsupported);  // not 64, 128, 256 or 512
  // A pointer aligned to 4 but not 16 bytes.
  a = aligned_args<__half>();
  a.key = fake<__half>(0x30004);
  EXPECT_EQ((op::Family::can_implement<Vb16, __half>(a).code), StatusCode::unsupported);
  EXPECT_TRUE((op::Family::can_implement<Vb4, __half>(a).ok()));
  EXPECT_EQ(op::original::can_implement(a).code, StatusCode::unsupported);
  // The cache: 16-byte accesses for 8-pair units, 8-byte ones for 2-pair units.
  a = aligned_args<__half>();
  a.cos_sin_cache = fake<const float>(0x40008);
  EXPECT_EQ((op::Family::can_implement<Vb16, __half>(a).code), StatusCode::unsupported);
  EXPECT_TRUE((op::Family::can_implement<Vb4, __half>(a).ok()));
  EXPECT_EQ(op::original::can_implement(a).code, StatusCode::unsupported);
  // A token stride of a q/k/v slice (qkv row of 48 heads) is fine for all; an odd one only for small vectors.
  a = aligned_args<__half>();
  a.query_stride = a.key_stride = 48 * 128;
  EXPECT_TRUE((op::Family::can_implement<Vb16, __half>(a).ok()));
  EXPECT_TRUE(op::original::can_implement(a).ok());
  a.key_stride = 48 * 128 + 2;
  EXPECT_EQ((op::Family::can_implement<Vb16, __half>(a).code), StatusCode::unsupported);
  EXPECT_TRUE((op::Family::can_implement<Vb4, __half>(a).ok()));
  // The unaligned configuration takes any valid input.
  a = aligned_args<__half>();
  a.head_size = 37;
  a.rotary_dim = 22;
  a.query_stride = 32 * 37 + 1;
  a.key_stride = 8 * 37 + 3;
  a.query = fake<__half>(0x20002);
  a.cos_sin_cache = fake<const float>(0x40004);
  a.is_neox = false;
  EXPECT_TRUE((op::Family::can_implement<op::unaligned_config_t<2>, __half>(a).ok()));
  auto f = aligned_args<float>();
  f.head_size = 37;
  f.rotary_dim = 2;
  f.query_stride = 32 * 37;
  f.key_stride = 8 * 37;
  f.key = fake<float>(0x30004);
  EXPECT_TRUE((op::Family::can_implement<op::unaligned_config_t<4>, float>(f).ok()));
}

TEST(RotaryEmbeddingFamily, OriginalTakesWhatSglKernelDispatches) {
  auto a = aligned_args<__nv_bfloat16>();
  for (std::int64_t d : {64, 128, 256, 512}) {
    a.head_size = a.rotary_dim = d;
    a.query_stride = 32 * d;
    a.key_stride = 8 * d;
    EXPECT_TRUE(op::original::can_implement(a).ok()) << d;
  }
  // Partial rotary: 2 * vec (16 for 16-bit elements) divides it in neox mode, vec in GPT-J mode.
  a = aligned_args<__nv_bfloat16>();
  a.rotary_dim = 64;
  EXPECT_TRUE(op::original::can_implement(a).ok());
  a.rotary_dim = 72;
  EXPECT_EQ(op::original::can_implement(a).code, StatusCode::unsupported);
  a.is_neox = false;
  EXPECT_TRUE(op::original::can_implement(a).ok());
  a = aligned_args<__nv_bfloat16>();
  a.q_heads = 65535;
  a.query_stride = a.q_heads * 128;
  EXPECT_EQ(op::original::can_implement(a).code, StatusCode::unsupported);  // beyond grid.y
  EXPECT_TRUE((op::Family::can_implement<Vb16, __nv_bfloat16>(a).ok()));
  // FlashInfer's launch geometry: 128-thread blocks of head_dim / vec threads per token.
  using G = op::original::Geometry<__half, 128>;
  EXPECT_EQ(G::vec, 8);
  EXPECT_EQ(G::bdx, 16u);
  EXPECT_EQ(G::bdy, 8u);
  using G512 = op::original::Geometry<__half, 512>;
  EXPECT_EQ(G512::vec, 16);
  EXPECT_EQ(G512::bdx, 32u);
  EXPECT_EQ(G512::threads, 128u);
  using G64f = op::original::Geometry<float, 64>;
  EXPECT_EQ(G64f::vec, 4);
  EXPECT_EQ(G64f::bdy, 8u);
}

// ---- the grid and its walk ----------------------------------------------------------------------

// The kernel's walk over (token, lane) for a grid, replayed on the host: every unit exactly once.
void expect_walk_covers(std::int64_t tokens, std::uint32_t lanes, std::uint32_t grid, std::uint32_t tpb) {
  std::vector<int> seen(static_cast<std::size_t>(tokens) * lanes, 0);
  const std::uint32_t step = grid * tpb, step_tokens = step / lanes, step_lanes = step - step_tokens * lanes;
  for (std::uint32_t thread = 0; thread < step; ++thread) {
    std::int64_t t = thread / lanes;
    std::uint32_t lane = thread - static_cast<std::uint32_t>(t) * lanes;
    for (; t < tokens; op::detail::advance(t, lane, step_tokens, step_lanes, lanes)) {
      ASSERT_LT(lane, lanes);
      ++seen[static_cast<std::size_t>(t * lanes + lane)];
    }
  }
  for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "unit " << i << " of " << tokens << " x " << lanes;
}

TEST(RotaryEmbeddingFamily, GridStrideWalkVisitsEveryUnitOnce) {
  expect_walk_covers(7, 80, 3, 128);     // one pass, a partial last block
  expect_walk_covers(1000, 40, 4, 128);  // many passes; the stride is a whole number of tokens plus lanes
  expect_walk_covers(513, 37, 5, 64);    // lanes not dividing the stride
  expect_walk_covers(3, 1000, 1, 128);   // a token spanning several strides
  EXPECT_EQ(op::Family::blocks<Vb16>(1), 1u);
  EXPECT_EQ(op::Family::blocks<Vb16>(257), 2u);
  // 2^31 - 1 tokens x 2^20 lanes: capped so that grid x tpb fits 32 bits.
  const unsigned b = op::Family::blocks<op::Space::Config<512, 16, 1, 0>>((std::int64_t{1} << 51));
  EXPECT_EQ(b, 1u << 21);
  EXPECT_LT(std::uint64_t{b} * 512, std::uint64_t{1} << 32);
}

// ---- the generated tuned table ------------------------------------------------------------------

// Every row of a generated table names a variant feasible where it applies (none before the first tune).
template <class Entries>
void check_rows(const Entries& entries) {
  if constexpr (!std::is_same_v<Entries, std::nullptr_t>) {
    for (const ktune::TunedEntry& e : entries) {
      const auto parsed = op::Space::space.parse(e.id);
      ASSERT_TRUE(parsed.ok) << e.id;
      EXPECT_TRUE(op::Space::feasible(parsed.point, ktune::arch_limits(e.arch), ktune::size_of(e.dtype)).ok()) << e.id;
    }
  }
}

// Holds for the default-only table committed before the first tune and for every generated one.
TEST(RotaryEmbeddingTuned, TableMatchesTheSpace) {
  EXPECT_EQ(op::tuned::space_hash, op::Space::space.hash())
      << "kernels/rotary_embedding/tuned.cuh is stale: regenerate it with 'make tune' or 'ktune tables'";
  const auto general = op::Space::space.parse(op::tuned::general_id);
  ASSERT_TRUE(general.ok) << op::tuned::general_id;
  for (int sm : ktune::supported_archs)
    for (int bytes : {2, 4})
      EXPECT_TRUE(op::Space::feasible(general.point, ktune::arch_limits(sm), bytes).ok())
          << "the general configuration runs on every supported architecture: sm_" << sm;
  int threads = 0;
  const ktune::Status st = op::tuned::with_variant<__half>(-1, [&](auto cfg) {
    threads = decltype(cfg)::threads;
    return ktune::Status::success();
  });
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(threads, general.point[0]) << "with_variant(-1) runs the general configuration";
  check_rows(op::tuned::entries);
}

}  // namespace
