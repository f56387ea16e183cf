// GPU tests of gemma_fused_add_rmsnorm: every registered variant (and S) x dtype on small shapes against the
// float64 reference and against S (on every random case S takes), more than 65,535 rows, the public API (fallbacks, T = 0, bad inputs, graph capture and replay,
// determinism), and a named sample for compute-sanitizer.
//
// Sanitizer sample (memcheck and racecheck: gtest filter SanitizerSample.*), one of each structure:
//   original                          S: shared-memory staging, FlashInfer's reduction
//   vb_16.vpt_2.stage_0.cs_1.pdl_0    register staging, one block per row
//   vb_16.vpt_1.stage_1.cs_4.pdl_1    shared-memory staging split over a 4-block cluster, PDL
//   vb_16.vpt_4.stage_0.cs_8.pdl_1    register staging split over an 8-block cluster, PDL
//   vb_0.vpt_1.stage_2.cs_1.pdl_0     the element-access fallback (reread), any alignment
//   vb_16.vpt_2.stage_3.cs_1.pdl_1    persistent rows: two alternating warp-sum slots, rows looped
//   vb_16.vpt_2.stage_4.cs_1.pdl_1    warp rows: one row per warp, no barrier
//   vb_16.vpt_1.stage_5.cs_4.pdl_1    a 4-block cluster with late stores
//   vb_16.vpt_2.stage_6.cs_1.pdl_1    bulk rows: a shared-memory ring filled by cp.async.bulk
//
// Issue 10's persistent stages (3, 4, 6) loop over rows only when there are more rows than row groups
// resident at once; PersistentStagesLoopOverRows runs them on enough rows that every group takes
// several, whatever the occupancy, and stage 6 blocks more rows than their ring has stages (its
// mbarriers go through both phase parities).
//
// In-place outputs cannot be poisoned before a run (they hold the inputs), so the inputs are drawn
// such that every output differs from the value it overwrites (op::input_value): an element a kernel
// forgot to write fails the comparison. Row padding and the space around the tensors are poisoned and
// must stay so.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
#include <ktune/registry.hpp>
#include <ktune/verify.hpp>

#include "kernels/gemma_fused_add_rmsnorm/gemma_fused_add_rmsnorm.cuh"
#include "support/gpu.hpp"

