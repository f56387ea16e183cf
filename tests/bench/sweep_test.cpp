// The sweep's order, resume and cache behaviour with a fake measurer (no GPU), and the plan's filters.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "bench/names.hpp"
#include "bench/plan.hpp"
#include "bench/sweep.hpp"

namespace ktune::bench {
namespace {

namespace fs = std::filesystem;

/// Records what it was asked; fails fatally at the item named `crash_on` (a kernel breaking the context).
class FakeMeasurer : public Measurer {
 public:
  std::vector<std::string> shapes_begun, measured;
  int open_shapes = 0;
  std::string crash_on, prepare_error_for;

  std::string begin_shape(const ShapeGroup& g) override {
    ++open_shapes;
    shapes_begun.push_back(g.op + "/" + g.shape.key());
    return g.shape.key() == prepare_error_for ? "cudaMalloc failed" : "";
  }
  BenchResult measure(const WorkItem& it) override {
    measured.push_back(it.name);
    BenchResult r;
    r.name = it.name;
    r.op = it.op;
    r.id = it.id;
    r.shape = it.shape.key();
    r.median_us = 1.0 + measured.size();
    r.samples = 10;
    if (it.name == crash_on) {
      r.error = "incorrect: an illegal memory access; this broke the CUDA context";
      r.fatal = true;
    }
    return r;
  }
  void end_shape() override { --open_shapes; }
  std::vector<std::string> copies;
  bool copy_fails = false;
  BenchResult measure_copy_same_size(const ShapeGroup& g) override {
    EXPECT_EQ(open_shapes, 0) << "the copy needs none of the group's buffers";
    copies.push_back(g.copy.name);
    BenchResult r;
    r.name = g.copy.name;
    r.op = g.op;
    r.shape = g.shape.key();
    if (copy_fails) r.error = "error: timing the same-size copy: out of memory";
    else r.median_us = 0.25 * static_cast<double>(copies.size());
    r.samples = 10;
    return r;
  }
};

std::vector<ShapeGroup> groups(int shapes, int variants) {
  std::vector<ShapeGroup> out;
  for (int s = 0; s < shapes; ++s) {
    ShapeGroup g;
    g.op = "toy";
    g.dtype = DType::f16;
    g.shape.dims = {{"tokens", 1 << s}};
    for (int v = 0; v < variants; ++v) {
      WorkItem it{g.op, g.dtype, g.shape, "v_" + std::to_string(v), "", ""};
      it.name = "toy/fp16/" + g.shape.key() + "/" + it.id;
      it.key = "key:" + it.name;
      g.items.push_back(it);
    }
    out.push_back(g);
  }
  return out;
}

class BenchSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    path = (fs::temp_directory_path() /
            ("ktune_sweep_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".jsonl"))
               .string();
    fs::remove(path);
  }
  void TearDown() override { fs::remove(path); }
  std::string path;
};

TEST_F(BenchSweep, MeasuresEverythingOnceThenResumesFromTheCache) {
  const auto work = groups(3, 4);
  {
    ResultCache cache(path);
    ASSERT_EQ(cache.load(), "");
    FakeMeasurer m;
    const SweepOutcome o = run_sweep(work, cache, m, nullptr);
    EXPECT_FALSE(o.aborted);
    EXPECT_EQ(o.measured, 12u);
    EXPECT_EQ(o.from_cache, 0u);
    EXPECT_EQ(m.shapes_begun.size(), 3u);
    EXPECT_EQ(m.open_shapes, 0);
    ASSERT_EQ(o.results.size(), 12u);
    EXPECT_EQ(o.results[5].name, "toy/fp16/tokens=2/v_1");  // work order kept
  }
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  FakeMeasurer m;
  const SweepOutcome o = run_sweep(work, cache, m, nullptr);
  EXPECT_EQ(o.measured, 0u);
  EXPECT_EQ(o.from_cache, 12u);
  EXPECT_TRUE(m.shapes_begun.empty());  // nothing prepared for shapes that are all cached
  ASSERT_EQ(o.results.size(), 12u);
  for (const BenchResult& r : o.results) EXPECT_TRUE(r.cached);
  EXPECT_DOUBLE_EQ(o.results[0].median_us, 2.0);  // re-emitted as measured
}

TEST_F(BenchSweep, AnInterruptedRunResumesAfterTheFailureWithoutRepeatingIt) {
  const auto work = groups(2, 3);
  {
    ResultCache cache(path);
    ASSERT_EQ(cache.load(), "");
    FakeMeasurer m;
    m.crash_on = "toy/fp16/tokens=1/v_1";
    const SweepOutcome o = run_sweep(work, cache, m, nullptr);
    EXPECT_TRUE(o.aborted);
    EXPECT_NE(o.abort_reason.find("toy/fp16/tokens=1/v_1"), std::string::npos);
    EXPECT_EQ(o.measured, 2u);
    EXPECT_EQ(m.open_shapes, 0);
  }
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  FakeMeasurer m;
  m.crash_on = "toy/fp16/tokens=1/v_1";  // would crash again if it were re-run
  const SweepOutcome o = run_sweep(work, cache, m, nullptr);
  EXPECT_FALSE(o.aborted);
  EXPECT_EQ(o.from_cache, 2u);
  EXPECT_EQ(o.measured, 4u);
  EXPECT_EQ(m.measured, (std::vector<std::string>{"toy/fp16/tokens=1/v_2", "toy/fp16/tokens=2/v_0",
                                                   "toy/fp16/tokens=2/v_1", "toy/fp16/tokens=2/v_2"}));
  ASSERT_EQ(o.results.size(), 6u);
  EXPECT_TRUE(o.results[1].cached);
  EXPECT_FALSE(o.results[1].ok());  // the crash is re-emitted as the variant's error
}

TEST_F(BenchSweep, FailuresOfTheRunItselfAreReportedButNotCached) {
  const auto work = groups(2, 2);
  {
    ResultCache cache(path);
    ASSERT_EQ(cache.load(), "");
    FakeMeasurer m;
    m.prepare_error_for = "tokens=2";
    const SweepOutcome o = run_sweep(work, cache, m, nullptr);
    ASSERT_EQ(o.results.size(), 4u);
    EXPECT_EQ(o.results[2].error, "error: cudaMalloc failed");
    EXPECT_EQ(m.measured.size(), 2u);
    EXPECT_EQ(m.open_shapes, 0);
  }
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  EXPECT_EQ(cache.size(), 2u);
  FakeMeasurer m;
  const SweepOutcome o = run_sweep(work, cache, m, nullptr);
  EXPECT_EQ(o.measured, 2u);  // the failed shape is tried again
  EXPECT_EQ(m.shapes_begun, (std::vector<std::string>{"toy/tokens=2"}));
}

std::vector<ShapeGroup> groups_with_copy(int shapes, int variants) {
  std::vector<ShapeGroup> out = groups(shapes, variants);
  for (ShapeGroup& g : out) {
    g.copy = WorkItem{g.op, g.dtype, g.shape, std::string(copy_same_size_id), "ktune/copy_same_size/toy/fp16/" + g.shape.key(), ""};
    g.copy.key = "key:" + g.copy.name;
  }
  return out;
}

TEST_F(BenchSweep, EachShapeHasOneSameSizeCopySharedByItsVariantsAndCached) {
  const auto work = groups_with_copy(2, 3);
  {
    ResultCache cache(path);
    ASSERT_EQ(cache.load(), "");
    FakeMeasurer m;
    const SweepOutcome o = run_sweep(work, cache, m, nullptr);
    EXPECT_EQ(m.copies, (std::vector<std::string>{"ktune/copy_same_size/toy/fp16/tokens=1",
                                                  "ktune/copy_same_size/toy/fp16/tokens=2"}));
    EXPECT_EQ(o.measured, 8u);
    ASSERT_EQ(o.results.size(), 8u);
    EXPECT_EQ(o.results[0].name, "ktune/copy_same_size/toy/fp16/tokens=1");  // the copy row leads its group
    EXPECT_EQ(o.results[0].copy_same_size_us, 0);
    for (int i : {1, 2, 3}) EXPECT_DOUBLE_EQ(o.results[i].copy_same_size_us, 0.25);
    EXPECT_EQ(o.results[4].name, "ktune/copy_same_size/toy/fp16/tokens=2");
    for (int i : {5, 6, 7}) EXPECT_DOUBLE_EQ(o.results[i].copy_same_size_us, 0.5);
  }
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  FakeMeasurer m;
  const SweepOutcome o = run_sweep(work, cache, m, nullptr);
  EXPECT_TRUE(m.copies.empty());
  EXPECT_EQ(o.from_cache, 8u);
  ASSERT_EQ(o.results.size(), 8u);
  EXPECT_TRUE(o.results[4].cached);
  EXPECT_DOUBLE_EQ(o.results[4].median_us, 0.5);
  for (int i : {5, 6, 7}) EXPECT_DOUBLE_EQ(o.results[i].copy_same_size_us, 0.5);  // cached variants get it too
}

TEST_F(BenchSweep, AFailedSameSizeCopyLeavesTheVariantsWithoutTheRatio) {
  const auto work = groups_with_copy(1, 2);
  ResultCache cache(path);
  ASSERT_EQ(cache.load(), "");
  FakeMeasurer m;
  m.copy_fails = true;
  const SweepOutcome o = run_sweep(work, cache, m, nullptr);
  EXPECT_FALSE(o.aborted);
  ASSERT_EQ(o.results.size(), 3u);
  EXPECT_FALSE(o.results[0].ok());
  EXPECT_TRUE(o.results[1].ok());
  EXPECT_EQ(o.results[1].copy_same_size_us, 0);
  EXPECT_EQ(counters(o.results[1], 1000).count("pct_copy_same_size"), 0u);
}

TEST(BenchCounters, PercentOfTheSameSizeCopy) {
  BenchResult r;
  r.bytes = 2e6;
  r.median_us = 4;
  r.copy_same_size_us = 3;
  const auto c = counters(r, 1000);
  EXPECT_DOUBLE_EQ(c.at("copy_same_size_us"), 3);
  EXPECT_DOUBLE_EQ(c.at("pct_copy_same_size"), 75);
  EXPECT_DOUBLE_EQ(c.at("pct_copy"), 50);  // 500 GB/s of a 1000 GB/s ceiling: unchanged
}

TEST(BenchProgress, EtaFromTheAveragePace) {
  EXPECT_LT(Progress::eta_seconds(10, 0, 5), 0);
  EXPECT_DOUBLE_EQ(Progress::eta_seconds(10, 5, 20), 40);
  std::ostringstream out;
  Progress p(&out, 3, false, 0.0);
  p.before("a/b");
  p.after();
  p.before("a/c");
  p.after();
  p.finish();
  const std::string s = out.str();
  EXPECT_NE(s.find("[1/3] a/b"), std::string::npos);
  EXPECT_NE(s.find("[2/3] a/c"), std::string::npos);
  EXPECT_NE(s.find("ETA"), std::string::npos);
  EXPECT_NE(s.find("measured 2 of 3"), std::string::npos);
}

// ---- the plan: ops x dtypes x shapes x variants, and the filters ----------------------------------

Variant fake(const std::string& op, DType t, int arch, const std::string& id, std::vector<int> point) {
  Variant v;
  v.op = op;
  v.dtype = t;
  v.arch = arch;
  v.id = id;
  v.point = std::move(point);
  return v;
}

class BenchPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    for (DType t : {DType::f32, DType::bf16}) {
      for (int arch : {80, 90}) {
        reg.add(fake("toy", t, arch, "original", {}));
        reg.add(fake("toy", t, arch, "tpb_256.vb_16", {256, 16}));
        reg.add(fake("toy", t, arch, "tpb_128.vb_8", {128, 8}));
      }
    }
    Spec s;
    s.op = "toy";
    s.dims = {{"tokens", {1, 16, 128}}, {"d", {11008}}};
    s.dtypes = {DType::f32, DType::f16, DType::bf16};
    specs["toy"] = s;
  }
  std::vector<std::string> names(const std::vector<ShapeGroup>& gs) {
    std::vector<std::string> out;
    for (const ShapeGroup& g : gs)
      for (const WorkItem& it : g.items) out.push_back(it.name + "@" + it.key);
    return out;
  }
  Registry reg;
  std::map<std::string, Spec> specs;
  std::function<std::string(const WorkItem&)> key = [](const WorkItem& it) { return it.id.substr(0, 3); };
};

