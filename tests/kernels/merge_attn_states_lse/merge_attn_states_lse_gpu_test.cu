// GPU tests of merge_attn_states_lse: every registered variant (and S) x dtype against the float64
// reference, the public API (fallbacks, bad inputs, T = 0, graph capture, determinism).
//
// Sanitizer sample (one small case, every dtype, each variant once):
//   original                          S
//   tpb_256.vb_16.ppt_1.pg_0.pdl_0    the default configuration
//   tpb_512.vb_8.ppt_4.pg_1.pdl_1     persistent grid, 4 packs per thread, PDL
//   tpb_256.vb_<elem>.ppt_4.pg_0.pdl_0  the unaligned fallback (vb_4 for fp32, vb_2 for fp16/bf16)
// run it with
//   compute-sanitizer --tool memcheck  ktune_gpu_tests --gtest_filter='SanitizerSample.MergeAttnStatesLse'
//   compute-sanitizer --tool racecheck ktune_gpu_tests --gtest_filter='SanitizerSample.MergeAttnStatesLse'
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/fill.cuh>
#include <ktune/random.hpp>
#include <ktune/registry.hpp>
#include <ktune/space.hpp>
#include <ktune/verify.hpp>

#include "kernels/merge_attn_states_lse/merge_attn_states_lse.cuh"
#include "kernels/merge_attn_states_lse/reference.hpp"
#include "support/device_preparation_gpu.hpp"
#include "support/gpu.hpp"

namespace {

using ktune::test::DeviceBuffer;
using ktune::test::Stream;

namespace op = ktune::ops::merge_attn_states_lse;
using ktune::DType;

constexpr const char* op_name = "merge_attn_states_lse";

using ktune::test::test_seed;

struct Case {
  const char* name;
  std::int64_t tokens, heads, head_size;
  std::int64_t out_stride = 0, prefix_stride = 0, suffix_stride = 0;  // elements; 0: contiguous
  std::int64_t offset = 0;      // value pointers start this many elements into their buffers
  std::int64_t lse_offset = 0;  // LSE pointers start this many floats in
  bool with_lse = true;
};

// Small shapes covering: T = 1, odd T, head_size not a multiple of any vector (37), pointers not
// 16-byte aligned, strided rows (vector-multiple strides and odd ones), no out_lse, a persistent grid
// that must loop over tokens, and more tokens than grid.y's 65535 (the token loop of pg = 0).
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"spec_T1", 1, 32, 128},
      {"odd_T", 7, 40, 128},
      {"edges", 5, 11, 64},
      {"head_size_37", 3, 5, 37},
      {"offset_pointers", 4, 8, 64, 0, 0, 0, 1, 1},
      {"strided_aligned", 6, 4, 32, 136, 152, 144},
      {"strided_odd", 5, 3, 16, 51, 49, 53},
      {"no_out_lse", 9, 16, 128, 0, 0, 0, 0, 0, false},
      {"persistent_loop", 3000, 2, 64},
      {"tokens_beyond_grid_y", 70000, 1, 8},
  };
  return c;
}

constexpr std::int64_t tail_slack = 16;  // poisoned elements past the last row: catches overruns

/// One case's buffers, inputs (host and device) and float64 reference, for element type E.
template <class E>
struct Problem {
  Case c;
  std::int64_t row, os, ps, ss;
  std::int64_t out_elems, prefix_elems, suffix_elems, lse_elems;
  std::vector<E> prefix_host, suffix_host;
  std::vector<float> prefix_lse_host, suffix_lse_host;
  std::vector<double> ref_out, ref_lse;
  DeviceBuffer<E> prefix, suffix, out;
  DeviceBuffer<float> prefix_lse, suffix_lse, out_lse;

  static std::int64_t span(const Case& c, std::int64_t stride, std::int64_t row) {
    return c.offset + (c.tokens - 1) * stride + row + tail_slack;
  }

