// CPU tests of rotary_embedding_set_kv: the float64 reference on a hand-worked example (rotation, the store
// into the slots, scales, untouched slots, a slot out of range), validate() (null pointers, strides,
// alignment, scales, overlap by element), the spec file and its bytes moved (the buffers' moved part), the
// space, the harness (cache_loc an injection into twice as many slots, every slot's reference). Compiled by
// the host compiler: none of these headers needs CUDA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <ktune/arch.hpp>
#include <ktune/dtype.hpp>
#include <ktune/space.hpp>
#include <ktune/spec.hpp>

#include "kernels/rotary_embedding_set_kv/args.hpp"
#include "kernels/rotary_embedding_set_kv/harness.hpp"
#include "kernels/rotary_embedding_set_kv/reference.hpp"
#include "kernels/rotary_embedding_set_kv/space.hpp"

namespace {

namespace op = ktune::ops::rotary_embedding_set_kv;
using ktune::DType;
using ktune::StatusCode;

// ---- reference ----------------------------------------------------------------------------------

// Two tokens, one q head and one kv head of 6 values, rotary_dim 4 (neox), a cos/sin cache of two rows, a KV
// cache of three slots: token 0 -> slot 2, token 1 -> slot 0; slot 1 keeps what it held. k_scale 2, v_scale 4.
TEST(RotaryEmbeddingSetKvReference, HandWorkedExample) {
  const std::vector<float> cache = {0.5f, -1.f, 2.f, 0.25f, /* row 1 */ 1.f, 1.f, 0.f, 0.f};
  const std::vector<float> q = {1, 2, 3, 4, 5, 6, /* t1 */ 7, 8, 9, 10, 11, 12};
  const std::vector<float> k = {-1, 0.5f, 2, -3, 7, 8, /* t1 */ 1, 1, 1, 1, 1, 1};
  const std::vector<float> v = {10, 20, 30, 40, 50, 60, /* t1 */ -4, -8, -12, -16, -20, -24};
  std::vector<float> kb(18), vb(18);
  for (int i = 0; i < 18; ++i) kb[i] = 100.f + static_cast<float>(i), vb[i] = -100.f - static_cast<float>(i);
  const std::vector<std::int64_t> pos = {0, 1}, loc = {2, 0};
  std::vector<double> qo(12), ko(12), kbo(18), vbo(18);
  op::reference(pos.data(), q.data(), k.data(), 6, cache.data(), true, v.data(), kb.data(), vb.data(), 2.0, 4.0, loc.data(),
                2, 1, 1, 4, 2, 3, 6, 6, 6, 6, 6, qo.data(), ko.data(), kbo.data(), vbo.data());
  // Token 0, pairs (0, 2) with cos 0.5, sin 2 and (1, 3) with cos -1, sin 0.25.
  EXPECT_DOUBLE_EQ(qo[0], 1 * 0.5 - 3 * 2);
  EXPECT_DOUBLE_EQ(qo[3], 4 * -1.0 + 2 * 0.25);
  EXPECT_DOUBLE_EQ(qo[5], 6);
  const double k0[6] = {-1 * 0.5 - 2 * 2, 0.5 * -1.0 - -3 * 0.25, 2 * 0.5 + -1 * 2, -3 * -1.0 + 0.5 * 0.25, 7, 8};
  for (int i = 0; i < 6; ++i) {
    EXPECT_DOUBLE_EQ(ko[i], k0[i]) << i;
    EXPECT_DOUBLE_EQ(kbo[2 * 6 + i], k0[i] / 2) << "slot 2 holds token 0's rotated k / k_scale, " << i;
    EXPECT_DOUBLE_EQ(vbo[2 * 6 + i], v[i] / 4) << "and its value / v_scale, " << i;
  }
  // Token 1 at position 1 (cos 1, sin 0: the identity) into slot 0.
  for (int i = 0; i < 6; ++i) {
    EXPECT_DOUBLE_EQ(kbo[i], 1.0 / 2) << i;
    EXPECT_DOUBLE_EQ(vbo[i], v[6 + i] / 4) << i;
    EXPECT_DOUBLE_EQ(kbo[6 + i], kb[6 + i]) << "slot 1 is no token's: untouched, " << i;
    EXPECT_DOUBLE_EQ(vbo[6 + i], vb[6 + i]) << i;
  }
}

// Strided value and buffers, scales of 1 (SGLang's None), a slot out of range (nothing stored, still rotated).
TEST(RotaryEmbeddingSetKvReference, StridesNoScaleAndSlotsOutOfRange) {
  const std::int64_t d = 4, r = 2, tokens = 3, rows = 4, vs = 7, bs = 5;
  const std::vector<float> cache = {0.5f, 2.f};
  std::vector<float> q(static_cast<std::size_t>(tokens * d)), k(q.size()), v(static_cast<std::size_t>(tokens * vs));
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i) + 1, k[i] = 3.f - static_cast<float>(i);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i);
  std::vector<float> kb(static_cast<std::size_t>(rows * bs), 9.f), vb(kb.size(), -9.f);
  const std::vector<std::int64_t> pos = {0, 0, 0}, loc = {3, rows, -1};
  std::vector<double> qo(q.size()), ko(k.size()), kbo(static_cast<std::size_t>(rows * d)), vbo(kbo.size());
  op::reference(pos.data(), q.data(), k.data(), d, cache.data(), false, v.data(), kb.data(), vb.data(), 1.0, 1.0, loc.data(),
                tokens, 1, 1, r, 1, rows, d, d, vs, bs, bs, qo.data(), ko.data(), kbo.data(), vbo.data());
  for (std::int64_t t = 0; t < tokens; ++t)
    EXPECT_DOUBLE_EQ(ko[static_cast<std::size_t>(t * d)], k[t * d] * 0.5 - k[t * d + 1] * 2.0) << "every token is rotated";
  for (int i = 0; i < d; ++i) {
    EXPECT_DOUBLE_EQ(kbo[static_cast<std::size_t>(3 * d + i)], ko[static_cast<std::size_t>(i)]);
    EXPECT_DOUBLE_EQ(vbo[static_cast<std::size_t>(3 * d + i)], v[static_cast<std::size_t>(i)]) << "value's token stride";
  }
  for (std::int64_t s = 0; s < 3; ++s)
    for (int i = 0; i < d; ++i) {
      EXPECT_DOUBLE_EQ(kbo[static_cast<std::size_t>(s * d + i)], 9.0);
      EXPECT_DOUBLE_EQ(vbo[static_cast<std::size_t>(s * d + i)], -9.0);
    }
}

