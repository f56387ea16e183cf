// bench/measure_detail.cuh: what the measurer's files (bench/measure*.cu) share, private to them: the
// state of a GpuMeasurer (its shape group's buffers, the gate's set, the search's timers) and the helpers
// every step uses (phase timing, kept buffers, the storage type of a tensor).
//
// Per shape group: the harness draws one set of inputs for a seed derived from the run's seed and the
// (op, dtype, shape), the float64 reference is computed once from them, and a rotation arena holds
// `rotations` independent input/output sets (more than twice the L2 in total, so each timed launch
// starts with a cold L2). A pristine device copy of the inputs restores set 0 before every gate, so a
// variant that writes into its inputs (in-place ops, or a bug) cannot spoil the next variant's check.
#pragma once

#include "measure.hpp"

#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <ktune/harness.hpp>
#include <ktune/registry.hpp>
#include <ktune/timing.cuh>
#include <ktune/verify.hpp>

#include "buffer_checks.cuh"
#include "caller_state.hpp"
#include "dependent_chain.cuh"
#include "gpu_trace.hpp"
#include "tensor_type.hpp"
#include "device_compare.cuh"
#include "timing_options.cuh"

namespace ktune::bench {

inline constexpr std::size_t tensor_alignment = 256;   // what cudaMalloc gives: full-width vector paths apply

inline std::string describe(const Status& st) {
  std::string s = st.message;
  if (st.cuda != cudaSuccess) s += std::string(" (") + cudaGetErrorName(st.cuda) + ": " + cudaGetErrorString(st.cuda) + ")";
  return s;
}

inline Timed to_timed(const TimingResult& r) {
  return {r.median_us, r.min_us, r.max_us, r.samples, r.batch, r.abandoned};
}

inline double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Adds the wall and process CPU time of its lifetime to one phase.
class PhaseScope {
 public:
  PhaseScope(PhaseTimes& p, int phase)
      : p_(p), phase_(phase), wall_(std::chrono::steady_clock::now()), cpu_(cpu_seconds()), traced_(p.trace ? p.trace->now() : 0) {}
  ~PhaseScope() {
    p_.wall_s[phase_] += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
    p_.cpu_s[phase_] += cpu_seconds() - cpu_;
    if (p_.trace) p_.trace->span(PhaseTimes::name(phase_), traced_, p_.trace->now());
  }

 private:
  PhaseTimes& p_;
  int phase_;
  std::chrono::steady_clock::time_point wall_;
  double cpu_;
  std::uint64_t traced_;
};

/// Adds the wall time from its construction to stop() or its end to a named part of a phase
/// (PhaseTimes::part_s).
class PartScope {
 public:
  PartScope(PhaseTimes& p, const char* part)
      : p_(p), part_(part), wall_(std::chrono::steady_clock::now()), traced_(p.trace ? p.trace->now() : 0) {}
  PartScope(const PartScope&) = delete;
  PartScope& operator=(const PartScope&) = delete;
  ~PartScope() { stop(); }
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    p_.part_s[part_] += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
    if (p_.trace) p_.trace->span(part_, traced_, p_.trace->now());
  }

 private:
  PhaseTimes& p_;
  const char* part_;
  std::chrono::steady_clock::time_point wall_;
  std::uint64_t traced_;
  bool stopped_ = false;
};

/// A device (or pinned host) buffer kept from one shape group to the next and grown when a group needs
/// more: allocating and freeing every group's buffers (pinning and unpinning up to gigabytes, cudaFree
/// synchronising the device) was most of the `prepare` phase that the host workers did not hide.
struct KeptBuffer {
  bool pinned = false;
  void* p = nullptr;
  std::size_t bytes = 0;
  KeptBuffer(const KeptBuffer&) = delete;
  KeptBuffer& operator=(const KeptBuffer&) = delete;
  explicit KeptBuffer(bool pinned_host = false) : pinned(pinned_host) {}
  ~KeptBuffer() { free(); }
  void free() {
    if (p) (void)(pinned ? cudaFreeHost(p) : cudaFree(p));
    p = nullptr;
    bytes = 0;
  }
  /// At least `need` bytes (an error leaves the buffer empty and the CUDA error state clear).
  cudaError_t reserve(std::size_t need) {
    need = std::max<std::size_t>(need, 1);
    if (bytes >= need) return cudaSuccess;
    free();
    const cudaError_t e = pinned ? cudaMallocHost(&p, need) : cudaMalloc(&p, need);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      p = nullptr;
      return e;
    }
    bytes = need;
    return cudaSuccess;
  }
  char* data() const { return static_cast<char*>(p); }
};

