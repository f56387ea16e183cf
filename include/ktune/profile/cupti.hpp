// ktune/profile/cupti.hpp: the two CUPTI services ktune uses, wrapped with ktune's error model.
//
// - ActivityCollector: kernel activity records (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) of everything
//   enqueued between start() and stop(): the exact device start/end of each kernel, its launch shape
//   and resources. An alternative timer to CUDA events, with none of the host's launch gaps in it.
// - collect_metrics(): hardware metrics through the range profiler API of CUDA 12.6+ (cupti_range_
//   profiler.h + cupti_profiler_host.h) in auto-range, kernel-replay mode: every kernel the launch
//   enqueues becomes one range; CUPTI replays it as many passes as the metrics need, saving and
//   restoring device memory between passes, so in-place kernels are profiled correctly.
//
// Failure is an expected outcome here (no GPU, counters restricted to admin users, another profiler
// attached, a virtualised device): every function returns a ktune::Status whose static message names
// the cause class, and writes the specific CUPTI call and result string into `why`. Nothing exits,
// nothing prints. CUPTI's state is per process: the functions serialise on one mutex, and the
// activity records collected are those of every stream, so profile with the process otherwise idle.
//
// Header-only; link CUDA::cupti (the ktune::profile CMake target does). libcupti loads the driver
// and libnvperf_host itself, so a binary linking it still starts on a machine without a GPU.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "../status.hpp"

namespace ktune::profile {

// ---- errors -------------------------------------------------------------------------------------

/// The Status for a failed CUPTI call: the message names the class of cause (static text); `why`
/// receives the call, CUPTI's own result string and, for privileges, the documented remedy.
inline Status cupti_failure(CUptiResult r, const char* call, std::string& why) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI result";
  why = std::string(call) + " failed: " + text + " (" + std::to_string(static_cast<int>(r)) + ")";
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      why += "; GPU performance counters are restricted to admin users: run as root, or load the driver with "
             "NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
      return Status::unsupported("CUPTI: GPU performance counters are not permitted for this user");
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_INVALID_CHIP_NAME:
      return Status::unsupported("CUPTI: profiling is not supported on this device or configuration");
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_HARDWARE_BUSY:
      return Status::unsupported("CUPTI: another profiler holds the GPU's counters (Nsight or another CUPTI client)");
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_INVALID_DEVICE:
    case CUPTI_ERROR_INVALID_CONTEXT:
      return Status::unsupported("CUPTI: could not attach to a CUDA device (no usable GPU or driver)");
    case CUPTI_ERROR_INVALID_METRIC_NAME:
      return Status::invalid("CUPTI: a requested metric is not known on this GPU");
    default:
      return Status{StatusCode::internal, "CUPTI: a profiling call failed", cudaSuccess};
  }
}

