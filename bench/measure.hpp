// bench/measure.hpp: the GPU half of the benchmark: device facts, the baselines (copy ceiling, empty
// kernel), and the Measurer that gates, checks and times variants through the op's ktune::Harness.
//
// Host-compiler friendly: the CUDA kernels and ktune/timing.cuh stay in measure.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <ktune/dtype.hpp>
#include <ktune/status.hpp>

#include <ktune/spec.hpp>
#include "sweep.hpp"

namespace ktune::bench {

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

/// ktune::TimingOptions, mirrored so host-compiled code can set it.
struct TimingSettings {
  int warmup = 3;
  int min_samples = 10;
  int max_samples = 200;
  double stable_rel = 0.005;
  double max_seconds = 2.0;
  bool graph = true;
  double graph_below_us = 20.0;
  double graph_sample_us = 500.0;
  int max_batch = 256;
};
TimingSettings full_timing();
TimingSettings quick_timing();

struct Timed {
  double median_us = 0, min_us = 0, max_us = 0;
  int samples = 0, batch = 1;
};

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

class GpuMeasurer : public Measurer {
 public:
  /// `specs` by op; `arch`: which compiled variants to run (the device's); `copy_gbps` is recorded
  /// with each result.
  GpuMeasurer(std::map<std::string, Spec> specs, int arch, TimingSettings timing, bool cold_l2,
              std::uint64_t run_seed, double copy_gbps);
  ~GpuMeasurer() override;

  std::string begin_shape(const ShapeGroup& g) override;
  BenchResult measure(const WorkItem& item) override;
  void end_shape() override;
  BenchResult measure_copy_same_size(const ShapeGroup& g) override;

  /// A result with the item's names and the group's facts filled in, nothing measured.
  BenchResult blank(const WorkItem& item) const;
  /// can_implement, device check, then the correctness gate. False (with r.error) when it fails.
  bool check(const WorkItem& item, BenchResult& r);
  /// Times a variant that passed check(). False (with r.error) when timing failed.
  bool time(const WorkItem& item, const TimingSettings& timing, Timed& t, BenchResult& r);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace ktune::bench
