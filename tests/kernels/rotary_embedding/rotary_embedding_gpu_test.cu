// GPU tests of rotary_embedding: every registered variant (and S) x dtype x pairing against the float64
// reference and against S where S takes the case, the public API (fallbacks, bad inputs, T = 0, graph
// capture, determinism).
//
// q and k are in place, so they cannot be poisoned; instead every element around the tensors (before the
// first row, the gaps of strided rows, the slack after the last) holds the poison pattern and must keep
// it, and the inputs are drawn so that every rotated element changes (harness.hpp). The cache is
// allocated to its exact size, so under compute-sanitizer memcheck a read past its last row (position
// max_pos - 1, which every case plants) is an error.
//
// Sanitizer sample (one small case per pairing, every dtype, each variant once):
//   original                      S
//   tpb_256.vb_16.hpt_2.pdl_0     the default configuration
//   tpb_512.vb_8.hpt_8.pdl_1      8 heads per thread, PDL
//   tpb_256.vb_<elem>.hpt_<2|4>.pdl_0  the unaligned fallback (vb_4.hpt_2 for fp32, vb_2.hpt_4 for fp16/bf16)
// run it with
//   compute-sanitizer --tool memcheck  ktune_gpu_tests --gtest_filter='SanitizerSample.RotaryEmbedding'
//   compute-sanitizer --tool racecheck ktune_gpu_tests --gtest_filter='SanitizerSample.RotaryEmbedding'
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/random.hpp>
#include <ktune/registry.hpp>
#include <ktune/space.hpp>
#include <ktune/verify.hpp>

#include "kernels/rotary_embedding/harness.hpp"
#include "kernels/rotary_embedding/reference.hpp"
#include "kernels/rotary_embedding/rotary_embedding.cuh"
#include "support/device_preparation_gpu.hpp"
#include "support/gpu.hpp"

namespace {

using ktune::test::DeviceBuffer;
using ktune::test::Stream;

namespace op = ktune::ops::rotary_embedding;
using ktune::DType;

constexpr const char* op_name = "rotary_embedding";

using ktune::test::test_seed;

struct Case {
  const char* name;
  std::int64_t tokens, q_heads, kv_heads, head_size, rotary_dim, max_pos;
  bool is_neox = true;
  std::int64_t q_stride = 0, k_stride = 0;  // elements; 0: contiguous
  std::int64_t offset = 0;                  // q and k start this many elements into their buffers
  std::int64_t cache_offset = 0;            // the cache starts this many floats into its buffer
};

// Spec-like layouts in both pairings, DeepSeek-like 64-wide heads with one key head (GPT-J), partial
// rotary dims, odd sizes no vector divides, slices of a qkv buffer (strided tokens), pointers aligned
// only to their element, head sizes 256 and 512 (S's other instantiations), more tokens than grid.y's
// 65535 and a cache larger than the token count (decode).
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"llama3_8b_T1", 1, 32, 8, 128, 128, 4096},
      {"qwen25_T16_gptj", 16, 40, 8, 128, 128, 4096, false},
      {"llama3_70b_T9", 9, 64, 8, 128, 128, 9},
      {"deepseek_v3_rope", 5, 16, 1, 64, 64, 64, false},
      {"partial_rotary", 7, 4, 2, 128, 64, 33},
      {"partial_rotary_gptj", 7, 4, 2, 128, 32, 33, false},
      {"odd_sizes", 3, 5, 3, 37, 22, 9},
      {"odd_sizes_gptj", 3, 5, 3, 37, 22, 9, false},
      {"qkv_slices", 6, 8, 2, 64, 64, 100, true, 12 * 64, 12 * 64},
      {"qkv_slices_gptj", 6, 8, 2, 64, 64, 100, false, 12 * 64 + 8, 12 * 64 + 8},
      {"offset_pointers", 4, 3, 1, 64, 64, 17, true, 0, 0, 1, 1},
      {"odd_strides", 5, 2, 2, 16, 8, 11, false, 35, 37, 3, 2},
      {"head_256", 3, 4, 2, 256, 128, 12},
      {"head_512_gptj", 3, 4, 2, 512, 512, 12, false},
      {"tokens_beyond_grid_y", 70000, 1, 1, 64, 64, 70000},
  };
  return c;
}

