// ktune/diagnose.hpp: turns a profiled call's metrics into short, concrete findings.
//
// Deterministic rules over a ProfileRecord (ktune/profile/metrics.hpp): each finding names the rule,
// the kernel (empty for whole-call findings), the metric, its value, the comparison and threshold that
// triggered it, and a one-line message such as
//   "global loads: 32.0 sectors per request, 8.0x the 4.0 a coalesced 4-byte access needs: uncoalesced access".
// A rule whose inputs were not measured stays silent: absence of evidence is not a finding. These
// findings go into the reports and, later, to the generator's planning agent.
//
// Host-only, no CUPTI and no CUDA: usable by every tool and testable on any machine.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "profile/metrics.hpp"

namespace ktune::profile {

/// Rule names as they appear in findings and JSON.
namespace rules {
inline constexpr const char* uncoalesced_loads = "uncoalesced_loads";
inline constexpr const char* uncoalesced_stores = "uncoalesced_stores";
inline constexpr const char* dram_below_ceiling = "dram_below_ceiling";
inline constexpr const char* register_limited_occupancy = "register_limited_occupancy";
inline constexpr const char* launch_bound_grid = "launch_bound_grid";
inline constexpr const char* launch_bound_time = "launch_bound_time";
inline constexpr const char* excess_dram_traffic = "excess_dram_traffic";
inline constexpr const char* spills = "spills";
}  // namespace rules

/// The thresholds of the rules. Defaults are what the rules are tested with.
struct Thresholds {
  /// Sectors per request at least this many times the ideal for the access width: uncoalesced. 2x
  /// means at least half of every fetched sector is wasted.
  double uncoalesced_ratio = 2.0;
  /// Effective bandwidth (spec bytes / device time) below this % of the copy ceiling ...
  double bandwidth_pct = 80.0;
  /// ... on calls moving at least this many bytes (smaller ones are latency- or launch-bound).
  double bandwidth_min_bytes = 64.0 * (1 << 20);
  /// Register-limited theoretical occupancy below this (and the limit binds on this grid).
  double occupancy_target = 0.5;
  /// A grid with fewer blocks than this many per SM leaves SMs idle: launch-bound.
  double min_blocks_per_sm = 1.0;
  /// A call within this factor of the empty kernel's time is at the launch floor.
  double launch_floor_ratio = 1.5;
  /// DRAM bytes more than this many times the spec's bytes: data moved more than once.
  double excess_traffic_ratio = 1.25;
  /// ... for calls whose spec bytes are at least this (small calls are dominated by L2 effects).
  double excess_min_bytes = 4.0 * (1 << 20);
  /// Local memory per thread above this many bytes: spills (or run-time indexed arrays).
  std::int64_t spill_bytes = 0;
};

struct Finding {
  std::string rule;        ///< one of rules::*
  std::string kernel;      ///< kernel name; empty for findings about the whole call
  std::string metric;      ///< what was compared, in Nsight Compute terms where one exists
  double value = 0;
  std::string comparison;  ///< ">=", "<", "<=", ">"
  double threshold = 0;
  std::string message;     ///< the short sentence a report shows
};

/// Theoretical resident blocks per SM and what limits them (the CUDA occupancy calculator's rules for
/// sm_70 and newer: registers are allocated per warp in units of reg_alloc_unit, within each of the
/// four SM sub-partitions; 1 KB of shared memory is reserved per block).
struct OccupancyLimit {
  int blocks = 0;
  int by_registers = 0, by_threads = 0, by_blocks = 0, by_smem = 0;
  const char* limiter = "none";  ///< "registers", "threads", "blocks", "shared memory"
  double occupancy = 0;          ///< resident warps / max warps per SM
};

inline OccupancyLimit theoretical_occupancy(const DeviceFacts& d, std::int64_t threads_per_block, int registers,
                                            std::int64_t smem_per_block) {
  OccupancyLimit o;
  if (d.max_threads_per_sm <= 0 || d.regs_per_sm <= 0 || d.max_blocks_per_sm <= 0 || threads_per_block <= 0) return o;
  constexpr int sub_partitions = 4;
  const std::int64_t warps = (threads_per_block + 31) / 32;
  const int unit = d.reg_alloc_unit > 0 ? d.reg_alloc_unit : 256;
  const std::int64_t regs_per_warp = (static_cast<std::int64_t>(std::max(registers, 1)) * 32 + unit - 1) / unit * unit;
  const std::int64_t warps_per_partition = (d.regs_per_sm / sub_partitions) / regs_per_warp;
  constexpr int big = std::numeric_limits<int>::max();
  o.by_registers = static_cast<int>(warps_per_partition * sub_partitions / warps);
  o.by_threads = static_cast<int>(d.max_threads_per_sm / (warps * 32));
  o.by_blocks = d.max_blocks_per_sm;
  o.by_smem = smem_per_block > 0 && d.smem_per_sm > 0 ? static_cast<int>(d.smem_per_sm / (smem_per_block + 1024)) : big;
  o.blocks = std::min({o.by_registers, o.by_threads, o.by_blocks, o.by_smem});
  // The limiter is the one strictly below all others; registers win ties only when they bind alone.
  if (o.by_registers == o.blocks && o.by_registers < std::min({o.by_threads, o.by_blocks, o.by_smem}))
    o.limiter = "registers";
  else if (o.by_smem == o.blocks && o.by_smem < std::min(o.by_threads, o.by_blocks))
    o.limiter = "shared memory";
  else if (o.by_threads <= o.by_blocks)
    o.limiter = "threads";
  else
    o.limiter = "blocks";
  o.occupancy = static_cast<double>(o.blocks) * static_cast<double>(warps) * 32.0 / d.max_threads_per_sm;
  return o;
}

namespace detail {
inline std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, a);
  return buf;
}
/// "1.23 GB", "456 MB", "789 KB": byte counts in messages.
inline std::string bytes_text(double b) {
  if (b >= 1e9) return fmt("%.2f GB", b / 1e9);
  if (b >= 1e6) return fmt("%.1f MB", b / 1e6);
  if (b >= 1e3) return fmt("%.1f KB", b / 1e3);
  return fmt("%.0f B", b);
}

