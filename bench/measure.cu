// bench/measure.cu: the GPU half of ktune_bench (see measure.hpp).
//
// Per shape group: the harness draws one set of inputs for a seed derived from the run's seed and the
// (op, dtype, shape), the float64 reference is computed once from them, and a rotation arena holds
// `rotations` independent input/output sets (more than twice the L2 in total, so each timed launch
// starts with a cold L2). A pristine device copy of the inputs restores set 0 before every gate, so a
// variant that writes into its inputs (in-place ops, or a bug) cannot spoil the next variant's check.
#include "measure.hpp"

#include "plan.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include <ktune/device_check.hpp>
#include <ktune/fill.cuh>
#include <ktune/harness.hpp>
#include <ktune/judge.hpp>
#include <ktune/registry.hpp>
#include <ktune/timing.cuh>
#include <ktune/verify.hpp>

#include "buffer_checks.cuh"
#include "device_compare.cuh"
#include "retest.hpp"

namespace ktune::bench {

namespace {

constexpr std::size_t tensor_alignment = 256;   // what cudaMalloc gives: full-width vector paths apply
constexpr std::size_t compare_chunk = reference_chunk;
using judge::implausible_margin;
using judge::work_time_factor;

std::string describe(const Status& st) {
  std::string s = st.message;
  if (st.cuda != cudaSuccess) s += std::string(" (") + cudaGetErrorName(st.cuda) + ": " + cudaGetErrorString(st.cuda) + ")";
  return s;
}

TimingOptions to_options(const TimingSettings& t) {
  TimingOptions o;
  o.warmup = t.warmup;
  o.min_samples = t.min_samples;
  o.max_samples = t.max_samples;
  o.stable_rel = t.stable_rel;
  o.max_seconds = t.max_seconds;
  o.graph = t.graph;
  o.graph_below_us = t.graph_below_us;
  o.graph_sample_us = t.graph_sample_us;
  o.max_batch = t.max_batch;
  return o;
}

Timed to_timed(const TimingResult& r) { return {r.median_us, r.min_us, r.max_us, r.samples, r.batch}; }

/// Calls f(T{}) with the storage type of a tensor: fp32 tensors are float whatever the op's dtype.
template <class F>
decltype(auto) visit_tensor_type(const TensorInfo& t, DType dtype, F&& f) {
  if (t.element_bytes == 4) return f(float{});
  return visit_dtype(dtype, std::forward<F>(f));
}

/// ktune::compare over chunks on several threads. Merging is exact for passing outputs; for failing
/// ones rel_l2 can differ slightly from a single pass (the failure itself is exact).
template <class T>
Comparison compare_parallel(const T* out, const std::vector<double>& ref, const std::vector<double>& ref2_chunks,
                            Tolerance tol) {
  const std::size_t n = ref.size();
  const std::size_t chunks = (n + compare_chunk - 1) / compare_chunk;
  if (chunks <= 1) return compare(out, ref.data(), n, tol);
  std::vector<Comparison> part(chunks);
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t workers = std::min<std::size_t>({chunks, hw, 32});
  auto work = [&](std::size_t w) {
    for (std::size_t c = w; c < chunks; c += workers) {
      const std::size_t begin = c * compare_chunk;
      part[c] = compare(out + begin, ref.data() + begin, std::min(compare_chunk, n - begin), tol);
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool) t.join();

  Comparison c;
  double err2 = 0, ref2 = 0;
  for (std::size_t k = 0; k < chunks; ++k) {
    const Comparison& p = part[k];
    c.count += p.count;
    c.unwritten += p.unwritten;
    c.mismatched += p.mismatched;
    if (c.first_unwritten == static_cast<std::size_t>(-1) && p.first_unwritten != static_cast<std::size_t>(-1))
      c.first_unwritten = k * compare_chunk + p.first_unwritten;
    if (c.first_bad == static_cast<std::size_t>(-1) && p.first_bad != static_cast<std::size_t>(-1)) {
      c.first_bad = k * compare_chunk + p.first_bad;
      c.first_bad_value = p.first_bad_value;
      c.first_bad_ref = p.first_bad_ref;
    }
    c.max_abs = std::max(c.max_abs, p.max_abs);
    err2 += p.rel_l2 * p.rel_l2 * (ref2_chunks[k] > 0 ? ref2_chunks[k] : 1.0);
    ref2 += ref2_chunks[k];
  }
  c.rel_l2 = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  c.passed = c.mismatched == 0 && c.rel_l2 <= tol.rel_l2;
  return c;
}

}  // namespace

const char* PhaseTimes::name(int p) {
  switch (p) {
    case prepare: return "prepare";
    case gate: return "gate";
    case timing: return "timing";
    case verify: return "verify";
    default: return "?";
  }
}

namespace {
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Adds the wall and process CPU time of its lifetime to one phase.
class PhaseScope {
 public:
  PhaseScope(PhaseTimes& p, int phase) : p_(p), phase_(phase), wall_(std::chrono::steady_clock::now()), cpu_(cpu_seconds()) {}
  ~PhaseScope() {
    p_.wall_s[phase_] += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
    p_.cpu_s[phase_] += cpu_seconds() - cpu_;
  }

 private:
  PhaseTimes& p_;
  int phase_;
  std::chrono::steady_clock::time_point wall_;
  double cpu_;
};

/// Whether two comparisons of one output say the same (rel_l2 summed in another order: last bits).
bool same_verdict(const Comparison& a, const Comparison& b) {
  const double scale = std::max({std::fabs(a.rel_l2), std::fabs(b.rel_l2), 1e-300});
  return a.passed == b.passed && a.count == b.count && a.unwritten == b.unwritten && a.mismatched == b.mismatched &&
         a.first_bad == b.first_bad && a.first_unwritten == b.first_unwritten && a.max_abs == b.max_abs &&
         (std::fabs(a.rel_l2 - b.rel_l2) <= 1e-6 * scale || (std::isnan(a.rel_l2) && std::isnan(b.rel_l2)));
}
}  // namespace

Status query_device_context(DeviceContext& out) {
  out = DeviceContext{};
  KTUNE_CUDA_TRY(cudaGetDevice(&out.ordinal));
  cudaDeviceProp p{};
  KTUNE_CUDA_TRY(cudaGetDeviceProperties(&p, out.ordinal));
  out.name = p.name;
  out.arch = p.major * 10 + p.minor;
  out.sms = p.multiProcessorCount;
  out.l2_bytes = p.l2CacheSize;
  // CUDA 13's cudaDeviceProp has no clock fields (DESIGN.md): ask for the attributes.
  KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&out.sm_clock_khz, cudaDevAttrClockRate, out.ordinal));
  KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&out.mem_clock_khz, cudaDevAttrMemoryClockRate, out.ordinal));
  KTUNE_CUDA_TRY(cudaDriverGetVersion(&out.driver_version));
  KTUNE_CUDA_TRY(cudaRuntimeGetVersion(&out.runtime_version));
  return Status::success();
}

Status measure_baselines(const TimingSettings& timing, Baselines& out) {
  out = Baselines{};
  CopyCeiling copy;
  KTUNE_TRY(measure_copy_ceiling(copy));
  out.copy_bytes = static_cast<double>(copy.bytes);
  out.copy_memcpy_gbps = copy.memcpy_gbps;
  out.copy_kernel_gbps = copy.kernel_gbps;
  const double us = 2.0 * static_cast<double>(copy.bytes) / (copy.best_gbps() * 1e3);
  out.copy = {us, us, us, 10, 1};

  cudaStream_t stream = nullptr;
  KTUNE_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));  // graph capture needs one
  TimingResult r;
  const Status st = time_empty_kernel(stream, to_options(timing), r);
  cudaStreamDestroy(stream);
  KTUNE_TRY(st);
  out.empty = to_timed(r);
  return Status::success();
}