  Problem(const Case& k, std::uint64_t seed)
      : c(k),
        row(k.heads * k.head_size),
        os(k.out_stride ? k.out_stride : row),
        ps(k.prefix_stride ? k.prefix_stride : row),
        ss(k.suffix_stride ? k.suffix_stride : row),
        out_elems(span(k, os, row)),
        prefix_elems(span(k, ps, row)),
        suffix_elems(span(k, ss, row)),
        lse_elems(k.lse_offset + k.tokens * k.heads + tail_slack),
        prefix(static_cast<std::size_t>(prefix_elems)),
        suffix(static_cast<std::size_t>(suffix_elems)),
        out(static_cast<std::size_t>(out_elems)),
        prefix_lse(static_cast<std::size_t>(lse_elems)),
        suffix_lse(static_cast<std::size_t>(lse_elems)),
        out_lse(static_cast<std::size_t>(lse_elems)) {
    fill(seed);
  }

  bool allocated() const {
    return prefix.ptr && suffix.ptr && out.ptr && prefix_lse.ptr && suffix_lse.ptr && out_lse.ptr;
  }

  // Values uniform in [-1, 1), one NaN every 997 prefix elements, heads of magnitude ~65000 (near
  // fp16's limit; prefix and suffix of the same sign, so the result is well conditioned); LSEs uniform in [-30, 30) with every edge case of the semantics planted by
  // (t * heads + h) % 11.
  void fill(std::uint64_t seed) {
    prefix_host.resize(static_cast<std::size_t>(prefix_elems));
    suffix_host.resize(static_cast<std::size_t>(suffix_elems));
    const std::uint64_t sp = ktune::mix64(seed ^ 0x11), sv = ktune::mix64(seed ^ 0x22), sl = ktune::mix64(seed ^ 0x33);
    for (std::int64_t j = 0; j < prefix_elems; ++j)
      prefix_host[j] = ktune::from_float<E>(ktune::uniform_at(sp, j, -1.f, 1.f));
    for (std::int64_t j = 0; j < suffix_elems; ++j)
      suffix_host[j] = ktune::from_float<E>(ktune::uniform_at(sv, j, -1.f, 1.f));
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (std::int64_t t = 0; t < c.tokens; ++t) {
      for (std::int64_t h = 0; h < c.heads; ++h) {
        if ((t * c.heads + h) % 13 == 12) {
          for (std::int64_t i = 0; i < c.head_size; ++i) {
            const std::int64_t col = h * c.head_size + i;
            prefix_host[c.offset + t * ps + col] = ktune::from_float<E>(65000.f * (i % 2 ? 1.f : -1.f));
            suffix_host[c.offset + t * ss + col] = ktune::from_float<E>(64000.f * (i % 2 ? 1.f : -1.f));
          }
        }
      }
      for (std::int64_t col = 0; col < row; ++col)
        if ((t * row + col) % 997 == 5) prefix_host[c.offset + t * ps + col] = ktune::from_float<E>(nan);
    }
    prefix_lse_host.assign(static_cast<std::size_t>(lse_elems), 0.f);
    suffix_lse_host.assign(static_cast<std::size_t>(lse_elems), 0.f);
    for (std::int64_t i = 0; i < c.tokens * c.heads; ++i) {
      float p = ktune::uniform_at(sl, 2 * i, -30.f, 30.f), s = ktune::uniform_at(sl, 2 * i + 1, -30.f, 30.f);
      switch (i % 11) {
        case 1: p = -inf; s = -inf; break;    // no keys on either side: out 0, lse -inf
        case 2: p = inf; break;               // +inf counts as -inf: out = suffix
        case 3: s = inf; break;
        case 4: p = -inf; break;
        case 5: p = nan; break;               // NaN LSE: this head NaN, nothing else
        case 6: s = p - 300.f; break;         // exp underflows for the suffix
        case 7: s = p + 1000.f; break;        // ... for the prefix
        case 8: s = p; break;
        case 9: p = inf; s = -inf; break;     // both empty again, through +inf
        default: break;
      }
      prefix_lse_host[c.lse_offset + i] = p;
      suffix_lse_host[c.lse_offset + i] = s;
    }
    ref_out.resize(static_cast<std::size_t>(c.tokens * row));
    ref_lse.resize(static_cast<std::size_t>(c.tokens * c.heads));
    op::reference(prefix_host.data() + c.offset, prefix_lse_host.data() + c.lse_offset, suffix_host.data() + c.offset,
                  suffix_lse_host.data() + c.lse_offset, c.tokens, c.heads, c.head_size, ps, ss, ref_out.data(),
                  ref_lse.data());
  }

