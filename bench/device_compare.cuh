// bench/device_compare.cuh: ktune::compare (include/ktune/verify.hpp) computed on the device.
//
// The gate compares every output element with its float64 reference. On the host that means copying the
// output back and reading it and the reference (8 bytes per element) on the CPU: for the largest shapes
// about a gigabyte per variant, most of a sweep's host time. Here the reference is uploaded once per
// shape and each variant's output is compared where it lies, with the same rule element by element:
// poison = unwritten; NaN must match NaN; ±inf must match exactly; else |out − ref| ≤ atol + rtol·|ref|
// (rounded like the host's: no fused multiply-add), and rel_l2 = ‖out − ref‖ / max(‖ref‖, atol √n) over finite
// pairs (ktune::relative_l2).
// Counts, max_abs and the first bad index are exact; rel_l2 sums in another order than the host's loop
// (a difference in the last bits).
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>
#include <ktune/verify.hpp>

namespace ktune::bench {

namespace detail {

struct CompareAcc {
  unsigned long long unwritten = 0, mismatched = 0, first_bad = ULLONG_MAX, first_unwritten = ULLONG_MAX, max_abs_bits = 0;
  double err2 = 0, ref2 = 0;
};

template <class T>
__global__ void compare_kernel(const T* __restrict__ out, const double* __restrict__ ref, std::size_t n,
                               std::uint32_t poison, double atol, double rtol, CompareAcc* acc) {
  unsigned long long unwritten = 0, mismatched = 0, first_bad = ULLONG_MAX, first_unwritten = ULLONG_MAX;
  double err2 = 0, ref2 = 0, max_abs = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const double r = ref[i];
    const std::uint32_t bits = sizeof(T) == 4 ? reinterpret_cast<const std::uint32_t*>(out)[i]
                                              : reinterpret_cast<const std::uint16_t*>(out)[i];
    bool bad = false;
    if (bits == poison) {
      ++unwritten;
      if (i < first_unwritten) first_unwritten = i;
      bad = true;
    } else {
      const double o = static_cast<double>(to_float(out[i]));
      if (isnan(r) || isnan(o)) {
        bad = isnan(r) != isnan(o);
      } else if (isinf(r) || isinf(o)) {
        bad = o != r;
      } else {
        const double d = fabs(__dsub_rn(o, r));
        err2 = __dadd_rn(err2, __dmul_rn(d, d));
        ref2 = __dadd_rn(ref2, __dmul_rn(r, r));
        if (d > max_abs) max_abs = d;
        bad = d > __dadd_rn(atol, __dmul_rn(rtol, fabs(r)));
      }
    }
    if (bad) {
      ++mismatched;
      if (i < first_bad) first_bad = i;
    }
  }
  for (int off = 16; off > 0; off >>= 1) {
    unwritten += __shfl_down_sync(0xffffffffu, unwritten, off);
    mismatched += __shfl_down_sync(0xffffffffu, mismatched, off);
    const unsigned long long fb = __shfl_down_sync(0xffffffffu, first_bad, off);
    if (fb < first_bad) first_bad = fb;
    const unsigned long long fu = __shfl_down_sync(0xffffffffu, first_unwritten, off);
    if (fu < first_unwritten) first_unwritten = fu;
    err2 += __shfl_down_sync(0xffffffffu, err2, off);
    ref2 += __shfl_down_sync(0xffffffffu, ref2, off);
    const double m = __shfl_down_sync(0xffffffffu, max_abs, off);
    if (m > max_abs) max_abs = m;
  }
  if ((threadIdx.x & 31) == 0) {
    if (unwritten) atomicAdd(&acc->unwritten, unwritten);
    if (mismatched) atomicAdd(&acc->mismatched, mismatched);
    if (first_bad != ULLONG_MAX) atomicMin(&acc->first_bad, first_bad);
    if (first_unwritten != ULLONG_MAX) atomicMin(&acc->first_unwritten, first_unwritten);
    if (err2 != 0) atomicAdd(&acc->err2, err2);
    if (ref2 != 0) atomicAdd(&acc->ref2, ref2);
    // Non-negative doubles order like their bit patterns.
    if (max_abs > 0) atomicMax(&acc->max_abs_bits, static_cast<unsigned long long>(__double_as_longlong(max_abs)));
  }
}

}  // namespace detail

