// --slice K/N (bench/plan.hpp): every group in exactly one slice, each (op, element size) whole (fp16 and bf16
// together: bf16's screens are guided by fp16's), the slices' expected costs balanced, and the same split
// whoever computes it.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "plan.hpp"

namespace ktune::bench {
namespace {

Spec row_spec(const std::string& op) {
  return parse_spec_text(R"({"op": ")" + op + R"(", "dims": {"tokens": [1, 64, 4096], "d": [4096, 8192]},
    "tokens_dim": "tokens", "width_dim": "d", "dtypes": ["fp32", "fp16", "bf16"],
    "tolerance": {"fp32": {"rel_l2": 1e-5, "atol": 1e-5, "rtol": 1e-5}, "fp16": {"rel_l2": 1e-3, "atol": 1e-3, "rtol": 1e-3},
                  "bf16": {"rel_l2": 1e-2, "atol": 1e-2, "rtol": 1e-2}},
    "tensors": [{"name": "x", "shape": ["tokens", "d"], "dtype": "element", "access": "read"},
                {"name": "y", "shape": ["tokens", "d"], "dtype": "element", "access": "write"}]})",
                         op);
}

/// Four ops x three dtypes x six shapes; `variants` per op sets how much each op costs.
struct Plan {
  std::map<std::string, Spec> specs;
  std::vector<ShapeGroup> groups;
  explicit Plan(const std::map<std::string, int>& variants) {
    for (const auto& [op, n] : variants) {
      specs.emplace(op, row_spec(op));
      for (DType dtype : specs.at(op).dtypes)
        for (const Shape& shape : specs.at(op).shapes()) {
          ShapeGroup g{op, dtype, shape, {}, {}, {}};
          for (int v = 0; v < n; ++v) g.items.push_back({op, dtype, shape, "v" + std::to_string(v), op + "/v" + std::to_string(v), {}});
          groups.push_back(std::move(g));
        }
    }
  }
};

std::string unit(const ShapeGroup& g) { return g.op + "/" + std::to_string(size_of(g.dtype)) + " bytes"; }

TEST(BenchSlice, EveryGroupInExactlyOneSliceAndEveryUnitWhole) {
  const Plan p({{"a", 40}, {"b", 10}, {"c", 25}, {"d", 5}});
  for (int n : {1, 2, 3, 5, 16}) {
    std::map<std::string, int> slice_of_unit;
    std::size_t total = 0;
    for (int k = 0; k < n; ++k) {
      const std::vector<ShapeGroup> mine = slice_groups(p.groups, p.specs, k, n);
      total += mine.size();
      for (const ShapeGroup& g : mine) {
        const auto [it, fresh] = slice_of_unit.emplace(unit(g), k);
        EXPECT_EQ(it->second, k) << unit(g) << " is split between slices " << it->second << " and " << k;
      }
    }
    EXPECT_EQ(total, p.groups.size()) << n << " slices";
    EXPECT_EQ(slice_of_unit.size(), 8u);  // four ops, fp32 and the 16-bit pair
  }
}

TEST(BenchSlice, KeepsThePlanOrderWithinASlice) {
  const Plan p({{"a", 4}, {"b", 4}});
  const std::vector<ShapeGroup> mine = slice_groups(p.groups, p.specs, 0, 2);
  std::size_t at = 0;
  for (const ShapeGroup& g : mine) {
    while (at < p.groups.size() && !(unit(p.groups[at]) == unit(g) && p.groups[at].shape.key() == g.shape.key())) ++at;
    ASSERT_LT(at, p.groups.size()) << "out of plan order: " << unit(g) << " " << g.shape.key();
  }
}

TEST(BenchSlice, BalancesTheExpectedCost) {
  const Plan p({{"a", 40}, {"b", 10}, {"c", 25}, {"d", 5}});
  for (int n : {2, 3, 4}) {
    double most = 0, least = 1e300, all = 0, largest_unit = 0;
    std::map<std::string, double> per_unit;
    for (const ShapeGroup& g : p.groups) per_unit[unit(g)] += expected_cost_s(g, p.specs.at(g.op));
    for (const auto& [u, c] : per_unit) largest_unit = std::max(largest_unit, c);
    for (int k = 0; k < n; ++k) {
      double cost = 0;
      for (const ShapeGroup& g : slice_groups(p.groups, p.specs, k, n)) cost += expected_cost_s(g, p.specs.at(g.op));
      most = std::max(most, cost);
      least = std::min(least, cost);
      all += cost;
    }
    // Longest first onto the least loaded: no slice exceeds the mean by more than one unit.
    EXPECT_LE(most, all / n + largest_unit) << n;
    EXPECT_GT(least, 0) << n;
  }
  // Larger shapes and more variants cost more.
  const ShapeGroup& small = p.groups.front();
  ShapeGroup big = small;
  big.shape.dims = {{"tokens", 4096}, {"d", 8192}};
  EXPECT_GT(expected_cost_s(big, p.specs.at("a")), expected_cost_s(small, p.specs.at("a")));
}

TEST(BenchSlice, MoreSlicesThanUnitsLeavesSomeEmpty) {
  const Plan p({{"a", 4}});
  std::size_t empty = 0, total = 0;
  for (int k = 0; k < 8; ++k) {
    const auto mine = slice_groups(p.groups, p.specs, k, 8);
    empty += mine.empty();
    total += mine.size();
  }
  EXPECT_EQ(empty, 6u);  // two units (one op: fp32, and fp16 with bf16) on eight slices
  EXPECT_EQ(total, p.groups.size());
}

}  // namespace
}  // namespace ktune::bench