std::uint64_t shape_seed(std::uint64_t run_seed, const std::string& op, DType dtype, const std::string& shape_key) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const std::string& s : {op, std::string(name(dtype)), shape_key}) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ '/') * 0x100000001b3ull;
  }
  return mix64(run_seed ^ h) & ((std::uint64_t{1} << 53) - 1);
}

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
  char* arena = nullptr;                // rotations x set_bytes
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
  Status upload(void* dst, const void* src, std::size_t bytes) {
    if (bytes < (std::size_t{4} << 20))
      return Status::from_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    KTUNE_CUDA_TRY(kept_staging.reserve(2 * staging_half));
    for (cudaEvent_t& e : staged)
      if (!e) KTUNE_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    for (std::size_t off = 0, k = 0; off < bytes; off += staging_half, ++k) {
      const std::size_t n = std::min(staging_half, bytes - off);
      char* half = kept_staging.data() + (k % 2) * staging_half;
      KTUNE_CUDA_TRY(cudaEventSynchronize(staged[k % 2]));  // the copy engine is done with this half
      const char* from = static_cast<const char*>(src) + off;
      constexpr std::size_t parts = 4;
      const std::size_t part = (n + parts - 1) / parts;
      std::vector<std::thread> helpers;
      for (std::size_t i = 1; i < parts && i * part < n; ++i)
        helpers.emplace_back([=] { std::memcpy(half + i * part, from + i * part, std::min(part, n - i * part)); });
      std::memcpy(half, from, std::min(part, n));
      for (std::thread& t : helpers) t.join();
      KTUNE_CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(dst) + off, half, n, cudaMemcpyHostToDevice, stream));
      KTUNE_CUDA_TRY(cudaEventRecord(staged[k % 2], stream));
    }
    return Status::success();
  }
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
  double launch_floor_us = -1;          // one empty launch between two events, the fastest of five

  // The gate on the device: the reference of each output, uploaded once per shape.
  bool device_compare = false;
  bool device_compare_off = false;      // a disagreement with the host turned it off for the run
  bool cross_checked = false;           // this shape's first gate was compared on the host as well
  std::vector<double*> reference_dev;
  DeviceCompareScratch scratch;

  // The halving search: the screen's settings, and per finalist a timer prepared on its first round.
  TimingSettings screen = screen_timing(false), rounds = full_timing();
  struct Prepared {
    const Variant* v = nullptr;
    std::size_t next = 0;               // the next rotation set
    int batch = 1;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    Prepared() = default;
    Prepared(const Prepared&) = delete;
    Prepared& operator=(const Prepared&) = delete;
    ~Prepared() {
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
    }
  };
  std::map<std::string, std::unique_ptr<Prepared>> prepared;
  cudaEvent_t ev_start = nullptr, ev_stop = nullptr;

  PhaseTimes phases;
  std::vector<std::string> warnings;

  void* tensor_ptr(std::size_t set, std::size_t t) const { return arena + set * set_bytes + offsets[t]; }

  void release() {
    prepared.clear();  // the graphs hold pointers into the arena
    reference_dev.clear();
    cross_checked = false;
    args.clear();  // Args may own nothing on the device, but drop them before the memory they point to
    arena = pristine = host_out = nullptr;  // their kept buffers stay for the next group
    gate_args.reset();
    for (void* p : gate_allocs) cudaFree(p);
    gate_arena = nullptr;
    gate_arena_bytes = 0;
    gate_allocs.clear();
    gate_ptr.clear();
    input_digest.clear();
    gate_dirty = true;
    if (prefetch) {  // the group's host memory is freed by a worker, not on the measuring thread
      HostGroup old;
      old.inputs = std::move(host_inputs);
      old.reference = std::move(reference);
      old.norms = std::move(ref_norms);
      prefetch->discard(std::move(old));
    }
    host_inputs.clear();
    reference.clear();
    ref_norms.clear();
    tensors.clear();
    offsets.clear();
    outputs.clear();
    host_offsets.clear();
    harness = nullptr;
    checked = nullptr;
    bytes_moved = 0;
    seed = 0;
    set_bytes = 0;
    rotations = 1;
  }

  /// The gate set before a checked run: write-only outputs poisoned, in-place tensors as drawn, and
  /// after a run that broke something (or the first), the guard zones and the read-only inputs too.
  Status reset_gate() {
    if (gate_dirty && gate_arena)
      KTUNE_TRY(fill_bits(reinterpret_cast<float*>(gate_arena), gate_arena_bytes / 4, guard_word, stream));
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      const TensorInfo& ti = tensors[t];
      if (ti.access == Access::write) {
        KTUNE_TRY(visit_tensor_type(ti, dtype, [&](auto e) {
          using T = decltype(e);
          return fill_bits(reinterpret_cast<T*>(gate_ptr[t]), ti.elements, poison_bits<T>(), stream);
        }));
      } else if ((ti.access == Access::read_write || gate_dirty) && ti.bytes()) {
        KTUNE_CUDA_TRY(cudaMemcpyAsync(gate_ptr[t], pristine + offsets[t], ti.bytes(), cudaMemcpyDeviceToDevice, stream));
      }
    }
    gate_dirty = false;
    return Status::success();
  }

  /// After a checked run: every guard zone bitwise intact and every read-only input bitwise as drawn
  /// (`verdict` gets the judge's message for the first violation, empty when none), and the digests of
  /// the outputs (in outputs order). Two synchronisations whatever the number of tensors.
  Status check_buffers(const std::string& when, std::string& verdict, std::vector<std::uint64_t>& output_digests) {
    verdict.clear();
    if (gate_arena) {
      std::vector<Span> zones;
      for (std::size_t t = 0; t < tensors.size(); ++t) {
        const std::size_t bytes = tensors[t].bytes();
        const std::size_t after = (bytes + tensor_alignment - 1) / tensor_alignment * tensor_alignment - bytes + guard_bytes;
        zones.push_back({gate_ptr[t] - guard_bytes, guard_bytes, 0});
        zones.push_back({gate_ptr[t] + bytes, after, static_cast<std::size_t>(gate_ptr[t] + bytes - gate_arena) % 4});
      }
      std::size_t zone = SIZE_MAX, first = SIZE_MAX;
      KTUNE_TRY(check_guards(zones, stream, check_scratch, zone, first));
      if (zone != SIZE_MAX) {
        const TensorInfo& ti = tensors[zone / 2];
        verdict = judge::message(judge::Verdict::out_of_bounds_write,
                                 zone % 2 == 0 ? ti.name + ": the guard zone before it changed, first at byte " +
                                                     std::to_string(static_cast<long long>(first) - static_cast<long long>(guard_bytes)) +
                                                     " (bytes before its first byte count from -1) " + when
                                               : ti.name + ": the guard zone after it changed, first at byte +" + std::to_string(first) +
                                                     " past its end (" + std::to_string(ti.bytes()) + " bytes) " + when);
        gate_dirty = true;
        return Status::success();
      }
    }
    std::vector<Span> spans;
    std::vector<std::size_t> inputs;
    for (std::size_t t = 0; t < tensors.size(); ++t)
      if (tensors[t].access == Access::read) {
        inputs.push_back(t);
        spans.push_back({gate_ptr[t], tensors[t].bytes(), 0});
      }
    for (std::size_t t : outputs) spans.push_back({gate_ptr[t], tensors[t].bytes(), 0});
    std::vector<std::uint64_t> d;
    KTUNE_TRY(digests(spans, stream, check_scratch, d));
    output_digests.assign(d.begin() + static_cast<std::ptrdiff_t>(inputs.size()), d.end());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::size_t t = inputs[i];
      if (d[i] == input_digest[t]) continue;
      std::size_t first = SIZE_MAX;
      KTUNE_TRY(first_difference(gate_ptr[t], pristine + offsets[t], tensors[t].bytes(), stream, check_scratch, first));
      verdict = judge::message(judge::Verdict::input_modified, tensors[t].name + " is read-only but changed, first at byte " +
                                                                   std::to_string(first) + " of " + std::to_string(tensors[t].bytes()) +
                                                                   " " + when);
      gate_dirty = true;
      break;
    }
    return Status::success();
  }

  /// The fastest of five single empty launches between two events: what a plain launch costs on top
  /// of the kernel, once per process.
  /// The least one call takes as verify_work times it: an empty kernel between two event nodes of a
  /// graph captured, instantiated and uploaded just before (a graph's first launch pays the GPU's own
  /// start-up of its nodes: about 12 us seen on an H200 for a 3.7 us call), or launched plainly between
  /// two events (a call that cannot be captured). The larger of the two, each the fastest of five.
  Status launch_floor(double& us) {
    if (launch_floor_us < 0) {
      KTUNE_TRY(ensure_events());
      double plain = -1, graphed = -1;
      for (int i = 0; i < 5; ++i) {
        KTUNE_CUDA_TRY(cudaEventRecord(ev_start, stream));
        ktune::detail::empty_kernel<><<<1, 32, 0, stream>>>();
        KTUNE_CUDA_TRY(cudaGetLastError());
        KTUNE_CUDA_TRY(cudaEventRecord(ev_stop, stream));
        KTUNE_CUDA_TRY(cudaEventSynchronize(ev_stop));
        float ms = 0;
        KTUNE_CUDA_TRY(cudaEventElapsedTime(&ms, ev_start, ev_stop));
        plain = i == 0 ? ms * 1e3 : std::min(plain, ms * 1e3);

        ktune::detail::GraphGuard g;
        KTUNE_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        cudaError_t e = cudaEventRecordWithFlags(ev_start, stream, cudaEventRecordExternal);
        if (e == cudaSuccess) {
          ktune::detail::empty_kernel<><<<1, 32, 0, stream>>>();
          e = cudaGetLastError();
        }
        if (e == cudaSuccess) e = cudaEventRecordWithFlags(ev_stop, stream, cudaEventRecordExternal);
        const cudaError_t end = cudaStreamEndCapture(stream, &g.graph);  // always: the stream leaves capture
        KTUNE_CUDA_TRY(e);
        KTUNE_CUDA_TRY(end);
        KTUNE_CUDA_TRY(cudaGraphInstantiate(&g.exec, g.graph, 0));
        KTUNE_CUDA_TRY(cudaGraphUpload(g.exec, stream));
        KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
        KTUNE_CUDA_TRY(cudaGraphLaunch(g.exec, stream));
        KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
        KTUNE_CUDA_TRY(cudaEventElapsedTime(&ms, ev_start, ev_stop));
        graphed = i == 0 ? ms * 1e3 : std::min(graphed, ms * 1e3);
      }
      launch_floor_us = std::max(plain, graphed);
    }
    us = launch_floor_us;
    return Status::success();
  }

  /// The judge's check of timed calls (docs/judge.md, "the timed calls do the work"): two rotation sets
  /// get their inputs checked and their write-only outputs overwritten with fresh random numbers (not
  /// NaN: "compute only where the output is not a number" must skip here too), their in-place tensors
  /// restored; one call each, as the timing made it. Their outputs must be bitwise the checked call's
  /// (the gate's digests), and a call must not take much longer than the timed calls did each.
  Status verify_work(const Variant& v, const std::string& name, double median_us, std::string& verdict) {
    verdict.clear();
    const auto known = gate_digests.find(name);
    if (known == gate_digests.end()) {
      verdict = judge::message(judge::Verdict::error, "no checked call of " + v.id + " to verify its timed calls against");
      return Status::success();
    }
    double floor_us = 0;
    KTUNE_TRY(launch_floor(floor_us));
    // One call as the judge checks it must not be much slower than the timed ones were each: a variant
    // that computes only when it must (a sampled row that looks stale, say) was timed skipping work.
    const double allowed_us = work_time_factor * median_us + 2 * floor_us;
    std::vector<std::size_t> sets{0};
    if (rotations > 1) sets.push_back(rotations / 2);
    double fastest_us = -1;
    // A single call of a few microseconds can be slow once (the GPU busy with another process, a graph's
    // first launch): the check runs again, up to three times, before it blames the variant. Skipped work
    // stays skipped: each run starts from outputs refilled with random numbers.
    for (int attempt = 0; attempt < 3 && !(fastest_us >= 0 && fastest_us <= allowed_us); ++attempt)
    for (std::size_t set : sets) {
      // The call as a graph where it can be captured (the timing captured short kernels too), so the
      // adapter's host work does not count as the call's time; the outputs are overwritten after the
      // capture, so work that ran during it (a kernel put on a stream of the variant's own, which no
      // graph of the call holds) does not count either.
      // The two events are nodes of the graph, around the call: the time is the GPU's, not the host's
      // to submit the graph (a busy host, such as the workers preparing later groups, adds nothing),
      // and the graph is uploaded first so its first launch pays no upload either.
      KTUNE_TRY(ensure_events());
      ktune::detail::GraphGuard g;
      if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
        const bool first = cudaEventRecordWithFlags(ev_start, stream, cudaEventRecordExternal) == cudaSuccess;
        const Status captured = v.run(args[set].get(), stream);
        const bool last = cudaEventRecordWithFlags(ev_stop, stream, cudaEventRecordExternal) == cudaSuccess;
        const cudaError_t end = cudaStreamEndCapture(stream, &g.graph);
        if (!first || !captured.ok() || !last || end != cudaSuccess ||
            cudaGraphInstantiate(&g.exec, g.graph, 0) != cudaSuccess || cudaGraphUpload(g.exec, stream) != cudaSuccess) {
          if (g.exec) cudaGraphExecDestroy(g.exec);
          g.exec = nullptr;
        }
      }
      (void)cudaGetLastError();  // a call that cannot be captured is launched plainly below
      KTUNE_CUDA_TRY(cudaDeviceSynchronize());  // whatever ran during the capture is done before the refill
      for (std::size_t t = 0; t < tensors.size(); ++t) {
        const TensorInfo& ti = tensors[t];
        if (ti.access == Access::read_write && ti.bytes()) {
          KTUNE_CUDA_TRY(cudaMemcpyAsync(tensor_ptr(set, t), pristine + offsets[t], ti.bytes(), cudaMemcpyDeviceToDevice, stream));
        } else if (ti.access == Access::write) {
          const std::uint64_t draw = mix64(seed ^ 0x7e57ed5e7ull ^ ++verify_draws);
          KTUNE_TRY(visit_tensor_type(ti, dtype, [&](auto e) {
            using T = decltype(e);
            return fill_uniform(static_cast<T*>(tensor_ptr(set, t)), ti.elements, draw, -1.f, 1.f, stream);
          }));
        }
      }
      Status launched;  // after the refill on this stream; the graph's own events leave the refill out
      if (g.exec) {
        launched = Status::from_cuda(cudaGraphLaunch(g.exec, stream), "cudaGraphLaunch");
      } else {  // a call that cannot be captured: timed from the host's side, launches included
        launched = Status::from_cuda(cudaEventRecord(ev_start, stream), "cudaEventRecord");
        if (launched.ok()) launched = v.run(args[set].get(), stream);
        if (launched.ok()) launched = Status::from_cuda(cudaEventRecord(ev_stop, stream), "cudaEventRecord");
      }
      // The whole device: work a variant put on a stream of its own must have finished too.
      if (launched.ok()) launched = Status::from_cuda(cudaDeviceSynchronize(), "the verified call");
      KTUNE_TRY(launched);
      float ms = 0;
      KTUNE_CUDA_TRY(cudaEventElapsedTime(&ms, ev_start, ev_stop));
      fastest_us = fastest_us < 0 ? ms * 1e3 : std::min(fastest_us, ms * 1e3);
      // The read-only inputs (still as drawn after the timed calls and this one) and the outputs, in one
      // pass over the set.
      std::vector<Span> spans;
      std::vector<std::size_t> which;
      for (std::size_t t = 0; t < tensors.size(); ++t)
        if (tensors[t].access == Access::read && tensors[t].bytes()) {
          spans.push_back({tensor_ptr(set, t), tensors[t].bytes(), 0});
          which.push_back(t);
        }
      for (std::size_t t : outputs) spans.push_back({tensor_ptr(set, t), tensors[t].bytes(), 0});
      std::vector<std::uint64_t> d;
      KTUNE_TRY(digests(spans, stream, check_scratch, d));
      for (std::size_t i = 0; i < which.size(); ++i)
        if (d[i] != input_digest[which[i]]) {
          verdict = judge::message(judge::Verdict::input_modified, tensors[which[i]].name +
                                                                       " is read-only but the timed calls changed it (rotation set " +
                                                                       std::to_string(set) + ")");
          // The next variant is timed and checked on the inputs as drawn, not on what this one left.
          for (std::size_t s = 0; s < rotations; ++s)
            for (std::size_t t = 0; t < tensors.size(); ++t)
              if (tensors[t].access != Access::write && tensors[t].bytes())
                KTUNE_CUDA_TRY(cudaMemcpyAsync(tensor_ptr(s, t), pristine + offsets[t], tensors[t].bytes(), cudaMemcpyDeviceToDevice, stream));
          KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
          return Status::success();
        }
      for (std::size_t o = 0; o < outputs.size(); ++o)
        if (d[which.size() + o] != known->second[o]) {
          verdict = judge::message(judge::Verdict::work_skipped,
                                   tensors[outputs[o]].name + " after a timed call (rotation set " + std::to_string(set) +
                                       ", its outputs overwritten with random numbers first) is not bitwise the checked "
                                       "call's result: the timed calls did not compute what the checked call computed");
          return Status::success();
        }
    }
    if (fastest_us > allowed_us) {
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "a checked call took %.2f us, but the timed calls took %.2f us each (allowed: %.1fx that + twice a "
                    "launch, %.2f us): the timed calls skipped work the checked calls did",
                    fastest_us, median_us, work_time_factor, allowed_us);
      verdict = judge::message(judge::Verdict::work_skipped, buf);
    }
    return Status::success();
  }

  /// "implausible_time: ..." when `median_us` is below what the spec's bytes need at the copy ceiling
  /// measured in this run (beyond the margin), else empty.
  std::string implausible(double median_us, double spread) const {
    if (copy_gbps <= 0 || bytes_moved <= 0 || median_us <= 0) return {};
    const double floor_us = bytes_moved / (copy_gbps * 1e3);
    const double margin = std::max(implausible_margin, spread);
    if (median_us * (1 + margin) >= floor_us) return {};
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "timed at %.3f us per call, but the spec's %.0f bytes need at least %.3f us at this GPU's copy ceiling "
                  "(%.0f GB/s, measured in this run): faster than DRAM can move them (%.0f%% of the ceiling)",
                  median_us, bytes_moved, floor_us, copy_gbps, 100 * floor_us / median_us);
    return judge::message(judge::Verdict::implausible_time, buf);
  }

  /// The timing stream (graph capture needs a created one) and the L2 size, on first use.
  Status ensure_stream() {
    if (!stream) KTUNE_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (l2_bytes == 0) {
      const DeviceInfo* dev = nullptr;
      KTUNE_TRY(current_device(dev));
      l2_bytes = static_cast<std::size_t>(dev->l2_bytes);
    }
    return Status::success();
  }

  /// Labels a CUDA failure of a variant; when the context is broken (a sticky error), marks it fatal.
  void cuda_failure(BenchResult& r, const std::string& prefix, const Status& st) {
    (void)cudaGetLastError();  // clears an error that is not sticky
    const cudaError_t sync = cudaDeviceSynchronize();
    r.error = prefix + describe(st);
    if (sync != cudaSuccess) {
      r.fatal = true;
      r.error += "; this broke the CUDA context, so ktune_bench stops here (rerun to resume after it)";
    }
  }

  Status ensure_events() {
    if (!ev_start) KTUNE_CUDA_TRY(cudaEventCreate(&ev_start));
    if (!ev_stop) KTUNE_CUDA_TRY(cudaEventCreate(&ev_stop));
    return Status::success();
  }

  Status launch(Prepared& p) { return p.v->run(args[p.next++ % rotations].get(), stream); }

  /// What time_kernel does before its samples, once per finalist: warm-up, then the capture of `batch`
  /// launches when `graph` (the screen was graph-replayed: the rounds time the same way), `batch` sized
  /// from the fastest of three single launches.
  Status prepare_timer(Prepared& p, const TimingSettings& t, bool graph) {
    for (int i = 0; i < t.warmup; ++i) KTUNE_TRY(launch(p));
    KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
    KTUNE_TRY(ensure_events());
    double one_us = 0;
    for (int probe = 0; probe < 3; ++probe) {
      KTUNE_CUDA_TRY(cudaEventRecord(ev_start, stream));
      KTUNE_TRY(launch(p));
      KTUNE_CUDA_TRY(cudaEventRecord(ev_stop, stream));
      KTUNE_CUDA_TRY(cudaEventSynchronize(ev_stop));
      float ms = 0;
      KTUNE_CUDA_TRY(cudaEventElapsedTime(&ms, ev_start, ev_stop));
      one_us = probe == 0 ? ms * 1e3 : std::min(one_us, ms * 1e3);
    }
    if (t.graph && graph) {
      p.batch = static_cast<int>(std::clamp(t.graph_sample_us / std::max(one_us, 1.0), 2.0, static_cast<double>(t.max_batch)));
      KTUNE_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      Status captured = Status::success();
      for (int i = 0; i < p.batch && captured.ok(); ++i) captured = launch(p);
      const cudaError_t end = cudaStreamEndCapture(stream, &p.graph);
      KTUNE_TRY(captured);
      KTUNE_CUDA_TRY(end);
      KTUNE_CUDA_TRY(cudaGraphInstantiate(&p.exec, p.graph, 0));
    }
    return Status::success();
  }

  /// `samples` samples of a prepared timer, after one untimed launch (the first after another
  /// finalist's round).
  Status sample_prepared(Prepared& p, int samples, Timed& out) {
    auto once = [&]() -> Status {
      if (p.exec) {
        KTUNE_CUDA_TRY(cudaGraphLaunch(p.exec, stream));
        return Status::success();
      }
      return launch(p);
    };
    KTUNE_TRY(once());
    std::vector<double> us;
    for (int i = 0; i < std::max(1, samples); ++i) {
      KTUNE_CUDA_TRY(cudaEventRecord(ev_start, stream));
      KTUNE_TRY(once());
      KTUNE_CUDA_TRY(cudaEventRecord(ev_stop, stream));
      KTUNE_CUDA_TRY(cudaEventSynchronize(ev_stop));
      float ms = 0;
      KTUNE_CUDA_TRY(cudaEventElapsedTime(&ms, ev_start, ev_stop));
      us.push_back(ms * 1e3 / p.batch);
    }
    out.median_us = median(us);
    out.min_us = *std::min_element(us.begin(), us.end());
    out.max_us = *std::max_element(us.begin(), us.end());
    out.samples = static_cast<int>(us.size());
    out.batch = p.batch;
    return Status::success();
  }
  // The host side of the groups to come, prepared on other cores (last: its workers read `specs`).
  std::unique_ptr<HostPrefetcher> prefetch;
  HostRequest host_request(const std::string& g_op, DType g_dtype, const Shape& g_shape, bool with_reference) const {
    HostRequest r;
    r.op = g_op;
    r.dtype = g_dtype;
    r.shape = g_shape;
    r.seed = shape_seed(run_seed, g_op, g_dtype, g_shape.key());
    r.reference = with_reference || wide_values;
    r.wide = wide_values;
    return r;
  }
};

