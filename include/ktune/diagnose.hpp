// ktune/diagnose.hpp: turns a profiled call's metrics into short, concrete findings.
//
// Deterministic rules over a ProfileRecord (ktune/profile/metrics.hpp): each finding names the rule,
// the kernel (empty for whole-call findings), the metric, its value, the comparison and threshold that
// triggered it, and a one-line message such as
//   "global loads: 32.0 sectors per request, 8.0x the 4.0 a coalesced 4-byte access needs: uncoalesced access".
// A rule whose inputs were not measured stays silent: absence of evidence is not a finding. These
// findings go into the reports and to the generator's LLM, so every figure is plausible or says why
// not: a rate is shown within 0-100% (percent_text, l2_hit_text), and a call that moved its bytes faster
// than DRAM can gets the implausible_bandwidth finding, a judge's matter, instead of advice.
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

#include "judge.hpp"
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
/// Why a large call falls short of the copy: where its warps' cycles go.
inline constexpr const char* barrier_stalls = "barrier_stalls";
inline constexpr const char* memory_latency = "memory_latency";
/// Not advice: the call moved the spec's bytes faster than DRAM can, so its time (and every finding
/// drawn from it) is not a measurement of the work; the judge rejects such a time as implausible_time.
inline constexpr const char* implausible_bandwidth = "implausible_bandwidth";
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
  /// The stall rules look at calls of at least bandwidth_min_bytes below this % of the copy ceiling (the
  /// reports' target for such calls): at the copy a kernel's warps wait on memory most of their cycles
  /// (75-95% in the H200 profiles of the shipped ops), as they should.
  double near_ceiling_pct = 95.0;
  /// Share of a warp's cycles between two issued instructions spent waiting at block barriers for
  /// barrier_stalls to fire ...
  double barrier_share = 0.3;
  /// ... or on global memory (long scoreboard) for memory_latency, in a kernel that keeps fewer than
  /// stall_occupancy of the warps resident: with most warps resident a stalled warp's issue slot goes to
  /// another (Nsight Compute's copy kernel: 77%; the act-and-mul winners at the copy 80-90%; rotary_embedding's
  /// winners 28-52%).
  double long_scoreboard_share = 0.5;
  double stall_occupancy = 0.6;
  /// Spec bytes / device time above the copy ceiling by more than this fraction (or the timing's spread,
  /// when larger) is implausible: no call moves its bytes faster than DRAM. The judge's margin.
  double implausible_margin = judge::implausible_margin;
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

/// The structure a family could try next against a finding's cause: what the rule asks of the code,
/// for the reports' missed targets and the generator's planning. Empty for a rule that is not advice.
inline std::string next_structure(const std::string& rule) {
  if (rule == rules::uncoalesced_loads || rule == rules::uncoalesced_stores)
    return "16-byte vector accesses by consecutive threads (a wider vb), or staging through shared memory to "
           "coalesce";
  if (rule == rules::dram_below_ceiling)
    return "more bytes in flight per SM: more loads per thread before the first use (vpt), more rows per block, "
           "or a persistent grid that keeps every SM streaming";
  if (rule == rules::register_limited_occupancy)
    return "fewer registers per thread (a smaller vpt, __launch_bounds__ with a minimum of blocks per SM)";
  if (rule == rules::launch_bound_grid)
    return "more blocks at few tokens: split each row over several blocks (a cluster reduction where the row "
           "needs one)";
  if (rule == rules::launch_bound_time)
    return "the launch floor: chain the call to its neighbour with PDL, or fuse it into the neighbouring kernel";
  if (rule == rules::excess_dram_traffic)
    return "read each byte once: keep the row in registers or shared memory between its passes";
  if (rule == rules::spills) return "no run-time indexed per-thread arrays, or a smaller vpt";
  if (rule == rules::barrier_stalls)
    return "loads in flight while a block waits at its barrier: more resident blocks per SM (fewer registers per "
           "thread, a smaller vpt), or the row's reduction without a block barrier (a warp or a cluster per row)";
  if (rule == rules::memory_latency)
    return "more independent loads in flight per warp: more loads per thread before the first use (vpt, heads per "
           "thread), or more resident warps (fewer registers per thread)";
  return {};
}

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
}  // namespace detail

