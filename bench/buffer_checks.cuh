// bench/buffer_checks.cuh: the device-side checks of the judge's guarded gate (docs/judge.md):
// guard zones, bitwise comparison of buffers, order-independent digests of outputs, and a scribble of
// every SM's shared memory before a checked call.
//
// Each check reads its buffers once where they lie; only a few bytes come back to the host.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <ktune/dynamic_smem.hpp>
#include <ktune/random.hpp>
#include <ktune/status.hpp>

namespace ktune::bench {

/// The guard zones' bytes, as 32-bit words from the start of each zone: read as fp32, fp16 or bf16 every
/// word holds a NaN, so a kernel that consumes guard bytes it read past a tensor's end produces NaN.
constexpr std::uint32_t guard_word = 0x7FF4DEADu;
constexpr std::size_t guard_bytes = 4096;

/// Shared-memory scribbles before the gate's two runs of a call: NaN first (any use of a slot nobody
/// wrote poisons the result), then a large finite value (a use that NaN cannot reach, fmaxf say,
/// changes the result between the runs).
constexpr std::uint32_t smem_scribble_first = 0xFFFFFFFFu;
constexpr std::uint32_t smem_scribble_second = 0x4B000000u;  // 8388608.0f

namespace detail {

/// The smallest byte offset in [0, n) where a differs from b (or, with b null, from the repeated word
/// `pattern` whose byte `phase` falls on a's first byte), into *first (atomicMin).
template <int = 0>
__global__ void first_difference_kernel(const unsigned char* a, const unsigned char* b, std::size_t n, std::uint32_t pattern,
                                        std::size_t phase, unsigned long long* first) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long mine = ULLONG_MAX;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i * 16 < n; i += stride) {
    const std::size_t base = i * 16;
    if (base + 16 <= n && reinterpret_cast<std::uintptr_t>(a) % 16 == 0 &&
        (b == nullptr ? phase == 0 : reinterpret_cast<std::uintptr_t>(b) % 16 == 0)) {
      const uint4 x = reinterpret_cast<const uint4*>(a)[i];
      const uint4 y = b ? reinterpret_cast<const uint4*>(b)[i] : make_uint4(pattern, pattern, pattern, pattern);
      if (x.x == y.x && x.y == y.y && x.z == y.z && x.w == y.w) continue;
    }
    for (std::size_t k = base; k < base + 16 && k < n; ++k) {
      const unsigned char want = b ? b[k] : static_cast<unsigned char>(pattern >> (8 * ((k + phase) % 4)));
      if (a[k] != want) {
        mine = k;
        break;
      }
    }
    if (mine != ULLONG_MAX) break;
  }
  if (mine != ULLONG_MAX) atomicMin(first, mine);
}

/// Σ mix64(w_j + j·φ) over the 64-bit little-endian words w_j of [p, p + n) (a short tail padded with zero
/// bytes), mod 2^64: independent of the summation order, so the digest is deterministic however the blocks
/// run, and of where the span lies (j counts from p). Read 16 bytes at a time, four reads in flight per
/// thread before any mixing: the checks of every gate and every timing digest the whole inputs and outputs,
/// and word-sized loads with a mix per 32-bit word ran at a third of the copy ceiling (docs/gpu-log.md).
template <int = 0>
__global__ void digest_kernel(const unsigned char* p, std::size_t n, unsigned long long* out) {
  constexpr std::uint64_t phi = 0x9E3779B97F4A7C15ull;
  constexpr int unroll = 4;
  const std::size_t thread = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  auto pair = [](const uint4& v, std::uint64_t j) {  // the two words of 16 bytes, the first at word j
    const std::uint64_t lo = v.x | static_cast<std::uint64_t>(v.y) << 32, hi = v.z | static_cast<std::uint64_t>(v.w) << 32;
    return mix64(lo + j * phi) + mix64(hi + (j + 1) * phi);
  };
  unsigned long long h = 0;
  std::size_t pairs = 0;  // the 16-byte blocks read as vectors; the rest word by word below
  if (reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
    pairs = n / 16;
    const uint4* v = reinterpret_cast<const uint4*>(p);
    std::size_t i = thread;
    for (; i + (unroll - 1) * threads < pairs; i += unroll * threads) {
      uint4 x[unroll];
#pragma unroll
      for (int u = 0; u < unroll; ++u) x[u] = v[i + u * threads];
#pragma unroll
      for (int u = 0; u < unroll; ++u) h += pair(x[u], 2 * (i + u * threads));
    }
    for (; i < pairs; i += threads) h += pair(v[i], 2 * i);
  }
  for (std::size_t j = 2 * pairs + thread; 8 * j < n; j += threads) {
    std::uint64_t w = 0;
    for (std::size_t k = 0; k < 8 && 8 * j + k < n; ++k) w |= static_cast<std::uint64_t>(p[8 * j + k]) << (8 * k);
    h += mix64(w + j * phi);
  }
  for (int off = 16; off > 0; off >>= 1) h += __shfl_down_sync(0xffffffffu, h, off);
  if ((threadIdx.x & 31) == 0 && h) atomicAdd(out, h);
}