/// [0, n) in four parts, each a whole number of `align` bytes but the last: `part(begin, end)` on each, the
/// first on this thread and the others on threads of their own.
template <class Part>
void in_four_parts(std::size_t n, std::size_t align, Part&& part) {
  constexpr std::size_t parts = 4;
  const std::size_t size = ((n + align - 1) / align + parts - 1) / parts * align;
  std::vector<std::thread> helpers;
  for (std::size_t i = 1; i < parts && i * size < n; ++i)
    helpers.emplace_back([&, i] { part(i * size, std::min(n, (i + 1) * size)); });
  part(0, std::min(n, size));
  for (std::thread& t : helpers) t.join();
}

/// memcpy on four threads above 16 MiB (one thread copies about 9 GB/s from pageable into pinned memory on an
/// H200's host, four about 30): the copies into pinned memory a group's upload waits for.
inline void copy_on_threads(char* to, const void* from, std::size_t n) {
  const auto* src = static_cast<const char*>(from);
  if (n < (std::size_t{16} << 20)) {
    std::memcpy(to, src, n);
    return;
  }
  in_four_parts(n, 1, [&](std::size_t begin, std::size_t end) { std::memcpy(to + begin, src + begin, end - begin); });
}

/// Pinned memory the next group's inputs and references are copied into while the GPU runs the current one
/// (HostPrefetcher's stage hook, HostGroup::staged), so that its upload is the copy engine's alone: 55 GB/s
/// from pinned memory on an H200's host, against 19.4 through the measuring thread's staging halves
/// (docs/scale.md). Two buffers, the group being uploaded's and the next one's, sized once for the largest
/// group the run expects (presize): grown group by group, pinning and unpinning gigabytes each time, they
/// cost a ten-op tune more than they saved. A group that does not fit goes through the halves.
///
/// Sized once, they still cost a ten-op tune 5.0 s on its measuring thread (two cudaMallocHost of 3.5 GiB on
/// an H200's host, the pages faulted in by the driver). So presize maps the pages on a thread of its own and
/// faults them in there, and the measuring thread only registers them with CUDA (cudaHostRegister) when a
/// group begins (adopt): no CUDA call runs beside the measuring thread's, which made its calls wait when
/// workers pinned memory (docs/scale.md, "uploads by DMA alone"). Until then the groups go through the
/// halves. Registering both took 0.3-1.7 s on H100 hosts in huge pages, 2.1-3.1 s in 4 KiB pages, where
/// allocating them took 3.4 s (docs/gpu-log.md, "probe once").
class PinnedStaging {
 public:
  static constexpr std::size_t max_bytes = std::size_t{8} << 30;

  PinnedStaging() = default;
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;
  ~PinnedStaging() {
    if (faulter_.joinable()) faulter_.join();
    for (Buffer& b : buffers_) b.release();
  }

  /// Where `tensors`' read bytes and (with `reference`) the float64 references of their outputs go in a
  /// buffer, and how many bytes that takes.
  static std::size_t layout(const std::vector<TensorInfo>& tensors, bool reference, HostGroup::Staged* st = nullptr) {
    std::size_t total = 0;
    auto place = [&](std::size_t bytes) {
      const std::size_t at = total;
      total += (bytes + 255) / 256 * 256;
      return at;
    };
    for (const TensorInfo& t : tensors) {
      const std::size_t at = t.access != Access::write && t.bytes() ? place(t.bytes()) : SIZE_MAX;
      if (st) st->input_at.push_back(at);
    }
    if (reference)
      for (const TensorInfo& t : tensors)
        if (t.is_output()) {
          const std::size_t at = place(t.elements * sizeof(double));
          if (st) st->reference_at.push_back(at);
        }
    return total;
  }

