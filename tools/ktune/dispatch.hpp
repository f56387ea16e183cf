// tools/ktune/dispatch.hpp: how a tuned table answers a shape it never measured (docs/shapes.md).
//
// A rule is fitted on one (GPU, op, dtype)'s selection shapes (their measured winners and every variant's
// time) and chooses a variant for any (tokens, width). Four are compared on data:
//
//   bucket   the table before issue 42: the measured (width, tokens) grid cut at geometric midpoints; a cell
//            with no measurement takes the general configuration
//   nearest  the winner of the measured shape nearest in (log2 tokens, log2 bytes per row)
//   tree     a decision tree over (log2 tokens, log2 width) in the spirit of PetaBricks' input classifiers and
//            ISAAC: each leaf holds the one variant with the least summed log-regret over its shapes; a split
//            must save more than `tree_min_gain` of summed log time per shape it divides
//   bracket  at a measured shape its winner; on the measured width nearest the call in log width (cells cut at
//            geometric midpoints), a call strictly between two measured token counts takes the variant whose worst log-regret
//            over those two shapes is least (of the variants either shape chose or found within its noise band, and
//            the general configuration; it must be timed at both): a call between a regime's last measured token
//            count and the next regime's first gets a variant good at both, not the winner of whichever is nearer.
//            With no variant timed at both, the nearer shape's winner; beyond the measured token counts, the
//            edge's winner. The choice is constant over each gap, so the table's cells stay rectangles.
//   general  the dtype's general configuration everywhere
//
// Each is judged by leaving data out: one shape at a time, one token count or width at a time (a call
// between grid lines), and the spec's held-out shapes; the regret of a choice at a shape is its time there
// over the fastest variant's, minus one. `ktune tables` ships the rule with the least regret (pooled p95, then
// max) over every op of the results, written as the table's rows: the lookup stays a constexpr scan of
// rectangles (include/ktune/tuned.hpp), with no runtime dependency.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "results.hpp"

namespace ktune::tool {

enum class DispatchRule { bucket, nearest, tree, bracket, general };
inline constexpr DispatchRule all_dispatch_rules[] = {DispatchRule::bucket, DispatchRule::nearest, DispatchRule::tree,
                                                      DispatchRule::bracket, DispatchRule::general};
const char* name(DispatchRule r);

/// The least summed log-time a tree split must save per shape it divides (0.002: 0.2% of time on average).
inline constexpr double tree_min_gain = 0.002;

/// t(id) / t(fastest) - 1 at `s`, as the user's regret is taken (regret.hpp): both round medians when `id` was a
/// finalist there, else both screen medians (the fastest correct variant other than S at that level); nullopt
/// when `id` has no time there.
std::optional<double> regret_at(const ShapeResult& s, const std::string& id);

/// A rule fitted on `train` (shapes of one dtype with a winner; pointers stay owned by the caller).
class Dispatch {
 public:
  Dispatch(DispatchRule rule, std::vector<const ShapeResult*> train, std::string general);
  ~Dispatch();
  Dispatch(Dispatch&&) noexcept;

  /// The variant for a call; "" means the general configuration.
  std::string choose(std::int64_t tokens, std::int64_t width) const;
  /// Inclusive upper bounds of the token and width cells the choice is constant in (ascending; the last cell
  /// is open-ended and not listed): the table's rows are these cells.
  std::vector<std::int64_t> token_bounds() const;
  std::vector<std::int64_t> width_bounds() const;
  DispatchRule rule() const { return rule_; }

  struct Node;  ///< of the tree rule

 private:
  DispatchRule rule_;
  std::vector<const ShapeResult*> train_;
  std::string general_;
  std::vector<std::int64_t> tokens_, widths_;  ///< distinct training values, ascending
  std::unique_ptr<Node> tree_;
  /// The bracket rule's width lines: per measured width, its measured shapes by token count.
  std::map<std::int64_t, std::map<std::int64_t, const ShapeResult*>> lines_;
};

/// One rule's regrets under one check ("shape": leave one shape out; "line": leave one token count or width
/// out; "held_out": the spec's held-out shapes, the rule fitted on every selection shape; "fit": the selection
/// shapes themselves, the rule fitted on all of them).
struct RuleScore {
  std::vector<double> regrets;
  int unmeasured = 0;  ///< choices with no time at the shape (not screened there)
  std::optional<double> p50() const, p95() const, max() const;
};

/// The comparison of every rule on a set of results: per (op, dtype, rule, check) and pooled per (rule, check).
struct DispatchComparison {
  struct Row {
    std::string op, gpu, dtype;
    DispatchRule rule;
    std::string check;
    RuleScore score;
  };
  std::vector<Row> rows;
  std::map<std::pair<DispatchRule, std::string>, RuleScore> pooled;
  /// The rule the tables use: the least pooled p95 regret over the "shape" check (leave one shape out) and the
  /// "fit" check (the measured shapes themselves, which a table answers too), then their max, then the p95 of
  /// "line"; chosen on the selection shapes alone, so the held-out shapes stay an independent check. Ties keep
  /// the simpler (earlier) rule.
  DispatchRule best() const;
};

/// Scores every rule on every dtype of every selection in `selections`.
DispatchComparison compare_dispatch(const std::vector<const Selection*>& selections);

/// The selection shapes of `d` a rule trains on: not held out, with a winner.
std::vector<const ShapeResult*> training_shapes(const DTypeResult& d);

}  // namespace ktune::tool
