// tools/ktune/dispatch.cpp: dispatch rules for unseen shapes and their comparison (dispatch.hpp).
#include "dispatch.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "stability.hpp"  // nearest_rank
#include "tables.hpp"     // bucket_upper_bounds: the cells' bounds are the tables' geometric midpoints

namespace ktune::tool {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// `id`'s time at `s` and the fastest variant's at the same level, as the user's regret compares them
/// (regret.hpp): round medians when `id` was a finalist, else screen medians.
std::optional<std::pair<double, double>> level_times(const ShapeResult& s, const std::string& id) {
  const VariantResult* v = s.find(id);
  if (!v || v->verdict != Verdict::ok || (!v->retest && !v->sweep)) return std::nullopt;
  const bool rounds = v->retest.has_value();
  auto at = [&](const VariantResult& x) -> const std::optional<Measure>& { return rounds ? x.retest : x.sweep; };
  double best = at(*v)->median_us;
  for (const VariantResult& x : s.variants)
    if (x.id != "original" && x.verdict == Verdict::ok && at(x)) best = std::min(best, at(x)->median_us);
  return std::make_pair(at(*v)->median_us, best);
}

std::vector<std::int64_t> distinct(const std::vector<const ShapeResult*>& shapes, bool tokens) {
  std::set<std::int64_t> v;
  for (const ShapeResult* s : shapes) v.insert(tokens ? s->tokens : s->width);
  return {v.begin(), v.end()};
}

/// The bounds of cells around `values` (geometric midpoints), without the open end.
std::vector<std::int64_t> cell_bounds(const std::vector<std::int64_t>& values) {
  std::vector<std::int64_t> b = bucket_upper_bounds(values);
  if (!b.empty()) b.pop_back();
  return b;
}

double log2d(std::int64_t v) { return std::log2(static_cast<double>(v)); }

}  // namespace

const char* name(DispatchRule r) {
  switch (r) {
    case DispatchRule::bucket: return "bucket";
    case DispatchRule::nearest: return "nearest";
    case DispatchRule::tree: return "tree";
    case DispatchRule::bracket: return "bracket";
    case DispatchRule::general: return "general";
  }
  return "?";
}

std::optional<double> regret_at(const ShapeResult& s, const std::string& id) {
  const auto t = level_times(s, id);
  if (!t) return std::nullopt;
  return std::max(0.0, t->first / t->second - 1.0);
}

std::vector<const ShapeResult*> training_shapes(const DTypeResult& d) {
  std::vector<const ShapeResult*> out;
  for (const ShapeResult& s : d.shapes)
    if (!s.held_out && !s.winner.empty()) out.push_back(&s);
  return out;
}

// ---- the tree --------------------------------------------------------------------------------------

struct Dispatch::Node {
  std::string id;      ///< a leaf's variant ("" for an inner node)
  int axis = 0;        ///< 0: tokens, 1: width
  std::int64_t bound = 0;  ///< left when the value <= bound
  std::unique_ptr<Node> left, right;
};

namespace {

/// Per training shape, every candidate variant's log(t / t_fastest) (inf where it has no time). The candidates
/// are the variants some shape chose or found within its noise band, and the general configuration: a leaf
/// holds one of the variants its shapes measured best, never one no shape ranked near the top.
struct LogRegrets {
  std::vector<std::string> ids;
  std::vector<std::vector<double>> at;  // [shape][variant]