#define KTUNE_CUPTI_TRY(call, why)                                           \
  do {                                                                       \
    const CUptiResult ktune_cupti_r_ = (call);                               \
    if (ktune_cupti_r_ != CUPTI_SUCCESS)                                     \
      return ::ktune::profile::cupti_failure(ktune_cupti_r_, #call, (why));  \
  } while (0)

namespace detail {
/// A CUPTI parameter struct, zeroed, with its structSize set (CUPTI's versioning convention).
template <class Params>
Params params(std::size_t struct_size) {
  Params p{};
  p.structSize = struct_size;
  return p;
}

/// One profiling client at a time per process (CUPTI's activity and profiler state are global).
inline std::mutex& cupti_mutex() {
  static std::mutex m;
  return m;
}

/// The current CUDA context through the runtime's driver entry point, so that ktune links no
/// libcuda (a binary must start on machines without a driver and skip its GPU work).
inline Status current_context(CUcontext& ctx, std::string& why) {
  KTUNE_CUDA_TRY(cudaFree(nullptr));  // creates the primary context when none is current yet
  using GetCurrent = CUresult (*)(CUcontext*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  KTUNE_CUDA_TRY(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
    why = "cudaGetDriverEntryPointByVersion(cuCtxGetCurrent) found no symbol";
    return Status{StatusCode::internal, "CUDA driver entry point cuCtxGetCurrent unavailable", cudaSuccess};
  }
  ctx = nullptr;
  if (reinterpret_cast<GetCurrent>(fn)(&ctx) != CUDA_SUCCESS || ctx == nullptr) {
    why = "cuCtxGetCurrent returned no context";
    return Status{StatusCode::internal, "no current CUDA context", cudaSuccess};
  }
  return Status::success();
}
}  // namespace detail

// ---- activity API ----------------------------------------------------------------------------------

/// One kernel execution as CUPTI's activity API records it. Times are device timestamps in ns.
struct KernelActivity {
  std::string name;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t device = 0, stream = 0, correlation = 0;
  std::int64_t grid[3] = {0, 0, 0};
  std::int64_t block[3] = {0, 0, 0};
  std::int64_t cluster = 1;
  int registers = 0;
  std::int64_t static_smem = 0, dynamic_smem = 0, local_bytes = 0;
  double duration_us() const { return static_cast<double>(end_ns - start_ns) * 1e-3; }
};

namespace detail {
struct ActivityState {
  std::mutex mutex;  // the buffer-completed callback may run on a CUPTI worker thread
  std::vector<KernelActivity> records;
  std::size_t dropped = 0;
};
inline ActivityState& activity_state() {
  static ActivityState s;
  return s;
}

inline constexpr std::size_t activity_buffer_bytes = std::size_t{1} << 20;

inline void CUPTIAPI activity_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // CUPTI requires 8-byte alignment; aligned_alloc's size must be a multiple of the alignment.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, activity_buffer_bytes));
  *size = *buffer ? activity_buffer_bytes : 0;
  *max_records = 0;  // as many as fit
}

inline void CUPTIAPI activity_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size,
                                               size_t valid) {
  (void)size;
  ActivityState& s = activity_state();
  std::vector<KernelActivity> got;
  CUpti_Activity* rec = nullptr;
  while (buffer && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    KernelActivity a;
    a.name = k->name ? k->name : "";
    a.start_ns = k->start;
    a.end_ns = k->end;
    a.device = k->deviceId;
    a.stream = k->streamId;
    a.correlation = k->correlationId;
    a.grid[0] = k->gridX, a.grid[1] = k->gridY, a.grid[2] = k->gridZ;
    a.block[0] = k->blockX, a.block[1] = k->blockY, a.block[2] = k->blockZ;
    const std::int64_t cluster = static_cast<std::int64_t>(k->clusterX) * k->clusterY * k->clusterZ;
    a.cluster = cluster > 0 ? cluster : 1;
    a.registers = k->registersPerThread;
    a.static_smem = k->staticSharedMemory;
    a.dynamic_smem = k->dynamicSharedMemory;
    a.local_bytes = k->localMemoryPerThread;
    got.push_back(std::move(a));
  }
  size_t dropped = 0;
  if (ctx) cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.records.insert(s.records.end(), got.begin(), got.end());
    s.dropped += dropped;
  }
  std::free(buffer);
}

inline Status register_activity_callbacks(std::string& why) {
  // Registered once per process; CUPTI keeps them across enable/disable.
  static std::string failure;
  static const Status st = [] {
    const CUptiResult r = cuptiActivityRegisterCallbacks(activity_buffer_requested, activity_buffer_completed);
    return r == CUPTI_SUCCESS ? Status::success() : cupti_failure(r, "cuptiActivityRegisterCallbacks", failure);
  }();
  if (!st.ok()) why = failure;
  return st;
}
}  // namespace detail

/// Records the kernels executed between start() and stop(). One collector active at a time.
class ActivityCollector {
 public:
  ActivityCollector() = default;
  ActivityCollector(const ActivityCollector&) = delete;
  ActivityCollector& operator=(const ActivityCollector&) = delete;
  ~ActivityCollector() {
    if (enabled_) {
      cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
  }

  Status start(std::string& why) {
    if (enabled_) return Status::invalid("ActivityCollector::start: already started");
    KTUNE_TRY(detail::register_activity_callbacks(why));
    // Drop whatever an earlier user left in CUPTI's buffers.
    KTUNE_CUPTI_TRY(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), why);
    {
      detail::ActivityState& s = detail::activity_state();
      std::lock_guard<std::mutex> lock(s.mutex);
      s.records.clear();
      s.dropped = 0;
    }
    KTUNE_CUPTI_TRY(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), why);
    enabled_ = true;
    return Status::success();
  }

  /// Stops recording (the caller has synchronised the work) and returns the kernels by start time.
  Status stop(std::vector<KernelActivity>& out, std::string& why) {
    out.clear();
    if (!enabled_) return Status::invalid("ActivityCollector::stop: not started");
    enabled_ = false;
    KTUNE_CUPTI_TRY(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), why);
    // A forced flush hands over partially filled buffers too, and returns after the callbacks ran.
    KTUNE_CUPTI_TRY(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), why);
    detail::ActivityState& s = detail::activity_state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.dropped > 0) {
      why = std::to_string(s.dropped) + " kernel activity records were dropped (CUPTI buffers full)";
      return Status{StatusCode::internal, "CUPTI dropped activity records", cudaSuccess};
    }
    out.swap(s.records);
    std::stable_sort(out.begin(), out.end(),
                     [](const KernelActivity& a, const KernelActivity& b) { return a.start_ns < b.start_ns; });
    return Status::success();
  }

 private:
  bool enabled_ = false;
};

