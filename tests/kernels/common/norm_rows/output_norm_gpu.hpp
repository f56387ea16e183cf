// tests/kernels/common/norm_rows/output_norm_gpu.hpp: the row kind of the RMS norm ops with a separate
// output (rmsnorm, gemma_rmsnorm) for the shared GPU checks of rows_gpu.hpp: its edge shapes (T = 1,
// h = 77 and other odd widths, strided and unaligned rows, in place, interleaved halves of one buffer,
// more than 65,535 rows), its problems with poisoned outputs, padding and guard zones, and its bad inputs.
//
// An op's *_gpu_test.cu defines its traits (rows_gpu.hpp says what they hold, with Rows = OutputRows) and
// instantiates its tests with KTUNE_OUTPUT_NORM_GPU_TESTS(Op).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "rows_gpu.hpp"

namespace ktune::test::norm_rows {

struct OutputRows {
  /// Where the output lives: its own buffer; the input itself (in place); the second half of rows of one
  /// [T, 2h]-like buffer whose first half is the input.
  enum class Layout { separate, in_place, interleaved };

  struct Case {
    const char* name;
    std::int64_t tokens, h, in_stride, out_stride;
    std::int64_t offset;  // elements each tensor starts past a 256-byte boundary
    Values values;
    Layout layout;
  };

  static constexpr Case cases[] = {
      {"T1", 1, 256, 256, 256, 0, Values::random, Layout::separate},
      {"odd_T", 7, 1000, 1000, 1000, 0, Values::random, Layout::separate},
      {"long_row", 3, 8192, 8192, 8192, 0, Values::random, Layout::separate},
      {"h_77", 5, 77, 77, 77, 0, Values::random, Layout::separate},      // no vector width divides 77
      {"h_4100", 3, 4100, 4100, 4100, 0, Values::random, Layout::separate},  // S: 8-byte vectors (gcd)
      {"tiny_h", 3, 16, 16, 16, 0, Values::random, Layout::separate},    // fewer vectors than a cluster
      {"strided", 4, 512, 640, 520, 0, Values::random, Layout::separate},
      {"offset", 3, 512, 512, 512, 1, Values::random, Layout::separate},  // one element past alignment
      {"nan_row", 4, 1024, 1024, 1024, 0, Values::nan_row, Layout::separate},
      {"large", 2, 2048, 2048, 2048, 0, Values::large, Layout::separate},  // fp16 x^2 overflows
      {"in_place", 6, 1024, 1024, 1024, 0, Values::random, Layout::in_place},
      {"interleaved", 5, 256, 512, 512, 0, Values::random, Layout::interleaved},
      {"short_rows", 33, 128, 128, 128, 0, Values::random, Layout::separate},  // warp rows
      {"short_strided", 9, 64, 72, 80, 0, Values::random, Layout::separate},
      {"short_T1", 1, 32, 32, 32, 0, Values::random, Layout::separate},
      {"smem_48k", 2, 12288, 12288, 12288, 0, Values::random, Layout::separate},  // stage 1 at 48 KB
  };
  static constexpr int kOddT = 1, kH77 = 3, kTinyH = 5, kStrided = 6, kOffset = 7, kInPlace = 10, kShortRows = 12;

  // More rows than row groups can be resident, and more than a 16-bit grid dimension holds: every
  // persistent group takes several rows and the one-row-per-block stages index rows past 65,535.
  static constexpr Case many_rows_cases[] = {
      {"rows_70001", 70001, 64, 64, 72, 0, Values::random, Layout::separate},
      {"many_rows", 3001, 4096, 4096, 4096, 0, Values::random, Layout::separate},
      {"many_in_place", 1999, 2048, 2048, 2048, 0, Values::random, Layout::in_place},
  };
  static constexpr int kManyRows = 1;

  /// Besides S and the fallback, one point of each of stages 0, 1 and 7 on many rows (the rows past
  /// 65,535 are the same code for every one-row-per-block point).
  static constexpr std::array<const char*, 3> one_block_per_row_sample = {
      "vb_16.vpt_2.stage_0.cs_1.pdl_1", "vb_16.vpt_1.stage_1.cs_2.pdl_1", "vb_16.vpt_4.stage_7.cs_1.pdl_1"};