  /// The measuring thread, once, when the run says what it will begin: both buffers mapped with `bytes` (at
  /// most max_bytes; halved until the host maps that much, down to 64 MiB) and their pages faulted in, on a
  /// thread of this object's.
  void presize(std::size_t bytes) {
    if (faulter_.joinable() || bytes == 0) return;
    faulter_ = std::thread([this, bytes] {
      for (Buffer& b : buffers_) {
        for (std::size_t n = std::min(bytes, max_bytes); n >= (std::size_t{64} << 20) && !b.mapped; n /= 2) b.map(n);
        if (!b.mapped) continue;
        touch_on_threads(b.mapped, b.bytes);
        std::lock_guard<std::mutex> lock(mutex_);
        b.faulted = true;
      }
    });
  }

  /// The measuring thread, when a group begins: registers with CUDA the buffers whose pages are in, so the
  /// stager may use them from then on. A buffer CUDA does not take stays unused (the halves serve).
  void adopt() {
    for (Buffer& b : buffers_) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!b.faulted || b.registered || b.refused) continue;
      }
      const auto start = std::chrono::steady_clock::now();
      const bool ok = cudaHostRegister(b.mapped, b.bytes, cudaHostRegisterDefault) == cudaSuccess;
      registering_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!ok) {
        (void)cudaGetLastError();
        b.release();  // the faulter is done with it: faulted
      }
      std::lock_guard<std::mutex> lock(mutex_);
      (ok ? b.registered : b.refused) = true;
    }
  }

  /// The buffers CUDA took (adopt), each of `bytes`; and the measuring thread's time registering them.
  int ready(std::size_t& bytes, double& registering_s) {
    std::lock_guard<std::mutex> lock(mutex_);
    int n = 0;
    bytes = 0;
    for (const Buffer& b : buffers_)
      if (b.registered) {
        ++n;
        bytes = b.bytes;
      }
    registering_s = registering_s_;
    return n;
  }

  /// `g`'s read tensors and references into a free buffer, when one is large enough.
  void stage(HostGroup& g) {
    HostGroup::Staged st;
    const std::size_t total = layout(g.tensors, !g.reference.empty(), &st);
    if (total == 0 || g.inputs.size() != g.tensors.size() || st.reference_at.size() != g.reference.size()) return;
    int k = -1;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (int i = 0; i < 2 && k < 0; ++i)
        if (buffers_[i].registered && !busy_[i] && buffers_[i].bytes >= total) k = i;
      if (k < 0) return;
      busy_[k] = true;
    }
    char* base = static_cast<char*>(buffers_[k].mapped);
    for (std::size_t t = 0; t < g.tensors.size(); ++t)
      if (st.input_at[t] != SIZE_MAX) copy_on_threads(base + st.input_at[t], g.inputs[t].data(), g.tensors[t].bytes());
    for (std::size_t o = 0; o < g.reference.size(); ++o)
      copy_on_threads(base + st.reference_at[o], g.reference[o].data(), g.reference[o].size() * sizeof(double));
    st.base = base;
    st.hold = std::shared_ptr<void>(base, [this, k](void*) {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_[k] = false;
    });
    g.staged = std::move(st);
  }

 private:
  struct Buffer {
    void* mapped = nullptr;
    std::size_t bytes = 0;
    bool faulted = false, registered = false, refused = false;  // under the mutex once the faulter started
    void map(std::size_t n) {
      void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return;
      // Huge pages where the host allows them: CUDA locks and maps a buffer page by page, and 4 KiB pages
      // took the measuring thread 2.1-3.1 s for two of 3.5 GiB on an H100's host.
      (void)madvise(p, n, MADV_HUGEPAGE);
      mapped = p;
      bytes = n;
    }
    void release() {
      if (registered) (void)cudaHostUnregister(mapped);
      if (mapped) munmap(mapped, bytes);
      mapped = nullptr;
      registered = false;
    }
  };
  /// One write per page, on four threads: the pages exist before CUDA is asked to lock them.
  static void touch_on_threads(void* p, std::size_t n) {
    constexpr std::size_t page = 4096;
    volatile char* c = static_cast<char*>(p);
    in_four_parts(n, page, [&](std::size_t begin, std::size_t end) {
      for (std::size_t at = begin; at < end; at += page) c[at] = 0;
    });
  }

  std::mutex mutex_;
  Buffer buffers_[2];
  bool busy_[2] = {false, false};
  double registering_s_ = 0;  // the measuring thread's alone
  std::thread faulter_;
};

