// bench/trace_analysis.cpp: KTUNE_TRACE's analysis (trace_analysis.hpp).
#include "trace_analysis.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <utility>

namespace ktune::bench {

namespace {

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

}  // namespace

namespace trace {

nlohmann::json analyse(const std::vector<Activity>& activities, const std::vector<Span>& spans, std::uint64_t started,
                       std::uint64_t stopped, std::string& summary) {
  std::vector<Interval> work;
  work.reserve(activities.size());
  std::unordered_map<const char*, std::pair<std::size_t, std::uint64_t>> kernels;  // name -> (count, ns)
  std::map<std::string, std::array<double, 3>> copies;                            // kind -> (count, bytes, ns)
  for (const Activity& r : activities) {
    work.push_back({r.start, r.end});
    const std::uint64_t ns = r.end > r.start ? r.end - r.start : 0;
    if (r.kernel) {
      auto& k = kernels[r.name];
      ++k.first;
      k.second += ns;
    } else {
      auto& c = copies[r.name];
      c[0] += 1;
      c[1] += static_cast<double>(r.bytes);
      c[2] += static_cast<double>(ns);
    }
  }
  const std::vector<Interval> busy = merged(std::move(work));
  std::vector<Interval> idle;  // the gaps between busy intervals, within the run
  std::uint64_t from = started;
  for (const Interval& b : busy) {
    if (b.begin > from) idle.push_back({from, std::min(b.begin, stopped)});
    from = std::max(from, b.end);
  }
  if (stopped > from) idle.push_back({from, stopped});

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
  for (const Span& sp : spans) by_label[sp.label].push_back({sp.begin, sp.end});
  const std::vector<Interval> run = merged({{started, stopped}});
  const double run_busy = busy_in(run), run_wall = wall_of(run);
  nlohmann::json out;
  out["wall_s"] = seconds(run_wall);
  out["busy_s"] = seconds(run_busy);
  out["activities"] = activities.size();
  out["idle_by_gap_s"] = idle_by_gap(run);
  out["labels"] = nlohmann::json::object();
  std::string phases;
  for (auto& [label, list] : by_label) {
    const std::vector<Interval> m = merged(std::move(list));
    const double wall = wall_of(m), b = busy_in(m);
    out["labels"][label] = {{"wall_s", seconds(wall)}, {"busy_s", seconds(b)}, {"idle_by_gap_s", idle_by_gap(m)}};
    if (label.find('.') == std::string::npos) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "; %s %.1f s, busy %.1f s", label.c_str(), seconds(wall), seconds(b));
      phases += buf;
    }
  }
  std::vector<std::pair<std::uint64_t, std::pair<const char*, std::size_t>>> top;
  for (const auto& [name, k] : kernels) top.push_back({k.second, {name, k.first}});
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : std::string(a.second.first) < b.second.first;
  });
  out["kernels"] = nlohmann::json::array();
  for (std::size_t i = 0; i < top.size() && i < 60; ++i)
    out["kernels"].push_back({{"name", top[i].second.first},
                              {"count", top[i].second.second},
                              {"total_s", seconds(static_cast<double>(top[i].first))}});
  out["copies"] = nlohmann::json::object();
  for (const auto& [kind, c] : copies) out["copies"][kind] = {{"count", c[0]}, {"bytes", c[1]}, {"total_s", seconds(c[2])}};

  char buf[160];
  std::snprintf(buf, sizeof buf, "GPU busy %.1f s of %.1f s (%.0f%%)", seconds(run_busy), seconds(run_wall),
                run_wall > 0 ? 100 * run_busy / run_wall : 0.0);
  summary = buf + phases;
  return out;
}

}  // namespace trace

}  // namespace ktune::bench
