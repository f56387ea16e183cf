// ktune/timing.cuh: how ktune times a kernel, and the copy ceiling kernels are compared with.
//
// - CUDA events around the timed region; warm-up first; samples in rounds until the median is stable: the
//   last round moved it less than stable_rel, or the next could not, whatever its samples (median_settled).
// - Cold L2 by rotation: the caller lays out `rotations` independent input/output sets whose total is
//   more than twice the L2 (rotations_for_cold_l2), and each launch uses the next set.
// - Graph replay: a CUDA graph of `batch` launches (about `graph_sample_us` of work, at least 2) whose
//   first and last nodes record the two events, so a sample is the GPU's time from the first launch to
//   the end of the last, divided by `batch`: no host launch latency, whatever the kernel's length. A round's
//   replays go back to back, each between events of its own, synchronised once (replay_samples). Every
//   kernel is timed this way (a call that cannot be captured launch by launch, its latency included):
//   with plain launches above a threshold, two variants of one shape on either side of it differed by the
//   launch latency, and which of them won depended on which side its probe fell (seen on an H100: 16 us
//   against 22 us, in one order in one tune and the other in the next).
// - A replay repeats the same launches on the same sets. A batch of at least one rotation is made a whole
//   number of rotations (rotation_batch), so each replay takes up the rotation where the last left it and
//   every launch, the first included, finds L2 as the rotation leaves it. A shorter batch is preceded,
//   outside the timed region, by a read of twice the L2 (flush_l2): else the sets of one replay, batch x
//   set bytes, stay in L2 for the next whenever they fit, and a short kernel's time depends on the batch
//   its probe gave it.
// - A replay also has a fixed cost of its own, which each launch carries divided by the batch: calls to be
//   compared are given one figure to size their batch for (TimingOptions::batch_for_us), so they replay
//   the same number of launches (ktune/replay_batch.hpp).
// - The copy ceiling (DESIGN.md contract 8): the best of cudaMemcpyAsync device-to-device and a
//   16-bytes-per-thread copy kernel over at least 1 GiB, bytes read plus written, median of >= 10.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

#include "fill.cuh"
#include "launch.hpp"
#include "median.hpp"
#include "replay_batch.hpp"
#include "status.hpp"