constexpr std::int64_t tail_slack = 16;  // poisoned elements past the last row: catches overruns

/// One case's buffers, inputs (host and device) and float64 reference, for element type E.
template <class E>
struct Problem {
  Case c;
  std::int64_t q_row, k_row, qs, ks, q_elems, k_elems, cache_elems;
  std::vector<std::int64_t> pos_host;
  std::vector<E> q_host, k_host;
  std::vector<float> cache_host;
  std::vector<double> ref_q, ref_k;
  DeviceBuffer<std::int64_t> pos;
  DeviceBuffer<E> q, k;
  DeviceBuffer<float> cache;

  static std::int64_t span(const Case& c, std::int64_t stride, std::int64_t row) {
    return c.offset + (c.tokens - 1) * stride + row + tail_slack;
  }

  Problem(const Case& x, std::uint64_t seed)
      : c(x),
        q_row(x.q_heads * x.head_size),
        k_row(x.kv_heads * x.head_size),
        qs(x.q_stride ? x.q_stride : q_row),
        ks(x.k_stride ? x.k_stride : k_row),
        q_elems(span(x, qs, q_row)),
        k_elems(span(x, ks, k_row)),
        cache_elems(x.cache_offset + x.max_pos * x.rotary_dim),  // exact: a read past the last row leaves it
        pos(static_cast<std::size_t>(x.tokens)),
        q(static_cast<std::size_t>(q_elems)),
        k(static_cast<std::size_t>(k_elems)),
        cache(static_cast<std::size_t>(cache_elems)) {
    fill(seed);
  }

  bool allocated() const { return pos.ptr && q.ptr && k.ptr && cache.ptr; }

  /// Whether element j of a buffer with token stride `stride` and rows of `row` lies inside the tensor.
  bool inside(std::int64_t j, std::int64_t stride, std::int64_t row) const {
    const std::int64_t rel = j - c.offset;
    if (rel < 0) return false;
    const std::int64_t t = rel / stride;
    return t < c.tokens && rel - t * stride < row;
  }

  void fill(std::uint64_t seed) {
    pos_host = op::draw_positions(c.tokens, c.max_pos, ktune::mix64(seed ^ 0x51));
    auto values = [&](std::vector<E>& v, std::int64_t n, std::int64_t stride, std::int64_t row, std::uint64_t s) {
      v.resize(static_cast<std::size_t>(n));
      for (std::int64_t j = 0; j < n; ++j)
        v[static_cast<std::size_t>(j)] = inside(j, stride, row) ? ktune::from_float<E>(op::head_value(s, static_cast<std::uint64_t>(j)))
                                                                 : ktune::from_bits<E>(ktune::poison_bits<E>());
    };
    values(q_host, q_elems, qs, q_row, ktune::mix64(seed ^ 0x11));
    values(k_host, k_elems, ks, k_row, ktune::mix64(seed ^ 0x22));
    cache_host.assign(static_cast<std::size_t>(cache_elems), 0.f);
    const std::uint64_t sc = ktune::mix64(seed ^ 0x33);
    for (std::int64_t r = 0; r < c.max_pos; ++r)
      for (std::int64_t j = 0; j < c.rotary_dim; ++j) {
        const auto i = static_cast<std::uint64_t>(r * c.rotary_dim + j);
        cache_host[static_cast<std::size_t>(c.cache_offset) + i] = j < c.rotary_dim / 2 ? op::cos_value(sc, i) : op::sin_value(sc, i);
      }
    ref_q.resize(static_cast<std::size_t>(c.tokens * q_row));
    ref_k.resize(static_cast<std::size_t>(c.tokens * k_row));
    op::reference(pos_host.data(), q_host.data() + c.offset, k_host.data() + c.offset, c.head_size,
                  cache_host.data() + c.cache_offset, c.is_neox, c.tokens, c.q_heads, c.kv_heads, c.rotary_dim,
                  c.max_pos, qs, ks, ref_q.data(), ref_k.data());
  }