// ---- validate -----------------------------------------------------------------------------------

template <class E>
op::Args<E> good_args() {
  op::Args<E> a;
  a.positions = reinterpret_cast<const std::int64_t*>(0x1000);
  a.query = reinterpret_cast<E*>(0x100000);
  a.key = reinterpret_cast<E*>(0x200000);
  a.head_size = 128;
  a.cos_sin_cache = reinterpret_cast<const float*>(0x4000);
  a.value = reinterpret_cast<const E*>(0x300000);
  a.k_buffer = reinterpret_cast<E*>(0x1000000);
  a.v_buffer = reinterpret_cast<E*>(0x2000000);
  a.cache_loc = reinterpret_cast<const std::int64_t*>(0x5000);
  a.tokens = 16;
  a.q_heads = 32;
  a.kv_heads = 8;
  a.rotary_dim = 128;
  a.max_pos = 4096;
  a.cache_rows = 1024;
  a.query_stride = 32 * 128;
  a.key_stride = a.value_stride = a.k_buffer_stride = a.v_buffer_stride = 8 * 128;
  return a;
}

TEST(RotaryEmbeddingSetKvValidate, AcceptsValidInput) {
  EXPECT_TRUE(op::validate(good_args<__half>()).ok());
  // Slices of one packed qkv buffer: rows of 48 heads, q at head 0, k at 32, v at 40.
  auto a = good_args<__nv_bfloat16>();
  auto* qkv = reinterpret_cast<__nv_bfloat16*>(0x100000);
  a.query = qkv;
  a.key = qkv + 32 * 128;
  a.value = qkv + 40 * 128;
  a.query_stride = a.key_stride = a.value_stride = 48 * 128;
  EXPECT_TRUE(op::validate(a).ok()) << op::validate(a).message;
  // k and v caches interleaved in one buffer of slots [2, kv_heads, head_size].
  a.v_buffer = a.k_buffer + 8 * 128;
  a.k_buffer_stride = a.v_buffer_stride = 2 * 8 * 128;
  EXPECT_TRUE(op::validate(a).ok()) << op::validate(a).message;
  a.k_scale = 0.25f;
  a.v_scale = 3.f;
  a.is_neox = false;
  EXPECT_TRUE(op::validate(a).ok());
  a.tokens = 0;
  a.query = a.key = a.k_buffer = a.v_buffer = nullptr;
  a.value = nullptr;
  EXPECT_TRUE(op::validate(a).ok()) << "no tokens: a no-op whatever the pointers";
}