struct GpuMeasurer::State {
  std::map<std::string, Spec> specs;
  int arch = 0;
  TimingSettings timing;
  bool cold_l2 = true;
  std::uint64_t run_seed = 0;
  double copy_gbps = 0;
  cudaStream_t stream = nullptr;
  std::size_t l2_bytes = 0;

  // The current shape group.
  const Harness* harness = nullptr;
  std::string op;
  DType dtype = DType::f32;
  Shape shape;
  Tolerance tol;
  std::uint64_t seed = 0;
  double bytes_moved = 0;
  std::vector<TensorInfo> tensors;
  std::vector<std::size_t> offsets;     // of each tensor within a set
  std::size_t set_bytes = 0;
  std::size_t rotations = 1;
  char* arena = nullptr;                // rotations x set_bytes, a guard zone before and after
  char* pristine = nullptr;             // the inputs as drawn, laid out like a set
  std::vector<std::shared_ptr<const void>> args;  // one per set
  std::vector<std::size_t> outputs;     // tensor index of each output
  std::vector<std::vector<double>> reference;
  std::vector<std::vector<double>> ref_norms;
  std::vector<std::size_t> host_offsets;  // of each output in `host_out`
  char* host_out = nullptr;             // pinned, for the gate's copies back
  // Where arena, pristine, host_out, reference_dev and gate_arena live (grown, never freed per group).
  KeptBuffer kept_arena, kept_pristine, kept_host_out{true}, kept_reference, kept_gate;
  double upload_s = 0;                  // host-to-device copies of inputs and references, synchronised

  // Host-to-device copies go through two pinned halves: the host copies a chunk into one (on four
  // threads) while the copy engine moves the other. A pageable cudaMemcpyAsync moved about 7.6 GB/s
  // (8 of the 25 s of `prepare` of a tune on an H200).
  static constexpr std::size_t staging_half = std::size_t{64} << 20;
  KeptBuffer kept_staging{true};
  cudaEvent_t staged[2] = {nullptr, nullptr};
  const Variant* checked = nullptr;     // the variant of the last successful check()
  HostTensors host_inputs;              // kept by begin_rounds for a gate the rounds may need

  // The judge's gate set (docs/judge.md): every tensor of the checked call in a region of its own with
  // guard zones before and after it, or (separate_allocations, for compute-sanitizer) in a cudaMalloc
  // of its own. Never one of the rotation sets: a write past a tensor must land in a guard.
  bool separate_allocations = false;
  bool wide_values = false;             // --value-range wide: inputs reaching the hundreds, exact zeros
  char* gate_arena = nullptr;
  std::size_t gate_arena_bytes = 0;
  std::vector<void*> gate_allocs;
  std::vector<char*> gate_ptr;          // each tensor's first byte
  std::shared_ptr<const void> gate_args;
  std::vector<std::uint64_t> input_digest;  // of each read-only tensor as drawn
  bool gate_dirty = true;               // guards or inputs need restoring before the next run
  CheckScratch check_scratch;
  // Digests of each checked variant's outputs (in `outputs` order), by benchmark name: the timed
  // calls must reproduce them bitwise. Kept across the screens and the rounds of a shape.
  std::map<std::string, std::vector<std::uint64_t>> gate_digests;
  std::uint64_t verify_draws = 0;       // fresh poison for every verification

  // What a call leaves behind (docs/judge.md, item 11): the caller's settings (the stream's attributes, the
  // context's limits, the cache configuration, the device flags and current device, ...) as they were before
  // any variant ran; every checked call and every timing is compared with them, and a change is put back.
  CallerState caller_baseline;
  CallerStateQueries caller_queries;
  bool caller_taken = false;
  // The dependent chain (docs/judge.md, item 12): the gate's second run of each call, and the first checked
  // timed call of each variant and shape (by benchmark name, which holds the shape), run behind a producer
  // that releases them early and writes their inputs late.
  DependentChain chain;
  std::set<std::string> chain_verified;
  double launch_floor_us = -1;          // launch_floor's figure, measured once per process
  double launch_probe_us = -1;          // with it: an empty kernel's fastest single call, event to event
  double batch_for_us = 0;              // the current shape's figure every timing sizes its batch for

