// tests/kernels/common/norm_rows/rows_gpu.hpp: the GPU checks every RMS norm op shares, written once over
// its row kind (OutputRows in output_norm_gpu.hpp, ResidualRows in residual_norm_gpu.hpp): every
// registered variant and S x dtype against the float64 reference (and against S where the op asks), the
// persistent stages over many rows, the public API on every case, the tuned choice, graph capture and
// replay, and the compute-sanitizer sample.
//
// An op's *_gpu_test.cu defines a traits struct Op and instantiates the tests with its kind's macro. Op
// opens with KTUNE_NORM_ROWS_OP(<op>) (op_traits.hpp) and adds:
//   Rows                              its row kind
//   s_gcd_vector                      S reads gcd(16 / sizeof(E), h)-element vectors (FlashInfer); else 16
//                                     bytes only
//   s_cases                           S runs on at least this many of the kind's cases per dtype
//   checked_against_s                 every variant's outputs are compared with S's too
//   one_block_per_row_on_many_rows    S, the fallback and the kind's one_block_per_row_sample run on the
//                                     many-rows cases too, and the cases of more than 65,535 rows run
// The kind provides Case; cases[] and many_rows_cases[] with the picks kOddT (also the determinism case),
// kManyRows, api_graph_cases[], sample_graph_cases[] and sanitizer_cases[]; sample[] (one point of each
// structure); one_block_per_row_sample; stage_3_to_7_points(element size) and persistent_variants(element
// size); and Problem<Op, E>: one case's host images, device buffers and float64 reference, with
// allocated(), args(), fits_vector(elements), api(stream) and dtype_entry(stream) (the public API's two
// entries), restore(), fetch(Result&), check(Result, S's Result or none) and same_outputs(Result, Result).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <ktune/device_info.hpp>
#include <ktune/dtype.hpp>
#include <ktune/registry.hpp>
#include <ktune/space.hpp>
#include <ktune/tuned.hpp>
#include <ktune/verify.hpp>

#include "op_traits.hpp"
#include "support/device_preparation_gpu.hpp"
#include "support/gpu.hpp"

namespace ktune::test::norm_rows {

constexpr std::int64_t guard = 40;  // poisoned elements after each tensor (more than a 16-byte vector)

enum class Values { random, nan_row, large };
constexpr int kNanRow = 1, kNanCol = 5;  // the NaN of Values::nan_row

/// The one-row-per-block fallback (element accesses, any alignment).
inline constexpr const char* fallback_id = "vb_0.vpt_1.stage_2.cs_1.pdl_0";

template <class E>
E poison() {
  return from_bits<E>(poison_bits<E>());
}

template <class E>
bool bitwise_equal(const std::vector<E>& x, const std::vector<E>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(E)) == 0;
}

template <class Op, class E>
using ProblemOf = typename Op::Rows::template Problem<Op, E>;

/// Puts pb's inputs (and poisoned outputs) back, runs `run` on stream s, waits, and fetches every buffer.
template <class Problem, class Run>
Status run_and_fetch(const Problem& pb, cudaStream_t s, Run run, typename Problem::Result& r) {
  KTUNE_TRY(pb.restore());
  KTUNE_TRY(run(s));
  KTUNE_CUDA_TRY(cudaStreamSynchronize(s));
  return pb.fetch(r);
}

/// run_and_fetch of variant v on its arguments.
template <class Problem>
Status run_and_fetch(const Problem& pb, cudaStream_t s, const Variant& v, const void* args,
                     typename Problem::Result& r) {
  return run_and_fetch(pb, s, [&](cudaStream_t st) { return v.run(args, st); }, r);
}

/// The calls of a bad-inputs test: the first (T = 0) is a no-op that succeeds; every other is refused;
/// the last, with an unknown dtype, as unsupported.
template <std::size_t N>
void expect_only_the_no_op_accepted(const Status (&calls)[N]) {
  EXPECT_TRUE(calls[0].ok()) << "T = 0 is a no-op";
  for (std::size_t k = 1; k < N; ++k) EXPECT_FALSE(calls[k].ok()) << "call " << k;
  EXPECT_EQ(calls[N - 1].code, StatusCode::unsupported);
}

/// Elements of S's vector for rows of h elements.
template <class Op, class E>
std::int64_t s_vector(std::int64_t h) {
  constexpr std::int64_t vec = 16 / sizeof(E);
  return Op::s_gcd_vector ? std::gcd(vec, h) : vec;
}

template <class E>
std::string trace(const char* case_name) {
  return std::string("case ") + case_name + ", dtype " + name(dtype_v<E>) +
         ", KTUNE_TEST_SEED=" + std::to_string(test_seed());
}

// ---- every registered variant, against float64 and against S ------------------------------------

