// bench/gpu_trace.cpp: KTUNE_TRACE (gpu_trace.hpp): CUPTI's activity records against the host's spans.
#include "gpu_trace.hpp"
#include "trace_analysis.hpp"

#include <cupti.h>
#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ktune::bench {

namespace {

/// The CUPTI entry points a trace uses, from libcupti loaded at run time.
struct Cupti {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;

  std::string load() {
    void* lib = nullptr;
    for (const char* name : {"libcupti.so", "libcupti.so.13", "libcupti.so.12"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) return std::string("libcupti could not be loaded: ") + dlerror();
    auto get = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      return fn != nullptr;
    };
    if (!get(register_callbacks, "cuptiActivityRegisterCallbacks") || !get(enable, "cuptiActivityEnable") ||
        !get(disable, "cuptiActivityDisable") || !get(flush_all, "cuptiActivityFlushAll") ||
        !get(next_record, "cuptiActivityGetNextRecord") || !get(dropped, "cuptiActivityGetNumDroppedRecords") ||
        !get(timestamp, "cuptiGetTimestamp"))
      return "libcupti lacks an activity entry point";
    return {};
  }
};

constexpr std::array<CUpti_ActivityKind, 3> recorded = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                                        CUPTI_ACTIVITY_KIND_MEMSET};
constexpr std::size_t buffer_bytes = std::size_t{8} << 20;

const char* copy_kind_name(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "host_to_device";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "device_to_host";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "device_to_device";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "host_to_host";
    default: return "other";
  }
}

}  // namespace

struct GpuTrace::Impl {
  Cupti cupti;
  std::string path;
  std::mutex mutex;  // CUPTI hands buffers over on a thread of its own
  std::vector<trace::Activity> records;
  std::size_t dropped = 0;
  std::vector<trace::Span> spans;
  std::uint64_t started = 0;
};

namespace {
GpuTrace::Impl* active = nullptr;  // CUPTI's callbacks are plain functions: one trace per process

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = *buffer ? buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  GpuTrace::Impl* t = active;
  if (t && buffer) {
    std::vector<trace::Activity> got;
    CUpti_Activity* rec = nullptr;
    while (t->cupti.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        got.push_back({k->start, k->end, 0, k->name ? k->name : "?", true});
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        got.push_back({m->start, m->end, m->bytes, copy_kind_name(m->copyKind), false});
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        got.push_back({m->start, m->end, m->bytes, "fill", false});
      }
    }
    size_t lost = 0;
    if (ctx) t->cupti.dropped(ctx, stream, &lost);
    std::lock_guard lock(t->mutex);
    t->records.insert(t->records.end(), got.begin(), got.end());
    t->dropped += lost;
  }
  std::free(buffer);
}
}  // namespace

GpuTrace::GpuTrace(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GpuTrace::~GpuTrace() {
  if (active == impl_.get()) {
    for (CUpti_ActivityKind k : recorded) impl_->cupti.disable(k);
    impl_->cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    active = nullptr;
  }
}

std::unique_ptr<GpuTrace> GpuTrace::from_env(std::string& error) {
  error.clear();
  const char* path = std::getenv("KTUNE_TRACE");
  if (!path || !*path) return nullptr;
  if (active) {
    error = "KTUNE_TRACE: a trace is already recording";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  if ((error = impl->cupti.load()).empty()) {
    if (impl->cupti.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS)
      error = "KTUNE_TRACE: cuptiActivityRegisterCallbacks failed";
    for (CUpti_ActivityKind k : recorded)
      if (error.empty() && impl->cupti.enable(k) != CUPTI_SUCCESS)
        error = "KTUNE_TRACE: CUPTI cannot record activity of kind " + std::to_string(static_cast<int>(k));
  } else {
    error = "KTUNE_TRACE: " + error;
  }
  if (!error.empty()) return nullptr;
  impl->cupti.timestamp(&impl->started);
  active = impl.get();
  return std::unique_ptr<GpuTrace>(new GpuTrace(std::move(impl)));
}

std::uint64_t GpuTrace::now() const {
  std::uint64_t t = 0;
  impl_->cupti.timestamp(&t);
  return t;
}

void GpuTrace::span(const char* label, std::uint64_t begin, std::uint64_t end) {
  std::lock_guard lock(impl_->mutex);
  impl_->spans.push_back({label, begin, end});
}


std::string GpuTrace::finish(std::string& summary) {
  Impl& t = *impl_;
  const std::uint64_t stopped = now();
  for (CUpti_ActivityKind k : recorded) t.cupti.disable(k);
  t.cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  active = nullptr;
  std::lock_guard lock(t.mutex);
  const nlohmann::json out = trace::analyse(t.records, t.spans, t.started, stopped, summary);
  const std::string tmp = t.path + ".tmp";
  {
    std::ofstream f(tmp);
    f << out.dump(1) << "\n";
    if (!f) return "KTUNE_TRACE: cannot write " + tmp;
  }
  if (std::rename(tmp.c_str(), t.path.c_str()) != 0) return "KTUNE_TRACE: cannot write " + t.path;
  if (t.dropped) return "KTUNE_TRACE: CUPTI dropped " + std::to_string(t.dropped) + " activity records: the busy time is short by them";
  return {};
}

}  // namespace ktune::bench
