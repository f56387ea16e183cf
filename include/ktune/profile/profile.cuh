// ktune/profile/profile.cuh: profile one call of a kernel launch into a ProfileRecord.
//
// For a launch (a callable `Status(std::size_t rotation)` that enqueues one call on `stream`, as
// ktune::time_kernel takes), profile_call measures, each step independent of the others:
//   1. CUDA-event timing exactly as the benchmark times (ktune::time_kernel: warm-up, median, graph
//      replay for short calls, cold L2 when the caller provides rotations);
//   2. the exact device duration of every kernel of the call from CUPTI's activity API, median over
//      several calls, with the launch shape and resources of each kernel;
//   3. hardware metrics per kernel from CUPTI's range profiler (kernel replay);
//   4. registers, local memory and static shared memory from cudaFuncGetAttributes for the kernels
//      the caller names (ktune::KernelResources, as a Variant's resources() gives them).
// Steps 2 and 3 failing (counters not permitted, another profiler attached, ...) is not an error of
// profile_call: the record keeps the timings, and activity_status / metrics_status say what failed.
// profile_call returns an error only when the launch itself or the CUDA runtime fails.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "../registry.hpp"
#include "../status.hpp"
#include "../timing.cuh"
#include "cupti.hpp"
#include "metrics.hpp"

namespace ktune::profile {

struct Options {
  bool events = true;                 ///< step 1
  TimingOptions timing;               ///< for step 1
  int activity_calls = 20;            ///< step 2: calls recorded (0: skip the step)
  bool metrics = true;                ///< step 3
  bool stalls = true;                 ///< include the warp stall reasons in step 3
  MetricsOptions metrics_options;
};

/// Fills `d` from the current device's properties.
inline Status device_facts(DeviceFacts& d) {
  int dev = 0;
  KTUNE_CUDA_TRY(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  KTUNE_CUDA_TRY(cudaGetDeviceProperties(&p, dev));
  d.name = p.name;
  d.arch = p.major * 10 + p.minor;
  d.sms = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  d.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  d.regs_per_sm = p.regsPerMultiprocessor;
  d.smem_per_sm = static_cast<std::int64_t>(p.sharedMemPerMultiprocessor);
  return Status::success();
}

namespace detail {
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

/// Groups `calls` calls' worth of activity records (sorted by start) into per-kernel records.
inline bool kernels_from_activity(const std::vector<KernelActivity>& acts, int calls, std::vector<KernelMetrics>& out,
                                  std::string& why) {
  out.clear();
  if (calls <= 0 || acts.empty() || acts.size() % static_cast<std::size_t>(calls) != 0) {
    why = std::to_string(acts.size()) + " kernel records for " + std::to_string(calls) +
          " calls: the number of kernels per call is not constant";
    return false;
  }
  const std::size_t per_call = acts.size() / static_cast<std::size_t>(calls);
  for (std::size_t j = 0; j < per_call; ++j) {
    const KernelActivity& a = acts[j];
    KernelMetrics k;
    k.name = a.name;
    for (int i = 0; i < 3; ++i) k.grid[i] = a.grid[i], k.block[i] = a.block[i];
    k.cluster = a.cluster;
    k.registers = a.registers;
    k.static_smem = a.static_smem;
    k.dynamic_smem = a.dynamic_smem;
    k.local_bytes = a.local_bytes;
    std::vector<double> d;
    for (int c = 0; c < calls; ++c) {
      const KernelActivity& b = acts[static_cast<std::size_t>(c) * per_call + j];
      if (b.name != a.name) {
        why = "call " + std::to_string(c) + " ran kernel '" + b.name + "' where call 0 ran '" + a.name + "'";
        out.clear();
        return false;
      }
      d.push_back(b.duration_us());
    }
    const double m = median(d);
    k.duration_us = m;
    k.duration_spread = m > 0 ? (*std::max_element(d.begin(), d.end()) - *std::min_element(d.begin(), d.end())) / m : 0.0;
    k.duration_samples = calls;
    out.push_back(std::move(k));
  }
  return true;
}

inline void apply_ranges(const std::vector<RangeValues>& ranges, std::vector<KernelMetrics>& kernels) {
  if (kernels.empty())
    for (std::size_t i = 0; i < ranges.size(); ++i) kernels.emplace_back().name = "kernel " + std::to_string(i);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    KernelMetrics& k = kernels[i];
    for (const MetricField& f : KernelMetrics::hardware_fields())
      if (auto it = ranges[i].find(f.cupti); it != ranges[i].end()) k.*(f.member) = it->second * f.scale;
    for (const std::string& r : stall_reasons())
      if (auto it = ranges[i].find(stall_metric(r)); it != ranges[i].end()) k.stalls[r] = it->second;
  }
}

/// Registers, local and static shared memory of the kernels named by `resources`, matched to the
/// recorded kernels by name (or taken as the only kernel when the call runs exactly one).
inline Status apply_attributes(const std::vector<KernelResources>& resources, std::vector<KernelMetrics>& kernels) {
  for (const KernelResources& r : resources) {
    if (!r.func) continue;
    cudaFuncAttributes a{};
    KTUNE_CUDA_TRY(cudaFuncGetAttributes(&a, r.func));
    const char* name = nullptr;
    KTUNE_CUDA_TRY(cudaFuncGetName(&name, r.func));
    KernelMetrics* target = nullptr;
    for (KernelMetrics& k : kernels)
      if (name && k.name == name) target = &k;
    if (!target && kernels.size() == 1 && resources.size() == 1) target = &kernels[0];
    if (!target) {
      KernelMetrics k;
      k.name = name ? name : "";
      k.block[0] = r.threads, k.block[1] = 1, k.block[2] = 1;
      k.cluster = r.cluster;
      kernels.push_back(std::move(k));
      target = &kernels.back();
    }
    target->registers = a.numRegs;
    target->local_bytes = static_cast<std::int64_t>(a.localSizeBytes);
    target->static_smem = static_cast<std::int64_t>(a.sharedSizeBytes);
    if (!target->dynamic_smem) target->dynamic_smem = static_cast<std::int64_t>(r.smem);
  }
  return Status::success();
}
}  // namespace detail

/// Profiles `launch` (see the file comment) into `rec`, keeping what the caller already set there
/// (op, shape, expected bytes, copy ceiling, empty-kernel time). `rotations` as for time_kernel.
template <class Launch>
Status profile_call(Launch&& launch, std::size_t rotations, cudaStream_t stream, const Options& opt,
                    ProfileRecord& rec, const std::vector<KernelResources>& resources = {}) {
  if (rotations == 0) rotations = 1;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) (void)Status::from_cuda_call(e, "cudaGetDeviceCount");  // takes its error out
  if (e != cudaSuccess || count == 0) {
    rec.activity_status = rec.metrics_status = "no usable CUDA device";
    return Status::unsupported("profile: no usable CUDA device");
  }
  KTUNE_TRY(device_facts(rec.device));
  rec.kernels.clear();

