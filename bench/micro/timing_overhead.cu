// bench/micro/timing_overhead.cu: ktune_timing_overhead, what the host work around one timed call costs on
// this GPU: the pieces ktune::time_kernel and the search's gate and checks are made of (a launch and a
// synchronisation, the L2 flush, capturing and instantiating a replay graph of N launches, updating one in
// place), then whole screens (time_kernel with the search's screen settings) against the GPU time their
// replays and flushes account for, and a screen's samples taken one synchronisation each against three
// enqueued behind one. The calls are spin kernels of a set length (the global timer), so the figures
// are the host's, not a kernel's. Prints the device name first. Records: docs/gpu-log.md.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include <ktune/timing.cuh>

#include "timing_options.cuh"
#include "exit_on_error.hpp"

namespace {

__global__ void spin_kernel(unsigned ns, unsigned* sink) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
  if (t == 0) *sink = 1;
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Median host wall time of `f` over `reps` calls.
double host_us(int reps, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double a = now_us();
    f();
    t.push_back(now_us() - a);
  }
  return median(t);
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned* sink;
  CHECK(cudaMalloc(&sink, 4));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  auto spin = [&](unsigned ns) {
    spin_kernel<<<1, 32, 0, stream>>>(ns, sink);
    CHECK(cudaGetLastError());
  };
  TRY(ktune::flush_l2(stream));  // allocates the flush buffer
  CHECK(cudaStreamSynchronize(stream));

