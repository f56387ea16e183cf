// GPU tests of the core: the hardware model against the device, the verification gate against
// deliberately wrong kernels, fills, timing, the copy ceiling, the run-time device check, launch.
#include <cooperative_groups.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <tuple>
#include <type_traits>
#include <vector>

#include <ktune/arch.hpp>
#include <ktune/device_check.hpp>
#include <ktune/device_info.hpp>
#include <ktune/fill.cuh>
#include <ktune/intrinsics.cuh>
#include <ktune/launch.hpp>
#include <ktune/timing.cuh>
#include <ktune/verify.hpp>

#include "support/gpu.hpp"

namespace {

TEST(ArchGpu, TableRowAgreesWithTheDevice) {
  KTUNE_REQUIRE_GPU();
  const ktune::DeviceInfo* dev = nullptr;
  KTUNE_ASSERT_OK(ktune::current_device(dev));
  cudaDeviceProp p{};
  KTUNE_ASSERT_CUDA(cudaGetDeviceProperties(&p, dev->ordinal));
  const ktune::ArchLimits a = ktune::arch_limits(dev->arch);
  ASSERT_TRUE(a.known()) << "no arch.hpp row for sm_" << dev->arch << " (" << p.name << ")";
  std::printf("[ device ] %s sm_%d, %d SMs, L2 %d MB\n", p.name, dev->arch, p.multiProcessorCount, p.l2CacheSize >> 20);
  EXPECT_EQ(a.warp_size, p.warpSize);
  EXPECT_EQ(a.max_threads_per_block, p.maxThreadsPerBlock);
  EXPECT_EQ(a.max_threads_per_sm, p.maxThreadsPerMultiProcessor);
  EXPECT_EQ(a.max_blocks_per_sm, p.maxBlocksPerMultiProcessor);
  EXPECT_EQ(a.regs_per_sm, p.regsPerMultiprocessor);
  EXPECT_EQ(a.max_regs_per_block, p.regsPerBlock);
  EXPECT_EQ(static_cast<std::size_t>(a.smem_per_sm), p.sharedMemPerMultiprocessor);
  EXPECT_EQ(static_cast<std::size_t>(a.smem_per_block_optin), p.sharedMemPerBlockOptin);
  EXPECT_EQ(static_cast<std::size_t>(a.smem_per_block_default), p.sharedMemPerBlock);
  int cluster_launch = 0;
  KTUNE_ASSERT_CUDA(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, dev->ordinal));
  EXPECT_EQ(a.clusters, cluster_launch != 0);
  EXPECT_EQ(dev->sms, p.multiProcessorCount);
}

TEST(DeviceInfoGpu, CachedPerDevice) {
  KTUNE_REQUIRE_GPU();
  const ktune::DeviceInfo* a = nullptr;
  const ktune::DeviceInfo* b = nullptr;
  KTUNE_ASSERT_OK(ktune::current_device(a));
  KTUNE_ASSERT_OK(ktune::current_device(b));
  EXPECT_EQ(a, b) << "the second query is served from the cache";
  EXPECT_GT(a->l2_bytes, 0);
}

// ---- the verification gate against deliberately wrong "variants" ------------------------------
enum class Bug { none, skipped_tail, off_by_one, race };

// out[i] = 2 * in[n - 1 - i] within each block of 256, through shared memory (a block reversal),
// so a missing barrier is a real race between warps.
template <Bug B>
__global__ void reverse_scale(const float* in, float* out, int n) {
  __shared__ float tile[256];
  const int base = blockIdx.x * 256;
  const int t = threadIdx.x;
  const int i = base + t;
  if (B == Bug::race) __nanosleep(2000u * (t / 32));  // later warps write late: readers see stale data
  tile[t] = i < n ? in[i] : 0.f;
  if (B != Bug::race) __syncthreads();
  const int src = 255 - t;
  const int limit = B == Bug::skipped_tail ? n - 1 : n;
  if (i < limit) {
    const int j = B == Bug::off_by_one ? (src + 1) % 256 : src;
    out[i] = 2.f * tile[j];
  }
}

