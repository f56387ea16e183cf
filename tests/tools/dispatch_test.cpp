// Dispatch rules for shapes a table never measured: each rule's choice, its cells, and how they are judged.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ktune/dispatch.hpp"
#include "ktune/report.hpp"
#include "ktune/tables.hpp"

namespace {

using namespace ktune::tool;

/// A shape where variant "a" takes a_us and "b" takes b_us (S twice the slower); absent times are not measured.
ShapeResult shape(std::int64_t tokens, std::int64_t width, std::optional<double> a_us, std::optional<double> b_us) {
  ShapeResult s;
  s.key = fmt::format("tokens={},d={}", tokens, width);
  s.dims = {{"tokens", tokens}, {"d", width}};
  s.tokens = tokens;
  s.width = width;
  s.band_source = "sweep";
  auto add = [&](const char* id, double us) {
    VariantResult v;
    v.id = id;
    v.sweep = Measure{us, 0.001, 10, {}};
    s.variants.push_back(v);
  };
  add("original", 2 * std::max(a_us.value_or(0), b_us.value_or(0)));
  if (a_us) add("a", *a_us);
  if (b_us) add("b", *b_us);
  s.winner = s.fastest = !b_us || (a_us && *a_us <= *b_us) ? "a" : "b";
  s.within_band = {s.winner};
  return s;
}

/// "a" wins up to 4 tokens, "b" from 16 on, at both widths; each is 30% slower where the other wins.
DTypeResult two_regimes() {
  DTypeResult d;
  d.dtype = "fp16";
  d.general.id = "b";
  for (std::int64_t w : {1024, 2048})
    for (std::int64_t t : {1, 4, 16, 64}) d.shapes.push_back(t <= 4 ? shape(t, w, 1.0, 1.3) : shape(t, w, 1.3, 1.0));
  return d;
}

std::vector<const ShapeResult*> without(const DTypeResult& d, std::int64_t tokens, std::int64_t width) {
  std::vector<const ShapeResult*> out;
  for (const ShapeResult& s : d.shapes)
    if (s.tokens != tokens || s.width != width) out.push_back(&s);
  return out;
}

TEST(Dispatch, RegretIsAgainstTheFastest) {
  const ShapeResult s = shape(1, 1024, 1.0, 1.25);
  EXPECT_DOUBLE_EQ(*regret_at(s, "a"), 0.0);
  EXPECT_DOUBLE_EQ(*regret_at(s, "b"), 0.25);
  EXPECT_FALSE(regret_at(shape(1, 1024, 1.0, std::nullopt), "b")) << "not measured there";
}

TEST(Dispatch, EachRuleAtAHole) {
  const DTypeResult d = two_regimes();
  const auto train = without(d, 4, 1024);  // the cell (4, 1024) is unmeasured
  EXPECT_EQ(Dispatch(DispatchRule::bucket, train, "b").choose(4, 1024), "b") << "an unmeasured cell: the general one";
  EXPECT_EQ(Dispatch(DispatchRule::nearest, train, "b").choose(4, 1024), "a") << "(4, 2048) is nearest";
  EXPECT_EQ(Dispatch(DispatchRule::tree, train, "b").choose(4, 1024), "a");
  EXPECT_EQ(Dispatch(DispatchRule::general, train, "b").choose(4, 1024), "b");
}

TEST(Dispatch, TreeSplitsWhereTheRegimeChanges) {
  const DTypeResult d = two_regimes();
  const Dispatch tree(DispatchRule::tree, training_shapes(d), "b");
  // One split on tokens, at the geometric midpoint of 4 and 16; the width never mattered.
  EXPECT_EQ(tree.choose(8, 1024), "a");
  EXPECT_EQ(tree.choose(9, 1024), "b");
  EXPECT_EQ(tree.choose(3, 100000), "a");
  EXPECT_EQ(tree.choose(5000, 1), "b");
  EXPECT_EQ(tree.token_bounds(), (std::vector<std::int64_t>{2, 8, 32}));
  EXPECT_EQ(tree.width_bounds(), (std::vector<std::int64_t>{1448}));  // sqrt(1024 * 2048)
}

TEST(Dispatch, TreeLeavesAreTheLeastSummedRegretNotEveryShapesWinner) {
  // "c" is 0.1% slower than the winner everywhere; "a" and "b" each win half and are 20% off elsewhere:
  // splitting saves 0.1% per shape, under tree_min_gain, so one leaf holds c.
  DTypeResult d;
  d.general.id = "c";
  for (std::int64_t t : {1, 2, 4, 8}) {
    ShapeResult s = shape(t, 1024, t <= 2 ? 1.0 : 1.2, t <= 2 ? 1.2 : 1.0);
    VariantResult c;
    c.id = "c";
    c.sweep = Measure{1.001, 0.001, 10, {}};
    s.variants.push_back(c);
    s.within_band.push_back("c");
    d.shapes.push_back(s);
  }
  const Dispatch tree(DispatchRule::tree, training_shapes(d), "c");
  for (std::int64_t t : {1, 2, 4, 8}) EXPECT_EQ(tree.choose(t, 1024), "c") << t;
  EXPECT_TRUE(tree.token_bounds() == (std::vector<std::int64_t>{1, 2, 5}));  // the grid's cells only
}

TEST(Dispatch, ComparisonPrefersTheRuleThatGeneralises) {
  Selection sel;
  sel.op = "toyop";
  sel.gpu = "NVIDIA H200";
  sel.gpu_slug = "nvidia-h200";
  sel.dtypes = {two_regimes()};
  // A held-out token count between the regimes' grid lines.
  sel.dtypes[0].shapes.push_back(shape(2, 1024, 1.0, 1.3));
  sel.dtypes[0].shapes.back().held_out = true;
  const DispatchComparison cmp = compare_dispatch({&sel});
  auto p95 = [&](DispatchRule r, const char* check) { return *cmp.pooled.at({r, check}).p95(); };
  EXPECT_GT(p95(DispatchRule::bucket, "shape"), 0.25) << "a hole takes the general b, 30% off where a wins";
  EXPECT_DOUBLE_EQ(p95(DispatchRule::nearest, "shape"), 0.0);
  EXPECT_DOUBLE_EQ(p95(DispatchRule::tree, "shape"), 0.0);
  EXPECT_NEAR(p95(DispatchRule::general, "shape"), 0.3, 1e-12);
  EXPECT_EQ(cmp.best(), DispatchRule::nearest) << "ties go to the simpler rule";
  EXPECT_DOUBLE_EQ(*cmp.pooled.at({DispatchRule::tree, "held_out"}).max(), 0.0);
  EXPECT_EQ(cmp.pooled.at({DispatchRule::tree, "held_out"}).regrets.size(), 1u);
  // Every check is reported per (op, dtype, rule) as well.
  EXPECT_EQ(cmp.rows.size(), 5u * 4u);  // shape, line, held_out and fit
}

TEST(Dispatch, TableRowsFollowTheRule) {
  LoadedResults in;
  in.label = "nvidia-h200/toyop.json";
  in.selection.op = "toyop";
  in.selection.gpu = "NVIDIA H200";
  in.selection.gpu_slug = "nvidia-h200";
  in.selection.arch = 90;
  in.selection.tokens_dim = "tokens";
  in.selection.width_dim = "d";
  in.selection.dtypes = {two_regimes()};
  // Take a shape out of selection: the bucket rule's table sends its cell to the general b, the tree's to a.
  for (ShapeResult& s : in.selection.dtypes[0].shapes) s.held_out = s.tokens == 4 && s.width == 1024;
  auto row_for = [](const std::vector<TableRow>& rows, std::int64_t tokens, std::int64_t width) {
    for (const TableRow& r : rows)
      if (width >= r.width_min && width <= r.width_max && tokens <= r.tokens_max) return r.id;
    return std::string();
  };
  const auto bucket = table_rows({in}, {{"nvidia-h200", DispatchRule::bucket}});
  const auto tree = table_rows({in}, {{"nvidia-h200", DispatchRule::tree}});
  EXPECT_EQ(row_for(bucket, 4, 1024), "b");
  EXPECT_EQ(row_for(tree, 4, 1024), "a");
  EXPECT_EQ(row_for(tree, 16, 1024), "b");
  EXPECT_EQ(tree.size(), 2u) << "one column, two token buckets, the widths merged";
}

/// Adds variant `id` at `us` (a screen) to `s`, within its noise band when `in_band`.
void add_variant(ShapeResult& s, const char* id, double us, bool in_band) {
  VariantResult v;
  v.id = id;
  v.sweep = Measure{us, 0.001, 10, {}};
  s.variants.push_back(v);
  if (in_band) s.within_band.push_back(id);
}

/// At width 1024 the cluster-split story of the norms: "a" wins at 4 tokens and is 40% slower at 16, "b" the
/// reverse; "c" is 3% off the winner at both, and within the noise band of neither.
DTypeResult regime_edge() {
  DTypeResult d;
  d.dtype = "fp16";
  d.general.id = "b";
  for (std::int64_t t : {1, 4, 16, 64}) {
    ShapeResult s = t <= 4 ? shape(t, 1024, 1.0, 1.4) : shape(t, 1024, 1.4, 1.0);
    add_variant(s, "c", 1.03, false);
    d.shapes.push_back(s);
  }
  return d;
}

TEST(Dispatch, BracketTakesTheVariantGoodAtBothEndsOfAGap) {
  const DTypeResult d = regime_edge();
  // "c" is no shape's winner nor in any band: the bracket rule never considers it (its candidates are what the
  // shapes ranked near the top), so between 4 and 16 "a" and "b" tie on the worst regret (40%) and their sums.
  const Dispatch plain(DispatchRule::bracket, training_shapes(d), "b");
  EXPECT_EQ(plain.choose(8, 1024), "a") << "a tie keeps the smaller id";

  // Once 16's band holds "c" (3% off at 4, within 16's band), c is the least worst regret in the gap.
  DTypeResult banded = d;
  for (ShapeResult& s : banded.shapes)
    if (s.tokens == 16) s.within_band.push_back("c");
  const Dispatch bracket(DispatchRule::bracket, training_shapes(banded), "b");
  const Dispatch nearest(DispatchRule::nearest, training_shapes(banded), "b");
  for (std::int64_t t : {5, 8, 9, 15}) {
    EXPECT_EQ(bracket.choose(t, 1024), "c") << t;
    EXPECT_EQ(nearest.choose(t, 1024), t <= 8 ? "a" : "b") << t << ": nearest cuts the gap at its midpoint";
  }
  EXPECT_EQ(bracket.choose(4, 1024), "a") << "a measured shape keeps its winner";
  EXPECT_EQ(bracket.choose(16, 1024), "b");
  EXPECT_EQ(bracket.choose(2, 1024), "a") << "between two shapes a wins, a is the least worst";
  EXPECT_EQ(bracket.choose(32, 1024), "b");
  EXPECT_EQ(bracket.choose(100000, 1024), "b") << "beyond the grid: the edge's winner";
  EXPECT_EQ(bracket.choose(8, 4000), "c") << "a width past the last measured one: the nearest width line";
  // The cells: each measured token count, the gaps, and each gap's geometric midpoint; the widths as nearest's.
  EXPECT_EQ(bracket.token_bounds(), (std::vector<std::int64_t>{1, 2, 3, 4, 8, 15, 16, 32, 63}));
  EXPECT_TRUE(bracket.width_bounds().empty());

  // The table: the gap between 4 and 16 is one row of c, the measured shapes keep their winners.
  LoadedResults in;
  in.label = "nvidia-h200/toyop.json";
  in.selection.op = "toyop";
  in.selection.gpu = "NVIDIA H200";
  in.selection.gpu_slug = "nvidia-h200";
  in.selection.arch = 90;
  in.selection.tokens_dim = "tokens";
  in.selection.width_dim = "d";
  in.selection.dtypes = {banded};
  const auto rows = table_rows({in}, {{"nvidia-h200", DispatchRule::bracket}});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(std::make_pair(rows[0].id, rows[0].tokens_max), std::make_pair(std::string("a"), std::int64_t{4}));
  EXPECT_EQ(std::make_pair(rows[1].id, rows[1].tokens_max), std::make_pair(std::string("c"), std::int64_t{15}));
  EXPECT_EQ(rows[2].id, "b");
}

TEST(Dispatch, BracketWithNoVariantTimedAtBothEndsCutsTheGapAtItsMidpoint) {
  DTypeResult d;
  d.general.id = "b";
  d.shapes = {shape(4, 1024, 1.0, std::nullopt), shape(16, 1024, std::nullopt, 1.0)};
  const Dispatch bracket(DispatchRule::bracket, training_shapes(d), "b");
  EXPECT_EQ(bracket.choose(8, 1024), "a");  // 8 = sqrt(4 * 16): the nearer end, or a tie, keeps the lower one
  EXPECT_EQ(bracket.choose(9, 1024), "b");
  EXPECT_EQ(bracket.token_bounds(), (std::vector<std::int64_t>{3, 4, 8, 15}));
}

TEST(Dispatch, BracketReadsTheNearestWidthLineOnly) {
  // Width 1024: a wins at 4, b at 16 (c 3% off at both, in 16's band). Width 4096: b everywhere, c nowhere timed.
  DTypeResult d = regime_edge();
  for (ShapeResult& s : d.shapes)
    if (s.tokens == 16) s.within_band.push_back("c");
  for (std::int64_t t : {4, 16}) d.shapes.push_back(shape(t, 4096, 1.4, 1.0));
  const Dispatch bracket(DispatchRule::bracket, training_shapes(d), "b");
  EXPECT_EQ(bracket.choose(8, 2048), "c") << "2048 <= sqrt(1024 * 4096): the 1024 line";
  EXPECT_EQ(bracket.choose(8, 2049), "b") << "the 4096 line, where c has no time";
  EXPECT_EQ(bracket.width_bounds(), (std::vector<std::int64_t>{2048}));
}

TEST(Dispatch, TheReportComputesTheComparisonOnceForBothIndexPages) {
  LoadedResults in;
  in.label = "nvidia-h200/toyop.json";
  in.selection.op = "toyop";
  in.selection.gpu = "NVIDIA H200";
  in.selection.gpu_slug = "nvidia-h200";
  in.selection.dtypes = {two_regimes()};
  const DispatchSection section = dispatch_section({&in});
  ASSERT_NE(section.markdown.find("## Dispatch of shapes the tables did not select on"), std::string::npos);
  ASSERT_NE(section.html.find("<h2>Dispatch of shapes the tables did not select on</h2>"), std::string::npos);
  // What the pages compute themselves is what they are handed, and a handed section is used as it is.
  EXPECT_NE(index_markdown("nvidia-h200", {&in}).find(section.markdown), std::string::npos);
  EXPECT_NE(index_html("nvidia-h200", {&in}).find(section.html), std::string::npos);
  const DispatchSection handed{"\nhanded markdown", "<p>handed html</p>"};
  EXPECT_NE(index_markdown("nvidia-h200", {&in}, {}, &handed).find("handed markdown"), std::string::npos);
  EXPECT_EQ(index_markdown("nvidia-h200", {&in}, {}, &handed).find("## Dispatch"), std::string::npos);
  EXPECT_NE(index_html("nvidia-h200", {&in}, {}, &handed).find("<p>handed html</p>"), std::string::npos);
}

TEST(Dispatch, TheHeldOutTableNamesTheShapeSlowestAgainstS) {
  LoadedResults in;
  in.label = "nvidia-h200/toyop.json";
  in.selection.op = "toyop";
  in.selection.gpu = "NVIDIA H200";
  in.selection.gpu_slug = "nvidia-h200";
  DTypeResult d = two_regimes();
  // Held out at 8 tokens, whichever variant the rule answers there: at width 2048 both take 1.5 us and S 1.2 us
  // (1.25x S's time), at width 1024 S is twice the slower one.
  for (std::int64_t w : {1024, 2048}) {
    ShapeResult h = w == 2048 ? shape(8, w, 1.5, 1.5) : shape(8, w, 1.0, 1.3);
    if (w == 2048) h.variants.front().sweep->median_us = 1.2;
    h.held_out = true;
    d.shapes.push_back(h);
  }
  in.selection.dtypes = {d};
  const std::string md = dispatch_section({&in}).markdown;
  EXPECT_NE(md.find("| 1.250x S's time (tokens=8,d=2048) |"), std::string::npos) << md;
}

}  // namespace