  LogRegrets(const std::vector<const ShapeResult*>& shapes, const std::string& general) {
    std::set<std::string> all;
    if (!general.empty()) all.insert(general);
    for (const ShapeResult* s : shapes) {
      all.insert(s->winner);
      all.insert(s->within_band.begin(), s->within_band.end());
    }
    all.erase("original");
    ids.assign(all.begin(), all.end());
    for (const ShapeResult* s : shapes) {
      std::vector<double> row(ids.size(), inf);
      for (std::size_t k = 0; k < ids.size(); ++k)
        if (auto t = level_times(*s, ids[k])) row[k] = std::log(t->first / t->second);
      at.push_back(std::move(row));
    }
  }
};

struct Leaf {
  double cost = inf;
  std::size_t variant = 0;
};

/// The best single variant for shapes `members` (indices into lr.at): least summed log-regret; ties keep the
/// general configuration, then the smaller id.
Leaf best_leaf(const LogRegrets& lr, const std::vector<std::size_t>& members, const std::string& general) {
  Leaf best;
  for (std::size_t k = 0; k < lr.ids.size(); ++k) {
    double sum = 0;
    for (std::size_t m : members)
      if ((sum += lr.at[m][k]) == inf) break;
    const bool better = sum < best.cost - 1e-12 ||
                        (std::isfinite(sum) && std::fabs(sum - best.cost) <= 1e-12 && lr.ids[k] == general);
    if (better) best = {sum, k};
  }
  return best;
}

std::unique_ptr<Dispatch::Node> grow(const LogRegrets& lr, const std::vector<const ShapeResult*>& shapes,
                                     const std::vector<std::size_t>& members, const std::string& general) {
  auto node = std::make_unique<Dispatch::Node>();
  const Leaf here = best_leaf(lr, members, general);
  if (members.size() == 1) {  // one shape: its selected winner, as the table before would have it
    node->id = shapes[members[0]]->winner;
    return node;
  }
  struct Split {
    int axis = -1;
    std::int64_t bound = 0;
    double cost = inf;
    int unmeasured = 3;  // children without a variant measured at all their shapes
  } best;
  for (int axis = 0; axis < 2; ++axis) {
    auto value = [&](std::size_t m) { return axis == 0 ? shapes[m]->tokens : shapes[m]->width; };
    std::set<std::int64_t> values;
    for (std::size_t m : members) values.insert(value(m));
    const std::vector<std::int64_t> sorted(values.begin(), values.end());
    for (std::size_t i = 0; i + 1 < sorted.size(); ++i) {
      const std::int64_t bound = bucket_upper_bounds({sorted[i], sorted[i + 1]})[0];
      std::vector<std::size_t> l, r;
      for (std::size_t m : members) (value(m) <= bound ? l : r).push_back(m);
      const Leaf a = best_leaf(lr, l, general), b = best_leaf(lr, r, general);
      const int unmeasured = !std::isfinite(a.cost) + !std::isfinite(b.cost);
      const double cost = (std::isfinite(a.cost) ? a.cost : 0) + (std::isfinite(b.cost) ? b.cost : 0);
      if (unmeasured < best.unmeasured || (unmeasured == best.unmeasured && cost < best.cost - 1e-12))
        best = {axis, bound, cost, unmeasured};
    }
  }
  const bool worth = !std::isfinite(here.cost) ||
                     (best.unmeasured == 0 && here.cost - best.cost > tree_min_gain * static_cast<double>(members.size()));
  if (best.axis < 0 || !worth) {
    node->id = std::isfinite(here.cost) ? lr.ids[here.variant] : general;
    return node;
  }
  node->axis = best.axis;
  node->bound = best.bound;
  std::vector<std::size_t> l, r;
  for (std::size_t m : members) ((best.axis == 0 ? shapes[m]->tokens : shapes[m]->width) <= best.bound ? l : r).push_back(m);
  node->left = grow(lr, shapes, l, general);
  node->right = grow(lr, shapes, r, general);
  return node;
}

void collect_bounds(const Dispatch::Node* n, int axis, std::set<std::int64_t>& out) {
  if (!n || !n->id.empty()) return;
  if (n->axis == axis) out.insert(n->bound);
  collect_bounds(n->left.get(), axis, out);
  collect_bounds(n->right.get(), axis, out);
}

}  // namespace