template <Bug B>
ktune::Comparison run_gate(int n, std::uint64_t seed) {
  float *in = nullptr, *out = nullptr;
  EXPECT_EQ(cudaMalloc(&in, n * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&out, n * sizeof(float)), cudaSuccess);
  EXPECT_TRUE(ktune::test::ok(ktune::fill_uniform(in, n, seed, -4.f, 4.f)));
  EXPECT_TRUE(ktune::test::ok(ktune::fill_bits(out, n, ktune::poison_bits<float>())));
  reverse_scale<B><<<(n + 255) / 256, 256>>>(in, out, n);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<float> h_in(n), h_out(n);
  EXPECT_EQ(cudaMemcpy(h_in.data(), in, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(h_out.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(in);
  cudaFree(out);
  std::vector<double> ref(n);
  for (int i = 0; i < n; ++i) {
    const int base = i / 256 * 256, src = base + 255 - (i - base);
    ref[i] = src < n ? 2.0 * h_in[src] : 0.0;
  }
  return ktune::compare(h_out.data(), ref.data(), n, ktune::default_tolerance(ktune::DType::f32));
}

TEST(VerifyGpu, GateAcceptsTheCorrectKernel) {
  KTUNE_REQUIRE_GPU();
  const auto c = run_gate<Bug::none>(4096, 11);
  EXPECT_TRUE(c.passed) << c.summary();
}

TEST(VerifyGpu, GateRejectsASkippedTailElement) {
  KTUNE_REQUIRE_GPU();
  const auto c = run_gate<Bug::skipped_tail>(4096, 12);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.unwritten, 1u) << c.summary();
  EXPECT_EQ(c.first_bad, 4095u);
}

TEST(VerifyGpu, GateRejectsAnOffByOne) {
  KTUNE_REQUIRE_GPU();
  const auto c = run_gate<Bug::off_by_one>(4096, 13);
  EXPECT_FALSE(c.passed);
  EXPECT_GT(c.mismatched, 4000u) << c.summary();
}

TEST(VerifyGpu, GateRejectsARace) {
  KTUNE_REQUIRE_GPU();
  const auto c = run_gate<Bug::race>(1 << 16, 14);
  EXPECT_FALSE(c.passed) << c.summary();
  EXPECT_GT(c.mismatched, 0u);
}

TEST(FillGpu, DeviceFillMatchesTheHostFormula) {
  KTUNE_REQUIRE_GPU();
  const int n = 5000;
  __nv_bfloat16* d = nullptr;
  KTUNE_ASSERT_CUDA(cudaMalloc(&d, n * sizeof(*d)));
  KTUNE_ASSERT_OK(ktune::fill_uniform(d, n, 99, -3.f, 3.f));
  std::vector<__nv_bfloat16> h(n);
  KTUNE_ASSERT_CUDA(cudaMemcpy(h.data(), d, n * sizeof(*d), cudaMemcpyDeviceToHost));
  cudaFree(d);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(ktune::bits_of(h[i]), ktune::bits_of(ktune::from_float<__nv_bfloat16>(ktune::uniform_at(99, i, -3.f, 3.f))))
        << i;
}

// ---- timing --------------------------------------------------------------------------------------
__global__ void scale_kernel(const float4* in, float4* out, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    float4 v = in[i];
    out[i] = make_float4(2 * v.x, 2 * v.y, 2 * v.z, 2 * v.w);
  }
}

TEST(TimingGpu, LargeCopyNearTheCeilingAndShortKernelsReplayedInGraphs) {
  KTUNE_REQUIRE_GPU();
  ktune::CopyCeiling ceiling;
  KTUNE_ASSERT_OK(ktune::measure_copy_ceiling(ceiling));
  std::printf("[ copy   ] memcpy %.0f GB/s, 16 B/thread kernel %.0f GB/s (read + written)\n", ceiling.memcpy_gbps,
              ceiling.kernel_gbps);
  EXPECT_GT(ceiling.best_gbps(), 500.0);
  EXPECT_LT(ceiling.best_gbps(), 20000.0);

  // 256 MB per call, rotated over 2 sets (> 2x L2 of any current GPU): should run near the ceiling.
  const std::size_t n = (std::size_t{128} << 20) / sizeof(float4);
  float4* buf = nullptr;
  KTUNE_ASSERT_CUDA(cudaMalloc(&buf, 4 * n * sizeof(float4)));
  KTUNE_ASSERT_OK(ktune::fill_uniform(reinterpret_cast<float*>(buf), 16 * n, 5, -1.f, 1.f));
  cudaStream_t stream = nullptr;
  KTUNE_ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto scale_set = [&](std::size_t r) -> ktune::Status {
    scale_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(buf + 2 * r * n, buf + (2 * r + 1) * n, n);
    KTUNE_CHECK_LAUNCH();
    return ktune::Status::success();
  };
  ktune::TimingResult big;
  KTUNE_ASSERT_OK(ktune::time_kernel(scale_set, 2, stream, ktune::TimingOptions{}, big));
  const double gbps = 2.0 * n * sizeof(float4) / (big.median_us * 1e3);
  std::printf("[ timing ] 256 MB scale: %.1f us median, %.0f GB/s = %.0f%% of copy, %d samples\n", big.median_us, gbps,
              100 * gbps / ceiling.best_gbps(), big.samples);
  EXPECT_TRUE(big.graph) << "every kernel is replayed from a graph, the events its first and last nodes";
  EXPECT_GE(big.batch, 2) << "at least two launches per replay";
  EXPECT_LE(big.batch * big.median_us, 2 * ktune::TimingOptions{}.graph_sample_us) << "a replay of about graph_sample_us";
  EXPECT_GT(gbps, 0.7 * ceiling.best_gbps());
  EXPECT_LE(big.min_us, big.median_us);
  EXPECT_LE(big.median_us, big.max_us);
  EXPECT_GE(big.probe_us, 0.9 * big.median_us) << "a single call, launch latency included";
  EXPECT_FALSE(big.abandoned);

  // A search's clearly slower variant: past the limit it stops at its probe, one sample, no graph.
  ktune::TimingOptions limited;
  limited.abandon_above_us = 0.5 * big.median_us;
  ktune::TimingResult left;
  KTUNE_ASSERT_OK(ktune::time_kernel(scale_set, 2, stream, limited, left));
  EXPECT_TRUE(left.abandoned);
  EXPECT_EQ(left.samples, 1);
  EXPECT_FALSE(left.graph);
  EXPECT_DOUBLE_EQ(left.median_us, left.probe_us);
  EXPECT_GT(left.probe_us, limited.abandon_above_us);
  limited.abandon_above_us = 4 * big.median_us;  // within the limit: timed in full
  KTUNE_ASSERT_OK(ktune::time_kernel(scale_set, 2, stream, limited, left));
  EXPECT_FALSE(left.abandoned);
  EXPECT_TRUE(left.graph);
  EXPECT_GE(left.samples, limited.min_samples);
  // Where the probe may not decide (its floor above the call), the first round of graph-replayed samples
  // does: every one past the limit, the call stops after them; within it, it is timed in full.
  limited.abandon_probe_min_us = 8 * big.median_us;
  limited.abandon_above_us = 0.5 * big.median_us;
  KTUNE_ASSERT_OK(ktune::time_kernel(scale_set, 2, stream, limited, left));
  EXPECT_TRUE(left.abandoned);
  EXPECT_TRUE(left.graph);
  EXPECT_EQ(left.samples, std::max(3, limited.min_samples / 2));  // the first round: half the minimum, at least 3
  EXPECT_GT(left.min_us, limited.abandon_above_us);
  EXPECT_GT(left.probe_us, limited.abandon_above_us) << "the probe alone would have stopped it";
  limited.abandon_above_us = 4 * big.median_us;
  KTUNE_ASSERT_OK(ktune::time_kernel(scale_set, 2, stream, limited, left));
  EXPECT_FALSE(left.abandoned);
  EXPECT_GE(left.samples, limited.min_samples);

  ktune::TimingResult empty;
  KTUNE_ASSERT_OK(ktune::time_empty_kernel(stream, ktune::TimingOptions{}, empty));
  std::printf("[ timing ] empty kernel: %.2f us per launch in a graph of %d\n", empty.median_us, empty.batch);
  EXPECT_TRUE(empty.graph);
  EXPECT_GT(empty.batch, 1);
  EXPECT_GT(empty.median_us, 0.2);
  EXPECT_LT(empty.median_us, 10.0);
  ktune::TimingResult refused;
  EXPECT_FALSE(ktune::time_empty_kernel(nullptr, ktune::TimingOptions{}, refused).ok())
      << "graph replay on the legacy default stream is refused, not attempted";
  cudaStreamDestroy(stream);
  cudaFree(buf);
}

// A copy of `half_bytes` in and as many out, timed over a rotation that leaves L2 cold (cold) and on one set,
// which L2 holds (warm), with `o`; `rotations` and the L2's size are the rotation's.
void time_copy_cold_and_warm(std::size_t half_bytes, const ktune::TimingOptions& o, std::size_t& rotations,
                             std::size_t& l2, ktune::TimingResult& cold, ktune::TimingResult& warm) {
  int dev = 0, l2_attr = 0;
  KTUNE_ASSERT_CUDA(cudaGetDevice(&dev));
  KTUNE_ASSERT_CUDA(cudaDeviceGetAttribute(&l2_attr, cudaDevAttrL2CacheSize, dev));
  l2 = static_cast<std::size_t>(l2_attr);
  const std::size_t n = half_bytes / sizeof(float4);
  rotations = ktune::rotations_for_cold_l2(2 * n * sizeof(float4), l2);
  ktune::test::DeviceBuffer<float4> buf(2 * n * rotations);
  ASSERT_NE(buf.ptr, nullptr);
  KTUNE_ASSERT_OK(ktune::fill_uniform(reinterpret_cast<float*>(buf.ptr), 8 * n * rotations, 9, -1.f, 1.f));
  ktune::test::Stream stream;
  ASSERT_NE(stream.s, nullptr);
  auto copy_set = [&](std::size_t r) -> ktune::Status {
    scale_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream.s>>>(buf.ptr + 2 * r * n, buf.ptr + (2 * r + 1) * n, n);
    KTUNE_CHECK_LAUNCH();
    return ktune::Status::success();
  };
  KTUNE_ASSERT_OK(ktune::time_kernel(copy_set, rotations, stream.s, o, cold));
  KTUNE_ASSERT_OK(ktune::time_kernel(copy_set, 1, stream.s, o, warm));
  std::printf("[ timing ] %zu KB copy: %d launches over %zu sets, %.2f us (cold L2, %s); %d on one set, %.2f us (warm): "
              "%.2fx\n",
              2 * half_bytes >> 10, cold.batch, rotations, cold.median_us,
              ktune::replay_needs_flush(cold.batch, rotations) ? "an L2 read before each replay" : "whole rotations",
              warm.batch, warm.median_us, cold.median_us / warm.median_us);
  ASSERT_TRUE(cold.graph && warm.graph) << "a short copy is replayed from a graph";
}

// A short kernel's graph replays the same launches on the same sets. Sets of 128 KB in a graph of a few
// hundred launches (tens of MB) fit the L2 together: without a flush before each replay, every replay
// after the first found its data in L2, and the time depended on the batch its probe gave it. Timed on a
// cold-L2 rotation the copy must be clearly slower than the same graph on one set, which L2 holds.
TEST(TimingGpu, GraphReplaysOfShortKernelsStartFromAColdL2) {
  KTUNE_REQUIRE_GPU();
  std::size_t rotations = 0, l2 = 0;
  ktune::TimingResult cold, warm;
  ASSERT_NO_FATAL_FAILURE(time_copy_cold_and_warm(std::size_t{64} << 10, ktune::TimingOptions{}, rotations, l2, cold, warm));
  ASSERT_LT(static_cast<std::size_t>(cold.batch) * (std::size_t{128} << 10), l2)
      << "the graph's sets fit L2 together: the case the flush is for";
  EXPECT_TRUE(ktune::replay_needs_flush(cold.batch, rotations));
  EXPECT_GT(cold.median_us, 1.15 * warm.median_us) << "replays of the rotation found their sets in L2";
}

// Sets of 8 MB: a short copy's batch holds several rotations, so it is made a whole number of them and
// replayed without a flush; each replay takes up the rotation where the last left it, and the copy is
// still timed on a cold L2 (clearly slower than on one set, which L2 holds).
TEST(TimingGpu, ReplaysOfWholeRotationsStayCold) {
  KTUNE_REQUIRE_GPU();
  ktune::TimingOptions o;
  o.graph_sample_us = 250;
  o.batch_for_us = 4.0;  // about 62 launches before rounding
  std::size_t rotations = 0, l2 = 0;
  ktune::TimingResult cold, warm;
  ASSERT_NO_FATAL_FAILURE(time_copy_cold_and_warm(std::size_t{4} << 20, o, rotations, l2, cold, warm));
  ASSERT_GE(static_cast<std::size_t>(cold.batch), rotations) << "the case this test is for: a batch of several rotations";
  EXPECT_EQ(cold.batch % static_cast<int>(rotations), 0);
  EXPECT_FALSE(ktune::replay_needs_flush(cold.batch, rotations));
  EXPECT_GT(cold.median_us, 1.15 * warm.median_us) << "replays of whole rotations found their sets in L2";
}

// A replay has a fixed cost of its own that each launch carries divided by the batch, so calls of one shape
// are given one figure to size their batches for (ktune/replay_batch.hpp): a call and one twice as long get
// the same batch, and the same call replayed 8 launches at a time measures slower than 64 at a time.
TEST(TimingGpu, CallsGivenOneFigureReplayTheSameBatch) {
  KTUNE_REQUIRE_GPU();
  const std::size_t n = (std::size_t{256} << 10) / sizeof(float4);
  ktune::test::DeviceBuffer<float4> buf(4 * n);
  ASSERT_NE(buf.ptr, nullptr);
  KTUNE_ASSERT_OK(ktune::fill_uniform(reinterpret_cast<float*>(buf.ptr), 16 * n, 11, -1.f, 1.f));
  ktune::test::Stream stream;
  ASSERT_NE(stream.s, nullptr);
  auto scale = [&](std::size_t elements) {
    return [&, elements](std::size_t) -> ktune::Status {
      scale_kernel<<<static_cast<unsigned>((elements + 255) / 256), 256, 0, stream.s>>>(buf.ptr, buf.ptr + 2 * n, elements);
      KTUNE_CHECK_LAUNCH();
      return ktune::Status::success();
    };
  };
  ktune::TimingOptions o;
  o.graph_sample_us = 250;
  o.batch_for_us = 5.0;  // 50 launches
  ktune::TimingResult one, two;
  KTUNE_ASSERT_OK(ktune::time_kernel(scale(n), 1, stream.s, o, one));
  KTUNE_ASSERT_OK(ktune::time_kernel(scale(2 * n), 1, stream.s, o, two));
  ASSERT_TRUE(one.graph && two.graph);
  EXPECT_EQ(one.batch, 50);
  EXPECT_EQ(two.batch, 50) << "a call twice as long keeps the shape's batch";
  EXPECT_GT(two.median_us, one.median_us);

  // The fixed cost: the same call at 8 and at 64 launches per replay, t(b) = t + c / b.
  ktune::TimingResult at8, at64;
  o.batch_for_us = 250.0 / 8;
  KTUNE_ASSERT_OK(ktune::time_kernel(scale(n), 1, stream.s, o, at8));
  o.batch_for_us = 250.0 / 64;
  KTUNE_ASSERT_OK(ktune::time_kernel(scale(n), 1, stream.s, o, at64));
  ASSERT_EQ(at8.batch, 8);
  ASSERT_EQ(at64.batch, 64);
  const double cost = (at8.median_us - at64.median_us) / (1.0 / 8 - 1.0 / 64);
  std::printf("[ timing ] one call %.3f us at 8 launches per replay, %.3f us at 64: a replay's fixed cost %.2f us\n",
              at8.median_us, at64.median_us, cost);
  EXPECT_GT(at8.median_us, at64.median_us) << "a replay's fixed cost weighs more on a smaller batch";
}

// Each launch spins step_ns times its replay's number (launches / batch, counted on the device): replay k of a
// graph of `batch` launches takes about batch x (k + 1) x step_ns.
__global__ void stepped_spin_kernel(unsigned* launches, unsigned batch, unsigned long long step_ns) {
  unsigned long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const unsigned replay = atomicAdd(launches, 1u) / batch;
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < (replay + 1) * step_ns);
}

