// tests/kernels/common/norm_rows/residual_norm_cpu.hpp: the host-side tests of an RMS norm op with a
// residual (fused_add_rmsnorm, gemma_fused_add_rmsnorm): the float64 reference on hand-computed values and
// every edge case of the semantics (written with the weight each scale needs, so Op::Weight decides w or
// 1 + w), validate(), the space (counts, named points, ids, rules), the harness and spec.json.
//
// An op's *_test.cpp includes its host headers, defines its traits (KTUNE_NORM_ROWS_HOST_OP and Weight),
// instantiates the tests both ops have with KTUNE_RESIDUAL_NORM_CPU_TESTS(Op) and writes the TESTs that
// differ (its S's point, its overlap rules) with the checks here.
#pragma once

#include <algorithm>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ktune/space.hpp>
#include <ktune/verify.hpp>

#include "op_traits.hpp"
#include "rows_cpu.hpp"

namespace ktune::test::norm_rows::residual {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();

// ---- reference ----------------------------------------------------------------------------------

template <class Op>
void check_reference_hand_computed() {
  using W = typename Op::Weight;
  // Row 0: x = [1+2, 2+2] = [3, 4], mean(x^2) = 12.5, eps 0: 1/rms = 1/sqrt(12.5).
  // Row 1: x = [-1+0.5, 1+1] = [-0.5, 2], mean(x^2) = 2.125.
  const double input[] = {1, 2, 99, -1, 1, 99};       // stride 3: the 99s are padding
  const double residual[] = {2, 2, 0.5, 1};           // stride 2
  const double weight[] = {W::stored(1), W::stored(0.5)};
  double out_in[4], out_res[4];
  Op::reference(input, residual, weight, 2, 2, 3, 2, 0.0, DType::f32, out_in, out_res);
  const double r0 = 1 / std::sqrt(12.5), r1 = 1 / std::sqrt(2.125);
  EXPECT_DOUBLE_EQ(out_res[0], 3);
  EXPECT_DOUBLE_EQ(out_res[1], 4);
  EXPECT_DOUBLE_EQ(out_res[2], -0.5);
  EXPECT_DOUBLE_EQ(out_res[3], 2);
  EXPECT_DOUBLE_EQ(out_in[0], 3 * r0 * 1);
  EXPECT_DOUBLE_EQ(out_in[1], 4 * r0 * 0.5);
  EXPECT_DOUBLE_EQ(out_in[2], -0.5 * r1 * 1);
  EXPECT_DOUBLE_EQ(out_in[3], 2 * r1 * 0.5);
  EXPECT_NEAR(out_in[0], 0.848528137423857, 1e-15);
}

template <class Op>
void check_reference_eps_under_the_root() {
  using W = typename Op::Weight;
  // h = 1: out = x / sqrt(x^2 + eps) * w. x = 0.001, eps = 3e-6: sqrt(1e-6 + 3e-6) = 0.002.
  const double input[] = {0.0005}, residual[] = {0.0005}, weight[] = {W::stored(2)};
  double out_in[1], out_res[1];
  Op::reference(input, residual, weight, 1, 1, 1, 1, 3e-6, DType::f32, out_in, out_res);
  EXPECT_NEAR(out_in[0], 0.001 / 0.002 * 2, 1e-12);
  // A zero row stays zero (eps keeps the root positive).
  const double z[] = {0, 0};
  double o[2], r[2];
  Op::reference(z, z, weight, 1, 1, 1, 1, 1e-6, DType::f16, o, r);
  EXPECT_EQ(o[0], 0);
  EXPECT_EQ(r[0], 0);
}

template <class Op>
void check_reference_nan_stays_in_its_row() {
  using W = typename Op::Weight;
  const double input[] = {1, nan, 3, 1, 2, 3};
  const double residual[] = {1, 1, 1, 1, 1, 1};
  const double weight[] = {W::stored(1), W::stored(1), W::stored(1)};
  double out_in[6], out_res[6];
  Op::reference(input, residual, weight, 2, 3, 3, 3, 1e-6, DType::bf16, out_in, out_res);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(out_in[i])) << "row 0's mean is NaN, so all of its outputs";
  EXPECT_EQ(out_res[0], 2);
  EXPECT_TRUE(std::isnan(out_res[1])) << "the residual is NaN only where x is";
  EXPECT_EQ(out_res[2], 4);
  for (int i = 3; i < 6; ++i) {
    EXPECT_TRUE(std::isfinite(out_in[i])) << "row 1 is untouched by row 0's NaN";
    EXPECT_TRUE(std::isfinite(out_res[i]));
  }
}

