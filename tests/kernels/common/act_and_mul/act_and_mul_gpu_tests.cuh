// tests/kernels/common/act_and_mul/act_and_mul_gpu_tests.cuh: the GPU tests of an act-and-mul op
// (silu_and_mul, gelu_and_mul, gelu_tanh_and_mul), written once: every registered variant (and S) x dtype
// against the float64 reference within the spec's tolerance and, for an op whose variants compute S's
// expression with S's functions, bitwise against S wherever S runs; on small and edge shapes, rows past
// 65,535 (grid.y-free indexing), unaligned and strided calls, with poisoned outputs; the public API
// (fallbacks, bad inputs, T = 0, choice, graph capture, determinism); the compute-sanitizer sample.
//
// An op's *_gpu_test.cu defines its traits Op (KTUNE_ACT_AND_MUL_CUDA_NAMES, act_and_mul_op.hpp, plus
// bitwise_like_original) and expands KTUNE_ACT_AND_MUL_GPU_TESTS(Op), which defines the suites
// <Op>Variants and <Op>Api and the test SanitizerSample.<Op>.
//
// Sanitizer sample (small cases, fp32 and bf16, each variant once):
//   original                                  S
//   tpb_256.vb_16.vpt_2.rpb_1.split_1.pdl_0   the default configuration
//   tpb_128.vb_16.vpt_4.rpb_1.split_1.pdl_1   one step per block (rows split across blocks), PDL
//   tpb_512.vb_16.vpt_1.rpb_4.split_0.pdl_1   four whole rows per block, PDL
//   tpb_256.vb_<elem>.vpt_4.rpb_1.split_1.pdl_0  the unaligned fallback (vb_4 for fp32, vb_2 for bf16)
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
#include <ktune/fill.cuh>
#include <ktune/harness.hpp>
#include <ktune/registry.hpp>
#include <ktune/space.hpp>
#include <ktune/spec.hpp>
#include <ktune/verify.hpp>

#include "act_and_mul_op.hpp"
#include "bench/build_info.hpp"
#include "support/device_preparation_gpu.hpp"
#include "support/gpu.hpp"

namespace ktune::test::act_and_mul {

/// The op's spec.json as built into this binary: the tests run where the sources are not (tools/gpu.sh
/// remote).
template <class Op>
const Spec& built_in_spec() {
  static const Spec spec = [] {
    const bench::OpBuild* b = bench::build_info().find(Op::name);
    if (!b) throw std::runtime_error(std::string(Op::name) + ": no spec.json built into this binary");
    return parse_spec_text(b->spec_json, std::string(Op::name) + "/spec.json (built in)");
  }();
  return spec;
}

/// The spec's tolerance for E (gelu_tanh_and_mul's allow tanh.approx.f32; spec.json says why).
template <class Op, class E>
Tolerance spec_tolerance() {
  return built_in_spec<Op>().tolerance_for(dtype_v<E>);
}

struct Case {
  const char* name;
  std::int64_t tokens, d;
  std::int64_t in_stride = 0, out_stride = 0;  // elements; 0: contiguous (2*d, d)
  std::int64_t in_offset = 0, out_offset = 0;  // pointers start this many elements into their buffers
  bool specials = false;                       // plant NaN, inf and large magnitudes in row 0
};

// Small shapes covering: T = 1, odd T, a spec width at T = 1, rows that do not fill rpb blocks, d not a
// multiple of any vector (13, 1), d smaller than one 16-byte pack per thread (8), strided rows (vector
// multiples and odd), pointers not 16-byte aligned, and the special values; then the edge shapes of the
// gelu specs (edge_dims): more rows than grid.y could hold, and a width whose S tail is 8 elements.
template <class Op>
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"T1", 1, 1024},
      {"odd_T", 7, 1000},
      {"spec_width_T1", 1, Op::Space::widest_spec_d},
      {"rows_67", 67, 520},
      {"d_13", 5, 13},
      {"d_1", 4, 1},
      {"d_8_many_rows", 37, 8},
      {"strided_aligned", 6, 256, 2 * 256 + 24, 256 + 40},
      {"strided_odd", 5, 256, 513, 259},
      {"offset_pointers", 3, 512, 0, 0, 1, 3},
      {"specials", 3, 64, 0, 0, 0, 0, true},
      {"rows_65537", 65537, 24},                       // more rows than grid.y could hold, d a pack multiple
      {"rows_70001_odd_d", 70001, 7},                  // the same with a tail in every row
      {"edge_d_4104", 37, 4104},                       // S's scalar tail is 8 elements
  };
  return c;
}

