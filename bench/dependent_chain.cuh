// bench/dependent_chain.cuh: the judge's dependent chain (docs/judge.md, item 12). In a model the kernel before
// a call on the stream writes the call's inputs (a residual add before a norm), and ktune's own kernels, like
// most of a serving engine's, release their dependents early with programmatic dependent launch (PDL): a call
// launched with PDL may start before its predecessor is done, and must not touch global memory before its
// griddepcontrol.wait (ktune::pdl_wait) returns. A call that reads its inputs earlier reads stale values there,
// and returns wrong numbers with no error.
//
// So a checked call is made as the second kernel of such a chain: its input tensors hold stale values (each
// element replaced by another one's, doubled and negated where it is a number: values of the inputs' own
// kind, valid indices where it is an index), then the producer, launched on the same stream, releases its
// dependents at its start (griddepcontrol.launch_dependents), waits long enough for a dependent to start and
// read (a calibrated spin on the global timer), and only then copies the real inputs in. A call that waits
// computes from the real inputs; one that reads before its wait computes, in part, from the stale ones. The
// call is launched by its own adapter: without the PDL attribute it starts after the producer is done and
// reads the real inputs, whatever its kernel does; with it, nothing stands between the producer and the call.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>

namespace ktune::bench {

/// One input tensor of a chained call: where its real values are kept (`src`) and where the call reads it
/// (`dst`), `bytes` of `element_bytes`-sized elements; `number` false for an index tensor (int32, int64).
struct ChainTensor {
  const void* src = nullptr;
  void* dst = nullptr;
  std::size_t bytes = 0;
  int element_bytes = 0;
  bool number = true;
};

/// What the calibration found: whether a dependent launched with PDL started before its producer was done
/// here (on sm_90, it does), how long after the producer's release it started (the slowest of the probes), and
/// how long the producer then waits before it writes.
struct ChainInfo {
  bool calibrated = false;
  bool effective = false;
  double release_to_start_us = -1;
  double delay_us = 0;
  /// Each trial's start of the dependent after its producer's release (the producer waits 200 us: a figure
  /// near 200 or above it is a dependent that did not start early).
  static constexpr int trials = 5;
  double start_after_release_us[trials] = {};
};

namespace detail {

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void chain_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void chain_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

constexpr int max_chain_copies = 16;
struct ChainCopy {
  const unsigned char* src;
  unsigned char* dst;
  std::size_t n;
};
struct ChainCopies {
  ChainCopy c[max_chain_copies];
  int count;
};

/// The producer: one small block per SM (all resident at once, so every block's release happens at its start
/// and the dependent may launch at once, and nearly any dependent's blocks fit beside it), `delay_ns` of the
/// global timer, then the copies, four 16-byte vectors in flight per thread. Block 0 writes the time of its
/// release to *released_at (calibration).
template <int = 0>
__global__ void chain_producer_kernel(ChainCopies copies, std::uint64_t delay_ns, unsigned long long* released_at) {
  // Every thread releases, as the shipped kernels do: a block whose thread 0 alone had released did not let a
  // dependent start before it exited on an H200 (the calibration saw no early start in a whole tune).
  chain_release();
  if (threadIdx.x == 0) {
    const std::uint64_t start = global_timer_ns();
    if (released_at && blockIdx.x == 0) *released_at = start;
    while (global_timer_ns() - start < delay_ns) {
    }
  }
  __syncthreads();
  const std::size_t thread = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (int k = 0; k < copies.count; ++k) {
    const ChainCopy c = copies.c[k];
    std::size_t done = 0;
    if (reinterpret_cast<std::uintptr_t>(c.src) % 16 == 0 && reinterpret_cast<std::uintptr_t>(c.dst) % 16 == 0) {
      const std::size_t vectors = c.n / 16;
      const uint4* from = reinterpret_cast<const uint4*>(c.src);
      uint4* to = reinterpret_cast<uint4*>(c.dst);
      std::size_t i = thread;
      for (; i + 3 * threads < vectors; i += 4 * threads) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) v[u] = from[i + u * threads];
#pragma unroll
        for (int u = 0; u < 4; ++u) to[i + u * threads] = v[u];
      }
      for (; i < vectors; i += threads) to[i] = from[i];
      done = vectors * 16;
    }
    for (std::size_t i = done + thread; i < c.n; i += threads) c.dst[i] = c.src[i];
  }
}

/// The calibration's dependent: the time it started, before its wait.
template <int = 0>
__global__ void chain_probe_kernel(unsigned long long* started_at) {
  if (threadIdx.x == 0) *started_at = global_timer_ns();
  chain_wait();
}

/// dst[i] = src[(i + n/2) mod n], negated and doubled where `Number` (exact in every floating type short of
/// overflow): stale values of the tensor's own kind, which no reduction over a row or the whole tensor sees as
/// the real ones (a row's sum of squares is four times another's).
template <class T, bool Number>
__global__ void stale_kernel(const T* src, T* dst, std::size_t n) {
  const std::size_t shift = n / 2;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t j = i + shift;
    if (j >= n) j -= n;
    if constexpr (Number) dst[i] = from_float<T>(-2.f * to_float(src[j]));
    else dst[i] = src[j];
  }
}

template <class T, bool Number>
Status enqueue_stale(const ChainTensor& t, cudaStream_t stream) {
  const std::size_t n = t.bytes / sizeof(T);
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 4096));
  stale_kernel<T, Number><<<blocks ? blocks : 1, 256, 0, stream>>>(static_cast<const T*>(t.src), static_cast<T*>(t.dst), n);
  KTUNE_CUDA_TRY(cudaGetLastError());
  return Status::success();
}

}  // namespace detail