GpuMeasurer::GpuMeasurer(std::map<std::string, Spec> specs, int arch, TimingSettings timing, bool cold_l2,
                         std::uint64_t run_seed, double copy_gbps)
    : s_(std::make_unique<State>()) {
  s_->specs = std::move(specs);
  s_->arch = arch;
  s_->timing = timing;
  s_->cold_l2 = cold_l2;
  s_->run_seed = run_seed;
  s_->copy_gbps = copy_gbps;
  // The specs are read-only from here on and harnesses are stateless: workers may share both.
  const State* st = s_.get();
  const unsigned threads = default_prefetch_threads();
  s_->prefetch = std::make_unique<HostPrefetcher>(
      [st](const HostRequest& r) {
        HostGroup g;
        const Harness* h = HarnessRegistry::global().find(r.op);
        const auto spec = st->specs.find(r.op);
        if (!h) g.error = "no ktune::Harness registered for op " + r.op;
        else if (spec == st->specs.end()) g.error = "no spec.json for op " + r.op;
        else g = prepare_host(*h, spec->second, r);
        return g;
      },
      threads, 8 * std::size_t{threads}, default_prefetch_budget());
}

GpuMeasurer::~GpuMeasurer() {
  s_->release();
  if (s_->ev_start) cudaEventDestroy(s_->ev_start);
  if (s_->ev_stop) cudaEventDestroy(s_->ev_stop);
  for (cudaEvent_t e : s_->staged)
    if (e) cudaEventDestroy(e);
  if (s_->stream) cudaStreamDestroy(s_->stream);
}

