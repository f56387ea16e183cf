// ktune/replay_batch.hpp: how many launches one timed graph replay holds (ktune/timing.cuh). Host-only,
// no CUDA (g++ and nvcc; CPU-tested in tests/core).
//
// A replay's elapsed time is its launches' plus a fixed cost of its own (the event nodes and the first
// launch: about 2.3 us on an H100, the median over 1,194 short calls timed at two batches in one tune),
// and a sample divides the whole by the batch. Calls replayed at different batches carry different
// shares of that cost: sized each by its own probe (one single call, so one disturbed probe gives a small
// batch), one shape's 1.6 us calls replayed 27 to 64 launches at a time, and that alone set them up to
// 3% apart (13% in one tune, where a disturbed probe gave 12). Sizing every call of a shape for one
// figure instead gives each the same share, so the fixed cost moves no call against another.
#pragma once

#include <algorithm>

namespace ktune {

/// A call whose probe says the shape's batch would replay it for longer than this many times the target
/// is sized by its probe: at least 4x slower than the shape's figure, a share of the fixed cost cannot
/// reorder it against the calls that keep the batch, and its replays stay short.
inline constexpr double slow_call_factor = 4.0;

/// Launches per replay: about `sample_us` of work for a call of `call_us`, from 2 to max_batch.
inline int graph_batch(double sample_us, double call_us, int max_batch) {
  return static_cast<int>(std::clamp(sample_us / std::max(call_us, 1.0), 2.0, static_cast<double>(std::max(2, max_batch))));
}

/// The batch of a call whose probe (fastest single call, launch latency included) took `probe_us`:
/// sized for `batch_for_us` when that is set (> 0), the same for every call given the same figure, unless
/// the probe says such a replay would run past slow_call_factor x sample_us; else sized for the probe.
inline int replay_batch(double sample_us, int max_batch, double batch_for_us, double probe_us) {
  if (batch_for_us > 0) {
    const int b = graph_batch(sample_us, batch_for_us, max_batch);
    if (probe_us * b <= slow_call_factor * sample_us) return b;
    return std::min(b, graph_batch(slow_call_factor * sample_us, probe_us, max_batch));
  }
  return graph_batch(sample_us, probe_us, max_batch);
}

}  // namespace ktune