template <class Op>
void check_reference_infinite_x() {
  using W = typename Op::Weight;
  // x = [inf, 2]: mean is inf, 1/rms = 0: inf * 0 is NaN, 2 * 0 is 0.
  const double input[] = {inf, 1}, residual[] = {1, 1}, weight[] = {W::stored(1), W::stored(1)};
  double out_in[2], out_res[2];
  Op::reference(input, residual, weight, 1, 2, 2, 2, 1e-6, DType::f32, out_in, out_res);
  EXPECT_TRUE(std::isnan(out_in[0]));
  EXPECT_EQ(out_in[1], 0);
  EXPECT_EQ(out_res[0], inf);
}

template <class Op>
void check_reference_large_fp16() {
  using W = typename Op::Weight;
  // x^2 = 4.2e9 overflows fp16 but not the sum: the normalised output is finite (about ±w).
  const double input[] = {60000, -60000, 64000, -30000};
  const double residual[] = {5000, -5000, -1000, -2000};
  const double weight[] = {W::stored(1), W::stored(1), W::stored(1), W::stored(1)};
  double out_in[4], out_res[4];
  Op::reference(input, residual, weight, 1, 4, 4, 4, 1e-6, DType::f16, out_in, out_res);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(std::isfinite(out_in[i]));
    EXPECT_TRUE(std::isfinite(out_res[i]));
    EXPECT_LT(std::fabs(out_in[i]), 2.0);
  }
  EXPECT_EQ(out_res[0], 65000);
  // A residual that rounds past fp16's range is stored as inf: the semantics round it.
  const double big_in[] = {65504}, big_res[] = {16}, w[] = {W::stored(1)};
  double o[1], r[1];
  Op::reference(big_in, big_res, w, 1, 1, 1, 1, 1e-6, DType::f16, o, r);
  EXPECT_EQ(r[0], inf) << "65520 rounds to inf in fp16";
  EXPECT_NEAR(o[0], 1.0, 1e-9) << "the normalised output uses the unrounded x";
  Op::reference(big_in, big_res, w, 1, 1, 1, 1, 1e-6, DType::bf16, o, r);
  EXPECT_EQ(r[0], 65520) << "bf16 holds 65520";
}

template <class Op>
void check_overflow_thresholds() {
  EXPECT_EQ(Op::overflow_threshold(DType::f16), 65520.0);
  EXPECT_EQ(Op::as_stored(65519.0, DType::f16), 65519.0);
  EXPECT_EQ(Op::as_stored(-65520.0, DType::f16), -inf);
  EXPECT_EQ(Op::as_stored(3.0e38, DType::f32), 3.0e38);
  EXPECT_EQ(Op::as_stored(std::ldexp(1.0, 128) - std::ldexp(1.0, 103), DType::f32), inf);
  EXPECT_EQ(Op::as_stored(3.3961e38, DType::bf16), 3.3961e38);   // bf16 max is 3.3895e38 + half ulp
  EXPECT_EQ(Op::as_stored(3.40e38, DType::bf16), inf);
}

// ---- validate -----------------------------------------------------------------------------------

template <class Op, class E>
typename Op::template Args<E> good_args() {
  // Fake, never dereferenced addresses: validate only looks at their values.
  return Op::make_args(reinterpret_cast<E*>(0x10000), reinterpret_cast<E*>(0x20000),
                       reinterpret_cast<const E*>(0x30000), 4, 64, 1e-6f, -1, -1);
}