void GpuMeasurer::set_device_compare(bool on) { s_->device_compare = on; }

void GpuMeasurer::expect(const std::vector<Upcoming>& order) {
  std::vector<HostRequest> requests;
  for (const Upcoming& u : order) {
    HostRequest r = s_->host_request(u.op, u.dtype, u.shape, u.reference);
    // A reference that runs S on the GPU is computed when its group begins, on this thread.
    const Harness* h = HarnessRegistry::global().find(u.op);
    if (r.reference && h && h->reference_uses_gpu()) continue;
    requests.push_back(std::move(r));
  }
  s_->prefetch->expect(std::move(requests));
}

HostPrefetcher::Stats GpuMeasurer::prefetch_stats() const { return s_->prefetch->stats(); }

unsigned GpuMeasurer::prefetch_threads() const { return s_->prefetch->threads(); }

double GpuMeasurer::upload_seconds() const { return s_->upload_s; }

void GpuMeasurer::set_search(const TimingSettings& screen, const TimingSettings& rounds) {
  s_->screen = screen;
  s_->rounds = rounds;
}

void GpuMeasurer::set_separate_allocations(bool on) { s_->separate_allocations = on; }
void GpuMeasurer::set_wide_values(bool on) { s_->wide_values = on; }

const PhaseTimes& GpuMeasurer::phases() const { return s_->phases; }
const std::vector<std::string>& GpuMeasurer::warnings() const { return s_->warnings; }