  static constexpr int api_graph_cases[] = {kOddT, kOffset, kInPlace};  // tuned or general; fallback; in place
  static constexpr int sample_graph_cases[] = {kOddT, kShortRows, kInPlace};
  static constexpr int sanitizer_cases[] = {kOddT, kTinyH, kH77, kShortRows, kInPlace};

  /// One point of each structure (and S, and S's point as a variant): the graph-replay and
  /// compute-sanitizer sample.
  static constexpr const char* sample[] = {
      "original",
      "vb_16.vpt_2.stage_0.cs_1.pdl_0",
      "vb_16.vpt_1.stage_1.cs_4.pdl_1",
      "vb_16.vpt_4.stage_0.cs_8.pdl_1",
      "vb_0.vpt_1.stage_2.cs_1.pdl_0",
      "vb_16.vpt_1.stage_2.cs_1.pdl_1",
      "vb_16.vpt_2.stage_3.cs_1.pdl_1",
      "vb_16.vpt_2.stage_4.cs_1.pdl_1",
      "vb_16.vpt_1.stage_5.cs_4.pdl_1",
      "vb_16.vpt_2.stage_6.cs_1.pdl_1",
      "vb_16.vpt_4.stage_7.cs_1.pdl_1",
  };

  /// Feasible sm_90 points of stages 3-7 (one row stream fewer than the residual kind: 16-bit warp rows
  /// at vpt 8 fit; lean registers at vpt 1, 2, 4, 8 x pdl), and of those the persistent ones (stages 3, 4, 6).
  static constexpr std::size_t stage_3_to_7_points(std::size_t) { return 24 + 8; }
  static constexpr int persistent_variants(std::size_t) { return 18; }

  template <class Op, class E>
  struct Problem;

  /// T = 0 is a no-op; bad sizes, strides, pointers, eps, overlaps and dtypes are refused; none writes.
  template <class Op>
  static void check_bad_inputs_write_nothing();
};

/// One case for element type E: host images of the buffers (tensors plus poisoned padding), device
/// buffers, and the float64 reference, computed once and shared by every variant.
template <class Op, class E>
struct OutputRows::Problem {
  Case c;
  std::int64_t in_len, out_len, w_len;
  std::vector<E> in0, out0, w0;  // out0: the output buffer's image (poison) when it has its own
  std::vector<double> ref;       // [tokens, h]
  DeviceBuffer<E> d_in, d_out, d_w;

  Problem(const Case& cs, std::uint64_t seed)
      : c(cs),
        in_len(cs.offset + (cs.tokens - 1) * cs.in_stride + cs.h + guard +
               (cs.layout == Layout::interleaved ? cs.h : 0)),
        out_len(cs.layout == Layout::separate ? cs.offset + (cs.tokens - 1) * cs.out_stride + cs.h + guard : 0),
        w_len(cs.offset + cs.h + guard),
        in0(in_len, poison<E>()),
        out0(out_len, poison<E>()),
        w0(w_len, poison<E>()),
        d_in(in_len),
        d_out(out_len),
        d_w(w_len) {
    for (std::int64_t t = 0; t < c.tokens; ++t) {
      for (std::int64_t i = 0; i < c.h; ++i) {
        const auto k = static_cast<std::uint64_t>(t * c.h + i);
        float a = Op::input_value(Op::Tensor::input, seed, k);
        // In place the output cannot be poisoned: |input| in [8, 15.5] makes every output (at most
        // 15.5 / 8 * 1.5 = 2.9 in magnitude) differ from the input it overwrites.
        if (c.layout == Layout::in_place) a = (a < 0 ? -1.f : 1.f) * (8.f + 2.f * (std::fabs(a) - 0.25f));
        if (c.values == Values::large) a *= 15000.f;  // |input| up to 60000: x^2 > 65504
        if (c.values == Values::nan_row && t == kNanRow && i == kNanCol) a = std::numeric_limits<float>::quiet_NaN();
        in0[c.offset + t * c.in_stride + i] = from_float<E>(a);
      }
    }
    for (std::int64_t i = 0; i < c.h; ++i)
      w0[c.offset + i] = from_float<E>(Op::input_value(Op::Tensor::weight, seed, static_cast<std::uint64_t>(i)));
    std::vector<double> din(in0.size()), dw(w0.size());
    for (std::size_t i = 0; i < in0.size(); ++i) din[i] = to_float(in0[i]);
    for (std::size_t i = 0; i < w0.size(); ++i) dw[i] = to_float(w0[i]);
    ref.resize(static_cast<std::size_t>(c.tokens * c.h));
    Op::reference(din.data() + c.offset, dw.data() + c.offset, c.tokens, c.h, c.in_stride, Op::default_eps,
                  dtype_v<E>, ref.data());
  }