  if (opt.events) {
    TimingOptions t = opt.timing;
    if (stream == nullptr) t.graph = false;  // the legacy default stream cannot be captured
    TimingResult r;
    KTUNE_TRY(time_kernel(launch, rotations, stream, t, r));
    rec.event_us = r.median_us;
    rec.event_spread = r.spread();
    rec.event_graph = r.graph;
  }

  if (opt.activity_calls > 0) {
    std::lock_guard<std::mutex> lock(detail::cupti_mutex());
    std::string why;
    ActivityCollector c;
    Status st = c.start(why);
    std::vector<KernelActivity> acts;
    if (st.ok()) {
      // Launch errors end the profile; CUPTI errors only this step.
      for (int i = 0; i < opt.activity_calls; ++i) {
        const Status launched = launch(static_cast<std::size_t>(i) % rotations);
        if (!launched.ok()) {
          std::string ignored;
          (void)c.stop(acts, ignored);  // the launch's error is the one to report
          return launched;
        }
      }
      KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
      st = c.stop(acts, why);
    }
    if (st.ok() && detail::kernels_from_activity(acts, opt.activity_calls, rec.kernels, why))
      rec.activity_status = "ok";
    else
      rec.activity_status = std::string(st.ok() ? "activity records unusable" : st.message) + ": " + why;
  }

  if (opt.metrics) {
    std::string why;
    std::vector<RangeValues> ranges;
    std::size_t passes = 0;
    const Status st = collect_metrics([&]() -> Status { return launch(0); }, stream, default_metric_names(opt.stalls),
                                      ranges, passes, why, opt.metrics_options);
    rec.metric_passes = static_cast<int>(passes);
    if (st.code == StatusCode::cuda_error) return st;  // the launch or the runtime failed, not CUPTI
    if (!st.ok()) {
      rec.metrics_status = std::string(st.message) + ": " + why;
    } else if (!rec.kernels.empty() && ranges.size() != rec.kernels.size()) {
      rec.metrics_status = "the range profiler saw " + std::to_string(ranges.size()) + " kernels, the activity API " +
                           std::to_string(rec.kernels.size()) + "; metrics not attached";
    } else {
      detail::apply_ranges(ranges, rec.kernels);
      rec.metrics_status = "ok";
    }
  }

  KTUNE_TRY(detail::apply_attributes(resources, rec.kernels));
  return Status::success();
}

}  // namespace ktune::profile
