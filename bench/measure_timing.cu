// bench/measure_timing.cu: timing a variant that passed the gate: ktune::time_kernel over the rotation
// (measure, the search's screens and re-timed screens), and the search's finalists' rounds, each timer
// (warm-up, batch, graph) prepared once and sampled in every round; the judge checks every timing after it
// (a round's finalists after the last of them).
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
  // Later rounds start right after the replays of the finalist before (whole rotations of the same sets) or
  // the judge's check of the round before, which read every rotation set in order (check_rotation): either
  // way L2 holds the last sets, as after this timer's own replays, and none of the first. Their first replay
  // was not counted either until 2026-11-28: 11.5k replays of about 500 us in a ten-op tune, and a median of
  // seven leaves out a first sample that L2's dirty lines made differ.
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
      double one = 0;
      KTUNE_TRY(ktune::detail::single_call(stream, ev_start, ev_stop, [&] { return launch(p); }, one));
      us.push_back(one / p.batch);
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
    v = variant_of(item, Registry::global(), s.arch);
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

void GpuMeasurer::round(std::vector<RoundEntry>& finalists) {
  State& s = *s_;
  // Each finalist's timer, prepared on its first round.
  auto timer = [&](const WorkItem& item, bool graph, BenchResult& r) -> State::Prepared* {
    // A finalist whose screen came from the cache was never checked in this process: its timed calls
    // have no checked result to be compared with until it passes the gate here.
    if (!s.gate_digests.count(item.name) && !check(item, r)) return nullptr;
    auto it = s.prepared.find(item.id);
    if (it != s.prepared.end()) return it->second.get();
    auto p = std::make_unique<State::Prepared>();
    p->v = variant_of(item, Registry::global(), s.arch);
    if (!p->v) {
      r.error = "cannot implement: variant " + item.id + " is not compiled into this binary";
      return nullptr;
    }
    if (s.args.empty()) {
      r.error = "error: rounds of " + item.id + " before begin_rounds";
      r.cacheable = false;
      return nullptr;
    }
    PhaseScope phase(s.phases, PhaseTimes::timing);
    PartScope part(s.phases, "timing.round_graphs");
    const Status st = s.prepare_timer(*p, s.rounds, graph);
    if (!st.ok()) {
      s.cuda_failure(r, "rejected: timing failed: ", st);
      return nullptr;
    }
    return s.prepared.emplace(item.id, std::move(p)).first->second.get();
  };
  std::vector<State::Prepared*> timers;
  for (RoundEntry& e : finalists) {
    e.ok = false;
    timers.push_back(timer(*e.item, e.graph, *e.result));
    if (e.result->fatal) return;
  }
  // The samples, each finalist's right after the one before: the judge's checks come after the last, so
  // that the round's finalists run at one clock (clock_normalised takes out what differs between rounds).
  std::vector<std::size_t> timed;
  {
    PhaseScope phase(s.phases, PhaseTimes::timing);
    PartScope part(s.phases, "timing.round_samples");
    for (std::size_t j = 0; j < finalists.size(); ++j) {
      if (!timers[j]) continue;
      const Status st = s.sample_prepared(*timers[j], finalists[j].samples, finalists[j].timed);
      if (!st.ok()) {
        s.cuda_failure(*finalists[j].result, "rejected: timing failed: ", st);
        if (finalists[j].result->fatal) return;
        continue;
      }
      timed.push_back(j);
    }
  }
  // The judge. Read-only inputs and guard zones first, then each finalist's timed calls against its checked
  // call, then the inputs again: a finalist whose calls (timed, or checked) changed the inputs changed what
  // the finalists after it computed, so when either check fails the verdicts are not given here, and every
  // finalist is timed and judged again alone, which puts the failure on the one that caused it.
  std::vector<std::size_t> alone;
  {
    PhaseScope phase(s.phases, PhaseTimes::verify);
    std::string broke;
    std::vector<std::string> verdicts(finalists.size());
    Status st = s.check_rotation(broke);
    for (std::size_t j : timed) {
      if (!st.ok() || !broke.empty()) break;
      st = s.verify_work(*timers[j]->v, finalists[j].item->name, finalists[j].timed.median_us, verdicts[j]);
    }
    if (st.ok() && broke.empty()) st = s.check_rotation(broke);
    // What the round's calls left in the caller's stream, context and device: put back, and (not knowing whose
    // it was) every finalist timed and judged again alone, as for broken inputs.
    std::string changed;
    bool fatal = false;
    if (st.ok()) {
      PartScope part(s.phases, "verify.state");
      st = s.check_caller_state("after a round of the search's finalists", changed, fatal);
    }
    for (std::size_t j : timed) {
      RoundEntry& e = finalists[j];
      if (!st.ok()) {
        s.cuda_failure(*e.result, "incorrect: verifying the timed calls: ", st);
        if (e.result->fatal) return;
      } else if (fatal) {
        e.result->error = changed;
        e.result->fatal = true;
        return;
      } else if (!broke.empty() || !changed.empty()) {
        alone.push_back(j);
      } else if (!verdicts[j].empty()) {
        e.result->error = verdicts[j];  // wrong work is not timed again
      } else if (!s.implausible(e.timed.median_us, e.timed.median_us > 0 ? (e.timed.max_us - e.timed.min_us) / e.timed.median_us : 0)
                      .empty()) {
        alone.push_back(j);  // timed once more alone before it is rejected (timed_and_judged)
      } else {
        e.ok = true;
      }
    }
  }
  for (std::size_t j : alone) {
    RoundEntry& e = finalists[j];
    State::Prepared& p = *timers[j];
    e.ok = timed_and_judged(*p.v, e.item->name, e.timed, *e.result, [&](Timed& out) {
      PartScope part(s.phases, "timing.round_samples");
      return s.sample_prepared(p, e.samples, out);
    });
    if (e.result->fatal) return;
  }
}

}  // namespace ktune::bench
