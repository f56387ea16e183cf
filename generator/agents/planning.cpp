// generator/agents/planning.cpp: the planning agent's tree, its decision rules (documented in
// planning.hpp), the prompt summary and the JSON form.
#include "generator/agents/planning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace ktune::gen {

namespace {

constexpr std::array<const char*, 3> kKindNames = {"original", "rewrite", "reparam"};
// Indexed by Node::Verdict: appended to, never reordered (planner.json stores the names).
constexpr std::array<const char*, 17> kVerdictNames = {
    "pending",          "compile_error",    "incorrect",          "race",           "timeout",
    "rejected",         "slower",           "measured",           "out_of_bounds_write",
    "input_modified",   "unwritten_output", "nondeterministic",   "work_skipped",   "implausible_time",
    "narrower_than_s",  "out_of_bounds_access", "uninitialized_read"};
static_assert(kVerdictNames.size() == Node::uninitialized_read + 1, "one name per Node::Verdict");
constexpr std::array<const char*, 3> kActionNames = {"rewrite", "reparam", "stop"};

double band_of(const Node& n) { return std::max(n.noise_band, Planner::kMinBand); }

std::string times(double s) { return fmt::format("{:.2f}x", s); }
std::string times3(double s) { return fmt::format("{:.3f}x", s); }
std::string percent(double r) { return fmt::format("{:.1f}%", r * 100.0); }
std::string signed_percent(double r) { return fmt::format("{:+.1f}%", r * 100.0); }

// Cuts at most `max` bytes without splitting a UTF-8 sequence (prompts and records stay valid text).
std::string cut_utf8(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// One line of free text (LLM summary, judge's reason), shortened with "..." when over `max` bytes.
std::string one_line(const std::string& s, std::size_t max) {
  std::string flat;
  flat.reserve(s.size());
  for (char c : s) flat += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (flat.size() <= max) return flat;
  if (max <= 3) return cut_utf8(flat, max);
  return cut_utf8(flat, max - 3) + "...";
}

std::string plural(int n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

template <std::size_t N>
int enum_from(const nlohmann::json& j, const std::array<const char*, N>& names, const char* what) {
  const std::string s = j.get<std::string>();
  for (std::size_t i = 0; i < N; ++i)
    if (s == names[i]) return static_cast<int>(i);
  throw std::invalid_argument(fmt::format("planner JSON: unknown {} \"{}\"", what, s));
}

}  // namespace

namespace {
// No throw even for a value cast from garbage: the interface promises no exceptions.
template <std::size_t N>
const char* name_of(const std::array<const char*, N>& names, int value) {
  return value >= 0 && static_cast<std::size_t>(value) < N ? names[static_cast<std::size_t>(value)] : "unknown";
}
}  // namespace

const char* to_string(Node::Kind kind) { return name_of(kKindNames, kind); }
const char* to_string(Node::Verdict verdict) { return name_of(kVerdictNames, verdict); }
const char* to_string(Decision::Action action) { return name_of(kActionNames, action); }

bool is_failure(Node::Verdict v) {
  return v != Node::pending && v != Node::slower && v != Node::measured && static_cast<int>(v) >= 0 &&
         static_cast<std::size_t>(v) < kVerdictNames.size();
}

bool is_correct_measured(const Node& n) {
  return (n.verdict == Node::measured || n.verdict == Node::slower) && n.geomean_speedup.has_value();
}

// ---------------------------------------------------------------------------------------------------
// The tree.

Planner::Planner(Budget budget) : budget_(budget) {}

int Planner::add_root() {
  if (!nodes_.empty()) return 0;
  Node s;
  s.id = 0;
  s.parent = -1;
  s.kind = Node::original;
  s.based_on = -1;
  s.round = 0;
  s.summary = "S, the original kernel";
  s.verdict = Node::measured;
  s.reason = "the baseline every candidate is compared with";
  s.geomean_speedup = 1.0;
  nodes_.push_back(std::move(s));
  return 0;
}

int Planner::add(Node n) {
  const int size = static_cast<int>(nodes_.size());
  auto known = [&](int id) { return id >= 0 && id < size; };
  if (nodes_.empty() || n.kind == Node::original || n.round < 0) return -1;
  if (n.kind == Node::rewrite) {
    if (!known(n.parent)) return -1;
    if (n.based_on == -1) n.based_on = n.parent;
    if (n.based_on != n.parent) return -1;
  } else {
    if (!known(n.based_on) || n.based_on == 0) return -1;  // S has no θ to re-parameterise
    const int parent = nodes_[static_cast<std::size_t>(n.based_on)].parent;
    if (n.parent == -1) n.parent = parent;
    if (n.parent != parent) return -1;
  }
  n.id = size;
  n.children_rewrite = 0;
  n.children_reparam = 0;
  Node& origin = nodes_[static_cast<std::size_t>(n.based_on)];
  (n.kind == Node::rewrite ? origin.children_rewrite : origin.children_reparam) += 1;
  nodes_.push_back(std::move(n));
  return size;
}

int Planner::add_rewrite(int of, int round, std::string summary) {
  Node n;
  n.kind = Node::rewrite;
  n.parent = of;
  n.based_on = of;
  n.round = round;
  n.summary = std::move(summary);
  return add(std::move(n));
}

int Planner::add_reparam(int of, int round, std::string summary) {
  Node n;
  n.kind = Node::reparam;
  n.based_on = of;
  n.round = round;
  n.summary = std::move(summary);
  return add(std::move(n));
}

int Planner::add_for(const Decision& d, std::string summary) {
  switch (d.action) {
    case Decision::rewrite: return add_rewrite(d.target, d.round, std::move(summary));
    case Decision::reparam: return add_reparam(d.target, d.round, std::move(summary));
    case Decision::stop: break;
  }
  return -1;
}

bool Planner::update(int id, Node::Verdict verdict, std::string reason, std::optional<double> speedup,
                     double noise_band, std::string best_id) {
  if (id < 0 || id >= static_cast<int>(nodes_.size())) return false;
  Node& n = nodes_[static_cast<std::size_t>(id)];
  n.verdict = verdict;
  n.reason = std::move(reason);
  n.geomean_speedup = (speedup && std::isfinite(*speedup)) ? speedup : std::nullopt;
  n.noise_band = (std::isfinite(noise_band) && noise_band > 0.0) ? noise_band : 0.0;
  n.best_id = std::move(best_id);
  return true;
}

void Planner::record(Decision decision) { decisions_.push_back(std::move(decision)); }

const Node* Planner::node(int id) const {
  if (id < 0 || id >= static_cast<int>(nodes_.size())) return nullptr;
  return &nodes_[static_cast<std::size_t>(id)];
}

int Planner::best() const {
  int best = -1;
  for (const Node& n : nodes_) {
    const bool usable = n.id == 0 || is_correct_measured(n);
    if (!usable) continue;
    // strictly greater: ties keep the earlier node (S wins a tie with a candidate)
    if (best == -1 || n.geomean_speedup.value_or(1.0) > nodes_[static_cast<std::size_t>(best)].geomean_speedup.value_or(1.0))
      best = n.id;
  }
  return best;
}

std::vector<int> Planner::path_to(int id) const {
  std::vector<int> path;
  for (const Node* n = node(id); n != nullptr; n = node(n->parent)) path.push_back(n->id);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<int> Planner::lineage(int id) const {
  std::vector<int> chain;
  for (const Node* n = node(id); n != nullptr; n = node(n->based_on)) chain.push_back(n->id);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

// ---------------------------------------------------------------------------------------------------
// Decisions.

namespace {

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

// ---------------------------------------------------------------------------------------------------
// The prompt summary.

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

// ---------------------------------------------------------------------------------------------------
// JSON.

nlohmann::json Planner::to_json() const {
  nlohmann::json nodes = nlohmann::json::array();
  for (const Node& n : nodes_) {
    nodes.push_back({{"id", n.id},
                     {"parent", n.parent},
                     {"kind", to_string(n.kind)},
                     {"based_on", n.based_on},
                     {"round", n.round},
                     {"summary", n.summary},
                     {"verdict", to_string(n.verdict)},
                     {"reason", n.reason},
                     {"geomean_speedup", n.geomean_speedup ? nlohmann::json(*n.geomean_speedup) : nlohmann::json()},
                     {"noise_band", n.noise_band},
                     {"best_id", n.best_id},
                     {"children_rewrite", n.children_rewrite},
                     {"children_reparam", n.children_reparam}});
  }
  nlohmann::json decisions = nlohmann::json::array();
  for (const Decision& d : decisions_)
    decisions.push_back({{"round", d.round}, {"action", to_string(d.action)}, {"target", d.target}, {"reason", d.reason}});
  return {{"version", 1},
          {"budget",
           {{"max_rounds", budget_.max_rounds},
            {"max_tokens", budget_.max_tokens},
            {"max_wall_s", budget_.max_wall_s},
            {"patience", budget_.patience}}},
          {"nodes", std::move(nodes)},
          {"decisions", std::move(decisions)}};
}

Planner Planner::from_json(const nlohmann::json& j) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("planner JSON: " + what); };
  try {
    if (!j.is_object()) fail("not an object");
    if (j.at("version").get<int>() != 1) fail(fmt::format("unsupported version {}", j.at("version").dump()));
    const nlohmann::json& jb = j.at("budget");
    Budget budget;
    budget.max_rounds = jb.at("max_rounds").get<int>();
    budget.max_tokens = jb.at("max_tokens").get<std::int64_t>();
    budget.max_wall_s = jb.at("max_wall_s").get<double>();
    budget.patience = jb.at("patience").get<int>();
    Planner p(budget);

    const nlohmann::json& jn = j.at("nodes");
    if (!jn.is_array()) fail("\"nodes\" is not an array");
    for (std::size_t i = 0; i < jn.size(); ++i) {
      const nlohmann::json& x = jn[i];
      Node n;
      n.id = x.at("id").get<int>();
      n.parent = x.at("parent").get<int>();
      n.kind = static_cast<Node::Kind>(enum_from(x.at("kind"), kKindNames, "node kind"));
      n.based_on = x.at("based_on").get<int>();
      n.round = x.at("round").get<int>();
      n.summary = x.at("summary").get<std::string>();
      n.verdict = static_cast<Node::Verdict>(enum_from(x.at("verdict"), kVerdictNames, "verdict"));
      n.reason = x.at("reason").get<std::string>();
      const nlohmann::json& s = x.at("geomean_speedup");
      if (!s.is_null()) n.geomean_speedup = s.get<double>();
      n.noise_band = x.at("noise_band").get<double>();
      n.best_id = x.at("best_id").get<std::string>();
      n.children_rewrite = x.at("children_rewrite").get<int>();
      n.children_reparam = x.at("children_reparam").get<int>();

      const int id = static_cast<int>(i);
      const std::string where = fmt::format("node {}: ", i);
      if (n.id != id) fail(where + fmt::format("id {} out of order", n.id));
      if (id == 0) {
        if (n.kind != Node::original || n.parent != -1 || n.based_on != -1) fail(where + "the root must be S (original, no parent)");
      } else {
        auto known = [&](int k) { return k >= 0 && k < id; };
        if (n.kind == Node::original) fail(where + "only node 0 may be the original kernel");
        if (!known(n.parent) || !known(n.based_on)) fail(where + "parent or based_on names an unknown node");
        if (n.kind == Node::rewrite && n.based_on != n.parent) fail(where + "a rewrite's based_on must be its parent");
        if (n.kind == Node::reparam && (n.based_on == 0 || p.nodes_[static_cast<std::size_t>(n.based_on)].parent != n.parent))
          fail(where + "a re-parameterisation must sit beside the node it re-parameterises");
      }
      p.nodes_.push_back(std::move(n));
    }
    // The counters are derived from the tree: a mismatch means the record was edited or corrupted.
    std::vector<int> rewrites(p.nodes_.size(), 0), reparams(p.nodes_.size(), 0);
    for (const Node& n : p.nodes_)
      if (n.id != 0) ++(n.kind == Node::rewrite ? rewrites : reparams)[static_cast<std::size_t>(n.based_on)];
    for (const Node& n : p.nodes_)
      if (n.children_rewrite != rewrites[static_cast<std::size_t>(n.id)] ||
          n.children_reparam != reparams[static_cast<std::size_t>(n.id)])
        fail(fmt::format("node {}: expansion counters do not match the tree", n.id));

    const nlohmann::json& jd = j.at("decisions");
    if (!jd.is_array()) fail("\"decisions\" is not an array");
    for (const nlohmann::json& x : jd) {
      Decision d;
      d.round = x.at("round").get<int>();
      d.action = static_cast<Decision::Action>(enum_from(x.at("action"), kActionNames, "action"));
      d.target = x.at("target").get<int>();
      d.reason = x.at("reason").get<std::string>();
      const bool ok = d.action == Decision::stop ? d.target == -1
                                                 : d.target >= 0 && d.target < static_cast<int>(p.nodes_.size());
      if (!ok) fail(fmt::format("decision for round {}: target {} does not fit action {}", d.round, d.target, to_string(d.action)));
      p.decisions_.push_back(std::move(d));
    }
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("planner JSON: ") + e.what());
  }
}

}  // namespace ktune::gen