// A round's replays go back to back, each between events of its own (the graph's event nodes pointed at the
// sample's pair before its launch): every sample times its own replay, not a neighbour's or the sum of several.
TEST(TimingGpu, ReplaysBackToBackEachTimeTheirOwnReplay) {
  KTUNE_REQUIRE_GPU();
  ktune::test::DeviceBuffer<unsigned> launches(1);
  ASSERT_NE(launches.ptr, nullptr);
  KTUNE_ASSERT_CUDA(cudaMemset(launches.ptr, 0, sizeof(unsigned)));
  ktune::test::Stream stream;
  ASSERT_NE(stream.s, nullptr);
  constexpr unsigned batch = 4;
  constexpr unsigned long long step_ns = 20000;
  ktune::detail::EventPair ev;
  KTUNE_ASSERT_OK(ev.create());
  ktune::detail::GraphGuard g;
  ASSERT_TRUE(ktune::detail::capture_timed_batch(stream.s, batch, ev.start, ev.stop, [&] {
    stepped_spin_kernel<<<1, 1, 0, stream.s>>>(launches.ptr, batch, step_ns);
    KTUNE_CHECK_LAUNCH();
    return ktune::Status::success();
  }, g));
  ASSERT_NE(g.start_node, nullptr);
  ASSERT_NE(g.stop_node, nullptr);
  ktune::detail::SampleEvents pairs;
  std::vector<double> us;
  int flushes = 0;
  KTUNE_ASSERT_OK(ktune::detail::replay_samples(stream.s, g, batch, 3, pairs, [&] {
    ++flushes;
    return ktune::Status::success();
  }, us));
  KTUNE_ASSERT_OK(ktune::detail::replay_samples(stream.s, g, batch, 2, pairs, [] { return ktune::Status::success(); }, us));
  ASSERT_EQ(us.size(), 5u);
  EXPECT_EQ(flushes, 3);
  for (std::size_t k = 0; k < us.size(); ++k) {
    const double want = (k + 1) * step_ns * 1e-3;  // per launch
    std::printf("[ timing ] replay %zu: %.1f us a launch (%.1f expected)\n", k, us[k], want);
    EXPECT_NEAR(us[k], want, 0.1 * want + 5.0) << "replay " << k;
  }
}

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