template <class Op>
const Case& find_case(const char* name) {
  for (const Case& c : cases<Op>())
    if (std::string(c.name) == name) return c;
  throw std::logic_error("no such case");
}

constexpr std::int64_t tail_slack = 64;  // poisoned elements past the last row: catches overruns

template <class E>
E quiet_nan() {
  return from_bits<E>(sizeof(E) == 4 ? 0x7FC00000u : std::is_same_v<E, __half> ? 0x7E00u : 0x7FC0u);
}
template <class E>
E max_finite() {
  return from_bits<E>(sizeof(E) == 4 ? 0x7F7FFFFFu : std::is_same_v<E, __half> ? 0x7BFFu : 0x7F7Fu);
}

/// One case's buffers, input (host and device) and float64 reference, for element type E.
template <class Op, class E>
struct Problem {
  using Args = typename Op::template Args<E>;
  Case c;
  std::int64_t is, os;                 // resolved strides
  std::int64_t in_elems, out_elems;    // allocation sizes
  std::vector<E> in_host;              // the whole input allocation; padding holds NaN
  std::vector<double> ref;             // [tokens, d] dense
  DeviceBuffer<E> in, out;

  Problem(const Case& cs, std::uint64_t seed)
      : c(cs),
        is(cs.in_stride ? cs.in_stride : 2 * cs.d),
        os(cs.out_stride ? cs.out_stride : cs.d),
        in_elems(cs.in_offset + (cs.tokens - 1) * is + 2 * cs.d + tail_slack),
        out_elems(cs.out_offset + (cs.tokens - 1) * os + cs.d + tail_slack),
        in(static_cast<std::size_t>(in_elems)),
        out(static_cast<std::size_t>(out_elems)) {
    // Padding NaN: a variant reading outside its rows would turn an output NaN and fail the comparison.
    in_host.assign(static_cast<std::size_t>(in_elems), quiet_nan<E>());
    E* rows = in_host.data() + c.in_offset;
    Op::Harness::random_input(rows, c.tokens, c.d, is, seed);
    if (c.specials) plant_specials(rows);
    ref = Op::reference(rows, c.tokens, c.d, is);
  }

  /// Row 0: x = in[0, i], y = in[0, d + i]. Rows 1.. stay random: NaN must not spread to them.
  void plant_specials(E* row) const {
    const std::int64_t d = c.d;
    auto set = [&](int i, float x, float y) {
      row[i] = from_float<E>(x);
      row[d + i] = from_float<E>(y);
    };
    constexpr float inf = std::numeric_limits<float>::infinity();
    row[0] = quiet_nan<E>();                  // NaN x -> NaN out[0, 0] only
    row[d + 1] = quiet_nan<E>();              // NaN y -> NaN out[0, 1] only
    set(2, inf, 1.5f);                        // +inf
    set(3, -inf, 1.5f);                       // -inf / inf: NaN, as the formula
    set(4, -1.0e4f, 2.0f);                    // exp(-x) overflows: -0, not NaN
    set(5, -100.0f, -2.0f);                   // exp(-x) overflows in fp32, the reference's tiny value
    set(6, -88.0f, 2.0f);                     // denominator in (2^126, 2^128)
    set(7, -87.5f, 2.0f);
    set(8, 80.0f, 0.5f);                      // saturated: the activation of x is x
    row[9] = max_finite<E>();                 // largest finite input: no overflow in intermediate math
    row[d + 9] = from_float<E>(0.75f);
    row[10] = from_float<E>(-to_float(max_finite<E>()));
    row[d + 10] = from_float<E>(3.0f);
    set(11, 0.0f, 3.0f);
    set(12, 1.0e4f, 0.5f);
    set(13, -90.0f, 2.0f);
  }

