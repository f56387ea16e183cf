// bench/measure.hpp: the GPU half of the benchmark: device facts, the baselines (copy ceiling, empty
// kernel), and the Measurer that gates, checks and times variants through the op's ktune::Harness.
//
// Host-compiler friendly: the CUDA kernels and ktune/timing.cuh stay in the measure*.cu files.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/status.hpp>

#include <ktune/spec.hpp>
#include "prefetch.hpp"
#include "search.hpp"
#include "sweep.hpp"

namespace ktune {
struct Variant;
}

namespace ktune::bench {

class GpuTrace;

struct DeviceContext {
  std::string name;
  int ordinal = 0;
  int arch = 0;               ///< compute capability, 10*major+minor
  int sms = 0;
  long long l2_bytes = 0;
  int sm_clock_khz = 0, mem_clock_khz = 0;
  int driver_version = 0, runtime_version = 0;
};

/// Facts about the current device. Needs a device.
Status query_device_context(DeviceContext& out);

struct Baselines {
  double copy_bytes = 0;          ///< bytes copied per call (moved: twice that)
  double copy_memcpy_gbps = 0, copy_kernel_gbps = 0;
  Timed copy;                     ///< the faster of the two copies
  Timed empty;                    ///< an empty kernel timed like every variant
  double copy_gbps() const { return copy_memcpy_gbps > copy_kernel_gbps ? copy_memcpy_gbps : copy_kernel_gbps; }
};

/// Copy ceiling (contract 8) and empty kernel, measured in this process.
Status measure_baselines(const TimingSettings& timing, Baselines& out);

/// The seed of one (op, dtype, shape)'s inputs in a run: below 2^53 so a JSON number holds it.
std::uint64_t shape_seed(std::uint64_t run_seed, const std::string& op, DType dtype, const std::string& shape_key);

/// Where a run's wall time went, and the process's CPU time over the same spans (all threads, so the
/// host preparation's workers of later groups count in whichever phase the measuring thread is in;
/// the driver prints their own CPU time apart).
struct PhaseTimes {
  enum Phase { prepare, gate, timing, verify, count };  ///< verify: the judge's checks of timed calls
  double wall_s[count] = {}, cpu_s[count] = {};
  /// Wall time of named parts of the gate and the checks ("gate.runs", "verify.digests", ...), each within
  /// its phase: where a phase's time goes, for the next thing to make faster.
  std::map<std::string, double> part_s;
  /// KTUNE_TRACE: the phases' and parts' spans go to it as well (the GPU's idle time within each).
  GpuTrace* trace = nullptr;
  static const char* name(int p);
};

class GpuMeasurer : public SearchMeasurer {
 public:
  /// `specs` by op; `arch`: which compiled variants to run (the device's); `timing`: measure()'s and the
  /// same-size copy's settings; `copy_gbps` is recorded with each result.
  GpuMeasurer(std::map<std::string, Spec> specs, int arch, TimingSettings timing, bool cold_l2,
              std::uint64_t run_seed, double copy_gbps);
  ~GpuMeasurer() override;

  /// The gate compares on the device (a float64 reference uploaded once per shape) instead of copying
  /// every output back; the first gate of each shape is compared on the host as well, and a
  /// disagreement turns the device comparison off for the rest of the run (with a warning).
  void set_device_compare(bool on);
  /// The halving search's settings: the screen and the rounds (search.hpp).
  void set_search(const TimingSettings& screen, const TimingSettings& rounds);
  /// The gate puts every tensor in a cudaMalloc of its own instead of guarded regions of one allocation
  /// (compute-sanitizer's memcheck then sees any access outside a tensor as an invalid address).
  void set_separate_allocations(bool on);
  /// KTUNE_TRACE (gpu_trace.hpp): the phases' and parts' spans are recorded in `trace` too (null: none).
  void set_trace(GpuTrace* trace);
  /// The gate's inputs reach the hundreds and include exact zeros, as far as the reference stays finite
  /// in the outputs' storage type (docs/judge.md, "every call S accepts").
  void set_wide_values(bool on);

  void expect(const std::vector<Upcoming>& order) override;
  std::string begin_shape(const ShapeGroup& g) override;
  BenchResult measure(const WorkItem& item) override;
  void end_shape() override;
  BenchResult measure_copy_same_size(const ShapeGroup& g) override;

  BenchResult screen(const WorkItem& item, const ScreenLimit& limit) override;
  BenchResult retime(const WorkItem& item, const BenchResult& previous) override;
  std::string begin_rounds(const ShapeGroup& g) override;
  void round(std::vector<RoundEntry>& finalists) override;
  std::string settle_shape() override;

  const PhaseTimes& phases() const;
  /// The host preparation's workers and what they saved (bench/prefetch.hpp).
  HostPrefetcher::Stats prefetch_stats() const;
  unsigned prefetch_threads() const;
  /// Wall time of the host-to-device copies of inputs and references (part of `prepare`).
  double upload_seconds() const;
  /// The pinned buffers the workers stage groups in, once CUDA took them, and the measuring thread's time
  /// registering them (their pages are faulted in on a thread of their own).
  struct Staging {
    int buffers = 0;
    std::size_t bytes = 0;
    double registering_s = 0;
  };
  Staging staging() const;
  /// Groups whose inputs and references the GPU drew and computed (a DevicePreparation), and how many of
  /// them the host prepared as well, as a check.
  struct OnDevice {
    std::size_t groups = 0, checked = 0;
  };
  OnDevice on_device() const;
  /// Warnings for the run's summary (e.g. the device comparison turned off).
  const std::vector<std::string>& warnings() const;
  /// The dependent chain's calibration (bench/dependent_chain.cuh, docs/judge.md item 12): whether a dependent
  /// launched with PDL started before its producer was done here, how long after the producer's release it
  /// started (the slowest probe), and how long the producer waits before it writes the call's inputs.
  struct Chain {
    bool calibrated = false, effective = false;
    double release_to_start_us = -1, delay_us = 0;
  };
  Chain chain() const;

  /// A result with the item's names and the group's facts filled in, nothing measured.
  BenchResult blank(const WorkItem& item) const;
  /// can_implement, device check, then the judge's gate (docs/judge.md): the call twice on guarded
  /// buffers, each run checked for writes outside the outputs, changed inputs, unwritten outputs and
  /// wrong values, the two runs bitwise equal. False (with r.error, prefixed with its verdict) when it fails.
  /// `settled_later`: the host's check of the device comparison (a shape's first gate) runs in the
  /// background, and settle_shape waits for it (the search's screens).
  bool check(const WorkItem& item, BenchResult& r, bool settled_later = false);
  /// Times a variant that passed check(), then judges the timed calls: they reproduce the checked
  /// call's outputs bitwise and took no less than DRAM allows. False (with r.error) when either fails.
  bool time(const WorkItem& item, const TimingSettings& timing, Timed& t, BenchResult& r, const ScreenLimit& limit = {});

 private:
  /// Inputs, rotation arena and (with_reference) the reference and the gate's buffers of a group.
  std::string prepare_group(const ShapeGroup& g, bool with_reference);
  /// The reference (computed from `host` unless present) and the gate's guarded buffers of the group.
  std::string prepare_gate(const HostTensors& host);
  /// Samples with `sample`, then judges the timed calls (docs/judge.md): they did the checked call's work
  /// and took no less than DRAM allows (an implausible time is sampled once more before it is rejected).
  /// False with r.error (a verdict, or a timing failure) when either fails.
  bool timed_and_judged(const Variant& v, const std::string& name, Timed& t, BenchResult& r,
                        const std::function<Status(Timed&)>& sample);  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace ktune::bench
