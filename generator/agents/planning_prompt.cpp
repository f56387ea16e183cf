// generator/agents/planning_prompt.cpp: the planner's tree as text for the LLM (summary_for_prompt()):
// the best node, its derivation, the latest rounds in full, older rounds in a line each, degraded in a
// fixed order until it fits its budget.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "generator/agents/planning.hpp"
#include "generator/agents/planning_detail.hpp"

namespace ktune::gen {

using namespace detail;

namespace {

enum class Detail { full, line, none };

std::string node_line(const View& v, const Node& n, std::size_t summary_max) {
  return fmt::format("node {} ({}, round {}): {} - {}", n.id, v.origin_words(n), n.round, v.outcome(n),
                     one_line(n.summary, summary_max));
}

std::string node_full(const View& v, const Node& n) {
  std::string out = fmt::format("node {} ({}, round {}): {}\n", n.id, v.origin_words(n), n.round, one_line(n.summary, 400));
  out += fmt::format("  verdict: {}", v.outcome(n));
  if (n.noise_band > 0) out += fmt::format(", noise band {}", percent(n.noise_band));
  if (!n.best_id.empty()) out += fmt::format(", best variant {}", one_line(n.best_id, 120));
  out += fmt::format("; expanded by {}, {}\n", plural(n.children_rewrite, "rewrite", "rewrites"),
                     plural(n.children_reparam, "re-parameterisation", "re-parameterisations"));
  if (!n.reason.empty()) out += fmt::format("  reason: {}\n", one_line(n.reason, 600));
  return out;
}

}  // namespace

std::string Planner::summary_for_prompt(std::size_t max_chars) const {
  if (nodes_.empty()) return cut_utf8("Search tree: empty (S not added yet).\n", max_chars);
  const View v{nodes_};
  const int b = best();

  std::vector<int> rounds;  // distinct rounds >= 1, ascending
  for (const Node& n : nodes_)
    if (n.id != 0 && std::find(rounds.begin(), rounds.end(), n.round) == rounds.end()) rounds.push_back(n.round);
  std::sort(rounds.begin(), rounds.end());
  const std::size_t n_latest = std::min<std::size_t>(3, rounds.size());
  const std::vector<int> older(rounds.begin(), rounds.end() - static_cast<std::ptrdiff_t>(n_latest));
  const std::vector<int> latest(rounds.end() - static_cast<std::ptrdiff_t>(n_latest), rounds.end());
  const std::vector<int> path = b > 0 ? lineage(b) : std::vector<int>{};
  auto on_path = [&](int id) { return std::find(path.begin(), path.end(), id) != path.end(); };

  // The best comes first: when little fits, it is what the prompt keeps.
  std::string header;
  if (b > 0)
    header = fmt::format("Best: node {} at {} over S ({}, round {}): {}\n", b, times(v.speedup(v.at(b))),
                         v.origin_words(v.at(b)), v.at(b).round, one_line(v.at(b).summary, 160));
  else
    header = "Best: S itself (node 0); no correct candidate has beaten it yet.\n";
  header += fmt::format(
      "Search tree: {} over {}; objective: geometric-mean speedup over S across the spec's shapes and dtypes, "
      "correct candidates only.\n",
      plural(static_cast<int>(nodes_.size()) - 1, "candidate", "candidates"), plural(static_cast<int>(rounds.size()), "round", "rounds"));

  // Sections by decreasing priority: header, lineage of the best, latest rounds, older rounds.
  auto render = [&](Detail path_detail, Detail latest_detail, std::optional<std::size_t> older_kept) {
    std::string out = header;
    if (!path.empty()) {
      out += "How the best was derived, from S:\n";
      for (int id : path)
        out += path_detail == Detail::full ? node_full(v, v.at(id)) : node_line(v, v.at(id), 80) + "\n";
    }
    if (!latest.empty() && latest_detail != Detail::none) {
      out += "Latest rounds:\n";
      for (int r : latest) {
        if (latest_detail == Detail::full) out += fmt::format("round {}:\n", r);
        for (const Node& n : nodes_) {
          if (n.round != r || n.id == 0) continue;
          if (latest_detail == Detail::line || on_path(n.id))
            out += fmt::format("{}{}{}\n", latest_detail == Detail::full ? "" : fmt::format("round {}: ", r),
                               node_line(v, n, 80), on_path(n.id) ? " (derivation of the best, above)" : "");
          else
            out += node_full(v, n);
        }
      }
    }
    if (!older.empty() && older_kept) {
      out += "Older rounds:\n";
      const std::size_t omitted = older.size() - *older_kept;
      if (omitted > 0) out += fmt::format("({} omitted)\n", plural(static_cast<int>(omitted), "older round", "older rounds"));
      for (std::size_t i = omitted; i < older.size(); ++i) {
        std::vector<std::string> parts;
        for (const Node& n : nodes_)
          if (n.round == older[i] && n.id != 0)
            parts.push_back(fmt::format("node {} ({}): {} - {}", n.id, v.origin_words(n), v.outcome(n), one_line(n.summary, 60)));
        out += fmt::format("round {}: {}\n", older[i], join(parts, "; "));
      }
    }
    return out;
  };

  // Degrade until it fits: older rounds (oldest first), then latest detail, then lineage detail,
  // then whole sections; last, cut at a line end.
  const std::array<std::pair<Detail, Detail>, 3> levels = {
      std::pair{Detail::full, Detail::full}, std::pair{Detail::full, Detail::line}, std::pair{Detail::line, Detail::line}};
  for (const auto& [path_detail, latest_detail] : levels) {
    for (std::size_t kept = older.size() + 1; kept-- > 0;) {
      std::string text = render(path_detail, latest_detail, kept);
      if (text.size() <= max_chars) return text;
    }
  }
  for (Detail latest_detail : {Detail::line, Detail::none}) {
    std::string text = render(Detail::line, latest_detail, std::nullopt);
    if (text.size() <= max_chars) return text;
  }
  const std::string text = render(Detail::line, Detail::none, std::nullopt);
  const std::size_t line_end = max_chars == 0 ? std::string::npos : text.rfind('\n', max_chars - 1);
  if (line_end != std::string::npos) return text.substr(0, line_end + 1);
  return cut_utf8(text, max_chars);
}

}  // namespace ktune::gen