Dispatch::Dispatch(DispatchRule rule, std::vector<const ShapeResult*> train, std::string general)
    : rule_(rule), train_(std::move(train)), general_(std::move(general)) {
  tokens_ = distinct(train_, true);
  widths_ = distinct(train_, false);
  if (rule_ == DispatchRule::tree && !train_.empty()) {
    const LogRegrets lr(train_, general_);
    std::vector<std::size_t> all(train_.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    tree_ = grow(lr, train_, all, general_);
  }
  if (rule_ == DispatchRule::bracket)
    for (const ShapeResult* s : train_) lines_[s->width].emplace(s->tokens, s);
}
Dispatch::~Dispatch() = default;
Dispatch::Dispatch(Dispatch&&) noexcept = default;

std::string Dispatch::choose(std::int64_t tokens, std::int64_t width) const {
  if (train_.empty() || rule_ == DispatchRule::general) return general_;
  switch (rule_) {
    case DispatchRule::bucket: {
      // The cell of (tokens, width) on the measured grid; an unmeasured cell takes the general configuration.
      const auto tb = bucket_upper_bounds(tokens_), wb = bucket_upper_bounds(widths_);
      const std::size_t ti = static_cast<std::size_t>(std::lower_bound(tb.begin(), tb.end(), tokens) - tb.begin());
      const std::size_t wi = static_cast<std::size_t>(std::lower_bound(wb.begin(), wb.end(), width) - wb.begin());
      for (const ShapeResult* s : train_)
        if (s->tokens == tokens_[ti] && s->width == widths_[wi]) return s->winner;
      return general_;
    }
    case DispatchRule::nearest: {
      const ShapeResult* best = nullptr;
      double best_d = inf;
      for (const ShapeResult* s : train_) {  // train_ is in (width, tokens) order: ties go to the narrower, fewer
        const double dt = log2d(tokens) - log2d(s->tokens), dw = log2d(width) - log2d(s->width);
        if (dt * dt + dw * dw < best_d - 1e-12) best_d = dt * dt + dw * dw, best = s;
      }
      return best->winner;
    }
    case DispatchRule::bracket: {
      // The width line: the measured width whose cell (cut at geometric midpoints) holds the call.
      const auto wb = cell_bounds(widths_);
      const auto& line = lines_.at(widths_[static_cast<std::size_t>(std::lower_bound(wb.begin(), wb.end(), width) - wb.begin())]);
      const auto hi = line.lower_bound(tokens);
      if (hi != line.end() && hi->first == tokens) return hi->second->winner;
      if (hi == line.begin()) return hi->second->winner;
      if (hi == line.end()) return std::prev(hi)->second->winner;
      const ShapeResult* below = std::prev(hi)->second;
      const ShapeResult* above = hi->second;
      // The least worst log-regret over the two shapes, then the least sum; ties keep the smaller id.
      const LogRegrets lr({below, above}, general_);
      std::string best;
      double best_worst = inf, best_sum = inf;
      for (std::size_t k = 0; k < lr.ids.size(); ++k) {
        const double worst = std::max(lr.at[0][k], lr.at[1][k]), sum = lr.at[0][k] + lr.at[1][k];
        if (!std::isfinite(worst)) continue;
        if (worst < best_worst - 1e-12 || (std::fabs(worst - best_worst) <= 1e-12 && sum < best_sum - 1e-12))
          best = lr.ids[k], best_worst = worst, best_sum = sum;
      }
      if (!best.empty()) return best;
      // No variant timed at both: the nearer shape's winner (the nearest rule along the line).
      return tokens <= bucket_upper_bounds({below->tokens, above->tokens})[0] ? below->winner : above->winner;
    }
    case DispatchRule::tree: {
      const Node* n = tree_.get();
      while (n->id.empty()) n = ((n->axis == 0 ? tokens : width) <= n->bound ? n->left : n->right).get();
      return n->id;
    }
    case DispatchRule::general: break;
  }
  return general_;
}

std::vector<std::int64_t> Dispatch::token_bounds() const {
  std::set<std::int64_t> b;
  if (rule_ == DispatchRule::bracket) {
    // Per width line: each measured token count alone, the gaps between them, and each gap's geometric midpoint
    // (where a gap with no variant timed at both ends changes from one end's winner to the other's).
    for (const auto& [width, line] : lines_) {
      std::vector<std::int64_t> v;
      for (const auto& [tokens, s] : line) v.push_back(tokens);
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] > 1) b.insert(v[i] - 1);
        if (i + 1 < v.size()) b.insert({v[i], bucket_upper_bounds({v[i], v[i + 1]})[0]});
      }
    }
    return {b.begin(), b.end()};
  }
  for (std::int64_t v : cell_bounds(tokens_)) b.insert(v);
  collect_bounds(tree_.get(), 0, b);
  return {b.begin(), b.end()};
}