TEST(RotaryEmbeddingSetKvValidate, RefusesBadInput) {
  using A = op::Args<__half>;
  auto expect = [](A a, StatusCode code, const char* what) {
    const ktune::Status s = op::validate(a);
    EXPECT_EQ(s.code, code) << what << ": " << s.message;
  };
  A a = good_args<__half>();
  a.value = nullptr;
  expect(a, StatusCode::invalid_argument, "null value");
  a = good_args<__half>();
  a.k_buffer = nullptr;
  expect(a, StatusCode::invalid_argument, "null k_buffer");
  a = good_args<__half>();
  a.cache_loc = nullptr;
  expect(a, StatusCode::invalid_argument, "null cache_loc");
  a = good_args<__half>();
  a.positions = nullptr;
  expect(a, StatusCode::invalid_argument, "null positions");
  a = good_args<__half>();
  a.cache_rows = 0;
  expect(a, StatusCode::invalid_argument, "no slots");
  a = good_args<__half>();
  a.k_scale = 0.f;
  expect(a, StatusCode::invalid_argument, "k_scale 0");
  a = good_args<__half>();
  a.v_scale = std::nanf("");
  expect(a, StatusCode::invalid_argument, "v_scale NaN");
  a = good_args<__half>();
  a.k_scale = -1.f;
  expect(a, StatusCode::invalid_argument, "negative k_scale");
  a = good_args<__half>();
  a.value_stride = 0;
  expect(a, StatusCode::invalid_argument, "value stride 0");
  a = good_args<__half>();
  a.k_buffer_stride = 8 * 128 - 1;
  expect(a, StatusCode::invalid_argument, "short slot stride");
  a = good_args<__half>();
  a.v_buffer_stride = -2;
  expect(a, StatusCode::invalid_argument, "negative slot stride");
  a = good_args<__half>();
  a.v_buffer = reinterpret_cast<__half*>(0x2000001);
  expect(a, StatusCode::invalid_argument, "v_buffer misaligned to its element");
  a = good_args<__half>();
  a.cache_loc = reinterpret_cast<const std::int64_t*>(0x5004);
  expect(a, StatusCode::invalid_argument, "cache_loc misaligned");
  a = good_args<__half>();
  a.rotary_dim = 129;
  expect(a, StatusCode::invalid_argument, "odd rotary_dim");
  // Overlap, by element.
  a = good_args<__half>();
  a.v_buffer = a.k_buffer + 1023 * 8 * 128;  // the last slot of k_buffer is v_buffer's first
  expect(a, StatusCode::invalid_argument, "k_buffer and v_buffer share a slot");
  a = good_args<__half>();
  a.k_buffer = a.key;
  expect(a, StatusCode::invalid_argument, "k_buffer is key");
  a = good_args<__half>();
  a.v_buffer = const_cast<__half*>(a.value) + 5;
  expect(a, StatusCode::invalid_argument, "v_buffer overlaps value");
  a = good_args<__half>();
  a.value = a.query + 100;
  expect(a, StatusCode::invalid_argument, "value overlaps query");
  a = good_args<__half>();
  a.key = a.query + 31 * 128;  // key's first head is query's last
  expect(a, StatusCode::invalid_argument, "query and key share a head");
  a = good_args<__half>();
  a.cache_rows = std::int64_t{1} << 60;
  expect(a, StatusCode::too_large, "slots beyond 64-bit byte offsets");
}

TEST(RotaryEmbeddingSetKvValidate, ShapeKeyIsTokensAndQueryHeads) {
  const auto a = good_args<__half>();
  EXPECT_EQ(op::tokens(a), 16);
  EXPECT_EQ(op::width(a), 32);
}

// ---- spec.json ----------------------------------------------------------------------------------

std::string spec_path() { return std::string(KTUNE_SOURCE_DIR) + "/kernels/rotary_embedding_set_kv/spec.json"; }