template <class Op, class E>
void check_every_variant() {
  using Rows = typename Op::Rows;
  using Problem = ProblemOf<Op, E>;
  const auto variants = Registry::global().select(Op::name, dtype_v<E>, 90);
  constexpr std::size_t feasible = FeasibleSet<typename Op::Space, 90, sizeof(E)>::count;
  static_assert(feasible == 96 + Rows::stage_3_to_7_points(sizeof(E)), "96 points of stages 0-2, the rest of 3-7");
  ASSERT_EQ(variants.size(), feasible + 1) << "every feasible sm_90 variant and S are registered per dtype";
  const Variant* original = Registry::global().find(Op::name, dtype_v<E>, 90, "original");
  ASSERT_NE(original, nullptr);
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  std::map<std::string, int> accepted;
  int against_s = 0;
  for (std::size_t ci = 0; ci < std::size(Rows::cases); ++ci) {
    const auto& c = Rows::cases[ci];
    SCOPED_TRACE(trace<E>(c.name));
    const Problem pb(c, test_seed() + ci);
    ASSERT_TRUE(pb.allocated());
    const auto args = pb.args();
    // S's outputs on this case, where S takes it: every variant is compared with them too.
    typename Problem::Result s_out;
    const bool have_s = Op::checked_against_s && c.values == Values::random && original->can_implement(&args).ok();
    if (have_s) KTUNE_ASSERT_OK(run_and_fetch(pb, stream.s, *original, &args, s_out));
    for (const Variant* v : variants) {
      SCOPED_TRACE("variant " + v->id);
      const Status can = v->can_implement(&args);
      // A vector variant must refuse pointers, strides or an h its vector does not fit.
      const std::int64_t vec = v->is_original() ? s_vector<Op, E>(c.h)
                                                : v->point[Op::Space::kVb] / static_cast<std::int64_t>(sizeof(E));
      if (vec > 1 && !pb.fits_vector(vec)) EXPECT_FALSE(can.ok()) << "its " << vec << "-element vector does not fit";
      if (!can.ok()) {
        EXPECT_TRUE(can.code == StatusCode::unsupported || can.code == StatusCode::too_large) << can.message;
        continue;
      }
      ++accepted[v->id];
      typename Problem::Result first;
      KTUNE_ASSERT_OK(run_and_fetch(pb, stream.s, *v, &args, first));
      ASSERT_TRUE(pb.check(first));
      if (have_s) {
        ASSERT_TRUE(pb.check(first, &s_out));
        ++against_s;
      }
      if (ci == Rows::kOddT) {  // determinism: a second run of the same input gives the same bits
        typename Problem::Result second;
        KTUNE_ASSERT_OK(run_and_fetch(pb, stream.s, *v, &args, second));
        EXPECT_TRUE(pb.same_outputs(first, second)) << "two runs differ";
      }
    }
  }
  for (const Variant* v : variants) EXPECT_GE(accepted[v->id], 5) << v->id << " ran on too few cases";
  EXPECT_GE(accepted["original"], Op::s_cases) << "S runs on every case its vector lines up with";
  if (Op::checked_against_s) EXPECT_GT(against_s, 500) << "variants compared with S";
}

// ---- many rows: the persistent stages loop, rows past 65,535 -------------------------------------

/// Every persistent variant on the many-rows cases: each group loops over several rows, alternating its
/// two register sets (and stage 3 its two warp-sum slots), and ends on either set. Where the op asks, S,
/// the fallback and the kind's one_block_per_row_sample too: their one-row-per-block grids index rows
/// past 65,535 (the cases of more rows than that run only then).
template <class Op, class E>
void check_many_rows() {
  using Rows = typename Op::Rows;
  using Problem = ProblemOf<Op, E>;
  const auto variants = Registry::global().select(Op::name, dtype_v<E>, 90);
  auto one_block_per_row = [](const Variant& v) {
    if (!Op::one_block_per_row_on_many_rows) return false;
    if (v.is_original() || v.id == fallback_id) return true;
    for (const char* id : Rows::one_block_per_row_sample)
      if (v.id == id) return true;
    return false;
  };
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  std::map<std::string, int> accepted;
  int cases_run = 0;
  for (std::size_t ci = 0; ci < std::size(Rows::many_rows_cases); ++ci) {
    const auto& c = Rows::many_rows_cases[ci];
    if (c.tokens > 65535 && !Op::one_block_per_row_on_many_rows) continue;
    ++cases_run;
    SCOPED_TRACE(trace<E>(c.name));
    const Problem pb(c, test_seed() + 50 + ci);
    ASSERT_TRUE(pb.allocated());
    const auto args = pb.args();
    for (const Variant* v : variants) {
      const bool persistent = !v->is_original() && Op::Space::persistent(v->point[Op::Space::kStage]);
      if (!persistent && !one_block_per_row(*v)) continue;
      SCOPED_TRACE("variant " + v->id);
      if (!v->can_implement(&args).ok()) continue;
      ++accepted[v->id];
      typename Problem::Result r;
      KTUNE_ASSERT_OK(run_and_fetch(pb, stream.s, *v, &args, r));
      ASSERT_TRUE(pb.check(r));
    }
  }
  int persistent = 0;
  for (const Variant* v : variants) {
    if (v->is_original() || !Op::Space::persistent(v->point[Op::Space::kStage])) continue;
    ++persistent;
    EXPECT_GE(accepted[v->id], 1) << v->id << " ran on no many-rows case";
  }
  EXPECT_EQ(persistent, Rows::persistent_variants(sizeof(E))) << "stage 3, 4 and 6 variants registered";
  if (Op::one_block_per_row_on_many_rows) {
    EXPECT_EQ(accepted["original"], cases_run) << "S on every many-rows case";
    EXPECT_EQ(accepted[fallback_id], cases_run);
  }
}