template <class Op>
void check_validate_resolves_contiguous_strides() {
  const auto a = good_args<Op, __half>();
  EXPECT_EQ(a.input_stride, 64);
  EXPECT_EQ(a.residual_stride, 64);
  EXPECT_TRUE(Op::validate(a).ok());
  EXPECT_EQ(Op::tokens(a), 4);
  EXPECT_EQ(Op::width(a), 64);
}

/// validate() of good_args (fp32) changed by `mutate` gives `want`.
template <class Op, class Mutate>
void expect_validate(Mutate mutate, StatusCode want, const char* what) {
  auto a = good_args<Op, float>();
  mutate(a);
  const ktune::Status s = Op::validate(a);
  EXPECT_EQ(s.code, want) << what << ": " << s.message;
}

template <class Op>
void check_validate_refuses_bad_arguments() {
  auto check = [](auto mutate, StatusCode want, const char* what) { expect_validate<Op>(mutate, want, what); };
  using A = typename Op::template Args<float>;
  check([](A& a) { a.tokens = -1; }, StatusCode::invalid_argument, "negative tokens");
  check([](A& a) { a.h = 0; }, StatusCode::invalid_argument, "h = 0");
  check([](A& a) { a.h = -5; }, StatusCode::invalid_argument, "negative h");
  check([](A& a) { a.input_stride = 63; }, StatusCode::invalid_argument, "short input stride");
  check([](A& a) { a.residual_stride = -2; }, StatusCode::invalid_argument, "negative residual stride");
  check([](A& a) { a.eps = -1e-6f; }, StatusCode::invalid_argument, "negative eps");
  check([](A& a) { a.eps = std::numeric_limits<float>::quiet_NaN(); }, StatusCode::invalid_argument, "NaN eps");
  check([](A& a) { a.eps = std::numeric_limits<float>::infinity(); }, StatusCode::invalid_argument, "inf eps");
  check([](A& a) { a.input = nullptr; }, StatusCode::invalid_argument, "null input");
  check([](A& a) { a.residual = nullptr; }, StatusCode::invalid_argument, "null residual");
  check([](A& a) { a.weight = nullptr; }, StatusCode::invalid_argument, "null weight");
  check([](A& a) { a.input = reinterpret_cast<float*>(0x10002); }, StatusCode::invalid_argument, "misaligned input");
  check([](A& a) { a.weight = reinterpret_cast<const float*>(0x30001); }, StatusCode::invalid_argument,
        "misaligned weight");
  check([](A& a) { a.residual = a.input; }, StatusCode::invalid_argument, "input aliases residual");
  check([](A& a) { a.h = (std::int64_t{1} << 30) + 1; a.input_stride = a.residual_stride = a.h; },
        StatusCode::too_large, "h beyond 2^30");
  check([](A& a) { a.tokens = std::int64_t{1} << 31; }, StatusCode::too_large, "tokens beyond the grid");
  check([](A& a) { a.tokens = 1 << 30; a.input_stride = std::int64_t{1} << 40; }, StatusCode::too_large,
        "extent beyond 64-bit byte offsets");
}

template <class Op>
void check_validate_element_alignment() {
  auto a = good_args<Op, __half>();
  a.input = reinterpret_cast<__half*>(0x10002);  // 2-byte aligned, not 16
  a.input_stride = 67;
  EXPECT_TRUE(Op::validate(a).ok());
}

// ---- space --------------------------------------------------------------------------------------