void GpuMeasurer::end_shape() { s_->release(); }

std::string GpuMeasurer::begin_shape(const ShapeGroup& g) { return prepare_group(g, true); }

std::string GpuMeasurer::begin_rounds(const ShapeGroup& g) { return prepare_group(g, false); }

std::string GpuMeasurer::prepare_group(const ShapeGroup& g, bool with_reference) {
  State& s = *s_;
  PhaseScope phase(s.phases, PhaseTimes::prepare);
  s.release();
  if (const Status st = s.ensure_stream(); !st.ok()) return describe(st);
  s.harness = HarnessRegistry::global().find(g.op);
  if (!s.harness) return "no ktune::Harness registered for op " + g.op;
  auto spec = s.specs.find(g.op);
  if (spec == s.specs.end()) return "no spec.json for op " + g.op;
  s.op = g.op;
  s.dtype = g.dtype;
  s.shape = g.shape;
  s.tol = spec->second.tolerance_for(g.dtype);
  s.seed = shape_seed(s.run_seed, g.op, g.dtype, g.shape.key());

  // The host side (inputs, float64 reference): prepared ahead on other cores when the run said it
  // would begin this group (expect), else here.
  HostGroup hg = s.prefetch->take(s.host_request(g.op, g.dtype, g.shape, with_reference));
  if (!hg.error.empty()) return hg.error;
  s.bytes_moved = hg.bytes_moved;
  s.tensors = std::move(hg.tensors);
  s.reference = std::move(hg.reference);
  s.ref_norms = std::move(hg.norms);
  HostTensors host = std::move(hg.inputs);
  for (std::size_t t = 0; t < s.tensors.size(); ++t)
    if (s.tensors[t].is_output()) s.outputs.push_back(t);

  for (const TensorInfo& t : s.tensors) {
    s.offsets.push_back(s.set_bytes);
    s.set_bytes += (t.bytes() + tensor_alignment - 1) / tensor_alignment * tensor_alignment;
  }
  if (s.set_bytes == 0) s.set_bytes = tensor_alignment;  // T = 0: nothing to move, still valid pointers

  // Halve the rotation until it fits: a cold L2 with fewer sets beats no measurement.
  s.rotations = s.cold_l2 ? rotations_for_cold_l2(s.set_bytes, s.l2_bytes) : 1;
  for (;;) {
    const cudaError_t e = s.kept_arena.reserve(s.rotations * s.set_bytes);
    if (e == cudaSuccess) {
      s.arena = s.kept_arena.data();
      break;
    }
    if (e != cudaErrorMemoryAllocation || s.rotations == 1)
      return "cudaMalloc of " + std::to_string(s.rotations * s.set_bytes) + " bytes: " + cudaGetErrorString(e);
    s.rotations = (s.rotations + 1) / 2;
  }
  if (const cudaError_t e = s.kept_pristine.reserve(s.set_bytes); e != cudaSuccess)
    return std::string("cudaMalloc of the pristine inputs: ") + cudaGetErrorString(e);
  s.pristine = s.kept_pristine.data();

  auto prepare = [&]() -> Status {
    const auto upload0 = std::chrono::steady_clock::now();
    for (std::size_t t = 0; t < s.tensors.size(); ++t)
      if (s.tensors[t].access != Access::write && s.tensors[t].bytes())
        // On the measuring stream, not the legacy one: a pageable cudaMemcpy may return before its DMA
        // lands, and the copies into the rotation sets below must read the inputs, not what was there.
        KTUNE_TRY(s.upload(s.pristine + s.offsets[t], host[t].data(), s.tensors[t].bytes()));
    KTUNE_CUDA_TRY(cudaStreamSynchronize(s.stream));
    s.upload_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - upload0).count();
    for (std::size_t set = 0; set < s.rotations; ++set) {
      std::vector<void*> ptrs;
      for (std::size_t t = 0; t < s.tensors.size(); ++t) {
        const TensorInfo& ti = s.tensors[t];
        ptrs.push_back(s.tensor_ptr(set, t));
        if (ti.access != Access::write) {
          KTUNE_CUDA_TRY(cudaMemcpyAsync(s.tensor_ptr(set, t), s.pristine + s.offsets[t], ti.bytes(),
                                         cudaMemcpyDeviceToDevice, s.stream));
        } else {  // outputs start as random data, never zeros
          KTUNE_TRY(visit_tensor_type(ti, s.dtype, [&](auto e) {
            using T = decltype(e);
            return fill_uniform(static_cast<T*>(s.tensor_ptr(set, t)), ti.elements, mix64(s.seed + set + 1), -1.f, 1.f,
                                s.stream);
          }));
        }
      }
      s.args.push_back(s.harness->make_args(s.shape, s.dtype, ptrs));
    }
    KTUNE_CUDA_TRY(cudaStreamSynchronize(s.stream));
    return Status::success();
  };
  Status st;
  try {
    st = prepare();
  } catch (const std::exception& e) {
    return std::string("the harness failed: ") + e.what();
  }
  if (!st.ok()) return "preparing the inputs: " + describe(st);
  // The read-only inputs as drawn: the gate and the checks of timed calls compare with these.
  {
    std::vector<Span> spans;
    for (std::size_t t = 0; t < s.tensors.size(); ++t)  // a write-only tensor's pristine bytes were never written
      spans.push_back({s.pristine + s.offsets[t], s.tensors[t].access == Access::write ? 0 : s.tensors[t].bytes(), 0});
    st = digests(spans, s.stream, s.check_scratch, s.input_digest);
    if (!st.ok()) return "digests of the inputs: " + describe(st);
  }
  // Rounds of timing only need no reference: the finalists passed the gate in this process and their
  // timed calls are checked against its digests. A finalist that did not (a cached screen) is gated
  // first, from the inputs kept here.
  if (!with_reference && !s.wide_values) {
    s.host_inputs = std::move(host);
    return {};
  }
  const std::string err = prepare_gate(host);
  HostGroup used;
  used.inputs = std::move(host);
  s.prefetch->discard(std::move(used));
  return err;
}

