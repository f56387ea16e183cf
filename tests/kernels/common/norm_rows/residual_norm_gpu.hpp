// tests/kernels/common/norm_rows/residual_norm_gpu.hpp: the row kind of the RMS norm ops with a residual
// (fused_add_rmsnorm, gemma_fused_add_rmsnorm: input and residual updated in place) for the shared GPU
// checks of rows_gpu.hpp: its edge shapes, its problems and its bad inputs.
//
// In-place outputs cannot be poisoned before a run (they hold the inputs), so the inputs are drawn such
// that every output differs from the value it overwrites (the op's input_value): an element a kernel
// forgot to write fails the comparison. Row padding and the space around the tensors are poisoned and
// must stay so.
//
// The persistent stages (3, 4, 6) loop over rows only when there are more rows than row groups resident
// at once; the many-rows cases give every group several, whatever the occupancy, and stage 6 blocks more
// rows than their ring has stages (its mbarriers go through both phase parities).
//
// An op's *_gpu_test.cu defines its traits (rows_gpu.hpp says what they hold, with Rows = ResidualRows)
// and instantiates its tests with KTUNE_RESIDUAL_NORM_GPU_TESTS(Op).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "rows_gpu.hpp"

namespace ktune::test::norm_rows {

struct ResidualRows {
  struct Case {
    const char* name;
    std::int64_t tokens, h, in_stride, res_stride;
    std::int64_t offset;  // elements each tensor starts past a 256-byte boundary
    Values values;
  };

  static constexpr Case cases[] = {
      {"T1", 1, 256, 256, 256, 0, Values::random},
      {"odd_T", 7, 1000, 1000, 1000, 0, Values::random},
      {"long_row", 3, 8192, 8192, 8192, 0, Values::random},   // several rounds; refused by small vpt * threads
      {"h_77", 5, 77, 77, 77, 0, Values::random},             // no vector width divides 77
      {"tiny_h", 3, 16, 16, 16, 0, Values::random},           // fewer vectors than a cluster has blocks
      {"strided", 4, 512, 640, 520, 0, Values::random},       // padded rows, different strides
      {"offset", 3, 512, 512, 512, 1, Values::random},        // pointers one element past 16-byte alignment
      {"nan_row", 4, 1024, 1024, 1024, 0, Values::nan_row},   // NaN in row 1 only
      {"large", 2, 2048, 2048, 2048, 0, Values::large},       // fp16 x^2 overflows; the sum must not
      // Short rows: warp rows (stage 4) take rows of at most 32 * vpt vectors.
      {"short_rows", 33, 128, 128, 128, 0, Values::random},
      {"short_strided", 9, 64, 72, 80, 0, Values::random},
      {"short_nan", 6, 96, 96, 96, 0, Values::nan_row},
      {"short_T1", 1, 32, 32, 32, 0, Values::random},
      // Stage 1 stages a row as floats: 12288 * 4 bytes is exactly 48 KB of dynamic shared memory, which
      // with the kernel's static shared memory needs the opt-in above the default limit.
      {"smem_48k", 2, 12288, 12288, 12288, 0, Values::random},
  };
  static constexpr int kOddT = 1, kH77 = 3, kTinyH = 4, kStrided = 5, kOffset = 6, kShortRows = 9;

  // More rows than row groups can be resident (stages 3, 6: at most 32 blocks per SM, stage 4: at most 64
  // warps per SM, 132 SMs): every persistent group takes several rows, a ragged number of them.
  // many_rows: stage 6 rings of 3 (fp32) or 6 (16-bit) stages of 16-32 KB allow 2 blocks per SM, so a
  // block takes about 11 rows and reuses every stage.
  static constexpr Case many_rows_cases[] = {
      {"many_short_rows", 20011, 128, 136, 144, 0, Values::random},  // stage 3 blocks of one warp; stage 4
      {"many_rows", 3001, 4096, 4096, 4096, 0, Values::random},      // stage 3, 6 blocks of 2-32 warps
      {"rows_70001", 70001, 64, 64, 72, 0, Values::random},          // rows past a 16-bit grid dimension
  };
  static constexpr int kManyRows = 1;

