// The thread's last CUDA error is the caller's (include/ktune/status.hpp): a ktune call that CUDA refuses
// takes its own error out again, so the caller's next cudaGetLastError() (PyTorch's check after each of its
// launches) returns cudaSuccess; a ktune call that succeeds leaves an error the caller had pending alone.
// The refused Status names CUDA's error (describe()) as well as ktune's call site.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <kernels/silu_and_mul/silu_and_mul.cuh>
#include <ktune/fill.cuh>
#include <ktune/launch.hpp>
#include <ktune/status.hpp>
#include <ktune/timing.cuh>

#include "support/gpu.hpp"

namespace {

__global__ void write_index_kernel(int* out) {
  extern __shared__ int scratch[];
  scratch[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  if (out) out[threadIdx.x] = scratch[threadIdx.x];
}

/// What a refused ktune call must leave: a cuda_error Status whose text names the error, and no error
/// pending for the caller.
void expect_refused_cleanly(const ktune::Status& st, const char* call_site) {
  ASSERT_FALSE(st.ok()) << "the call was not refused";
  EXPECT_EQ(st.code, ktune::StatusCode::cuda_error);
  ASSERT_NE(st.cuda, cudaSuccess);
  const cudaError_t left = cudaGetLastError();
  EXPECT_EQ(left, cudaSuccess) << "ktune left " << cudaGetErrorName(left) << " for the caller's cudaGetLastError()";
  const std::string text = st.describe().c_str();
  EXPECT_NE(text.find(cudaGetErrorName(st.cuda)), std::string::npos) << text;
  EXPECT_NE(text.find(cudaGetErrorString(st.cuda)), std::string::npos) << text;
  EXPECT_NE(text.find(call_site), std::string::npos) << text;
  EXPECT_NE(text.find(" at "), std::string::npos) << "no call site: " << text;
}

TEST(LastErrorGpu, ALaunchRefusedForItsBlockSizeLeavesNoErrorAndNamesIt) {
  KTUNE_REQUIRE_GPU();
  (void)cudaGetLastError();  // nothing pending from earlier tests
  ktune::LaunchShape shape;
  shape.block = dim3(4096);  // above every device's 1024 threads per block
  shape.smem = 4096 * sizeof(int);
  expect_refused_cleanly(ktune::launch(write_index_kernel, shape, nullptr, static_cast<int*>(nullptr)),
                         "cudaLaunchKernelEx");
  // Not sticky: the same kernel launches and runs after it.
  ktune::test::DeviceBuffer<int> out(32);
  ASSERT_NE(out.ptr, nullptr);
  ktune::LaunchShape fine;
  fine.block = dim3(32);
  fine.smem = 32 * sizeof(int);
  KTUNE_ASSERT_OK(ktune::launch(write_index_kernel, fine, nullptr, out.ptr));
  KTUNE_ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(LastErrorGpu, DynamicSharedMemoryAboveTheDeviceLimitLeavesNoErrorAndNamesIt) {
  KTUNE_REQUIRE_GPU();
  (void)cudaGetLastError();
  int device = 0, optin = 0;
  KTUNE_ASSERT_CUDA(cudaGetDevice(&device));
  KTUNE_ASSERT_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  ktune::LaunchShape shape;
  shape.block = dim3(32);
  shape.smem = static_cast<std::size_t>(optin) + 1024;  // ktune asks CUDA to raise the limit; CUDA refuses
  expect_refused_cleanly(ktune::launch(write_index_kernel, shape, nullptr, static_cast<int*>(nullptr)),
                         "cudaFuncSetAttribute");
}

TEST(LastErrorGpu, AnOpRefusedByTheRuntimeLeavesNoErrorAndNamesIt) {
  // A launch on the legacy default stream while a blocking stream is being captured: the legacy stream would
  // join the capture, so the runtime refuses it (cudaErrorStreamCaptureImplicit) and invalidates the capture.
  KTUNE_REQUIRE_GPU();
  (void)cudaGetLastError();
  const std::int64_t tokens = 16, d = 1024;
  ktune::test::DeviceBuffer<__nv_bfloat16> in(tokens * 2 * d), out(tokens * d);
  ASSERT_TRUE(in.ptr && out.ptr);
  KTUNE_ASSERT_OK(ktune::fill_uniform(in.ptr, in.n, 1, -1.f, 1.f));
  KTUNE_ASSERT_OK(ktune::silu_and_mul(out.ptr, in.ptr, tokens, d, nullptr));  // the device's table, cached
  KTUNE_ASSERT_CUDA(cudaDeviceSynchronize());
  cudaStream_t capturing = nullptr;
  KTUNE_ASSERT_CUDA(cudaStreamCreate(&capturing));  // blocking: the legacy stream waits for it
  KTUNE_ASSERT_CUDA(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeRelaxed));
  const ktune::Status st = ktune::silu_and_mul(out.ptr, in.ptr, tokens, d, cudaStreamLegacy);
  const cudaError_t left = cudaGetLastError();  // before ending the capture, which reports an error of its own
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(capturing, &graph);
  if (graph) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();
  (void)cudaStreamDestroy(capturing);
  ASSERT_FALSE(st.ok()) << "the runtime took a legacy-stream launch during a capture (the capture ended with "
                        << cudaGetErrorName(ended) << ")";
  EXPECT_EQ(st.code, ktune::StatusCode::cuda_error);
  EXPECT_EQ(left, cudaSuccess) << "ktune left " << cudaGetErrorName(left) << " for the caller's cudaGetLastError()";
  const std::string text = st.describe().c_str();
  EXPECT_NE(text.find(cudaGetErrorName(st.cuda)), std::string::npos) << text;
  EXPECT_NE(text.find(" at "), std::string::npos) << "no call site: " << text;
  // The op works again once the capture is over.
  KTUNE_ASSERT_OK(ktune::silu_and_mul(out.ptr, in.ptr, tokens, d, nullptr));
  KTUNE_ASSERT_CUDA(cudaDeviceSynchronize());
}

TEST(LastErrorGpu, ACallThatSucceedsLeavesTheCallersPendingErrorAlone) {
  KTUNE_REQUIRE_GPU();
  (void)cudaGetLastError();
  const std::int64_t tokens = 4, d = 512;
  ktune::test::DeviceBuffer<__nv_bfloat16> in(tokens * 2 * d), out(tokens * d);
  ASSERT_TRUE(in.ptr && out.ptr);
  // The caller's own failure, not checked yet: an allocation no device has (not a sticky error).
  void* huge = nullptr;
  const cudaError_t pending = cudaMalloc(&huge, std::size_t{1} << 62);
  ASSERT_NE(pending, cudaSuccess);
  ASSERT_EQ(cudaPeekAtLastError(), pending);
  // ktune's launch path (the public op, a fill and ktune::launch) succeeds and neither reports that error
  // as its own nor takes it away.
  KTUNE_EXPECT_OK(ktune::fill_uniform(in.ptr, in.n, 2, -1.f, 1.f));
  KTUNE_EXPECT_OK(ktune::silu_and_mul(out.ptr, in.ptr, tokens, d, nullptr));
  ktune::LaunchShape shape;
  shape.block = dim3(32);
  shape.smem = 32 * sizeof(int);
  KTUNE_EXPECT_OK(ktune::launch(write_index_kernel, shape, nullptr, static_cast<int*>(nullptr)));
  EXPECT_EQ(cudaGetLastError(), pending) << "the caller's pending error was taken or replaced";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  KTUNE_ASSERT_CUDA(cudaDeviceSynchronize());
}

TEST(LastErrorGpu, TimingInAGraphLeavesTheCallersPendingErrorAlone) {
  // time_kernel's graph capture may fail and fall back (its failures are answers, not errors): what it takes
  // out of the last error afterwards is only what it left there.
  KTUNE_REQUIRE_GPU();
  (void)cudaGetLastError();
  ktune::test::Stream stream;
  ASSERT_NE(stream.s, nullptr);
  void* huge = nullptr;
  const cudaError_t pending = cudaMalloc(&huge, std::size_t{1} << 62);
  ASSERT_NE(pending, cudaSuccess);
  ktune::TimingOptions opt;
  opt.warmup = 1;
  opt.min_samples = opt.max_samples = 3;
  opt.max_seconds = 0.5;
  ktune::TimingResult result;
  KTUNE_EXPECT_OK(ktune::time_empty_kernel(stream.s, opt, result));
  EXPECT_TRUE(result.graph) << "the calls were not replayed from a graph";
  EXPECT_EQ(cudaGetLastError(), pending) << "the caller's pending error was taken or replaced";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(LastErrorGpu, CheckLaunchTakesOutTheErrorOfARefusedTripleChevronLaunch) {
  KTUNE_REQUIRE_GPU();
  (void)cudaGetLastError();
  auto launch_too_wide = []() -> ktune::Status {
    write_index_kernel<<<1, 4096, 4096 * sizeof(int)>>>(nullptr);
    KTUNE_CHECK_LAUNCH();
    return ktune::Status::success();
  };
  expect_refused_cleanly(launch_too_wide(), "cudaGetLastError()");
}

}  // namespace