inline void coalescing(const KernelMetrics& k, bool loads, const Thresholds& t, std::vector<Finding>& out) {
  const auto spr = loads ? k.ld_sectors_per_request() : k.st_sectors_per_request();
  const auto ideal = loads ? k.ld_ideal_sectors_per_request() : k.st_ideal_sectors_per_request();
  if (!spr || !ideal || *ideal <= 0) return;
  const double ratio = *spr / *ideal;
  if (!(ratio >= t.uncoalesced_ratio)) return;
  Finding f;
  f.rule = loads ? rules::uncoalesced_loads : rules::uncoalesced_stores;
  f.kernel = k.name;
  f.metric = loads ? "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
                     " over the ideal (smsp__sass_data_bytes_mem_global_op_ld.sum / 32 per request)"
                   : "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum / l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
                     " over the ideal (smsp__sass_data_bytes_mem_global_op_st.sum / 32 per request)";
  f.value = ratio;
  f.comparison = ">=";
  f.threshold = t.uncoalesced_ratio;
  // The ideal sectors per request equal the bytes per thread of a full warp's access (32 lanes x w
  // bytes / 32-byte sectors).
  f.message = std::string(loads ? "global loads: " : "global stores: ") + fmt("%.1f sectors per request, ", *spr) +
              fmt("%.1fx the ", ratio) + fmt("%.1f", *ideal) + " a coalesced access of " + fmt("%.0f", *ideal) +
              " bytes per thread needs";
  if (k.dram_throughput_pct) f.message += fmt("; DRAM throughput %.0f%%", *k.dram_throughput_pct);
  f.message += ": uncoalesced access";
  out.push_back(std::move(f));
}