std::vector<std::int64_t> Dispatch::width_bounds() const {
  std::set<std::int64_t> b;
  for (std::int64_t v : cell_bounds(widths_)) b.insert(v);
  collect_bounds(tree_.get(), 1, b);
  return {b.begin(), b.end()};
}

// ---- the comparison ----------------------------------------------------------------------------------

std::optional<double> RuleScore::p50() const { return nearest_rank(regrets, 0.50); }
std::optional<double> RuleScore::p95() const { return nearest_rank(regrets, 0.95); }
std::optional<double> RuleScore::max() const { return nearest_rank(regrets, 1.0); }

DispatchRule DispatchComparison::best() const {
  auto key = [&](DispatchRule r) {
    auto get = [&](const char* check, int which) {
      auto it = pooled.find({r, check});
      if (it == pooled.end()) return inf;
      const auto v = which == 0 ? it->second.p95() : it->second.max();
      return v ? *v : inf;
    };
    // A table answers the measured shapes too: their own regrets (check "fit") count beside the left-out ones.
    std::optional<double> p95, max;
    RuleScore both;
    for (const char* check : {"shape", "fit"})
      if (auto it = pooled.find({r, check}); it != pooled.end())
        both.regrets.insert(both.regrets.end(), it->second.regrets.begin(), it->second.regrets.end());
    p95 = both.p95();
    max = both.max();
    return std::make_tuple(p95 ? *p95 : inf, max ? *max : inf, get("line", 0));
  };
  DispatchRule best = DispatchRule::bucket;
  for (DispatchRule r : all_dispatch_rules)
    if (key(r) < key(best)) best = r;
  return best;
}

DispatchComparison compare_dispatch(const std::vector<const Selection*>& selections) {
  DispatchComparison out;
  for (const Selection* sel : selections)
    for (const DTypeResult& d : sel->dtypes) {
      const std::vector<const ShapeResult*> train = training_shapes(d);
      if (train.size() < 2) continue;
      for (DispatchRule rule : all_dispatch_rules) {
        std::map<std::string, RuleScore> scores;
        auto judge = [&](const char* check, const Dispatch& fit, const ShapeResult& s) {
          std::string id = fit.choose(s.tokens, s.width);
          if (id.empty()) id = d.general.id;
          RuleScore& sc = scores[check];
          if (auto r = id.empty() ? std::nullopt : regret_at(s, id)) sc.regrets.push_back(*r);
          else ++sc.unmeasured;
        };
        // Leave one shape out.
        for (std::size_t i = 0; i < train.size(); ++i) {
          std::vector<const ShapeResult*> rest;
          for (std::size_t j = 0; j < train.size(); ++j)
            if (j != i) rest.push_back(train[j]);
          judge("shape", Dispatch(rule, rest, d.general.id), *train[i]);
        }
        // Leave one grid line out: every shape of one token count, or of one width (when others remain).
        for (int axis = 0; axis < 2; ++axis)
          for (std::int64_t v : distinct(train, axis == 0)) {
            std::vector<const ShapeResult*> rest, out_of;
            for (const ShapeResult* s : train) ((axis == 0 ? s->tokens : s->width) == v ? out_of : rest).push_back(s);
            if (rest.empty()) continue;
            const Dispatch fit(rule, rest, d.general.id);
            for (const ShapeResult* s : out_of) judge("line", fit, *s);
          }
        // The held-out shapes, the rule fitted on every selection shape, and those shapes themselves ("fit": what
        // a call of a measured shape gets).
        const Dispatch fit(rule, train, d.general.id);
        for (const ShapeResult& s : d.shapes)
          if (s.held_out) judge("held_out", fit, s);
        for (const ShapeResult* s : train) judge("fit", fit, *s);
        for (auto& [check, sc] : scores) {
          RuleScore& pool = out.pooled[{rule, check}];
          pool.regrets.insert(pool.regrets.end(), sc.regrets.begin(), sc.regrets.end());
          pool.unmeasured += sc.unmeasured;
          out.rows.push_back({sel->op, sel->gpu, d.dtype, rule, check, std::move(sc)});
        }
      }
    }
  return out;
}

}  // namespace ktune::tool