  // The gate on the device: the reference of each output, uploaded once per shape.
  bool device_compare = false;
  bool device_compare_off = false;      // a disagreement with the host turned it off for the run
  bool cross_checked = false;           // this shape's first gate was compared on the host as well
  // That check in the background (the search's screens, which settle_shape settles): the outputs copied
  // back on the stream, then compared on a thread of its own while the GPU goes on.
  struct CrossCheck {
    std::string disagreement;           // empty when the host's verdict is the device's
    double seconds = 0;                 // the thread's wall time
  };
  std::future<CrossCheck> cross_check;
  cudaEvent_t cross_copied = nullptr;
  std::vector<double*> reference_dev;
  DeviceCompareScratch scratch;

  // Inputs and references drawn and computed on the GPU (a DevicePreparation): the current group's, or
  // null when the host prepared it; the ops whose preparation disagreed with the host's (prepared on the
  // host for the rest of the run); and how many groups were prepared there, and checked against the host.
  const DevicePreparation* on_device = nullptr;
  std::set<std::string> preparation_off;
  std::size_t groups_on_device = 0, groups_on_device_checked = 0;

  // The halving search: the screen's settings, and per finalist a timer prepared on its first round.
  TimingSettings screen = screen_timing(false), rounds = full_timing();
  struct Prepared {
    const Variant* v = nullptr;
    std::size_t next = 0;               // the next rotation set
    int batch = 1;
    bool launched = false;              // its first, uncounted replay is done
    ktune::detail::GraphGuard graph;    // exec set: replayed (batch launches), else launch by launch
  };
  std::map<std::string, std::unique_ptr<Prepared>> prepared;
  cudaEvent_t ev_start = nullptr, ev_stop = nullptr;
  ktune::detail::SampleEvents sample_events;  // a round's replays, back to back

  PhaseTimes phases;
  std::vector<std::string> warnings;

  void* tensor_ptr(std::size_t set, std::size_t t) const { return arena + set * set_bytes + offsets[t]; }

  // ---- a group's buffers (measure_group.cu)
  /// `bytes` from the host to the device on the measuring stream, through the staging halves from 4 MiB.
  Status upload(void* dst, const void* src, std::size_t bytes);
  /// upload() of a group's tensor or reference from `group_staged` where a worker put it there (the copy
  /// engine alone), else from `pageable` through the staging halves.
  Status upload_group_bytes(void* dst, const void* pageable, std::size_t staged_at, std::size_t bytes) {
    if (group_staged.base && staged_at != SIZE_MAX)
      return Status::from_cuda(cudaMemcpyAsync(dst, group_staged.base + staged_at, bytes, cudaMemcpyHostToDevice, stream),
                               "cudaMemcpyAsync");
    return upload(dst, pageable, bytes);
  }
  /// Drops the group's buffers (their kept allocations stay for the next group) and hands its host
  /// memory to a worker to free.
  void release();
  /// After the reference's upload: the outputs' pinned staging and the gate's guarded set.
  std::string prepare_gate_set();
  /// reference_dev: a float64 buffer per output, on the device.
  Status reserve_reference_dev();
  /// The group's inputs (pristine) and references (reference_dev) drawn and computed by `on_device`.
  Status prepare_on_device();
  /// Where the GPU's inputs and references differ from the host's (`host`, `reference`): inputs bitwise,
  /// references within 1e-12 relative (two libms' last bits). Empty when they agree, and then `reference`
  /// and `ref_norms` are the GPU's: the host's comparisons check the device's on the same reference.
  std::string check_preparation(const HostTensors& host);
  /// `reference` and `ref_norms` on the host: copied back from the device when the GPU computed them and
  /// the host compares (the device comparison turned off).
  Status ensure_host_reference();
  /// reference_dev copied back to the host, an array per output.
  Status copy_reference_back(std::vector<std::vector<double>>& out) const;
  /// `reference` and its chunk norms (the host's comparisons) from `r`.
  void adopt_reference(std::vector<std::vector<double>> r);

