// GPU tests of rotary_embedding_set_kv: every registered variant (and S) x dtype x pairing against the float64
// reference and, where S takes the case, bitwise against S; the public API (fallbacks, bad inputs that write
// nothing, slots out of range, T = 0, graph capture, determinism); the GPU's preparation of a group.
//
// Each case lays its tensors out in two allocations, every element that belongs to no tensor poisoned: one
// holds query, key and value (three blocks, or the slices of one packed qkv row), the other the KV cache
// (k_buffer and v_buffer as blocks, or interleaved in one slot of [2, kv_heads, head_size]; slot strides with
// gaps). The cache has more slots than tokens and cache_loc is a random injection into them. After a call,
// every element is checked: q and k and the slots the tokens store into against the reference (tolerance);
// everything else, the poisoned gaps, value, and the slots no token writes, bit for bit as uploaded. The
// inputs are drawn so that every stored element differs from what it overwrites (harness.hpp).
//
// Sanitizer sample (one small case per pairing, every dtype, each variant once):
//   original, tpb_256.vb_16.hpt_2.pdl_0 (default), tpb_512.vb_4.hpt_8.pdl_1, the unaligned fallback
//   compute-sanitizer --tool memcheck  ktune_gpu_tests --gtest_filter='SanitizerSample.RotaryEmbeddingSetKv'
//   compute-sanitizer --tool racecheck ktune_gpu_tests --gtest_filter='SanitizerSample.RotaryEmbeddingSetKv'
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

#include "kernels/rotary_embedding_set_kv/harness.hpp"
#include "kernels/rotary_embedding_set_kv/reference.hpp"
#include "kernels/rotary_embedding_set_kv/rotary_embedding_set_kv.cuh"
#include "support/device_preparation_gpu.hpp"
#include "support/gpu.hpp"

namespace {

using ktune::test::DeviceBuffer;
using ktune::test::Stream;
using ktune::test::test_seed;

namespace op = ktune::ops::rotary_embedding_set_kv;
using ktune::DType;

constexpr const char* op_name = "rotary_embedding_set_kv";

struct Case {
  const char* name;
  std::int64_t tokens, q_heads, kv_heads, head_size, rotary_dim, max_pos, cache_rows;
  bool is_neox = true;
  bool packed_qkv = false;      // query, key, value: slices of one [tokens, q + 2 kv heads (+ gap)] buffer
  bool interleaved_kv = false;  // k_buffer and v_buffer: halves of one slot
  std::int64_t gap = 0;         // poisoned elements after each row of a tensor (token and slot strides)
  std::int64_t offset = 0;      // every tensor starts this many elements into its place
  float k_scale = 1.f, v_scale = 1.f;
};

// Spec-like layouts in both pairings; DeepSeek-like 64-wide heads with one key head; partial rotary dims (k's
// tail copied into the cache, q's left alone); odd sizes no vector divides; slices of a packed qkv buffer;
// interleaved and strided KV caches; pointers aligned only to their element; scales (SGLang's older k_scale /
// v_scale); head sizes 256 and 512 (S's other instantiations); more tokens than grid.y's 65535.
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"llama3_8b_T1", 1, 32, 8, 128, 128, 4096, 64},
      {"qwen25_T16_gptj", 16, 40, 8, 128, 128, 4096, 100, false},
      {"llama3_70b_T9", 9, 64, 8, 128, 128, 9, 18},
      {"deepseek_like_gptj", 5, 16, 1, 64, 64, 64, 11, false},
      {"partial_rotary", 7, 4, 2, 128, 64, 33, 20},
      {"partial_rotary_gptj", 7, 4, 2, 128, 32, 33, 9, false},
      {"odd_sizes", 3, 5, 3, 37, 22, 9, 7},
      {"odd_sizes_gptj", 3, 5, 3, 37, 22, 9, 4, false},
      {"qkv_slices", 6, 8, 2, 64, 64, 100, 13, true, true},
      {"qkv_slices_gptj_gaps", 6, 8, 2, 64, 64, 100, 13, false, true, true, 8},
      {"strided_cache", 4, 3, 1, 64, 64, 17, 9, true, false, false, 24},
      {"offset_pointers", 4, 3, 1, 64, 64, 17, 6, true, false, true, 3, 1},
      {"scales", 9, 8, 2, 128, 128, 64, 20, true, false, false, 0, 0, 0.5f, 2.f},
      {"scales_packed_gptj", 9, 8, 2, 128, 128, 64, 12, false, true, true, 0, 0, 0.25f, 0.5f},
      {"head_256", 3, 4, 2, 256, 128, 12, 8},
      {"head_512_gptj", 3, 4, 2, 512, 512, 12, 5, false},
      {"tokens_beyond_grid_y", 70000, 1, 1, 64, 64, 70000, 70001},
  };
  return c;
}