  bool allocated() const { return in.ptr && out.ptr; }

  Args args() const { return {out.ptr + c.out_offset, in.ptr + c.in_offset, c.tokens, c.d, os, is}; }

  ::testing::AssertionResult upload() const {
    return ok(Status::from_cuda(
        cudaMemcpy(in.ptr, in_host.data(), in_host.size() * sizeof(E), cudaMemcpyHostToDevice), "upload"));
  }

  Status poison(cudaStream_t s) const {
    return fill_bits(out.ptr, static_cast<std::size_t>(out_elems), poison_bits<E>(), s);
  }

  /// The whole output allocation, after the stream's work is done.
  Status download(cudaStream_t s, std::vector<E>& host) const {
    host.resize(static_cast<std::size_t>(out_elems));
    KTUNE_CUDA_TRY(cudaStreamSynchronize(s));
    KTUNE_CUDA_TRY(cudaMemcpy(host.data(), out.ptr, host.size() * sizeof(E), cudaMemcpyDeviceToHost));
    return Status::success();
  }

  /// Every output element against the reference, and every element outside the rows still poisoned.
  ::testing::AssertionResult check(const std::vector<E>& host) const {
    std::vector<E> dense(static_cast<std::size_t>(c.tokens * c.d));
    std::vector<bool> in_rows(host.size(), false);
    for (std::int64_t t = 0; t < c.tokens; ++t)
      for (std::int64_t i = 0; i < c.d; ++i) {
        const auto at = static_cast<std::size_t>(c.out_offset + t * os + i);
        dense[static_cast<std::size_t>(t * c.d + i)] = host[at];
        in_rows[at] = true;
      }
    const Comparison cmp = compare(dense.data(), ref.data(), dense.size(), spec_tolerance<Op, E>());
    if (!cmp.passed) return ::testing::AssertionFailure() << cmp.summary();
    for (std::size_t i = 0; i < host.size(); ++i)
      if (!in_rows[i] && !is_poison(host[i]))
        return ::testing::AssertionFailure() << "wrote element " << i << " outside the output rows";
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult untouched(const std::vector<E>& host) const {
    for (std::size_t i = 0; i < host.size(); ++i)
      if (!is_poison(host[i])) return ::testing::AssertionFailure() << "element " << i << " was written";
    return ::testing::AssertionSuccess();
  }
};

inline bool bitwise_equal(const void* a, const void* b, std::size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

/// The architecture the registered variants were compiled for that matches this device, or 0.
inline int registry_arch() {
  const DeviceInfo* dev = nullptr;
  if (!current_device(dev).ok()) return 0;
  return dev->table_arch;
}

/// Whether a 16-byte variant can take the case: the pointers, d and the strides multiples of the pack.
template <class E>
bool vector_aligned(const Case& c, int vector_bytes) {
  const std::int64_t pack = vector_bytes / static_cast<int>(sizeof(E));
  const std::int64_t is = c.in_stride ? c.in_stride : 2 * c.d, os = c.out_stride ? c.out_stride : c.d;
  return c.d % pack == 0 && is % pack == 0 && os % pack == 0 && c.in_offset % pack == 0 && c.out_offset % pack == 0;
}

template <class E>
bool original_accepts(const Case& c) {
  return vector_aligned<E>(c, 16) && c.in_stride == 0 && c.out_stride == 0;
}

/// Runs `v` on `p` twice: checks against the reference, that both runs are bitwise equal and, where S
/// ran on the case (`s_out` not empty), that the output is bitwise S's.
template <class Op, class E>
void check_variant(const Variant& v, const Problem<Op, E>& p, cudaStream_t s, const std::vector<E>& s_out) {
  const auto a = p.args();
  std::vector<E> first, second;
  KTUNE_ASSERT_OK(p.poison(s));
  KTUNE_ASSERT_OK(v.run(&a, s));
  KTUNE_ASSERT_OK(p.download(s, first));
  EXPECT_TRUE(p.check(first));
  if (!s_out.empty()) {
    std::size_t differ = 0;
    for (std::size_t i = 0; i < first.size(); ++i) differ += bits_of(first[i]) != bits_of(s_out[i]);
    EXPECT_EQ(differ, 0u) << "elements that differ bitwise from S's output";
  }
  KTUNE_ASSERT_OK(p.poison(s));
  KTUNE_ASSERT_OK(v.run(&a, s));
  KTUNE_ASSERT_OK(p.download(s, second));
  EXPECT_TRUE(bitwise_equal(first.data(), second.data(), first.size() * sizeof(E))) << "two runs differ";
}

/// A refused call returns an error, launches nothing and writes nothing.
template <class Op, class E>
void check_refused(const Variant& v, const Problem<Op, E>& p, cudaStream_t s) {
  const auto a = p.args();
  std::vector<E> host;
  KTUNE_ASSERT_OK(p.poison(s));
  EXPECT_FALSE(v.run(&a, s).ok());
  KTUNE_ASSERT_OK(p.download(s, host));
  EXPECT_TRUE(p.untouched(host));
}

template <class Op, class E>
void every_variant_on_every_case() {
  const int arch = registry_arch();
  const auto variants = Registry::global().select(Op::name, dtype_v<E>, arch);
  if (variants.empty()) GTEST_SKIP() << "no " << Op::name << " variants were compiled for sm_" << arch;
  std::size_t feasible = 0;
  for (const auto& pv : explain<typename Op::Space>(arch_limits(arch), static_cast<int>(sizeof(E))))
    feasible += pv.verdict.ok();
  EXPECT_EQ(variants.size(), feasible + 1) << "every feasible variant and S registered";
  ASSERT_TRUE(variants.front()->is_original());

  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  int runs = 0;
  for (const Case& c : cases<Op>()) {
    const std::uint64_t seed = mix64(test_seed() + std::hash<std::string>{}(c.name));
    SCOPED_TRACE(std::string("case ") + c.name + ", seed " + std::to_string(seed));
    const Problem<Op, E> p(c, seed);  // reference computed once, shared by every variant
    ASSERT_TRUE(p.allocated());
    ASSERT_TRUE(p.upload());
    const auto a = p.args();
    // S first (variants.front()): where the op's variants compute S's expression with S's functions, S's
    // output on a case it runs is what every variant must reproduce bitwise.
    std::vector<E> s_out;
    if (Op::bitwise_like_original && variants.front()->can_implement(&a).ok()) {
      KTUNE_ASSERT_OK(p.poison(stream.s));
      KTUNE_ASSERT_OK(variants.front()->run(&a, stream.s));
      KTUNE_ASSERT_OK(p.download(stream.s, s_out));
    }
    int accepted = 0;
    for (const Variant* v : variants) {
      SCOPED_TRACE("variant " + v->id);
      const bool expect = v->is_original() ? original_accepts<E>(c)
                                           : vector_aligned<E>(c, v->point[Op::Space::kVb]);
      const bool can = v->can_implement(&a).ok();
      EXPECT_EQ(can, expect);
      if (can) {
        check_variant(*v, p, stream.s, v->is_original() ? std::vector<E>{} : s_out);
        ++accepted;
        ++runs;
      } else {
        check_refused(*v, p, stream.s);
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_GT(accepted, 0) << "the narrow variants take every valid input";
  }
  EXPECT_GT(runs, 0);
}

// ---- the public API -------------------------------------------------------------------------------

/// Strides as a caller gives them: -1 for contiguous rows.
inline std::int64_t os_or_default(const Case& c) { return c.out_stride ? c.out_stride : -1; }
inline std::int64_t is_or_default(const Case& c) { return c.in_stride ? c.in_stride : -1; }

template <class Op, class E>
void api_on_every_case() {
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  for (const Case& c : cases<Op>()) {
    const std::uint64_t seed = mix64(test_seed() ^ std::hash<std::string>{}(c.name));
    SCOPED_TRACE(std::string("case ") + c.name + ", seed " + std::to_string(seed));
    const Problem<Op, E> p(c, seed);
    ASSERT_TRUE(p.allocated());
    ASSERT_TRUE(p.upload());
    const auto a = p.args();
    std::vector<E> first, second;
    KTUNE_ASSERT_OK(p.poison(stream.s));
    KTUNE_ASSERT_OK(Op::call(a.out, a.in, c.tokens, c.d, stream.s, os_or_default(c), is_or_default(c)));
    KTUNE_ASSERT_OK(p.download(stream.s, first));
    EXPECT_TRUE(p.check(first));
    // The runtime-dtype entry runs the same variant: bitwise the same output.
    KTUNE_ASSERT_OK(p.poison(stream.s));
    KTUNE_ASSERT_OK(Op::call(dtype_v<E>, a.out, a.in, c.tokens, c.d, stream.s, os_or_default(c), is_or_default(c)));
    KTUNE_ASSERT_OK(p.download(stream.s, second));
    EXPECT_TRUE(bitwise_equal(first.data(), second.data(), first.size() * sizeof(E)));
  }
}

template <class Op>
void empty_and_bad_calls_write_nothing() {
  using E = __nv_bfloat16;
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  const Problem<Op, E> p(find_case<Op>("odd_T"), test_seed());
  ASSERT_TRUE(p.allocated());
  ASSERT_TRUE(p.upload());
  const auto a = p.args();
  KTUNE_ASSERT_OK(p.poison(stream.s));
  KTUNE_EXPECT_OK(Op::call(a.out, a.in, 0, a.d, stream.s));
  KTUNE_EXPECT_OK(Op::call(a.out, a.in, a.tokens, 0, stream.s));
  EXPECT_EQ(Op::template call<E>(a.out, nullptr, a.tokens, a.d, stream.s).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::template call<E>(nullptr, a.in, a.tokens, a.d, stream.s).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(a.out, a.in, -1, a.d, stream.s).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(a.out, a.in, a.tokens, -1, stream.s).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(a.out, a.in, a.tokens, a.d, stream.s, a.d - 1).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(a.out, a.in, a.tokens, a.d, stream.s, -1, 2 * a.d - 1).code, StatusCode::invalid_argument);
  auto* odd_out = reinterpret_cast<E*>(reinterpret_cast<char*>(a.out) + 1);
  EXPECT_EQ(Op::call(odd_out, a.in, a.tokens, a.d, stream.s).code, StatusCode::invalid_argument);
  EXPECT_EQ(Op::call(a.out, a.in, 1, Op::max_d + 1, stream.s).code, StatusCode::too_large);
  EXPECT_EQ(Op::call(static_cast<DType>(9), a.out, a.in, a.tokens, a.d, stream.s).code, StatusCode::unsupported);
  std::vector<E> host;
  KTUNE_ASSERT_OK(p.download(stream.s, host));
  EXPECT_TRUE(p.untouched(host));
}

template <class Op>
void choice_names_the_general_configuration_before_the_first_tune() {
  for (DType t : all_dtypes) {
    TunedChoice c;
    KTUNE_ASSERT_OK(Op::choice(t, 16, Op::Space::widest_spec_d, c));
    if (c.variant < 0) {
      EXPECT_EQ(c.source, TunedSource::fallback);
      ASSERT_NE(c.id, nullptr);
      EXPECT_EQ(std::string(c.id), Op::general_id);
    } else {
      ASSERT_NE(c.id, nullptr);
      EXPECT_TRUE(Op::Space::space.parse(c.id).ok) << c.id;
      EXPECT_NE(c.source, TunedSource::fallback);
    }
  }
}

/// Captures the API (and a PDL variant launched right after it) in a CUDA graph, replays it twice, and
/// compares both replays bitwise with eager calls.
template <class Op, class E>
void graph_capture_and_replay() {
  const int arch = registry_arch();
  const Variant* pdl =
      Registry::global().find(Op::name, dtype_v<E>, arch, "tpb_128.vb_16.vpt_4.rpb_1.split_1.pdl_1");
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  const Problem<Op, E> p(find_case<Op>("rows_67"), test_seed() + 1);
  const Problem<Op, E> q(find_case<Op>("rows_67"), test_seed() + 2);
  ASSERT_TRUE(p.allocated() && q.allocated());
  ASSERT_TRUE(p.upload());
  ASSERT_TRUE(q.upload());
  const auto a = p.args(), b = q.args();
  auto enqueue = [&]() -> Status {
    KTUNE_TRY(Op::call(a.out, a.in, a.tokens, a.d, stream.s));
    if (pdl) KTUNE_TRY(pdl->run(&b, stream.s));
    return Status::success();
  };
  std::vector<E> eager_a, eager_b, replay_a, replay_b;
  KTUNE_ASSERT_OK(p.poison(stream.s));
  KTUNE_ASSERT_OK(q.poison(stream.s));
  KTUNE_ASSERT_OK(enqueue());
  KTUNE_ASSERT_OK(p.download(stream.s, eager_a));
  KTUNE_ASSERT_OK(q.download(stream.s, eager_b));
  EXPECT_TRUE(p.check(eager_a));
  if (pdl) EXPECT_TRUE(q.check(eager_b));

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  KTUNE_ASSERT_CUDA(cudaStreamBeginCapture(stream.s, cudaStreamCaptureModeThreadLocal));
  const Status captured = enqueue();
  const cudaError_t ended = cudaStreamEndCapture(stream.s, &graph);
  KTUNE_ASSERT_OK(captured);
  KTUNE_ASSERT_CUDA(ended);
  KTUNE_ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay));
    KTUNE_ASSERT_OK(p.poison(stream.s));
    KTUNE_ASSERT_OK(q.poison(stream.s));
    KTUNE_ASSERT_CUDA(cudaGraphLaunch(exec, stream.s));
    KTUNE_ASSERT_OK(p.download(stream.s, replay_a));
    KTUNE_ASSERT_OK(q.download(stream.s, replay_b));
    EXPECT_TRUE(bitwise_equal(eager_a.data(), replay_a.data(), eager_a.size() * sizeof(E)));
    if (pdl) EXPECT_TRUE(bitwise_equal(eager_b.data(), replay_b.data(), eager_b.size() * sizeof(E)));
  }
  KTUNE_ASSERT_CUDA(cudaGraphExecDestroy(exec));
  KTUNE_ASSERT_CUDA(cudaGraphDestroy(graph));
}

// ---- sanitizer sample -----------------------------------------------------------------------------

template <class Op, class E>
void sanitizer_sample() {
  using Space = typename Op::Space;
  const int arch = registry_arch();
  const std::string unaligned = Space::space.id(Space::unaligned_point(static_cast<int>(sizeof(E))));
  const std::string ids[] = {"original", "tpb_256.vb_16.vpt_2.rpb_1.split_1.pdl_0",
                             "tpb_128.vb_16.vpt_4.rpb_1.split_1.pdl_1", "tpb_512.vb_16.vpt_1.rpb_4.split_0.pdl_1",
                             unaligned};
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  for (const char* name : {"odd_T", "strided_odd"}) {
    const Case& c = find_case<Op>(name);
    SCOPED_TRACE(std::string("case ") + name);
    const Problem<Op, E> p(c, test_seed());
    ASSERT_TRUE(p.allocated());
    ASSERT_TRUE(p.upload());
    const auto a = p.args();
    for (const std::string& id : ids) {
      SCOPED_TRACE("variant " + id);
      const Variant* v = Registry::global().find(Op::name, dtype_v<E>, arch, id);
      ASSERT_NE(v, nullptr) << "not registered";
      if (!v->can_implement(&a).ok()) continue;  // 16-byte variants on the odd strides
      std::vector<E> host;
      KTUNE_ASSERT_OK(p.poison(stream.s));
      KTUNE_ASSERT_OK(v->run(&a, stream.s));
      KTUNE_ASSERT_OK(p.download(stream.s, host));
      EXPECT_TRUE(p.check(host));
    }
  }
}

/// The op's DevicePreparation (kernels/common/act_and_mul/device_preparation.cuh), which the benchmark uses
/// instead of the host's (support/device_preparation_gpu.hpp): on an odd width, rows past 65,535 and the
/// spec's widest d.
template <class Op>
void device_preparation_is_the_hosts() {
  std::vector<Shape> shapes;
  for (const auto& [tokens, d] : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 7}, {3, 1001}, {70000, 5}, {2, 28672}})
    shapes.push_back(Shape{{{"tokens", tokens}, {"d", d}}, {}});
  expect_device_preparation_is_the_hosts(Op::name, shapes);
}

}  // namespace ktune::test::act_and_mul

