// generator/agents/planning.hpp: the planning agent: keeps every candidate family as a node of a
// tree, decides each round whether to rewrite, re-parameterise or stop, and writes down why.
//
// Deterministic code, no LLM and no I/O: the loop feeds it the testing agent's verdicts and the
// tuning agent's speedups, asks decide() what to do next, and records the Decision it gets.
//
// The tree. Node 0 is S itself, the original kernel (speedup 1.0 by definition). A semantic rewrite
// (a new structure) is a child of the node it rewrites. A re-parameterisation (new θ values or
// parameters of the same structure) is a sibling of the node it re-parameterises: a child of that
// node's parent, with kind reparam and `based_on` naming the node it came from. S has no θ, so it is
// only ever rewritten. Every node counts its expansions: `children_rewrite` (its tree children) and
// `children_reparam` (the re-parameterisations based on it, which sit beside it).
//
// The objective is the geometric mean over the spec's shapes and dtypes of S_time / best_time,
// correctness required: only nodes with verdict `measured` or `slower` (correct and timed) carry a
// speedup that any rule reads. A faster node that is incorrect or races is never the best.
//
// decide() applies these rules, in this order (constants are Planner's static members):
//  1. Budget: stop when rounds, tokens or wall time are spent (used >= limit; a limit <= 0 is off).
//     The reason names every spent budget with its figures.
//  2. Patience: stop when the last `patience` rounds brought no gain beyond the noise band. Round r
//     gains when one of its correct nodes n has speedup(n) > ref × (1 + band(n)), where ref is the
//     best speedup among all correct nodes of earlier rounds (S's 1.0 included) and band(n) =
//     max(n.noise_band, kMinBand). A gain inside the band does not count, and it raises ref, so
//     creeping gains inside the noise never add up to a "gain".
//  3. Start: while the tree holds only S, rewrite S.
//  4. Failure: when every finished node of the latest round failed (compile error after the
//     generation agent's own retries, any of the judge's verdicts against it: incorrect, race,
//     timeout, rejected, out_of_bounds_write, ...; is_failure), the node it was derived
//     from (its parent for a rewrite, the node it re-parameterised for a re-parameterisation) gets a
//     new semantic rewrite, and the reason quotes the failure. Once kMaxConsecutiveFailures of its
//     expansions in a row have failed, that node is set aside for the round and rule 5 picks among
//     the others (it stays a candidate if there is no other). A failed node is never expanded, by
//     this rule or any other.
//  5. Most promising: among S and the correct measured nodes, the highest
//        score(n) = speedup(n) × (1 + kExploration / sqrt(1 + expansions(n)))
//     (UCB-like, c = 0.5: a fresh node counts ×1.5, one expanded 3 times ×1.25, so the best is
//     favoured and a node expanded often yields to a close, fresh one; ties go to the higher
//     speedup, then the earlier node; pending nodes are neither candidates nor failures). The
//     action for that node:
//       - S: rewrite (it has no θ);
//       - re-parameterised kMaxReparamsWithoutGain times without gain beyond the band: rewrite;
//       - its last re-parameterisation failed: rewrite (the reason quotes the failure);
//       - its last re-parameterisation landed inside the band (|Δ| <= band): rewrite, θ is flat here;
//       - its last re-parameterisation gained beyond the band: re-parameterise again;
//       - its last re-parameterisation was slower beyond the band (once): re-parameterise once more;
//       - not re-parameterised yet and created by a rewrite: re-parameterise (search its θ first);
//       - not re-parameterised yet and itself a re-parameterisation: re-parameterise again if it
//         gained beyond the band over the node it came from, else rewrite.
//     A node just created by a rewrite that measured correct has no expansions, so it has the full
//     bonus and, unless it is clearly behind, is the one re-parameterised next.
//
// No exceptions leave this interface except from_json on malformed input (std::invalid_argument).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ktune::gen {

/// One candidate family (or S itself) in the planner's tree.
struct Node {
  enum Kind { original, rewrite, reparam };
  /// pending: not judged yet. slower: correct and timed, slower than S. measured: correct and timed.
  /// Every other verdict is a failure, never expanded: compile_error; timeout; rejected (the judge could
  /// not use the family); the judge's verdicts that a variant is wrong (incorrect, out_of_bounds_write,
  /// input_modified, unwritten_output, nondeterministic, work_skipped, implausible_time, state_changed,
  /// reads_before_wait: the names of include/ktune/judge.hpp); narrower_than_s (Space::unaligned_point
  /// refuses or fails a call S answers); and compute-sanitizer's reports (race: racecheck,
  /// out_of_bounds_access: memcheck, uninitialized_read: initcheck).
  /// New names are appended, never inserted: planner.json stores the names, and the order is the
  /// enum's values.
  enum Verdict {
    pending, compile_error, incorrect, race, timeout, rejected, slower, measured,
    out_of_bounds_write, input_modified, unwritten_output, nondeterministic, work_skipped, implausible_time,
    narrower_than_s, out_of_bounds_access, uninitialized_read, state_changed, reads_before_wait
  };

  int id = -1;
  int parent = -1;    ///< -1 for the root (S); a reparam's parent is its based_on's parent
  Kind kind = rewrite;
  int based_on = -1;  ///< the node this one rewrites (== parent) or re-parameterises; -1 for S
  int round = 0;      ///< the round that created it; S is round 0
  std::string summary;  ///< the LLM's one line: what structure / which parameters
  Verdict verdict = pending;
  std::string reason;   ///< why the verdict (the testing agent's words)
  std::optional<double> geomean_speedup;  ///< over S; read only when the verdict is correct
  double noise_band = 0.0;  ///< relative timing noise of the measurement, e.g. 0.01
  std::string best_id;      ///< the best variant of the family (the tuning agent's id)
  int children_rewrite = 0;  ///< rewrites of this node (its tree children)
  int children_reparam = 0;  ///< re-parameterisations based on this node (its siblings)

