// GPU tests of rmsnorm: the checks every RMS norm op with a separate output shares
// (tests/kernels/common/norm_rows/output_norm_gpu.hpp: every variant and S against float64 and against S
// on edge shapes, rows past 65,535, in place, the public API, graph replay, the compute-sanitizer sample).
#include <gtest/gtest.h>

#include "../common/norm_rows/output_norm_gpu.hpp"
#include "kernels/rmsnorm/rmsnorm.cuh"

namespace {
namespace op = ktune::ops::rmsnorm;
namespace t = ktune::test::norm_rows;

struct Rmsnorm {
  static constexpr const char* name = "rmsnorm";
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
    return ktune::rmsnorm<E>(out, in, w, tokens, h, eps, s, out_stride, in_stride);
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

TEST(RmsnormGpu, EveryVariantFp32) {
  KTUNE_REQUIRE_GPU();
  t::check_every_variant<Rmsnorm, float>();
}
TEST(RmsnormGpu, EveryVariantFp16) {
  KTUNE_REQUIRE_GPU();
  t::check_every_variant<Rmsnorm, __half>();
}
TEST(RmsnormGpu, EveryVariantBf16) {
  KTUNE_REQUIRE_GPU();
  t::check_every_variant<Rmsnorm, __nv_bfloat16>();
}
TEST(RmsnormGpu, ManyRowsFp32) {
  KTUNE_REQUIRE_GPU();
  t::check_many_rows<Rmsnorm, float>();
}
TEST(RmsnormGpu, ManyRowsBf16) {
  KTUNE_REQUIRE_GPU();
  t::check_many_rows<Rmsnorm, __nv_bfloat16>();
}
TEST(RmsnormApi, EveryCaseFp32) {
  KTUNE_REQUIRE_GPU();
  t::check_api_on_every_case<Rmsnorm, float>();
}
TEST(RmsnormApi, EveryCaseFp16) {
  KTUNE_REQUIRE_GPU();
  t::check_api_on_every_case<Rmsnorm, __half>();
}
TEST(RmsnormApi, EveryCaseBf16) {
  KTUNE_REQUIRE_GPU();
  t::check_api_on_every_case<Rmsnorm, __nv_bfloat16>();
}
TEST(RmsnormApi, ZeroTokensAndBadInputsWriteNothing) {
  KTUNE_REQUIRE_GPU();
  t::check_bad_inputs_write_nothing<Rmsnorm>();
}
TEST(RmsnormApi, ChoiceNamesTheTunedRowOrTheGeneralConfiguration) {
  KTUNE_REQUIRE_GPU();
  t::check_choice<Rmsnorm>();
}
TEST(RmsnormApi, GraphCaptureAndReplay) {
  KTUNE_REQUIRE_GPU();
  t::check_api_graph_replay<Rmsnorm>();
}
TEST(RmsnormApi, StructureSampleReplaysInGraphs) {
  KTUNE_REQUIRE_GPU();
  t::check_sample_replays_in_graphs<Rmsnorm>();
}
TEST(SanitizerSample, Rmsnorm) {
  KTUNE_REQUIRE_GPU();
  t::run_sanitizer_sample<Rmsnorm>();
}

}  // namespace