template <class Op>
void check_feasible_counts() {
  using Space = typename Op::Space;
  EXPECT_EQ(Space::space.size(), 512u);  // vb 2 x vpt 4 x stage 8 x cs 4 x pdl 2
  // The same counts for both ops of the kind (the same rows: input, residual, weight).
  // sm_90, stages 0-2 (as before issue 10), either element size: vb {0, 16} x (register staging at
  // vpt 1, 2, 4, 8 + smem + reread) x cs {1, 2, 4, 8} x pdl {0, 1} = 2 x 6 x 4 x 2 = 96.
  // Stages 3-6 (vb 16 only): persistent rows at vpt 1, 2, 4 x pdl {0, 1}; warp rows at vpt 2, 4, 8
  // (16-bit: 2, 4) x pdl {0, 1}; late-store clusters at vpt 1, 2 x cs {2, 4, 8}, pdl 1; bulk rows at
  // vpt 2, 4, 8 x pdl {0, 1}; lean registers (stage 7) at vpt 1, 2, 4, 8 x pdl {0, 1}.
  EXPECT_EQ((ktune::FeasibleSet<Space, 90, 4>::count), 96u + 6 + 6 + 6 + 6 + 8);
  EXPECT_EQ((ktune::FeasibleSet<Space, 90, 2>::count), 96u + 6 + 4 + 6 + 6 + 8);
  // sm_80: no clusters, no PDL: 2 x 6, plus stages 3, 4 and 7 without PDL.
  EXPECT_EQ((ktune::FeasibleSet<Space, 80, 4>::count), 12u + 3 + 3 + 4);
  EXPECT_EQ((ktune::FeasibleSet<Space, 80, 2>::count), 12u + 3 + 2 + 4);
  // Stage 7 holds x in fp32 for these kinds, and the input and residual words while they load: fp32 at
  // vpt 8, per vector max(2 * 4 + 2 * 2, 4 + 4 + 2) = 12; 8 * 12 + 24 = 120.
  EXPECT_EQ(Space::lean_register_estimate(4, 8, 4), 120);
}

/// The named points but S's (each op's S has its own).
template <class Op>
void check_named_points() {
  using Space = typename Op::Space;
  for (int arch : ktune::supported_archs) {
    for (int eb : {2, 4}) {
      const auto limits = ktune::arch_limits(arch);
      EXPECT_TRUE(Space::feasible(Space::default_point, limits, eb).ok()) << arch;
      EXPECT_TRUE(Space::feasible(Space::unaligned_point, limits, eb).ok()) << arch;
    }
  }
  EXPECT_EQ(Space::space.id(Space::unaligned_point), "vb_0.vpt_1.stage_2.cs_1.pdl_0");
  EXPECT_EQ(Space::default_point[Space::kCs], 1) << "the default uses no cluster";
  EXPECT_EQ(Space::default_point[Space::kPdl], 0) << "the default uses no PDL";
  EXPECT_NE(Space::default_point[Space::kStage], Space::smem) << "the default needs no staging shared memory";
}

template <class Op>
void check_feasible_ids_round_trip() {
  using Space = typename Op::Space;
  std::set<std::string> ids;
  for (const auto& pv : ktune::explain<Space>(ktune::arch_limits(90), 2)) {
    if (!pv.verdict.ok()) continue;
    const std::string id = Space::space.id(pv.point);
    const auto parsed = Space::space.parse(id);
    ASSERT_TRUE(parsed.ok) << id << ": " << parsed.error;
    EXPECT_EQ(parsed.point, pv.point) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 118u + 8);  // stage 7 at vpt 1, 2, 4, 8 x pdl
  EXPECT_TRUE(ids.count("vb_16.vpt_8.stage_0.cs_8.pdl_1"));
  EXPECT_TRUE(ids.count("vb_16.vpt_4.stage_7.cs_1.pdl_1"));
  EXPECT_FALSE(ids.count("vb_16.vpt_4.stage_7.cs_2.pdl_1"));  // one block per row
  EXPECT_TRUE(ids.count("vb_16.vpt_4.stage_3.cs_1.pdl_1"));
  EXPECT_TRUE(ids.count("vb_16.vpt_2.stage_4.cs_1.pdl_0"));
  EXPECT_TRUE(ids.count("vb_16.vpt_1.stage_5.cs_8.pdl_1"));
  EXPECT_TRUE(ids.count("vb_16.vpt_8.stage_6.cs_1.pdl_0"));
}

