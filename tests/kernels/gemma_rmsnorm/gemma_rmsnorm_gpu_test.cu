// GPU tests of gemma_rmsnorm: the checks every RMS norm op with a separate output shares
// (tests/kernels/common/norm_rows/output_norm_gpu.hpp: every variant and S against float64 and against S
// on edge shapes, rows past 65,535, in place, the public API, graph replay, the compute-sanitizer sample).
#include <gtest/gtest.h>

#include "../common/norm_rows/output_norm_gpu.hpp"
#include "kernels/gemma_rmsnorm/gemma_rmsnorm.cuh"

namespace {
namespace op = ktune::ops::gemma_rmsnorm;
namespace t = ktune::test::norm_rows;

struct GemmaRmsnorm {
  static constexpr const char* name = "gemma_rmsnorm";
  template <class E>
  using Args = op::Args<E>;
  using Space = op::Space;
  using Tensor = op::Tensor;
  static constexpr float default_eps = op::default_eps;
  static float input_value(Tensor k, std::uint64_t seed, std::uint64_t i) { return op::input_value(k, seed, i); }
  static void reference(const double* in, const double* w, std::int64_t tokens, std::int64_t h, std::int64_t stride,
                        double eps, ktune::DType dt, double* out) {
    op::reference(in, w, tokens, h, stride, eps, dt, out);
  }
  template <class E>
  static ktune::Status call(E* out, const E* in, const E* w, std::int64_t tokens, std::int64_t h, float eps,
                            cudaStream_t s, std::int64_t out_stride, std::int64_t in_stride) {
    return ktune::gemma_rmsnorm<E>(out, in, w, tokens, h, eps, s, out_stride, in_stride);
  }
  template <class... A>
  static ktune::Status run_dtype(A... a) {
    return op::run_dtype(a...);
  }
  static ktune::Status choose(ktune::DType dt, std::int64_t tokens, std::int64_t h, ktune::TunedChoice& c) {
    return op::choose(dt, tokens, h, c);
  }
  static ktune::TunedChoice lookup(int arch, const char* device, ktune::DType dt, std::int64_t tokens, std::int64_t h) {
    return ktune::lookup(op::tuned::entries, arch, device, dt, tokens, h);
  }
  static const char* general_id() { return op::tuned::general_id; }
};

TEST(GemmaRmsnormGpu, EveryVariantFp32) {
  KTUNE_REQUIRE_GPU();
  t::check_every_variant<GemmaRmsnorm, float>();
}
TEST(GemmaRmsnormGpu, EveryVariantFp16) {
  KTUNE_REQUIRE_GPU();
  t::check_every_variant<GemmaRmsnorm, __half>();
}
TEST(GemmaRmsnormGpu, EveryVariantBf16) {
  KTUNE_REQUIRE_GPU();
  t::check_every_variant<GemmaRmsnorm, __nv_bfloat16>();
}
TEST(GemmaRmsnormGpu, ManyRowsFp32) {
  KTUNE_REQUIRE_GPU();
  t::check_many_rows<GemmaRmsnorm, float>();
}
TEST(GemmaRmsnormGpu, ManyRowsBf16) {
  KTUNE_REQUIRE_GPU();
  t::check_many_rows<GemmaRmsnorm, __nv_bfloat16>();
}
TEST(GemmaRmsnormApi, EveryCaseFp32) {
  KTUNE_REQUIRE_GPU();
  t::check_api_on_every_case<GemmaRmsnorm, float>();
}
TEST(GemmaRmsnormApi, EveryCaseFp16) {
  KTUNE_REQUIRE_GPU();
  t::check_api_on_every_case<GemmaRmsnorm, __half>();
}
TEST(GemmaRmsnormApi, EveryCaseBf16) {
  KTUNE_REQUIRE_GPU();
  t::check_api_on_every_case<GemmaRmsnorm, __nv_bfloat16>();
}
TEST(GemmaRmsnormApi, ZeroTokensAndBadInputsWriteNothing) {
  KTUNE_REQUIRE_GPU();
  t::check_bad_inputs_write_nothing<GemmaRmsnorm>();
}
TEST(GemmaRmsnormApi, ChoiceNamesTheTunedRowOrTheGeneralConfiguration) {
  KTUNE_REQUIRE_GPU();
  t::check_choice<GemmaRmsnorm>();
}
TEST(GemmaRmsnormApi, GraphCaptureAndReplay) {
  KTUNE_REQUIRE_GPU();
  t::check_api_graph_replay<GemmaRmsnorm>();
}
TEST(GemmaRmsnormApi, StructureSampleReplaysInGraphs) {
  KTUNE_REQUIRE_GPU();
  t::check_sample_replays_in_graphs<GemmaRmsnorm>();
}
TEST(SanitizerSample, GemmaRmsnorm) {
  KTUNE_REQUIRE_GPU();
  t::run_sanitizer_sample<GemmaRmsnorm>();
}

}  // namespace