inline void occupancy(const KernelMetrics& k, const DeviceFacts& d, const Thresholds& t, std::vector<Finding>& out) {
  if (!k.registers || d.sms <= 0 || k.threads_per_block() <= 0) return;
  const std::int64_t smem = k.static_smem.value_or(0) + k.dynamic_smem.value_or(0);
  const OccupancyLimit o = theoretical_occupancy(d, k.threads_per_block(), *k.registers, smem);
  if (std::string(o.limiter) != "registers" || !(o.occupancy < t.occupancy_target)) return;
  // The limit only costs anything when the grid has more blocks than fit on the device at once.
  if (k.blocks() <= static_cast<std::int64_t>(o.blocks) * d.sms) return;
  Finding f;
  f.rule = rules::register_limited_occupancy;
  f.kernel = k.name;
  f.metric = "theoretical occupancy with launch__registers_per_thread";
  f.value = o.occupancy;
  f.comparison = "<";
  f.threshold = t.occupancy_target;
  f.message = "occupancy limited by registers: " + std::to_string(*k.registers) + " per thread allow " +
              std::to_string(o.blocks) + " blocks of " + std::to_string(k.threads_per_block()) + " threads per SM (" +
              fmt("%.0f%%", 100 * o.occupancy) + " of the warps, threshold " + fmt("%.0f%%", 100 * t.occupancy_target) + ")";
  if (k.achieved_occupancy) f.message += fmt("; achieved %.0f%%", 100 * *k.achieved_occupancy);
  out.push_back(std::move(f));
}

inline void launch_grid(const KernelMetrics& k, const ProfileRecord& r, const Thresholds& t, std::vector<Finding>& out) {
  if (r.device.sms <= 0 || k.blocks() <= 0) return;
  const double needed = t.min_blocks_per_sm * r.device.sms;
  if (!(static_cast<double>(k.blocks()) < needed)) return;
  Finding f;
  f.rule = rules::launch_bound_grid;
  f.kernel = k.name;
  f.metric = "launch__grid_size";
  f.value = static_cast<double>(k.blocks());
  f.comparison = "<";
  f.threshold = needed;
  f.message = "launch-bound: " + std::to_string(k.blocks()) + (k.blocks() == 1 ? " block" : " blocks") + " of " +
              std::to_string(k.threads_per_block()) + " threads for " + std::to_string(r.device.sms) + " SMs";
  if (r.tokens) f.message += " at T = " + std::to_string(*r.tokens);
  out.push_back(std::move(f));
}

inline void spill(const KernelMetrics& k, const Thresholds& t, std::vector<Finding>& out) {
  if (!k.local_bytes || !(*k.local_bytes > t.spill_bytes)) return;
  Finding f;
  f.rule = rules::spills;
  f.kernel = k.name;
  f.metric = "local memory per thread (cudaFuncAttributes::localSizeBytes)";
  f.value = static_cast<double>(*k.local_bytes);
  f.comparison = ">";
  f.threshold = static_cast<double>(t.spill_bytes);
  f.message = "spills: " + std::to_string(*k.local_bytes) +
              " bytes of local memory per thread (register spills or an array indexed at run time)";
  if (k.registers) f.message += " with " + std::to_string(*k.registers) + " registers";
  out.push_back(std::move(f));
}
}  // namespace detail

/// The device time of a call: the activity API's exact durations when measured, else CUDA events.
inline std::optional<double> device_time_us(const ProfileRecord& r) {
  if (auto a = r.activity_us()) return a;
  return r.event_us;
}