  bool allocated() const { return d_in.ptr && d_w.ptr && (c.layout != Layout::separate || d_out.ptr); }

  /// Where the output rows start, in elements past their buffer's start.
  std::int64_t output_offset() const { return c.offset + (c.layout == Layout::interleaved ? c.h : 0); }
  E* output() const { return (c.layout == Layout::separate ? d_out.ptr : d_in.ptr) + output_offset(); }
  typename Op::template Args<E> args() const {
    return {output(), d_in.ptr + c.offset, d_w.ptr + c.offset, c.tokens, c.h, c.out_stride, c.in_stride, Op::default_eps};
  }

  /// Whether every tensor's start, h and the strides are whole vectors of `vec` elements.
  bool fits_vector(std::int64_t vec) const {
    return c.offset % vec == 0 && output_offset() % vec == 0 && c.h % vec == 0 && c.in_stride % vec == 0 &&
           c.out_stride % vec == 0;
  }

  Status api(cudaStream_t s) const {
    const auto a = args();
    return Op::call(a.output, a.input, a.weight, a.tokens, a.h, a.eps, s, a.output_stride, a.input_stride);
  }
  Status dtype_entry(cudaStream_t s) const {
    const auto a = args();
    return Op::run_dtype(dtype_v<E>, a.output, a.input, a.weight, a.tokens, a.h, a.eps, s, a.output_stride,
                         a.input_stride);
  }

  /// Puts the inputs and the poisoned output back.
  Status restore() const {
    KTUNE_CUDA_TRY(cudaMemcpy(d_in.ptr, in0.data(), in0.size() * sizeof(E), cudaMemcpyHostToDevice));
    KTUNE_CUDA_TRY(cudaMemcpy(d_w.ptr, w0.data(), w0.size() * sizeof(E), cudaMemcpyHostToDevice));
    if (out_len) KTUNE_CUDA_TRY(cudaMemcpy(d_out.ptr, out0.data(), out0.size() * sizeof(E), cudaMemcpyHostToDevice));
    return Status::success();
  }

  struct Result {
    std::vector<E> in, out, w;
  };
  Status fetch(Result& r) const {
    r.in.resize(in0.size());
    r.out.resize(out0.size());
    r.w.resize(w0.size());
    KTUNE_CUDA_TRY(cudaMemcpy(r.in.data(), d_in.ptr, r.in.size() * sizeof(E), cudaMemcpyDeviceToHost));
    KTUNE_CUDA_TRY(cudaMemcpy(r.w.data(), d_w.ptr, r.w.size() * sizeof(E), cudaMemcpyDeviceToHost));
    if (out_len) KTUNE_CUDA_TRY(cudaMemcpy(r.out.data(), d_out.ptr, r.out.size() * sizeof(E), cudaMemcpyDeviceToHost));
    return Status::success();
  }

  /// The output rows as [tokens, h].
  std::vector<E> output_rows(const Result& r) const {
    const std::vector<E>& buf = c.layout == Layout::separate ? r.out : r.in;
    std::vector<E> out(static_cast<std::size_t>(c.tokens * c.h));
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t i = 0; i < c.h; ++i) out[t * c.h + i] = buf[output_offset() + t * c.out_stride + i];
    return out;
  }

  bool same_outputs(const Result& a, const Result& b) const { return bitwise_equal(output_rows(a), output_rows(b)); }

