// GPU tests of the profiling layer on kernels of this file with known behaviour:
// - a coalesced 16-byte scale-copy moving 2 GiB (many times any L2): DRAM bytes within 10% of the
//   bytes it must move, occupancy in [0, 1], activity durations agreeing with CUDA events;
// - two kernels built to be bad, each firing its rule on the device: strided 4-byte loads
//   (uncoalesced) and one block for a whole row at T = 1 (launch-bound); the good kernel fires neither;
// - graceful failure: a metric CUPTI does not know gives a clear status and the timings survive.
// Where the machine forbids GPU counters (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), the metric checks skip
// with that reason after checking the timings were still reported.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include <ktune/diagnose.hpp>
#include <ktune/profile/profile.cuh>
#include <ktune/timing.cuh>

#include "support/gpu.hpp"

namespace {

namespace kp = ktune::profile;

// out[i] = s * in[i], one float4 per thread: every warp request covers 512 contiguous bytes.
__global__ void scale_copy(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n, float s) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float4 v = in[i];
    out[i] = make_float4(s * v.x, s * v.y, s * v.z, s * v.w);
  }
}

// out[i] = in[i * stride]: with stride 32 every lane of a warp reads its own 128-byte line, so a
// 4-byte load needs 32 sectors per request instead of 4.
__global__ void strided_load(const float* __restrict__ in, float* __restrict__ out, std::size_t n, int stride) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i * static_cast<std::size_t>(stride)];
}

__global__ void scale_in_place(float4* x, std::size_t n, float s) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float4 v = x[i];
    x[i] = make_float4(s * v.x, s * v.y, s * v.z, s * v.w);
  }
}

// One block walks a whole row: the T = 1 launch of a kernel that maps one block to one token.
__global__ void row_scale_one_block(const float* __restrict__ in, float* __restrict__ out, int d, float s) {
  for (int i = threadIdx.x; i < d; i += blockDim.x) out[i] = s * in[i];
}

struct DeviceBuffer {
  void* p = nullptr;
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
};

struct Stream {
  cudaStream_t s = nullptr;
  ~Stream() {
    if (s) cudaStreamDestroy(s);
  }
};

class ProfileGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    KTUNE_REQUIRE_GPU();
    KTUNE_ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_.s, cudaStreamNonBlocking));
  }

  static kp::Options quick_options() {
    kp::Options o;
    o.timing.max_seconds = 0.5;
    o.activity_calls = 20;
    return o;
  }

  // A copy moving 2 * bytes (read + write).
  void make_copy(std::size_t bytes) {
    n4_ = bytes / sizeof(float4);
    ASSERT_TRUE(ktune::test::ok(ktune::Status::from_cuda(cudaMalloc(&in_.p, bytes), "cudaMalloc in")));
    ASSERT_TRUE(ktune::test::ok(ktune::Status::from_cuda(cudaMalloc(&out_.p, bytes), "cudaMalloc out")));
    KTUNE_ASSERT_OK(ktune::fill_uniform(static_cast<float*>(in_.p), bytes / 4, 7, -1.f, 1.f, stream_.s));
    KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream_.s));
  }

  ktune::Status launch_copy() const {
    const unsigned blocks = static_cast<unsigned>((n4_ + 255) / 256);
    scale_copy<<<blocks, 256, 0, stream_.s>>>(static_cast<const float4*>(in_.p), static_cast<float4*>(out_.p), n4_, 2.f);
    KTUNE_CHECK_LAUNCH();
    return ktune::Status::success();
  }

  /// Profiles the copy; `rec` keeps the caller's expected bytes and context.
  void profile_copy(kp::ProfileRecord& rec, const kp::Options& opt) {
    rec.expected_bytes = 2.0 * static_cast<double>(n4_ * sizeof(float4));
    const ktune::KernelResources res{reinterpret_cast<const void*>(&scale_copy), 256, 0, 1};
    KTUNE_ASSERT_OK(kp::profile_call([&](std::size_t) { return launch_copy(); }, 1, stream_.s, opt, rec, {res}));
  }

  /// Skips the rest of a test when this machine does not permit counters, after checking that the
  /// failure was reported clearly and did not cost the timings.
  static bool metrics_unavailable(const kp::ProfileRecord& rec) {
    if (rec.metrics_status == "ok") return false;
    EXPECT_TRUE(rec.event_us.has_value()) << "timings must survive a profiling failure";
    EXPECT_EQ(rec.activity_status, "ok");
    EXPECT_NE(rec.metrics_status.find("CUPTI"), std::string::npos) << rec.metrics_status;
    // Anything but "not permitted / not supported / busy" is a bug of ours, not the machine's.
    const bool environment = rec.metrics_status.find("not permitted") != std::string::npos ||
                             rec.metrics_status.find("not supported") != std::string::npos ||
                             rec.metrics_status.find("another profiler") != std::string::npos;
    EXPECT_TRUE(environment) << rec.metrics_status;
    return true;
  }

  Stream stream_;
  DeviceBuffer in_, out_;
  std::size_t n4_ = 0;
};