// A call of at least probe_alone_us is probed once, a shorter one three times, and a probe that would stop
// the call is confirmed by two more. The launches counted: the probes, then the batch captured.
TEST(TimingGpu, ALongCallIsProbedOnceUnlessItsProbeWouldStopIt) {
  KTUNE_REQUIRE_GPU();
  ktune::test::Stream stream;
  ASSERT_NE(stream.s, nullptr);
  auto probes = [&](unsigned long long ns, double abandon_above_us) {
    int launches = 0;
    ktune::TimingOptions opt;
    opt.warmup = 0;
    opt.min_samples = opt.max_samples = 3;
    opt.probe_alone_us = 100.0;
    opt.abandon_above_us = abandon_above_us;
    ktune::TimingResult r;
    KTUNE_EXPECT_OK(ktune::time_kernel(
        [&](std::size_t) -> ktune::Status {
          ++launches;
          spin_kernel<<<1, 1, 0, stream.s>>>(ns);
          KTUNE_CHECK_LAUNCH();
          return ktune::Status::success();
        },
        1, stream.s, opt, r));
    return r.abandoned ? launches : launches - (r.graph ? r.batch : 0);
  };
  EXPECT_EQ(probes(150000, 0), 1);      // 150 us: its first call alone
  EXPECT_EQ(probes(20000, 0), 3);       // 20 us: the fastest of three
  EXPECT_EQ(probes(150000, 120.0), 3);  // above the limit: confirmed, then stopped
}