template <class Op>
void check_pruned_points_name_their_rule() {
  using Space = typename Op::Space;
  const auto sm80 = ktune::arch_limits(80), sm90 = ktune::arch_limits(90);
  auto rule = [](const typename Space::Point& p, const ktune::ArchLimits& a, int eb) {
    const ktune::Verdict v = Space::feasible(p, a, eb);
    return std::string(v.ok() ? "" : v.rule);
  };
  EXPECT_NE(rule({16, 1, 0, 2, 0}, sm80, 2).find("clusters"), std::string::npos);
  EXPECT_NE(rule({16, 1, 0, 1, 1}, sm80, 2).find("programmatic dependent launch"), std::string::npos);
  EXPECT_NE(rule({16, 2, Space::smem, 1, 0}, sm90, 2).find("vpt > 1 only with register staging"), std::string::npos);
  EXPECT_NE(rule({16, 4, Space::reread, 1, 0}, sm90, 4).find("vpt > 1 only with register staging"), std::string::npos);
  EXPECT_EQ(rule({16, 8, Space::registers, 8, 1}, sm90, 2), "");
  // Stages 3-6 (issue 10).
  EXPECT_NE(rule({0, 1, Space::persistent_rows, 1, 1}, sm90, 2).find("16-byte vectors"), std::string::npos);
  EXPECT_NE(rule({0, 2, Space::cluster_late_stores, 2, 1}, sm90, 4).find("16-byte vectors"), std::string::npos);
  EXPECT_NE(rule({16, 1, Space::persistent_rows, 2, 1}, sm90, 2).find("cluster barrier per row"), std::string::npos);
  EXPECT_NE(rule({16, 2, Space::warp_rows, 4, 0}, sm90, 4).find("cluster barrier per row"), std::string::npos);
  EXPECT_NE(rule({16, 8, Space::persistent_rows, 1, 1}, sm90, 2).find("register limit"), std::string::npos);
  EXPECT_NE(rule({16, 8, Space::persistent_rows, 1, 1}, sm90, 4).find("at most 4 vectors"), std::string::npos)
      << "fp32 fits the registers, but never came close";
  EXPECT_EQ(rule({16, 4, Space::persistent_rows, 1, 1}, sm90, 4), "");
  EXPECT_NE(rule({16, 1, Space::warp_rows, 1, 1}, sm90, 4).find("vpt >= 2"), std::string::npos);
  EXPECT_NE(rule({16, 1, Space::cluster_late_stores, 1, 1}, sm90, 2).find("cs > 1"), std::string::npos);
  EXPECT_NE(rule({16, 4, Space::cluster_late_stores, 4, 1}, sm90, 2).find("1 or 2 vectors"), std::string::npos);
  EXPECT_NE(rule({16, 1, Space::cluster_late_stores, 4, 0}, sm90, 2).find("launch with PDL"), std::string::npos);
  EXPECT_NE(rule({16, 1, Space::persistent_rows, 1, 1}, sm80, 2).find("programmatic dependent launch"), std::string::npos);
  EXPECT_EQ(rule({16, 1, Space::persistent_rows, 1, 0}, sm80, 2), "") << "stages 3 and 4 need nothing of sm_90";
  EXPECT_EQ(rule({16, 2, Space::cluster_late_stores, 8, 1}, sm90, 2), "");
  EXPECT_NE(rule({16, 1, Space::bulk_rows, 1, 0}, sm80, 2).find("cp.async.bulk"), std::string::npos);
  EXPECT_NE(rule({16, 1, Space::bulk_rows, 2, 1}, sm90, 2).find("cluster barrier per row"), std::string::npos);
  EXPECT_EQ(rule({16, 8, Space::bulk_rows, 1, 1}, sm90, 2), "") << "no next row in registers";
  EXPECT_NE(rule({16, 1, Space::bulk_rows, 1, 1}, sm90, 2).find("vpt >= 2"), std::string::npos);
}