  friend bool operator==(const Node&, const Node&) = default;
};

struct Budget {
  int max_rounds = 8;                     ///< rounds of generation; <= 0: no limit
  std::int64_t max_tokens = 2'000'000;    ///< prompt + completion tokens; <= 0: no limit
  double max_wall_s = 4 * 3600.0;         ///< wall-clock seconds; <= 0: no limit
  int patience = 3;                       ///< stop after this many rounds with no gain; <= 0: off

  friend bool operator==(const Budget&, const Budget&) = default;
};

/// What the run has used so far (the loop's counters).
struct RunUsage {
  std::int64_t tokens = 0;
  int rounds = 0;  ///< rounds done (generation rounds finished, whatever their verdict)
  double wall_s = 0.0;
};

struct Decision {
  enum Action { rewrite, reparam, stop };
  Action action = stop;
  int target = -1;      ///< the node to rewrite / re-parameterise; -1 for stop
  int round = 0;        ///< the round this decision is for (rounds done + 1)
  std::string reason;   ///< a full sentence with the figures that drove it

  friend bool operator==(const Decision&, const Decision&) = default;
};

const char* to_string(Node::Kind kind);
const char* to_string(Node::Verdict verdict);
const char* to_string(Decision::Action action);
/// Every verdict but pending, slower and measured (see Node::Verdict).
bool is_failure(Node::Verdict verdict);
/// measured or slower with a speedup: the only nodes whose speedup counts.
bool is_correct_measured(const Node& node);

class Planner {
 public:
  static constexpr double kMinBand = 0.01;           ///< the noise band is never taken below 1%
  static constexpr double kExploration = 0.5;        ///< c in the UCB-like score
  static constexpr int kMaxReparamsWithoutGain = 2;  ///< then a rewrite
  static constexpr int kMaxConsecutiveFailures = 3;  ///< failed expansions in a row: node set aside

  explicit Planner(Budget budget = {});

  /// Adds S as node 0 (kind original, round 0, measured, speedup 1.0); idempotent. Returns 0.
  int add_root();
  /// Adds a candidate; returns its id (ids are assigned here: 0, 1, 2, ...), or -1 when the node
  /// does not fit the tree: no root yet, kind original, an unknown parent / based_on, a rewrite
  /// whose based_on is not its parent, a reparam of S, or a reparam whose parent is not its
  /// based_on's parent (a reparam's parent may be left -1: it is filled in), a negative round.
  /// The node's id and expansion counters are set here; the expansion is counted in the node it
  /// came from. Verdict, speedup and the rest are kept as given.
  int add(Node node);
  /// Shorthands that fill parent / based_on / kind correctly.
  int add_rewrite(int of, int round, std::string summary);
  int add_reparam(int of, int round, std::string summary);
  /// Adds the node a rewrite / reparam decision asked for; -1 for a stop decision.
  int add_for(const Decision& decision, std::string summary);

  /// Records the judged outcome of a node. Returns false (and changes nothing) for an unknown id.
  /// A non-finite speedup is stored as none; a negative or non-finite band as 0 (read as kMinBand).
  /// The speedup is kept whatever the verdict (the record shows how fast a wrong node was), but
  /// only correct verdicts let any rule read it.
  bool update(int id, Node::Verdict verdict, std::string reason, std::optional<double> speedup,
              double noise_band, std::string best_id);

  /// What to do next (see the rules at the top of this file).
  Decision decide(const RunUsage& used) const;
  /// Keeps a decision in the planner's log (serialised with the tree).
  void record(Decision decision);

  /// The best correct measured node (S included; ties go to the earlier node); -1 without a root.
  int best() const;
  /// The node's ancestors in the tree, from S down to it (parents only: a re-parameterisation's
  /// parent is its structure's parent).
  std::vector<int> path_to(int id) const;
  /// How the node was derived, from S down to it, through based_on: every rewrite and
  /// re-parameterisation that led to it (the prompt's "path" of the best node).
  std::vector<int> lineage(int id) const;

  /// The tree as text for the LLM, at most max_chars bytes: a header with the best node, the best
  /// node's lineage in full, the latest 3 rounds in full, older rounds one line each. When it does
  /// not fit, it degrades in this order: older rounds are dropped (oldest first), the latest rounds
  /// shrink to one line per node, the lineage shrinks to one line per node, the older and then the
  /// latest sections go, and last the text is cut at a line end (mid-line only when not even the
  /// first line fits; never inside a UTF-8 character). Deterministic.
  std::string summary_for_prompt(std::size_t max_chars) const;

  nlohmann::json to_json() const;
  /// Rebuilds a planner from to_json()'s output. Throws std::invalid_argument naming the problem
  /// when the JSON is malformed (missing or mistyped field, unknown enum name, ids out of order,
  /// references to unknown nodes).
  static Planner from_json(const nlohmann::json& json);

  const Budget& budget() const { return budget_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Decision>& decisions() const { return decisions_; }
  /// nullptr for an unknown id.
  const Node* node(int id) const;

 private:
  Budget budget_;
  std::vector<Node> nodes_;
  std::vector<Decision> decisions_;
};

}  // namespace ktune::gen