TEST(TimingGpu, RotationsLeaveL2Cold) {
  EXPECT_EQ(ktune::rotations_for_cold_l2(std::size_t{1} << 30, 50 << 20), 2u);
  EXPECT_EQ(ktune::rotations_for_cold_l2(10 << 20, 50 << 20), 12u);  // 10 sets + 2 > 100 MB
  EXPECT_EQ(ktune::rotations_for_cold_l2(std::size_t{3} << 30, 50 << 20, std::size_t{4} << 30), 1u);
}

// ---- the run-time device check -------------------------------------------------------------------
__global__ void local_array_kernel(float* out, int k) {
  float a[64];
  for (int i = 0; i < 64; ++i) a[i] = out[i] * threadIdx.x + i;
  a[(k + threadIdx.x) & 63] += 1.f;                // a store at a run-time index: the array lives in local memory
  out[threadIdx.x] = a[k & 63] + a[(k * 7) & 63];
}

TEST(DeviceCheckGpu, RejectsLocalMemoryAndAcceptsAPlainKernel) {
  KTUNE_REQUIRE_GPU();
  ktune::DeviceCheck c;
  KTUNE_ASSERT_OK(ktune::check_on_device({reinterpret_cast<const void*>(&local_array_kernel), 128, 0, 1}, c));
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("local memory"), std::string::npos) << c.reason;
  KTUNE_ASSERT_OK(ktune::check_on_device({reinterpret_cast<const void*>(&scale_kernel), 256, 0, 1}, c));
  EXPECT_TRUE(c.ok) << c.reason;
  EXPECT_GT(c.registers, 0);
  EXPECT_GT(c.occupancy, 0.0);
  EXPECT_LE(c.occupancy, 1.0);
  KTUNE_ASSERT_OK(ktune::check_on_device({reinterpret_cast<const void*>(&scale_kernel), 256, 300 * 1024, 1}, c));
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("shared memory"), std::string::npos) << c.reason;
}