constexpr std::int64_t slack = 16;  // poisoned elements before and after each allocation's tensors

/// One allocation: its uploaded contents, and per element whether a call may change it and to what.
template <class E>
struct Region {
  std::vector<E> init;
  std::vector<double> want;  // the reference, where `checked`
  std::vector<char> checked;  // 1: compared with `want` within the tolerance; 0: must keep `init`'s bits
  DeviceBuffer<E> dev;
  explicit Region(std::int64_t n)
      : init(static_cast<std::size_t>(n), ktune::from_bits<E>(ktune::poison_bits<E>())),
        want(static_cast<std::size_t>(n), 0.0),
        checked(static_cast<std::size_t>(n), 0),
        dev(static_cast<std::size_t>(n)) {}
};

template <class E>
struct Problem {
  Case c;
  std::int64_t q_row, k_row;
  std::int64_t qs, ks, vs, kbs, vbs;  // strides
  std::int64_t q_at, k_at, v_at, kb_at, vb_at;  // offsets into the regions
  Region<E> qkv, kv;
  std::vector<std::int64_t> pos_host, loc_host;
  std::vector<float> cache_host;
  DeviceBuffer<std::int64_t> pos, loc;
  DeviceBuffer<float> cache;

  static std::int64_t qkv_size(const Case& x) {
    const std::int64_t q = x.q_heads * x.head_size, k = x.kv_heads * x.head_size;
    return x.packed_qkv ? 2 * slack + x.offset + x.tokens * (q + 2 * k + x.gap)
                        : 2 * slack + x.offset + x.tokens * (q + 2 * k + 3 * x.gap) + 2 * slack;
  }
  static std::int64_t kv_size(const Case& x) {
    const std::int64_t k = x.kv_heads * x.head_size;
    return x.interleaved_kv ? 2 * slack + x.offset + x.cache_rows * (2 * k + x.gap)
                            : 2 * slack + x.offset + 2 * x.cache_rows * (k + x.gap) + slack;
  }

  Problem(const Case& x, std::uint64_t seed)
      : c(x),
        q_row(x.q_heads * x.head_size),
        k_row(x.kv_heads * x.head_size),
        qkv(qkv_size(x)),
        kv(kv_size(x)),
        pos(static_cast<std::size_t>(x.tokens)),
        loc(static_cast<std::size_t>(x.tokens)),
        cache(static_cast<std::size_t>(x.max_pos * x.rotary_dim)) {  // exact: a read past the last row leaves it
    if (c.packed_qkv) {
      qs = ks = vs = q_row + 2 * k_row + c.gap;
      q_at = slack + c.offset;
      k_at = q_at + q_row;
      v_at = k_at + k_row;
    } else {
      qs = q_row + c.gap;
      ks = vs = k_row + c.gap;
      q_at = slack + c.offset;
      k_at = q_at + c.tokens * qs + slack;
      v_at = k_at + c.tokens * ks;
    }
    if (c.interleaved_kv) {
      kbs = vbs = 2 * k_row + c.gap;
      kb_at = slack + c.offset;
      vb_at = kb_at + k_row;
    } else {
      kbs = vbs = k_row + c.gap;
      kb_at = slack + c.offset;
      vb_at = kb_at + c.cache_rows * kbs + slack;
    }
    fill(seed);
  }

  bool allocated() const { return qkv.dev.ptr && kv.dev.ptr && pos.ptr && loc.ptr && cache.ptr; }

  template <class F>
  void each(std::int64_t at, std::int64_t rows, std::int64_t stride, std::int64_t row, F&& f) const {
    for (std::int64_t t = 0; t < rows; ++t)
      for (std::int64_t i = 0; i < row; ++i) f(at + t * stride + i, t, i);
  }

