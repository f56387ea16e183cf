// CPU tests of merge_attn_states_lse's public API and host adapter: everything that must happen before
// any CUDA call (argument checks, dtype refusal, T = 0), the variants' can_implement rules, the grid
// shapes, and the generated tuned table. Runs without a GPU: a stray CUDA call would show up as a
// cuda_error status instead of the expected code.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <type_traits>

// The runtime-dtype entry lives in the .cu compiled into ktune::kernels; the test binaries do not
// link that library, so this test compiles it in.
#include "kernels/merge_attn_states_lse/merge_attn_states_lse.cuh"

namespace {

namespace op = ktune::ops::merge_attn_states_lse;
using ktune::DType;
using ktune::StatusCode;

template <class T>
T* fake(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);  // never dereferenced
}

TEST(MergeAttnStatesLseApiHost, RuntimeEntryRefusesUnknownDtypesBeforeAnything) {
  for (int bad : {-1, 3, 7}) {
    const ktune::Status st = ktune::merge_attn_states_lse(static_cast<DType>(bad), fake<void>(0x1000), nullptr,
                                                          fake<const void>(0x2000), fake<const float>(0x3000),
                                                          fake<const void>(0x4000), fake<const float>(0x5000), 4, 8, 64);
    EXPECT_EQ(st.code, StatusCode::unsupported) << bad;
  }
  ktune::TunedChoice c;
  EXPECT_EQ(ktune::merge_attn_states_lse_choice(static_cast<DType>(5), 1, 32, c).code, StatusCode::unsupported);
  EXPECT_EQ(ktune::merge_attn_states_lse_choice(DType::f16, -1, 32, c).code, StatusCode::invalid_argument);
}

TEST(MergeAttnStatesLseApiHost, ArgumentChecksComeBeforeAnyCudaCall) {
  for (DType dt : ktune::all_dtypes) {
    auto call = [&](void* out, const void* prefix, std::int64_t tokens, std::int64_t heads, std::int64_t head_size,
                    std::int64_t out_stride = -1) {
      return ktune::merge_attn_states_lse(dt, out, nullptr, prefix, fake<const float>(0x3000), fake<const void>(0x4000),
                                          fake<const float>(0x5000), tokens, heads, head_size, nullptr, out_stride);
    };
    EXPECT_EQ(call(nullptr, fake<const void>(0x2000), 4, 8, 64).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(fake<void>(0x1000), nullptr, 4, 8, 64).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(fake<void>(0x1000), fake<const void>(0x2000), -2, 8, 64).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(fake<void>(0x1000), fake<const void>(0x2000), 4, -8, 64).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(fake<void>(0x1000), fake<const void>(0x2000), 4, 8, 0).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(fake<void>(0x1000), fake<const void>(0x2000), 4, 8, 64, 100).code, StatusCode::invalid_argument);
    // The old spelling of "contiguous" is a clear error now, even for one token; -1 is the spelling.
    const ktune::Status zero = call(fake<void>(0x1000), fake<const void>(0x2000), 1, 8, 64, 0);
    EXPECT_EQ(zero.code, StatusCode::invalid_argument);
    EXPECT_NE(std::string(zero.message).find("pass -1"), std::string::npos) << zero.message;
    EXPECT_EQ(call(fake<void>(0x1000), fake<const void>(0x2000), 4, 8, 64, -2).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(fake<void>(0x1001), fake<const void>(0x2000), 4, 8, 64).code, StatusCode::invalid_argument);
    EXPECT_EQ(call(fake<void>(0x1000), fake<const void>(0x2000), 4, std::int64_t{1} << 16, std::int64_t{1} << 16).code,
              StatusCode::too_large);
    // T = 0: a no-op that reaches no CUDA call (this machine may have no GPU at all).
    EXPECT_TRUE(call(fake<void>(0x1000), fake<const void>(0x2000), 0, 8, 64).ok());
    EXPECT_TRUE(call(nullptr, nullptr, 0, 8, 64).ok());
  }
}

