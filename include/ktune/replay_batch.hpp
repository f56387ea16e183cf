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
#include <cstddef>

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

/// A batch made a whole number of rotations where it holds at least one. The launches of a replay take the
/// rotation's sets in turn (ktune/timing.cuh), so a replay of whole rotations ends on the set before the one
/// it starts on: the next replay's first set was last used a whole rotation earlier, as every set inside a
/// replay was, and L2 holds none of it without a flush. Rounded to the nearest whole number (at most
/// max_batch, at least one rotation); a batch shorter than one rotation is kept, and flushed before.
inline int rotation_batch(int batch, std::size_t rotations, int max_batch) {
  const auto r = static_cast<long long>(rotations);
  if (r <= 1 || batch < r) return batch;
  const long long whole = std::clamp((batch + r / 2) / r, 1LL, std::max(1LL, max_batch / r));
  return static_cast<int>(whole * r);
}

/// Whether a replay of `batch` launches over `rotations` sets must be preceded by an L2 flush: unless it
/// is a whole number of rotations, it ends on sets the next replay's first launches use again.
inline bool replay_needs_flush(int batch, std::size_t rotations) {
  return rotations > 1 && static_cast<std::size_t>(batch) % rotations != 0;
}

}  // namespace ktune
