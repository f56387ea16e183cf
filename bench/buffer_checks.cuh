// bench/buffer_checks.cuh: the device-side checks of the judge's guarded gate (docs/judge.md):
// guard zones, bitwise comparison of buffers, order-independent digests of outputs, and a scribble of
// every SM's shared memory before a checked call.
//
// Each check reads its buffers once where they lie; only a few bytes come back to the host.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
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

/// One check of a CheckBatch as its kernel sees it: `blocks` blocks per copy (x) times `sets` copies (y),
/// numbered from `first_block` in the batch's one grid.
struct CheckItem {
  const unsigned char* a;
  const unsigned char* b;  ///< first difference: the buffer compared with (null: the guard word)
  std::size_t n, stride, sets, phase;
  unsigned blocks, first_block;
  bool digest;
};
/// The checks one launch takes: kernel parameters (32 x 64 bytes of the 4 KiB); a batch of more is several launches.
constexpr int max_check_items = 32;
struct CheckItems {
  CheckItem item[max_check_items];
  int count;
};

/// The smallest index set * n + k (k in [0, n)) where copy `set` of a (at a + set * stride, for set < sets)
/// differs from b at byte k (or, with b null, from the repeated word `pattern` whose byte `phase` falls on
/// the copy's first byte), into *result as its complement (atomicMax: 0 means no difference). This block is
/// (bx, by) of a (gx, gy) grid: the sets of by, the bytes of bx.
__device__ inline void first_difference(const CheckItem& c, unsigned bx, unsigned by, unsigned gx, unsigned gy,
                                        unsigned long long* result) {
  const std::size_t threads = static_cast<std::size_t>(gx) * blockDim.x;
  for (std::size_t set = by; set < c.sets; set += gy) {
    const unsigned char* s = c.a + set * c.stride;
    const bool vectors = reinterpret_cast<std::uintptr_t>(s) % 16 == 0 &&
                         (c.b == nullptr ? c.phase == 0 : reinterpret_cast<std::uintptr_t>(c.b) % 16 == 0);
    for (std::size_t i = bx * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i * 16 < c.n; i += threads) {
      const std::size_t base = i * 16;
      if (vectors && base + 16 <= c.n) {
        const uint4 x = reinterpret_cast<const uint4*>(s)[i];
        const uint4 y = c.b ? reinterpret_cast<const uint4*>(c.b)[i] : make_uint4(guard_word, guard_word, guard_word, guard_word);
        if (x.x == y.x && x.y == y.y && x.z == y.z && x.w == y.w) continue;
      }
      for (std::size_t k = base; k < base + 16 && k < c.n; ++k) {
        const unsigned char want = c.b ? c.b[k] : static_cast<unsigned char>(guard_word >> (8 * ((k + c.phase) % 4)));
        if (s[k] != want) {  // this thread's smallest: sets and bytes are visited in increasing order
          atomicMax(result, ~static_cast<unsigned long long>(set * c.n + k));
          return;
        }
      }
    }
  }
}

/// Σ mix64(w_j + j·φ) over the 64-bit little-endian words w_j of [p, p + n) (a short tail padded with zero
/// bytes), mod 2^64, summed over the `sets` copies of the span `stride` bytes apart, into *result: independent
/// of the summation order, so the digest is deterministic however the blocks run, and of where the span lies
/// (j counts from each copy's first byte), so equal copies give `sets` times one copy's digest. Read 16 bytes
/// at a time, four reads in flight per thread before any mixing: the checks of every gate and every timing
/// digest the whole inputs and outputs, and word-sized loads with a mix per 32-bit word ran at a third of
/// the copy ceiling (docs/gpu-log.md).
__device__ inline void digest(const CheckItem& c, unsigned bx, unsigned by, unsigned gx, unsigned gy,
                              unsigned long long* result) {
  constexpr std::uint64_t phi = 0x9E3779B97F4A7C15ull;
  constexpr int unroll = 4;
  const std::size_t thread = bx * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gx) * blockDim.x;
  auto pair = [](const uint4& v, std::uint64_t j) {  // the two words of 16 bytes, the first at word j
    const std::uint64_t lo = v.x | static_cast<std::uint64_t>(v.y) << 32, hi = v.z | static_cast<std::uint64_t>(v.w) << 32;
    return mix64(lo + j * phi) + mix64(hi + (j + 1) * phi);
  };
  unsigned long long h = 0;
  for (std::size_t set = by; set < c.sets; set += gy) {
    const unsigned char* p = c.a + set * c.stride;
    std::size_t pairs = 0;  // the 16-byte blocks read as vectors; the rest word by word below
    if (reinterpret_cast<std::uintptr_t>(p) % 16 == 0) {
      pairs = c.n / 16;
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
    for (std::size_t j = 2 * pairs + thread; 8 * j < c.n; j += threads) {
      std::uint64_t w = 0;
      for (std::size_t k = 0; k < 8 && 8 * j + k < c.n; ++k) w |= static_cast<std::uint64_t>(p[8 * j + k]) << (8 * k);
      h += mix64(w + j * phi);
    }
  }
  for (int off = 16; off > 0; off >>= 1) h += __shfl_down_sync(0xffffffffu, h, off);
  if ((threadIdx.x & 31) == 0 && h) atomicAdd(result, h);
}

