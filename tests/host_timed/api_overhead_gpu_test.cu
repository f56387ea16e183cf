// Host-side cost of one public API call over a launch of the same variant through its family adapter
// (issue 3's target: <= 1 µs). Measured at T = 1, where the GPU keeps up with the launches, so the host
// clock sees the CPU side only; API and adapter calls alternate in blocks and the medians are compared.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <ktune/fill.cuh>

#include "kernels/fused_add_rmsnorm/fused_add_rmsnorm.cuh"
#include "kernels/merge_attn_states_lse/merge_attn_states_lse.cuh"
#include "kernels/silu_and_mul/silu_and_mul.cuh"
#include "support/gpu.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using E = __nv_bfloat16;
constexpr int block_calls = 500;
constexpr int rounds = 15;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median host µs per call of `api()` and of `raw()`, alternating blocks of calls.
template <class Api, class Raw>
void compare_host_cost(const char* op, cudaStream_t stream, Api&& api, Raw&& raw) {
  std::vector<double> api_us, raw_us;
  auto block = [&](auto&& call, std::vector<double>& out) {
    const auto t0 = Clock::now();
    for (int i = 0; i < block_calls; ++i) ASSERT_TRUE(ktune::test::ok(call()));
    const auto t1 = Clock::now();
    out.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / block_calls);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  };
  block(api, api_us);  // warm-up: module load, device cache, attribute setting
  block(raw, raw_us);
  api_us.clear();
  raw_us.clear();
  for (int r = 0; r < rounds; ++r) {
    block(api, api_us);
    block(raw, raw_us);
  }
  const double a = median(api_us), b = median(raw_us);
  std::printf("[ host   ] %-22s API %.3f us/call, family adapter %.3f us/call, overhead %+.3f us\n", op, a, b, a - b);
  EXPECT_LE(a - b, 1.0) << op << ": the API adds more than 1 us of host time per call";
}

class ApiOverheadGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    KTUNE_REQUIRE_GPU();
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    for (void* p : buffers) cudaFree(p);
    if (stream) cudaStreamDestroy(stream);
  }
  template <class T>
  T* alloc(std::size_t n, std::uint64_t seed) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
    buffers.push_back(p);
    EXPECT_TRUE(ktune::test::ok(ktune::fill_uniform(static_cast<T*>(p), n, seed, 0.5f, 2.0f)));
    return static_cast<T*>(p);
  }
  cudaStream_t stream = nullptr;
  std::vector<void*> buffers;
};

TEST_F(ApiOverheadGpu, SiluAndMul) {
  namespace op = ktune::ops::silu_and_mul;
  const std::int64_t tokens = 1, d = 11008;
  E* in = alloc<E>(2 * d, 1);
  E* out = alloc<E>(d, 2);
  const op::Args<E> args = op::make_args(out, static_cast<const E*>(in), tokens, d, std::int64_t{-1}, std::int64_t{-1});
  ktune::TunedChoice c;
  ASSERT_TRUE(ktune::test::ok(ktune::silu_and_mul_choice(ktune::DType::bf16, tokens, d, c)));
  (void)op::tuned::with_variant<E>(c.variant, [&](auto cfg) {
    using Cfg = decltype(cfg);
    compare_host_cost(
        "silu_and_mul", stream, [&] { return ktune::silu_and_mul(out, in, tokens, d, stream); },
        [&] { return ktune::run_variant<op::Family, Cfg, E>(args, stream); });
    return ktune::Status::success();
  });
}

TEST_F(ApiOverheadGpu, FusedAddRmsnorm) {
  namespace op = ktune::ops::fused_add_rmsnorm;
  const std::int64_t tokens = 1, h = 4096;
  E* input = alloc<E>(h, 3);
  E* residual = alloc<E>(h, 4);
  E* weight = alloc<E>(h, 5);
  const op::Args<E> args = op::make_args(input, residual, static_cast<const E*>(weight), tokens, h, 1e-6f,
                                         std::int64_t{-1}, std::int64_t{-1});
  ktune::TunedChoice c;
  ASSERT_TRUE(ktune::test::ok(ktune::fused_add_rmsnorm_choice(ktune::DType::bf16, tokens, h, c)));
  (void)op::tuned::with_variant<E>(c.variant, [&](auto cfg) {
    using Cfg = decltype(cfg);
    compare_host_cost(
        "fused_add_rmsnorm", stream,
        [&] { return ktune::fused_add_rmsnorm(input, residual, weight, tokens, h, 1e-6f, stream); },
        [&] { return ktune::run_variant<op::Family, Cfg, E>(args, stream); });
    return ktune::Status::success();
  });
}

TEST_F(ApiOverheadGpu, MergeAttnStatesLse) {
  namespace op = ktune::ops::merge_attn_states_lse;
  const std::int64_t tokens = 1, heads = 32, head_size = 128;
  const std::size_t n = tokens * heads * head_size;
  E* pv = alloc<E>(n, 6);
  E* sv = alloc<E>(n, 7);
  E* out = alloc<E>(n, 8);
  float* plse = alloc<float>(tokens * heads, 9);
  float* slse = alloc<float>(tokens * heads, 10);
  float* olse = alloc<float>(tokens * heads, 11);
  const op::Args<E> args = op::make_args(out, olse, static_cast<const E*>(pv), static_cast<const float*>(plse),
                                         static_cast<const E*>(sv), static_cast<const float*>(slse), tokens, heads,
                                         head_size, std::int64_t{-1}, std::int64_t{-1}, std::int64_t{-1});
  ktune::TunedChoice c;
  ASSERT_TRUE(ktune::test::ok(ktune::merge_attn_states_lse_choice(ktune::DType::bf16, tokens, heads, c)));
  (void)op::tuned::with_variant<E>(c.variant, [&](auto cfg) {
    using Cfg = decltype(cfg);
    compare_host_cost(
        "merge_attn_states_lse", stream,
        [&] {
          return ktune::merge_attn_states_lse(out, olse, pv, plse, sv, slse, tokens, heads, head_size, stream);
        },
        [&] { return ktune::run_variant<op::Family, Cfg, E>(args, stream); });
    return ktune::Status::success();
  });
}

}  // namespace