  /// Every element outside the output rows unchanged (the input, its padding, the output's padding and
  /// guard zone, the weight); the output rows within tolerance of the float64 reference, or of S's output
  /// `s` where given.
  ::testing::AssertionResult check(const Result& r, const Result* s = nullptr) const {
    const Tolerance tol = default_tolerance(dtype_v<E>);
    std::vector<bool> is_out_in(in0.size(), false), is_out_out(out0.size(), false);
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t i = 0; i < c.h; ++i) {
        const std::int64_t k = output_offset() + t * c.out_stride + i;
        if (c.layout == Layout::separate) is_out_out[k] = true;
        else is_out_in[k] = true;
      }
    for (std::size_t k = 0; k < in0.size(); ++k)
      if (!is_out_in[k] && bits_of(r.in[k]) != bits_of(in0[k]))
        return ::testing::AssertionFailure() << "input buffer element " << k << " (not an output) was written";
    for (std::size_t k = 0; k < out0.size(); ++k)
      if (!is_out_out[k] && bits_of(r.out[k]) != bits_of(out0[k]))
        return ::testing::AssertionFailure() << "output buffer element " << k << " outside the rows was written";
    for (std::size_t k = 0; k < w0.size(); ++k)
      if (bits_of(r.w[k]) != bits_of(w0[k])) return ::testing::AssertionFailure() << "weight element " << k << " was written";
    const std::vector<E> out = output_rows(r);
    std::vector<double> want = ref;
    if (s) {
      const std::vector<E> s_rows = output_rows(*s);
      for (std::size_t k = 0; k < want.size(); ++k) want[k] = to_float(s_rows[k]);
    }
    const Comparison cmp = compare(out.data(), want.data(), out.size(), tol);
    if (!cmp.passed) return ::testing::AssertionFailure() << (s ? "against S: " : "against float64: ") << cmp.summary();
    return ::testing::AssertionSuccess();
  }
};

template <class Op>
void OutputRows::check_bad_inputs_write_nothing() {
  using E = __half;
  const Problem<Op, E> pb(cases[kStrided], test_seed());
  ASSERT_TRUE(pb.allocated());
  KTUNE_ASSERT_OK(pb.restore());
  const auto a = pb.args();
  E* misaligned = reinterpret_cast<E*>(reinterpret_cast<char*>(a.output) + 1);
  const E* in = a.input;
  const Status calls[] = {
      Op::call(a.output, in, a.weight, 0, a.h, a.eps, nullptr, a.output_stride, a.input_stride),
      Op::call(a.output, in, a.weight, -1, a.h, a.eps, nullptr, -1, -1),
      Op::call(a.output, in, a.weight, a.tokens, -4, a.eps, nullptr, -1, -1),
      Op::call(a.output, in, a.weight, a.tokens, a.h, a.eps, nullptr, a.h - 1, -1),
      Op::call(a.output, in, static_cast<const E*>(nullptr), a.tokens, a.h, a.eps, nullptr, -1, -1),
      Op::call(misaligned, in, a.weight, a.tokens, a.h, a.eps, nullptr, -1, -1),
      Op::call(a.output, in, a.weight, a.tokens, a.h, std::numeric_limits<float>::quiet_NaN(), nullptr, -1, -1),
      Op::call(const_cast<E*>(in) + 1, in, a.weight, a.tokens, a.h, a.eps, nullptr, -1, -1),  // overlap
      Op::run_dtype(static_cast<DType>(7), a.output, in, a.weight, a.tokens, a.h, a.eps, nullptr, -1, -1),
  };
  expect_only_the_no_op_accepted(calls);
  KTUNE_ASSERT_CUDA(cudaDeviceSynchronize());
  typename Problem<Op, E>::Result r;
  KTUNE_ASSERT_OK(pb.fetch(r));
  EXPECT_TRUE(bitwise_equal(r.in, pb.in0)) << "input written";
  EXPECT_TRUE(bitwise_equal(r.out, pb.out0)) << "output written";
}

}  // namespace ktune::test::norm_rows

/// Every GPU test of an op with a separate output, Op its traits struct.
#define KTUNE_OUTPUT_NORM_GPU_TESTS(Op)                                                 \
  KTUNE_NORM_ROWS_GPU_TESTS(Op)                                                         \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Gpu, ManyRowsFp32, check_many_rows<Op, float>())         \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Gpu, ManyRowsBf16, check_many_rows<Op, __nv_bfloat16>()) \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Api, ZeroTokensAndBadInputsWriteNothing,                 \
                           OutputRows::check_bad_inputs_write_nothing<Op>())            \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Api, StructureSampleReplaysInGraphs, check_sample_replays_in_graphs<Op>())