  std::printf("\n# pieces (median host wall time, us)\n");
  std::printf("launch + stream sync (1 us kernel):       %8.1f\n", host_us(2000, [&] {
                spin(1000);
                CHECK(cudaStreamSynchronize(stream));
              }));
  std::printf("launch + device sync (1 us kernel):       %8.1f\n", host_us(2000, [&] {
                spin(1000);
                CHECK(cudaDeviceSynchronize());
              }));
  std::printf("4-byte copy back + sync:                  %8.1f\n", host_us(2000, [&] {
                unsigned v;
                CHECK(cudaMemcpyAsync(&v, sink, 4, cudaMemcpyDeviceToHost, stream));
                CHECK(cudaStreamSynchronize(stream));
              }));
  std::vector<double> flush_gpu;
  const double flush_host = host_us(500, [&] {
    CHECK(cudaEventRecord(a, stream));
    TRY(ktune::flush_l2(stream));
    CHECK(cudaEventRecord(b, stream));
    CHECK(cudaStreamSynchronize(stream));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    flush_gpu.push_back(ms * 1e3);
  });
  std::printf("L2 flush: GPU %.1f, with its launch and sync %.1f\n", median(flush_gpu), flush_host);
  std::printf("cudaFuncGetAttributes + occupancy query:  %8.1f\n", host_us(2000, [&] {
                cudaFuncAttributes fa;
                CHECK(cudaFuncGetAttributes(&fa, spin_kernel));
                int blocks = 0;
                CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, spin_kernel, 256, 0));
              }));

  std::printf("\n# a replay graph of N launches of a 1 us kernel, events first and last (median host us)\n");
  std::printf("%6s %9s %12s %9s %9s %12s %10s\n", "N", "capture", "instantiate", "upload", "destroy", "exec update", "launch");
  for (int n : {2, 8, 21, 47, 64, 128, 256}) {
    std::vector<double> cap, inst, up, des, upd, lau;
    for (int rep = 0; rep < 30; ++rep) {
      cudaGraph_t g, g2;
      cudaGraphExec_t e;
      double t = now_us();
      CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      CHECK(cudaEventRecordWithFlags(a, stream, cudaEventRecordExternal));
      for (int i = 0; i < n; ++i) spin(1000);
      CHECK(cudaEventRecordWithFlags(b, stream, cudaEventRecordExternal));
      CHECK(cudaStreamEndCapture(stream, &g));
      cap.push_back(now_us() - t);
      t = now_us();
      CHECK(cudaGraphInstantiate(&e, g, 0));
      inst.push_back(now_us() - t);
      t = now_us();
      CHECK(cudaGraphUpload(e, stream));
      CHECK(cudaStreamSynchronize(stream));
      up.push_back(now_us() - t);
      t = now_us();
      CHECK(cudaGraphLaunch(e, stream));
      lau.push_back(now_us() - t);
      CHECK(cudaStreamSynchronize(stream));
      // The same topology captured again (another kernel argument), updated into the executable graph.
      CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      CHECK(cudaEventRecordWithFlags(a, stream, cudaEventRecordExternal));
      for (int i = 0; i < n; ++i) spin(1500);
      CHECK(cudaEventRecordWithFlags(b, stream, cudaEventRecordExternal));
      CHECK(cudaStreamEndCapture(stream, &g2));
      t = now_us();
      cudaGraphExecUpdateResultInfo info;
      CHECK(cudaGraphExecUpdate(e, g2, &info));
      upd.push_back(now_us() - t);
      t = now_us();
      CHECK(cudaGraphExecDestroy(e));
      CHECK(cudaGraphDestroy(g));
      des.push_back(now_us() - t);
      CHECK(cudaGraphDestroy(g2));
    }
    std::printf("%6d %9.1f %12.1f %9.1f %9.1f %12.1f %10.1f\n", n, median(cap), median(inst), median(up), median(des),
                median(upd), median(lau));
  }

  std::printf("\n# screens: time_kernel with the search's screen settings over a rotation of 8 (median of 20)\n");
  std::printf("%9s %6s %8s %8s %10s %12s %10s\n", "call us", "batch", "samples", "wall us", "GPU us", "host extra", "per sample");
  for (unsigned call_ns : {2000u, 10000u, 60000u}) {
    ktune::TimingOptions opt = ktune::bench::to_options(ktune::bench::screen_timing(false));
    opt.batch_for_us = call_ns / 1e3;
    std::vector<double> wall, gpu, samples, batch;
    for (int rep = 0; rep < 20; ++rep) {
      ktune::TimingResult r;
      const double t = now_us();
      TRY(ktune::time_kernel(
          [&](std::size_t) {
            spin(call_ns);
            return ktune::Status::success();
          },
          8, stream, opt, r));
      wall.push_back(now_us() - t);
      // warm-up, three probes, the graph's warming replay and the samples; a flush before each sample
      gpu.push_back((1 + 3 + r.batch * (1 + r.samples)) * call_ns / 1e3 + r.samples * median(flush_gpu));
      samples.push_back(r.samples);
      batch.push_back(r.batch);
    }
    const double w = median(wall), g = median(gpu), s = median(samples);
    std::printf("%9.1f %6.0f %8.0f %8.0f %10.0f %12.0f %10.1f\n", call_ns / 1e3, median(batch), s, w, g, w - g, (w - g) / s);
  }

  std::printf("\n# 30 samples of one replay graph (21 launches of 10 us), each after a flush\n");
  {
    cudaGraph_t g;
    cudaGraphExec_t e;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaEventRecordWithFlags(a, stream, cudaEventRecordExternal));
    for (int i = 0; i < 21; ++i) spin(10000);
    CHECK(cudaEventRecordWithFlags(b, stream, cudaEventRecordExternal));
    CHECK(cudaStreamEndCapture(stream, &g));
    CHECK(cudaGraphInstantiate(&e, g, 0));
    CHECK(cudaGraphLaunch(e, stream));
    CHECK(cudaStreamSynchronize(stream));
    const double one_by_one = host_us(10, [&] {
      for (int i = 0; i < 30; ++i) {
        TRY(ktune::flush_l2(stream));
        CHECK(cudaGraphLaunch(e, stream));
        CHECK(cudaStreamSynchronize(stream));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
      }
    });
    // Three samples enqueued behind one synchronisation: each launch's event nodes set to a pair of its own.
    cudaGraphNode_t nodes[64];
    size_t count = 64;
    CHECK(cudaGraphGetNodes(g, nodes, &count));
    cudaGraphNode_t first = nullptr, last = nullptr;
    for (size_t i = 0; i < count; ++i) {
      cudaGraphNodeType type;
      CHECK(cudaGraphNodeGetType(nodes[i], &type));
      if (type != cudaGraphNodeTypeEventRecord) continue;
      cudaEvent_t ev;
      CHECK(cudaGraphEventRecordNodeGetEvent(nodes[i], &ev));
      (ev == a ? first : last) = nodes[i];
    }
    cudaEvent_t ring[6];
    for (cudaEvent_t& ev : ring) CHECK(cudaEventCreate(&ev));
    const double three_at_once = host_us(10, [&] {
      for (int i = 0; i < 30; i += 3) {
        for (int k = 0; k < 3; ++k) {
          CHECK(cudaGraphExecEventRecordNodeSetEvent(e, first, ring[2 * k]));
          CHECK(cudaGraphExecEventRecordNodeSetEvent(e, last, ring[2 * k + 1]));
          TRY(ktune::flush_l2(stream));
          CHECK(cudaGraphLaunch(e, stream));
        }
        CHECK(cudaStreamSynchronize(stream));
        for (int k = 0; k < 3; ++k) {
          float ms;
          CHECK(cudaEventElapsedTime(&ms, ring[2 * k], ring[2 * k + 1]));
        }
      }
    });
    const double gpu = 30 * (210 + median(flush_gpu));
    std::printf("one sync each: %.0f us (%.1f us a sample over the GPU's %.0f)\n", one_by_one, (one_by_one - gpu) / 30, gpu);
    std::printf("three per sync: %.0f us (%.1f us a sample over the GPU's)\n", three_at_once, (three_at_once - gpu) / 30);
    CHECK(cudaGraphExecDestroy(e));
    CHECK(cudaGraphDestroy(g));
  }
  return 0;
}