namespace ktune {

struct TimingOptions {
  int warmup = 3;                 ///< untimed launches first
  int min_samples = 10;
  int max_samples = 200;
  double stable_rel = 0.005;      ///< stop when one more round moves, or could move, the median less than this
  double max_seconds = 2.0;       ///< wall budget of GPU time for the samples
  bool graph = true;              ///< graph replay with the events inside the graph (else launch by launch)
  double graph_sample_us = 500.0; ///< aim for a replay of about this long
  int max_batch = 256;
  /// > 0: the batch is sized for a call of this many us instead of the call's own probe, so every call
  /// given the same figure (a search gives one per shape) replays the same number of launches and carries
  /// the same share of a replay's fixed cost (ktune/replay_batch.hpp); 0: sized by the probe.
  double batch_for_us = 0;
  /// > 0: a call measured slower than this is not timed in full, and its result is marked abandoned (a
  /// search's clearly slower variant): the probe alone (the fastest of three single calls, launch latency
  /// included) when the probe is above this and above abandon_probe_min_us; else, under graph replay,
  /// the first round of samples when every one of them is above this.
  double abandon_above_us = 0;
  /// The probe decides alone only above this: below it the launch latency in a single call is a large
  /// part of its time, and only graph-replayed samples say whether the call itself is slower.
  double abandon_probe_min_us = 0;
  /// The probe is one single call instead of the fastest of three when that call took at least this long
  /// (0: always three). A screen's (bench/search.cpp) at 100 us: a slow launch (about 10 us) is at most a
  /// tenth of it, well inside the 1.3x a probe must exceed to stop the call, and a stopping probe is
  /// confirmed by two more.
  double probe_alone_us = 0;
};

struct TimingResult {
  double median_us = 0, min_us = 0, max_us = 0;
  int samples = 0;
  int batch = 1;        ///< launches per sample (>1 means graph replay)
  bool graph = false;
  double probe_us = 0;  ///< the fastest single call, event to event (it sizes the batch, or caps it)
  bool abandoned = false;  ///< above abandon_above_us: the probe alone (one sample) or the first round
  std::vector<double> samples_us;
  double spread() const { return median_us > 0 ? (max_us - min_us) / median_us : 0; }
};

/// How many disjoint sets of `bytes_per_call` make a rotation that leaves L2 cold (more than twice
/// the L2), capped so the sets fit in `max_bytes`.
inline std::size_t rotations_for_cold_l2(std::size_t bytes_per_call, std::size_t l2_bytes,
                                         std::size_t max_bytes = std::size_t{4} << 30) {
  if (bytes_per_call == 0) return 1;
  std::size_t r = (2 * l2_bytes) / bytes_per_call + 2;
  const std::size_t cap = std::max<std::size_t>(1, max_bytes / bytes_per_call);
  return std::min(r, cap);
}

namespace detail {
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  Status create() {
    KTUNE_CUDA_TRY(cudaEventCreate(&start));
    KTUNE_CUDA_TRY(cudaEventCreate(&stop));
    return Status::success();
  }
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

struct GraphGuard {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaGraphNode_t start_node = nullptr, stop_node = nullptr;  ///< a timed batch's event nodes (capture_timed_batch)
  GraphGuard() = default;
  GraphGuard(const GraphGuard&) = delete;
  GraphGuard& operator=(const GraphGuard&) = delete;
  ~GraphGuard() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

/// One pair of events per sample of a round, created as needed and kept for the next rounds.
class SampleEvents {
 public:
  SampleEvents() = default;
  SampleEvents(const SampleEvents&) = delete;
  SampleEvents& operator=(const SampleEvents&) = delete;
  ~SampleEvents() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  Status reserve(std::size_t pairs) {
    while (events_.size() < 2 * pairs) {
      cudaEvent_t e = nullptr;
      KTUNE_CUDA_TRY(cudaEventCreate(&e));
      events_.push_back(e);
    }
    return Status::success();
  }
  cudaEvent_t start(std::size_t i) const { return events_[2 * i]; }
  cudaEvent_t stop(std::size_t i) const { return events_[2 * i + 1]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// Templates so that every translation unit including this header may emit them (a plain __global__
// function defined in a header is a multiple definition at link time).
template <int = 0>
__global__ void empty_kernel() {}

/// Reads n 16-byte words through L2 (evicting what was there); the sink is written only when their XOR
/// is a value no data is meant to give, so the loads cannot be left out.
template <int = 0>
__global__ void l2_read_kernel(const uint4* __restrict__ p, std::size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

/// The current device's flush buffer: twice its L2, allocated on first use and kept for the process
/// (like the CUDA context it lives in), one per device.
struct L2FlushBuffer {
  uint4* words = nullptr;
  std::size_t n = 0;
};
inline Status l2_flush_buffer(L2FlushBuffer& out) {
  static std::mutex mutex;
  static std::map<int, L2FlushBuffer> buffers;
  int dev = 0, l2 = 0;
  KTUNE_CUDA_TRY(cudaGetDevice(&dev));
  std::lock_guard lock(mutex);
  if (const auto it = buffers.find(dev); it != buffers.end()) {
    out = it->second;
    return Status::success();
  }
  KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  L2FlushBuffer b;
  b.n = 2 * static_cast<std::size_t>(l2) / sizeof(uint4) + 1;  // + 1: the sink, the last word
  KTUNE_CUDA_TRY(cudaMalloc(&b.words, b.n * sizeof(uint4)));
  if (const cudaError_t e = cudaMemset(b.words, 0, b.n * sizeof(uint4)); e != cudaSuccess) {
    const Status failed = Status::from_cuda_call(e, "cudaMemset(L2 flush buffer)");
    (void)cudaFree(b.words);
    return failed;
  }
  out = buffers[dev] = b;
  return Status::success();
}

template <int = 0>
__global__ void copy16_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
}  // namespace detail

/// Evicts L2 on `stream`: reads twice its size from a buffer nothing else uses, so the next kernel
/// finds none of its data there and no dirty lines to write back.
inline Status flush_l2(cudaStream_t stream) {
  detail::L2FlushBuffer b;
  KTUNE_TRY(detail::l2_flush_buffer(b));
  const std::size_t n = b.n - 1;
  const LaunchShape shape{dim3(static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 4096))), dim3(256)};
  return ktune::launch(detail::l2_read_kernel<>, shape, stream, b.words, n, reinterpret_cast<unsigned*>(b.words + n));
}

namespace detail {
/// One call between two events, waited for: its time in `us`, its launch latency included.
template <class Enqueue>
Status single_call(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, Enqueue&& enqueue, double& us) {
  KTUNE_CUDA_TRY(cudaEventRecord(start, stream));
  KTUNE_TRY(enqueue());
  KTUNE_CUDA_TRY(cudaEventRecord(stop, stream));
  KTUNE_CUDA_TRY(cudaEventSynchronize(stop));
  float ms = 0;
  KTUNE_CUDA_TRY(cudaEventElapsedTime(&ms, start, stop));
  us = ms * 1e3;
  return Status::success();
}

/// The fastest of three single calls, in `us`: it sizes the batch (one slow launch, seen on an H200 at
/// twice a 10 us kernel's time, would make it too small). The first alone when it took at least `alone_us`
/// (a slow launch is then a small part of it) and at most `until_us` (a probe that would stop the call is
/// confirmed by the other two).
template <class Enqueue>
Status fastest_single_call(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, Enqueue&& enqueue, double& us,
                           double alone_us = std::numeric_limits<double>::infinity(),
                           double until_us = std::numeric_limits<double>::infinity()) {
  for (int probe = 0; probe < 3; ++probe) {
    double one = 0;
    KTUNE_TRY(single_call(stream, start, stop, enqueue, one));
    us = probe == 0 ? one : std::min(us, one);
    if (probe == 0 && us >= alone_us && us <= until_us) break;
  }
  return Status::success();
}

/// The event nodes a captured timed batch begins (its one root) and ends with (its last node, in practice
/// the last of cudaGraphGetNodes's list, which is searched from the end).
inline bool find_event_nodes(cudaGraph_t graph, cudaEvent_t start, cudaEvent_t stop, cudaGraphNode_t& start_node,
                             cudaGraphNode_t& stop_node) {
  auto records = [](cudaGraphNode_t node, cudaEvent_t event) {
    cudaGraphNodeType type{};
    cudaEvent_t e = nullptr;
    return cudaGraphNodeGetType(node, &type) == cudaSuccess && type == cudaGraphNodeTypeEventRecord &&
           cudaGraphEventRecordNodeGetEvent(node, &e) == cudaSuccess && e == event;
  };
  std::size_t n = 1;
  if (cudaGraphGetRootNodes(graph, &start_node, &n) != cudaSuccess || n != 1 || !records(start_node, start)) return false;
  if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess) return false;
  std::vector<cudaGraphNode_t> nodes(n);
  if (cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) return false;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it)
    if (records(*it, stop)) {
      stop_node = *it;
      return true;
    }
  return false;
}

/// `n` replays of a timed batch back to back, each between a pair of events of its own (the graph's event
/// nodes are pointed at the pair before its launch: a change affects only later launches), `before()` ahead
/// of each (outside the timed region: an L2 flush), then one synchronisation: the GPU waits for no host round
/// trip between samples (a traced ten-op tune on an H200 found 5.5 s of its rounds in such gaps of 10-200 us,
/// the trace's own cost included, when each sample was synchronised alone). Appends each sample's time per
/// launch to `us`.
template <class Before>
Status replay_samples(cudaStream_t stream, const GraphGuard& g, int batch, int n, SampleEvents& ev, Before&& before,
                      std::vector<double>& us) {
  KTUNE_TRY(ev.reserve(static_cast<std::size_t>(n)));
  for (int i = 0; i < n; ++i) {
    KTUNE_TRY(before());
    KTUNE_CUDA_TRY(cudaGraphExecEventRecordNodeSetEvent(g.exec, g.start_node, ev.start(static_cast<std::size_t>(i))));
    KTUNE_CUDA_TRY(cudaGraphExecEventRecordNodeSetEvent(g.exec, g.stop_node, ev.stop(static_cast<std::size_t>(i))));
    KTUNE_CUDA_TRY(cudaGraphLaunch(g.exec, stream));
  }
  KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
  for (int i = 0; i < n; ++i) {
    float ms = 0;
    KTUNE_CUDA_TRY(cudaEventElapsedTime(&ms, ev.start(static_cast<std::size_t>(i)), ev.stop(static_cast<std::size_t>(i))));
    us.push_back(ms * 1e3 / batch);
  }
  return Status::success();
}

/// Captures `start`, `batch` calls of enqueue() and `stop` on `stream` into g, instantiates and uploads
/// it: a replay's elapsed time between the two events is the GPU's time for the batch alone. False, with
/// the stream out of capture, no error of its own left set and no g.exec, when the calls cannot be captured.
template <class Enqueue>
bool capture_timed_batch(cudaStream_t stream, int batch, cudaEvent_t start, cudaEvent_t stop, Enqueue&& enqueue,
                         GraphGuard& g) {
  const detail::LastErrorScope last_error;  // a failure here is an answer (false), not the caller's error
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    last_error.settle();
    return false;
  }
  bool ok = cudaEventRecordWithFlags(start, stream, cudaEventRecordExternal) == cudaSuccess;
  for (int i = 0; i < batch && ok; ++i) ok = enqueue().ok();
  ok = ok && cudaEventRecordWithFlags(stop, stream, cudaEventRecordExternal) == cudaSuccess;
  const cudaError_t end = cudaStreamEndCapture(stream, &g.graph);  // always: the stream leaves capture
  ok = ok && end == cudaSuccess && find_event_nodes(g.graph, start, stop, g.start_node, g.stop_node) &&
       cudaGraphInstantiate(&g.exec, g.graph, 0) == cudaSuccess && cudaGraphUpload(g.exec, stream) == cudaSuccess;
  if (!ok && g.exec) {  // instantiated but not uploaded: no half-made graph for the caller to launch
    cudaGraphExecDestroy(g.exec);
    g.exec = nullptr;
  }
  last_error.settle();
  return ok;
}
}  // namespace detail