TEST_F(BenchPlan, EverythingInRunOrder) {
  const auto gs = plan_sweep(specs, reg, 90, Options{}, key);
  ASSERT_EQ(gs.size(), 6u);  // fp16 has no variants compiled: left out
  const auto n = names(gs);
  ASSERT_EQ(n.size(), 18u);
  EXPECT_EQ(n[0], "toy/fp32/tokens=1,d=11008/original@ori");
  EXPECT_EQ(n[1], "toy/fp32/tokens=1,d=11008/tpb_128.vb_8@tpb");  // registry order: by point
  EXPECT_EQ(n[3], "toy/fp32/tokens=16,d=11008/original@ori");
  EXPECT_EQ(n[9], "toy/bf16/tokens=1,d=11008/original@ori");
}

TEST_F(BenchPlan, EveryGroupHasItsSameSizeCopyRow) {
  const auto gs = plan_sweep(specs, reg, 90, Options{}, key);
  ASSERT_FALSE(gs.empty());
  EXPECT_EQ(gs[0].copy.name, "ktune/copy_same_size/toy/fp32/tokens=1,d=11008");
  EXPECT_EQ(gs[0].copy.id, copy_same_size_id);
  EXPECT_EQ(gs[0].copy.key, "ktu");  // keyed like any item
}