  /// S and the fallback are the one-row-per-block points on many rows.
  static constexpr std::array<const char*, 0> one_block_per_row_sample{};

  static constexpr int api_graph_cases[] = {kOddT, kOffset};  // the tuned or general variant; the fallback
  static constexpr int sample_graph_cases[] = {kOddT, kShortRows};  // warp rows take no longer
  static constexpr int sanitizer_cases[] = {kOddT, kTinyH, kH77, kShortRows};

  /// One point of each structure (and S): the graph-replay and compute-sanitizer sample (gtest filter
  /// SanitizerSample.*).
  static constexpr const char* sample[] = {
      "original",                        // S
      "vb_16.vpt_2.stage_0.cs_1.pdl_0",  // register staging, one block per row
      "vb_16.vpt_1.stage_1.cs_4.pdl_1",  // shared-memory staging split over a 4-block cluster, PDL
      "vb_16.vpt_4.stage_0.cs_8.pdl_1",  // register staging split over an 8-block cluster, PDL
      "vb_0.vpt_1.stage_2.cs_1.pdl_0",   // the element-access fallback (reread), any alignment
      "vb_16.vpt_2.stage_3.cs_1.pdl_1",  // persistent rows: two alternating warp-sum slots, rows looped
      "vb_16.vpt_2.stage_4.cs_1.pdl_1",  // warp rows: one row per warp, no barrier
      "vb_16.vpt_1.stage_5.cs_4.pdl_1",  // a 4-block cluster with late stores
      "vb_16.vpt_2.stage_6.cs_1.pdl_1",  // bulk rows: a shared-memory ring filled by cp.async.bulk
      "vb_16.vpt_4.stage_7.cs_1.pdl_1",  // lean registers: the weights loaded after the reduction
  };

  /// Feasible sm_90 points of stages 3-7 (16-bit warp rows stop at vpt 4; lean registers at vpt 1, 2, 4, 8
  /// x pdl), and of those the persistent ones (stages 3, 4, 6).
  static constexpr std::size_t stage_3_to_7_points(std::size_t element_bytes) { return (element_bytes == 4 ? 24 : 22) + 8; }
  static constexpr int persistent_variants(std::size_t element_bytes) { return element_bytes == 4 ? 18 : 16; }

  template <class Op, class E>
  struct Problem;