/// Every check of a batch in one launch (a launch per check left the GPU idle between them: 2.7 s of gaps
/// under 10 us in the gate's checks of a ten-op tune, KTUNE_TRACE): each block finds its check by its number.
template <int = 0>
__global__ void check_batch_kernel(CheckItems items, unsigned long long* results) {
  int i = 0;
  while (i + 1 < items.count && blockIdx.x >= items.item[i + 1].first_block) ++i;
  const CheckItem& c = items.item[i];
  const unsigned local = blockIdx.x - c.first_block;
  const unsigned gy = static_cast<unsigned>(std::min<std::size_t>(c.sets, 65535));
  const unsigned bx = local % c.blocks, by = local / c.blocks;
  if (c.digest) digest(c, bx, by, c.blocks, gy, results + i);
  else first_difference(c, bx, by, c.blocks, gy, results + i);
}

template <int = 0>
__global__ void scribble_kernel(std::uint32_t pattern, int words) {
  extern __shared__ std::uint32_t smem[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) smem[i] = pattern;
  __syncthreads();
  // Keep the stores: a kernel whose shared memory is never read could lose them.
  if (threadIdx.x == 0 && smem[words - 1] != pattern) asm volatile("trap;");
}

/// 256-thread blocks for `items` per copy: at most 2048 of them.
inline unsigned check_blocks(std::size_t items) {
  const std::size_t b = (items + 255) / 256;
  return static_cast<unsigned>(b < 2048 ? (b ? b : 1) : 2048);
}

}  // namespace detail

/// Device memory for the checks' results and pinned host memory to read them back into, reused.
class CheckScratch {
 public:
  CheckScratch() = default;
  CheckScratch(const CheckScratch&) = delete;
  CheckScratch& operator=(const CheckScratch&) = delete;
  ~CheckScratch() {
    if (word_) cudaFree(word_);
    if (host_) cudaFreeHost(host_);
  }
  /// At least `words` results.
  Status ensure(std::size_t words = 1) {
    if (words > words_) {
      if (word_) cudaFree(word_);
      if (host_) cudaFreeHost(host_);
      word_ = host_ = nullptr;
      words_ = 0;
      KTUNE_CUDA_TRY(cudaMalloc(&word_, words * sizeof(unsigned long long)));
      KTUNE_CUDA_TRY(cudaMallocHost(&host_, words * sizeof(unsigned long long)));
      words_ = words;
    }
    return Status::success();
  }
  unsigned long long* word() const { return word_; }
  unsigned long long* host() const { return host_; }

 private:
  unsigned long long* word_ = nullptr;
  unsigned long long* host_ = nullptr;
  std::size_t words_ = 0;
};

/// A span of device bytes; for a guard zone, `phase` is the byte of the guard word at its start. With `sets`
/// above 1: the same span in each of that many copies, `stride` bytes apart (the rotation sets).
struct Span {
  const void* p = nullptr;
  std::size_t n = 0;
  std::size_t phase = 0;
  std::size_t sets = 1, stride = 0;
};

/// Checks enqueued together and read back with one synchronisation: after every gate run the guards, the
/// inputs and the outputs are checked, after every timing every rotation set, and a synchronisation per
/// check would cost more than the reading.
class CheckBatch {
 public:
  /// The slot of the digest of `s` (digest_kernel; over its sets, summed).
  std::size_t digest(const Span& s) { return add({s, nullptr, true}); }
  /// The slot of the first difference of `s` from `b` (null: from the guard word, `s.phase` its byte at the
  /// start): set * s.n + byte, the first set first; ULLONG_MAX where every copy is equal.
  std::size_t first_difference(const Span& s, const void* b = nullptr) { return add({s, b, false}); }