template <class Op>
void check_register_budget() {
  using Space = typename Op::Space;
  // fp16, 16-byte vectors: per vector max(3 * 4 + 6, 8 + 4 + 4) = 18 registers; vpt 8: 144 + 24 = 168.
  EXPECT_EQ(Space::register_estimate(8, 8, 2), 168);
  // 16384 / (168 * 32) = 3 warps per quarter: 12 warps = 384 threads.
  EXPECT_EQ(Space::max_threads(8, 8, Space::registers, 2, ktune::arch_limits(90)), 384);
  // vpt 1: 18 + 24 = 42 -> 48 registers; 10 warps per quarter: more than 1024 threads.
  EXPECT_EQ(Space::register_estimate(8, 1, 2), 48);
  EXPECT_EQ(Space::max_threads(8, 1, Space::registers, 2, ktune::arch_limits(90)), 1024);
  // Element accesses: per vector max(3 + 6, 1 + 1 + 4) = 9; vpt 8: 96 registers, 5 warps per quarter.
  EXPECT_EQ(Space::max_threads(1, 8, Space::registers, 2, ktune::arch_limits(90)), 640);
  EXPECT_EQ(Space::max_threads(1, 1, Space::reread, 2, ktune::arch_limits(90)), 1024);
  // Persistent stages: per vector 2 vec + 3 loaded + 4, plus 28 (calibrated on ptxas, CUDA 13.0).
  // fp32, vpt 4: 4 * (8 + 12 + 4) + 28 = 124 -> 128; 16384 / (128 * 32) = 4 warps per quarter: 512 threads.
  EXPECT_EQ(Space::persistent_register_estimate(4, 4, 4), 128);
  EXPECT_EQ(Space::max_threads(4, 4, Space::persistent_rows, 4, ktune::arch_limits(90)), 512);
  // bf16, vpt 1: 16 + 12 + 4 + 28 = 60 -> 64: 8 warps per quarter: 1024 threads (h = 8192 in one block).
  EXPECT_EQ(Space::persistent_register_estimate(8, 1, 2), 64);
  EXPECT_EQ(Space::max_threads(8, 1, Space::persistent_rows, 2, ktune::arch_limits(90)), 1024);
  // bf16, vpt 8: 8 * 32 + 28 = 284, beyond 255 (ptxas spilled it): pruned.
  EXPECT_GT(Space::persistent_register_estimate(8, 8, 2), 255);
  // Warp rows always run blocks of 4 warps; late stores keep the rounded residual too.
  EXPECT_EQ(Space::max_threads(8, 4, Space::warp_rows, 2, ktune::arch_limits(90)), 128);
  EXPECT_EQ(Space::late_store_register_estimate(8, 2, 2), 64);  // 2 * max(18, 8 + 8 + 4) + 24
  EXPECT_EQ(Space::vector_elements(0, 4), 1);
  EXPECT_EQ(Space::vector_elements(16, 4), 4);
  EXPECT_EQ(Space::vector_elements(16, 2), 8);
}

// ---- harness and spec ---------------------------------------------------------------------------

template <class Op>
void check_harness_inputs() {
  typename Op::Harness harness;
  const ktune::Shape shape{{{"tokens", 5}, {"h", 300}}};
  for (DType dt : ktune::all_dtypes) {
    ktune::HostTensors host;
    harness.fill_inputs(shape, dt, 1234, host);
    const auto ref = harness.reference(shape, dt, host);
    ASSERT_EQ(ref.size(), 2u);
    ktune::visit_dtype(dt, [&](auto element) {
      using E = decltype(element);
      const auto* in = reinterpret_cast<const E*>(host[0].data());
      const auto* res = reinterpret_cast<const E*>(host[1].data());
      const auto* w = reinterpret_cast<const E*>(host[2].data());
      for (std::size_t i = 0; i < 5 * 300; ++i) {
        const double a = ktune::to_float(in[i]), r = ktune::to_float(res[i]);
        ASSERT_GE(std::fabs(a), 8.0);
        ASSERT_LE(std::fabs(a), 16.0);
        ASSERT_LE(std::fabs(r), 4.0);
        ASSERT_LT(std::fabs(ref[0][i]), 7.5 + 1e-9) << "normalised output below |input|";
        ASSERT_GE(std::fabs(ref[1][i] - r), 8.0 - 1e-9) << "new residual far from the old";
      }
      for (std::size_t i = 0; i < 300; ++i) ASSERT_TRUE(Op::Weight::harness_value(ktune::to_float(w[i])));
    });
  }
}