// ---- launch: clusters and PDL through ktune::launch -------------------------------------------------
__global__ void cluster_rank_kernel(int* out) {
  ktune::pdl_wait();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  out[blockIdx.x] = static_cast<int>(cooperative_groups::this_cluster().block_rank());
#else
  out[blockIdx.x] = -1;
#endif
}

TEST(LaunchGpu, ClusterAndPdlAttributes) {
  KTUNE_REQUIRE_GPU();
  const ktune::DeviceInfo* dev = nullptr;
  KTUNE_ASSERT_OK(ktune::current_device(dev));
  if (!ktune::arch_limits(dev->table_arch).clusters) GTEST_SKIP() << "device has no thread-block clusters";
  int* out = nullptr;
  KTUNE_ASSERT_CUDA(cudaMalloc(&out, 16 * sizeof(int)));
  ktune::LaunchShape shape;
  shape.grid = dim3(16);
  shape.block = dim3(32);
  shape.cluster = 4;
  shape.pdl = true;
  KTUNE_ASSERT_OK(ktune::launch(cluster_rank_kernel, shape, nullptr, out));
  std::vector<int> h(16);
  KTUNE_ASSERT_CUDA(cudaMemcpy(h.data(), out, 16 * sizeof(int), cudaMemcpyDeviceToHost));
  cudaFree(out);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(h[i], i % 4) << i;
}
/// Writes `Tag` through the last of its `words` words of dynamic shared memory: a launch with more than
/// the kernel's limit fails.
template <int Tag>
__global__ void smem_kernel(int* out, int words) {
  extern __shared__ int smem[];
  if (threadIdx.x == 0) {
    smem[words - 1] = Tag;
    out[0] = smem[words - 1];
  }
}