  /// Every call starts from the drawn inputs (q and k are overwritten in place).
  ktune::Status upload(cudaStream_t stream) {
    KTUNE_CUDA_TRY(cudaMemcpyAsync(pos.ptr, pos_host.data(), pos_host.size() * 8, cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(q.ptr, q_host.data(), q_host.size() * sizeof(E), cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(k.ptr, k_host.data(), k_host.size() * sizeof(E), cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(cache.ptr, cache_host.data(), cache_host.size() * 4, cudaMemcpyHostToDevice, stream));
    return ktune::Status::success();
  }

  op::Args<E> args() const {
    op::Args<E> a;
    a.positions = pos.ptr;
    a.query = q.ptr + c.offset;
    a.key = k.ptr + c.offset;
    a.head_size = c.head_size;
    a.cos_sin_cache = cache.ptr + c.cache_offset;
    a.is_neox = c.is_neox;
    a.tokens = c.tokens;
    a.q_heads = c.q_heads;
    a.kv_heads = c.kv_heads;
    a.rotary_dim = c.rotary_dim;
    a.max_pos = c.max_pos;
    a.query_stride = qs;
    a.key_stride = ks;
    return a;
  }

  struct Result {
    std::vector<E> q, k;
  };
  ktune::Status download(cudaStream_t stream, Result& r) {
    r.q.resize(q_host.size());
    r.k.resize(k_host.size());
    KTUNE_CUDA_TRY(cudaMemcpyAsync(r.q.data(), q.ptr, r.q.size() * sizeof(E), cudaMemcpyDeviceToHost, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(r.k.data(), k.ptr, r.k.size() * sizeof(E), cudaMemcpyDeviceToHost, stream));
    KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
    return ktune::Status::success();
  }

  /// The tensor's rows gathered contiguously; false when an element around the tensor lost its poison.
  bool rows(const std::vector<E>& buf, std::int64_t stride, std::int64_t row, std::vector<E>& out) const {
    out.resize(static_cast<std::size_t>(c.tokens * row));
    for (std::int64_t j = 0; j < static_cast<std::int64_t>(buf.size()); ++j) {
      const E x = buf[static_cast<std::size_t>(j)];
      if (inside(j, stride, row)) {
        const std::int64_t rel = j - c.offset, t = rel / stride;
        out[static_cast<std::size_t>(t * row + rel - t * stride)] = x;
      } else if (!ktune::is_poison(x)) {
        return false;
      }
    }
    return true;
  }

  /// Against `ref_q`/`ref_k` (the float64 reference), or against another run's rows (S's).
  ::testing::AssertionResult check(const Result& r, const std::vector<double>& want_q, const std::vector<double>& want_k) const {
    std::vector<E> gq, gk;
    if (!rows(r.q, qs, q_row, gq)) return ::testing::AssertionFailure() << "an element around query was written";
    if (!rows(r.k, ks, k_row, gk)) return ::testing::AssertionFailure() << "an element around key was written";
    const ktune::Tolerance tol = ktune::default_tolerance(ktune::dtype_v<E>);
    const auto cq = ktune::compare(gq.data(), want_q.data(), gq.size(), tol);
    if (!cq.passed) return ::testing::AssertionFailure() << "query: " << cq.summary();
    const auto ck = ktune::compare(gk.data(), want_k.data(), gk.size(), tol);
    if (!ck.passed) return ::testing::AssertionFailure() << "key: " << ck.summary();
    return ::testing::AssertionSuccess();
  }
  ::testing::AssertionResult check(const Result& r) const { return check(r, ref_q, ref_k); }

  /// A run's rows as float64, to compare other runs with (S as the baseline).
  void as_reference(const Result& r, std::vector<double>& out_q, std::vector<double>& out_k) const {
    std::vector<E> gq, gk;
    rows(r.q, qs, q_row, gq);
    rows(r.k, ks, k_row, gk);
    out_q.resize(gq.size());
    out_k.resize(gk.size());
    for (std::size_t i = 0; i < gq.size(); ++i) out_q[i] = ktune::to_float(gq[i]);
    for (std::size_t i = 0; i < gk.size(); ++i) out_k[i] = ktune::to_float(gk[i]);
  }
};

template <class E>
bool bitwise_equal(const typename Problem<E>::Result& a, const typename Problem<E>::Result& b) {
  return a.q.size() == b.q.size() && a.k.size() == b.k.size() &&
         std::memcmp(a.q.data(), b.q.data(), a.q.size() * sizeof(E)) == 0 &&
         std::memcmp(a.k.data(), b.k.data(), a.k.size() * sizeof(E)) == 0;
}

std::string trace(const Case& c, DType d) {
  return std::string("case ") + c.name + " dtype " + ktune::name(d) + " seed " + std::to_string(test_seed()) +
         " (set KTUNE_TEST_SEED to repeat)";
}

/// Runs `ids` (all registered variants when empty) on every case in `which`: upload, run, check against
/// the reference and (where S takes the case) against S; run again and compare bitwise. Returns how many
/// (variant, case) runs happened.
template <class E>
int check_variants(const std::vector<Case>& which, const std::vector<std::string>& ids) {
  const DType dt = ktune::dtype_v<E>;
  const auto variants = ktune::Registry::global().select(op_name, dt, 90);
  Stream stream;
  EXPECT_NE(stream.s, nullptr);
  int runs = 0;
  for (const Case& c : which) {
    SCOPED_TRACE(trace(c, dt));
    Problem<E> pb(c, test_seed() ^ std::hash<std::string>{}(c.name));
    if (!pb.allocated()) {
      ADD_FAILURE() << "cudaMalloc failed";
      return runs;
    }
    const op::Args<E> a = pb.args();
    // S's result first, when S takes the case: every variant is compared with it too.
    std::vector<double> s_q, s_k;
    if (op::original::can_implement(a).ok()) {
      typename Problem<E>::Result s;
      KTUNE_EXPECT_OK(pb.upload(stream.s));
      KTUNE_EXPECT_OK(op::original::run(a, stream.s));
      KTUNE_EXPECT_OK(pb.download(stream.s, s));
      EXPECT_TRUE(pb.check(s)) << "S against the reference";
      pb.as_reference(s, s_q, s_k);
    }
    int accepted = 0;
    bool unaligned_ran = false;
    const auto unaligned = op::Space::unaligned_point(static_cast<int>(sizeof(E)));
    for (const ktune::Variant* v : variants) {
      if (!ids.empty() && std::find(ids.begin(), ids.end(), v->id) == ids.end()) continue;
      if (!v->can_implement(&a).ok()) continue;
      SCOPED_TRACE("variant " + v->id);
      ++accepted;
      if (v->point == std::vector<int>(unaligned.begin(), unaligned.end())) unaligned_ran = true;
      typename Problem<E>::Result first, second;
      KTUNE_EXPECT_OK(pb.upload(stream.s));
      KTUNE_EXPECT_OK(v->run(&a, stream.s));
      KTUNE_EXPECT_OK(pb.download(stream.s, first));
      EXPECT_TRUE(pb.check(first));
      if (!s_q.empty() && !v->is_original()) EXPECT_TRUE(pb.check(first, s_q, s_k)) << "against S";
      KTUNE_EXPECT_OK(pb.upload(stream.s));
      KTUNE_EXPECT_OK(v->run(&a, stream.s));
      KTUNE_EXPECT_OK(pb.download(stream.s, second));
      EXPECT_TRUE(bitwise_equal<E>(first, second)) << "two runs of the same variant differ";
      ++runs;
    }
    EXPECT_GT(accepted, 0) << "no variant accepted the case";
    if (ids.empty()) EXPECT_TRUE(unaligned_ran) << "the unaligned configuration must accept every valid input";
  }
  return runs;
}

template <class E>
void check_registry() {
  const DType dt = ktune::dtype_v<E>;
  const auto variants = ktune::Registry::global().select(op_name, dt, 90);
  ASSERT_FALSE(variants.empty()) << "no " << op_name << " variants registered for " << ktune::name(dt);
  EXPECT_TRUE(variants.front()->is_original());
  using Set = ktune::FeasibleSet<op::Space, 90, static_cast<int>(sizeof(E))>;
  EXPECT_LE(variants.size(), Set::count + 1);
  for (const ktune::Variant* v : variants) {
    if (v->is_original()) continue;
    const auto parsed = op::Space::space.parse(v->id);
    ASSERT_TRUE(parsed.ok) << v->id;
    EXPECT_TRUE(op::Space::feasible(parsed.point, ktune::arch_limits(90), sizeof(E)).ok()) << v->id;
  }
  for (const auto& pt : {op::Space::default_point, op::Space::unaligned_point(sizeof(E))})
    EXPECT_NE(ktune::Registry::global().find(op_name, dt, 90, op::Space::space.id(pt)), nullptr) << op::Space::space.id(pt);
}

// ---- every variant ------------------------------------------------------------------------------

TEST(RotaryEmbeddingGpu, RegistryHoldsTheFeasibleVariants) {
  KTUNE_REQUIRE_GPU();
  check_registry<float>();
  check_registry<__half>();
  check_registry<__nv_bfloat16>();
}

/// The op's DevicePreparation (kernels/rotary_embedding/device_preparation.cuh), which the benchmark uses instead
/// of the host's: no tokens, one token, GPT-J's pairs, a head longer than its rotation, rows past 65,535, the
/// spec's most heads.
TEST(RotaryEmbeddingGpu, DevicePreparationIsTheHosts) {
  KTUNE_REQUIRE_GPU();
  std::vector<ktune::Shape> shapes;
  auto add = [&](std::int64_t tokens, std::int64_t q_heads, std::int64_t kv_heads, std::int64_t head_size,
                 std::int64_t rotary_dim, bool is_neox) {
    shapes.push_back(ktune::Shape{{{"tokens", tokens}, {"q_heads", q_heads}, {"kv_heads", kv_heads}, {"head_size", head_size},
                                   {"rotary_dim", rotary_dim}},
                                  {{"is_neox", is_neox ? 1.0 : 0.0}}});
  };
  add(0, 32, 8, 128, 128, true);
  add(1, 2, 1, 128, 128, true);
  add(5, 3, 1, 128, 128, false);
  add(7, 4, 2, 256, 64, true);
  add(7, 4, 2, 256, 64, false);
  add(70000, 1, 1, 8, 8, true);
  add(2, 64, 8, 128, 128, true);
  ktune::test::expect_device_preparation_is_the_hosts("rotary_embedding", shapes);
}

TEST(RotaryEmbeddingGpu, EveryVariantFp32) {
  KTUNE_REQUIRE_GPU();
  check_variants<float>(cases(), {});
}
TEST(RotaryEmbeddingGpu, EveryVariantFp16) {
  KTUNE_REQUIRE_GPU();
  check_variants<__half>(cases(), {});
}
TEST(RotaryEmbeddingGpu, EveryVariantBf16) {
  KTUNE_REQUIRE_GPU();
  check_variants<__nv_bfloat16>(cases(), {});
}

// S is the baseline of every comparison: it must run (and pass) on the spec's layouts in both pairings,
// through both of its kernels (one token: head-parallel; 8192 tokens fill a wave: sequential).
TEST(RotaryEmbeddingGpu, OriginalRunsOnItsShapes) {
  KTUNE_REQUIRE_GPU();
  const std::vector<Case> spec_like = {{"spec_T1", 1, 32, 8, 128, 128, 1},
                                       {"spec_T16_gptj", 16, 40, 8, 128, 128, 16, false},
                                       {"spec_T8192", 8192, 64, 8, 128, 128, 8192},
                                       {"spec_T8192_gptj", 8192, 32, 8, 128, 128, 8192, false}};
  for (const Case& c : spec_like) {
    Problem<__half> pb(c, 1);
    const void* kernel = op::original::resources(pb.args()).func;
    EXPECT_NE(kernel, nullptr) << c.name;
  }
  EXPECT_EQ(check_variants<__half>(spec_like, {"original"}), 4);
  EXPECT_EQ(check_variants<__nv_bfloat16>(spec_like, {"original"}), 4);
}

TEST(SanitizerSample, RotaryEmbedding) {
  KTUNE_REQUIRE_GPU();
  const std::vector<Case> sample = {{"sample", 5, 4, 2, 64, 64, 7}, {"sample_gptj", 5, 4, 2, 64, 64, 7, false}};
  const std::vector<std::string> common = {"original", "tpb_256.vb_16.hpt_2.pdl_0", "tpb_512.vb_8.hpt_8.pdl_1"};
  auto with = [&](const char* unaligned) {
    auto ids = common;
    ids.push_back(unaligned);
    return ids;
  };
  EXPECT_EQ(check_variants<float>(sample, with("tpb_256.vb_4.hpt_2.pdl_0")), 8);
  EXPECT_EQ(check_variants<__half>(sample, with("tpb_256.vb_2.hpt_4.pdl_0")), 8);
  EXPECT_EQ(check_variants<__nv_bfloat16>(sample, with("tpb_256.vb_2.hpt_4.pdl_0")), 8);
}

// ---- the public API -----------------------------------------------------------------------------

template <class E>
ktune::Status call_api(const op::Args<E>& a, cudaStream_t stream, bool explicit_strides = true) {
  if (!explicit_strides)
    return ktune::rotary_embedding(a.positions, a.query, a.key, a.head_size, a.cos_sin_cache, a.is_neox, a.tokens,
                                   a.q_heads, a.kv_heads, a.rotary_dim, a.max_pos, stream);
  return ktune::rotary_embedding(a.positions, a.query, a.key, a.head_size, a.cos_sin_cache, a.is_neox, a.tokens,
                                 a.q_heads, a.kv_heads, a.rotary_dim, a.max_pos, stream, a.query_stride, a.key_stride);
}

template <class E>
void api_every_case() {
  const DType dt = ktune::dtype_v<E>;
  Stream stream;
  for (const Case& c : cases()) {
    SCOPED_TRACE(trace(c, dt));
    Problem<E> pb(c, test_seed() ^ 0xA91 ^ std::hash<std::string>{}(c.name));
    ASSERT_TRUE(pb.allocated());
    const op::Args<E> a = pb.args();
    typename Problem<E>::Result typed, dynamic;
    KTUNE_ASSERT_OK(pb.upload(stream.s));
    KTUNE_ASSERT_OK(call_api(a, stream.s, c.q_stride || c.k_stride));
    KTUNE_ASSERT_OK(pb.download(stream.s, typed));
    EXPECT_TRUE(pb.check(typed));
    // The runtime-dtype entry runs the same variant: bitwise the same result.
    KTUNE_ASSERT_OK(pb.upload(stream.s));
    KTUNE_ASSERT_OK(ktune::rotary_embedding(dt, a.positions, a.query, a.key, a.head_size, a.cos_sin_cache, a.is_neox,
                                            a.tokens, a.q_heads, a.kv_heads, a.rotary_dim, a.max_pos, stream.s,
                                            a.query_stride, a.key_stride));
    KTUNE_ASSERT_OK(pb.download(stream.s, dynamic));
    EXPECT_TRUE(bitwise_equal<E>(typed, dynamic));
  }
}

TEST(RotaryEmbeddingApi, EveryCaseEveryDtype) {
  KTUNE_REQUIRE_GPU();
  api_every_case<float>();
  api_every_case<__half>();
  api_every_case<__nv_bfloat16>();
}

// A position outside [0, max_pos) is no valid call; the API leaves that token as it is and reads nothing
// past the cache (the other tokens are rotated as usual).
TEST(RotaryEmbeddingApi, PositionsOutsideTheCacheLeaveTheirTokenUntouched) {
  KTUNE_REQUIRE_GPU();
  Stream stream;
  Problem<__half> pb({"bad_positions", 4, 4, 2, 64, 64, 8}, test_seed() ^ 0xBAD);
  ASSERT_TRUE(pb.allocated());
  pb.pos_host = {0, 8, -1, 7};
  op::reference(pb.pos_host.data(), pb.q_host.data(), pb.k_host.data(), 64, pb.cache_host.data(), true, 4, 4, 2, 64, 8,
                pb.qs, pb.ks, pb.ref_q.data(), pb.ref_k.data());
  KTUNE_ASSERT_OK(pb.upload(stream.s));
  KTUNE_ASSERT_OK(call_api(pb.args(), stream.s));
  typename Problem<__half>::Result r;
  KTUNE_ASSERT_OK(pb.download(stream.s, r));
  EXPECT_TRUE(pb.check(r));
  for (std::int64_t i = 4 * 64; i < 3 * 4 * 64; ++i) EXPECT_EQ(ktune::bits_of(r.q[i]), ktune::bits_of(pb.q_host[i])) << i;
}

template <class E>
void api_refuses_bad_input() {
  Stream stream;
  Problem<E> pb({"bad_input", 4, 8, 2, 64, 64, 16}, test_seed());
  ASSERT_TRUE(pb.allocated());
  KTUNE_ASSERT_OK(pb.upload(stream.s));
  const op::Args<E> good = pb.args();
  auto expect_refused = [&](op::Args<E> a, ktune::StatusCode code, const char* what) {
    const ktune::Status st = call_api(a, stream.s);
    EXPECT_EQ(st.code, code) << what << ": " << st.message;
  };
  using ktune::StatusCode;
  auto a = good;
  a.positions = nullptr;
  expect_refused(a, StatusCode::invalid_argument, "null positions");
  a = good;
  a.cos_sin_cache = nullptr;
  expect_refused(a, StatusCode::invalid_argument, "null cache");
  a = good;
  a.key = nullptr;
  expect_refused(a, StatusCode::invalid_argument, "null key");
  a = good;
  a.tokens = -1;
  expect_refused(a, StatusCode::invalid_argument, "negative tokens");
  a = good;
  a.rotary_dim = 63;
  expect_refused(a, StatusCode::invalid_argument, "odd rotary_dim");
  a = good;
  a.rotary_dim = 66;
  expect_refused(a, StatusCode::invalid_argument, "rotary_dim above head_size");
  a = good;
  a.query_stride = 8 * 64 - 1;
  expect_refused(a, StatusCode::invalid_argument, "short query stride");
  a = good;
  a.key = reinterpret_cast<E*>(reinterpret_cast<char*>(good.key) + 1);
  expect_refused(a, StatusCode::invalid_argument, "key misaligned to its element");
  a = good;
  a.key = a.query;
  expect_refused(a, StatusCode::invalid_argument, "key is query");
  const ktune::Status st = ktune::rotary_embedding(static_cast<DType>(7), good.positions, good.query, good.key, 64,
                                                   good.cos_sin_cache, true, 4, 8, 2, 64, 16, stream.s);
  EXPECT_EQ(st.code, StatusCode::unsupported);
  // T = 0: a no-op, with valid and with null pointers.
  a = good;
  a.tokens = 0;
  KTUNE_EXPECT_OK(call_api(a, stream.s));
  KTUNE_EXPECT_OK(ktune::rotary_embedding<E>(nullptr, nullptr, nullptr, 64, nullptr, true, 0, 8, 2, 64, 16, stream.s));
  // Nothing was written by any of the refused calls: q and k hold the drawn inputs, bit for bit.
  typename Problem<E>::Result r;
  KTUNE_ASSERT_OK(pb.download(stream.s, r));
  EXPECT_EQ(std::memcmp(r.q.data(), pb.q_host.data(), r.q.size() * sizeof(E)), 0) << "a refused call wrote query";
  EXPECT_EQ(std::memcmp(r.k.data(), pb.k_host.data(), r.k.size() * sizeof(E)), 0) << "a refused call wrote key";
}

TEST(RotaryEmbeddingApi, RefusesBadInputAndWritesNothing) {
  KTUNE_REQUIRE_GPU();
  api_refuses_bad_input<float>();
  api_refuses_bad_input<__half>();
  api_refuses_bad_input<__nv_bfloat16>();
}

// The choice names the tuned row for this device when the table has one, else the general configuration.
TEST(RotaryEmbeddingApi, ChoiceNamesTheTunedRowOrTheGeneralConfiguration) {
  KTUNE_REQUIRE_GPU();
  const ktune::DeviceInfo* dev = nullptr;
  KTUNE_ASSERT_OK(ktune::current_device(dev));
  for (DType dt : ktune::all_dtypes) {
    ktune::TunedChoice c;
    KTUNE_ASSERT_OK(ktune::rotary_embedding_choice(dt, 128, 32, c));
    const ktune::TunedChoice want = ktune::lookup(op::tuned::entries, dev->table_arch, dev->name, dt, 128, 32);
    EXPECT_EQ(c.variant, want.variant);
    EXPECT_EQ(c.source, want.source);
    ASSERT_NE(c.id, nullptr);
    if (c.variant < 0) EXPECT_STREQ(c.id, op::tuned::general_id);
    else EXPECT_TRUE(op::Space::space.parse(c.id).ok) << c.id;
  }
}

// Captured into a CUDA graph and replayed: bitwise the result of a direct call, on every replay.
template <class E>
void graph_replay(const Case& c) {
  SCOPED_TRACE(trace(c, ktune::dtype_v<E>));
  Stream stream;
  Problem<E> pb(c, test_seed() ^ 0x6A9);
  ASSERT_TRUE(pb.allocated());
  const op::Args<E> a = pb.args();
  typename Problem<E>::Result direct, replayed;
  KTUNE_ASSERT_OK(pb.upload(stream.s));
  KTUNE_ASSERT_OK(call_api(a, stream.s));
  KTUNE_ASSERT_OK(pb.download(stream.s, direct));
  ASSERT_TRUE(pb.check(direct));

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  KTUNE_ASSERT_CUDA(cudaStreamBeginCapture(stream.s, cudaStreamCaptureModeThreadLocal));
  const ktune::Status captured = call_api(a, stream.s);
  const cudaError_t ended = cudaStreamEndCapture(stream.s, &graph);
  KTUNE_ASSERT_OK(captured);
  KTUNE_ASSERT_CUDA(ended);
  KTUNE_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    KTUNE_ASSERT_OK(pb.upload(stream.s));
    KTUNE_ASSERT_CUDA(cudaGraphLaunch(exec, stream.s));
    KTUNE_ASSERT_OK(pb.download(stream.s, replayed));
    EXPECT_TRUE(bitwise_equal<E>(direct, replayed)) << "replay " << replay;
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST(RotaryEmbeddingApi, GraphCaptureAndReplay) {
  KTUNE_REQUIRE_GPU();
  const Case aligned{"graph_aligned", 16, 32, 8, 128, 128, 4096};
  const Case fallback{"graph_fallback", 5, 3, 1, 37, 22, 9, false, 0, 0, 1, 1};
  graph_replay<__half>(aligned);
  graph_replay<__nv_bfloat16>(aligned);
  graph_replay<float>(aligned);
  graph_replay<__half>(fallback);
}

// Two API calls on the same input: bitwise the same output.
TEST(RotaryEmbeddingApi, Deterministic) {
  KTUNE_REQUIRE_GPU();
  Stream stream;
  Problem<__nv_bfloat16> pb({"determinism", 2048, 32, 8, 128, 128, 4096}, test_seed() ^ 0xDE7);
  ASSERT_TRUE(pb.allocated());
  typename Problem<__nv_bfloat16>::Result one, two;
  KTUNE_ASSERT_OK(pb.upload(stream.s));
  KTUNE_ASSERT_OK(call_api(pb.args(), stream.s));
  KTUNE_ASSERT_OK(pb.download(stream.s, one));
  EXPECT_TRUE(pb.check(one));
  KTUNE_ASSERT_OK(pb.upload(stream.s));
  KTUNE_ASSERT_OK(call_api(pb.args(), stream.s));
  KTUNE_ASSERT_OK(pb.download(stream.s, two));
  EXPECT_TRUE(bitwise_equal<__nv_bfloat16>(one, two));
}

}  // namespace
