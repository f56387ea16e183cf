// bench/measure.cu: the GpuMeasurer's lifetime (see measure.hpp): construction with the host workers,
// its settings, shape groups begun and ended, blank results, and the stream, events and CUDA failures every
// step shares. The steps live beside it: measure_baselines.cu (device facts, copy ceiling, empty kernel,
// same-size copy), measure_group.cu (a group's inputs and buffers), measure_gate.cu (the judge's gate),
// measure_timing.cu (timing and the search's rounds), measure_verify.cu (the judge's checks of timed calls).
#include "measure_detail.cuh"

#include <ktune/device_info.hpp>

namespace ktune::bench {

const char* PhaseTimes::name(int p) {
  switch (p) {
    case prepare: return "prepare";
    case gate: return "gate";
    case timing: return "timing";
    case verify: return "verify";
    default: return "?";
  }
}

Status GpuMeasurer::State::ensure_stream() {
  if (!stream) KTUNE_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (l2_bytes == 0) {
    const DeviceInfo* dev = nullptr;
    KTUNE_TRY(current_device(dev));
    l2_bytes = static_cast<std::size_t>(dev->l2_bytes);
  }
  return Status::success();
}

void GpuMeasurer::State::cuda_failure(BenchResult& r, const std::string& prefix, const Status& st) {
  (void)cudaGetLastError();  // clears an error that is not sticky
  const cudaError_t sync = cudaDeviceSynchronize();
  r.error = prefix + describe(st);
  if (sync != cudaSuccess) {
    r.fatal = true;
    r.error += "; this broke the CUDA context, so ktune_bench stops here (rerun to resume after it)";
  }
}

Status GpuMeasurer::State::ensure_events() {
  if (!ev_start) KTUNE_CUDA_TRY(cudaEventCreate(&ev_start));
  if (!ev_stop) KTUNE_CUDA_TRY(cudaEventCreate(&ev_stop));
  return Status::success();
}

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
  PinnedStaging* pinned = &s_->pinned;
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
      threads, 8 * std::size_t{threads}, default_prefetch_budget(), [pinned](HostGroup& g) { pinned->stage(g); });
}

GpuMeasurer::~GpuMeasurer() {
  s_->release();
  if (s_->ev_start) cudaEventDestroy(s_->ev_start);
  if (s_->ev_stop) cudaEventDestroy(s_->ev_stop);
  if (s_->cross_copied) cudaEventDestroy(s_->cross_copied);
  for (cudaEvent_t e : s_->staged)
    if (e) cudaEventDestroy(e);
  if (s_->stream) cudaStreamDestroy(s_->stream);
}

void GpuMeasurer::set_device_compare(bool on) { s_->device_compare = on; }
void GpuMeasurer::set_trace(GpuTrace* trace) { s_->phases.trace = trace; }

void GpuMeasurer::expect(const std::vector<Upcoming>& order) {
  s_->upcoming = order;
  s_->upcoming_next = 0;
  std::vector<HostRequest> requests;
  std::size_t largest = 0;
  for (const Upcoming& u : order) {
    HostRequest r = s_->host_request(u.op, u.dtype, u.shape, u.reference);
    // With wide values, a reference that runs S on the GPU is computed with the inputs when the group begins.
    const Harness* h = HarnessRegistry::global().find(u.op);
    if (r.reference && h && h->reference_uses_gpu()) continue;
    if (h && r.inputs) {  // its cost orders the workers; the largest group sizes the pinned buffers bytes are staged in
      try {
        const std::size_t bytes = PinnedStaging::layout(h->tensors(r.shape, r.dtype), r.reference);
        r.cost = static_cast<double>(bytes);
        largest = std::max(largest, bytes);
      } catch (const std::exception&) {  // the group fails when it begins, with the harness's message
      }
    }
    requests.push_back(std::move(r));
  }
  // On a thread of its own: on this one, two of 3.5 GiB took 5.0 s on an H200's host (docs/scale.md).
  if (s_->prefetch->threads() > 0) s_->pinned.presize(largest);
  s_->prefetch->expect(std::move(requests));
}

HostPrefetcher::Stats GpuMeasurer::prefetch_stats() const { return s_->prefetch->stats(); }

unsigned GpuMeasurer::prefetch_threads() const { return s_->prefetch->threads(); }

double GpuMeasurer::upload_seconds() const { return s_->upload_s; }

GpuMeasurer::Staging GpuMeasurer::staging() const {
  Staging st;
  st.buffers = s_->pinned.ready(st.bytes, st.registering_s);
  return st;
}

GpuMeasurer::OnDevice GpuMeasurer::on_device() const { return {s_->groups_on_device, s_->groups_on_device_checked}; }

void GpuMeasurer::set_search(const TimingSettings& screen, const TimingSettings& rounds) {
  s_->screen = screen;
  s_->rounds = rounds;
}

void GpuMeasurer::set_separate_allocations(bool on) { s_->separate_allocations = on; }
void GpuMeasurer::set_wide_values(bool on) { s_->wide_values = on; }

const PhaseTimes& GpuMeasurer::phases() const { return s_->phases; }
const std::vector<std::string>& GpuMeasurer::warnings() const { return s_->warnings; }

GpuMeasurer::Chain GpuMeasurer::chain() const {
  const ChainInfo& c = s_->chain.info();
  return {c.calibrated, c.effective, c.release_to_start_us, c.delay_us};
}

void GpuMeasurer::end_shape() { s_->release(); }

std::string GpuMeasurer::begin_shape(const ShapeGroup& g) { return prepare_group(g, true); }

std::string GpuMeasurer::begin_rounds(const ShapeGroup& g) { return prepare_group(g, false); }

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

}  // namespace ktune::bench