std::string GpuMeasurer::prepare_gate(const HostTensors& host) {
  State& s = *s_;
  if (s.reference.empty() && !s.outputs.empty()) {  // a reference the host workers did not compute
    try {
      s.reference = s.harness->reference(s.shape, s.dtype, host);
    } catch (const std::exception& e) {
      return std::string("the harness failed: ") + e.what();
    }
    s.ref_norms.clear();
  }
  if (s.reference.size() != s.outputs.size())
    return "the harness's reference has " + std::to_string(s.reference.size()) + " outputs, its tensors " +
           std::to_string(s.outputs.size());
  std::size_t host_bytes = 0;
  const bool norms_known = s.ref_norms.size() == s.reference.size();
  if (!norms_known) s.ref_norms.clear();
  s.host_offsets.clear();
  for (std::size_t o = 0; o < s.outputs.size(); ++o) {
    const TensorInfo& t = s.tensors[s.outputs[o]];
    if (s.reference[o].size() != t.elements)
      return "the harness's reference of " + t.name + " has " + std::to_string(s.reference[o].size()) +
             " elements, the tensor " + std::to_string(t.elements);
    if (!norms_known) s.ref_norms.push_back(chunk_norms(s.reference[o]));
    s.host_offsets.push_back(host_bytes);
    host_bytes += t.bytes();
  }
  void* p = nullptr;
  cudaError_t e = s.kept_host_out.reserve(host_bytes);
  if (e != cudaSuccess) return std::string("cudaMallocHost of the output staging: ") + cudaGetErrorString(e);
  s.host_out = s.kept_host_out.data();
  if (s.device_compare && !s.device_compare_off) {
    std::vector<std::size_t> at;
    std::size_t bytes = 0;
    for (std::size_t o = 0; o < s.outputs.size(); ++o) {
      at.push_back(bytes);
      bytes += (s.reference[o].size() * sizeof(double) + tensor_alignment - 1) / tensor_alignment * tensor_alignment;
    }
    e = s.kept_reference.reserve(bytes);
    if (e != cudaSuccess) return std::string("cudaMalloc of the reference on the device: ") + cudaGetErrorString(e);
    const auto upload0 = std::chrono::steady_clock::now();
    for (std::size_t o = 0; o < s.outputs.size(); ++o) {
      s.reference_dev.push_back(reinterpret_cast<double*>(s.kept_reference.data() + at[o]));
      // On the measuring stream: ordered before the comparisons (see the inputs' upload).
      const Status up = s.upload(s.reference_dev.back(), s.reference[o].data(), s.reference[o].size() * sizeof(double));
      if (!up.ok()) return "copying the reference to the device: " + describe(up);
    }
    if ((e = cudaStreamSynchronize(s.stream)) != cudaSuccess)
      return std::string("copying the reference to the device: ") + cudaGetErrorString(e);
    s.upload_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - upload0).count();
  }

  // The gate set: [guard | tensor | guard] per tensor in one allocation, or each tensor alone.
  s.gate_ptr.assign(s.tensors.size(), nullptr);
  if (s.separate_allocations) {
    for (std::size_t t = 0; t < s.tensors.size(); ++t) {
      e = cudaMalloc(&p, std::max<std::size_t>(s.tensors[t].bytes(), 1));
      if (e != cudaSuccess) return std::string("cudaMalloc of the gate's ") + s.tensors[t].name + ": " + cudaGetErrorString(e);
      s.gate_allocs.push_back(p);
      s.gate_ptr[t] = static_cast<char*>(p);
    }
  } else {
    std::vector<std::size_t> at;
    for (const TensorInfo& t : s.tensors) {
      at.push_back(s.gate_arena_bytes + guard_bytes);
      s.gate_arena_bytes += guard_bytes + (t.bytes() + tensor_alignment - 1) / tensor_alignment * tensor_alignment + guard_bytes;
    }
    if (s.gate_arena_bytes == 0) s.gate_arena_bytes = 2 * guard_bytes;
    e = s.kept_gate.reserve(s.gate_arena_bytes);
    if (e != cudaSuccess) return "cudaMalloc of the gate's guarded buffers (" + std::to_string(s.gate_arena_bytes) + " bytes): " + cudaGetErrorString(e);
    s.gate_arena = s.kept_gate.data();
    for (std::size_t t = 0; t < s.tensors.size(); ++t) s.gate_ptr[t] = s.gate_arena + at[t];
  }
  s.gate_dirty = true;
  try {
    s.gate_args = s.harness->make_args(s.shape, s.dtype, std::vector<void*>(s.gate_ptr.begin(), s.gate_ptr.end()));
  } catch (const std::exception& ex) {
    return std::string("the harness failed: ") + ex.what();
  }
  return {};
}

BenchResult GpuMeasurer::blank(const WorkItem& item) const {
  const State& s = *s_;
  BenchResult r;
  r.name = item.name;
  r.op = item.op;
  r.dtype = name(item.dtype);
  r.shape = item.shape.key();
  r.id = item.id;
  r.bytes = s.bytes_moved;
  // Cold only if the sets really exceed twice the L2 (a huge set alone does; a capped rotation may not).
  r.cold_l2 = s.cold_l2 && s.rotations * s.set_bytes > 2 * s.l2_bytes;
  r.seed = s.seed;
  r.copy_gbps = s.copy_gbps;
  return r;
}