  ktune::Status upload(cudaStream_t stream) {
    KTUNE_CUDA_TRY(cudaMemcpyAsync(prefix.ptr, prefix_host.data(), prefix_elems * sizeof(E), cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(suffix.ptr, suffix_host.data(), suffix_elems * sizeof(E), cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(prefix_lse.ptr, prefix_lse_host.data(), lse_elems * 4, cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(suffix_lse.ptr, suffix_lse_host.data(), lse_elems * 4, cudaMemcpyHostToDevice, stream));
    return ktune::Status::success();
  }

  ktune::Status poison(cudaStream_t stream) {
    KTUNE_TRY(ktune::fill_bits(out.ptr, out.n, ktune::poison_bits<E>(), stream));
    KTUNE_TRY(ktune::fill_bits(out_lse.ptr, out_lse.n, ktune::poison_bits<float>(), stream));
    return ktune::Status::success();
  }

  op::Args<E> args() const {
    op::Args<E> a;
    a.out = out.ptr + c.offset;
    a.out_lse = c.with_lse ? out_lse.ptr + c.lse_offset : nullptr;
    a.prefix_out = prefix.ptr + c.offset;
    a.prefix_lse = prefix_lse.ptr + c.lse_offset;
    a.suffix_out = suffix.ptr + c.offset;
    a.suffix_lse = suffix_lse.ptr + c.lse_offset;
    a.tokens = c.tokens;
    a.heads = c.heads;
    a.head_size = c.head_size;
    a.out_stride = os;
    a.prefix_stride = ps;
    a.suffix_stride = ss;
    return a;
  }

  /// The raw output buffers after a run.
  struct Result {
    std::vector<E> out;
    std::vector<float> lse;
  };
  ktune::Status download(cudaStream_t stream, Result& r) {
    r.out.resize(static_cast<std::size_t>(out_elems));
    r.lse.resize(static_cast<std::size_t>(lse_elems));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(r.out.data(), out.ptr, out_elems * sizeof(E), cudaMemcpyDeviceToHost, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(r.lse.data(), out_lse.ptr, lse_elems * 4, cudaMemcpyDeviceToHost, stream));
    KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
    return ktune::Status::success();
  }

  /// Every row element within tolerance of the reference, every other element of the buffers (before
  /// the first row, gaps between strided rows, the slack after the last) still poisoned; out_lse
  /// likewise, or entirely poisoned when it was not asked for.
  ::testing::AssertionResult check(const Result& r) const {
    std::vector<E> rows(static_cast<std::size_t>(c.tokens * row));
    std::int64_t touched_outside = 0;
    for (std::int64_t j = 0; j < out_elems; ++j) {
      const std::int64_t rel = j - c.offset;
      const std::int64_t t = rel >= 0 ? rel / os : -1;
      const bool in_row = rel >= 0 && t < c.tokens && rel - t * os < row;
      if (in_row) rows[static_cast<std::size_t>(t * row + (rel - t * os))] = r.out[j];
      else if (!ktune::is_poison(r.out[j])) ++touched_outside;
    }
    if (touched_outside)
      return ::testing::AssertionFailure() << touched_outside << " out elements outside the rows were written";
    const auto cmp = ktune::compare(rows.data(), ref_out.data(), rows.size(), ktune::default_tolerance(ktune::dtype_v<E>));
    if (!cmp.passed) return ::testing::AssertionFailure() << "out: " << cmp.summary();
    const std::int64_t n_lse = c.tokens * c.heads;
    for (std::int64_t j = 0; j < lse_elems; ++j) {
      const bool inside = c.with_lse && j >= c.lse_offset && j < c.lse_offset + n_lse;
      if (!inside && !ktune::is_poison(r.lse[j]))
        return ::testing::AssertionFailure() << "out_lse element " << j << " outside the tensor (or not asked for) was written";
    }
    if (c.with_lse) {
      const auto l = ktune::compare(r.lse.data() + c.lse_offset, ref_lse.data(), static_cast<std::size_t>(n_lse),
                                    ktune::default_tolerance(DType::f32));
      if (!l.passed) return ::testing::AssertionFailure() << "out_lse: " << l.summary();
    }
    return ::testing::AssertionSuccess();
  }
};

template <class E>
bool bitwise_equal(const typename Problem<E>::Result& a, const typename Problem<E>::Result& b) {
  if (a.out.size() != b.out.size() || a.lse.size() != b.lse.size()) return false;
  return std::memcmp(a.out.data(), b.out.data(), a.out.size() * sizeof(E)) == 0 &&
         std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * 4) == 0;
}

std::string trace(const Case& c, DType d) {
  return std::string("case ") + c.name + " dtype " + ktune::name(d) + " seed " + std::to_string(test_seed()) +
         " (set KTUNE_TEST_SEED to repeat)";
}

/// Runs `ids` (all registered variants when empty) on every case in `which`: poison, run, check; run
/// again and compare bitwise (determinism). Returns how many (variant, case) runs happened.
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
    KTUNE_EXPECT_OK(pb.upload(stream.s));
    const op::Args<E> a = pb.args();
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
      KTUNE_EXPECT_OK(pb.poison(stream.s));
      KTUNE_EXPECT_OK(v->run(&a, stream.s));
      KTUNE_EXPECT_OK(pb.download(stream.s, first));
      EXPECT_TRUE(pb.check(first));
      KTUNE_EXPECT_OK(pb.poison(stream.s));
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
  for (const auto& pt : {op::Space::default_point, op::Space::original_point, op::Space::unaligned_point(sizeof(E))})
    EXPECT_NE(ktune::Registry::global().find(op_name, dt, 90, op::Space::space.id(pt)), nullptr) << op::Space::space.id(pt);
}

// ---- every variant ---------------------------------------------------------------------------------

TEST(MergeAttnStatesLseGpu, RegistryHoldsTheFeasibleVariants) {
  KTUNE_REQUIRE_GPU();
  check_registry<float>();
  check_registry<__half>();
  check_registry<__nv_bfloat16>();
}

/// The op's DevicePreparation (kernels/merge_attn_states_lse/device_preparation.cuh), which the benchmark uses
/// instead of the host's: no tokens, one head of the smallest vector, an odd count of heads, rows past 65,535, the
/// spec's most heads (the planted LSEs, empty and underflowing, fall in every shape of 12 heads' pairs or more).
TEST(MergeAttnStatesLseGpu, DevicePreparationIsTheHosts) {
  KTUNE_REQUIRE_GPU();
  std::vector<ktune::Shape> shapes;
  for (const auto& [tokens, heads, head_size] : std::vector<std::array<std::int64_t, 3>>{
           {0, 32, 128}, {1, 1, 8}, {3, 37, 72}, {70000, 1, 16}, {2, 64, 128}})
    shapes.push_back(ktune::Shape{{{"tokens", tokens}, {"heads", heads}, {"head_size", head_size}}, {}});
  ktune::test::expect_device_preparation_is_the_hosts(op_name, shapes);
}

TEST(MergeAttnStatesLseGpu, EveryVariantFp32) {
  KTUNE_REQUIRE_GPU();
  check_variants<float>(cases(), {});
}
TEST(MergeAttnStatesLseGpu, EveryVariantFp16) {
  KTUNE_REQUIRE_GPU();
  check_variants<__half>(cases(), {});
}
TEST(MergeAttnStatesLseGpu, EveryVariantBf16) {
  KTUNE_REQUIRE_GPU();
  check_variants<__nv_bfloat16>(cases(), {});
}

// S is the baseline of every comparison: it must run (and pass) on the spec-like shapes.
TEST(MergeAttnStatesLseGpu, OriginalRunsOnItsShapes) {
  KTUNE_REQUIRE_GPU();
  const std::vector<Case> spec_like = {{"spec_T1", 1, 32, 128}, {"spec_T16_h40", 16, 40, 128}, {"spec_T9_h64", 9, 64, 128}};
  EXPECT_EQ(check_variants<float>(spec_like, {"original"}), 3);
  EXPECT_EQ(check_variants<__half>(spec_like, {"original"}), 3);
  EXPECT_EQ(check_variants<__nv_bfloat16>(spec_like, {"original"}), 3);
}

TEST(SanitizerSample, MergeAttnStatesLse) {
  KTUNE_REQUIRE_GPU();
  const std::vector<Case> sample = {{"sample", 5, 6, 64, 0, 0, 0, 0, 0}};
  const std::vector<std::string> common = {"original", "tpb_256.vb_16.ppt_1.pg_0.pdl_0", "tpb_512.vb_8.ppt_4.pg_1.pdl_1"};
  auto with = [&](const char* unaligned) {
    auto ids = common;
    ids.push_back(unaligned);
    return ids;
  };
  EXPECT_EQ(check_variants<float>(sample, with("tpb_256.vb_4.ppt_4.pg_0.pdl_0")), 4);
  EXPECT_EQ(check_variants<__half>(sample, with("tpb_256.vb_2.ppt_4.pg_0.pdl_0")), 4);
  EXPECT_EQ(check_variants<__nv_bfloat16>(sample, with("tpb_256.vb_2.ppt_4.pg_0.pdl_0")), 4);
}

// ---- the public API ------------------------------------------------------------------------------------

template <class E>
ktune::Status call_api(const op::Args<E>& a, cudaStream_t stream, bool explicit_strides = true) {
  if (!explicit_strides)
    return ktune::merge_attn_states_lse(a.out, a.out_lse, a.prefix_out, a.prefix_lse, a.suffix_out, a.suffix_lse,
                                        a.tokens, a.heads, a.head_size, stream);
  return ktune::merge_attn_states_lse(a.out, a.out_lse, a.prefix_out, a.prefix_lse, a.suffix_out, a.suffix_lse,
                                      a.tokens, a.heads, a.head_size, stream, a.out_stride, a.prefix_stride,
                                      a.suffix_stride);
}

template <class E>
void api_every_case() {
  const DType dt = ktune::dtype_v<E>;
  Stream stream;
  for (const Case& c : cases()) {
    SCOPED_TRACE(trace(c, dt));
    Problem<E> pb(c, test_seed() ^ 0xA91 ^ std::hash<std::string>{}(c.name));
    ASSERT_TRUE(pb.allocated());
    KTUNE_ASSERT_OK(pb.upload(stream.s));
    const op::Args<E> a = pb.args();
    typename Problem<E>::Result typed, dynamic;
    KTUNE_ASSERT_OK(pb.poison(stream.s));
    KTUNE_ASSERT_OK(call_api(a, stream.s, c.out_stride || c.prefix_stride || c.suffix_stride));
    KTUNE_ASSERT_OK(pb.download(stream.s, typed));
    EXPECT_TRUE(pb.check(typed));
    // The runtime-dtype entry runs the same variant: bitwise the same result.
    KTUNE_ASSERT_OK(pb.poison(stream.s));
    KTUNE_ASSERT_OK(ktune::merge_attn_states_lse(dt, a.out, a.out_lse, a.prefix_out, a.prefix_lse, a.suffix_out,
                                                 a.suffix_lse, a.tokens, a.heads, a.head_size, stream.s, a.out_stride,
                                                 a.prefix_stride, a.suffix_stride));
    KTUNE_ASSERT_OK(pb.download(stream.s, dynamic));
    EXPECT_TRUE(bitwise_equal<E>(typed, dynamic));
  }
}

TEST(MergeAttnStatesLseApi, EveryCaseEveryDtype) {
  KTUNE_REQUIRE_GPU();
  api_every_case<float>();
  api_every_case<__half>();
  api_every_case<__nv_bfloat16>();
}

template <class E>
void api_refuses_bad_input() {
  Stream stream;
  Problem<E> pb({"bad_input", 4, 8, 64}, test_seed());
  ASSERT_TRUE(pb.allocated());
  KTUNE_ASSERT_OK(pb.upload(stream.s));
  KTUNE_ASSERT_OK(pb.poison(stream.s));
  const op::Args<E> good = pb.args();
  auto expect_refused = [&](op::Args<E> a, ktune::StatusCode code, const char* what) {
    const ktune::Status st = call_api(a, stream.s);
    EXPECT_EQ(st.code, code) << what << ": " << st.message;
  };
  using ktune::StatusCode;
  auto a = good;
  a.prefix_out = nullptr;
  expect_refused(a, StatusCode::invalid_argument, "null prefix_out");
  a = good;
  a.suffix_lse = nullptr;
  expect_refused(a, StatusCode::invalid_argument, "null suffix_lse");
  a = good;
  a.out = nullptr;
  expect_refused(a, StatusCode::invalid_argument, "null out");
  a = good;
  a.tokens = -1;
  expect_refused(a, StatusCode::invalid_argument, "negative tokens");
  a = good;
  a.heads = -3;
  expect_refused(a, StatusCode::invalid_argument, "negative heads");
  a = good;
  a.head_size = 0;
  expect_refused(a, StatusCode::invalid_argument, "head_size 0");
  a = good;
  a.prefix_stride = good.heads * good.head_size - 1;
  expect_refused(a, StatusCode::invalid_argument, "short prefix stride");
  a = good;
  a.out_stride = -8;
  expect_refused(a, StatusCode::invalid_argument, "negative stride");
  a = good;
  a.out = reinterpret_cast<E*>(reinterpret_cast<char*>(good.out) + 1);
  expect_refused(a, StatusCode::invalid_argument, "out misaligned to its element");
  a = good;
  a.prefix_lse = reinterpret_cast<const float*>(reinterpret_cast<const char*>(good.prefix_lse) + 2);
  expect_refused(a, StatusCode::invalid_argument, "prefix_lse misaligned");
  a = good;
  a.heads = std::int64_t{1} << 20;
  a.head_size = std::int64_t{1} << 12;
  a.out_stride = a.prefix_stride = a.suffix_stride = a.heads * a.head_size;
  expect_refused(a, StatusCode::too_large, "row beyond 32-bit in-row indexing");
  // Unsupported dtype at the runtime entry.
  const ktune::Status st = ktune::merge_attn_states_lse(static_cast<DType>(7), good.out, good.out_lse, good.prefix_out,
                                                        good.prefix_lse, good.suffix_out, good.suffix_lse, good.tokens,
                                                        good.heads, good.head_size, stream.s);
  EXPECT_EQ(st.code, StatusCode::unsupported);
  // T = 0: a no-op, with valid and with null pointers.
  a = good;
  a.tokens = 0;
  KTUNE_EXPECT_OK(call_api(a, stream.s));
  KTUNE_EXPECT_OK(ktune::merge_attn_states_lse<E>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 8, 64, stream.s));
  // Nothing was written by any of the refused calls.
  typename Problem<E>::Result r;
  KTUNE_ASSERT_OK(pb.download(stream.s, r));
  for (const E& x : r.out) ASSERT_TRUE(ktune::is_poison(x)) << "a refused call wrote out";
  for (float x : r.lse) ASSERT_TRUE(ktune::is_poison(x)) << "a refused call wrote out_lse";
}