TEST(MergeAttnStatesLseApiHost, StrideMinusOneMeansContiguous) {
  const auto a = op::make_args<float>(fake<float>(0x1000), nullptr, fake<const float>(0x2000), fake<const float>(0x3000),
                                      fake<const float>(0x4000), fake<const float>(0x5000), 3, 8, 64, -1, 600, -1);
  EXPECT_EQ(a.out_stride, 512);
  EXPECT_EQ(a.prefix_stride, 600);
  EXPECT_EQ(a.suffix_stride, 512);
}

// ---- can_implement per configuration ---------------------------------------------------------------------

template <class E>
op::Args<E> aligned_args() {
  op::Args<E> a;
  a.out = fake<E>(0x10000);
  a.out_lse = fake<float>(0x20000);
  a.prefix_out = fake<const E>(0x30000);
  a.prefix_lse = fake<const float>(0x40000);
  a.suffix_out = fake<const E>(0x50000);
  a.suffix_lse = fake<const float>(0x60000);
  a.tokens = 5;
  a.heads = 32;
  a.head_size = 128;
  a.out_stride = a.prefix_stride = a.suffix_stride = 32 * 128;
  return a;
}

using Vb16 = op::Space::Config<256, 16, 1, 0, 0>;
using Vb8 = op::Space::Config<128, 8, 2, 1, 1>;

TEST(MergeAttnStatesLseFamily, CanImplementChecksVectorAlignmentAndHeadSize) {
  auto a = aligned_args<__half>();
  EXPECT_TRUE((op::Family::can_implement<Vb16, __half>(a).ok()));
  EXPECT_TRUE(op::original::can_implement(a).ok());
  // head_size 36: 36 % 8 != 0 for 16-byte fp16 vectors, but 36 % 4 == 0 for 8-byte ones.
  a.head_size = 36;
  a.out_stride = a.prefix_stride = a.suffix_stride = 32 * 36;
  EXPECT_EQ((op::Family::can_implement<Vb16, __half>(a).code), StatusCode::unsupported);
  EXPECT_TRUE((op::Family::can_implement<Vb8, __half>(a).ok()));
  EXPECT_EQ(op::original::can_implement(a).code, StatusCode::unsupported);
  // A pointer aligned to 8 but not 16 bytes.
  a = aligned_args<__half>();
  a.suffix_out = fake<const __half>(0x50008);
  EXPECT_EQ((op::Family::can_implement<Vb16, __half>(a).code), StatusCode::unsupported);
  EXPECT_TRUE((op::Family::can_implement<Vb8, __half>(a).ok()));
  EXPECT_EQ(op::original::can_implement(a).code, StatusCode::unsupported);
  // A stride that is not a whole number of vectors, and one that is (S takes no strides at all).
  a = aligned_args<__half>();
  a.prefix_stride = 32 * 128 + 4;
  EXPECT_EQ((op::Family::can_implement<Vb16, __half>(a).code), StatusCode::unsupported);
  EXPECT_TRUE((op::Family::can_implement<Vb8, __half>(a).ok()));
  a.prefix_stride = 32 * 128 + 8;
  EXPECT_TRUE((op::Family::can_implement<Vb16, __half>(a).ok()));
  EXPECT_EQ(op::original::can_implement(a).code, StatusCode::unsupported);
  // The unaligned configuration takes any valid input.
  a.head_size = 37;
  a.out_stride = 32 * 37 + 1;
  a.prefix_stride = 32 * 37 + 3;
  a.suffix_stride = 32 * 37;
  a.out = fake<__half>(0x10002);
  EXPECT_TRUE((op::Family::can_implement<op::unaligned_config_t<2>, __half>(a).ok()));
  auto f = aligned_args<float>();
  f.head_size = 37;
  f.out_stride = f.prefix_stride = f.suffix_stride = 32 * 37;
  f.prefix_out = fake<const float>(0x30004);
  EXPECT_TRUE((op::Family::can_implement<op::unaligned_config_t<4>, float>(f).ok()));
}