template <class Op>
void check_harness_tensors_and_args() {
  typename Op::Harness harness;
  const ktune::Shape shape{{{"tokens", 3}, {"h", 7}}};
  const auto t = harness.tensors(shape, DType::f16);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].name, "input");
  EXPECT_EQ(t[0].access, ktune::Access::read_write);
  EXPECT_EQ(t[1].access, ktune::Access::read_write);
  EXPECT_EQ(t[2].access, ktune::Access::read);
  EXPECT_EQ(t[2].elements, 7u);
  EXPECT_EQ(t[0].bytes(), 42u);
  int bufs[3];
  const auto args = harness.make_args(shape, DType::f32, {&bufs[0], &bufs[1], &bufs[2]});
  const auto* a = static_cast<const typename Op::template Args<float>*>(args.get());
  EXPECT_EQ(a->input, reinterpret_cast<float*>(&bufs[0]));
  EXPECT_EQ(a->tokens, 3);
  EXPECT_EQ(a->h, 7);
  EXPECT_EQ(a->input_stride, 7);
  EXPECT_EQ(a->eps, 1e-6f);
}

template <class Op>
void check_spec_matches_the_issue() {
  std::ifstream f(spec_path(Op::name));
  ASSERT_TRUE(f) << "cannot open spec.json";
  const auto j = nlohmann::ordered_json::parse(f);
  EXPECT_EQ(j.at("op"), Op::name);
  EXPECT_EQ(j.at("tokens_dim"), "tokens");
  EXPECT_EQ(j.at("width_dim"), "h");
  const auto& dims = j.at("dims");
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_EQ(dims.begin().key(), "tokens") << "tokens first: spec shapes iterate h fastest";
  // The values come from shapes/catalogue.json (tests/tools/shapes_test.cpp checks they are its grid).
  const auto tokens = dims.at("tokens").get<std::vector<int>>(), widths = dims.at("h").get<std::vector<int>>();
  EXPECT_TRUE(std::is_sorted(tokens.begin(), tokens.end()) && std::is_sorted(widths.begin(), widths.end()));
  EXPECT_EQ(tokens.front(), 1);
  EXPECT_EQ(j.at("dtypes").get<std::vector<std::string>>(), (std::vector<std::string>{"fp32", "fp16", "bf16"}));
  for (DType dt : ktune::all_dtypes) {
    const auto& t = j.at("tolerance").at(ktune::name(dt));
    const ktune::Tolerance d = ktune::default_tolerance(dt);
    EXPECT_EQ(t.at("rel_l2").get<double>(), d.rel_l2) << ktune::name(dt);
    EXPECT_EQ(t.at("atol").get<double>(), d.atol) << ktune::name(dt);
    EXPECT_EQ(t.at("rtol").get<double>(), d.rtol) << ktune::name(dt);
  }
  // Bytes moved: input and residual read and written, weight read. T = 2048, h = 4096, fp16:
  // 2 tensors x 2 x 2048 x 4096 x 2 B + 4096 x 2 B = 67,117,056 B.
  std::int64_t bytes = 0;
  const std::int64_t T = 2048, h = 4096, eb = 2;
  for (const auto& t : j.at("tensors")) {
    std::int64_t n = 1;
    for (const auto& e : t.at("shape")) n *= e.get<std::string>() == "tokens" ? T : h;
    EXPECT_EQ(t.at("dtype"), "element");
    bytes += n * eb * (t.at("access") == "read_write" ? 2 : 1);
  }
  EXPECT_EQ(bytes, 67117056);
  // The harness describes the same tensors.
  const auto ht = typename Op::Harness{}.tensors(ktune::Shape{{{"tokens", T}, {"h", h}}}, DType::f16);
  ASSERT_EQ(ht.size(), j.at("tensors").size());
  for (std::size_t i = 0; i < ht.size(); ++i) EXPECT_EQ(ht[i].name, j.at("tensors")[i].at("name"));
}

}  // namespace ktune::test::norm_rows::residual