TEST(RotaryEmbeddingSetKvSpec, MatchesRotaryEmbeddingsGridAndTheIssue) {
  const ktune::Spec s = ktune::load_spec(spec_path());
  const ktune::Spec rope = ktune::load_spec(std::string(KTUNE_SOURCE_DIR) + "/kernels/rotary_embedding/spec.json");
  EXPECT_EQ(s.schema, 2);
  EXPECT_EQ(s.op, "rotary_embedding_set_kv");
  EXPECT_EQ(s.dims, rope.dims) << "the catalogue draws both from the same models' heads";
  EXPECT_EQ(s.tokens_dim, "tokens");
  EXPECT_EQ(s.width_dim, "q_heads");
  EXPECT_EQ(s.dtypes, (std::vector<DType>{DType::f16, DType::bf16}));
  EXPECT_FALSE(s.held_out.empty());
  ASSERT_EQ(s.scalars.size(), 3u);
  EXPECT_EQ(s.scalars[1].name, "k_scale");
  EXPECT_EQ(s.scalars[1].default_value, 1.0);
  EXPECT_FALSE(s.scalars[1].admits(0.0));
  EXPECT_GT(s.scalars[1].values.size(), 1u) << "the judge tries a scale other than None";
  EXPECT_EQ(s.scalars[2].name, "v_scale");
  for (const ktune::Shape& shape : s.shapes()) {
    EXPECT_TRUE(op::is_neox_of(shape));
    EXPECT_EQ(op::k_scale_of(shape), 1.f);
  }
  const auto& loc = s.tensors.back();
  EXPECT_EQ(loc.name, "cache_loc");
  ASSERT_TRUE(loc.is_index());
  const ktune::Shape shape{{{"tokens", 16}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"rotary_dim", 128}}, {}};
  EXPECT_EQ(loc.range_lo.value(shape), 0);
  EXPECT_EQ(loc.range_hi.value(shape), 32) << "2*tokens slots";
}

TEST(RotaryEmbeddingSetKvSpec, TensorsMatchTheHarnessAndCountOnlyTheSlotsWritten) {
  const ktune::Spec s = ktune::load_spec(spec_path());
  const op::Harness h;
  for (const ktune::Shape& shape : s.shapes()) {
    for (DType d : s.dtypes) {
      const auto info = h.tensors(shape, d);
      const auto want = s.tensor_infos(shape, d);
      ASSERT_EQ(info.size(), want.size());
      std::int64_t bytes = 0;
      for (std::size_t i = 0; i < info.size(); ++i) {
        EXPECT_EQ(info[i].name, want[i].name);
        EXPECT_EQ(info[i].elements, want[i].elements) << info[i].name;
        EXPECT_EQ(info[i].element_bytes, want[i].element_bytes) << info[i].name;
        EXPECT_EQ(info[i].access, want[i].access) << info[i].name;
        EXPECT_EQ(info[i].part_moved, want[i].part_moved) << info[i].name;
        bytes += static_cast<std::int64_t>(info[i].moved_bytes());
      }
      EXPECT_EQ(bytes, s.bytes(shape, d));
    }
  }
  // 16 tokens of LLaMA-3-8B in bf16: positions and slots 8 B each; q and k read and written; one cache row of
  // 512 bytes per token; value read; 16 of the 32 slots written in each buffer (not read).
  const ktune::Shape shape{{{"tokens", 16}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"rotary_dim", 128}}, {}};
  const std::int64_t kv = 16 * 8 * 128 * 2;
  EXPECT_EQ(s.bytes(shape, DType::bf16), 2 * 16 * 8 + 2 * 16 * 32 * 128 * 2 + 2 * kv + 16 * 128 * 4 + kv + 2 * kv);
  EXPECT_EQ(h.tensors(shape, DType::bf16)[op::Harness::k_buffer].elements, 32u * 8 * 128) << "twice the tokens' slots";
}

// ---- the space ----------------------------------------------------------------------------------