bool GpuMeasurer::check(const WorkItem& item, BenchResult& r) {
  State& s = *s_;
  s.checked = nullptr;
  PhaseScope phase(s.phases, PhaseTimes::gate);
  // Variants compiled for the newest architecture the device runs (sm_90 code on an sm_100 device, say).
  const int arch = variant_arch(Registry::global(), item.op, item.dtype, s.arch);
  const Variant* v = Registry::global().find(item.op, item.dtype, arch, item.id);
  if (!v) {
    r.error = "cannot implement: variant " + item.id + " is not compiled into this binary for sm_" + std::to_string(s.arch);
    return false;
  }
  const void* args = s.args.at(0).get();
  const Status can = v->can_implement(args);
  if (!can.ok()) {
    r.error = "cannot implement: " + describe(can);
    return false;
  }

  // Before running anything: a kernel that cannot launch here would only fail the gate confusingly.
  // An original S reached only through its own launcher (ops the generator derived from a user's file)
  // has no kernel pointer to ask about: it is gated and timed, not device-checked. Variants always are.
  const KernelResources res = v->resources(args);
  if (res.func || !v->is_original()) {
    DeviceCheck dc;
    const Status checked = check_on_device(res, dc);
    if (!checked.ok()) {
      s.cuda_failure(r, "rejected: the device check failed: ", checked);
      return false;
    }
    r.registers = dc.registers;
    r.local_bytes = static_cast<double>(dc.local_bytes);
    r.occupancy = dc.occupancy;
    if (!dc.ok) {
      r.error = "rejected: " + dc.reason;
      return false;
    }
  }

  if (s.gate_ptr.empty()) {  // rounds of a finalist this process did not gate (a cached screen)
    const std::string err = prepare_gate(s.host_inputs);
    if (!err.empty()) {
      r.error = "error: " + err;
      r.cacheable = false;
      return false;
    }
  }
  // One checked run: shared memory scribbled, the call, the whole device synchronised (work a variant
  // put on a stream of its own included), guard zones and read-only inputs checked.
  auto checked_run = [&](std::uint32_t scribble, const std::string& when, std::vector<std::uint64_t>& out_digests) -> bool {
    Status st = s.reset_gate();
    if (st.ok()) st = scribble_shared_memory(scribble, s.stream);
    if (!st.ok()) {
      s.cuda_failure(r, "error: resetting the gate's buffers: ", st);
      r.cacheable = r.fatal;
      return false;
    }
    st = v->run(s.gate_args.get(), s.stream);
    if (!st.ok()) {
      s.gate_dirty = true;
      if (st.code == StatusCode::cuda_error) s.cuda_failure(r, "incorrect: the launch failed: ", st);
      else r.error = "cannot implement: " + describe(st);
      return false;
    }
    st = Status::from_cuda(cudaDeviceSynchronize(), "the kernel");
    if (!st.ok()) {
      s.cuda_failure(r, "incorrect: ", st);
      return false;
    }
    std::string verdict;
    st = s.check_buffers(when, verdict, out_digests);
    if (!st.ok()) {
      s.cuda_failure(r, "error: checking the gate's buffers: ", st);
      r.cacheable = r.fatal;
      return false;
    }
    r.error = verdict;
    return verdict.empty();
  };
  std::vector<std::uint64_t> first, second;  // digests of the outputs after each run
  if (!checked_run(smem_scribble_first, "(the gate's first run)", first)) return false;

  // Compared on the device when it may (the first gate of each shape on the host as well, as a check
  // of the device comparison), else copied back and compared on the host.
  auto host_compare = [&](std::vector<Comparison>& out) -> Status {
    for (std::size_t o = 0; o < s.outputs.size(); ++o) {
      const std::size_t t = s.outputs[o];
      KTUNE_CUDA_TRY(cudaMemcpyAsync(s.host_out + s.host_offsets[o], s.gate_ptr[t], s.tensors[t].bytes(),
                                     cudaMemcpyDeviceToHost, s.stream));
    }
    KTUNE_CUDA_TRY(cudaStreamSynchronize(s.stream));
    for (std::size_t o = 0; o < s.outputs.size(); ++o)
      out.push_back(visit_tensor_type(s.tensors[s.outputs[o]], s.dtype, [&](auto e) {
        using T = decltype(e);
        return compare_parallel(reinterpret_cast<const T*>(s.host_out + s.host_offsets[o]), s.reference[o], s.ref_norms[o], s.tol);
      }));
    return Status::success();
  };
  auto compare_on_device = [&](std::vector<Comparison>& out) -> Status {
    for (std::size_t o = 0; o < s.outputs.size(); ++o) {
      const std::size_t t = s.outputs[o];
      Comparison c;
      KTUNE_TRY(visit_tensor_type(s.tensors[t], s.dtype, [&](auto e) {
        using T = decltype(e);
        return device_compare(reinterpret_cast<const T*>(s.gate_ptr[t]), s.reference_dev[o], s.tensors[t].elements, s.tol,
                              s.stream, s.scratch, c);
      }));
      out.push_back(c);
    }
    return Status::success();
  };
  std::vector<Comparison> comparisons;
  Status st = Status::success();
  {
    const bool on_device = s.device_compare && !s.device_compare_off && s.reference_dev.size() == s.outputs.size();
    st = on_device ? compare_on_device(comparisons) : host_compare(comparisons);
    if (st.ok() && on_device && !s.cross_checked) {
      std::vector<Comparison> host;
      st = host_compare(host);
      s.cross_checked = true;
      for (std::size_t o = 0; st.ok() && o < host.size(); ++o)
        if (!same_verdict(host[o], comparisons[o])) {
          s.device_compare_off = true;
          s.warnings.push_back(item.name + ": the device comparison of " + s.tensors[s.outputs[o]].name + " (" +
                               comparisons[o].summary() + ") disagrees with the host's (" + host[o].summary() +
                               "): every later gate compares on the host");
          comparisons = host;
          break;
        }
    }
  }
  if (!st.ok()) {
    s.cuda_failure(r, "error: ", st);
    r.cacheable = r.fatal;
    return false;
  }

  std::string unwritten, wrong;
  for (std::size_t o = 0; o < s.outputs.size(); ++o) {
    const TensorInfo& t = s.tensors[s.outputs[o]];
    const Comparison& c = comparisons[o];
    r.rel_l2 = std::max(r.rel_l2, c.rel_l2);
    r.max_abs = std::max(r.max_abs, c.max_abs);
    // A read_write tensor starts as input: only a write-only output can hold the poison.
    if (c.unwritten && t.access == Access::write && unwritten.empty())
      unwritten = t.name + ": " + std::to_string(c.unwritten) + " of " + std::to_string(c.count) +
                  " elements still hold the poison they were filled with, the first at [" + std::to_string(c.first_unwritten) + "]";
    if (!c.passed && wrong.empty()) wrong = t.name + ": " + c.summary();
  }
  const std::string seed = " (seed " + std::to_string(s.seed) + ")";
  if (!unwritten.empty()) {
    r.error = judge::message(judge::Verdict::unwritten_output, unwritten + seed);
    return false;
  }
  if (!wrong.empty()) {
    r.error = judge::message(judge::Verdict::incorrect, wrong + seed);
    return false;
  }

  // The same call again, with other leftovers in shared memory: bitwise the same outputs.
  if (!checked_run(smem_scribble_second, "(the gate's second run of the same call)", second)) return false;
  for (std::size_t o = 0; o < s.outputs.size(); ++o)
    if (first[o] != second[o]) {
      r.error = judge::message(judge::Verdict::nondeterministic,
                               s.tensors[s.outputs[o]].name +
                                   ": two runs of the same call on the same inputs gave outputs that differ bitwise (a race, "
                                   "an order-dependent reduction, or a read of memory nobody wrote)" + seed);
      return false;
    }
  s.gate_digests[item.name] = first;
  s.checked = v;
  return true;
}

bool GpuMeasurer::time(const WorkItem& item, const TimingSettings& timing, Timed& t, BenchResult& r) {
  State& s = *s_;
  const Variant* v = s.checked;
  if (!v || v->id != item.id || v->op != item.op || v->dtype != item.dtype) {
    v = Registry::global().find(item.op, item.dtype, variant_arch(Registry::global(), item.op, item.dtype, s.arch), item.id);
    if (!v) {
      r.error = "cannot implement: variant " + item.id + " is not compiled into this binary";
      return false;
    }
  }
  return timed_and_judged(*v, item.name, t, r, [&](Timed& out) -> Status {
    TimingResult tr;
    KTUNE_TRY(time_kernel([&](std::size_t set) { return v->run(s.args[set].get(), s.stream); }, s.rotations, s.stream,
                          to_options(timing), tr));
    out = to_timed(tr);
    return Status::success();
  });
}

