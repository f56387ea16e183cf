// bench/run_retest.cpp: ktune_bench --retest FILE on the GPU: per candidate shape its same-size copy, the
// gate of every candidate, then 7 interleaved rounds (3 with --quick) of each, so a slow spell of the GPU
// falls on all candidates alike; the median of the rounds' medians, each round's clock taken out
// (clock_normalised), is the result.
#include <algorithm>
#include <iostream>

#include <ktune/registry.hpp>

#include "driver_detail.hpp"
#include "names.hpp"
#include "plan.hpp"
#include "search.hpp"
#include "sweep.hpp"

namespace ktune::bench {

std::vector<BenchResult> run_retest(const std::vector<Candidate>& candidates, const std::map<std::string, Spec>& specs,
                                    GpuMeasurer& m, int device_arch, bool quick, bool& aborted, std::string& abort_reason) {
  const int rounds = quick ? 3 : 7;
  TimingSettings per_round = quick ? quick_timing() : full_timing();
  per_round.min_samples = per_round.max_samples = quick ? 4 : 20;
  std::vector<BenchResult> out;
  Progress progress(&std::cerr, candidates.size(), false, 0.0);
  std::vector<Upcoming> order;
  for (const Candidate& c : candidates) order.push_back({c.op, c.dtype, c.shape, true});
  m.expect(order);
  for (const Candidate& c : candidates) {
    ShapeGroup g{c.op, c.dtype, c.shape, {}, {}};
    g.copy = WorkItem{c.op, c.dtype, c.shape, std::string(copy_same_size_id), copy_same_size_name(c.op, c.dtype, c.shape.key()), {}};
    for (const std::string& id : c.ids)
      g.items.push_back({c.op, c.dtype, c.shape, id, benchmark_name(c.op, c.dtype, c.shape.key(), id), {}});
    progress.before(c.op + "/" + name(c.dtype) + "/" + c.shape.key() + " (" + std::to_string(c.ids.size()) + " candidates)");

    std::vector<BenchResult> rs;
    std::string prepare_error;
    auto spec = specs.find(c.op);
    if (spec == specs.end()) prepare_error = "op " + c.op + " is not compiled into this binary (or excluded by --ops)";
    else if (!spec->second.same_dims(c.shape)) prepare_error = "shape " + c.shape.key() + " does not name the spec's dimensions";
    else if (variant_arch(Registry::global(), c.op, c.dtype, device_arch) == 0)
      prepare_error = "no variants of " + c.op + " for this device";
    // The shape's same-size copy, once, before the group's buffers exist (not cached: re-tests never are).
    double copy_us = 0;
    if (prepare_error.empty()) {
      BenchResult copy = m.measure_copy_same_size(g);
      if (copy.ok()) copy_us = copy.median_us;
      if (copy.fatal) {
        aborted = true;
        abort_reason = copy.name + ": " + copy.error;
      }
      out.push_back(std::move(copy));
      if (aborted) break;
    }
    if (prepare_error.empty()) prepare_error = m.begin_shape(g);
    for (const WorkItem& it : g.items) {
      rs.push_back(m.blank(it));
      rs.back().copy_same_size_us = copy_us;
      if (!prepare_error.empty()) {
        rs.back().error = "error: " + prepare_error;
        rs.back().cacheable = false;
      }
    }
    std::vector<bool> live(g.items.size(), prepare_error.empty());
    for (std::size_t i = 0; i < g.items.size() && !aborted; ++i) {
      if (!live[i]) continue;
      live[i] = m.check(g.items[i], rs[i]);
      if (rs[i].fatal) {
        aborted = true;
        abort_reason = g.items[i].name + ": " + rs[i].error;
      }
    }
    std::vector<std::vector<double>> medians(g.items.size());
    for (int round = 0; round < rounds && !aborted; ++round) {
      for (std::size_t i : round_order(g.items.size(), static_cast<std::size_t>(round))) {
        if (!live[i] || aborted) continue;
        Timed t;
        if (!m.time(g.items[i], per_round, t, rs[i])) {
          live[i] = false;
          if (rs[i].fatal) {
            aborted = true;
            abort_reason = g.items[i].name + ": " + rs[i].error;
          }
          continue;
        }
        BenchResult& r = rs[i];
        medians[i].push_back(t.median_us);
        r.min_us = r.samples ? std::min(r.min_us, t.min_us) : t.min_us;
        r.max_us = std::max(r.max_us, t.max_us);
        r.samples += t.samples;
        r.batch = std::max(r.batch, t.batch);
      }
    }
    const std::vector<std::vector<double>> normal = clock_normalised(medians);
    for (std::size_t i = 0; i < g.items.size(); ++i) {
      if (!live[i] || normal[i].empty()) continue;
      const RoundStats s = round_stats(normal[i]);
      rs[i].median_us = s.median;
      rs[i].spread = s.spread;
      rs[i].rounds = static_cast<int>(medians[i].size());
    }
    m.end_shape();
    progress.after();
    for (BenchResult& r : rs) out.push_back(std::move(r));
    if (aborted) break;
  }
  progress.finish();
  return out;
}

}  // namespace ktune::bench