// ---- the public API -----------------------------------------------------------------------------

template <class Op, class E>
void check_api_on_every_case() {
  using Rows = typename Op::Rows;
  using Problem = ProblemOf<Op, E>;
  Stream stream;
  for (std::size_t ci = 0; ci < std::size(Rows::cases); ++ci) {
    const auto& c = Rows::cases[ci];
    SCOPED_TRACE(std::string("case ") + c.name + ", KTUNE_TEST_SEED=" + std::to_string(test_seed()));
    const Problem pb(c, test_seed() + 100 + ci);
    ASSERT_TRUE(pb.allocated());
    typename Problem::Result r;
    KTUNE_ASSERT_OK(run_and_fetch(pb, stream.s, [&](cudaStream_t s) { return pb.api(s); }, r));
    ASSERT_TRUE(pb.check(r));
    // The runtime-dtype entry's body: the same call, the same bits.
    typename Problem::Result r2;
    KTUNE_ASSERT_OK(run_and_fetch(pb, stream.s, [&](cudaStream_t s) { return pb.dtype_entry(s); }, r2));
    EXPECT_TRUE(pb.same_outputs(r, r2));
  }
}

/// The choice names the tuned row for this device when the table has one, else the general configuration.
template <class Op>
void check_choice() {
  const DeviceInfo* dev = nullptr;
  KTUNE_ASSERT_OK(current_device(dev));
  TunedChoice c;
  KTUNE_ASSERT_OK(Op::choose(DType::bf16, 16, 4096, c));
  const TunedChoice want = Op::lookup(dev->table_arch, dev->name, DType::bf16, 16, 4096);
  EXPECT_EQ(c.variant, want.variant);
  EXPECT_EQ(c.source, want.source);
  ASSERT_NE(c.id, nullptr);
  if (c.variant < 0) EXPECT_STREQ(c.id, Op::general_id());
  else EXPECT_TRUE(Op::Space::space.parse(c.id).ok) << c.id;
  EXPECT_EQ(Op::choose(static_cast<DType>(9), 16, 4096, c).code, StatusCode::unsupported);
  EXPECT_EQ(Op::choose(DType::f16, -1, 4096, c).code, StatusCode::invalid_argument);
}

