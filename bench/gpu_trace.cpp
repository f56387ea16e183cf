// bench/gpu_trace.cpp: KTUNE_TRACE (gpu_trace.hpp): CUPTI's activity records against the host's spans.
#include "gpu_trace.hpp"

#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <type_traits>
#include <unordered_map>
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

enum class Kind : std::uint8_t { kernel, copy, fill };

/// One activity, compact: a tune records millions.
struct Record {
  std::uint64_t start, end, bytes;
  const char* name;  // a kernel's (CUPTI shares one string per kernel for the process)
  Kind kind;
  std::uint8_t copy_kind;
};

struct Interval {
  std::uint64_t begin, end;
};

/// Sorted, disjoint intervals covering the same time as `v`.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.end <= i.begin) continue;
    if (!out.empty() && i.begin <= out.back().end) out.back().end = std::max(out.back().end, i.end);
    else out.push_back(i);
  }
  return out;
}

/// Calls f(overlap_ns, a_index, b_index) for every overlap of two sorted disjoint interval lists.
template <class F>
void overlaps(const std::vector<Interval>& a, const std::vector<Interval>& b, F&& f) {
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const std::uint64_t lo = std::max(a[i].begin, b[j].begin), hi = std::min(a[i].end, b[j].end);
    if (hi > lo) f(hi - lo, i, j);
    if (a[i].end < b[j].end) ++i;
    else ++j;
  }
}

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
  std::vector<Record> records;
  std::size_t dropped = 0;
  std::vector<std::pair<const char*, Interval>> spans;
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
    std::vector<Record> got;
    CUpti_Activity* rec = nullptr;
    while (t->cupti.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        got.push_back({k->start, k->end, 0, k->name, Kind::kernel, 0});
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        got.push_back({m->start, m->end, m->bytes, nullptr, Kind::copy, m->copyKind});
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        got.push_back({m->start, m->end, m->bytes, nullptr, Kind::fill, 0});
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
  impl_->spans.push_back({label, {begin, end}});
}

std::string GpuTrace::finish(std::string& summary) {
  Impl& t = *impl_;
  const std::uint64_t stopped = now();
  for (CUpti_ActivityKind k : recorded) t.cupti.disable(k);
  t.cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  active = nullptr;
  std::lock_guard lock(t.mutex);

  std::vector<Interval> work;
  work.reserve(t.records.size());
  std::unordered_map<const char*, std::pair<std::size_t, std::uint64_t>> kernels;  // name -> (count, ns)
  std::map<std::string, std::array<double, 3>> copies;                            // kind -> (count, bytes, ns)
  for (const Record& r : t.records) {
    work.push_back({r.start, r.end});
    const std::uint64_t ns = r.end > r.start ? r.end - r.start : 0;
    if (r.kind == Kind::kernel) {
      auto& k = kernels[r.name];
      ++k.first;
      k.second += ns;
    } else {
      auto& c = copies[r.kind == Kind::fill ? "fill" : copy_kind_name(r.copy_kind)];
      c[0] += 1;
      c[1] += static_cast<double>(r.bytes);
      c[2] += static_cast<double>(ns);
    }
  }
  const std::vector<Interval> busy = merged(std::move(work));
  std::vector<Interval> idle;  // the gaps between busy intervals, within the run
  for (std::size_t i = 0; i < busy.size(); ++i) {
    const std::uint64_t from = i == 0 ? t.started : busy[i - 1].end;
    if (busy[i].begin > from) idle.push_back({from, busy[i].begin});
  }
  if (!busy.empty() && stopped > busy.back().end) idle.push_back({busy.back().end, stopped});
  else if (busy.empty() && stopped > t.started) idle.push_back({t.started, stopped});

  auto seconds = [](double ns) { return ns * 1e-9; };
  // Idle time by the length of the gap it lies in: many short gaps are synchronisations and launches,
  // long ones the host's own work while the GPU waits.
  constexpr std::array<std::pair<double, const char*>, 5> buckets = {
      {{10e3, "under_10us"}, {50e3, "10_50us"}, {200e3, "50_200us"}, {1e6, "200us_1ms"}, {1e300, "over_1ms"}}};
  auto idle_by_gap = [&](const std::vector<Interval>& within) {
    std::array<double, buckets.size()> ns{};
    overlaps(within, idle, [&](std::uint64_t overlap, std::size_t, std::size_t g) {
      const double len = static_cast<double>(idle[g].end - idle[g].begin);
      std::size_t b = 0;
      while (len >= buckets[b].first) ++b;
      ns[b] += static_cast<double>(overlap);
    });
    nlohmann::json j = nlohmann::json::object();
    for (std::size_t b = 0; b < buckets.size(); ++b) j[buckets[b].second] = seconds(ns[b]);
    return j;
  };
  auto busy_in = [&](const std::vector<Interval>& within) {
    double ns = 0;
    overlaps(within, busy, [&](std::uint64_t overlap, std::size_t, std::size_t) { ns += static_cast<double>(overlap); });
    return ns;
  };
  auto wall_of = [](const std::vector<Interval>& v) {
    double ns = 0;
    for (const Interval& i : v) ns += static_cast<double>(i.end - i.begin);
    return ns;
  };

  std::map<std::string, std::vector<Interval>> by_label;
  for (const auto& [label, span] : t.spans) by_label[label].push_back(span);
  const std::vector<Interval> run{{t.started, stopped}};
  const double run_busy = busy_in(run), run_wall = wall_of(run);
  nlohmann::json out;
  out["wall_s"] = seconds(run_wall);
  out["busy_s"] = seconds(run_busy);
  out["activities"] = t.records.size();
  out["idle_by_gap_s"] = idle_by_gap(run);
  std::string phases;
  for (auto& [label, spans] : by_label) {
    const std::vector<Interval> m = merged(std::move(spans));
    const double wall = wall_of(m), b = busy_in(m);
    out["labels"][label] = {{"wall_s", seconds(wall)}, {"busy_s", seconds(b)}, {"idle_by_gap_s", idle_by_gap(m)}};
    if (label.find('.') == std::string::npos) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "; %s %.1f s, busy %.1f s", label.c_str(), seconds(wall), seconds(b));
      phases += buf;
    }
  }
  std::vector<std::pair<std::uint64_t, std::pair<const char*, std::size_t>>> top;
  for (const auto& [name, k] : kernels) top.push_back({k.second, {name, k.first}});
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  out["kernels"] = nlohmann::json::array();
  for (std::size_t i = 0; i < top.size() && i < 60; ++i)
    out["kernels"].push_back({{"name", top[i].second.first ? top[i].second.first : "?"},
                              {"count", top[i].second.second},
                              {"total_s", seconds(static_cast<double>(top[i].first))}});
  for (const auto& [kind, c] : copies) out["copies"][kind] = {{"count", c[0]}, {"bytes", c[1]}, {"total_s", seconds(c[2])}};

  char buf[160];
  std::snprintf(buf, sizeof buf, "GPU busy %.1f s of %.1f s (%.0f%%)", seconds(run_busy), seconds(run_wall),
                run_wall > 0 ? 100 * run_busy / run_wall : 0.0);
  summary = buf + phases;
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