TEST(MergeAttnStatesLseApi, RefusesBadInputAndWritesNothing) {
  KTUNE_REQUIRE_GPU();
  api_refuses_bad_input<float>();
  api_refuses_bad_input<__half>();
  api_refuses_bad_input<__nv_bfloat16>();
}

// The choice names the tuned row for this device when the table has one, else the general configuration.
TEST(MergeAttnStatesLseApi, ChoiceNamesTheTunedRowOrTheGeneralConfiguration) {
  KTUNE_REQUIRE_GPU();
  const ktune::DeviceInfo* dev = nullptr;
  KTUNE_ASSERT_OK(ktune::current_device(dev));
  for (DType dt : ktune::all_dtypes) {
    ktune::TunedChoice c;
    KTUNE_ASSERT_OK(ktune::merge_attn_states_lse_choice(dt, 128, 32, c));
    const ktune::TunedChoice want = ktune::lookup(op::tuned::entries, dev->table_arch, dev->name, dt, 128, 32);
    EXPECT_EQ(c.variant, want.variant);
    EXPECT_EQ(c.source, want.source);
    ASSERT_NE(c.id, nullptr);
    if (c.variant < 0) EXPECT_STREQ(c.id, op::tuned::general_id);
    else EXPECT_TRUE(op::Space::space.parse(c.id).ok) << c.id;
  }
  ktune::TunedChoice c;
  EXPECT_EQ(ktune::merge_attn_states_lse_choice(static_cast<DType>(9), 1, 32, c).code, ktune::StatusCode::unsupported);
}