/// Device memory for the totals of a few comparisons at once (one per output of a call), reused, and
/// pinned host memory they start from and come back into: a pageable copy of a few bytes each way cost a
/// comparison a host round trip of its own.
class DeviceCompareScratch {
 public:
  DeviceCompareScratch() = default;
  DeviceCompareScratch(const DeviceCompareScratch&) = delete;
  DeviceCompareScratch& operator=(const DeviceCompareScratch&) = delete;
  ~DeviceCompareScratch() {
    if (acc_) cudaFree(acc_);
    if (host_) cudaFreeHost(host_);
  }
  /// At least `slots` comparisons' totals.
  Status ensure(std::size_t slots = 1) {
    if (slots <= slots_) return Status::success();
    if (acc_) cudaFree(acc_);
    if (host_) cudaFreeHost(host_);
    acc_ = host_ = nullptr;
    slots_ = 0;
    KTUNE_CUDA_TRY(cudaMalloc(&acc_, slots * sizeof(detail::CompareAcc)));
    KTUNE_CUDA_TRY(cudaMallocHost(&host_, (slots + 1) * sizeof(detail::CompareAcc)));
    *host_ = detail::CompareAcc{};  // the start of every comparison; the slots' totals come back after it
    slots_ = slots;
    return Status::success();
  }
  detail::CompareAcc* acc(std::size_t slot = 0) const { return acc_ + slot; }
  const detail::CompareAcc* init() const { return host_; }
  detail::CompareAcc* back(std::size_t slot = 0) const { return host_ + 1 + slot; }

 private:
  detail::CompareAcc* acc_ = nullptr;
  detail::CompareAcc* host_ = nullptr;
  std::size_t slots_ = 0;
};

/// Enqueues the comparison of n outputs `out` (device memory) with their float64 reference `ref` (device
/// memory) on `stream`, its totals into `slot` of `scratch` (ensured for it) and copied back: nothing is
/// waited for. compare_finish reads them once the stream is synchronised.
template <class T>
Status compare_enqueue(const T* out, const double* ref, std::size_t n, Tolerance tol, cudaStream_t stream,
                       DeviceCompareScratch& scratch, std::size_t slot = 0) {
  KTUNE_TRY(scratch.ensure(slot + 1));
  KTUNE_CUDA_TRY(cudaMemcpyAsync(scratch.acc(slot), scratch.init(), sizeof(detail::CompareAcc), cudaMemcpyHostToDevice, stream));
  if (n > 0) {
    int device = 0, sms = 1;
    KTUNE_CUDA_TRY(cudaGetDevice(&device));
    KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const std::size_t wanted = (n + 255) / 256;
    const unsigned blocks = static_cast<unsigned>(wanted < static_cast<std::size_t>(sms) * 16 ? wanted : static_cast<std::size_t>(sms) * 16);
    detail::compare_kernel<T><<<blocks, 256, 0, stream>>>(out, ref, n, poison_bits<T>(), tol.atol, tol.rtol, scratch.acc(slot));
    KTUNE_CUDA_TRY(cudaGetLastError());
  }
  KTUNE_CUDA_TRY(cudaMemcpyAsync(scratch.back(slot), scratch.acc(slot), sizeof(detail::CompareAcc), cudaMemcpyDeviceToHost, stream));
  return Status::success();
}

/// The comparison compare_enqueue put in `slot`, after `stream` was synchronised (a failing one reads its
/// first bad element back: one more synchronisation).
template <class T>
Status compare_finish(const T* out, const double* ref, std::size_t n, Tolerance tol, cudaStream_t stream,
                      const DeviceCompareScratch& scratch, Comparison& c, std::size_t slot = 0) {
  const detail::CompareAcc acc = *scratch.back(slot);
  c = Comparison{};
  c.count = n;
  c.unwritten = static_cast<std::size_t>(acc.unwritten);
  c.mismatched = static_cast<std::size_t>(acc.mismatched);
  if (acc.first_unwritten != ULLONG_MAX) c.first_unwritten = static_cast<std::size_t>(acc.first_unwritten);
  double max_abs = 0;
  static_assert(sizeof max_abs == sizeof acc.max_abs_bits, "64-bit doubles");
  std::memcpy(&max_abs, &acc.max_abs_bits, sizeof max_abs);
  c.max_abs = max_abs;
  if (acc.first_bad != ULLONG_MAX) {
    c.first_bad = static_cast<std::size_t>(acc.first_bad);
    T value{};
    double r = 0;
    KTUNE_CUDA_TRY(cudaMemcpyAsync(&value, out + c.first_bad, sizeof value, cudaMemcpyDeviceToHost, stream));
    KTUNE_CUDA_TRY(cudaMemcpyAsync(&r, ref + c.first_bad, sizeof r, cudaMemcpyDeviceToHost, stream));
    KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
    c.first_bad_value = is_poison(value) ? 0.0 : static_cast<double>(to_float(value));  // as the host reports it
    c.first_bad_ref = r;
  }
  c.rel_l2 = relative_l2(acc.err2, acc.ref2, n, tol.l2_floor());
  c.passed = c.mismatched == 0 && c.rel_l2 <= tol.rel_l2;
  return Status::success();
}

/// Compares n outputs `out` (device memory) with their float64 reference `ref` (device memory) under
/// `tol`, like ktune::compare on the host; synchronises `stream`.
template <class T>
Status device_compare(const T* out, const double* ref, std::size_t n, Tolerance tol, cudaStream_t stream,
                      DeviceCompareScratch& scratch, Comparison& c) {
  KTUNE_TRY(compare_enqueue(out, ref, n, tol, stream, scratch));
  KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
  return compare_finish(out, ref, n, tol, stream, scratch, c);
}

}  // namespace ktune::bench
