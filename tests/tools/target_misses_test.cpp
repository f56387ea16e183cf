// The missed targets of an op page (tools/ktune/target_misses.hpp): which shapes miss which target, the
// reason (the winner's profile where there is one, else the measurements) and the next structure; and the
// profile plan that includes every missed shape.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include <ktune/diagnose.hpp>

#include "ktune/profile_section.hpp"
#include "ktune/report.hpp"
#include "ktune/target_misses.hpp"

namespace {

using namespace ktune::tool;

VariantResult timed(const std::string& id, double us, double pct_copy) {
  VariantResult v;
  v.id = id;
  Measure m;
  m.median_us = us;
  m.samples = 10;
  m.counters["pct_copy"] = pct_copy;
  v.sweep = m;
  return v;
}

/// A shape with S and its winner "w" timed, and a same-size copy.
ShapeResult shape(std::int64_t tokens, std::int64_t bytes, double s_us, double w_us, double pct_copy, double copy_us) {
  ShapeResult s;
  s.key = fmt::format("tokens={},d=4096", tokens);
  s.tokens = tokens;
  s.width = 4096;
  s.bytes = bytes;
  s.copy_same_size_us = copy_us;
  s.variants = {timed("original", s_us, 0), timed("w", w_us, pct_copy)};
  s.winner = "w";
  s.band_source = "sweep";
  return s;
}

Selection selection(std::vector<ShapeResult> shapes) {
  Selection s;
  s.op = "rmsnorm";
  s.gpu = "NVIDIA H200";
  s.gpu_slug = "nvidia-h200";
  s.references["empty_kernel"].time_us = 1.0;
  DTypeResult d;
  d.dtype = "bf16";
  d.shapes = std::move(shapes);
  s.dtypes.push_back(std::move(d));
  return s;
}

std::vector<std::string> shapes_of(const std::vector<TargetMiss>& ms) {
  std::vector<std::string> out;
  for (const TargetMiss& m : ms) out.push_back(m.dtype + " " + m.shape + ": " + m.target);
  return out;
}

TEST(TargetMisses, EachTargetIsCheckedWhereItApplies) {
  const Selection s = selection({
      shape(16, 1'000'000, 4.0, 2.0, 10, 1.9),             // small, 1.05x the copy: met
      shape(8, 500'000, 4.0, 3.0, 5, 2.0),                 // small, 1.5x the copy: missed
      shape(4096, 200'000'000, 60.0, 50.0, 96, 49),        // large at 96%: met
      shape(1024, 100'000'000, 40.0, 40.9, 90, 24.0),      // large at 90%, and 2.2% slower than S: both missed
  });
  const std::vector<TargetMiss> ms = target_misses(s);
  EXPECT_EQ(shapes_of(ms), (std::vector<std::string>{
                               "bf16 tokens=8,d=4096: <= 1.15x the same-size copy (tokens <= 16)",
                               "bf16 tokens=1024,d=4096: no slower than S by more than 2%",
                               "bf16 tokens=1024,d=4096: >= 95% of the copy ceiling (shapes >= 64 MB)",
                           }));
  EXPECT_EQ(ms[0].measured, "1.50x (3.00 us against the copy's 2.00 us)");
  EXPECT_NE(ms[1].next.find("S's own launch configuration"), std::string::npos) << ms[1].next;
  for (const TargetMiss& m : ms) {
    EXPECT_FALSE(m.profiled);
    EXPECT_FALSE(m.next.empty()) << m.shape;
  }
}

TEST(TargetMisses, ALargeShapeWhereEvenACopyFallsShortIsLimitedByItsSize) {
  // 80% of the ceiling, at 96% of a same-size copy (which itself reaches 83%): the size sets the limit.
  const std::vector<TargetMiss> ms = target_misses(selection({shape(512, 80'000'000, 40.0, 25.0, 80, 24.0)}));
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].measured, "80.0% (a copy of the same bytes: 83.3%)");
  EXPECT_NE(ms[0].reason.find("the size, not the kernel"), std::string::npos) << ms[0].reason;
}

TEST(TargetMisses, TheReasonComesFromTheWinnersProfileAtThatShape) {
  Selection s = selection({shape(8, 500'000, 4.0, 3.0, 5, 2.0)});
  s.profile = {{"entries",
                {{{"dtype", "bf16"}, {"shape", "tokens=8,d=4096"}, {"variant", "w"}, {"role", "winner"},
                  {"findings", {{{"rule", "launch_bound_grid"}, {"message", "launch-bound: 8 blocks for 132 SMs"}}}}}}}};
  const std::vector<TargetMiss> ms = target_misses(s);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_TRUE(ms[0].profiled);
  EXPECT_EQ(ms[0].reason, "launch-bound: 8 blocks for 132 SMs");
  EXPECT_EQ(ms[0].next, ktune::profile::next_structure("launch_bound_grid"));
}

TEST(TargetMisses, ADtypeBelowTheGeometricMeanOverSIsNamedOnce) {
  const std::vector<TargetMiss> ms = target_misses(selection({shape(4096, 200'000'000, 50.0, 49.0, 96, 48),
                                                              shape(2048, 100'000'000, 25.0, 24.5, 96, 24)}));
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].shape, "all shapes");
  EXPECT_EQ(ms[0].measured, "1.02x");
  EXPECT_NE(ms[0].reason.find("at 2 of 2 shapes"), std::string::npos) << ms[0].reason;
}

TEST(TargetMisses, TheOpPageListsThemAndTheProfilePlanProfilesThem) {
  const Selection s = selection({shape(8, 500'000, 4.0, 3.0, 5, 2.0), shape(4096, 200'000'000, 60.0, 50.0, 96, 49)});
  const std::string md = targets_markdown(s);
  EXPECT_NE(md.find("| bf16 | tokens=8,d=4096 | <= 1.15x the same-size copy (tokens <= 16) | 1.50x"), std::string::npos) << md;
  EXPECT_NE(targets_html(s).find("<td class=\"l\">tokens=8,d=4096</td>"), std::string::npos);
  EXPECT_NE(targets_markdown(selection({shape(4096, 200'000'000, 60.0, 50.0, 96, 49)})).find("Every target is met"),
            std::string::npos);
  // tokens=8 is neither T = 1 nor T = 16 nor large: in the plan only because it misses a target.
  LoadedResults r;
  r.selection = s;
  const auto plan = profile_plan({&r});
  bool planned = false;
  for (const auto& c : plan["calls"]) planned = planned || c["shape"] == "tokens=8,d=4096";
  EXPECT_TRUE(planned) << plan.dump();
}

}  // namespace
