// bench/measure_timing.cu: timing a variant that passed the gate: ktune::time_kernel over the rotation
// (measure, the search's screens and re-timed screens), and the search's finalists' rounds, each timer
// (warm-up, batch, graph) prepared once and sampled in every round; the judge checks every timing after it.
// Every timing of a shape sizes its replay batch for the shape's one figure (batch_figure).
#include "measure_detail.cuh"

#include <utility>

#include "plan.hpp"
#include "retest.hpp"

namespace ktune::bench {

Status GpuMeasurer::State::batch_figure(double moved, double& us) {
  us = 0;
  if (copy_gbps <= 0 || moved <= 0) return Status::success();
  double floor_us = 0;
  KTUNE_TRY(launch_floor(floor_us));  // measures launch_probe_us with it, once
  us = launch_probe_us + moved / (copy_gbps * 1e3);
  return Status::success();
}

Status GpuMeasurer::State::prepare_timer(Prepared& p, const TimingSettings& t, bool graph) {
  for (int i = 0; i < t.warmup; ++i) KTUNE_TRY(launch(p));
  KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
  KTUNE_TRY(ensure_events());
  double one_us = 0;
  KTUNE_TRY(ktune::detail::fastest_single_call(stream, ev_start, ev_stop, [&] { return launch(p); }, one_us));
  // As time_kernel (ktune/timing.cuh): the events are the graph's first and last nodes. The graph is
  // kept for every round; its event nodes name this state's two events, which each round reads right
  // after its replay.
  if (t.graph && graph) {
    const int batch = rotation_batch(replay_batch(t.graph_sample_us, t.max_batch, batch_for_us, one_us), rotations, t.max_batch);
    if (ktune::detail::capture_timed_batch(stream, batch, ev_start, ev_stop, [&] { return launch(p); }, p.graph))
      p.batch = batch;  // else launch by launch, as time_kernel falls back
  }
  return Status::success();
}

Status GpuMeasurer::State::sample_prepared(Prepared& p, int samples, Timed& out) {
  // A replay repeats its launches' sets: unless it is a whole number of rotations, evict them first, as
  // time_kernel does.
  const bool flush = p.graph.exec && replay_needs_flush(p.batch, rotations);
  auto before = [&] { return flush ? flush_l2(stream) : Status::success(); };
  // Not counted: the timer's first replay (a freshly instantiated graph's first launch costs 10-15 us more).
  // Later rounds start right after the judge's check of the finalist timed before, which read every rotation
  // set in order (check_rotation): L2 holds the last sets, as after this timer's own replays, and none of the
  // first. Their first replay was not counted either until 2026-11-28: 11.5k replays of about 500 us in a
  // ten-op tune, and a median of seven leaves out a first sample that L2's dirty lines made differ.
  std::vector<double> us;
  if (p.graph.exec) {
    if (!p.launched) {
      KTUNE_TRY(before());
      KTUNE_CUDA_TRY(cudaGraphLaunch(p.graph.exec, stream));
    }
    KTUNE_TRY(ktune::detail::replay_samples(stream, p.graph, p.batch, std::max(1, samples), sample_events, before, us));
  } else {
    if (!p.launched) KTUNE_TRY(launch(p));
    for (int i = 0; i < std::max(1, samples); ++i) {  // each alone: its launch latency in it, as in its screen
      KTUNE_CUDA_TRY(cudaEventRecord(ev_start, stream));
      KTUNE_TRY(launch(p));
      KTUNE_CUDA_TRY(cudaEventRecord(ev_stop, stream));
      KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
      float ms = 0;
      KTUNE_CUDA_TRY(cudaEventElapsedTime(&ms, ev_start, ev_stop));
      us.push_back(ms * 1e3 / p.batch);
    }
  }
  p.launched = true;
  out.median_us = median(us);
  out.min_us = *std::min_element(us.begin(), us.end());
  out.max_us = *std::max_element(us.begin(), us.end());
  out.samples = static_cast<int>(us.size());
  out.batch = p.batch;
  return Status::success();
}

bool GpuMeasurer::time(const WorkItem& item, const TimingSettings& timing, Timed& t, BenchResult& r, const ScreenLimit& limit) {
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
    PartScope part(s.phases, "timing.time_kernel");
    TimingResult tr;
    TimingOptions options = to_options(timing);
    options.abandon_above_us = limit.above_us;
    options.abandon_probe_min_us = limit.probe_min_us;
    options.batch_for_us = s.batch_for_us;
    KTUNE_TRY(time_kernel([&](std::size_t set) { return v->run(s.args[set].get(), s.stream); }, s.rotations, s.stream,
                          options, tr));
    out = to_timed(tr);
    return Status::success();
  });
}

BenchResult GpuMeasurer::measure(const WorkItem& item) {
  BenchResult r = blank(item);
  if (!check(item, r)) return r;
  Timed t;
  if (time(item, s_->timing, t, r)) set_timing(r, t);
  return r;
}

BenchResult GpuMeasurer::screen(const WorkItem& item, const ScreenLimit& limit) {
  BenchResult r = blank(item);
  if (!check(item, r, /*settled_later=*/true)) return r;
  Timed t;
  if (time(item, s_->screen, t, r, limit)) set_timing(r, t);
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
    PartScope part(s.phases, "timing.round_graphs");
    const Status st = s.prepare_timer(*p, s.rounds, graph);
    if (!st.ok()) {
      s.cuda_failure(r, "rejected: timing failed: ", st);
      return false;
    }
    it = s.prepared.emplace(item.id, std::move(p)).first;
  }
  State::Prepared& p = *it->second;
  return timed_and_judged(*p.v, item.name, t, r, [&](Timed& out) {
    PartScope part(s.phases, "timing.round_samples");
    return s.sample_prepared(p, samples, out);
  });
}

}  // namespace ktune::bench