/// Times `launch(rotation)` (a callable returning Status that enqueues one call on `stream` using
/// input/output set `rotation % rotations`). Graph replay captures `stream`, so it must be a created
/// stream: the legacy default stream (nullptr) cannot be captured.
template <class Launch>
Status time_kernel(Launch&& launch, std::size_t rotations, cudaStream_t stream, const TimingOptions& opt,
                   TimingResult& out) {
  out = TimingResult{};
  if (opt.graph && stream == nullptr)
    return Status::invalid("time_kernel: graph replay needs a created stream, not the legacy default stream");
  if (rotations == 0) rotations = 1;
  std::size_t next = 0;
  auto enqueue = [&]() -> Status { return launch(next++ % rotations); };

  for (int i = 0; i < opt.warmup; ++i) KTUNE_TRY(enqueue());
  KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));

  detail::EventPair ev;
  KTUNE_TRY(ev.create());

  const double stop_above = opt.abandon_above_us > 0 ? std::max(opt.abandon_above_us, opt.abandon_probe_min_us)
                                                    : std::numeric_limits<double>::infinity();
  double one_us = 0;
  KTUNE_TRY(detail::fastest_single_call(stream, ev.start, ev.stop, enqueue, one_us,
                                        opt.probe_alone_us > 0 ? opt.probe_alone_us : std::numeric_limits<double>::infinity(),
                                        stop_above));
  out.probe_us = one_us;
  if (one_us > stop_above) {
    out.abandoned = true;
    out.samples = 1;
    out.samples_us = {one_us};
    out.median_us = out.min_us = out.max_us = one_us;
    return Status::success();
  }

  detail::GraphGuard g;
  int batch = 1;
  if (opt.graph) {
    const int b = rotation_batch(replay_batch(opt.graph_sample_us, opt.max_batch, opt.batch_for_us, one_us),
                                 rotations, opt.max_batch);
    if (detail::capture_timed_batch(stream, b, ev.start, ev.stop, enqueue, g)) {
      // Warms the graph itself, and leaves L2 as the replays' rotation does (whatever ran before). Not waited
      // for: the first round's replays follow it back to back and are synchronised with it.
      KTUNE_CUDA_TRY(cudaGraphLaunch(g.exec, stream));
      out.graph = true;
      batch = b;
    }
  }
  out.batch = batch;
  const bool flush = out.graph && replay_needs_flush(batch, rotations);

  double spent_us = 0, last_median = -1;
  detail::SampleEvents pairs;
  // A round of n samples: under graph replay back to back (detail::replay_samples); else each launch alone,
  // synchronised, so that its launch latency is in its sample as in every other.
  auto take = [&](int n) -> Status {
    const std::size_t had = out.samples_us.size();
    if (out.graph) {
      KTUNE_TRY(detail::replay_samples(
          stream, g, batch, n, pairs, [&] { return flush ? flush_l2(stream) : Status::success(); }, out.samples_us));
    } else {
      for (int i = 0; i < n; ++i) {
        double us = 0;
        KTUNE_TRY(detail::single_call(stream, ev.start, ev.stop, enqueue, us));
        out.samples_us.push_back(us);
      }
    }
    for (std::size_t i = had; i < out.samples_us.size(); ++i) spent_us += out.samples_us[i] * batch;
    return Status::success();
  };

  // Samples come a round at a time, half the minimum; the first round has at least three, so that a call
  // stopped after it (below) was above the limit three times, not once.
  const int round = std::max(1, opt.min_samples / 2), first_round = std::max(3, round);
  while (static_cast<int>(out.samples_us.size()) < opt.max_samples) {
    KTUNE_TRY(take(out.samples_us.empty() ? first_round : round));
    // Every replay of the first round above the limit: the call is slower, whatever its later samples.
    if (opt.abandon_above_us > 0 && out.graph && static_cast<int>(out.samples_us.size()) == first_round &&
        *std::min_element(out.samples_us.begin(), out.samples_us.end()) > opt.abandon_above_us) {
      out.abandoned = true;
      break;
    }
    if (static_cast<int>(out.samples_us.size()) < opt.min_samples) continue;
    const double m = median_of(out.samples_us);
    const bool stable = (last_median > 0 && std::fabs(m - last_median) <= opt.stable_rel * m) ||
                        median_settled(out.samples_us, static_cast<std::size_t>(round), opt.stable_rel);
    last_median = m;
    if (stable || spent_us > opt.max_seconds * 1e6) break;
  }
  out.samples = static_cast<int>(out.samples_us.size());
  out.median_us = median_of(out.samples_us);
  out.min_us = *std::min_element(out.samples_us.begin(), out.samples_us.end());
  out.max_us = *std::max_element(out.samples_us.begin(), out.samples_us.end());
  return Status::success();
}