  // ---- the gate (measure_gate.cu)
  /// The gate set before a checked run: write-only outputs poisoned, in-place tensors as drawn, and
  /// after a run that broke something (or the first), the guard zones and the read-only inputs too.
  Status reset_gate();

  /// After a checked run: every guard zone bitwise intact and every read-only input bitwise as drawn
  /// (`verdict` gets the judge's message for the first violation, empty when none), and the digests of
  /// the outputs (in outputs order). One synchronisation whatever the number of tensors, shared with what
  /// `also` enqueues after the checks (the first run's device comparison).
  Status check_buffers(const std::string& when, std::string& verdict, std::vector<std::uint64_t>& output_digests,
                       const std::function<Status()>& also = nullptr);

  /// The gate set's outputs into host_out, on the stream (not waited for).
  Status copy_outputs_back();
  /// The outputs in host_out compared with the float64 reference on the host, on all cores.
  std::vector<Comparison> compare_host_out() const;
  /// Why the device's comparisons of `name`'s outputs are not the host's (empty when they are).
  std::string disagreement(const std::string& name, const std::vector<Comparison>& device,
                           const std::vector<Comparison>& host) const;
  /// The host's check of the device comparisons `device` of `name`, in the background (cross_check).
  Status start_cross_check(const std::string& name, std::vector<Comparison> device);
  /// Waits for the background check: its disagreement (empty when none); on one, the device comparison is
  /// off for the rest of the run.
  std::string settle_cross_check();

  // ---- what a call leaves behind, and the dependent chain (measure_verify.cu)
  /// The caller's settings before any variant runs: taken once, on the measuring stream.
  Status ensure_caller_baseline();
  /// After a variant's calls (`when` says which): the caller's settings against the baseline. A difference
  /// gives `verdict` the judge's state_changed message naming each setting, its value before and after, and
  /// is put back; one that cannot be put back makes `fatal` true (every later variant would run in it).
  Status check_caller_state(const std::string& when, std::string& verdict, bool& fatal);
  /// The chain's view of a call's inputs (every tensor it reads: read-only and in-place ones) at `at(t)`, their
  /// real values in `pristine`.
  std::vector<ChainTensor> chain_tensors(const std::function<void*(std::size_t)>& at) const;

  // ---- the judge's checks of timed calls (measure_verify.cu)
  /// The least one call takes as verify_work times it: an empty kernel between two event nodes of a
  /// graph captured, instantiated and uploaded just before (a graph's first launch pays the GPU's own
  /// start-up of its nodes: about 12 us seen on an H200 for a 3.7 us call), or launched plainly between
  /// two events (a call that cannot be captured). The larger of the two, each the fastest of five.
  Status launch_floor(double& us);
  /// One launch of an empty kernel, the larger of a plain launch and a one-launch graph (events inside),
  /// each the fastest of five: what launch_floor keeps from the first call.
  Status measure_launch_floor(double& us);
  /// The figure every call of a shape moving `moved` bytes sizes its replay batch for
  /// (TimingOptions::batch_for_us): a single call's latency (an empty kernel's probe) plus the bytes at
  /// the copy ceiling, what the probe of a call at the copy's speed takes. 0 without a copy ceiling.
  Status batch_figure(double moved, double& us);

  /// The judge's check of timed calls (docs/judge.md, "the timed calls do the work"): a rotation set drawn
  /// for this timing gets its write-only outputs overwritten with fresh random numbers (not NaN: "compute
  /// only where the output is not a number" must skip here too) and its in-place tensors restored; one call,
  /// as the timing made it. Its outputs must be bitwise the checked call's (the gate's digests), and the call
  /// must not take much longer than the timed calls did each. check_rotation checks the inputs after it.
  Status verify_work(const Variant& v, const std::string& name, double median_us, std::string& verdict);

  /// After every timing (and its verify_work), a screen stopped early included: the guard zones around the
  /// rotation sets intact and every set's read-only inputs bitwise as drawn, in one pass over the sets. A
  /// violation is this variant's (nothing else ran on the sets since the last check): `verdict` gets the
  /// judge's message and the sets are restored, so the next variant is timed and checked on the inputs as
  /// drawn, not on what this one left.
  Status check_rotation(std::string& verdict);
  /// The guard zones around the rotation sets, set 0 as drawn (its read tensors from the pristine copy, its
  /// write-only outputs random, never zeros) and every other set a copy of set 0.
  Status restore_rotation();