bool GpuMeasurer::timed_and_judged(const Variant& v, const std::string& name, Timed& t, BenchResult& r,
                                   const std::function<Status(Timed&)>& sample) {
  State& s = *s_;
  for (int attempt = 0;; ++attempt) {
    {
      PhaseScope phase(s.phases, PhaseTimes::timing);
      const Status st = sample(t);
      if (!st.ok()) {
        s.cuda_failure(r, "rejected: timing failed: ", st);
        return false;
      }
    }
    PhaseScope phase(s.phases, PhaseTimes::verify);
    std::string verdict;
    const Status st = s.verify_work(v, name, t.median_us, verdict);
    if (!st.ok()) {
      s.cuda_failure(r, "incorrect: verifying the timed calls: ", st);
      return false;
    }
    if (!verdict.empty()) {  // wrong work is not timed again
      r.error = verdict;
      return false;
    }
    verdict = s.implausible(t.median_us, t.median_us > 0 ? (t.max_us - t.min_us) / t.median_us : 0);
    if (verdict.empty()) return true;
    if (attempt == 1) {  // an implausible time is timed once more before it is rejected
      r.error = verdict;
      return false;
    }
  }
}

BenchResult GpuMeasurer::measure(const WorkItem& item) {
  BenchResult r = blank(item);
  if (!check(item, r)) return r;
  Timed t;
  if (!time(item, s_->timing, t, r)) return r;
  r.median_us = t.median_us;
  r.min_us = t.min_us;
  r.max_us = t.max_us;
  r.samples = t.samples;
  r.batch = t.batch;
  r.spread = t.median_us > 0 ? (t.max_us - t.min_us) / t.median_us : 0;
  return r;
}

namespace {
void set_timing(BenchResult& r, const Timed& t) {
  r.median_us = t.median_us;
  r.min_us = t.min_us;
  r.max_us = t.max_us;
  r.samples = t.samples;
  r.batch = t.batch;
  r.spread = t.median_us > 0 ? (t.max_us - t.min_us) / t.median_us : 0;
}
}  // namespace

BenchResult GpuMeasurer::screen(const WorkItem& item) {
  BenchResult r = blank(item);
  if (!check(item, r)) return r;
  Timed t;
  if (time(item, s_->screen, t, r)) set_timing(r, t);
  return r;
}

BenchResult GpuMeasurer::retime(const WorkItem& item, const BenchResult& previous) {
  BenchResult r = previous;
  r.cached = false;
  Timed t;
  if (time(item, s_->screen, t, r)) set_timing(r, t);
  return r;
}

bool GpuMeasurer::round(const WorkItem& item, int samples, bool graph, Timed& t, BenchResult& r) {
  State& s = *s_;
  // A finalist whose screen came from the cache was never checked in this process: its timed calls
  // have no checked result to be compared with until it passes the gate here.
  if (!s.gate_digests.count(item.name) && !check(item, r)) return false;
  auto it = s.prepared.find(item.id);
  if (it == s.prepared.end()) {
    auto p = std::make_unique<State::Prepared>();
    p->v = Registry::global().find(item.op, item.dtype, variant_arch(Registry::global(), item.op, item.dtype, s.arch), item.id);
    if (!p->v) {
      r.error = "cannot implement: variant " + item.id + " is not compiled into this binary";
      return false;
    }
    if (s.args.empty()) {
      r.error = "error: rounds of " + item.id + " before begin_rounds";
      r.cacheable = false;
      return false;
    }
    PhaseScope phase(s.phases, PhaseTimes::timing);
    const Status st = s.prepare_timer(*p, s.rounds, graph);
    if (!st.ok()) {
      s.cuda_failure(r, "rejected: timing failed: ", st);
      return false;
    }
    it = s.prepared.emplace(item.id, std::move(p)).first;
  }
  State::Prepared& p = *it->second;
  return timed_and_judged(*p.v, item.name, t, r, [&](Timed& out) { return s.sample_prepared(p, samples, out); });
}

BenchResult GpuMeasurer::measure_copy_same_size(const ShapeGroup& g) {
  State& s = *s_;
  BenchResult r;
  r.name = g.copy.name;
  r.op = g.op;
  r.dtype = name(g.dtype);
  r.shape = g.shape.key();
  r.copy_gbps = s.copy_gbps;
  auto spec = s.specs.find(g.op);
  if (spec == s.specs.end()) {
    r.error = "error: no spec.json for op " + g.op;
    r.cacheable = false;
    return r;
  }
  // Half the spec bytes read, half written, each rounded to whole 16-byte vectors (at least one).
  double moved = 0;
  try {
    moved = static_cast<double>(spec->second.bytes(g.shape, g.dtype));
  } catch (const std::exception& e) {
    r.error = std::string("error: the spec's bytes moved: ") + e.what();
    r.cacheable = false;
    return r;
  }
  const std::size_t half = std::max<std::size_t>(16, static_cast<std::size_t>(std::llround(moved / 32.0)) * 16);
  const std::size_t n = half / 16;
  r.bytes = 2.0 * static_cast<double>(half);
  if ((n + 255) / 256 > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    r.error = "error: a same-size copy of " + std::to_string(half) + " bytes needs more blocks than a grid holds";
    r.cacheable = false;
    return r;
  }
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);

  if (const Status st = s.ensure_stream(); !st.ok()) {
    s.cuda_failure(r, "error: ", st);
    r.cacheable = r.fatal;
    return r;
  }
  // A set is a source and a destination; sets rotate exactly like a variant's input/output sets.
  const std::size_t span = (half + tensor_alignment - 1) / tensor_alignment * tensor_alignment;
  const std::size_t set_bytes = 2 * span;
  std::size_t rotations = s.cold_l2 ? rotations_for_cold_l2(set_bytes, s.l2_bytes) : 1;
  char* buf = nullptr;
  for (;;) {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, rotations * set_bytes);
    if (e == cudaSuccess) {
      buf = static_cast<char*>(p);
      break;
    }
    (void)cudaGetLastError();
    if (e != cudaErrorMemoryAllocation || rotations == 1) {
      r.error = "error: cudaMalloc of " + std::to_string(rotations * set_bytes) + " bytes: " + cudaGetErrorString(e);
      r.cacheable = false;
      return r;
    }
    rotations = (rotations + 1) / 2;
  }
  r.cold_l2 = s.cold_l2 && rotations * set_bytes > 2 * s.l2_bytes;

  PhaseScope phase(s.phases, PhaseTimes::timing);
  TimingResult tr;
  Status st = fill_uniform(reinterpret_cast<float*>(buf), rotations * set_bytes / 4, mix64(0xc0b1ull ^ static_cast<std::uint64_t>(moved)), -1.f, 1.f,
                           s.stream);  // random, never zeros: no compression shortcut
  if (st.ok()) st = Status::from_cuda(cudaStreamSynchronize(s.stream), "filling the same-size copy");
  if (st.ok())
    st = time_kernel(
        [&](std::size_t set) -> Status {
          const char* src = buf + set * set_bytes;
          ktune::detail::copy16_kernel<><<<blocks, 256, 0, s.stream>>>(reinterpret_cast<const uint4*>(src),
                                                                  reinterpret_cast<uint4*>(buf + set * set_bytes + span), n);
          return Status::from_cuda(cudaGetLastError(), "the same-size copy kernel");
        },
        rotations, s.stream, to_options(s.timing), tr);
  if (!st.ok()) {
    s.cuda_failure(r, "error: timing the same-size copy: ", st);
    r.cacheable = r.fatal;
  } else {
    r.median_us = tr.median_us;
    r.min_us = tr.min_us;
    r.max_us = tr.max_us;
    r.samples = tr.samples;
    r.batch = tr.batch;
    r.spread = tr.median_us > 0 ? (tr.max_us - tr.min_us) / tr.median_us : 0;
  }
  cudaFree(buf);
  return r;
}

}  // namespace ktune::bench
