// ktune/profile/metrics.hpp: what profiling one call of a variant records, as plain data.
//
// A ProfileRecord holds, for one call (a launch that may enqueue several kernels): the CUDA-event
// time, the empty-kernel floor and copy ceiling measured beside it, the bytes the spec says the call
// must move, the device's limits, and per kernel the launch shape and resources (CUPTI activity
// records and cudaFuncGetAttributes), the exact device duration (activity API) and the hardware
// metrics (CUPTI range profiler). Every measured value is optional: a field stays empty when the
// source that provides it was not permitted or failed, and the statuses say why.
//
// Host-only and free of CUPTI, so the diagnosis rules (ktune/diagnose.hpp), the reports and the
// tests use it anywhere. JSON through nlohmann-json: absent values are omitted, never written as 0.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ktune::profile {

/// Which hardware metrics a kernel record can hold: the JSON key, the Nsight Compute / perfworks
/// metric it comes from, and the factor applied to the CUPTI value (occupancy is stored in [0, 1]).
struct KernelMetrics;
using OptionalMetric = std::optional<double> KernelMetrics::*;
struct MetricField {
  const char* key;
  const char* cupti;
  double scale;
  OptionalMetric member;
};

/// One kernel of a profiled call.
struct KernelMetrics {
  // ---- launch shape and resources: CUPTI activity record, or cudaFuncGetAttributes -------------
  std::string name;                       ///< the kernel's (mangled) name
  std::int64_t grid[3] = {0, 0, 0};       ///< blocks per dimension; 0 when unknown
  std::int64_t block[3] = {0, 0, 0};      ///< threads per dimension; 0 when unknown
  std::int64_t cluster = 1;               ///< blocks per cluster (x*y*z)
  std::optional<int> registers;           ///< per thread
  std::optional<std::int64_t> static_smem;    ///< bytes per block
  std::optional<std::int64_t> dynamic_smem;   ///< bytes per block
  std::optional<std::int64_t> local_bytes;    ///< local memory per thread: spills or indexed arrays

  // ---- exact device duration: CUPTI activity API, median over the profiled calls --------------
  std::optional<double> duration_us;
  std::optional<double> duration_spread;  ///< (max - min) / median over those calls
  int duration_samples = 0;

  // ---- hardware metrics: CUPTI range profiler, one kernel-replayed range per kernel ----------
  std::optional<double> gpu_time_ns;          ///< duration under profiling (replay) conditions
  std::optional<double> dram_read_bytes;
  std::optional<double> dram_write_bytes;
  std::optional<double> dram_throughput_pct;  ///< % of peak sustained DRAM throughput, elapsed
  std::optional<double> achieved_occupancy;   ///< active warps / max warps per SM, in [0, 1]
  std::optional<double> sm_throughput_pct;
  /// Nsight Compute's L2 hit rate, lts__t_sector_hit_rate.pct, as read: lookup hits over lts__t_sectors,
  /// a counter of all L2 sector traffic (every client) that the range profiler may count in another
  /// replay pass than the hits. When the passes disagree (a call too short to saturate the GPU, or one
  /// whose work differs between replays) it reads above 100%. Shown through l2_hit_rate_pct().
  std::optional<double> l2_hit_pct;
  /// L1TEX hit rate, l1tex__t_sector_hit_rate.pct: lookup hits over lookup hits plus misses, so within
  /// [0, 100] by construction.
  std::optional<double> l1_hit_pct;
  std::optional<double> l2_hit_sectors;       ///< L2 sector lookups that hit
  std::optional<double> l2_miss_sectors;      ///< L2 sector lookups that missed
  std::optional<double> ld_sectors;           ///< L1TEX sectors of global loads
  std::optional<double> ld_requests;          ///< L1TEX requests of global loads (one per warp instruction)
  std::optional<double> ld_bytes;             ///< bytes the threads asked for in global loads
  std::optional<double> st_sectors;
  std::optional<double> st_requests;
  std::optional<double> st_bytes;
  /// Warp stall reasons: reason -> warps stalled for it per issued instruction (their sum is the
  /// average number of cycles between a warp's instructions: where the time goes).
  std::map<std::string, double> stalls;

