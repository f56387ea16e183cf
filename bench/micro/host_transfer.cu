// bench/micro/host_transfer.cu: ktune_host_transfer, what a group's host side costs on this machine, alone:
// copying pageable memory into pinned staging on 1, 4 and all threads, the DMA from pinned memory to the
// GPU, the upload as the measurer makes it (64 MiB halves of pinned staging, four copying threads, the DMA of
// one half behind the copy of the other), pinning the pageable buffer in place (cudaHostRegister) and the
// DMA from it, and ktune::compare of a bf16 output with its float64 reference on 1 and all threads (the
// gate's host comparison). Prints the device name first. Records: docs/gpu-log.md.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include <ktune/verify.hpp>

#include "exit_on_error.hpp"

namespace {

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// f(begin, end) over [0, n) split across `threads`.
void parallel(std::size_t n, unsigned threads, const std::function<void(std::size_t, std::size_t)>& f) {
  std::vector<std::thread> pool;
  const std::size_t part = (n + threads - 1) / threads;
  for (unsigned i = 1; i < threads && i * part < n; ++i)
    pool.emplace_back([&, i] { f(i * part, std::min(n, (i + 1) * part)); });
  f(0, std::min(n, part));
  for (std::thread& t : pool) t.join();
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf("device: %s, host threads: %u\n", prop.name, cores);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  const std::size_t bytes = std::size_t{2} << 30;
  std::vector<char> pageable(bytes);
  parallel(bytes, cores, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) pageable[i] = static_cast<char>(i * 2654435761u >> 13);
  });
  char* pinned = nullptr;
  char* device = nullptr;
  CHECK(cudaMallocHost(&pinned, bytes));
  CHECK(cudaMalloc(&device, bytes));
  const double gib = static_cast<double>(bytes) / (1 << 30);

  std::printf("\n# 2 GiB, GB/s (best of 3)\n");
  auto best = [](const std::function<double()>& run) {
    double b = 0;
    for (int i = 0; i < 3; ++i) b = std::max(b, run());
    return b;
  };
  for (unsigned threads : {1u, 4u, cores}) {
    const double gbps = best([&] {
      return bytes / 1e9 / seconds([&] {
        parallel(bytes, threads, [&](std::size_t b, std::size_t e) { std::memcpy(pinned + b, pageable.data() + b, e - b); });
      });
    });
    std::printf("memcpy pageable -> pinned, %2u threads: %6.1f\n", threads, gbps);
  }
  const double dma = best([&] {
    return bytes / 1e9 / seconds([&] {
      CHECK(cudaMemcpyAsync(device, pinned, bytes, cudaMemcpyHostToDevice, stream));
      CHECK(cudaStreamSynchronize(stream));
    });
  });
  std::printf("DMA pinned -> GPU:                    %6.1f\n", dma);

  // The measurer's upload: two 64 MiB halves of pinned staging, four threads copying into one while the
  // DMA of the other runs.
  const std::size_t half = std::size_t{64} << 20;
  cudaEvent_t staged[2];
  for (cudaEvent_t& e : staged) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const double staging = best([&] {
    return bytes / 1e9 / seconds([&] {
      for (std::size_t off = 0, k = 0; off < bytes; off += half, ++k) {
        const std::size_t n = std::min(half, bytes - off);
        char* h = pinned + (k % 2) * half;
        CHECK(cudaEventSynchronize(staged[k % 2]));
        parallel(n, 4, [&](std::size_t b, std::size_t e) { std::memcpy(h + b, pageable.data() + off + b, e - b); });
        CHECK(cudaMemcpyAsync(device + off, h, n, cudaMemcpyHostToDevice, stream));
        CHECK(cudaEventRecord(staged[k % 2], stream));
      }
      CHECK(cudaStreamSynchronize(stream));
    });
  });
  std::printf("upload through staging (as measured):  %6.1f\n", staging);

  double reg_s = 0, unreg_s = 0, from_registered = 0;
  for (int i = 0; i < 3; ++i) {
    reg_s += seconds([&] { CHECK(cudaHostRegister(pageable.data(), bytes, cudaHostRegisterPortable)); });
    from_registered = std::max(from_registered, bytes / 1e9 / seconds([&] {
                                                  CHECK(cudaMemcpyAsync(device, pageable.data(), bytes, cudaMemcpyHostToDevice, stream));
                                                  CHECK(cudaStreamSynchronize(stream));
                                                }));
    unreg_s += seconds([&] { CHECK(cudaHostUnregister(pageable.data())); });
  }
  std::printf("DMA from pageable pinned in place:     %6.1f (cudaHostRegister %.0f ms per GiB, cudaHostUnregister %.0f ms)\n",
              from_registered, reg_s / 3 / gib * 1e3, unreg_s / 3 / gib * 1e3);

  // The gate's host comparison: a bf16 output against its float64 reference, 2^28 elements.
  const std::size_t n = std::size_t{1} << 28;
  std::vector<double> ref(n);
  std::vector<__nv_bfloat16> out(n);
  parallel(n, cores, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      const float v = static_cast<float>(static_cast<int>(i * 2654435761u >> 8) % 2001 - 1000) / 512.f;
      ref[i] = v;
      out[i] = __float2bfloat16(v);
    }
  });
  const ktune::Tolerance tol = ktune::default_tolerance(ktune::DType::bf16);
  std::printf("\n# compare, 2^28 bf16 elements with their float64 reference (ns per element, wall)\n");
  for (unsigned threads : {1u, cores}) {
    bool passed = true;
    const double s = seconds([&] {
      std::vector<char> ok(threads, 1);
      parallel(n, threads, [&](std::size_t b, std::size_t e) {
        ok[b / ((n + threads - 1) / threads)] = ktune::compare(out.data() + b, ref.data() + b, e - b, tol).passed;
      });
      passed = std::all_of(ok.begin(), ok.end(), [](char c) { return c != 0; });
    });
    std::printf("%2u threads: %.3f ns (%.1f GB/s of reference and output)%s\n", threads, s * 1e9 / n,
                n * (sizeof(double) + sizeof(__nv_bfloat16)) / 1e9 / s, passed ? "" : "  [FAILED the comparison]");
  }
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(device));
  for (cudaEvent_t e : staged) CHECK(cudaEventDestroy(e));
  CHECK(cudaStreamDestroy(stream));
  return 0;
}