/// A rate in % as ktune shows it: within 0-100%, or, for a value the counters put outside that range,
/// the bound with the value read and why ("100% (read 141%: ...)"). Every ratio of two hardware counters
/// can leave [0, 100] when the range profiler counts numerator and denominator in different replay
/// passes that saw different work.
inline std::string percent_text(double pct) {
  if (pct >= 0 && pct <= 100.5) return detail::fmt("%.0f%%", pct);
  return detail::fmt("%.0f%%", pct < 0 ? 0.0 : 100.0) + detail::fmt(" (read %.0f%%", pct) +
         ": its counters disagree between replay passes, as for a call too short to fill the GPU or one whose work "
         "differs between calls)";
}

/// The L2 hit rate as shown: hits over hit and missed lookups (KernelMetrics::l2_hit_rate_pct), and a
/// note when Nsight's ratio over all L2 sectors read above 100%, which means the replay passes that
/// counted them disagree: the call is too short to fill the GPU, or its work differs between calls.
inline std::string l2_hit_text(const KernelMetrics& k) {
  const std::optional<double> rate = k.l2_hit_rate_pct();
  if (!rate) return {};
  std::string s = "L2 hit " + percent_text(*rate);
  if (k.l2_counters_disagree())
    s += detail::fmt(" (lts__t_sector_hit_rate read %.0f%%", *k.l2_hit_pct) +
         ": the L2 counters disagree between replay passes, as for a call too short to fill the GPU or one whose "
         "work differs between calls)";
  return s;
}