namespace {
namespace op = ktune::ops::gemma_fused_add_rmsnorm;
using ktune::DType;

constexpr std::int64_t guard = 40;  // poisoned elements after each tensor (more than a 16-byte vector)

using ktune::test::test_seed;

enum class Kind { random, nan_row, large };

struct Case {
  const char* name;
  std::int64_t tokens, h, in_stride, res_stride;
  std::int64_t offset;  // elements each tensor starts past a 256-byte boundary
  Kind kind;
};

const Case cases[] = {
    {"T1", 1, 256, 256, 256, 0, Kind::random},
    {"odd_T", 7, 1000, 1000, 1000, 0, Kind::random},
    {"long_row", 3, 8192, 8192, 8192, 0, Kind::random},   // several rounds; refused by small vpt * threads
    {"h_77", 5, 77, 77, 77, 0, Kind::random},             // no vector width divides 77
    {"tiny_h", 3, 16, 16, 16, 0, Kind::random},           // fewer vectors than a cluster has blocks
    {"strided", 4, 512, 640, 520, 0, Kind::random},       // padded rows, different strides
    {"offset", 3, 512, 512, 512, 1, Kind::random},        // pointers one element past 16-byte alignment
    {"nan_row", 4, 1024, 1024, 1024, 0, Kind::nan_row},   // NaN in row 1 only
    {"large", 2, 2048, 2048, 2048, 0, Kind::large},       // fp16 x^2 overflows; the sum must not
    // Short rows: warp rows (stage 4) take rows of at most 32 * vpt vectors.
    {"short_rows", 33, 128, 128, 128, 0, Kind::random},
    {"short_strided", 9, 64, 72, 80, 0, Kind::random},
    {"short_nan", 6, 96, 96, 96, 0, Kind::nan_row},
    {"short_T1", 1, 32, 32, 32, 0, Kind::random},
    // Stage 1 stages a row as floats: 12288 * 4 bytes is exactly 48 KB of dynamic shared memory, which
    // with the kernel's static shared memory needs the opt-in above the default limit.
    {"smem_48k", 2, 12288, 12288, 12288, 0, Kind::random},
};
constexpr int kShortRows = 9;  // index of short_rows

// More rows than row groups can be resident (stages 3, 6: at most 32 blocks per SM, stage 4: at most 64
// warps per SM, 132 SMs): every persistent group takes several rows, a ragged number of them.
// many_rows: stage 6 rings of 3 (fp32) or 6 (16-bit) stages of 16-32 KB allow 2 blocks per SM, so a
// block takes about 11 rows and reuses every stage.
const Case many_rows_cases[] = {
    {"many_short_rows", 20011, 128, 136, 144, 0, Kind::random},  // stage 3 blocks of one warp; stage 4
    {"many_rows", 3001, 4096, 4096, 4096, 0, Kind::random},      // stage 3, 6 blocks of 2-32 warps
    {"rows_70001", 70001, 64, 64, 72, 0, Kind::random},          // rows past a 16-bit grid dimension
};
constexpr int kNanRow = 1, kNanCol = 5;

template <class E>
struct DeviceBuffer {
  E* p = nullptr;
  std::size_t n = 0;
  explicit DeviceBuffer(std::size_t count) : n(count) {
    if (cudaMalloc(&p, n * sizeof(E)) != cudaSuccess) p = nullptr;
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

template <class E>
E poison() {
  return ktune::from_bits<E>(ktune::poison_bits<E>());
}

/// One case for element type E: host images of the three buffers (tensors plus poisoned padding),
/// device buffers, and the float64 reference, computed once and shared by every variant.
template <class E>
struct Problem {
  Case c;
  std::int64_t in_len, res_len, w_len;
  std::vector<E> in0, res0, w0;
  std::vector<double> ref_in, ref_res;  // [tokens, h]
  DeviceBuffer<E> d_in, d_res, d_w;

  Problem(const Case& cs, std::uint64_t seed)
      : c(cs),
        in_len(cs.offset + (cs.tokens - 1) * cs.in_stride + cs.h + guard),
        res_len(cs.offset + (cs.tokens - 1) * cs.res_stride + cs.h + guard),
        w_len(cs.offset + cs.h + guard),
        in0(in_len, poison<E>()),
        res0(res_len, poison<E>()),
        w0(w_len, poison<E>()),
        d_in(in_len),
        d_res(res_len),
        d_w(w_len) {
    for (std::int64_t t = 0; t < c.tokens; ++t) {
      for (std::int64_t i = 0; i < c.h; ++i) {
        const auto k = static_cast<std::uint64_t>(t * c.h + i);
        float a = op::input_value(op::Tensor::input, seed, k);
        const float r = op::input_value(op::Tensor::residual, seed, k);
        if (c.kind == Kind::large) a *= 3750.f;  // |input| in [30000, 60000]: x^2 > 65504
        if (c.kind == Kind::nan_row && t == kNanRow && i == kNanCol) a = std::numeric_limits<float>::quiet_NaN();
        in0[c.offset + t * c.in_stride + i] = ktune::from_float<E>(a);
        res0[c.offset + t * c.res_stride + i] = ktune::from_float<E>(r);
      }
    }
    for (std::int64_t i = 0; i < c.h; ++i)
      w0[c.offset + i] = ktune::from_float<E>(op::input_value(op::Tensor::weight, seed, static_cast<std::uint64_t>(i)));
    auto to_double = [](const std::vector<E>& v) {
      std::vector<double> d(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) d[i] = ktune::to_float(v[i]);
      return d;
    };
    const std::vector<double> din = to_double(in0), dres = to_double(res0), dw = to_double(w0);
    ref_in.resize(static_cast<std::size_t>(c.tokens * c.h));
    ref_res.resize(ref_in.size());
    op::reference(din.data() + c.offset, dres.data() + c.offset, dw.data() + c.offset, c.tokens, c.h, c.in_stride,
                  c.res_stride, op::default_eps, ktune::dtype_v<E>, ref_in.data(), ref_res.data());
  }

  bool allocated() const { return d_in.p && d_res.p && d_w.p; }

  op::Args<E> args() const {
    return op::Args<E>{d_in.p + c.offset, d_res.p + c.offset, d_w.p + c.offset, c.tokens,
                       c.h, c.in_stride, c.res_stride, op::default_eps};
  }

  /// Puts the inputs (and poisoned padding) back: every run updates them in place.
  ktune::Status restore() const {
    KTUNE_CUDA_TRY(cudaMemcpy(d_in.p, in0.data(), in0.size() * sizeof(E), cudaMemcpyHostToDevice));
    KTUNE_CUDA_TRY(cudaMemcpy(d_res.p, res0.data(), res0.size() * sizeof(E), cudaMemcpyHostToDevice));
    KTUNE_CUDA_TRY(cudaMemcpy(d_w.p, w0.data(), w0.size() * sizeof(E), cudaMemcpyHostToDevice));
    return ktune::Status::success();
  }

  struct Result {
    std::vector<E> in, res, w;
  };
  ktune::Status fetch(Result& r) const {
    r.in.resize(in0.size());
    r.res.resize(res0.size());
    r.w.resize(w0.size());
    KTUNE_CUDA_TRY(cudaMemcpy(r.in.data(), d_in.p, r.in.size() * sizeof(E), cudaMemcpyDeviceToHost));
    KTUNE_CUDA_TRY(cudaMemcpy(r.res.data(), d_res.p, r.res.size() * sizeof(E), cudaMemcpyDeviceToHost));
    KTUNE_CUDA_TRY(cudaMemcpy(r.w.data(), d_w.p, r.w.size() * sizeof(E), cudaMemcpyDeviceToHost));
    return ktune::Status::success();
  }

  /// Outputs within tolerance of the reference, padding still poisoned, weight untouched.
  /// want_in, want_res: other expectations than the float64 reference ([tokens, h], S's outputs).
  ::testing::AssertionResult check(const Result& r, const std::vector<double>* want_in = nullptr,
                                   const std::vector<double>* want_res = nullptr) const {
    const ktune::Tolerance tol = ktune::default_tolerance(ktune::dtype_v<E>);
    auto outside_rows_intact = [&](const std::vector<E>& got, const std::vector<E>& want, std::int64_t stride,
                                   const char* what) -> ::testing::AssertionResult {
      std::vector<bool> in_row(got.size(), false);
      for (std::int64_t t = 0; t < c.tokens; ++t)
        for (std::int64_t i = 0; i < c.h; ++i) in_row[c.offset + t * stride + i] = true;
      for (std::size_t k = 0; k < got.size(); ++k)
        if (!in_row[k] && ktune::bits_of(got[k]) != ktune::bits_of(want[k]))
          return ::testing::AssertionFailure() << what << ": element " << k << " outside the rows was written";
      return ::testing::AssertionSuccess();
    };
    if (auto a = outside_rows_intact(r.in, in0, c.in_stride, "input"); !a) return a;
    if (auto a = outside_rows_intact(r.res, res0, c.res_stride, "residual"); !a) return a;
    for (std::size_t k = 0; k < r.w.size(); ++k)
      if (ktune::bits_of(r.w[k]) != ktune::bits_of(w0[k]))
        return ::testing::AssertionFailure() << "weight element " << k << " was written";
    auto rows = [&](const std::vector<E>& buf, std::int64_t stride) {
      std::vector<E> out(static_cast<std::size_t>(c.tokens * c.h));
      for (std::int64_t t = 0; t < c.tokens; ++t)
        for (std::int64_t i = 0; i < c.h; ++i) out[t * c.h + i] = buf[c.offset + t * stride + i];
      return out;
    };
    const std::vector<E> out_in = rows(r.in, c.in_stride), out_res = rows(r.res, c.res_stride);
    const ktune::Comparison ci = ktune::compare(out_in.data(), (want_in ? *want_in : ref_in).data(), out_in.size(), tol);
    const ktune::Comparison cr =
        ktune::compare(out_res.data(), (want_res ? *want_res : ref_res).data(), out_res.size(), tol);
    if (!ci.passed || !cr.passed)
      return ::testing::AssertionFailure() << (want_in ? "against S: " : "against float64: ") << "input (normalised): "
                                           << ci.summary() << "; residual: " << cr.summary();
    return ::testing::AssertionSuccess();
  }
};

template <class E>
bool bitwise_equal(const typename Problem<E>::Result& a, const typename Problem<E>::Result& b) {
  auto same = [](const std::vector<E>& x, const std::vector<E>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(E)) == 0;
  };
  return same(a.in, b.in) && same(a.res, b.res);
}

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { (void)cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }
  ~Stream() {
    if (s) cudaStreamDestroy(s);
  }
};

bool is_vector_variant(const ktune::Variant& v) { return v.is_original() || v.point[op::Space::kVb] != 0; }

// ---- every registered variant ---------------------------------------------------------------------

template <class E>
void check_every_variant() {
  const auto variants = ktune::Registry::global().select("gemma_fused_add_rmsnorm", ktune::dtype_v<E>, 90);
  constexpr std::size_t feasible = ktune::FeasibleSet<op::Space, 90, sizeof(E)>::count;
  static_assert(feasible == (sizeof(E) == 4 ? 120 : 118), "96 points of stages 0-2, 24 (fp32) or 22 of stages 3-6");
  ASSERT_EQ(variants.size(), feasible + 1) << "every feasible sm_90 variant and S are registered per dtype";
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  std::map<std::string, int> accepted;
  int against_s = 0;
  for (std::size_t ci = 0; ci < std::size(cases); ++ci) {
    const Case& c = cases[ci];
    const std::uint64_t seed = test_seed() + ci;
    SCOPED_TRACE(std::string("case ") + c.name + ", dtype " + ktune::name(ktune::dtype_v<E>) +
                 ", KTUNE_TEST_SEED=" + std::to_string(test_seed()));
    const Problem<E> pb(c, seed);
    ASSERT_TRUE(pb.allocated());
    const op::Args<E> args = pb.args();
    // S's outputs on this case, where S takes it: every variant is compared with them too.
    std::vector<double> s_in, s_res;
    const ktune::Variant* original = ktune::Registry::global().find("gemma_fused_add_rmsnorm", ktune::dtype_v<E>, 90, "original");
    ASSERT_NE(original, nullptr);
    if (c.kind == Kind::random && original->can_implement(&args).ok()) {
      KTUNE_ASSERT_OK(pb.restore());
      KTUNE_ASSERT_OK(original->run(&args, stream.s));
      KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
      typename Problem<E>::Result r;
      KTUNE_ASSERT_OK(pb.fetch(r));
      for (std::int64_t t = 0; t < c.tokens; ++t)
        for (std::int64_t i = 0; i < c.h; ++i) {
          s_in.push_back(ktune::to_float(r.in[c.offset + t * c.in_stride + i]));
          s_res.push_back(ktune::to_float(r.res[c.offset + t * c.res_stride + i]));
        }
    }
    for (const ktune::Variant* v : variants) {
      SCOPED_TRACE("variant " + v->id);
      const ktune::Status can = v->can_implement(&args);
      const bool misfit = c.offset % 8 != 0 || c.h % 8 != 0;  // not 16-byte aligned for either element size
      if (misfit && is_vector_variant(*v)) {
        EXPECT_FALSE(can.ok()) << "a 16-byte-vector variant must refuse misaligned pointers or h";
      }
      if (!can.ok()) {
        EXPECT_TRUE(can.code == ktune::StatusCode::unsupported || can.code == ktune::StatusCode::too_large)
            << can.message;
        continue;
      }
      ++accepted[v->id];
      KTUNE_ASSERT_OK(pb.restore());
      KTUNE_ASSERT_OK(v->run(&args, stream.s));
      KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
      typename Problem<E>::Result first;
      KTUNE_ASSERT_OK(pb.fetch(first));
      ASSERT_TRUE(pb.check(first));
      if (!s_in.empty()) {
        ASSERT_TRUE(pb.check(first, &s_in, &s_res));
        ++against_s;
      }
      if (ci == 1) {  // determinism: a second run of the same input gives the same bits
        KTUNE_ASSERT_OK(pb.restore());
        KTUNE_ASSERT_OK(v->run(&args, stream.s));
        KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
        typename Problem<E>::Result second;
        KTUNE_ASSERT_OK(pb.fetch(second));
        EXPECT_TRUE(bitwise_equal<E>(first, second)) << "two runs differ";
      }
    }
  }
  for (const ktune::Variant* v : variants) EXPECT_GE(accepted[v->id], 5) << v->id << " ran on too few cases";
  EXPECT_GE(accepted["original"], 11) << "S runs on every case its gcd vector lines up with";
  EXPECT_GT(against_s, 500) << "variants compared with S";
}

TEST(GemmaFusedAddRmsnormGpu, EveryVariantFp32) {
  KTUNE_REQUIRE_GPU();
  check_every_variant<float>();
}
TEST(GemmaFusedAddRmsnormGpu, EveryVariantFp16) {
  KTUNE_REQUIRE_GPU();
  check_every_variant<__half>();
}
TEST(GemmaFusedAddRmsnormGpu, EveryVariantBf16) {
  KTUNE_REQUIRE_GPU();
  check_every_variant<__nv_bfloat16>();
}

// ---- the persistent stages over many rows ---------------------------------------------------------

bool is_persistent(const ktune::Variant& v) {
  return !v.is_original() && op::Space::persistent(v.point[op::Space::kStage]);
}

/// Every persistent variant on the many-rows cases: each group loops over several rows, alternating its
/// two register sets (and stage 3 its two warp-sum slots), and ends on either set.
template <class E>
void check_persistent_over_many_rows() {
  const auto variants = ktune::Registry::global().select("gemma_fused_add_rmsnorm", ktune::dtype_v<E>, 90);
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  std::map<std::string, int> accepted;
  for (std::size_t ci = 0; ci < std::size(many_rows_cases); ++ci) {
    const Case& c = many_rows_cases[ci];
    SCOPED_TRACE(std::string("case ") + c.name + ", dtype " + ktune::name(ktune::dtype_v<E>) +
                 ", KTUNE_TEST_SEED=" + std::to_string(test_seed()));
    const Problem<E> pb(c, test_seed() + 50 + ci);
    ASSERT_TRUE(pb.allocated());
    const op::Args<E> args = pb.args();
    for (const ktune::Variant* v : variants) {
      // Besides the persistent variants, S and the fallback: one block per row, rows past 65,535.
      if (!is_persistent(*v) && !v->is_original() && v->id != "vb_0.vpt_1.stage_2.cs_1.pdl_0") continue;
      SCOPED_TRACE("variant " + v->id);
      if (!v->can_implement(&args).ok()) continue;
      ++accepted[v->id];
      KTUNE_ASSERT_OK(pb.restore());
      KTUNE_ASSERT_OK(v->run(&args, stream.s));
      KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
      typename Problem<E>::Result r;
      KTUNE_ASSERT_OK(pb.fetch(r));
      ASSERT_TRUE(pb.check(r));
    }
  }
  int persistent = 0;
  for (const ktune::Variant* v : variants) {
    if (!is_persistent(*v)) continue;
    ++persistent;
    EXPECT_GE(accepted[v->id], 1) << v->id << " ran on no many-rows case";
  }
  EXPECT_EQ(persistent, sizeof(E) == 4 ? 18 : 16) << "stage 3, 4 and 6 variants registered";
  EXPECT_EQ(accepted["original"], 3) << "S on every many-rows case";
  EXPECT_EQ(accepted["vb_0.vpt_1.stage_2.cs_1.pdl_0"], 3);
}

TEST(GemmaFusedAddRmsnormGpu, PersistentStagesLoopOverRowsFp32) {
  KTUNE_REQUIRE_GPU();
  check_persistent_over_many_rows<float>();
}
TEST(GemmaFusedAddRmsnormGpu, PersistentStagesLoopOverRowsFp16) {
  KTUNE_REQUIRE_GPU();
  check_persistent_over_many_rows<__half>();
}
TEST(GemmaFusedAddRmsnormGpu, PersistentStagesLoopOverRowsBf16) {
  KTUNE_REQUIRE_GPU();
  check_persistent_over_many_rows<__nv_bfloat16>();
}

// ---- the public API -----------------------------------------------------------------------------

template <class E>
void check_api_on_every_case() {
  Stream stream;
  for (std::size_t ci = 0; ci < std::size(cases); ++ci) {
    const Case& c = cases[ci];
    SCOPED_TRACE(std::string("case ") + c.name + ", KTUNE_TEST_SEED=" + std::to_string(test_seed()));
    const Problem<E> pb(c, test_seed() + 100 + ci);
    ASSERT_TRUE(pb.allocated());
    const op::Args<E> a = pb.args();
    KTUNE_ASSERT_OK(pb.restore());
    KTUNE_ASSERT_OK(ktune::gemma_fused_add_rmsnorm<E>(a.input, a.residual, a.weight, a.tokens, a.h, a.eps, stream.s,
                                                a.input_stride, a.residual_stride));
    KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
    typename Problem<E>::Result r;
    KTUNE_ASSERT_OK(pb.fetch(r));
    ASSERT_TRUE(pb.check(r));
    // The runtime-dtype entry's body: the same call, the same bits.
    KTUNE_ASSERT_OK(pb.restore());
    KTUNE_ASSERT_OK(op::run_dtype(ktune::dtype_v<E>, a.input, a.residual, a.weight, a.tokens, a.h, a.eps, stream.s,
                                  a.input_stride, a.residual_stride));
    KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
    typename Problem<E>::Result r2;
    KTUNE_ASSERT_OK(pb.fetch(r2));
    EXPECT_TRUE(bitwise_equal<E>(r, r2));
  }
}

TEST(GemmaFusedAddRmsnormApi, EveryCaseFp32) {
  KTUNE_REQUIRE_GPU();
  check_api_on_every_case<float>();
}
TEST(GemmaFusedAddRmsnormApi, EveryCaseFp16) {
  KTUNE_REQUIRE_GPU();
  check_api_on_every_case<__half>();
}
TEST(GemmaFusedAddRmsnormApi, EveryCaseBf16) {
  KTUNE_REQUIRE_GPU();
  check_api_on_every_case<__nv_bfloat16>();
}

TEST(GemmaFusedAddRmsnormApi, ZeroTokensAndBadInputsWriteNothing) {
  KTUNE_REQUIRE_GPU();
  const Problem<__half> pb(cases[5], test_seed());  // strided: padding and rows
  ASSERT_TRUE(pb.allocated());
  KTUNE_ASSERT_OK(pb.restore());
  const op::Args<__half> a = pb.args();
  __half* misaligned = reinterpret_cast<__half*>(reinterpret_cast<char*>(a.input) + 1);
  const ktune::Status calls[] = {
      ktune::gemma_fused_add_rmsnorm(a.input, a.residual, a.weight, 0, a.h, a.eps, nullptr, a.input_stride, a.residual_stride),
      ktune::gemma_fused_add_rmsnorm(a.input, a.residual, a.weight, -1, a.h, a.eps),
      ktune::gemma_fused_add_rmsnorm(a.input, a.residual, a.weight, a.tokens, -4, a.eps),
      ktune::gemma_fused_add_rmsnorm(a.input, a.residual, a.weight, a.tokens, a.h, a.eps, nullptr, a.h - 1, -1),
      ktune::gemma_fused_add_rmsnorm(a.input, a.residual, static_cast<const __half*>(nullptr), a.tokens, a.h),
      ktune::gemma_fused_add_rmsnorm(misaligned, a.residual, a.weight, a.tokens, a.h),
      ktune::gemma_fused_add_rmsnorm(a.input, a.residual, a.weight, a.tokens, a.h, std::numeric_limits<float>::quiet_NaN()),
      ktune::gemma_fused_add_rmsnorm(a.input, a.input, a.weight, a.tokens, a.h),
      op::run_dtype(static_cast<DType>(7), a.input, a.residual, a.weight, a.tokens, a.h, a.eps, nullptr, -1, -1),
  };
  EXPECT_TRUE(calls[0].ok()) << "T = 0 is a no-op";
  for (std::size_t k = 1; k < std::size(calls); ++k) EXPECT_FALSE(calls[k].ok()) << "call " << k;
  EXPECT_EQ(calls[8].code, ktune::StatusCode::unsupported);
  KTUNE_ASSERT_CUDA(cudaDeviceSynchronize());
  Problem<__half>::Result r;
  KTUNE_ASSERT_OK(pb.fetch(r));
  EXPECT_EQ(std::memcmp(r.in.data(), pb.in0.data(), r.in.size() * sizeof(__half)), 0) << "input written";
  EXPECT_EQ(std::memcmp(r.res.data(), pb.res0.data(), r.res.size() * sizeof(__half)), 0) << "residual written";
}

// The choice names the tuned row for this device when the table has one, else the general configuration.
TEST(GemmaFusedAddRmsnormApi, ChoiceNamesTheTunedRowOrTheGeneralConfiguration) {
  KTUNE_REQUIRE_GPU();
  const ktune::DeviceInfo* dev = nullptr;
  KTUNE_ASSERT_OK(ktune::current_device(dev));
  ktune::TunedChoice c;
  KTUNE_ASSERT_OK(op::choose(DType::bf16, 16, 4096, c));
  const ktune::TunedChoice want = ktune::lookup(op::tuned::entries, dev->table_arch, dev->name, DType::bf16, 16, 4096);
  EXPECT_EQ(c.variant, want.variant);
  EXPECT_EQ(c.source, want.source);
  ASSERT_NE(c.id, nullptr);
  if (c.variant < 0) EXPECT_STREQ(c.id, op::tuned::general_id);
  else EXPECT_TRUE(op::Space::space.parse(c.id).ok) << c.id;
  EXPECT_EQ(op::choose(static_cast<DType>(9), 16, 4096, c).code, ktune::StatusCode::unsupported);
  EXPECT_EQ(op::choose(DType::f16, -1, 4096, c).code, ktune::StatusCode::invalid_argument);
}

/// Captures `run` on a stream into a graph; replays it twice on fresh inputs: both replays match a
/// direct run bitwise.
template <class E, class Run>
void check_graph_replay(const Problem<E>& pb, Run run) {
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  // A direct run first: it also fills the per-device caches, as any process would have before capture.
  KTUNE_ASSERT_OK(pb.restore());
  KTUNE_ASSERT_OK(run(stream.s));
  KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
  typename Problem<E>::Result direct;
  KTUNE_ASSERT_OK(pb.fetch(direct));
  ASSERT_TRUE(pb.check(direct));

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  KTUNE_ASSERT_CUDA(cudaStreamBeginCapture(stream.s, cudaStreamCaptureModeGlobal));
  const ktune::Status captured = run(stream.s);
  KTUNE_ASSERT_CUDA(cudaStreamEndCapture(stream.s, &graph));
  KTUNE_ASSERT_OK(captured);
  KTUNE_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    KTUNE_ASSERT_OK(pb.restore());
    KTUNE_ASSERT_CUDA(cudaGraphLaunch(exec, stream.s));
    KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
    typename Problem<E>::Result r;
    KTUNE_ASSERT_OK(pb.fetch(r));
    EXPECT_TRUE(bitwise_equal<E>(direct, r)) << "replay " << replay << " differs from the direct run";
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST(GemmaFusedAddRmsnormApi, GraphCaptureAndReplay) {
  KTUNE_REQUIRE_GPU();
  for (int ci : {1, 6}) {  // aligned (the tuned or general variant) and offset (the fallback)
    SCOPED_TRACE(cases[ci].name);
    const Problem<__nv_bfloat16> pb(cases[ci], test_seed() + 7);
    ASSERT_TRUE(pb.allocated());
    const auto a = pb.args();
    check_graph_replay(pb, [&](cudaStream_t s) {
      return ktune::gemma_fused_add_rmsnorm(a.input, a.residual, a.weight, a.tokens, a.h, a.eps, s, a.input_stride,
                                      a.residual_stride);
    });
  }
}

const char* const sanitizer_sample[] = {
    "original",
    "vb_16.vpt_2.stage_0.cs_1.pdl_0",
    "vb_16.vpt_1.stage_1.cs_4.pdl_1",
    "vb_16.vpt_4.stage_0.cs_8.pdl_1",
    "vb_0.vpt_1.stage_2.cs_1.pdl_0",
    "vb_16.vpt_2.stage_3.cs_1.pdl_1",
    "vb_16.vpt_2.stage_4.cs_1.pdl_1",
    "vb_16.vpt_1.stage_5.cs_4.pdl_1",
    "vb_16.vpt_2.stage_6.cs_1.pdl_1",
};

TEST(GemmaFusedAddRmsnormApi, ClusterAndPdlVariantsReplayInGraphs) {
  KTUNE_REQUIRE_GPU();
  std::map<std::string, int> replayed;
  for (const Case& c : {cases[1], cases[kShortRows]}) {  // odd T; short rows (warp rows take no longer)
    const Problem<__half> pb(c, test_seed() + 8);
    ASSERT_TRUE(pb.allocated());
    const auto args = pb.args();
    for (const char* id : sanitizer_sample) {
      SCOPED_TRACE(std::string(id) + " on " + c.name);
      const ktune::Variant* v = ktune::Registry::global().find("gemma_fused_add_rmsnorm", DType::f16, 90, id);
      ASSERT_NE(v, nullptr) << "not registered";
      if (!v->can_implement(&args).ok()) continue;
      ++replayed[id];
      check_graph_replay(pb, [&](cudaStream_t s) { return v->run(&args, s); });
    }
  }
  for (const char* id : sanitizer_sample) EXPECT_GE(replayed[id], 1) << id << " was never replayed";
}

// ---- compute-sanitizer sample (memcheck, racecheck): each sample variant once --------------------

TEST(SanitizerSample, GemmaFusedAddRmsnorm) {
  KTUNE_REQUIRE_GPU();
  Stream stream;
  // odd T; fewer vectors than cluster blocks; h = 77 (fallback only); short rows (warp rows); many
  // rows (the persistent stages loop, stage 3 alternating its warp-sum slots in blocks of 8 warps)
  const Case sample_cases[] = {cases[1], cases[4], cases[3], cases[kShortRows], many_rows_cases[1]};
  for (const Case& c : sample_cases) {
    const Problem<__half> pb(c, test_seed() + 9);
    ASSERT_TRUE(pb.allocated());
    const auto args = pb.args();
    for (const char* id : sanitizer_sample) {
      SCOPED_TRACE(std::string(id) + " on " + c.name);
      const ktune::Variant* v = ktune::Registry::global().find("gemma_fused_add_rmsnorm", DType::f16, 90, id);
      ASSERT_NE(v, nullptr) << "not registered";
      if (!v->can_implement(&args).ok()) continue;
      KTUNE_ASSERT_OK(pb.restore());
      KTUNE_ASSERT_OK(v->run(&args, stream.s));
      KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
      Problem<__half>::Result r;
      KTUNE_ASSERT_OK(pb.fetch(r));
      EXPECT_TRUE(pb.check(r));
    }
  }
}

}  // namespace