TEST(MergeAttnStatesLseFamily, OriginalRefusesWhatItsIndexingCannotReach) {
  auto a = aligned_args<float>();
  a.heads = 64;
  a.head_size = 128;
  a.out_stride = a.prefix_stride = a.suffix_stride = 64 * 128;
  a.tokens = (std::int64_t{1} << 32) / (64 * 128);  // 2^32 elements: beyond 32-bit unsigned offsets
  EXPECT_EQ(op::original::can_implement(a).code, StatusCode::too_large);
  a.tokens = 8192;
  EXPECT_TRUE(op::original::can_implement(a).ok());
  EXPECT_TRUE((op::Family::can_implement<Vb16, float>(a).ok()));
}

// ---- grid shapes ---------------------------------------------------------------------------------------------

TEST(MergeAttnStatesLseFamily, GridSplitsRowsAndWalksTokens) {
  // fp16, heads 32, head_size 128, 16-byte packs: 512 packs per row; 256 threads x 1 pack: 2 chunks.
  dim3 g = op::Family::grid<Vb16>(8192, 512, 132, 2048);
  EXPECT_EQ(g.x, 2u);
  EXPECT_EQ(g.y, 8192u);
  // S's configuration gives S's grid on the spec shapes: 128-pack chunks, one block per chunk.
  g = op::Family::grid<op::original_config_t>(16, 40 * 128 / 8, 132, 2048);
  EXPECT_EQ(g.x * g.y, 16u * 40 * 128 / 8 / 128);
  // Beyond 65535 tokens grid.y stays 65535 and blocks loop.
  g = op::Family::grid<Vb16>(100000, 512, 132, 2048);
  EXPECT_EQ(g.y, 65535u);
  // Persistent: about one resident wave (132 SMs x 2048 / 128 threads = 2112 blocks) over x = 512 / 256.
  using Persistent = op::Space::Config<128, 16, 2, 1, 0>;
  g = op::Family::grid<Persistent>(8192, 512, 132, 2048);
  EXPECT_EQ(g.x, 2u);
  EXPECT_EQ(g.y, 1056u);
  g = op::Family::grid<Persistent>(3, 512, 132, 2048);  // fewer tokens than the wave: one block each
  EXPECT_EQ(g.y, 3u);
  g = op::Family::grid<Persistent>(5, 1 << 20, 132, 2048);  // rows longer than a wave: y = 1
  EXPECT_EQ(g.y, 1u);
  EXPECT_EQ(g.x, (1u << 20) / 256);
  // A partial last chunk: 640 packs in chunks of 512.
  g = op::Family::grid<op::Space::Config<512, 16, 1, 0, 0>>(1, 640, 132, 2048);
  EXPECT_EQ(g.x, 2u);
}

// ---- the generated tuned table -------------------------------------------------------------------------

// Holds for the default-only table committed before the first tune and for every generated one.
TEST(MergeAttnStatesLseTuned, TableMatchesTheSpace) {
  EXPECT_EQ(op::tuned::space_hash, op::Space::space.hash())
      << "kernels/merge_attn_states_lse/tuned.cuh is stale: regenerate it with 'make tune' or 'ktune tables'";
  const auto general = op::Space::space.parse(op::tuned::general_id);
  ASSERT_TRUE(general.ok) << op::tuned::general_id;
  for (int sm : ktune::supported_archs)
    for (int bytes : {2, 4})
      EXPECT_TRUE(op::Space::feasible(general.point, ktune::arch_limits(sm), bytes).ok())
          << "the general configuration runs on every supported architecture: sm_" << sm;
  int threads = 0;
  const ktune::Status st = op::tuned::with_variant<float>(-1, [&](auto cfg) {
    threads = decltype(cfg)::threads;
    return ktune::Status::success();
  });
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(threads, general.point[0]) << "with_variant(-1) runs the general configuration";
  if constexpr (!std::is_same_v<std::decay_t<decltype(op::tuned::entries)>, std::nullptr_t>) {
    for (const ktune::TunedEntry& e : op::tuned::entries) {
      const auto parsed = op::Space::space.parse(e.id);
      ASSERT_TRUE(parsed.ok) << e.id;
      EXPECT_TRUE(op::Space::feasible(parsed.point, ktune::arch_limits(e.arch), ktune::size_of(e.dtype)).ok()) << e.id;
    }
  }
}

}  // namespace