// 1 GiB read + 1 GiB written: L2 effects (up to one L2, 50-60 MB, of lines that stay cached or dirty
// across replay passes) stay below 6% of either direction.
constexpr std::size_t copy_bytes = std::size_t{1} << 30;

TEST_F(ProfileGpu, CopyKernelMetricsArePlausible) {
  ASSERT_NO_FATAL_FAILURE(make_copy(copy_bytes));
  kp::ProfileRecord rec;
  ASSERT_NO_FATAL_FAILURE(profile_copy(rec, quick_options()));
  ASSERT_EQ(rec.activity_status, "ok");
  ASSERT_EQ(rec.kernels.size(), 1u);
  const kp::KernelMetrics& k = rec.kernels[0];
  EXPECT_NE(k.name.find("scale_copy"), std::string::npos) << k.name;
  EXPECT_EQ(k.blocks(), static_cast<std::int64_t>((n4_ + 255) / 256));
  EXPECT_EQ(k.threads_per_block(), 256);
  ASSERT_TRUE(k.registers.has_value());
  EXPECT_GT(*k.registers, 0);
  EXPECT_EQ(k.local_bytes.value_or(-1), 0) << "from cudaFuncGetAttributes: no spills in a copy";
  if (metrics_unavailable(rec)) GTEST_SKIP() << "hardware metrics unavailable here: " << rec.metrics_status;

  std::printf("[ metrics ] %d passes; DRAM read %.1f MB, write %.1f MB (expected %.1f MB total), %.0f%% DRAM peak, "
              "occupancy %.2f, L2 hit %.0f%%, ld %.1f sectors/request\n",
              rec.metric_passes, k.dram_read_bytes.value_or(-1) / 1e6, k.dram_write_bytes.value_or(-1) / 1e6,
              *rec.expected_bytes / 1e6, k.dram_throughput_pct.value_or(-1), k.achieved_occupancy.value_or(-1),
              k.l2_hit_pct.value_or(-1), k.ld_sectors_per_request().value_or(-1));
  const double half = *rec.expected_bytes / 2;
  ASSERT_TRUE(k.dram_bytes().has_value());
  EXPECT_NEAR(*k.dram_bytes(), *rec.expected_bytes, 0.10 * *rec.expected_bytes);
  EXPECT_NEAR(*k.dram_read_bytes, half, 0.10 * half);
  EXPECT_NEAR(*k.dram_write_bytes, half, 0.10 * half);
  ASSERT_TRUE(k.achieved_occupancy.has_value());
  EXPECT_GE(*k.achieved_occupancy, 0.0);
  EXPECT_LE(*k.achieved_occupancy, 1.0);
  EXPECT_GT(*k.achieved_occupancy, 0.3) << "a 256-thread streaming kernel keeps many warps resident";
  ASSERT_TRUE(k.dram_throughput_pct.has_value());
  EXPECT_GT(*k.dram_throughput_pct, 30.0);
  EXPECT_LE(*k.dram_throughput_pct, 100.5);
  for (const auto* pct : {&k.l2_hit_pct, &k.l1_hit_pct, &k.sm_throughput_pct}) {
    ASSERT_TRUE(pct->has_value());
    EXPECT_GE(**pct, 0.0);
    EXPECT_LE(**pct, 100.5);
  }
  // 16-byte loads by full warps: 16 sectors per request, the ideal for that width.
  ASSERT_TRUE(k.ld_sectors_per_request().has_value());
  EXPECT_NEAR(*k.ld_sectors_per_request(), 16.0, 0.5);
  EXPECT_NEAR(*k.ld_ideal_sectors_per_request(), 16.0, 0.5);
  EXPECT_NEAR(*k.st_sectors_per_request(), 16.0, 0.5);
  EXPECT_FALSE(k.stalls.empty());
  ASSERT_TRUE(k.gpu_time_ns.has_value());
  EXPECT_GT(*k.gpu_time_ns, 0.0);
}