  /// Every check on `stream`, their results in slot order: one fill, a launch per max_check_items checks, one
  /// copy back and one synchronisation.
  Status run(cudaStream_t stream, CheckScratch& scratch, std::vector<unsigned long long>& out) const {
    KTUNE_TRY(enqueue(stream, scratch));
    KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
    collect(scratch, out);
    return Status::success();
  }
  /// run() without its synchronisation, so that other work enqueued after it shares it: collect() reads the
  /// results once `stream` is synchronised.
  Status enqueue(cudaStream_t stream, CheckScratch& scratch) const {
    if (items_.empty()) return Status::success();
    KTUNE_TRY(scratch.ensure(items_.size()));
    KTUNE_CUDA_TRY(cudaMemsetAsync(scratch.word(), 0, items_.size() * sizeof(unsigned long long), stream));
    detail::CheckItems batch{};
    std::size_t first = 0;  // the slot of the batch's first check
    unsigned blocks = 0;
    auto launch = [&]() -> Status {
      if (blocks) detail::check_batch_kernel<><<<blocks, 256, 0, stream>>>(batch, scratch.word() + first);
      KTUNE_CUDA_TRY(cudaGetLastError());
      first += static_cast<std::size_t>(batch.count);
      batch = {};
      blocks = 0;
      return Status::success();
    };
    for (const Item& it : items_) {
      const std::size_t sets = it.span.n ? it.span.sets : 0;  // nothing to read: no blocks, the result stays
      const unsigned per_set = detail::check_blocks(it.digest ? (it.span.n + 63) / 64 : (it.span.n + 15) / 16);
      const unsigned mine = per_set * static_cast<unsigned>(std::min<std::size_t>(sets, 65535));  // < 2^27
      if (batch.count == detail::max_check_items || blocks > static_cast<unsigned>(INT_MAX) - mine) KTUNE_TRY(launch());
      batch.item[batch.count++] = {static_cast<const unsigned char*>(it.span.p), static_cast<const unsigned char*>(it.b),
                                   it.span.n, it.span.stride, sets, it.span.phase, per_set, blocks, it.digest};
      blocks += mine;
    }
    KTUNE_TRY(launch());
    KTUNE_CUDA_TRY(cudaMemcpyAsync(scratch.host(), scratch.word(), items_.size() * sizeof(unsigned long long),
                                   cudaMemcpyDeviceToHost, stream));
    return Status::success();
  }
  /// The results of enqueue(), in slot order, once its stream is synchronised.
  void collect(const CheckScratch& scratch, std::vector<unsigned long long>& out) const {
    out.assign(items_.size(), 0);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const unsigned long long r = scratch.host()[i];
      out[i] = items_[i].digest ? r : (r == 0 ? ULLONG_MAX : ~r);  // a first difference comes back complemented
    }
  }

 private:
  struct Item {
    Span span;
    const void* b;
    bool digest;
  };
  std::size_t add(const Item& it) {
    items_.push_back(it);
    return items_.size() - 1;
  }
  std::vector<Item> items_;
};

/// The first byte offset where `a` differs from `b` (b null: from the repeated guard word, its byte
/// `phase` at a), or SIZE_MAX when the n bytes are equal.
inline Status first_difference(const void* a, const void* b, std::size_t n, cudaStream_t stream, CheckScratch& scratch,
                               std::size_t& first, std::size_t phase = 0) {
  CheckBatch batch;
  batch.first_difference({a, n, phase}, b);
  std::vector<unsigned long long> r;
  KTUNE_TRY(batch.run(stream, scratch, r));
  first = r[0] == ULLONG_MAX ? SIZE_MAX : static_cast<std::size_t>(r[0]);
  return Status::success();
}

/// An order-independent 64-bit digest of each buffer (equal bytes give equal digests), in one pass of the
/// GPU and one copy back.
inline Status digests(const std::vector<Span>& spans, cudaStream_t stream, CheckScratch& scratch,
                      std::vector<std::uint64_t>& out) {
  CheckBatch batch;
  for (const Span& s : spans) batch.digest(s);
  std::vector<unsigned long long> r;
  KTUNE_TRY(batch.run(stream, scratch, r));
  out.assign(r.begin(), r.end());
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