namespace detail {
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
  if (k.dram_throughput_pct) f.message += "; DRAM throughput " + percent_text(*k.dram_throughput_pct);
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
  if (k.achieved_occupancy) f.message += "; achieved " + percent_text(100 * *k.achieved_occupancy);
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

/// The share of a kernel's warp cycles per issued instruction stalled for `reason` (the stalls' sum).
inline std::optional<double> stall_share(const KernelMetrics& k, const std::string& reason) {
  double total = 0;
  for (const auto& [name, v] : k.stalls) total += v;
  const auto it = k.stalls.find(reason);
  if (it == k.stalls.end() || !(total > 0)) return std::nullopt;
  return it->second / total;
}

/// A kernel of a large call short of the copy: where its warps' cycles go says what to change. `pct` is
/// the call's bandwidth in % of the copy ceiling.
inline void stalls(const KernelMetrics& k, double pct, const Thresholds& t, std::vector<Finding>& out) {
  std::string context = fmt(", the profiled call at %.0f%% of the copy ceiling", pct);
  if (k.achieved_occupancy) context = fmt(" with %.0f%% of the warps resident", 100 * *k.achieved_occupancy) + context;
  auto add = [&](const char* rule, const std::string& reason, double threshold, const char* where, const char* why) {
    const std::optional<double> share = stall_share(k, reason);
    if (!share || !(*share >= threshold)) return;
    Finding f;
    f.rule = rule;
    f.kernel = k.name;
    f.metric = stall_metric(reason) + " over the sum of the stall reasons";
    f.value = *share;
    f.comparison = ">=";
    f.threshold = threshold;
    f.message = std::string("warps wait ") + where + fmt(" %.0f%% of their cycles", 100 * *share) + context + ": " + why;
    out.push_back(std::move(f));
  };
  add(rules::barrier_stalls, "barrier", t.barrier_share, "at block barriers",
      "a warp at the barrier issues nothing, its next loads included");
  if (k.achieved_occupancy && *k.achieved_occupancy < t.stall_occupancy)
    add(rules::memory_latency, "long_scoreboard", t.long_scoreboard_share, "on global memory",
        "too few bytes in flight to cover DRAM latency");
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

/// The call's effective bandwidth against the copy ceiling: spec bytes (else measured DRAM bytes) over
/// the device time. Empty where a figure is missing.
struct Bandwidth {
  double bytes = 0, gbps = 0, ceiling_gbps = 0;
  double pct = 0;          ///< of the copy ceiling
  bool spec_bytes = true;  ///< bytes are the spec's (else measured DRAM bytes)
  bool implausible = false;  ///< above the ceiling beyond the margin: not a measurement of the work
  double margin = 0;         ///< the margin applied
};

inline std::optional<Bandwidth> bandwidth(const ProfileRecord& r, const Thresholds& t = {}) {
  const std::optional<double> time_us = device_time_us(r);
  const std::optional<double> bytes = r.expected_bytes ? r.expected_bytes : r.dram_bytes();
  if (!r.copy_ceiling_gbps || !(*r.copy_ceiling_gbps > 0) || !time_us || !(*time_us > 0) || !bytes) return std::nullopt;
  Bandwidth b;
  b.bytes = *bytes;
  b.spec_bytes = r.expected_bytes.has_value();
  b.gbps = *bytes / (*time_us * 1e3);
  b.ceiling_gbps = *r.copy_ceiling_gbps;
  b.pct = 100.0 * b.gbps / b.ceiling_gbps;
  // The timing's own spread widens the margin, as in the judge: the activity durations' when they gave
  // the time, else the events'.
  double spread = r.event_spread.value_or(0);
  if (r.activity_us()) {
    spread = 0;
    for (const KernelMetrics& k : r.kernels) spread = std::max(spread, k.duration_spread.value_or(0));
  }
  b.margin = std::max(t.implausible_margin, spread);
  // With a warm L2 (one buffer set) a call that fits in the L2 may legitimately beat DRAM.
  const bool l2_may_serve = r.warm_l2 && (r.device.l2_bytes <= 0 || b.bytes <= 2.0 * static_cast<double>(r.device.l2_bytes));
  b.implausible = !l2_may_serve && b.gbps > b.ceiling_gbps * (1 + b.margin);
  return b;
}

/// The bandwidth line of a report: "bandwidth 3254 GB/s = 77% of the 4240 GB/s copy ceiling"; between
/// 100% and the margin it says why a figure above the ceiling is possible, and beyond the margin that the
/// figure is implausible rather than a percentage. Empty without the figures.
inline std::string bandwidth_text(const ProfileRecord& r, const Thresholds& t = {}) {
  const std::optional<Bandwidth> b = bandwidth(r, t);
  if (!b) return {};
  std::string s = detail::fmt("bandwidth %.0f GB/s", b->gbps);
  if (b->implausible)
    return s + detail::fmt(", %.1fx the ", b->gbps / b->ceiling_gbps) + detail::fmt("%.0f GB/s", b->ceiling_gbps) +
           " copy ceiling: implausible, not a measurement of the work (see the finding)";
  s += detail::fmt(" = %.0f%%", b->pct) + detail::fmt(" of the %.0f GB/s copy ceiling", b->ceiling_gbps);
  if (b->pct > 100.5)
    s += detail::fmt(" (above it by less than the %.0f%% margin", 100 * b->margin) +
         ": a call that reads more than it writes can beat a copy)";
  return s;
}

/// One kernel's hardware metrics in a line ("DRAM 12.3 MB (45% of peak), occupancy 80%, SM 30%, L2 hit
/// 12%, ld 4.0 sectors/req"), only what was measured, every rate within 0-100% (percent_text).
inline std::string kernel_metrics_text(const KernelMetrics& k) {
  std::vector<std::string> parts;
  if (auto d = k.dram_bytes()) {
    std::string p = detail::fmt("DRAM %.1f MB", *d / 1e6);
    if (k.dram_throughput_pct) p += " (" + percent_text(*k.dram_throughput_pct) + " of peak)";
    parts.push_back(p);
  }
  if (k.achieved_occupancy) parts.push_back("occupancy " + percent_text(100 * *k.achieved_occupancy));
  if (k.sm_throughput_pct) parts.push_back("SM " + percent_text(*k.sm_throughput_pct));
  if (std::string l2 = l2_hit_text(k); !l2.empty()) parts.push_back(l2);
  if (auto spr = k.ld_sectors_per_request()) parts.push_back(detail::fmt("ld %.1f sectors/req", *spr));
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

/// All findings for `r`, in a fixed order: per kernel (launch order) coalescing, occupancy, grid, spills
/// and, for a large call short of the copy, its stalls; then the whole-call rules (launch floor,
/// bandwidth, excess traffic). A call that moved its bytes faster than DRAM can gets one finding instead,
/// implausible_bandwidth: its time and counters do not measure the work, so no advice is drawn from them
/// (the judge rejects it as implausible_time).
inline std::vector<Finding> diagnose(const ProfileRecord& r, const Thresholds& t = {}) {
  std::vector<Finding> out;
  const std::optional<Bandwidth> b = bandwidth(r, t);
  if (b && b->implausible) {
    Finding f;
    f.rule = rules::implausible_bandwidth;
    f.metric = b->spec_bytes ? "spec bytes / device time, over the copy ceiling"
                             : "(dram__bytes_read.sum + dram__bytes_write.sum) / device time, over the copy ceiling";
    f.value = b->gbps / b->ceiling_gbps;
    f.comparison = ">";
    f.threshold = 1 + b->margin;
    f.message = "implausible measurement: " + detail::bytes_text(b->bytes) + detail::fmt(" in %.2f us", *device_time_us(r)) +
                detail::fmt(" is %.0f GB/s, ", b->gbps) + detail::fmt("%.1fx the ", f.value) +
                detail::fmt("%.0f GB/s", b->ceiling_gbps) +
                " copy ceiling, faster than this GPU's DRAM can move the bytes: the call may have skipped work; the "
                "judge rejects such times as implausible_time (no other finding is drawn from this call)";
    out.push_back(std::move(f));
    return out;
  }
  const bool short_of_copy = b && b->bytes >= t.bandwidth_min_bytes && b->pct < t.near_ceiling_pct;
  for (const KernelMetrics& k : r.kernels) {
    detail::coalescing(k, true, t, out);
    detail::coalescing(k, false, t, out);
    detail::occupancy(k, r.device, t, out);
    detail::launch_grid(k, r, t, out);
    detail::spill(k, t, out);
    if (short_of_copy) detail::stalls(k, b->pct, t, out);
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

  const std::optional<double> dram = r.dram_bytes();
  if (b && b->bytes >= t.bandwidth_min_bytes && b->pct < t.bandwidth_pct) {
    Finding f;
    f.rule = rules::dram_below_ceiling;
    f.metric = b->spec_bytes ? "spec bytes / device time, % of the copy ceiling"
                             : "(dram__bytes_read.sum + dram__bytes_write.sum) / device time, % of the copy ceiling";
    f.value = b->pct;
    f.comparison = "<";
    f.threshold = t.bandwidth_pct;
    f.message = detail::fmt("bandwidth %.0f GB/s", b->gbps) + detail::fmt(" = %.0f%%", b->pct) + " of the " +
                detail::fmt("%.0f GB/s", b->ceiling_gbps) + " copy ceiling";
    if (r.kernels.size() == 1 && r.kernels[0].dram_throughput_pct)
      f.message += " (DRAM throughput " + percent_text(*r.kernels[0].dram_throughput_pct) + " of peak)";
    out.push_back(std::move(f));
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