template <int = 0>
__global__ void scribble_kernel(std::uint32_t pattern, int words) {
  extern __shared__ std::uint32_t smem[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) smem[i] = pattern;
  __syncthreads();
  // Keep the stores: a kernel whose shared memory is never read could lose them.
  if (threadIdx.x == 0 && smem[words - 1] != pattern) asm volatile("trap;");
}

inline unsigned check_blocks(std::size_t items) {
  const std::size_t b = (items + 255) / 256;
  return static_cast<unsigned>(b < 2048 ? (b ? b : 1) : 2048);
}

}  // namespace detail

/// Device memory for the checks' results, reused.
class CheckScratch {
 public:
  CheckScratch() = default;
  CheckScratch(const CheckScratch&) = delete;
  CheckScratch& operator=(const CheckScratch&) = delete;
  ~CheckScratch() {
    if (word_) cudaFree(word_);
  }
  /// At least `words` results.
  Status ensure(std::size_t words = 1) {
    if (words > words_) {
      if (word_) cudaFree(word_);
      word_ = nullptr;
      words_ = 0;
      KTUNE_CUDA_TRY(cudaMalloc(&word_, words * sizeof(unsigned long long)));
      words_ = words;
    }
    return Status::success();
  }
  unsigned long long* word() const { return word_; }

 private:
  unsigned long long* word_ = nullptr;
  std::size_t words_ = 0;
};

namespace detail {
/// Runs a check that leaves one 64-bit result in scratch (initialised to `init`); synchronises `stream`.
template <class Enqueue>
Status run_check(CheckScratch& scratch, unsigned long long init, cudaStream_t stream, Enqueue&& enqueue,
                 unsigned long long& result) {
  KTUNE_TRY(scratch.ensure());
  KTUNE_CUDA_TRY(cudaMemcpyAsync(scratch.word(), &init, sizeof init, cudaMemcpyHostToDevice, stream));
  enqueue();
  KTUNE_CUDA_TRY(cudaGetLastError());
  KTUNE_CUDA_TRY(cudaMemcpyAsync(&result, scratch.word(), sizeof result, cudaMemcpyDeviceToHost, stream));
  KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
  return Status::success();
}
}  // namespace detail

/// The first byte offset where `a` differs from `b` (b null: from the repeated guard word, its byte
/// `phase` at a), or SIZE_MAX when the n bytes are equal.
inline Status first_difference(const void* a, const void* b, std::size_t n, cudaStream_t stream, CheckScratch& scratch,
                               std::size_t& first, std::size_t phase = 0) {
  first = SIZE_MAX;
  if (n == 0) return Status::success();
  unsigned long long r = ULLONG_MAX;
  KTUNE_TRY(detail::run_check(scratch, ULLONG_MAX, stream, [&] {
    detail::first_difference_kernel<><<<detail::check_blocks((n + 15) / 16), 256, 0, stream>>>(
        static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b), n, guard_word, phase, scratch.word());
  }, r));
  if (r != ULLONG_MAX) first = static_cast<std::size_t>(r);
  return Status::success();
}