TEST_F(ProfileGpu, ActivityDurationAgreesWithEventTiming) {
  ASSERT_NO_FATAL_FAILURE(make_copy(copy_bytes));
  kp::Options opt = quick_options();
  opt.metrics = false;
  opt.timing.graph = false;  // a ~0.7 ms kernel: plain events, as the benchmark would time it
  kp::ProfileRecord rec;
  ASSERT_NO_FATAL_FAILURE(profile_copy(rec, opt));
  ASSERT_EQ(rec.activity_status, "ok");
  ASSERT_TRUE(rec.event_us.has_value());
  const auto activity = rec.activity_us();
  ASSERT_TRUE(activity.has_value());
  std::printf("[ timing ] events %.2f us, activity %.2f us (spread %.3f)\n", *rec.event_us, *activity,
              rec.kernels[0].duration_spread.value_or(-1));
  EXPECT_EQ(rec.kernels[0].duration_samples, 20);
  // Events bracket the kernel plus a little launch latency; both are medians of the same kernel.
  EXPECT_NEAR(*activity, *rec.event_us, 0.05 * *rec.event_us);
}

TEST_F(ProfileGpu, GoodKernelFiresNeitherRule) {
  ASSERT_NO_FATAL_FAILURE(make_copy(copy_bytes));
  kp::ProfileRecord rec;
  ktune::TimingResult empty;
  KTUNE_ASSERT_OK(ktune::time_empty_kernel(stream_.s, ktune::TimingOptions{}, empty));
  rec.empty_kernel_us = empty.median_us;
  rec.tokens = 8192;
  ASSERT_NO_FATAL_FAILURE(profile_copy(rec, quick_options()));
  const auto fs = kp::diagnose(rec);
  for (const kp::Finding& f : fs) std::printf("[ finding ] %s\n", f.message.c_str());
  EXPECT_FALSE(kp::fired(fs, kp::rules::launch_bound_grid));
  EXPECT_FALSE(kp::fired(fs, kp::rules::launch_bound_time));
  if (metrics_unavailable(rec)) GTEST_SKIP() << "hardware metrics unavailable here: " << rec.metrics_status;
  EXPECT_FALSE(kp::fired(fs, kp::rules::uncoalesced_loads));
  EXPECT_FALSE(kp::fired(fs, kp::rules::uncoalesced_stores));
  EXPECT_FALSE(kp::fired(fs, kp::rules::spills));
}

TEST_F(ProfileGpu, StridedLoadsFireUncoalesced) {
  constexpr int stride = 32;
  constexpr std::size_t n = std::size_t{1} << 22;  // 4M outputs from a 512 MiB input
  DeviceBuffer in, out;
  KTUNE_ASSERT_CUDA(cudaMalloc(&in.p, n * stride * sizeof(float)));
  KTUNE_ASSERT_CUDA(cudaMalloc(&out.p, n * sizeof(float)));
  KTUNE_ASSERT_OK(ktune::fill_uniform(static_cast<float*>(in.p), n * stride, 11, -1.f, 1.f, stream_.s));
  KTUNE_ASSERT_CUDA(cudaStreamSynchronize(stream_.s));
  auto launch = [&](std::size_t) -> ktune::Status {
    strided_load<<<static_cast<unsigned>(n / 256), 256, 0, stream_.s>>>(static_cast<const float*>(in.p),
                                                                        static_cast<float*>(out.p), n, stride);
    KTUNE_CHECK_LAUNCH();
    return ktune::Status::success();
  };
  kp::ProfileRecord rec;
  rec.expected_bytes = 2.0 * n * sizeof(float);  // what a gather of n floats must move
  KTUNE_ASSERT_OK(kp::profile_call(launch, 1, stream_.s, quick_options(), rec));
  if (metrics_unavailable(rec)) GTEST_SKIP() << "hardware metrics unavailable here: " << rec.metrics_status;
  ASSERT_EQ(rec.kernels.size(), 1u);
  const kp::KernelMetrics& k = rec.kernels[0];
  std::printf("[ metrics ] strided: %.1f sectors/request, ideal %.1f\n", k.ld_sectors_per_request().value_or(-1),
              k.ld_ideal_sectors_per_request().value_or(-1));
  EXPECT_NEAR(k.ld_sectors_per_request().value_or(0), 32.0, 1.0);
  EXPECT_NEAR(k.ld_ideal_sectors_per_request().value_or(0), 4.0, 0.2);
  const auto fs = kp::diagnose(rec);
  for (const kp::Finding& f : fs) std::printf("[ finding ] %s\n", f.message.c_str());
  EXPECT_TRUE(kp::fired(fs, kp::rules::uncoalesced_loads));
  EXPECT_FALSE(kp::fired(fs, kp::rules::uncoalesced_stores)) << "its stores are coalesced";
  EXPECT_FALSE(kp::fired(fs, kp::rules::launch_bound_grid));
}