/// The chain of one process: its calibration and the two steps before a chained call.
class DependentChain {
 public:
  DependentChain() = default;
  DependentChain(const DependentChain&) = delete;
  DependentChain& operator=(const DependentChain&) = delete;
  ~DependentChain() {
    if (stamps_) cudaFree(stamps_);
  }

  /// Once per process, on `stream` (nothing else running): a producer with a long delay, then a one-block
  /// dependent launched with PDL that records when it started, five times after one warm-up pair. The
  /// producer's delay before it writes is then four times the slowest start after the release plus 5 us, within
  /// [10, 100] us (20 us where some dependent did not start early: then the chain checks nothing more than
  /// stream order, and says so). Both kernels are loaded first: with lazy module loading (CUDA's default) the
  /// first launch of a kernel loads its module, and that launch waits for the work before it, PDL or not.
  Status calibrate(cudaStream_t stream) {
    if (info_.calibrated) return Status::success();
    int device = 0;
    KTUNE_CUDA_TRY(cudaGetDevice(&device));
    KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device));
    cudaFuncAttributes loaded{};
    KTUNE_CUDA_TRY(cudaFuncGetAttributes(&loaded, detail::chain_producer_kernel<>));
    KTUNE_CUDA_TRY(cudaFuncGetAttributes(&loaded, detail::chain_probe_kernel<>));
    if (!stamps_) KTUNE_CUDA_TRY(cudaMalloc(&stamps_, 2 * sizeof(unsigned long long)));
    constexpr std::uint64_t probe_delay_ns = 200000;
    double slowest_ns = 0;
    int early = 0;
    for (int trial = -1; trial < ChainInfo::trials; ++trial) {
      detail::ChainCopies none{};
      detail::chain_producer_kernel<><<<sms_, producer_threads, 0, stream>>>(none, probe_delay_ns, stamps_);
      KTUNE_CUDA_TRY(cudaGetLastError());
      cudaLaunchAttribute pdl[1];
      pdl[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      pdl[0].val.programmaticStreamSerializationAllowed = 1;
      cudaLaunchConfig_t config{};
      config.gridDim = dim3(1);
      config.blockDim = dim3(32);
      config.stream = stream;
      config.attrs = pdl;
      config.numAttrs = 1;
      KTUNE_CUDA_TRY(cudaLaunchKernelEx(&config, detail::chain_probe_kernel<>, stamps_ + 1));
      unsigned long long t[2] = {0, 0};
      KTUNE_CUDA_TRY(cudaMemcpyAsync(t, stamps_, sizeof t, cudaMemcpyDeviceToHost, stream));
      KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
      if (trial < 0) continue;  // the warm-up
      const double after = static_cast<double>(static_cast<long long>(t[1] - t[0]));
      info_.start_after_release_us[trial] = after * 1e-3;
      if (after < static_cast<double>(probe_delay_ns)) {
        ++early;
        slowest_ns = std::max(slowest_ns, after);
      }
    }
    info_.calibrated = true;
    info_.effective = early == ChainInfo::trials;
    info_.release_to_start_us = info_.effective ? slowest_ns * 1e-3 : -1;
    info_.delay_us = info_.effective ? std::min(100.0, std::max(10.0, 4 * info_.release_to_start_us + 5)) : 20.0;
    return Status::success();
  }

  const ChainInfo& info() const { return info_; }

  /// On `stream`: each tensor's stale values into its `dst`, then the producer that releases its dependents at
  /// once and copies `src` into `dst` after the calibrated delay. The chained call is to be enqueued next on
  /// the same stream, with nothing between (an event or a copy would end the producer's early release).
  Status enqueue(const std::vector<ChainTensor>& tensors, DType dtype, cudaStream_t stream) {
    KTUNE_TRY(calibrate(stream));
    detail::ChainCopies copies{};
    for (const ChainTensor& t : tensors) {
      if (!t.bytes) continue;
      if (copies.count == detail::max_chain_copies) return Status::unsupported("the dependent chain takes at most 16 input tensors");
      if (t.number && t.element_bytes == 4) KTUNE_TRY((detail::enqueue_stale<float, true>(t, stream)));
      else if (t.number && t.element_bytes == 2 && dtype == DType::f16) KTUNE_TRY((detail::enqueue_stale<__half, true>(t, stream)));
      else if (t.number && t.element_bytes == 2 && dtype == DType::bf16)
        KTUNE_TRY((detail::enqueue_stale<__nv_bfloat16, true>(t, stream)));
      else if (t.element_bytes == 8) KTUNE_TRY((detail::enqueue_stale<std::uint64_t, false>(t, stream)));
      else if (t.element_bytes == 4) KTUNE_TRY((detail::enqueue_stale<std::uint32_t, false>(t, stream)));
      else if (t.element_bytes == 2) KTUNE_TRY((detail::enqueue_stale<std::uint16_t, false>(t, stream)));
      else KTUNE_TRY((detail::enqueue_stale<std::uint8_t, false>(t, stream)));
      copies.c[copies.count++] = {static_cast<const unsigned char*>(t.src), static_cast<unsigned char*>(t.dst), t.bytes};
    }
    const auto delay_ns = static_cast<std::uint64_t>(info_.delay_us * 1e3);
    detail::chain_producer_kernel<><<<sms_, producer_threads, 0, stream>>>(copies, delay_ns, nullptr);
    KTUNE_CUDA_TRY(cudaGetLastError());
    return Status::success();
  }

 private:
  // Small, so that a dependent's blocks fit beside it: 1024-thread blocks of up to 48 registers a thread do.
  static constexpr int producer_threads = 128;
  ChainInfo info_;
  int sms_ = 0;
  unsigned long long* stamps_ = nullptr;
};

}  // namespace ktune::bench