/// All findings for `r`, in a fixed order: per kernel (launch order) coalescing, occupancy, grid and
/// spills; then the whole-call rules (launch floor, bandwidth, excess traffic).
inline std::vector<Finding> diagnose(const ProfileRecord& r, const Thresholds& t = {}) {
  std::vector<Finding> out;
  for (const KernelMetrics& k : r.kernels) {
    detail::coalescing(k, true, t, out);
    detail::coalescing(k, false, t, out);
    detail::occupancy(k, r.device, t, out);
    detail::launch_grid(k, r, t, out);
    detail::spill(k, t, out);
  }

  if (r.event_us && r.empty_kernel_us && *r.empty_kernel_us > 0) {
    const double ratio = *r.event_us / *r.empty_kernel_us;
    if (ratio <= t.launch_floor_ratio) {
      Finding f;
      f.rule = rules::launch_bound_time;
      f.metric = "CUDA-event time per call / empty-kernel time";
      f.value = ratio;
      f.comparison = "<=";
      f.threshold = t.launch_floor_ratio;
      f.message = "launch-bound: " + detail::fmt("%.2f us per call, ", *r.event_us) + detail::fmt("%.2fx", ratio) +
                  " an empty kernel's " + detail::fmt("%.2f us", *r.empty_kernel_us) +
                  ": the call is at the launch floor";
      out.push_back(std::move(f));
    }
  }

  const std::optional<double> time_us = device_time_us(r);
  const std::optional<double> dram = r.dram_bytes();
  if (r.copy_ceiling_gbps && *r.copy_ceiling_gbps > 0 && time_us && *time_us > 0) {
    const std::optional<double> bytes = r.expected_bytes ? r.expected_bytes : dram;
    if (bytes && *bytes >= t.bandwidth_min_bytes) {
      const double gbps = *bytes / (*time_us * 1e3);
      const double pct = 100.0 * gbps / *r.copy_ceiling_gbps;
      if (pct < t.bandwidth_pct) {
        Finding f;
        f.rule = rules::dram_below_ceiling;
        f.metric = r.expected_bytes ? "spec bytes / device time, % of the copy ceiling"
                                    : "(dram__bytes_read.sum + dram__bytes_write.sum) / device time, % of the copy ceiling";
        f.value = pct;
        f.comparison = "<";
        f.threshold = t.bandwidth_pct;
        f.message = detail::fmt("bandwidth %.0f GB/s", gbps) + detail::fmt(" = %.0f%%", pct) + " of the " +
                    detail::fmt("%.0f GB/s", *r.copy_ceiling_gbps) + " copy ceiling";
        if (r.kernels.size() == 1 && r.kernels[0].dram_throughput_pct)
          f.message += detail::fmt(" (DRAM throughput %.0f%% of peak)", *r.kernels[0].dram_throughput_pct);
        out.push_back(std::move(f));
      }
    }
  }

  if (r.expected_bytes && *r.expected_bytes >= t.excess_min_bytes && dram) {
    const double ratio = *dram / *r.expected_bytes;
    if (ratio > t.excess_traffic_ratio) {
      Finding f;
      f.rule = rules::excess_dram_traffic;
      f.metric = "(dram__bytes_read.sum + dram__bytes_write.sum) / spec bytes";
      f.value = ratio;
      f.comparison = ">";
      f.threshold = t.excess_traffic_ratio;
      f.message = "excess DRAM traffic: " + detail::bytes_text(*dram) + " moved, " + detail::fmt("%.2fx", ratio) +
                  " the " + detail::bytes_text(*r.expected_bytes) + " the spec needs: data read or written more than once";
      out.push_back(std::move(f));
    }
  }
  return out;
}

/// True when some finding of `rule` is in `findings`.
inline bool fired(const std::vector<Finding>& findings, const std::string& rule) {
  return std::any_of(findings.begin(), findings.end(), [&](const Finding& f) { return f.rule == rule; });
}

inline nlohmann::ordered_json to_json(const Finding& f) {
  nlohmann::ordered_json j;
  j["rule"] = f.rule;
  if (!f.kernel.empty()) j["kernel"] = f.kernel;
  j["metric"] = f.metric;
  j["value"] = f.value;
  j["comparison"] = f.comparison;
  j["threshold"] = f.threshold;
  j["message"] = f.message;
  return j;
}

template <class Json>
Finding finding_from_json(const Json& j) {
  Finding f;
  f.rule = j.at("rule").template get<std::string>();
  if (auto it = j.find("kernel"); it != j.end()) f.kernel = it->template get<std::string>();
  f.metric = j.at("metric").template get<std::string>();
  f.value = j.at("value").template get<double>();
  f.comparison = j.at("comparison").template get<std::string>();
  f.threshold = j.at("threshold").template get<double>();
  f.message = j.at("message").template get<std::string>();
  return f;
}

inline nlohmann::ordered_json to_json(const std::vector<Finding>& fs) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const Finding& f : fs) j.push_back(to_json(f));
  return j;
}

}  // namespace ktune::profile