/// An empty kernel (one warp) timed exactly as time_kernel times everything else: the floor for
/// launch-bound shapes. `stream` must be a created stream when opt.graph is set.
inline Status time_empty_kernel(cudaStream_t stream, const TimingOptions& opt, TimingResult& out) {
  return time_kernel(
      [&](std::size_t) -> Status { return ktune::launch(detail::empty_kernel<>, LaunchShape{dim3(1), dim3(32)}, stream); },
      1, stream, opt, out);
}

struct CopyCeiling {
  std::size_t bytes = 0;            ///< bytes copied per call (moved = 2x: read + written)
  double memcpy_gbps = 0;           ///< cudaMemcpyAsync device-to-device
  double kernel_gbps = 0;           ///< 16 bytes per thread copy kernel
  double best_gbps() const { return std::max(memcpy_gbps, kernel_gbps); }
};

/// Measures the copy ceiling over `bytes` (>= 1 GiB by contract) with random (non-zero) data.
inline Status measure_copy_ceiling(CopyCeiling& out, std::size_t bytes = std::size_t{1} << 30, int reps = 10,
                                   cudaStream_t stream = nullptr) {
  out = CopyCeiling{};
  bytes = (bytes + 15) / 16 * 16;
  out.bytes = bytes;
  void* src = nullptr;
  void* dst = nullptr;
  KTUNE_CUDA_TRY(cudaMalloc(&src, bytes));
  const cudaError_t e = cudaMalloc(&dst, bytes);
  if (e != cudaSuccess) {
    const Status failed = Status::from_cuda_call(e, "cudaMalloc(copy ceiling destination)");
    (void)cudaFree(src);
    return failed;
  }
  auto run = [&]() -> Status {
    KTUNE_TRY(fill_uniform(static_cast<float*>(src), bytes / 4, 0x5eed, -1.f, 1.f, stream));
    TimingOptions opt;
    opt.graph = false;
    opt.min_samples = std::max(10, reps);
    opt.max_samples = std::max(10, reps);
    TimingResult t;
    KTUNE_TRY(time_kernel(
        [&](std::size_t) -> Status {
          KTUNE_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
          return Status::success();
        },
        1, stream, opt, t));
    out.memcpy_gbps = 2.0 * bytes / (t.median_us * 1e3);
    const std::size_t n = bytes / 16;
    const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    KTUNE_TRY(time_kernel(
        [&](std::size_t) -> Status {
          return ktune::launch(detail::copy16_kernel<>, LaunchShape{dim3(blocks), dim3(256)}, stream,
                               static_cast<const uint4*>(src), static_cast<uint4*>(dst), n);
        },
        1, stream, opt, t));
    out.kernel_gbps = 2.0 * bytes / (t.median_us * 1e3);
    return Status::success();
  };
  const Status st = run();
  cudaFree(src);
  cudaFree(dst);
  return st;
}

}  // namespace ktune