  /// T = 0 is a no-op; bad sizes, strides, pointers, eps, aliasing and dtypes are refused; none writes.
  template <class Op>
  static void check_bad_inputs_write_nothing();
};

/// One case for element type E: host images of the three buffers (tensors plus poisoned padding),
/// device buffers, and the float64 reference, computed once and shared by every variant.
template <class Op, class E>
struct ResidualRows::Problem {
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
        float a = Op::input_value(Op::Tensor::input, seed, k);
        const float r = Op::input_value(Op::Tensor::residual, seed, k);
        if (c.values == Values::large) a *= 3750.f;  // |input| in [30000, 60000]: x^2 > 65504
        if (c.values == Values::nan_row && t == kNanRow && i == kNanCol) a = std::numeric_limits<float>::quiet_NaN();
        in0[c.offset + t * c.in_stride + i] = from_float<E>(a);
        res0[c.offset + t * c.res_stride + i] = from_float<E>(r);
      }
    }
    for (std::int64_t i = 0; i < c.h; ++i)
      w0[c.offset + i] = from_float<E>(Op::input_value(Op::Tensor::weight, seed, static_cast<std::uint64_t>(i)));
    auto to_double = [](const std::vector<E>& v) {
      std::vector<double> d(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) d[i] = to_float(v[i]);
      return d;
    };
    const std::vector<double> din = to_double(in0), dres = to_double(res0), dw = to_double(w0);
    ref_in.resize(static_cast<std::size_t>(c.tokens * c.h));
    ref_res.resize(ref_in.size());
    Op::reference(din.data() + c.offset, dres.data() + c.offset, dw.data() + c.offset, c.tokens, c.h, c.in_stride,
                  c.res_stride, Op::default_eps, dtype_v<E>, ref_in.data(), ref_res.data());
  }

  bool allocated() const { return d_in.ptr && d_res.ptr && d_w.ptr; }

  typename Op::template Args<E> args() const {
    return {d_in.ptr + c.offset, d_res.ptr + c.offset, d_w.ptr + c.offset, c.tokens, c.h, c.in_stride, c.res_stride,
            Op::default_eps};
  }

  /// Whether every tensor's start, h and the strides are whole vectors of `vec` elements.
  bool fits_vector(std::int64_t vec) const {
    return c.offset % vec == 0 && c.h % vec == 0 && c.in_stride % vec == 0 && c.res_stride % vec == 0;
  }

  Status api(cudaStream_t s) const {
    const auto a = args();
    return Op::call(a.input, a.residual, a.weight, a.tokens, a.h, a.eps, s, a.input_stride, a.residual_stride);
  }
  Status dtype_entry(cudaStream_t s) const {
    const auto a = args();
    return Op::run_dtype(dtype_v<E>, a.input, a.residual, a.weight, a.tokens, a.h, a.eps, s, a.input_stride,
                         a.residual_stride);
  }

  /// Puts the inputs (and poisoned padding) back: every run updates them in place.
  Status restore() const {
    KTUNE_CUDA_TRY(cudaMemcpy(d_in.ptr, in0.data(), in0.size() * sizeof(E), cudaMemcpyHostToDevice));
    KTUNE_CUDA_TRY(cudaMemcpy(d_res.ptr, res0.data(), res0.size() * sizeof(E), cudaMemcpyHostToDevice));
    KTUNE_CUDA_TRY(cudaMemcpy(d_w.ptr, w0.data(), w0.size() * sizeof(E), cudaMemcpyHostToDevice));
    return Status::success();
  }

  struct Result {
    std::vector<E> in, res, w;
  };
  Status fetch(Result& r) const {
    r.in.resize(in0.size());
    r.res.resize(res0.size());
    r.w.resize(w0.size());
    KTUNE_CUDA_TRY(cudaMemcpy(r.in.data(), d_in.ptr, r.in.size() * sizeof(E), cudaMemcpyDeviceToHost));
    KTUNE_CUDA_TRY(cudaMemcpy(r.res.data(), d_res.ptr, r.res.size() * sizeof(E), cudaMemcpyDeviceToHost));
    KTUNE_CUDA_TRY(cudaMemcpy(r.w.data(), d_w.ptr, r.w.size() * sizeof(E), cudaMemcpyDeviceToHost));
    return Status::success();
  }

  /// Both in-place tensors, padding included.
  bool same_outputs(const Result& a, const Result& b) const {
    return bitwise_equal(a.in, b.in) && bitwise_equal(a.res, b.res);
  }

  /// A tensor's rows as [tokens, h].
  std::vector<E> rows(const std::vector<E>& buf, std::int64_t stride) const {
    std::vector<E> out(static_cast<std::size_t>(c.tokens * c.h));
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t i = 0; i < c.h; ++i) out[t * c.h + i] = buf[c.offset + t * stride + i];
    return out;
  }

  /// Padding still poisoned, weight untouched; both outputs within tolerance of the float64 reference, or
  /// of S's outputs `s` where given.
  ::testing::AssertionResult check(const Result& r, const Result* s = nullptr) const {
    const Tolerance tol = default_tolerance(dtype_v<E>);
    auto outside_rows_intact = [&](const std::vector<E>& got, const std::vector<E>& want, std::int64_t stride,
                                   const char* what) -> ::testing::AssertionResult {
      std::vector<bool> in_row(got.size(), false);
      for (std::int64_t t = 0; t < c.tokens; ++t)
        for (std::int64_t i = 0; i < c.h; ++i) in_row[c.offset + t * stride + i] = true;
      for (std::size_t k = 0; k < got.size(); ++k)
        if (!in_row[k] && bits_of(got[k]) != bits_of(want[k]))
          return ::testing::AssertionFailure() << what << ": element " << k << " outside the rows was written";
      return ::testing::AssertionSuccess();
    };
    if (auto a = outside_rows_intact(r.in, in0, c.in_stride, "input"); !a) return a;
    if (auto a = outside_rows_intact(r.res, res0, c.res_stride, "residual"); !a) return a;
    for (std::size_t k = 0; k < r.w.size(); ++k)
      if (bits_of(r.w[k]) != bits_of(w0[k]))
        return ::testing::AssertionFailure() << "weight element " << k << " was written";
    auto expected = [&](const std::vector<double>& ref, const std::vector<E>* s_buf, std::int64_t stride) {
      if (!s_buf) return ref;
      std::vector<double> want;
      for (const E& v : rows(*s_buf, stride)) want.push_back(to_float(v));
      return want;
    };
    const std::vector<double> want_in = expected(ref_in, s ? &s->in : nullptr, c.in_stride);
    const std::vector<double> want_res = expected(ref_res, s ? &s->res : nullptr, c.res_stride);
    const std::vector<E> out_in = rows(r.in, c.in_stride), out_res = rows(r.res, c.res_stride);
    const Comparison ci = compare(out_in.data(), want_in.data(), out_in.size(), tol);
    const Comparison cr = compare(out_res.data(), want_res.data(), out_res.size(), tol);
    if (!ci.passed || !cr.passed)
      return ::testing::AssertionFailure() << (s ? "against S: " : "against float64: ") << "input (normalised): "
                                           << ci.summary() << "; residual: " << cr.summary();
    return ::testing::AssertionSuccess();
  }
};