/// The host-side tests both ops with a residual have, Op its traits struct.
#define KTUNE_RESIDUAL_NORM_CPU_TESTS(Op)                                                                   \
  KTUNE_NORM_ROWS_TEST(Op##Reference, HandComputedRowsWithStrides,                                          \
                       residual::check_reference_hand_computed<Op>())                                       \
  KTUNE_NORM_ROWS_TEST(Op##Reference, EpsEntersUnderTheRoot,                                                \
                       residual::check_reference_eps_under_the_root<Op>())                                  \
  KTUNE_NORM_ROWS_TEST(Op##Reference, NanSpreadsOverItsRowOnly,                                             \
                       residual::check_reference_nan_stays_in_its_row<Op>())                                \
  KTUNE_NORM_ROWS_TEST(Op##Reference, InfiniteXZeroesTheRestOfItsRow,                                       \
                       residual::check_reference_infinite_x<Op>())                                          \
  KTUNE_NORM_ROWS_TEST(Op##Reference, LargeFp16MagnitudesStayFinite,                                        \
                       residual::check_reference_large_fp16<Op>())                                          \
  KTUNE_NORM_ROWS_TEST(Op##Reference, OverflowThresholds, residual::check_overflow_thresholds<Op>())        \
  KTUNE_NORM_ROWS_TEST(Op##Validate, AcceptsAndResolvesContiguousStrides,                                   \
                       residual::check_validate_resolves_contiguous_strides<Op>())                          \
  KTUNE_NORM_ROWS_TEST(Op##Validate, StrideZeroIsAnErrorNotContiguous, check_stride_zero_refused<Op>())     \
  KTUNE_NORM_ROWS_TEST(Op##Validate, ZeroTokensIsValidWithEmptyTensors, check_zero_tokens_valid<Op>())      \
  KTUNE_NORM_ROWS_TEST(Op##Harness, DrawIsWhatFillInputsStores,                                             \
                       check_draw_is_what_fill_inputs_stores<Op, ::ktune::ops::norm_rows::FusedAdd>())      \
  KTUNE_NORM_ROWS_TEST(Op##Validate, ElementAlignmentIsEnoughForHalfTypes,                                  \
                       residual::check_validate_element_alignment<Op>())                                    \
  KTUNE_NORM_ROWS_TEST(Op##Space, FeasibleCountsPerArchitectureAndElementSize,                              \
                       residual::check_feasible_counts<Op>())                                               \
  KTUNE_NORM_ROWS_TEST(Op##Space, EveryFeasibleIdRoundTrips, residual::check_feasible_ids_round_trip<Op>()) \
  KTUNE_NORM_ROWS_TEST(Op##Space, PrunedPointsNameTheirRule,                                                \
                       residual::check_pruned_points_name_their_rule<Op>())                                 \
  KTUNE_NORM_ROWS_TEST(Op##Space, RegisterBudgetSetsTheLaunchBounds, residual::check_register_budget<Op>()) \
  KTUNE_NORM_ROWS_TEST(Op##Harness, InputsMakeEveryOutputDifferFromWhatItOverwrites,                        \
                       residual::check_harness_inputs<Op>())                                                \
  KTUNE_NORM_ROWS_TEST(Op##Harness, TensorsAndArgs, residual::check_harness_tensors_and_args<Op>())         \
  KTUNE_NORM_ROWS_TEST(Op##Spec, MatchesTheIssue, residual::check_spec_matches_the_issue<Op>())
