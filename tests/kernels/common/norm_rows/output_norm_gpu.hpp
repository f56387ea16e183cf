// tests/kernels/common/norm_rows/output_norm_gpu.hpp: the GPU checks of an RMS norm op with a separate
// output (rmsnorm, gemma_rmsnorm), written once for both: every registered variant and S x dtype against
// the float64 reference and against S, on edge shapes (T = 1, h = 77 and other odd widths, strided and
// unaligned rows, in place, interleaved halves of one buffer, more than 65,535 rows), with poisoned
// outputs, padding and guard zones; the persistent stages over many rows; the public API (fallbacks,
// T = 0, bad inputs, graph capture and replay, determinism); and a compute-sanitizer sample.
//
// An op's *_gpu_test.cu defines its Op (name, namespace pieces, public call) and instantiates the tests.
// Op must provide: name; template Args<E>; Space; Tensor and input_value(Tensor, seed, i); default_eps;
// reference(...); call(...) (the typed public API); run_dtype(...); choose(...); lookup(...) (the tuned
// table's answer) and general_id().
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
#include <ktune/registry.hpp>
#include <ktune/space.hpp>
#include <ktune/tuned.hpp>
#include <ktune/verify.hpp>

#include "support/gpu.hpp"

namespace ktune::test::norm_rows {

constexpr std::int64_t guard = 40;  // poisoned elements after each tensor (more than a 16-byte vector)

enum class Values { random, nan_row, large };
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

inline const Case cases[] = {
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
constexpr int kOddT = 1, kH77 = 3, kTinyH = 5, kStrided = 6, kOffset = 7, kInPlace = 10, kShortRows = 12;

// More rows than row groups can be resident, and more than a 16-bit grid dimension holds: every persistent
// group takes several rows and the one-row-per-block stages index rows past 65,535.
inline const Case many_rows_cases[] = {
    {"rows_70001", 70001, 64, 64, 72, 0, Values::random, Layout::separate},
    {"many_rows", 3001, 4096, 4096, 4096, 0, Values::random, Layout::separate},
    {"many_in_place", 1999, 2048, 2048, 2048, 0, Values::random, Layout::in_place},
};
constexpr int kNanRow = 1, kNanCol = 5;

template <class E>
struct DeviceBuffer {
  E* p = nullptr;
  explicit DeviceBuffer(std::size_t count) {
    if (count && cudaMalloc(&p, count * sizeof(E)) != cudaSuccess) p = nullptr;
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

template <class E>
E poison() {
  return from_bits<E>(poison_bits<E>());
}

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { (void)cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }
  ~Stream() {
    if (s) cudaStreamDestroy(s);
  }
};

/// One case for element type E: host images of the buffers (tensors plus poisoned padding), device
/// buffers, and the float64 reference, computed once and shared by every variant.
template <class Op, class E>
struct Problem {
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

  bool allocated() const { return d_in.p && d_w.p && (c.layout != Layout::separate || d_out.p); }

  E* output() const {
    switch (c.layout) {
      case Layout::in_place: return d_in.p + c.offset;
      case Layout::interleaved: return d_in.p + c.offset + c.h;
      case Layout::separate: default: return d_out.p + c.offset;
    }
  }
  typename Op::template Args<E> args() const {
    return {output(), d_in.p + c.offset, d_w.p + c.offset, c.tokens, c.h, c.out_stride, c.in_stride, Op::default_eps};
  }

  /// Puts the inputs and the poisoned output back.
  Status restore() const {
    KTUNE_CUDA_TRY(cudaMemcpy(d_in.p, in0.data(), in0.size() * sizeof(E), cudaMemcpyHostToDevice));
    KTUNE_CUDA_TRY(cudaMemcpy(d_w.p, w0.data(), w0.size() * sizeof(E), cudaMemcpyHostToDevice));
    if (out_len) KTUNE_CUDA_TRY(cudaMemcpy(d_out.p, out0.data(), out0.size() * sizeof(E), cudaMemcpyHostToDevice));
    return Status::success();
  }

  struct Result {
    std::vector<E> in, out, w;
  };
  Status fetch(Result& r) const {
    r.in.resize(in0.size());
    r.out.resize(out0.size());
    r.w.resize(w0.size());
    KTUNE_CUDA_TRY(cudaMemcpy(r.in.data(), d_in.p, r.in.size() * sizeof(E), cudaMemcpyDeviceToHost));
    KTUNE_CUDA_TRY(cudaMemcpy(r.w.data(), d_w.p, r.w.size() * sizeof(E), cudaMemcpyDeviceToHost));
    if (out_len) KTUNE_CUDA_TRY(cudaMemcpy(r.out.data(), d_out.p, r.out.size() * sizeof(E), cudaMemcpyDeviceToHost));
    return Status::success();
  }

  /// The output rows as [tokens, h].
  std::vector<E> output_rows(const Result& r) const {
    const std::vector<E>& buf = c.layout == Layout::separate ? r.out : r.in;
    const std::int64_t base = c.offset + (c.layout == Layout::interleaved ? c.h : 0);
    std::vector<E> out(static_cast<std::size_t>(c.tokens * c.h));
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t i = 0; i < c.h; ++i) out[t * c.h + i] = buf[base + t * c.out_stride + i];
    return out;
  }

  /// Every element outside the output rows unchanged (the input, its padding, the output's padding and
  /// guard zone, the weight); the output rows within tolerance of `want` (the float64 reference unless
  /// another is given: S's output, as doubles).
  ::testing::AssertionResult check(const Result& r, const std::vector<double>* want = nullptr) const {
    const Tolerance tol = default_tolerance(dtype_v<E>);
    std::vector<bool> is_out_in(in0.size(), false), is_out_out(out0.size(), false);
    const std::int64_t base = c.offset + (c.layout == Layout::interleaved ? c.h : 0);
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t i = 0; i < c.h; ++i) {
        const std::int64_t k = base + t * c.out_stride + i;
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
    const Comparison cmp = compare(out.data(), (want ? *want : ref).data(), out.size(), tol);
    if (!cmp.passed) return ::testing::AssertionFailure() << (want ? "against S: " : "against float64: ") << cmp.summary();
    return ::testing::AssertionSuccess();
  }
};

template <class E>
bool bitwise_equal(const std::vector<E>& x, const std::vector<E>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(E)) == 0;
}

template <class Op>
bool is_vector_variant(const Variant& v) {
  return v.is_original() || v.point[Op::Space::kVb] != 0;
}

// ---- every registered variant, against float64 and against S ------------------------------------

template <class Op, class E>
void check_every_variant() {
  const auto variants = Registry::global().select(Op::name, dtype_v<E>, 90);
  constexpr std::size_t feasible = FeasibleSet<typename Op::Space, 90, sizeof(E)>::count;
  static_assert(feasible == 120, "96 points of stages 0-2 and 24 of stages 3-6, for both element sizes");
  ASSERT_EQ(variants.size(), feasible + 1) << "every feasible sm_90 variant and S are registered per dtype";
  const Variant* original = Registry::global().find(Op::name, dtype_v<E>, 90, "original");
  ASSERT_NE(original, nullptr);
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  std::map<std::string, int> accepted;
  int against_s = 0;
  for (std::size_t ci = 0; ci < std::size(cases); ++ci) {
    const Case& c = cases[ci];
    const std::uint64_t seed = test_seed() + ci;
    SCOPED_TRACE(std::string("case ") + c.name + ", dtype " + name(dtype_v<E>) +
                 ", KTUNE_TEST_SEED=" + std::to_string(test_seed()));
    const Problem<Op, E> pb(c, seed);
    ASSERT_TRUE(pb.allocated());
    const auto args = pb.args();
    // S's output on this case, where S takes it: every variant is compared with it too.
    std::vector<double> s_out;
    if (original->can_implement(&args).ok() && c.values == Values::random) {
      KTUNE_ASSERT_OK(pb.restore());
      KTUNE_ASSERT_OK(original->run(&args, stream.s));
      KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
      typename Problem<Op, E>::Result r;
      KTUNE_ASSERT_OK(pb.fetch(r));
      for (const E& v : pb.output_rows(r)) s_out.push_back(to_float(v));
    }
    for (const Variant* v : variants) {
      SCOPED_TRACE("variant " + v->id);
      const Status can = v->can_implement(&args);
      constexpr std::int64_t vec = 16 / sizeof(E);  // elements of a 16-byte vector
      const bool misfit = c.offset % vec || c.h % vec || c.in_stride % vec || c.out_stride % vec;
      if (misfit && is_vector_variant<Op>(*v) && !v->is_original()) {
        EXPECT_FALSE(can.ok()) << "a 16-byte-vector variant must refuse misaligned pointers, strides or h";
      }
      if (!can.ok()) {
        EXPECT_TRUE(can.code == StatusCode::unsupported || can.code == StatusCode::too_large) << can.message;
        continue;
      }
      ++accepted[v->id];
      KTUNE_ASSERT_OK(pb.restore());
      KTUNE_ASSERT_OK(v->run(&args, stream.s));
      KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
      typename Problem<Op, E>::Result first;
      KTUNE_ASSERT_OK(pb.fetch(first));
      ASSERT_TRUE(pb.check(first));
      if (!s_out.empty()) {
        ASSERT_TRUE(pb.check(first, &s_out));
        ++against_s;
      }
      if (ci == kOddT) {  // determinism: a second run of the same input gives the same bits
        KTUNE_ASSERT_OK(pb.restore());
        KTUNE_ASSERT_OK(v->run(&args, stream.s));
        KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
        typename Problem<Op, E>::Result second;
        KTUNE_ASSERT_OK(pb.fetch(second));
        EXPECT_TRUE(bitwise_equal(pb.output_rows(first), pb.output_rows(second))) << "two runs differ";
      }
    }
  }
  for (const Variant* v : variants) EXPECT_GE(accepted[v->id], 5) << v->id << " ran on too few cases";
  EXPECT_GE(accepted["original"], 12) << "S runs on every case its gcd vector lines up with";
  EXPECT_GT(against_s, 500) << "variants compared with S";
}

// ---- many rows: the persistent stages loop, rows past 65,535 -------------------------------------

template <class Op, class E>
void check_many_rows() {
  const auto variants = Registry::global().select(Op::name, dtype_v<E>, 90);
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  std::map<std::string, int> accepted;
  for (std::size_t ci = 0; ci < std::size(many_rows_cases); ++ci) {
    const Case& c = many_rows_cases[ci];
    SCOPED_TRACE(std::string("case ") + c.name + ", dtype " + name(dtype_v<E>) +
                 ", KTUNE_TEST_SEED=" + std::to_string(test_seed()));
    const Problem<Op, E> pb(c, test_seed() + 50 + ci);
    ASSERT_TRUE(pb.allocated());
    const auto args = pb.args();
    for (const Variant* v : variants) {
      // Every persistent variant; of the others S, the fallback and one register-staged point per case
      // (the rows past 65,535 are the same code for every one-row-per-block point).
      const bool persistent = !v->is_original() && Op::Space::persistent(v->point[Op::Space::kStage]);
      if (!persistent && !v->is_original() && v->id != "vb_0.vpt_1.stage_2.cs_1.pdl_0" &&
          v->id != "vb_16.vpt_2.stage_0.cs_1.pdl_1" && v->id != "vb_16.vpt_1.stage_1.cs_2.pdl_1")
        continue;
      SCOPED_TRACE("variant " + v->id);
      if (!v->can_implement(&args).ok()) continue;
      ++accepted[v->id];
      KTUNE_ASSERT_OK(pb.restore());
      KTUNE_ASSERT_OK(v->run(&args, stream.s));
      KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
      typename Problem<Op, E>::Result r;
      KTUNE_ASSERT_OK(pb.fetch(r));
      ASSERT_TRUE(pb.check(r));
    }
  }
  for (const Variant* v : variants)
    if (!v->is_original() && Op::Space::persistent(v->point[Op::Space::kStage]))
      EXPECT_GE(accepted[v->id], 1) << v->id << " ran on no many-rows case";
  EXPECT_EQ(accepted["original"], 3) << "S on every many-rows case";
  EXPECT_EQ(accepted["vb_0.vpt_1.stage_2.cs_1.pdl_0"], 3);
}

// ---- the public API -----------------------------------------------------------------------------

template <class Op, class E>
void check_api_on_every_case() {
  Stream stream;
  for (std::size_t ci = 0; ci < std::size(cases); ++ci) {
    const Case& c = cases[ci];
    SCOPED_TRACE(std::string("case ") + c.name + ", KTUNE_TEST_SEED=" + std::to_string(test_seed()));
    const Problem<Op, E> pb(c, test_seed() + 100 + ci);
    ASSERT_TRUE(pb.allocated());
    const auto a = pb.args();
    KTUNE_ASSERT_OK(pb.restore());
    KTUNE_ASSERT_OK(Op::call(a.output, a.input, a.weight, a.tokens, a.h, a.eps, stream.s, a.output_stride, a.input_stride));
    KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
    typename Problem<Op, E>::Result r;
    KTUNE_ASSERT_OK(pb.fetch(r));
    ASSERT_TRUE(pb.check(r));
    // The runtime-dtype entry's body: the same call, the same bits.
    KTUNE_ASSERT_OK(pb.restore());
    KTUNE_ASSERT_OK(Op::run_dtype(dtype_v<E>, a.output, a.input, a.weight, a.tokens, a.h, a.eps, stream.s,
                                  a.output_stride, a.input_stride));
    KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
    typename Problem<Op, E>::Result r2;
    KTUNE_ASSERT_OK(pb.fetch(r2));
    EXPECT_TRUE(bitwise_equal(pb.output_rows(r), pb.output_rows(r2)));
  }
}

template <class Op>
void check_bad_inputs_write_nothing() {
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
  EXPECT_TRUE(calls[0].ok()) << "T = 0 is a no-op";
  for (std::size_t k = 1; k < std::size(calls); ++k) EXPECT_FALSE(calls[k].ok()) << "call " << k;
  EXPECT_EQ(calls[8].code, StatusCode::unsupported);
  KTUNE_ASSERT_CUDA(cudaDeviceSynchronize());
  typename Problem<Op, E>::Result r;
  KTUNE_ASSERT_OK(pb.fetch(r));
  EXPECT_TRUE(bitwise_equal(r.in, pb.in0)) << "input written";
  EXPECT_TRUE(bitwise_equal(r.out, pb.out0)) << "output written";
}

template <class Op>
void check_choice() {
  const DeviceInfo* dev = nullptr;
  KTUNE_ASSERT_OK(current_device(dev));
  TunedChoice c;
  KTUNE_ASSERT_OK(Op::choose(DType::bf16, 16, 4096, c));
  const TunedChoice want = Op::lookup(dev->table_arch, dev->name, DType::bf16, 16, 4096);
  EXPECT_EQ(c.variant, want.variant);
  ASSERT_NE(c.id, nullptr);
  if (c.variant < 0) EXPECT_STREQ(c.id, Op::general_id());
  else EXPECT_TRUE(Op::Space::space.parse(c.id).ok) << c.id;
  EXPECT_EQ(Op::choose(static_cast<DType>(9), 16, 4096, c).code, StatusCode::unsupported);
}

/// Captures `run` on a stream into a graph; replays it twice on fresh inputs: both replays match a
/// direct run bitwise.
template <class Op, class E, class Run>
void check_graph_replay(const Problem<Op, E>& pb, Run run) {
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  KTUNE_ASSERT_OK(pb.restore());
  KTUNE_ASSERT_OK(run(stream.s));
  KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
  typename Problem<Op, E>::Result direct;
  KTUNE_ASSERT_OK(pb.fetch(direct));
  ASSERT_TRUE(pb.check(direct));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  KTUNE_ASSERT_CUDA(cudaStreamBeginCapture(stream.s, cudaStreamCaptureModeGlobal));
  const Status captured = run(stream.s);
  KTUNE_ASSERT_CUDA(cudaStreamEndCapture(stream.s, &graph));
  KTUNE_ASSERT_OK(captured);
  KTUNE_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    KTUNE_ASSERT_OK(pb.restore());
    KTUNE_ASSERT_CUDA(cudaGraphLaunch(exec, stream.s));
    KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
    typename Problem<Op, E>::Result r;
    KTUNE_ASSERT_OK(pb.fetch(r));
    EXPECT_TRUE(bitwise_equal(pb.output_rows(direct), pb.output_rows(r))) << "replay " << replay << " differs";
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

/// One point of each structure (and S): the graph-replay and compute-sanitizer sample.
inline const char* const sample[] = {
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
};

template <class Op>
void check_api_graph_replay() {
  for (int ci : {kOddT, kOffset, kInPlace}) {  // the tuned or general variant; the fallback; in place
    SCOPED_TRACE(cases[ci].name);
    const Problem<Op, __nv_bfloat16> pb(cases[ci], test_seed() + 7);
    ASSERT_TRUE(pb.allocated());
    const auto a = pb.args();
    check_graph_replay(pb, [&](cudaStream_t s) {
      return Op::call(a.output, a.input, a.weight, a.tokens, a.h, a.eps, s, a.output_stride, a.input_stride);
    });
  }
}

template <class Op>
void check_sample_replays_in_graphs() {
  std::map<std::string, int> replayed;
  for (const Case& c : {cases[kOddT], cases[kShortRows], cases[kInPlace]}) {
    const Problem<Op, __half> pb(c, test_seed() + 8);
    ASSERT_TRUE(pb.allocated());
    const auto args = pb.args();
    for (const char* id : sample) {
      SCOPED_TRACE(std::string(id) + " on " + c.name);
      const Variant* v = Registry::global().find(Op::name, DType::f16, 90, id);
      ASSERT_NE(v, nullptr) << "not registered";
      if (!v->can_implement(&args).ok()) continue;
      ++replayed[id];
      check_graph_replay(pb, [&](cudaStream_t s) { return v->run(&args, s); });
    }
  }
  for (const char* id : sample) EXPECT_GE(replayed[id], 1) << id << " was never replayed";
}

/// compute-sanitizer (memcheck, racecheck) runs this: each sample variant once per case.
template <class Op>
void run_sanitizer_sample() {
  Stream stream;
  const Case sample_cases[] = {cases[kOddT], cases[kTinyH], cases[kH77], cases[kShortRows], cases[kInPlace],
                               many_rows_cases[1]};
  for (const Case& c : sample_cases) {
    const Problem<Op, __half> pb(c, test_seed() + 9);
    ASSERT_TRUE(pb.allocated());
    const auto args = pb.args();
    for (const char* id : sample) {
      SCOPED_TRACE(std::string(id) + " on " + c.name);
      const Variant* v = Registry::global().find(Op::name, DType::f16, 90, id);
      ASSERT_NE(v, nullptr) << "not registered";
      if (!v->can_implement(&args).ok()) continue;
      KTUNE_ASSERT_OK(pb.restore());
      KTUNE_ASSERT_OK(v->run(&args, stream.s));
      KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream.s));
      typename Problem<Op, __half>::Result r;
      KTUNE_ASSERT_OK(pb.fetch(r));
      EXPECT_TRUE(pb.check(r));
    }
  }
}

}  // namespace ktune::test::norm_rows