TEST_F(ProfileGpu, SingleBlockRowFiresLaunchBound) {
  constexpr int d = 14336;
  DeviceBuffer in, out;
  KTUNE_ASSERT_CUDA(cudaMalloc(&in.p, d * sizeof(float)));
  KTUNE_ASSERT_CUDA(cudaMalloc(&out.p, d * sizeof(float)));
  KTUNE_ASSERT_OK(ktune::fill_uniform(static_cast<float*>(in.p), d, 13, -1.f, 1.f, stream_.s));
  auto launch = [&](std::size_t) -> ktune::Status {
    row_scale_one_block<<<1, 1024, 0, stream_.s>>>(static_cast<const float*>(in.p), static_cast<float*>(out.p), d, 2.f);
    KTUNE_CHECK_LAUNCH();
    return ktune::Status::success();
  };
  kp::ProfileRecord rec;
  rec.tokens = 1;
  rec.expected_bytes = 2.0 * d * sizeof(float);
  ktune::TimingResult empty;
  KTUNE_ASSERT_OK(ktune::time_empty_kernel(stream_.s, ktune::TimingOptions{}, empty));
  rec.empty_kernel_us = empty.median_us;
  KTUNE_ASSERT_OK(kp::profile_call(launch, 1, stream_.s, quick_options(), rec));
  ASSERT_EQ(rec.activity_status, "ok") << "the launch shape comes from the activity records";
  const auto fs = kp::diagnose(rec);
  for (const kp::Finding& f : fs) std::printf("[ finding ] %s\n", f.message.c_str());
  ASSERT_TRUE(kp::fired(fs, kp::rules::launch_bound_grid));
  for (const kp::Finding& f : fs)
    if (f.rule == kp::rules::launch_bound_grid) {
      EXPECT_DOUBLE_EQ(f.value, 1.0);
      EXPECT_NE(f.message.find("1 block of 1024 threads"), std::string::npos) << f.message;
      EXPECT_NE(f.message.find("at T = 1"), std::string::npos) << f.message;
    }
  if (rec.metrics_status == "ok") EXPECT_FALSE(kp::fired(fs, kp::rules::uncoalesced_loads));
}

TEST_F(ProfileGpu, UnknownMetricIsAGracefulError) {
  ASSERT_NO_FATAL_FAILURE(make_copy(std::size_t{16} << 20));
  std::vector<kp::RangeValues> ranges;
  std::size_t passes = 0;
  std::string why;
  const ktune::Status st = kp::collect_metrics([&]() { return launch_copy(); }, stream_.s,
                                               {"dram__bytes_read.sum", "ktune__no_such_metric.sum"}, ranges, passes, why);
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(why.empty());
  EXPECT_TRUE(ranges.empty());
  std::printf("[ status ] %s: %s\n", st.message, why.c_str());
  if (st.code == ktune::StatusCode::invalid_argument)
    EXPECT_NE(why.find("ktune__no_such_metric.sum"), std::string::npos) << why;
  else
    EXPECT_EQ(st.code, ktune::StatusCode::unsupported) << "counters forbidden here, else the metric is named";
  // CUPTI is left usable: a full profile afterwards still works.
  kp::ProfileRecord rec;
  ASSERT_NO_FATAL_FAILURE(profile_copy(rec, quick_options()));
  EXPECT_EQ(rec.activity_status, "ok");
  EXPECT_TRUE(rec.event_us.has_value());
  KTUNE_EXPECT_OK(ktune::Status::from_cuda(cudaGetLastError(), "cudaGetLastError"));
}

TEST_F(ProfileGpu, InPlaceKernelIsReplayedOnRestoredMemory) {
  // Kernel replay runs the kernel once per pass; CUPTI must restore memory in between, or an
  // in-place x *= 2 would be applied `passes` times.
  constexpr std::size_t n = std::size_t{1} << 20;
  DeviceBuffer buf;
  KTUNE_ASSERT_CUDA(cudaMalloc(&buf.p, n * sizeof(float4)));
  std::vector<float> ones(4 * n, 1.f);
  KTUNE_ASSERT_CUDA(cudaMemcpy(buf.p, ones.data(), ones.size() * sizeof(float), cudaMemcpyHostToDevice));
  std::vector<kp::RangeValues> ranges;
  std::size_t passes = 0;
  std::string why;
  const ktune::Status st = kp::collect_metrics(
      [&]() -> ktune::Status {
        scale_in_place<<<static_cast<unsigned>(n / 256), 256, 0, stream_.s>>>(static_cast<float4*>(buf.p), n, 2.f);
        KTUNE_CHECK_LAUNCH();
        return ktune::Status::success();
      },
      stream_.s, kp::default_metric_names(true), ranges, passes, why);
  if (st.code == ktune::StatusCode::unsupported) GTEST_SKIP() << st.message << ": " << why;
  KTUNE_ASSERT_OK(st);
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_GT(passes, 1u);
  std::vector<float> back(4 * n);
  KTUNE_ASSERT_CUDA(cudaMemcpy(back.data(), buf.p, back.size() * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(back.front(), 2.f);
  EXPECT_EQ(back.back(), 2.f);
}

}  // namespace