// Captured into a CUDA graph and replayed: bitwise the result of a direct call, on every replay.
template <class E>
void graph_replay(const Case& c) {
  SCOPED_TRACE(trace(c, ktune::dtype_v<E>));
  Stream stream;
  Problem<E> pb(c, test_seed() ^ 0x6A9);
  ASSERT_TRUE(pb.allocated());
  KTUNE_ASSERT_OK(pb.upload(stream.s));
  const op::Args<E> a = pb.args();
  typename Problem<E>::Result direct, replayed;
  KTUNE_ASSERT_OK(pb.poison(stream.s));
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
    KTUNE_ASSERT_OK(pb.poison(stream.s));
    KTUNE_ASSERT_CUDA(cudaGraphLaunch(exec, stream.s));
    KTUNE_ASSERT_OK(pb.download(stream.s, replayed));
    EXPECT_TRUE(bitwise_equal<E>(direct, replayed)) << "replay " << replay;
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST(MergeAttnStatesLseApi, GraphCaptureAndReplay) {
  KTUNE_REQUIRE_GPU();
  const Case aligned{"graph_aligned", 16, 32, 128};
  const Case fallback{"graph_fallback", 5, 3, 37, 0, 0, 0, 1, 0};
  graph_replay<float>(aligned);
  graph_replay<__half>(aligned);
  graph_replay<__nv_bfloat16>(aligned);
  graph_replay<__half>(fallback);
}

// Two API calls on the same input: bitwise the same output.
TEST(MergeAttnStatesLseApi, Deterministic) {
  KTUNE_REQUIRE_GPU();
  Stream stream;
  Problem<__nv_bfloat16> pb({"determinism", 2048, 32, 128}, test_seed() ^ 0xDE7);
  ASSERT_TRUE(pb.allocated());
  KTUNE_ASSERT_OK(pb.upload(stream.s));
  typename Problem<__nv_bfloat16>::Result one, two;
  KTUNE_ASSERT_OK(pb.poison(stream.s));
  KTUNE_ASSERT_OK(call_api(pb.args(), stream.s));
  KTUNE_ASSERT_OK(pb.download(stream.s, one));
  EXPECT_TRUE(pb.check(one));
  KTUNE_ASSERT_OK(pb.poison(stream.s));
  KTUNE_ASSERT_OK(call_api(pb.args(), stream.s));
  KTUNE_ASSERT_OK(pb.download(stream.s, two));
  EXPECT_TRUE(bitwise_equal<__nv_bfloat16>(one, two));
}

}  // namespace