  std::int64_t blocks() const { return grid[0] * grid[1] * grid[2]; }
  std::int64_t threads_per_block() const { return block[0] * block[1] * block[2]; }
  std::optional<double> dram_bytes() const {
    if (!dram_read_bytes || !dram_write_bytes) return std::nullopt;
    return *dram_read_bytes + *dram_write_bytes;
  }
  /// Sectors per request of global loads (or stores), as Nsight Compute reports it.
  std::optional<double> ld_sectors_per_request() const { return ratio(ld_sectors, ld_requests); }
  std::optional<double> st_sectors_per_request() const { return ratio(st_sectors, st_requests); }
  /// The sectors per request a perfectly coalesced, aligned access of the same width would need:
  /// the requested bytes per request over the 32-byte sector (4 for 4-byte loads, 16 for 16-byte), and
  /// at least 1: every request touches a sector, and a warp-uniform (broadcast) load asks for 4 bytes
  /// (measured on an H200: 0.125 without this bound, which called such loads 8x uncoalesced).
  std::optional<double> ld_ideal_sectors_per_request() const { return ideal(ld_bytes, ld_requests); }
  std::optional<double> st_ideal_sectors_per_request() const { return ideal(st_bytes, st_requests); }
  /// The L2 hit rate in % as ktune shows it: hits over hits plus misses of the same L2 sector lookups,
  /// within [0, 100] by construction (L1TEX's rate is defined so; Nsight's L2 rate divides by all L2
  /// sectors instead, see l2_hit_pct). Records without the sector counts fall back to l2_hit_pct,
  /// clamped to [0, 100]; l2_counters_disagree() says when that clamp (or the disagreement) applies.
  std::optional<double> l2_hit_rate_pct() const {
    if (l2_hit_sectors && l2_miss_sectors && *l2_hit_sectors >= 0 && *l2_miss_sectors >= 0 &&
        *l2_hit_sectors + *l2_miss_sectors > 0)
      return 100.0 * *l2_hit_sectors / (*l2_hit_sectors + *l2_miss_sectors);
    if (l2_hit_pct) return *l2_hit_pct < 0 ? 0.0 : *l2_hit_pct > 100 ? 100.0 : *l2_hit_pct;
    return std::nullopt;
  }
  /// True when Nsight's L2 ratio reads above 100%: more hits than L2 sectors, so the counters came from
  /// replay passes that did not see the same work (the 0.5 allows for rounding).
  bool l2_counters_disagree() const { return l2_hit_pct && (*l2_hit_pct > 100.5 || *l2_hit_pct < 0); }

  static const std::vector<MetricField>& hardware_fields();

 private:
  static std::optional<double> ratio(const std::optional<double>& a, const std::optional<double>& b) {
    if (!a || !b || *b <= 0) return std::nullopt;
    return *a / *b;
  }
  static std::optional<double> ideal(const std::optional<double>& bytes, const std::optional<double>& requests) {
    if (!bytes || !requests || *requests <= 0) return std::nullopt;
    return std::max(1.0, *bytes / 32.0 / *requests);
  }
};

/// Stall reasons collected as smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio.
inline const std::vector<std::string>& stall_reasons() {
  static const std::vector<std::string> r = {
      "long_scoreboard", "lg_throttle",   "barrier",    "membar",         "mio_throttle",     "short_scoreboard",
      "math_pipe_throttle", "wait",       "not_selected", "selected",     "no_instruction",   "branch_resolving",
      "dispatch_stall",  "drain",         "imc_miss",   "misc",           "sleeping",         "tex_throttle"};
  return r;
}

inline std::string stall_metric(const std::string& reason) {
  return "smsp__average_warps_issue_stalled_" + reason + "_per_issue_active.ratio";
}

