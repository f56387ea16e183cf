// generator/agents/planning_detail.hpp: what the planner's files share (planning_decide.cpp,
// planning_prompt.cpp): the figures in words, free text cut to one line, and the read-only View of the
// node list that the decision rules and the prompt summary both read. Internal; the interface is
// planning.hpp.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "generator/agents/planning.hpp"

namespace ktune::gen::detail {

inline double band_of(const Node& n) { return std::max(n.noise_band, Planner::kMinBand); }

inline std::string times(double s) { return fmt::format("{:.2f}x", s); }
inline std::string percent(double r) { return fmt::format("{:.1f}%", r * 100.0); }

// Cuts at most `max` bytes without splitting a UTF-8 sequence (prompts and records stay valid text).
inline std::string cut_utf8(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// One line of free text (LLM summary, judge's reason), shortened with "..." when over `max` bytes.
inline std::string one_line(const std::string& s, std::size_t max) {
  std::string flat;
  flat.reserve(s.size());
  for (char c : s) flat += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (flat.size() <= max) return flat;
  if (max <= 3) return cut_utf8(flat, max);
  return cut_utf8(flat, max - 3) + "...";
}

inline std::string plural(int n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// Read-only helpers over the node list used by decide() and the prompt summary.
struct View {
  const std::vector<Node>& nodes;

  const Node& at(int id) const { return nodes[static_cast<std::size_t>(id)]; }
  double speedup(const Node& n) const { return n.geomean_speedup.value_or(1.0); }
  bool expandable(const Node& n) const { return n.id == 0 || is_correct_measured(n); }
  int expansions(const Node& n) const { return n.children_rewrite + n.children_reparam; }
  double score(const Node& n) const {
    return speedup(n) * (1.0 + Planner::kExploration / std::sqrt(1.0 + expansions(n)));
  }
  int last_round() const {
    int r = 0;
    for (const Node& n : nodes) r = std::max(r, n.round);
    return r;
  }
  // Finished (judged) expansions of `id`, oldest first.
  std::vector<const Node*> expansions_of(int id, std::optional<Node::Kind> kind = std::nullopt) const {
    std::vector<const Node*> out;
    for (const Node& n : nodes)
      if (n.id != 0 && n.based_on == id && n.verdict != Node::pending && (!kind || n.kind == *kind))
        out.push_back(&n);
    return out;
  }
  int consecutive_failures(int id) const {
    int count = 0;
    for (const Node* n : expansions_of(id)) count = is_failure(n->verdict) ? count + 1 : 0;
    return count;
  }
  // A candidate gains over `ref` only beyond its own noise band (at least kMinBand).
  bool gains_over(const Node& n, double ref) const {
    return is_correct_measured(n) && speedup(n) > ref * (1.0 + band_of(n));
  }
  std::string origin_words(const Node& n) const {
    if (n.id == 0) return "original";
    return fmt::format("{} of node {}", n.kind == Node::rewrite ? "rewrite" : "re-parameterisation", n.based_on);
  }
  std::string outcome(const Node& n) const {
    if (is_correct_measured(n)) return fmt::format("{} {} over S", to_string(n.verdict), times(speedup(n)));
    return to_string(n.verdict);
  }
  std::string describe_best(int best) const {
    if (best <= 0) return "S itself (no correct candidate has beaten it)";
    const Node& b = at(best);
    return fmt::format("node {} at {} over S ({} in round {})", b.id, times(speedup(b)), origin_words(b), b.round);
  }
};

}  // namespace ktune::gen::detail