  /// "implausible_time: ..." when `median_us` is below what the spec's bytes need at the copy ceiling
  /// measured in this run (beyond the margin), else empty.
  std::string implausible(double median_us, double spread) const;

  // ---- shared by every step (measure.cu)
  /// The timing stream (graph capture needs a created one) and the L2 size, on first use.
  Status ensure_stream();

  /// Labels a CUDA failure of a variant; when the context is broken (a sticky error), marks it fatal.
  void cuda_failure(BenchResult& r, const std::string& prefix, const Status& st);

  Status ensure_events();

  // ---- the rounds' timers (measure_timing.cu)
  Status launch(Prepared& p) { return p.v->run(args[p.next++ % rotations].get(), stream); }

  /// What time_kernel does before its samples, once per finalist: warm-up, then the capture of `batch`
  /// launches when `graph` (the screen was graph-replayed: the rounds time the same way), `batch` sized
  /// from the fastest of three single launches.
  Status prepare_timer(Prepared& p, const TimingSettings& t, bool graph);

  /// `samples` samples of a prepared timer, after one untimed launch (the first after another
  /// finalist's round).
  Status sample_prepared(Prepared& p, int samples, Timed& out);

  // The host side of the groups to come, prepared on other cores (last: its workers read `specs`).
  PinnedStaging pinned;                 // before `prefetch`: its workers stage into it until they stop
  HostGroup::Staged group_staged;       // the current group's bytes in `pinned`, until they are uploaded
  std::unique_ptr<HostPrefetcher> prefetch;
  // The groups the run said it will begin (expect) from the next one on: asked again of the workers when
  // a group's preparation moves from the GPU to the host.
  std::vector<Upcoming> upcoming;
  std::size_t upcoming_next = 0;
  HostRequest host_request(const std::string& g_op, DType g_dtype, const Shape& g_shape, bool with_reference) const {
    HostRequest r;
    r.op = g_op;
    r.dtype = g_dtype;
    r.shape = g_shape;
    r.seed = shape_seed(run_seed, g_op, g_dtype, g_shape.key());
    // A reference that runs S on the GPU is computed when its group begins, on the measuring thread
    // (prepare_gate), from inputs the workers drew ahead; with wide values the drawing itself needs it.
    const Harness* h = HarnessRegistry::global().find(g_op);
    r.reference = wide_values || (with_reference && !(h && h->reference_uses_gpu()));
    r.wide = wide_values;
    // A group the GPU prepares: the host draws and computes it too when it is small, as a check of the GPU's
    // (when the gate needs the reference: rounds of timing only draw what the screens drew, checked then).
    if (h && device_preparation(g_op)) {
      if (with_reference && checked_on_host(*h, g_shape, g_dtype)) r.reference = true;
      else r.inputs = r.reference = false;
    }
    return r;
  }
  /// The op's DevicePreparation for its groups now, or null: none, wide values (the widening is the host's),
  /// or turned off for the run by a disagreement with the host.
  const DevicePreparation* device_preparation(const std::string& g_op) const {
    if (wide_values || preparation_off.count(g_op)) return nullptr;
    return HarnessRegistry::global().device_preparation(g_op);
  }
  /// Groups up to this many bytes of inputs and references are prepared on the host as well when the GPU
  /// prepares them (an op's groups of up to 16 or 128 tokens, by the size of its rows): a check on several
  /// shapes of each dtype per run. At 64 MiB (act-and-mul's 128 tokens too) the preparations on the GPU and
  /// their checks took 2.3-2.5 s of a ten-op tune.
  static constexpr std::size_t host_check_bytes = std::size_t{8} << 20;
  static bool checked_on_host(const Harness& h, const Shape& shape, DType dtype) {
    std::size_t bytes = 0;
    try {
      for (const TensorInfo& t : h.tensors(shape, dtype))
        bytes += (t.access != Access::write ? t.bytes() : 0) + (t.is_output() ? t.elements * sizeof(double) : 0);
    } catch (const std::exception&) {
      return true;  // the host prepares it, and its failure names the harness's reason
    }
    return bytes <= host_check_bytes;
  }
};

}  // namespace ktune::bench