// Two kernels of one signature, raised in an order that used to fail: the limit is kept per kernel and
// never lowered (a record per signature once let a raise of one kernel stand for another, and a smaller
// raise lower a limit set higher, so a later launch above it failed with cudaErrorInvalidValue).
TEST(LaunchGpu, DynamicSharedMemoryLimitsArePerKernelAndNeverLowered) {
  KTUNE_REQUIRE_GPU();
  int optin = 0, dev = 0;
  KTUNE_ASSERT_CUDA(cudaGetDevice(&dev));
  KTUNE_ASSERT_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (optin < 160 * 1024) GTEST_SKIP() << "the device opts in to " << optin << " bytes of shared memory per block";
  const void* a = reinterpret_cast<const void*>(smem_kernel<1>);
  const void* b = reinterpret_cast<const void*>(smem_kernel<2>);
  KTUNE_ASSERT_OK(ktune::detail::ensure_dynamic_smem(a, 150 * 1024));  // A at 150 KB (a family's own raise)
  KTUNE_ASSERT_OK(ktune::detail::ensure_dynamic_smem(b, 100 * 1024));
  KTUNE_ASSERT_OK(ktune::detail::ensure_dynamic_smem(a, 120 * 1024));  // A asked for less: stays at 150 KB
  KTUNE_ASSERT_OK(ktune::detail::ensure_dynamic_smem(b, 160 * 1024));  // B above anything A had
  cudaFuncAttributes attr{};
  KTUNE_ASSERT_CUDA(cudaFuncGetAttributes(&attr, a));
  EXPECT_EQ(attr.maxDynamicSharedSizeBytes, 150 * 1024);
  KTUNE_ASSERT_CUDA(cudaFuncGetAttributes(&attr, b));
  EXPECT_EQ(attr.maxDynamicSharedSizeBytes, 160 * 1024);

  int* out = nullptr;
  KTUNE_ASSERT_CUDA(cudaMalloc(&out, sizeof(int)));
  ktune::LaunchShape shape;
  shape.block = dim3(32);
  int h = 0;
  for (auto [kernel, kib, tag] : {std::tuple{smem_kernel<1>, 150, 1}, std::tuple{smem_kernel<2>, 160, 2}}) {
    shape.smem = static_cast<std::size_t>(kib) * 1024;
    KTUNE_EXPECT_OK(ktune::launch(kernel, shape, nullptr, out, static_cast<int>(shape.smem / sizeof(int))));
    KTUNE_ASSERT_CUDA(cudaMemcpy(&h, out, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT_EQ(h, tag);
  }
  cudaFree(out);
}

// The fault behind fused_add_rmsnorm's stage 6 failing its timing rounds with cudaErrorInvalidValue at
// h = 5120 once h = 8192 had been gated: the gate's device check set the limit to the narrower shape's
// 96 KB, under the 100 KB a launch had raised it to and still counted on. The check must go through the
// same record and never lower the limit.
TEST(LaunchGpu, DeviceCheckNeverLowersALimitALaunchRaised) {
  KTUNE_REQUIRE_GPU();
  int optin = 0, dev = 0;
  KTUNE_ASSERT_CUDA(cudaGetDevice(&dev));
  KTUNE_ASSERT_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (optin < 100 * 1024) GTEST_SKIP() << "the device opts in to " << optin << " bytes of shared memory per block";
  auto* kernel = smem_kernel<3>;
  int* out = nullptr;
  KTUNE_ASSERT_CUDA(cudaMalloc(&out, sizeof(int)));
  ktune::LaunchShape wide;
  wide.block = dim3(32);
  wide.smem = 100 * 1024;
  KTUNE_EXPECT_OK(ktune::launch(kernel, wide, nullptr, out, static_cast<int>(wide.smem / sizeof(int))));

  ktune::DeviceCheck check;
  KTUNE_ASSERT_OK(ktune::check_on_device({reinterpret_cast<const void*>(kernel), 32, 96 * 1024, 1}, check));
  EXPECT_TRUE(check.ok) << check.reason;
  cudaFuncAttributes attr{};
  KTUNE_ASSERT_CUDA(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(kernel)));
  EXPECT_GE(attr.maxDynamicSharedSizeBytes, 100 * 1024);

  int h = 0;
  KTUNE_EXPECT_OK(ktune::launch(kernel, wide, nullptr, out, static_cast<int>(wide.smem / sizeof(int))));
  KTUNE_ASSERT_CUDA(cudaMemcpy(&h, out, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(h, 3);
  cudaFree(out);
}

/// Per element, both ways: the element conversions (to_float, from_float) and the vector ones (to_floats,
/// from_floats) of the same 8-element vectors, as raw bits.
template <class E>
__global__ void convert_both_ways(const std::uint16_t* elements, const float* floats, std::size_t vectors,
                                  std::uint32_t* widened, std::uint32_t* widened_whole, std::uint16_t* rounded,
                                  std::uint16_t* rounded_whole) {
  using Vec = ktune::AlignedVector<E, 8>;
  const std::size_t v = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (v >= vectors) return;
  const Vec in = reinterpret_cast<const Vec*>(elements)[v];
  float whole[8], f[8];
  ktune::to_floats(whole, in);
  for (int i = 0; i < 8; ++i) f[i] = floats[8 * v + i];
  const Vec out = ktune::from_floats<E>(f);
  for (int i = 0; i < 8; ++i) {
    widened[8 * v + i] = __float_as_uint(ktune::to_float(in.v[i]));
    widened_whole[8 * v + i] = __float_as_uint(whole[i]);
    const E r = ktune::from_float<E>(f[i]);
    rounded[8 * v + i] = *reinterpret_cast<const std::uint16_t*>(&r);
    rounded_whole[8 * v + i] = reinterpret_cast<const std::uint16_t*>(&out)[i];
  }
}

/// The kernels convert whole vectors (to_floats: bf16 widened from packed words with integer operations;
/// from_floats: 16-bit pairs rounded by one instruction): bit for bit what the element conversions give,
/// on every 16-bit pattern and on 2^20 float patterns (NaN, infinities, subnormals, halfway cases); a NaN
/// only as a NaN.
template <class E>
void expect_vector_conversions_equal_element_ones() {
  constexpr std::size_t n = std::size_t{1} << 20;  // 16 times every 16-bit pattern; 2^20 float patterns
  std::vector<std::uint16_t> elements(n);
  std::vector<float> floats(n);
  std::mt19937 rng(static_cast<std::uint32_t>(ktune::test::test_seed()));
  for (std::size_t i = 0; i < n; ++i) {
    elements[i] = static_cast<std::uint16_t>(i);
    // Random words; every fourth a value of E plus half its ulp (a tie) or plus a random part of one.
    const std::uint32_t w = rng();
    std::uint32_t bits = w;
    if (i % 4 == 0) {
      const auto h = static_cast<std::uint16_t>(w >> 16);
      E e;
      std::memcpy(&e, &h, 2);
      const float exact = ktune::to_float(e);
      std::memcpy(&bits, &exact, 4);
      constexpr std::uint32_t half_ulp = std::is_same_v<E, __half> ? 1u << 12 : 1u << 15;
      bits += (i & 4) ? half_ulp : (w & (2 * half_ulp - 1));
    }
    std::memcpy(&floats[i], &bits, 4);
  }
  ktune::test::DeviceBuffer<std::uint16_t> d_el(n), d_rounded(n), d_rounded_whole(n);
  ktune::test::DeviceBuffer<float> d_f(n);
  ktune::test::DeviceBuffer<std::uint32_t> d_wide(n), d_wide_whole(n);
  ASSERT_TRUE(d_el.ptr && d_rounded.ptr && d_rounded_whole.ptr && d_f.ptr && d_wide.ptr && d_wide_whole.ptr);
  KTUNE_ASSERT_CUDA(cudaMemcpy(d_el.ptr, elements.data(), n * 2, cudaMemcpyHostToDevice));
  KTUNE_ASSERT_CUDA(cudaMemcpy(d_f.ptr, floats.data(), n * 4, cudaMemcpyHostToDevice));
  convert_both_ways<E><<<static_cast<unsigned>(n / 8 / 256), 256>>>(d_el.ptr, d_f.ptr, n / 8, d_wide.ptr, d_wide_whole.ptr,
                                                                    d_rounded.ptr, d_rounded_whole.ptr);
  KTUNE_ASSERT_CUDA(cudaGetLastError());
  std::vector<std::uint32_t> wide(n), wide_whole(n);
  std::vector<std::uint16_t> rounded(n), rounded_whole(n);
  KTUNE_ASSERT_CUDA(cudaMemcpy(wide.data(), d_wide.ptr, n * 4, cudaMemcpyDeviceToHost));
  KTUNE_ASSERT_CUDA(cudaMemcpy(wide_whole.data(), d_wide_whole.ptr, n * 4, cudaMemcpyDeviceToHost));
  KTUNE_ASSERT_CUDA(cudaMemcpy(rounded.data(), d_rounded.ptr, n * 2, cudaMemcpyDeviceToHost));
  KTUNE_ASSERT_CUDA(cudaMemcpy(rounded_whole.data(), d_rounded_whole.ptr, n * 2, cudaMemcpyDeviceToHost));
  // Bit for bit, except that any NaN equals any NaN: no op promises a NaN's payload.
  auto nan32 = [](std::uint32_t b) { return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu) != 0; };
  auto nan16 = [](std::uint16_t b) {
    return std::is_same_v<E, __half> ? (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0 : (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
  };
  std::size_t wide_diff = 0, round_diff = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (nan32(wide[i]) && nan32(wide_whole[i])) wide_whole[i] = wide[i];
    if (nan16(rounded[i]) && nan16(rounded_whole[i])) rounded_whole[i] = rounded[i];
    if (wide[i] != wide_whole[i] && wide_diff++ < 5)
      ADD_FAILURE() << std::hex << "widening 0x" << elements[i] << ": element 0x" << wide[i] << ", vector 0x" << wide_whole[i];
    if (rounded[i] != rounded_whole[i] && round_diff++ < 5)
      ADD_FAILURE() << std::hex << "rounding 0x" << ktune::bits_of(floats[i]) << ": element 0x" << rounded[i]
                    << ", vector 0x" << rounded_whole[i] << " (seed " << std::dec << ktune::test::test_seed() << ")";
  }
  EXPECT_EQ(wide_diff, 0u);
  EXPECT_EQ(round_diff, 0u);
}

TEST(IntrinsicsGpu, VectorConversionsEqualElementConversionsBf16) {
  KTUNE_REQUIRE_GPU();
  expect_vector_conversions_equal_element_ones<__nv_bfloat16>();
}

TEST(IntrinsicsGpu, VectorConversionsEqualElementConversionsFp16) {
  KTUNE_REQUIRE_GPU();
  expect_vector_conversions_equal_element_ones<__half>();
}
}  // namespace