  void fill(std::uint64_t seed) {
    pos_host = op::draw_positions(c.tokens, c.max_pos, ktune::mix64(seed ^ 0x51));
    loc_host = op::draw_cache_loc(c.tokens, c.cache_rows, ktune::mix64(seed ^ 0x52));
    auto draw = [&](Region<E>& r, std::int64_t at, std::int64_t rows, std::int64_t stride, std::int64_t row,
                    std::uint64_t s, bool slot) {
      each(at, rows, stride, row, [&](std::int64_t j, std::int64_t t, std::int64_t i) {
        const auto e = static_cast<std::uint64_t>(t * row + i);
        r.init[static_cast<std::size_t>(j)] = ktune::from_float<E>(slot ? op::slot_value(s, e) : op::head_value(s, e));
      });
    };
    draw(qkv, q_at, c.tokens, qs, q_row, ktune::mix64(seed ^ 0x11), false);
    draw(qkv, k_at, c.tokens, ks, k_row, ktune::mix64(seed ^ 0x22), false);
    draw(qkv, v_at, c.tokens, vs, k_row, ktune::mix64(seed ^ 0x23), false);
    draw(kv, kb_at, c.cache_rows, kbs, k_row, ktune::mix64(seed ^ 0x24), true);
    draw(kv, vb_at, c.cache_rows, vbs, k_row, ktune::mix64(seed ^ 0x25), true);
    cache_host.resize(static_cast<std::size_t>(c.max_pos * c.rotary_dim));
    const std::uint64_t sc = ktune::mix64(seed ^ 0x33);
    for (std::size_t i = 0; i < cache_host.size(); ++i) cache_host[i] = op::cache_value(sc, c.rotary_dim, i);
    compute_reference();
  }

  /// The float64 reference of every element a call changes (from the host copies), marked `checked`.
  void compute_reference() {
    std::vector<double> rq(static_cast<std::size_t>(c.tokens * q_row)), rk(static_cast<std::size_t>(c.tokens * k_row));
    std::vector<double> rkb(static_cast<std::size_t>(c.cache_rows * k_row)), rvb(rkb.size());
    op::reference(pos_host.data(), qkv.init.data() + q_at, qkv.init.data() + k_at, c.head_size, cache_host.data(),
                  c.is_neox, qkv.init.data() + v_at, kv.init.data() + kb_at, kv.init.data() + vb_at, c.k_scale, c.v_scale,
                  loc_host.data(), c.tokens, c.q_heads, c.kv_heads, c.rotary_dim, c.max_pos, c.cache_rows, qs, ks, vs,
                  kbs, vbs, rq.data(), rk.data(), rkb.data(), rvb.data());
    std::fill(qkv.checked.begin(), qkv.checked.end(), 0);
    std::fill(kv.checked.begin(), kv.checked.end(), 0);
    auto mark = [&](Region<E>& r, std::int64_t at, std::int64_t rows, std::int64_t stride, std::int64_t row,
                    const std::vector<double>& ref, const std::vector<char>* which) {
      each(at, rows, stride, row, [&](std::int64_t j, std::int64_t t, std::int64_t i) {
        if (which && !(*which)[static_cast<std::size_t>(t)]) return;
        r.checked[static_cast<std::size_t>(j)] = 1;
        r.want[static_cast<std::size_t>(j)] = ref[static_cast<std::size_t>(t * row + i)];
      });
    };
    mark(qkv, q_at, c.tokens, qs, q_row, rq, nullptr);
    mark(qkv, k_at, c.tokens, ks, k_row, rk, nullptr);
    std::vector<char> written(static_cast<std::size_t>(c.cache_rows), 0);
    for (std::int64_t s : loc_host)
      if (s >= 0 && s < c.cache_rows) written[static_cast<std::size_t>(s)] = 1;
    mark(kv, kb_at, c.cache_rows, kbs, k_row, rkb, &written);
    mark(kv, vb_at, c.cache_rows, vbs, k_row, rvb, &written);
  }

