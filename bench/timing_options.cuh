// bench/timing_options.cuh: a search's timing settings (search.hpp, host-compiled) as the options of
// ktune::time_kernel (ktune/timing.cuh, CUDA): for the measurer and the micro-benchmarks that time as it does.
#pragma once

#include <ktune/timing.cuh>

#include "search.hpp"

namespace ktune::bench {

inline TimingOptions to_options(const TimingSettings& t) {
  TimingOptions o;
  o.warmup = t.warmup;
  o.min_samples = t.min_samples;
  o.max_samples = t.max_samples;
  o.stable_rel = t.stable_rel;
  o.max_seconds = t.max_seconds;
  o.graph = t.graph;
  o.graph_sample_us = t.graph_sample_us;
  o.max_batch = t.max_batch;
  o.probe_alone_us = t.probe_alone_us;
  return o;
}

}  // namespace ktune::bench