inline const std::vector<MetricField>& KernelMetrics::hardware_fields() {
  static const std::vector<MetricField> f = {
      {"gpu_time_ns", "gpu__time_duration.sum", 1.0, &KernelMetrics::gpu_time_ns},
      {"dram_read_bytes", "dram__bytes_read.sum", 1.0, &KernelMetrics::dram_read_bytes},
      {"dram_write_bytes", "dram__bytes_write.sum", 1.0, &KernelMetrics::dram_write_bytes},
      {"dram_throughput_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed", 1.0,
       &KernelMetrics::dram_throughput_pct},
      {"achieved_occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active", 0.01,
       &KernelMetrics::achieved_occupancy},
      {"sm_throughput_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed", 1.0, &KernelMetrics::sm_throughput_pct},
      {"l2_hit_pct", "lts__t_sector_hit_rate.pct", 1.0, &KernelMetrics::l2_hit_pct},
      {"l1_hit_pct", "l1tex__t_sector_hit_rate.pct", 1.0, &KernelMetrics::l1_hit_pct},
      {"l2_hit_sectors", "lts__t_sectors_lookup_hit.sum", 1.0, &KernelMetrics::l2_hit_sectors},
      {"l2_miss_sectors", "lts__t_sectors_lookup_miss.sum", 1.0, &KernelMetrics::l2_miss_sectors},
      {"ld_sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1.0, &KernelMetrics::ld_sectors},
      {"ld_requests", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1.0, &KernelMetrics::ld_requests},
      {"ld_bytes", "smsp__sass_data_bytes_mem_global_op_ld.sum", 1.0, &KernelMetrics::ld_bytes},
      {"st_sectors", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 1.0, &KernelMetrics::st_sectors},
      {"st_requests", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 1.0, &KernelMetrics::st_requests},
      {"st_bytes", "smsp__sass_data_bytes_mem_global_op_st.sum", 1.0, &KernelMetrics::st_bytes},
  };
  return f;
}

/// The perfworks metric names ktune collects, in a fixed order (hardware fields, then stalls).
inline std::vector<std::string> default_metric_names(bool with_stalls = true) {
  std::vector<std::string> out;
  for (const MetricField& f : KernelMetrics::hardware_fields()) out.emplace_back(f.cupti);
  if (with_stalls)
    for (const std::string& r : stall_reasons()) out.push_back(stall_metric(r));
  return out;
}

/// The device limits the diagnosis needs (filled from cudaDeviceProp when profiling).
struct DeviceFacts {
  std::string name;
  int arch = 0;                  ///< 10*major+minor
  int sms = 0;
  std::int64_t l2_bytes = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int regs_per_sm = 0;
  std::int64_t smem_per_sm = 0;
  int reg_alloc_unit = 256;      ///< registers are allocated per warp in units of this many
};

/// Everything measured about one call of one variant on one shape.
struct ProfileRecord {
  std::string op, dtype, shape, variant;   ///< "silu_and_mul", "bf16", "tokens=1,d=11008", variant id
  DeviceFacts device;
  std::optional<std::int64_t> tokens;      ///< the spec's token count, for launch-bound findings
  std::optional<double> expected_bytes;    ///< bytes the spec says one call moves
  std::optional<double> copy_ceiling_gbps; ///< contract 8, measured in the same process
  std::optional<double> empty_kernel_us;   ///< an empty kernel timed the same way as event_us
  std::optional<double> event_us;          ///< CUDA-event median of one call
  std::optional<double> event_spread;
  bool event_graph = false;                ///< event_us came from graph replay
  bool warm_l2 = false;                    ///< timed on one buffer set (--warm-l2): a call within the L2 may beat DRAM
  std::vector<KernelMetrics> kernels;      ///< in launch order
  std::string activity_status = "not run"; ///< "ok" or why the activity durations are missing
  std::string metrics_status = "not run";  ///< "ok" or why the hardware metrics are missing
  int metric_passes = 0;                   ///< replay passes the metrics needed

  /// Sum of the kernels' activity durations, when every kernel has one.
  std::optional<double> activity_us() const {
    if (kernels.empty()) return std::nullopt;
    double s = 0;
    for (const KernelMetrics& k : kernels) {
      if (!k.duration_us) return std::nullopt;
      s += *k.duration_us;
    }
    return s;
  }
  /// DRAM bytes of the whole call, when every kernel has them.
  std::optional<double> dram_bytes() const {
    if (kernels.empty()) return std::nullopt;
    double s = 0;
    for (const KernelMetrics& k : kernels) {
      const auto b = k.dram_bytes();
      if (!b) return std::nullopt;
      s += *b;
    }
    return s;
  }
};

// ---- JSON --------------------------------------------------------------------------------------
namespace detail {
template <class Json, class T>
void put(Json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}
template <class Json, class T>
void get(const Json& j, const char* key, std::optional<T>& v) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    v.reset();
    return;
  }
  v = it->template get<T>();
}
template <class Json, class T>
void get(const Json& j, const char* key, T& v) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) v = it->template get<T>();
}
}  // namespace detail

inline nlohmann::ordered_json to_json(const KernelMetrics& k) {
  nlohmann::ordered_json j;
  j["name"] = k.name;
  j["grid"] = {k.grid[0], k.grid[1], k.grid[2]};
  j["block"] = {k.block[0], k.block[1], k.block[2]};
  j["cluster"] = k.cluster;
  detail::put(j, "registers", k.registers);
  detail::put(j, "static_smem", k.static_smem);
  detail::put(j, "dynamic_smem", k.dynamic_smem);
  detail::put(j, "local_bytes", k.local_bytes);
  detail::put(j, "duration_us", k.duration_us);
  detail::put(j, "duration_spread", k.duration_spread);
  j["duration_samples"] = k.duration_samples;
  for (const MetricField& f : KernelMetrics::hardware_fields()) detail::put(j, f.key, k.*(f.member));
  if (!k.stalls.empty()) j["stalls"] = k.stalls;
  return j;
}

