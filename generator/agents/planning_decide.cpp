// generator/agents/planning_decide.cpp: the planner's decision rules (decide(), rules 1-5 of
// planning.hpp): budgets, patience, the start, failures, and the most promising node with its action,
// each decision with the sentence that says why.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "generator/agents/planning.hpp"
#include "generator/agents/planning_detail.hpp"

namespace ktune::gen {

using namespace detail;

namespace {

std::string times3(double s) { return fmt::format("{:.3f}x", s); }
std::string signed_percent(double r) { return fmt::format("{:+.1f}%", r * 100.0); }

struct RoundGain {
  bool gained = false;
  std::string note;
};

// Did round r bring a gain beyond the noise band over every earlier round? (rule 2)
RoundGain round_gain(const View& v, int r) {
  double ref = 1.0;
  for (const Node& n : v.nodes)
    if (n.round < r && v.expandable(n)) ref = std::max(ref, v.speedup(n));
  RoundGain g;
  std::vector<std::string> notes;
  for (const Node& n : v.nodes) {
    if (n.round != r || n.id == 0) continue;
    if (!is_correct_measured(n)) {
      notes.push_back(fmt::format("node {} {}", n.id, to_string(n.verdict)));
      continue;
    }
    const double need = ref * (1.0 + band_of(n));
    if (v.gains_over(n, ref)) {
      g.gained = true;
      notes.push_back(fmt::format("node {} gained ({} > {})", n.id, times3(v.speedup(n)), times3(need)));
    } else {
      notes.push_back(fmt::format("node {} at {} did not pass {} (best before {}, band {})", n.id,
                                  times3(v.speedup(n)), times3(need), times3(ref), percent(band_of(n))));
    }
  }
  g.note = fmt::format("round {}: {}", r, notes.empty() ? std::string("no candidate") : join(notes, ", "));
  return g;
}

struct Choice {
  Decision::Action action;
  std::string why;
};

// The action for a node chosen as most promising (rule 5's list).
Choice action_for(const View& v, const Node& t) {
  if (t.id == 0)
    return {Decision::rewrite, fmt::format("S has no θ to search, so a semantic rewrite is the only way to expand it{}",
                                           t.children_rewrite ? fmt::format(" ({} so far)", plural(t.children_rewrite, "rewrite", "rewrites")) : "")};
  const double s = v.speedup(t);
  const auto reparams = v.expansions_of(t.id, Node::reparam);
  int without_gain = 0;
  for (const Node* r : reparams) without_gain += v.gains_over(*r, s) ? 0 : 1;
  if (without_gain >= Planner::kMaxReparamsWithoutGain)
    return {Decision::rewrite,
            fmt::format("it has been re-parameterised {} times without gain beyond the noise band, so its structure "
                        "needs a semantic rewrite", without_gain)};
  if (!reparams.empty()) {
    const Node& last = *reparams.back();
    if (is_failure(last.verdict))
      return {Decision::rewrite,
              fmt::format("its last re-parameterisation, node {}, failed ({}: {}), so it gets a semantic rewrite instead",
                          last.id, to_string(last.verdict), one_line(last.reason, 160))};
    const double delta = v.speedup(last) / s - 1.0;
    if (std::abs(delta) <= band_of(last))
      return {Decision::rewrite,
              fmt::format("its last re-parameterisation, node {} at {}, moved it by {}, inside the {} noise band: its θ is "
                          "near its optimum, so a semantic rewrite is next", last.id, times(v.speedup(last)),
                          signed_percent(delta), percent(band_of(last)))};
    if (delta > 0)
      return {Decision::reparam,
              fmt::format("its last re-parameterisation, node {} at {}, gained {}, beyond the {} noise band, so its θ is "
                          "searched further", last.id, times(v.speedup(last)), signed_percent(delta), percent(band_of(last)))};
    return {Decision::reparam,
            fmt::format("its last re-parameterisation, node {} at {}, was {} slower, beyond the noise band; one more θ "
                        "before a rewrite ({} of {} tries without gain)", last.id, times(v.speedup(last)),
                        percent(-delta), without_gain, Planner::kMaxReparamsWithoutGain)};
  }
  if (t.kind == Node::rewrite)
    return {Decision::reparam,
            fmt::format("it was created by a rewrite in round {} and its θ has not been searched yet", t.round)};
  const Node& base = v.at(t.based_on);
  const double delta = s / v.speedup(base) - 1.0;
  if (v.gains_over(t, v.speedup(base)))
    return {Decision::reparam,
            fmt::format("it re-parameterises node {} with a gain of {}, beyond the {} noise band, so its θ is searched "
                        "further", base.id, signed_percent(delta), percent(band_of(t)))};
  return {Decision::rewrite,
          fmt::format("it re-parameterises node {} with no gain beyond the {} noise band ({}), so its structure needs a "
                      "semantic rewrite", base.id, percent(band_of(t)), signed_percent(delta))};
}

const char* verb(Decision::Action a) { return a == Decision::rewrite ? "rewrite" : "re-parameterise"; }

}  // namespace

Decision Planner::decide(const RunUsage& used) const {
  Decision d;
  d.round = used.rounds + 1;
  if (nodes_.empty()) {
    d.reason = fmt::format("round {}: stop — the tree has no root; S must be added (add_root) before deciding", d.round);
    return d;
  }
  const View v{nodes_};
  const int best_id = best();

  // 1. Budgets.
  std::vector<std::string> spent;
  if (budget_.max_rounds > 0 && used.rounds >= budget_.max_rounds)
    spent.push_back(fmt::format("the rounds budget ({} of {} rounds done)", used.rounds, budget_.max_rounds));
  if (budget_.max_tokens > 0 && used.tokens >= budget_.max_tokens)
    spent.push_back(fmt::format("the token budget ({} of {} tokens used)", used.tokens, budget_.max_tokens));
  if (budget_.max_wall_s > 0 && used.wall_s >= budget_.max_wall_s)
    spent.push_back(fmt::format("the wall-time budget ({:.1f} s of {:.1f} s)", used.wall_s, budget_.max_wall_s));
  if (!spent.empty()) {
    d.reason = fmt::format("round {}: stop — {} {} spent; the best is {}", d.round, join(spent, " and "),
                           spent.size() == 1 ? "is" : "are", v.describe_best(best_id));
    return d;
  }

  // 2. Patience.
  const int last = std::max(used.rounds, v.last_round());
  if (budget_.patience > 0 && last >= budget_.patience) {
    const int first = last - budget_.patience + 1;
    bool gained = false;
    std::vector<std::string> notes;
    for (int r = first; r <= last; ++r) {
      RoundGain g = round_gain(v, r);
      gained = gained || g.gained;
      notes.push_back(std::move(g.note));
    }
    if (!gained) {
      d.reason = fmt::format("round {}: stop — the last {} brought no gain beyond the noise band ({}); the best stays {}",
                             d.round,
                             budget_.patience == 1 ? fmt::format("round ({})", first)
                                                   : fmt::format("{} rounds ({} to {})", budget_.patience, first, last),
                             join(notes, "; "), v.describe_best(best_id));
      return d;
    }
  }

  // 3. Start: only S.
  if (nodes_.size() == 1) {
    d.action = Decision::rewrite;
    d.target = 0;
    d.reason = fmt::format("round {}: rewrite S (node 0) — the tree holds only the original kernel, so the first step "
                           "is a semantic rewrite that makes its execution strategy explicit as θ", d.round);
    return d;
  }

  // 4. Failure of the latest round: back to the node it came from, with a rewrite.
  int set_aside = -1;
  std::string set_aside_words;
  const int latest = v.last_round();
  const Node* failed = nullptr;
  bool all_failed = latest > 0;
  for (const Node& n : nodes_) {
    if (n.round != latest || n.id == 0 || n.verdict == Node::pending) continue;
    if (is_failure(n.verdict)) failed = &n;
    else all_failed = false;
  }
  if (all_failed && failed != nullptr) {
    const Node& origin = v.at(failed->based_on);
    const int in_a_row = v.consecutive_failures(origin.id);
    const std::string what =
        fmt::format("round {}'s node {} ({}: {}) failed with {}: {}", failed->round, failed->id,
                    v.origin_words(*failed), one_line(failed->summary, 100), to_string(failed->verdict),
                    failed->reason.empty() ? std::string("no reason given") : one_line(failed->reason, 200));
    if (v.expandable(origin) && in_a_row < kMaxConsecutiveFailures) {
      d.action = Decision::rewrite;
      d.target = origin.id;
      d.reason = fmt::format("round {}: rewrite {} ({} over S) — {}; a failed node is never expanded, so node {} gets a "
                             "new semantic rewrite ({} of its expansions failed in a row, {} allowed)",
                             d.round, origin.id == 0 ? std::string("S (node 0)") : fmt::format("node {}", origin.id),
                             times(v.speedup(origin)), what, origin.id, in_a_row, kMaxConsecutiveFailures);
      return d;
    }
    set_aside = origin.id;
    set_aside_words = v.expandable(origin)
                          ? fmt::format("{}; node {} is set aside this round after {} failed expansions in a row. ",
                                        what, origin.id, in_a_row)
                          : fmt::format("{}; node {} cannot be expanded ({}). ", what, origin.id, to_string(origin.verdict));
  }

  // 5. The most promising node: highest UCB-like score.
  std::vector<const Node*> ranked;
  for (const Node& n : nodes_)
    if (v.expandable(n) && n.id != set_aside) ranked.push_back(&n);
  if (ranked.empty() && set_aside >= 0 && v.expandable(v.at(set_aside))) {
    ranked.push_back(&v.at(set_aside));
    set_aside_words += "It is the only node that can be expanded, so it is chosen anyway. ";
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](const Node* a, const Node* b) {
    if (v.score(*a) != v.score(*b)) return v.score(*a) > v.score(*b);
    if (v.speedup(*a) != v.speedup(*b)) return v.speedup(*a) > v.speedup(*b);
    return a->id < b->id;
  });
  if (ranked.empty()) {  // unreachable while S is measured; kept so a hand-made tree cannot crash the loop
    d.reason = fmt::format("round {}: stop — no node can be expanded", d.round);
    return d;
  }
  const Node& t = *ranked.front();
  const Choice c = action_for(v, t);
  d.action = c.action;
  d.target = t.id;
  std::string figures = fmt::format("{} over S, {}, score {:.2f}", times(v.speedup(t)),
                                    plural(v.expansions(t), "expansion", "expansions"), v.score(t));
  if (t.id == best_id && t.id != 0) figures += ", the best so far";
  if (ranked.size() > 1)
    figures += fmt::format("; next node {} scores {:.2f}", ranked[1]->id, v.score(*ranked[1]));
  if (t.id != best_id && best_id >= 0)
    figures += fmt::format("; the best, node {} at {}, scores {:.2f} after {}", best_id, times(v.speedup(v.at(best_id))),
                           v.score(v.at(best_id)), plural(v.expansions(v.at(best_id)), "expansion", "expansions"));
  d.reason = fmt::format("round {}: {}{} {} ({}) — {}", d.round, set_aside_words.empty() ? "" : set_aside_words,
                         verb(c.action), t.id == 0 ? std::string("S (node 0)") : fmt::format("node {}", t.id), figures,
                         c.why);
  return d;
}

}  // namespace ktune::gen