TEST_F(BenchPlan, Filters) {
  Options o;
  o.dtypes = {"bf16"};
  o.shapes = "tokens=1(6)?,";
  o.variants = "^(original|tpb_256)";
  const auto n = names(plan_sweep(specs, reg, 90, o, key));
  EXPECT_EQ(n, (std::vector<std::string>{
                   "toy/bf16/tokens=1,d=11008/original@ori", "toy/bf16/tokens=1,d=11008/tpb_256.vb_16@tpb",
                   "toy/bf16/tokens=16,d=11008/original@ori", "toy/bf16/tokens=16,d=11008/tpb_256.vb_16@tpb"}));
}

TEST_F(BenchPlan, EachItemCarriesItsVariantOfTheDevicesArchitecture) {
  const auto gs = plan_sweep(specs, reg, 89, Options{}, key);
  ASSERT_FALSE(gs.empty());
  for (const ShapeGroup& g : gs)
    for (const WorkItem& it : g.items) {
      ASSERT_NE(it.variant, nullptr) << it.name;
      EXPECT_EQ(it.variant->id, it.id);
      EXPECT_EQ(it.variant->dtype, it.dtype);
      EXPECT_EQ(it.variant->arch, 80);  // the newest not newer than sm_89
      EXPECT_EQ(variant_of(it, reg, 89), it.variant);
    }
  // An item made elsewhere (a re-test's candidate) is looked up by id, for the same architecture.
  WorkItem loose{"toy", DType::bf16, {}, "tpb_128.vb_8", "", ""};
  const Variant* v = variant_of(loose, reg, 90);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->arch, 90);
  EXPECT_EQ(v->point, (std::vector<int>{128, 8}));
  loose.id = "tpb_64.vb_4";
  EXPECT_EQ(variant_of(loose, reg, 90), nullptr);
}

TEST_F(BenchPlan, ArchitectureOfTheVariants) {
  EXPECT_EQ(variant_arch(reg, "toy", DType::f32, 90), 90);
  EXPECT_EQ(variant_arch(reg, "toy", DType::f32, 89), 80);
  EXPECT_EQ(variant_arch(reg, "toy", DType::f32, 100), 90);
  EXPECT_EQ(variant_arch(reg, "toy", DType::f32, 75), 0);
  EXPECT_EQ(variant_arch(reg, "toy", DType::f32, 0), 90);
  EXPECT_EQ(variant_arch(reg, "toy", DType::f16, 90), 0);
}

}  // namespace
}  // namespace ktune::bench