template <class Op>
void ResidualRows::check_bad_inputs_write_nothing() {
  using E = __half;
  const Problem<Op, E> pb(cases[kStrided], test_seed());  // padding and rows
  ASSERT_TRUE(pb.allocated());
  KTUNE_ASSERT_OK(pb.restore());
  const auto a = pb.args();
  E* misaligned = reinterpret_cast<E*>(reinterpret_cast<char*>(a.input) + 1);
  // Some calls leave eps, the stream and the strides to the public API's defaults.
  const Status calls[] = {
      Op::call(a.input, a.residual, a.weight, 0, a.h, a.eps, nullptr, a.input_stride, a.residual_stride),
      Op::call(a.input, a.residual, a.weight, -1, a.h, a.eps),
      Op::call(a.input, a.residual, a.weight, a.tokens, -4, a.eps),
      Op::call(a.input, a.residual, a.weight, a.tokens, a.h, a.eps, nullptr, a.h - 1, -1),
      Op::call(a.input, a.residual, static_cast<const E*>(nullptr), a.tokens, a.h),
      Op::call(misaligned, a.residual, a.weight, a.tokens, a.h),
      Op::call(a.input, a.residual, a.weight, a.tokens, a.h, std::numeric_limits<float>::quiet_NaN()),
      Op::call(a.input, a.input, a.weight, a.tokens, a.h),
      Op::run_dtype(static_cast<DType>(7), a.input, a.residual, a.weight, a.tokens, a.h, a.eps, nullptr, -1, -1),
  };
  expect_only_the_no_op_accepted(calls);
  KTUNE_ASSERT_CUDA(cudaDeviceSynchronize());
  typename Problem<Op, E>::Result r;
  KTUNE_ASSERT_OK(pb.fetch(r));
  EXPECT_TRUE(bitwise_equal(r.in, pb.in0)) << "input written";
  EXPECT_TRUE(bitwise_equal(r.res, pb.res0)) << "residual written";
}

}  // namespace ktune::test::norm_rows

/// Every GPU test of an op with a residual, Op its traits struct.
#define KTUNE_RESIDUAL_NORM_GPU_TESTS(Op)                                                                   \
  KTUNE_NORM_ROWS_GPU_TESTS(Op)                                                                             \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Gpu, PersistentStagesLoopOverRowsFp32, check_many_rows<Op, float>())         \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Gpu, PersistentStagesLoopOverRowsFp16, check_many_rows<Op, __half>())        \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Gpu, PersistentStagesLoopOverRowsBf16, check_many_rows<Op, __nv_bfloat16>()) \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Api, ZeroTokensAndBadInputsWriteNothing,                                     \
                           ResidualRows::check_bad_inputs_write_nothing<Op>())                              \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Api, ClusterAndPdlVariantsReplayInGraphs, check_sample_replays_in_graphs<Op>())