/// A span of device bytes; for a guard zone, `phase` is the byte of the guard word at its start.
struct Span {
  const void* p = nullptr;
  std::size_t n = 0;
  std::size_t phase = 0;
};

/// An order-independent 64-bit digest of each buffer (equal bytes give equal digests), in one pass of the
/// GPU and one copy back: the gate checks every tensor of a call after every run, and a synchronisation
/// per tensor would cost more than the reading.
inline Status digests(const std::vector<Span>& spans, cudaStream_t stream, CheckScratch& scratch,
                      std::vector<std::uint64_t>& out) {
  out.assign(spans.size(), 0);
  if (spans.empty()) return Status::success();
  KTUNE_TRY(scratch.ensure(spans.size()));
  KTUNE_CUDA_TRY(cudaMemsetAsync(scratch.word(), 0, spans.size() * sizeof(unsigned long long), stream));
  for (std::size_t i = 0; i < spans.size(); ++i)
    if (spans[i].n)
      detail::digest_kernel<><<<detail::check_blocks((spans[i].n + 63) / 64), 256, 0, stream>>>(
          static_cast<const unsigned char*>(spans[i].p), spans[i].n, scratch.word() + i);
  KTUNE_CUDA_TRY(cudaGetLastError());
  std::vector<unsigned long long> r(spans.size());
  KTUNE_CUDA_TRY(cudaMemcpyAsync(r.data(), scratch.word(), r.size() * sizeof r[0], cudaMemcpyDeviceToHost, stream));
  KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
  for (std::size_t i = 0; i < r.size(); ++i) out[i] = r[i];
  return Status::success();
}

/// The first guard zone (index into `zones`) that no longer holds the guard word, and the first byte
/// that differs in it; zone = SIZE_MAX when every zone is intact. One synchronisation for all zones.
inline Status check_guards(const std::vector<Span>& zones, cudaStream_t stream, CheckScratch& scratch, std::size_t& zone,
                           std::size_t& offset) {
  zone = offset = SIZE_MAX;
  if (zones.empty()) return Status::success();
  KTUNE_TRY(scratch.ensure(zones.size()));
  KTUNE_CUDA_TRY(cudaMemsetAsync(scratch.word(), 0xFF, zones.size() * sizeof(unsigned long long), stream));
  for (std::size_t i = 0; i < zones.size(); ++i)
    if (zones[i].n)
      detail::first_difference_kernel<><<<detail::check_blocks((zones[i].n + 15) / 16), 256, 0, stream>>>(
          static_cast<const unsigned char*>(zones[i].p), nullptr, zones[i].n, guard_word, zones[i].phase, scratch.word() + i);
  KTUNE_CUDA_TRY(cudaGetLastError());
  std::vector<unsigned long long> r(zones.size());
  KTUNE_CUDA_TRY(cudaMemcpyAsync(r.data(), scratch.word(), r.size() * sizeof r[0], cudaMemcpyDeviceToHost, stream));
  KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
  for (std::size_t i = 0; i < r.size(); ++i)
    if (r[i] != ULLONG_MAX) {
      zone = i;
      offset = static_cast<std::size_t>(r[i]);
      break;
    }
  return Status::success();
}

/// Fills the shared memory of every SM with `pattern` (as far as one block per SM reaches, which is all
/// of the SM's shared memory): what a kernel reads from a shared slot it never wrote is then this, not
/// a leftover of the previous kernel that might happen to be right.
inline Status scribble_shared_memory(std::uint32_t pattern, cudaStream_t stream) {
  static int bytes = -1, blocks = 0;  // per process: every device ktune_bench uses is the same model
  if (bytes < 0) {
    int device = 0, optin = 0, sms = 0;
    KTUNE_CUDA_TRY(cudaGetDevice(&device));
    KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    KTUNE_TRY(ktune::detail::ensure_dynamic_smem(reinterpret_cast<const void*>(detail::scribble_kernel<>), optin));
    bytes = optin / 4 * 4;
    blocks = 2 * sms;
  }
  detail::scribble_kernel<><<<blocks, 1024, bytes, stream>>>(pattern, bytes / 4);
  KTUNE_CUDA_TRY(cudaGetLastError());
  return Status::success();
}

}  // namespace ktune::bench
