// generator/agents/planning.cpp: the planning agent's tree (planning.hpp): the names of kinds, verdicts
// and actions, adding and judging nodes, the queries on the tree, and its record as JSON (planner.json).
// The decision rules are in planning_decide.cpp, the prompt summary in planning_prompt.cpp.
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
constexpr std::array<const char*, 19> kVerdictNames = {
    "pending",          "compile_error",    "incorrect",          "race",           "timeout",
    "rejected",         "slower",           "measured",           "out_of_bounds_write",
    "input_modified",   "unwritten_output", "nondeterministic",   "work_skipped",   "implausible_time",
    "narrower_than_s",  "out_of_bounds_access", "uninitialized_read", "state_changed", "reads_before_wait"};
static_assert(kVerdictNames.size() == Node::reads_before_wait + 1, "one name per Node::Verdict");
constexpr std::array<const char*, 3> kActionNames = {"rewrite", "reparam", "stop"};

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