/// Captures `run` on a stream into a graph; replays it twice on fresh inputs: both replays match a
/// direct run bitwise.
template <class Problem, class Run>
void check_graph_replay(const Problem& pb, Run run) {
  Stream stream;
  ASSERT_NE(stream.s, nullptr);
  // A direct run first: it also fills the per-device caches, as any process would have before capture.
  typename Problem::Result direct;
  KTUNE_ASSERT_OK(run_and_fetch(pb, stream.s, run, direct));
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
    typename Problem::Result r;
    KTUNE_ASSERT_OK(pb.fetch(r));
    EXPECT_TRUE(pb.same_outputs(direct, r)) << "replay " << replay << " differs from the direct run";
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

/// The public API captured and replayed: the tuned or general variant, the fallback, and (for the kind
/// with an output) in place.
template <class Op>
void check_api_graph_replay() {
  using Rows = typename Op::Rows;
  for (int ci : Rows::api_graph_cases) {
    SCOPED_TRACE(Rows::cases[ci].name);
    const ProblemOf<Op, __nv_bfloat16> pb(Rows::cases[ci], test_seed() + 7);
    ASSERT_TRUE(pb.allocated());
    check_graph_replay(pb, [&](cudaStream_t s) { return pb.api(s); });
  }
}

/// Calls f(pb, v, args) for every sample variant v that takes each of `cases` (fp16, inputs drawn from
/// `seed`); pb is the case's problem, args its arguments.
template <class Op, class Case, class F>
void for_each_sample_variant(const std::vector<Case>& cases, std::uint64_t seed, F f) {
  for (const Case& c : cases) {
    const ProblemOf<Op, __half> pb(c, seed);
    ASSERT_TRUE(pb.allocated());
    const auto args = pb.args();
    for (const char* id : Op::Rows::sample) {
      SCOPED_TRACE(std::string(id) + " on " + c.name);
      const Variant* v = Registry::global().find(Op::name, DType::f16, 90, id);
      ASSERT_NE(v, nullptr) << "not registered";
      if (v->can_implement(&args).ok()) f(pb, *v, args);
    }
  }
}

/// Each structure of the sample (clusters, PDL, the persistent stages) captured and replayed.
template <class Op>
void check_sample_replays_in_graphs() {
  using Rows = typename Op::Rows;
  std::vector<typename Rows::Case> cases;
  for (int ci : Rows::sample_graph_cases) cases.push_back(Rows::cases[ci]);
  std::map<std::string, int> replayed;
  for_each_sample_variant<Op>(cases, test_seed() + 8, [&](const auto& pb, const Variant& v, const auto& args) {
    ++replayed[v.id];
    check_graph_replay(pb, [&](cudaStream_t s) { return v.run(&args, s); });
  });
  for (const char* id : Rows::sample) EXPECT_GE(replayed[id], 1) << id << " was never replayed";
}

/// compute-sanitizer (memcheck, racecheck) runs this: each sample variant once per case, the kind's
/// sanitizer cases and many rows (the persistent stages loop, stage 3 alternating its warp-sum slots in
/// blocks of 8 warps).
template <class Op>
void run_sanitizer_sample() {
  using Rows = typename Op::Rows;
  std::vector<typename Rows::Case> cases;
  for (int ci : Rows::sanitizer_cases) cases.push_back(Rows::cases[ci]);
  cases.push_back(Rows::many_rows_cases[Rows::kManyRows]);
  Stream stream;
  for_each_sample_variant<Op>(cases, test_seed() + 9, [&](const auto& pb, const Variant& v, const auto& args) {
    typename ProblemOf<Op, __half>::Result r;
    KTUNE_ASSERT_OK(run_and_fetch(pb, stream.s, v, &args, r));
    EXPECT_TRUE(pb.check(r));
  });
}

/// The op's DevicePreparation (kernels/common/norm_rows/device_preparation.cuh), which the benchmark uses
/// instead of the host's (support/device_preparation_gpu.hpp): no rows (the weight alone), one row of the
/// edge width, an odd width past a block's 256 threads, rows past 65,535, the spec's widest h, another eps.
template <class Op>
void check_device_preparation() {
  std::vector<Shape> shapes;
  for (const auto& [tokens, h] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 72}, {1, 8}, {3, 4100}, {70000, 72}, {2, 8192}})
    shapes.push_back(Shape{{{"tokens", tokens}, {"h", h}}, {}});
  shapes.push_back(Shape{{{"tokens", 5}, {"h", 5120}}, {{"eps", 0.25}}});  // an eps that moves every reference
  expect_device_preparation_is_the_hosts(Op::name, shapes);
}

}  // namespace ktune::test::norm_rows

/// The tests every op of either kind has, as TEST(<Op>Gpu, ...), TEST(<Op>Api, ...) and
/// TEST(SanitizerSample, <Op>), Op its traits struct (the kind's macro adds the rest).
#define KTUNE_NORM_ROWS_GPU_TEST(Suite, Test, ...) \
  TEST(Suite, Test) {                              \
    KTUNE_REQUIRE_GPU();                           \
    ::ktune::test::norm_rows::__VA_ARGS__;         \
  }
#define KTUNE_NORM_ROWS_GPU_TESTS(Op)                                                                    \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Gpu, EveryVariantFp32, check_every_variant<Op, float>())                  \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Gpu, EveryVariantFp16, check_every_variant<Op, __half>())                 \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Gpu, EveryVariantBf16, check_every_variant<Op, __nv_bfloat16>())          \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Gpu, DevicePreparationIsTheHosts, check_device_preparation<Op>())         \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Api, EveryCaseFp32, check_api_on_every_case<Op, float>())                 \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Api, EveryCaseFp16, check_api_on_every_case<Op, __half>())                \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Api, EveryCaseBf16, check_api_on_every_case<Op, __nv_bfloat16>())         \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Api, ChoiceNamesTheTunedRowOrTheGeneralConfiguration, check_choice<Op>()) \
  KTUNE_NORM_ROWS_GPU_TEST(Op##Api, GraphCaptureAndReplay, check_api_graph_replay<Op>())                 \
  KTUNE_NORM_ROWS_GPU_TEST(SanitizerSample, Op, run_sanitizer_sample<Op>())