  ktune::Status upload(cudaStream_t stream) {
    KTUNE_CUDA_TRY(cudaMemcpyAsync(pos.ptr, pos_host.data(), pos_host.size() * 8, cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(loc.ptr, loc_host.data(), loc_host.size() * 8, cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(cache.ptr, cache_host.data(), cache_host.size() * 4, cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(qkv.dev.ptr, qkv.init.data(), qkv.init.size() * sizeof(E), cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(kv.dev.ptr, kv.init.data(), kv.init.size() * sizeof(E), cudaMemcpyHostToDevice, stream));
    return ktune::Status::success();
  }

  op::Args<E> args() const {
    op::Args<E> a;
    a.positions = pos.ptr;
    a.query = qkv.dev.ptr + q_at;
    a.key = qkv.dev.ptr + k_at;
    a.head_size = c.head_size;
    a.cos_sin_cache = cache.ptr;
    a.is_neox = c.is_neox;
    a.value = qkv.dev.ptr + v_at;
    a.k_buffer = kv.dev.ptr + kb_at;
    a.v_buffer = kv.dev.ptr + vb_at;
    a.k_scale = c.k_scale;
    a.v_scale = c.v_scale;
    a.cache_loc = loc.ptr;
    a.tokens = c.tokens;
    a.q_heads = c.q_heads;
    a.kv_heads = c.kv_heads;
    a.rotary_dim = c.rotary_dim;
    a.max_pos = c.max_pos;
    a.cache_rows = c.cache_rows;
    a.query_stride = qs;
    a.key_stride = ks;
    a.value_stride = vs;
    a.k_buffer_stride = kbs;
    a.v_buffer_stride = vbs;
    return a;
  }

  struct Result {
    std::vector<E> qkv, kv;
  };
  ktune::Status download(cudaStream_t stream, Result& r) {
    r.qkv.resize(qkv.init.size());
    r.kv.resize(kv.init.size());
    KTUNE_CUDA_TRY(cudaMemcpyAsync(r.qkv.data(), qkv.dev.ptr, r.qkv.size() * sizeof(E), cudaMemcpyDeviceToHost, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(r.kv.data(), kv.dev.ptr, r.kv.size() * sizeof(E), cudaMemcpyDeviceToHost, stream));
    KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
    return ktune::Status::success();
  }

  static ::testing::AssertionResult check_region(const Region<E>& r, const std::vector<E>& got, const char* what) {
    std::vector<E> g;
    std::vector<double> w;
    for (std::size_t j = 0; j < got.size(); ++j) {
      if (r.checked[j]) {
        g.push_back(got[j]);
        w.push_back(r.want[j]);
      } else if (ktune::bits_of(got[j]) != ktune::bits_of(r.init[j])) {
        return ::testing::AssertionFailure() << what << ": element " << j
                                             << " changed, which no call may write (a gap, value, or a slot no token stores into)";
      }
    }
    const auto cmp = ktune::compare(g.data(), w.data(), g.size(), ktune::default_tolerance(ktune::dtype_v<E>));
    if (!cmp.passed) return ::testing::AssertionFailure() << what << ": " << cmp.summary();
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult check(const Result& r) const {
    if (auto a = check_region(qkv, r.qkv, "query/key/value"); !a) return a;
    return check_region(kv, r.kv, "k_buffer/v_buffer");
  }
};

template <class E>
bool bitwise_equal(const typename Problem<E>::Result& a, const typename Problem<E>::Result& b) {
  return a.qkv.size() == b.qkv.size() && a.kv.size() == b.kv.size() &&
         std::memcmp(a.qkv.data(), b.qkv.data(), a.qkv.size() * sizeof(E)) == 0 &&
         std::memcmp(a.kv.data(), b.kv.data(), a.kv.size() * sizeof(E)) == 0;
}

std::string trace(const Case& c, DType d) {
  return std::string("case ") + c.name + " dtype " + ktune::name(d) + " seed " + std::to_string(test_seed()) +
         " (set KTUNE_TEST_SEED to repeat)";
}

/// Runs `ids` (all registered variants when empty) on every case in `which`: upload, run, check against the
/// reference and, where S takes the case, bitwise against S; run again and compare bitwise. Returns the runs.
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
    typename Problem<E>::Result s;
    const bool s_ran = op::original::can_implement(a).ok();
    if (s_ran) {
      KTUNE_EXPECT_OK(pb.upload(stream.s));
      KTUNE_EXPECT_OK(op::original::run(a, stream.s));
      KTUNE_EXPECT_OK(pb.download(stream.s, s));
      EXPECT_TRUE(pb.check(s)) << "S against the reference";
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
      if (s_ran && !v->is_original()) EXPECT_TRUE(bitwise_equal<E>(first, s)) << "not bitwise S's result";
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

TEST(RotaryEmbeddingSetKvGpu, RegistryHoldsTheFeasibleVariants) {
  KTUNE_REQUIRE_GPU();
  check_registry<float>();
  check_registry<__half>();
  check_registry<__nv_bfloat16>();
}

TEST(RotaryEmbeddingSetKvGpu, DevicePreparationIsTheHosts) {
  KTUNE_REQUIRE_GPU();
  std::vector<ktune::Shape> shapes;
  auto add = [&](std::int64_t tokens, std::int64_t q_heads, std::int64_t kv_heads, std::int64_t head_size,
                 std::int64_t rotary_dim, bool is_neox, double k_scale, double v_scale) {
    shapes.push_back(ktune::Shape{{{"tokens", tokens}, {"q_heads", q_heads}, {"kv_heads", kv_heads}, {"head_size", head_size},
                                   {"rotary_dim", rotary_dim}},
                                  {{"is_neox", is_neox ? 1.0 : 0.0}, {"k_scale", k_scale}, {"v_scale", v_scale}}});
  };
  add(0, 32, 8, 128, 128, true, 1, 1);
  add(1, 2, 1, 128, 128, true, 1, 1);
  add(5, 3, 1, 128, 128, false, 0.5, 2);
  add(7, 4, 2, 256, 64, true, 1, 1);
  add(70000, 1, 1, 8, 8, true, 1, 1);
  add(2, 64, 8, 128, 128, true, 1, 1);
  ktune::test::expect_device_preparation_is_the_hosts(op_name, shapes);
}

TEST(RotaryEmbeddingSetKvGpu, EveryVariantFp32) {
  KTUNE_REQUIRE_GPU();
  check_variants<float>(cases(), {});
}
TEST(RotaryEmbeddingSetKvGpu, EveryVariantFp16) {
  KTUNE_REQUIRE_GPU();
  check_variants<__half>(cases(), {});
}
TEST(RotaryEmbeddingSetKvGpu, EveryVariantBf16) {
  KTUNE_REQUIRE_GPU();
  check_variants<__nv_bfloat16>(cases(), {});
}

// S runs (and passes) on the spec's layouts in both pairings, through both of its kernels (one token:
// head-parallel; 8192 tokens fill a wave: sequential).
TEST(RotaryEmbeddingSetKvGpu, OriginalRunsOnItsShapes) {
  KTUNE_REQUIRE_GPU();
  const std::vector<Case> spec_like = {{"spec_T1", 1, 32, 8, 128, 128, 1, 2},
                                       {"spec_T16_gptj", 16, 40, 8, 128, 128, 16, 32, false},
                                       {"spec_T8192", 8192, 64, 8, 128, 128, 8192, 16384},
                                       {"spec_T8192_gptj_packed", 8192, 32, 8, 128, 128, 8192, 16384, false, true}};
  for (const Case& c : spec_like) {
    Problem<__nv_bfloat16> pb(c, 1);
    EXPECT_NE(op::original::resources(pb.args()).func, nullptr) << c.name;
  }
  EXPECT_EQ(check_variants<__half>(spec_like, {"original"}), 4);
  EXPECT_EQ(check_variants<__nv_bfloat16>(spec_like, {"original"}), 4);
}

TEST(SanitizerSample, RotaryEmbeddingSetKv) {
  KTUNE_REQUIRE_GPU();
  const std::vector<Case> sample = {{"sample", 5, 4, 2, 64, 64, 7, 9, true, true, true, 8},
                                    {"sample_gptj", 5, 4, 2, 64, 32, 7, 6, false}};
  const std::vector<std::string> common = {"original", "tpb_256.vb_16.hpt_2.pdl_0", "tpb_512.vb_4.hpt_8.pdl_1"};
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
ktune::Status call_api(const op::Args<E>& a, cudaStream_t stream) {
  return ktune::rotary_embedding_set_kv(a.positions, a.query, a.key, a.head_size, a.cos_sin_cache, a.is_neox, a.value,
                                        a.k_buffer, a.v_buffer, a.k_scale, a.v_scale, a.cache_loc, a.tokens, a.q_heads,
                                        a.kv_heads, a.rotary_dim, a.max_pos, a.cache_rows, stream, a.query_stride,
                                        a.key_stride, a.value_stride, a.k_buffer_stride, a.v_buffer_stride);
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
    KTUNE_ASSERT_OK(call_api(a, stream.s));
    KTUNE_ASSERT_OK(pb.download(stream.s, typed));
    EXPECT_TRUE(pb.check(typed));
    KTUNE_ASSERT_OK(pb.upload(stream.s));
    KTUNE_ASSERT_OK(ktune::rotary_embedding_set_kv(dt, a.positions, a.query, a.key, a.head_size, a.cos_sin_cache, a.is_neox,
                                                   a.value, a.k_buffer, a.v_buffer, a.k_scale, a.v_scale, a.cache_loc,
                                                   a.tokens, a.q_heads, a.kv_heads, a.rotary_dim, a.max_pos, a.cache_rows,
                                                   stream.s, a.query_stride, a.key_stride, a.value_stride,
                                                   a.k_buffer_stride, a.v_buffer_stride));
    KTUNE_ASSERT_OK(pb.download(stream.s, dynamic));
    EXPECT_TRUE(bitwise_equal<E>(typed, dynamic)) << "the runtime-dtype entry runs the same variant";
  }
}

TEST(RotaryEmbeddingSetKvApi, EveryCaseEveryDtype) {
  KTUNE_REQUIRE_GPU();
  api_every_case<float>();
  api_every_case<__half>();
  api_every_case<__nv_bfloat16>();
}

// A slot outside [0, cache_rows) stores nothing (the token is still rotated), a position outside [0, max_pos)
// keeps the token's q and k and stores that k; nothing outside the tensors is touched.
TEST(RotaryEmbeddingSetKvApi, SlotsAndPositionsOutOfRange) {
  KTUNE_REQUIRE_GPU();
  Stream stream;
  for (bool aligned : {true, false}) {
    Case c{"out_of_range", 4, 4, 2, 64, 64, 8, 6};
    if (!aligned) c.offset = 1;  // the unaligned configuration
    Problem<__half> pb(c, test_seed() ^ 0xBAD);
    ASSERT_TRUE(pb.allocated());
    pb.pos_host = {0, 8, -1, 7};
    pb.loc_host = {5, 6, 2, -3};
    pb.compute_reference();
    KTUNE_ASSERT_OK(pb.upload(stream.s));
    KTUNE_ASSERT_OK(call_api(pb.args(), stream.s));
    typename Problem<__half>::Result r;
    KTUNE_ASSERT_OK(pb.download(stream.s, r));
    EXPECT_TRUE(pb.check(r)) << (aligned ? "aligned" : "unaligned");
  }
}

template <class E>
void api_refuses_bad_input() {
  Stream stream;
  Problem<E> pb({"bad_input", 4, 8, 2, 64, 64, 16, 8, true, true}, test_seed());
  ASSERT_TRUE(pb.allocated());
  KTUNE_ASSERT_OK(pb.upload(stream.s));
  const op::Args<E> good = pb.args();
  auto expect_refused = [&](op::Args<E> a, ktune::StatusCode code, const char* what) {
    const ktune::Status st = call_api(a, stream.s);
    EXPECT_EQ(st.code, code) << what << ": " << st.message;
  };
  using ktune::StatusCode;
  auto a = good;
  a.value = nullptr;
  expect_refused(a, StatusCode::invalid_argument, "null value");
  a = good;
  a.cache_loc = nullptr;
  expect_refused(a, StatusCode::invalid_argument, "null cache_loc");
  a = good;
  a.k_scale = 0.f;
  expect_refused(a, StatusCode::invalid_argument, "k_scale 0");
  a = good;
  a.k_buffer_stride = 2 * 64 - 1;
  expect_refused(a, StatusCode::invalid_argument, "short slot stride");
  a = good;
  a.v_buffer = a.k_buffer;
  expect_refused(a, StatusCode::invalid_argument, "v_buffer is k_buffer");
  a = good;
  a.k_buffer = a.key;
  expect_refused(a, StatusCode::invalid_argument, "k_buffer is key");
  a = good;
  a.value = a.query;
  expect_refused(a, StatusCode::invalid_argument, "value is query");
  a = good;
  a.v_buffer = reinterpret_cast<E*>(reinterpret_cast<char*>(good.v_buffer) + 1);
  expect_refused(a, StatusCode::invalid_argument, "v_buffer misaligned to its element");
  const ktune::Status st = ktune::rotary_embedding_set_kv(
      static_cast<DType>(7), good.positions, good.query, good.key, 64, good.cos_sin_cache, true, good.value, good.k_buffer,
      good.v_buffer, 1.f, 1.f, good.cache_loc, 4, 8, 2, 64, 16, 8, stream.s);
  EXPECT_EQ(st.code, StatusCode::unsupported);
  a = good;
  a.tokens = 0;
  KTUNE_EXPECT_OK(call_api(a, stream.s));
  KTUNE_EXPECT_OK(ktune::rotary_embedding_set_kv<E>(nullptr, nullptr, nullptr, 64, nullptr, true, nullptr, nullptr, nullptr,
                                                    1.f, 1.f, nullptr, 0, 8, 2, 64, 16, 8, stream.s));
  typename Problem<E>::Result r;
  KTUNE_ASSERT_OK(pb.download(stream.s, r));
  EXPECT_EQ(std::memcmp(r.qkv.data(), pb.qkv.init.data(), r.qkv.size() * sizeof(E)), 0) << "a refused call wrote q/k/v";
  EXPECT_EQ(std::memcmp(r.kv.data(), pb.kv.init.data(), r.kv.size() * sizeof(E)), 0) << "a refused call wrote the cache";
}

TEST(RotaryEmbeddingSetKvApi, RefusesBadInputAndWritesNothing) {
  KTUNE_REQUIRE_GPU();
  api_refuses_bad_input<float>();
  api_refuses_bad_input<__half>();
  api_refuses_bad_input<__nv_bfloat16>();
}

TEST(RotaryEmbeddingSetKvApi, ChoiceNamesTheTunedRowOrTheGeneralConfiguration) {
  KTUNE_REQUIRE_GPU();
  const ktune::DeviceInfo* dev = nullptr;
  KTUNE_ASSERT_OK(ktune::current_device(dev));
  for (DType dt : ktune::all_dtypes) {
    ktune::TunedChoice c;
    KTUNE_ASSERT_OK(ktune::rotary_embedding_set_kv_choice(dt, 128, 32, c));
    const ktune::TunedChoice want = ktune::lookup(op::tuned::entries, dev->table_arch, dev->name, dt, 128, 32);
    EXPECT_EQ(c.variant, want.variant);
    ASSERT_NE(c.id, nullptr);
    if (c.variant < 0) EXPECT_STREQ(c.id, op::tuned::general_id);
    else EXPECT_TRUE(op::Space::space.parse(c.id).ok) << c.id;
  }
}

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

TEST(RotaryEmbeddingSetKvApi, GraphCaptureAndReplay) {
  KTUNE_REQUIRE_GPU();
  graph_replay<__nv_bfloat16>({"graph_aligned", 16, 32, 8, 128, 128, 4096, 40, true, true});
  graph_replay<__half>({"graph_aligned", 16, 32, 8, 128, 128, 4096, 40});
  graph_replay<float>({"graph_aligned", 16, 32, 8, 128, 128, 4096, 40});
  graph_replay<__half>({"graph_fallback", 5, 3, 1, 37, 22, 9, 7, false, false, false, 0, 1});
}

TEST(RotaryEmbeddingSetKvApi, Deterministic) {
  KTUNE_REQUIRE_GPU();
  Stream stream;
  Problem<__nv_bfloat16> pb({"determinism", 2048, 32, 8, 128, 128, 4096, 4096, true, true}, test_seed() ^ 0xDE7);
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