/// The shared GPU tests of the act-and-mul op whose traits struct is `Op`; the suites (and the sanitizer
/// sample's test) are named after it.
#define KTUNE_ACT_AND_MUL_GPU_TESTS(Op)                                                                      \
  TEST(Op##Variants, Fp32) {                                                                                 \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::every_variant_on_every_case<Op, float>();                                    \
  }                                                                                                          \
  TEST(Op##Variants, Fp16) {                                                                                 \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::every_variant_on_every_case<Op, __half>();                                   \
  }                                                                                                          \
  TEST(Op##Variants, Bf16) {                                                                                 \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::every_variant_on_every_case<Op, __nv_bfloat16>();                            \
  }                                                                                                          \
  TEST(Op##Variants, DevicePreparationIsTheHosts) {                                                          \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::device_preparation_is_the_hosts<Op>();                                       \
  }                                                                                                          \
  TEST(Op##Api, EveryCaseFp32) {                                                                             \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::api_on_every_case<Op, float>();                                              \
  }                                                                                                          \
  TEST(Op##Api, EveryCaseFp16) {                                                                             \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::api_on_every_case<Op, __half>();                                             \
  }                                                                                                          \
  TEST(Op##Api, EveryCaseBf16) {                                                                             \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::api_on_every_case<Op, __nv_bfloat16>();                                      \
  }                                                                                                          \
  TEST(Op##Api, EmptyAndBadCallsWriteNothing) {                                                              \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::empty_and_bad_calls_write_nothing<Op>();                                     \
  }                                                                                                          \
  TEST(Op##Api, ChoiceNamesTheGeneralConfigurationBeforeTheFirstTune) {                                      \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::choice_names_the_general_configuration_before_the_first_tune<Op>();          \
  }                                                                                                          \
  TEST(Op##Api, GraphCaptureAndReplayFp32) {                                                                 \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::graph_capture_and_replay<Op, float>();                                       \
  }                                                                                                          \
  TEST(Op##Api, GraphCaptureAndReplayBf16) {                                                                 \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::graph_capture_and_replay<Op, __nv_bfloat16>();                               \
  }                                                                                                          \
  TEST(SanitizerSample, Op) {                                                                                \
    KTUNE_REQUIRE_GPU();                                                                                     \
    ::ktune::test::act_and_mul::sanitizer_sample<Op, float>();                                               \
    ::ktune::test::act_and_mul::sanitizer_sample<Op, __nv_bfloat16>();                                       \
  }