TEST(RotaryEmbeddingSetKvSpace, FeasibleCountsAndNamedPoints) {
  EXPECT_EQ(op::Space::space.size(), 96u);
  // 12 points fewer than rotary_embedding's for each element size: hpt 8 with vb 8 or 16 spilled on sm_90.
  EXPECT_EQ((ktune::FeasibleSet<op::Space, 90, 2>::count), 66u);
  EXPECT_EQ((ktune::FeasibleSet<op::Space, 90, 4>::count), 54u);
  for (int vb : {8, 16})
    EXPECT_FALSE(op::Space::feasible({128, vb, 8, 0}, ktune::arch_limits(90), 2).ok()) << vb;
  EXPECT_TRUE(op::Space::feasible({128, 4, 8, 0}, ktune::arch_limits(90), 2).ok());
  for (int arch : ktune::supported_archs)
    for (int eb : {2, 4}) {
      EXPECT_TRUE(op::Space::feasible(op::Space::default_point, ktune::arch_limits(arch), eb).ok()) << arch;
      EXPECT_TRUE(op::Space::feasible(op::Space::unaligned_point(eb), ktune::arch_limits(arch), eb).ok()) << arch;
    }
  EXPECT_EQ(op::Space::space.id(op::Space::default_point), "tpb_256.vb_16.hpt_2.pdl_0");
  for (const auto& p : ktune::FeasibleSet<op::Space, 90, 2>::points) {
    const auto parsed = op::Space::space.parse(op::Space::space.id(p));
    ASSERT_TRUE(parsed.ok);
    EXPECT_EQ(parsed.point, p);
  }
}

// ---- harness ------------------------------------------------------------------------------------

TEST(RotaryEmbeddingSetKvHarness, CacheLocIsAnInjectionWithBothEndsPlanted) {
  for (std::int64_t t : {1, 2, 7, 64, 1000}) {
    const auto loc = op::draw_cache_loc(t, 2 * t, 7 + static_cast<std::uint64_t>(t));
    ASSERT_EQ(static_cast<std::int64_t>(loc.size()), t);
    std::set<std::int64_t> seen(loc.begin(), loc.end());
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), t) << "distinct slots";
    for (std::int64_t s : loc) EXPECT_TRUE(s >= 0 && s < 2 * t);
    EXPECT_EQ(loc.front(), 2 * t - 1);
    if (t > 1) EXPECT_EQ(loc.back(), 0);
  }
  const auto loc = op::draw_cache_loc(64, 128, 3);
  int in_order = 0;
  for (std::size_t i = 0; i < loc.size(); ++i) in_order += loc[i] == static_cast<std::int64_t>(i);
  EXPECT_LT(in_order, 16) << "scattered, as an allocator leaves them";
}

TEST(RotaryEmbeddingSetKvHarness, ReferenceStoresEachTokenAndKeepsTheOtherSlots) {
  const op::Harness h;
  for (double ks : {1.0, 0.5}) {
    ktune::Shape shape{{{"tokens", 5}, {"q_heads", 3}, {"kv_heads", 2}, {"head_size", 16}, {"rotary_dim", 12}}, {}};
    shape.scalars = {{"is_neox", 1.0}, {"k_scale", ks}, {"v_scale", 2.0}};
    ktune::HostTensors host;
    h.fill_inputs(shape, DType::bf16, 99, host);
    ASSERT_EQ(host.size(), 8u);
    const auto ref = h.reference(shape, DType::bf16, host);
    ASSERT_EQ(ref.size(), 4u);
    ASSERT_EQ(ref[2].size(), 10u * 2 * 16);
    const auto* loc = reinterpret_cast<const std::int64_t*>(host[op::Harness::cache_loc].data());
    const auto* kb = reinterpret_cast<const __nv_bfloat16*>(host[op::Harness::k_buffer].data());
    const auto* v = reinterpret_cast<const __nv_bfloat16*>(host[op::Harness::value].data());
    std::vector<int> owner(10, -1);
    for (int t = 0; t < 5; ++t) owner[static_cast<std::size_t>(loc[t])] = t;
    for (int s = 0; s < 10; ++s)
      for (int i = 0; i < 32; ++i) {
        const std::size_t e = static_cast<std::size_t>(s * 32 + i);
        if (owner[static_cast<std::size_t>(s)] < 0) {
          EXPECT_EQ(ref[2][e], ktune::to_float(kb[e])) << "slot " << s << " is no token's";
          EXPECT_GE(std::fabs(ref[2][e]), 16.0);
        } else {
          const auto t = static_cast<std::size_t>(owner[static_cast<std::size_t>(s)]);
          EXPECT_DOUBLE_EQ(ref[2][e], ref[1][t * 32 + static_cast<std::size_t>(i)] / ks);
          EXPECT_DOUBLE_EQ(ref[3][e], ktune::to_float(v[t * 32 + static_cast<std::size_t>(i)]) / 2.0);
          EXPECT_LT(std::fabs(ref[2][e]), 16.0) << "a stored value is far from what the slot held";
        }
      }
  }
}

}  // namespace