// ---- range profiler -----------------------------------------------------------------------------

/// Hardware metric values of one range (one kernel, in auto-range mode): metric name -> value.
using RangeValues = std::map<std::string, double>;

struct MetricsOptions {
  std::size_t max_ranges = 64;   ///< kernels one call may enqueue
  int max_submit_rounds = 64;    ///< guard for replay modes that need the launch repeated
};

namespace detail {
/// Why the range profiler cannot be used on `device`, from cuptiProfilerDeviceSupported.
inline Status range_profiler_supported(int device, std::string& why) {
  auto p = detail::params<CUpti_Profiler_DeviceSupported_Params>(CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE);
  p.cuDevice = device;
  p.api = CUPTI_PROFILER_RANGE_PROFILING;
  KTUNE_CUPTI_TRY(cuptiProfilerDeviceSupported(&p), why);
  if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return Status::success();
  struct Item { const char* what; CUpti_Profiler_Support_Level level; };
  const Item items[] = {{"architecture", p.architecture}, {"SLI", p.sli}, {"vGPU", p.vGpu},
                        {"confidential computing", p.confidentialCompute}, {"CMP", p.cmp}, {"WSL", p.wsl}};
  why = "cuptiProfilerDeviceSupported: range profiling unavailable:";
  for (const Item& i : items)
    if (i.level == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED) why += std::string(" ") + i.what + " unsupported;";
    else if (i.level == CUPTI_PROFILER_CONFIGURATION_DISABLED) why += std::string(" ") + i.what + " disabled by the system;";
  return Status::unsupported("CUPTI: profiling is not supported on this device or configuration");
}

inline Status profiler_initialize(std::string& why) {
  static std::string failure;
  static const Status st = [] {
    auto p = detail::params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    const CUptiResult r = cuptiProfilerInitialize(&p);
    return r == CUPTI_SUCCESS ? Status::success() : cupti_failure(r, "cuptiProfilerInitialize", failure);
  }();
  if (!st.ok()) why = failure;
  return st;
}

/// Owns a profiler host object: metric scheduling and evaluation for one chip, no device needed.
class HostObject {
 public:
  HostObject() = default;
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;
  ~HostObject() {
    if (obj_) {
      auto p = detail::params<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
      p.pHostObject = obj_;
      cuptiProfilerHostDeinitialize(&p);
    }
  }
  Status init(const char* chip, const std::vector<std::uint8_t>& availability, std::string& why) {
    auto p = detail::params<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip;
    p.pCounterAvailabilityImage = availability.empty() ? nullptr : availability.data();
    KTUNE_CUPTI_TRY(cuptiProfilerHostInitialize(&p), why);
    obj_ = p.pHostObject;
    return Status::success();
  }
  /// The config image scheduling `metrics` into passes, and how many passes it takes.
  Status config_image(std::vector<const char*>& metrics, std::vector<std::uint8_t>& image, std::size_t& passes,
                      std::string& why) {
    auto add = detail::params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = obj_;
    add.ppMetricNames = metrics.data();
    add.numMetrics = metrics.size();
    const CUptiResult added = cuptiProfilerHostConfigAddMetrics(&add);
    if (added != CUPTI_SUCCESS) {
      // CUPTI reports only "invalid parameter": name the metric it does not know, if that is why.
      for (const char* m : metrics) {
        auto q = detail::params<CUpti_Profiler_Host_GetMetricProperties_Params>(CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE);
        q.pHostObject = obj_;
        q.pMetricName = m;
        if (cuptiProfilerHostGetMetricProperties(&q) != CUPTI_SUCCESS) {
          why = std::string("metric '") + m + "' is not known for this chip";
          return Status::invalid("CUPTI: a requested metric is not known on this GPU");
        }
      }
      return cupti_failure(added, "cuptiProfilerHostConfigAddMetrics", why);
    }
    auto size = detail::params<CUpti_Profiler_Host_GetConfigImageSize_Params>(CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = obj_;
    KTUNE_CUPTI_TRY(cuptiProfilerHostGetConfigImageSize(&size), why);
    image.assign(size.configImageSize, 0);
    auto get = detail::params<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    get.pHostObject = obj_;
    get.configImageSize = image.size();
    get.pConfigImage = image.data();
    KTUNE_CUPTI_TRY(cuptiProfilerHostGetConfigImage(&get), why);
    auto np = detail::params<CUpti_Profiler_Host_GetNumOfPasses_Params>(CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
    np.configImageSize = image.size();
    np.pConfigImage = image.data();
    KTUNE_CUPTI_TRY(cuptiProfilerHostGetNumOfPasses(&np), why);
    passes = np.numOfPasses;
    return Status::success();
  }
  Status evaluate(const std::vector<std::uint8_t>& counter_data, std::size_t range, std::vector<const char*>& metrics,
                  std::vector<double>& values, std::string& why) {
    values.assign(metrics.size(), 0.0);
    auto p = detail::params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    p.pHostObject = obj_;
    p.pCounterDataImage = counter_data.data();
    p.counterDataImageSize = counter_data.size();
    p.rangeIndex = range;
    p.ppMetricNames = metrics.data();
    p.numMetrics = metrics.size();
    p.pMetricValues = values.data();
    KTUNE_CUPTI_TRY(cuptiProfilerHostEvaluateToGpuValues(&p), why);
    return Status::success();
  }

 private:
  CUpti_Profiler_Host_Object* obj_ = nullptr;
};

/// Owns the range profiler enabled on a context.
class RangeProfilerGuard {
 public:
  RangeProfilerGuard() = default;
  RangeProfilerGuard(const RangeProfilerGuard&) = delete;
  RangeProfilerGuard& operator=(const RangeProfilerGuard&) = delete;
  ~RangeProfilerGuard() {
    if (obj_) {
      auto p = detail::params<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      p.pRangeProfilerObject = obj_;
      cuptiRangeProfilerDisable(&p);
    }
  }
  Status enable(CUcontext ctx, std::string& why) {
    auto p = detail::params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    p.ctx = ctx;
    KTUNE_CUPTI_TRY(cuptiRangeProfilerEnable(&p), why);
    obj_ = p.pRangeProfilerObject;
    return Status::success();
  }
  CUpti_RangeProfiler_Object* get() const { return obj_; }

 private:
  CUpti_RangeProfiler_Object* obj_ = nullptr;
};
}  // namespace detail

/// Checks on the host alone (no device, no driver) that every metric is known for `chip` (e.g.
/// "GH100") and returns how many replay passes they take together.
inline Status check_metrics_for_chip(const char* chip, const std::vector<std::string>& metrics, std::size_t& passes,
                                     std::string& why) {
  std::lock_guard<std::mutex> lock(detail::cupti_mutex());
  std::vector<const char*> names;
  for (const std::string& m : metrics) names.push_back(m.c_str());
  detail::HostObject host;
  KTUNE_TRY(host.init(chip, {}, why));
  std::vector<std::uint8_t> image;
  return host.config_image(names, image, passes, why);
}

/// Runs `launch()` (a callable returning Status that enqueues one call on `stream`) once under the
/// range profiler and evaluates `metrics` for each kernel it enqueued, in launch order.
template <class Launch>
Status collect_metrics(Launch&& launch, cudaStream_t stream, const std::vector<std::string>& metrics,
                       std::vector<RangeValues>& ranges, std::size_t& passes, std::string& why,
                       const MetricsOptions& opt = {}) {
  ranges.clear();
  passes = 0;
  std::lock_guard<std::mutex> lock(detail::cupti_mutex());
  int device = 0;
  KTUNE_CUDA_TRY(cudaGetDevice(&device));
  CUcontext ctx = nullptr;
  KTUNE_TRY(detail::current_context(ctx, why));
  KTUNE_TRY(detail::profiler_initialize(why));
  KTUNE_TRY(detail::range_profiler_supported(device, why));

  auto chip = detail::params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  chip.deviceIndex = static_cast<size_t>(device);
  KTUNE_CUPTI_TRY(cuptiDeviceGetChipName(&chip), why);

  auto avail = detail::params<CUpti_Profiler_GetCounterAvailability_Params>(CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
  avail.ctx = ctx;
  KTUNE_CUPTI_TRY(cuptiProfilerGetCounterAvailability(&avail), why);
  std::vector<std::uint8_t> availability(avail.counterAvailabilityImageSize, 0);
  avail.pCounterAvailabilityImage = availability.data();
  KTUNE_CUPTI_TRY(cuptiProfilerGetCounterAvailability(&avail), why);

  std::vector<const char*> names;
  for (const std::string& m : metrics) names.push_back(m.c_str());
  detail::HostObject host;
  KTUNE_TRY(host.init(chip.pChipName, availability, why));
  std::vector<std::uint8_t> config;
  KTUNE_TRY(host.config_image(names, config, passes, why));

  detail::RangeProfilerGuard rp;
  KTUNE_TRY(rp.enable(ctx, why));

  auto ds = detail::params<CUpti_RangeProfiler_GetCounterDataSize_Params>(CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
  ds.pRangeProfilerObject = rp.get();
  ds.pMetricNames = names.data();
  ds.numMetrics = names.size();
  ds.maxNumOfRanges = opt.max_ranges;
  ds.maxNumRangeTreeNodes = static_cast<uint32_t>(opt.max_ranges);
  KTUNE_CUPTI_TRY(cuptiRangeProfilerGetCounterDataSize(&ds), why);
  std::vector<std::uint8_t> counter_data(ds.counterDataSize, 0);
  auto ci = detail::params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  ci.pRangeProfilerObject = rp.get();
  ci.counterDataSize = counter_data.size();
  ci.pCounterData = counter_data.data();
  KTUNE_CUPTI_TRY(cuptiRangeProfilerCounterDataImageInitialize(&ci), why);

  auto sc = detail::params<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
  sc.pRangeProfilerObject = rp.get();
  sc.configSize = config.size();
  sc.pConfig = config.data();
  sc.counterDataImageSize = counter_data.size();
  sc.pCounterDataImage = counter_data.data();
  sc.range = CUPTI_AutoRange;
  sc.replayMode = CUPTI_KernelReplay;
  sc.maxRangesPerPass = opt.max_ranges;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  KTUNE_CUPTI_TRY(cuptiRangeProfilerSetConfig(&sc), why);

  // Kernel replay runs every pass inside each launch, so one round submits everything; the loop
  // only guards against a CUPTI that wants the launch repeated.
  bool submitted = false;
  for (int round = 0; round < opt.max_submit_rounds && !submitted; ++round) {
    auto start = detail::params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    start.pRangeProfilerObject = rp.get();
    KTUNE_CUPTI_TRY(cuptiRangeProfilerStart(&start), why);
    const Status launched = launch();
    const cudaError_t synced = cudaStreamSynchronize(stream);
    auto stop = detail::params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    stop.pRangeProfilerObject = rp.get();
    const CUptiResult stopped = cuptiRangeProfilerStop(&stop);
    KTUNE_TRY(launched);
    KTUNE_CUDA_TRY(synced);
    if (stopped != CUPTI_SUCCESS) return cupti_failure(stopped, "cuptiRangeProfilerStop", why);
    submitted = stop.isAllPassSubmitted != 0;
  }
  if (!submitted) {
    why = "cuptiRangeProfilerStop never reported all passes submitted";
    return Status{StatusCode::internal, "CUPTI: profiling passes incomplete", cudaSuccess};
  }

  auto dec = detail::params<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
  dec.pRangeProfilerObject = rp.get();
  KTUNE_CUPTI_TRY(cuptiRangeProfilerDecodeData(&dec), why);
  if (dec.numOfRangeDropped > 0) {
    why = std::to_string(dec.numOfRangeDropped) + " ranges dropped: the call enqueued more than " +
          std::to_string(opt.max_ranges) + " kernels";
    return Status{StatusCode::internal, "CUPTI: profiling ranges dropped", cudaSuccess};
  }

  auto info = detail::params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  info.pCounterDataImage = counter_data.data();
  info.counterDataImageSize = counter_data.size();
  KTUNE_CUPTI_TRY(cuptiRangeProfilerGetCounterDataInfo(&info), why);
  std::vector<double> values;
  for (std::size_t r = 0; r < info.numTotalRanges; ++r) {
    KTUNE_TRY(host.evaluate(counter_data, r, names, values, why));
    RangeValues rv;
    for (std::size_t m = 0; m < metrics.size(); ++m) rv[metrics[m]] = values[m];
    ranges.push_back(std::move(rv));
  }
  return Status::success();
}

}  // namespace ktune::profile