template <class Json>
KernelMetrics kernel_from_json(const Json& j) {
  KernelMetrics k;
  detail::get(j, "name", k.name);
  for (int i = 0; i < 3; ++i) {
    k.grid[i] = j.at("grid").at(i).template get<std::int64_t>();
    k.block[i] = j.at("block").at(i).template get<std::int64_t>();
  }
  detail::get(j, "cluster", k.cluster);
  detail::get(j, "registers", k.registers);
  detail::get(j, "static_smem", k.static_smem);
  detail::get(j, "dynamic_smem", k.dynamic_smem);
  detail::get(j, "local_bytes", k.local_bytes);
  detail::get(j, "duration_us", k.duration_us);
  detail::get(j, "duration_spread", k.duration_spread);
  detail::get(j, "duration_samples", k.duration_samples);
  for (const MetricField& f : KernelMetrics::hardware_fields()) detail::get(j, f.key, k.*(f.member));
  if (auto it = j.find("stalls"); it != j.end())
    for (const auto& [reason, v] : it->items()) k.stalls[reason] = v.template get<double>();
  return k;
}

inline nlohmann::ordered_json to_json(const DeviceFacts& d) {
  return {{"name", d.name},
          {"arch", d.arch},
          {"sms", d.sms},
          {"l2_bytes", d.l2_bytes},
          {"max_threads_per_sm", d.max_threads_per_sm},
          {"max_blocks_per_sm", d.max_blocks_per_sm},
          {"regs_per_sm", d.regs_per_sm},
          {"smem_per_sm", d.smem_per_sm},
          {"reg_alloc_unit", d.reg_alloc_unit}};
}

template <class Json>
DeviceFacts device_from_json(const Json& j) {
  DeviceFacts d;
  detail::get(j, "name", d.name);
  detail::get(j, "arch", d.arch);
  detail::get(j, "sms", d.sms);
  detail::get(j, "l2_bytes", d.l2_bytes);
  detail::get(j, "max_threads_per_sm", d.max_threads_per_sm);
  detail::get(j, "max_blocks_per_sm", d.max_blocks_per_sm);
  detail::get(j, "regs_per_sm", d.regs_per_sm);
  detail::get(j, "smem_per_sm", d.smem_per_sm);
  detail::get(j, "reg_alloc_unit", d.reg_alloc_unit);
  return d;
}

inline nlohmann::ordered_json to_json(const ProfileRecord& r) {
  nlohmann::ordered_json j;
  j["op"] = r.op;
  j["dtype"] = r.dtype;
  j["shape"] = r.shape;
  j["variant"] = r.variant;
  j["device"] = to_json(r.device);
  detail::put(j, "tokens", r.tokens);
  detail::put(j, "expected_bytes", r.expected_bytes);
  detail::put(j, "copy_ceiling_gbps", r.copy_ceiling_gbps);
  detail::put(j, "empty_kernel_us", r.empty_kernel_us);
  detail::put(j, "event_us", r.event_us);
  detail::put(j, "event_spread", r.event_spread);
  j["event_graph"] = r.event_graph;
  if (r.warm_l2) j["warm_l2"] = true;  // absent: cold L2, the default of every timing
  j["activity_status"] = r.activity_status;
  j["metrics_status"] = r.metrics_status;
  j["metric_passes"] = r.metric_passes;
  j["kernels"] = nlohmann::ordered_json::array();
  for (const KernelMetrics& k : r.kernels) j["kernels"].push_back(to_json(k));
  return j;
}

template <class Json>
ProfileRecord record_from_json(const Json& j) {
  ProfileRecord r;
  detail::get(j, "op", r.op);
  detail::get(j, "dtype", r.dtype);
  detail::get(j, "shape", r.shape);
  detail::get(j, "variant", r.variant);
  if (auto it = j.find("device"); it != j.end()) r.device = device_from_json(*it);
  detail::get(j, "tokens", r.tokens);
  detail::get(j, "expected_bytes", r.expected_bytes);
  detail::get(j, "copy_ceiling_gbps", r.copy_ceiling_gbps);
  detail::get(j, "empty_kernel_us", r.empty_kernel_us);
  detail::get(j, "event_us", r.event_us);
  detail::get(j, "event_spread", r.event_spread);
  detail::get(j, "event_graph", r.event_graph);
  detail::get(j, "warm_l2", r.warm_l2);
  detail::get(j, "activity_status", r.activity_status);
  detail::get(j, "metrics_status", r.metrics_status);
  detail::get(j, "metric_passes", r.metric_passes);
  if (auto it = j.find("kernels"); it != j.end())
    for (const auto& k : *it) r.kernels.push_back(kernel_from_json(k));
  return r;
}

}  // namespace ktune::profile
