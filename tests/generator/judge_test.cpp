// tests/generator/judge_test.cpp: the generator's judge without a GPU (generator/agents/testing.hpp):
// the planner's verdicts and their JSON, the verdicts read from gate files, the limit and sanitizer
// shapes, the variants the sanitizer runs, the ranking's verdicts, compute-sanitizer's reports, and
// judge_family end to end against scripted stand-ins for ktune_bench, `ktune select` and
// compute-sanitizer (shell scripts that write canned verdicts and log their command lines).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <regex>

#include "agent_support.hpp"
#include "generator/agents/testing.hpp"
#include "generator/agents/tuning.hpp"
#include "ktune/spec.hpp"

namespace fs = std::filesystem;
using namespace ktune::gen;
using namespace ktune::gen::test;
namespace judge = ktune::judge;
using ojson = nlohmann::ordered_json;

namespace {

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "no \"" << (part) << "\" in:\n" << (text)

std::string slurp(const fs::path& p) {
  std::string err;
  std::string s = read_file(p, err);
  EXPECT_EQ(err, "") << p;
  return s;
}

std::string sample_spec() { return slurp(sample_dir() / "spec.json"); }

SpaceProbe probe() {
  SpaceProbe p;
  p.default_id = "tpb_128.vb_4";
  p.unaligned_id = {{4, "tpb_128.vb_1"}, {2, "tpb_128.vb_1"}};
  return p;
}

nlohmann::json row(const std::string& dtype, const std::string& shape, const std::string& id, const std::string& error = "") {
  return {{"op", "gelu_tanh_and_mul"}, {"dtype", dtype}, {"shape", shape}, {"id", id}, {"ok", error.empty()},
          {"error", error}, {"rel_l2", 0.0}, {"max_abs", 0.0}, {"seed", 7}};
}

/// A verdicts file as ktune_bench --gate writes it (bench/driver.cpp, run_gate).
std::string gate_file(const std::vector<nlohmann::json>& rows, bool complete = true) {
  nlohmann::json doc = {{"gpu", "NVIDIA H200"}, {"arch", 90}, {"run_seed", 7}, {"complete", complete}, {"results", rows}};
  return doc.dump(1) + "\n";
}

/// S, the unaligned variant and one other passing fp32 and fp16 at one call.
std::vector<nlohmann::json> passing_rows(const std::string& shape = "tokens=3,d=7") {
  std::vector<nlohmann::json> rows;
  for (const char* dtype : {"fp32", "fp16"})
    for (const char* id : {"original", "tpb_128.vb_1", "tpb_256.vb_4"}) rows.push_back(row(dtype, shape, id));
  return rows;
}

/// The sample spec in schema 2 with a bool scalar (default true) and a float one with two other values.
std::string scalar_spec() {
  std::string s = sample_spec();
  s.replace(s.find('{'), 1,
            R"({"schema": 2, "scalars": [{"name": "approximate", "type": "bool", "default": true},
  {"name": "scale", "type": "float", "default": 1.0, "valid": "> 0", "values": [0.5, 1.0, 4]}],)");
  return s;
}

}  // namespace

// ---- the planner's verdicts ----

TEST(JudgeVerdicts, NewNamesAreAppendedFailuresAndMatchTheBench) {
  // The old values keep their numbers: planner.json stores names, but code may have stored values.
  EXPECT_EQ(static_cast<int>(Node::pending), 0);
  EXPECT_EQ(static_cast<int>(Node::measured), 7);
  const std::vector<std::pair<Node::Verdict, const char*>> added = {
      {Node::out_of_bounds_write, "out_of_bounds_write"}, {Node::input_modified, "input_modified"},
      {Node::unwritten_output, "unwritten_output"},       {Node::nondeterministic, "nondeterministic"},
      {Node::work_skipped, "work_skipped"},               {Node::implausible_time, "implausible_time"},
      {Node::narrower_than_s, "narrower_than_s"},         {Node::out_of_bounds_access, "out_of_bounds_access"},
      {Node::uninitialized_read, "uninitialized_read"},   {Node::state_changed, "state_changed"},
      {Node::reads_before_wait, "reads_before_wait"}};
  for (const auto& [v, name] : added) {
    EXPECT_GT(static_cast<int>(v), static_cast<int>(Node::measured)) << name;
    EXPECT_STREQ(to_string(v), name);
    EXPECT_TRUE(is_failure(v)) << name;
  }
  for (Node::Verdict v : {Node::compile_error, Node::incorrect, Node::race, Node::timeout, Node::rejected})
    EXPECT_TRUE(is_failure(v)) << to_string(v);
  for (Node::Verdict v : {Node::pending, Node::slower, Node::measured}) EXPECT_FALSE(is_failure(v)) << to_string(v);

  // Every verdict of the bench that says a variant is wrong has a planner verdict of the same name.
  for (const judge::VerdictInfo& i : judge::verdicts) {
    if (!i.wrong) continue;
    EXPECT_STREQ(to_string(node_verdict(i.verdict)), i.name);
  }
}

TEST(JudgeVerdicts, PlannerJsonRoundTripWithTheNewVerdicts) {
  Planner p;
  p.add_root();
  const Node::Verdict verdicts[] = {Node::narrower_than_s, Node::out_of_bounds_write, Node::uninitialized_read,
                                    Node::work_skipped, Node::incorrect};
  int round = 1;
  for (Node::Verdict v : verdicts) {
    const int id = p.add_rewrite(0, round++, std::string("family ") + to_string(v));
    ASSERT_GE(id, 0);
    p.update(id, v, std::string("judged ") + to_string(v), 2.0, 0.01, "");
  }
  const nlohmann::json j = p.to_json();
  EXPECT_EQ(j["nodes"][1]["verdict"], "narrower_than_s");
  EXPECT_EQ(j["nodes"][3]["verdict"], "uninitialized_read");
  const Planner q = Planner::from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(q.nodes(), p.nodes());
  EXPECT_EQ(q.to_json().dump(), j.dump());
  // A failed node is never the best, however fast it measured.
  EXPECT_EQ(q.best(), 0);
}

// ---- judge_gate: the verdicts of one gate file ----

TEST(JudgeGate, AllPassingCountsTheRuns) {
  const Judgement j = judge_gate(gate_file(passing_rows()), probe(), "edge shapes");
  EXPECT_TRUE(j.passed) << j.reason;
  EXPECT_HAS(j.findings, "edge shapes: 6 of 6 gate runs passed");
}

TEST(JudgeGate, EachWrongVerdictOfTheBenchRejectsWithItsNameAndDetails) {
  const std::vector<std::pair<std::string, Node::Verdict>> cases = {
      {"incorrect: out: 12 of 21 elements outside the tolerance, first at 3 (got 0, want 1.5)", Node::incorrect},
      {"out_of_bounds_write: out: the guard after the tensor changed, first at byte offset 16 past its end", Node::out_of_bounds_write},
      {"input_modified: in: not bitwise what it was, first at element 0", Node::input_modified},
      {"unwritten_output: out: 7 elements still hold the poison, first at 14", Node::unwritten_output},
      {"nondeterministic: out: the second identical call differs, first at 2", Node::nondeterministic},
      {"work_skipped: out: the timed calls left stale results", Node::work_skipped},
      {"implausible_time: 3.4 us where the same-size copy needs 60.9 us", Node::implausible_time},
      {"state_changed: the stream's access-policy window: base 0, 0 bytes before the call; base 0x7f0000000000, 4096 "
       "bytes, hit ratio 1, hit persisting, miss streaming after it", Node::state_changed},
      {"reads_before_wait: out: the call gave other outputs when its inputs were written late by the kernel before it",
       Node::reads_before_wait},
  };
  for (const auto& [message, verdict] : cases) {
    auto rows = passing_rows();
    rows.push_back(row("fp16", "tokens=3,d=7", "tpb_512.vb_8", message));
    const Judgement j = judge_gate(gate_file(rows), probe(), "edge shapes, wide values");
    EXPECT_FALSE(j.passed) << message;
    EXPECT_EQ(j.verdict, verdict) << message << " -> " << to_string(j.verdict);
    EXPECT_HAS(j.reason, "tpb_512.vb_8");
    EXPECT_HAS(j.reason, "fp16 tokens=3,d=7");
    EXPECT_HAS(j.reason, "edge shapes, wide values");
    EXPECT_HAS(j.reason, message);  // the tensor, the side, the offset: the bench's own words
  }
}

TEST(JudgeGate, RefusalsAndDeviceRejectionsOfOrdinaryVariantsAreNotHeldAgainstTheFamily) {
  auto rows = passing_rows();
  rows.push_back(row("fp32", "tokens=3,d=7", "tpb_512.vb_8", "cannot implement: d must be a multiple of 8"));
  rows.push_back(row("fp32", "tokens=3,d=7", "tpb_1024.vb_8", "rejected: 255 registers and 64 bytes of spills"));
  rows.push_back(row("fp32", "tokens=3,d=7", "tpb_64.vb_8", "error: checking the gate's buffers: busy"));
  const Judgement j = judge_gate(gate_file(rows), probe(), "edge shapes");
  EXPECT_TRUE(j.passed) << j.reason;
  EXPECT_HAS(j.findings, "6 of 9 gate runs passed");
}

TEST(JudgeGate, TheUnalignedPointRefusingACallThatSAnswersIsNarrowerThanS) {
  for (const std::string& message : {std::string("cannot implement: tokens above 65535 do not fit the grid's y dimension"),
                                     std::string("rejected: the device check failed: too many resources requested")}) {
    auto rows = passing_rows();
    rows.push_back(row("fp16", "tokens=70000,d=4096", "original"));
    rows.push_back(row("fp16", "tokens=70000,d=4096", "tpb_128.vb_1", message));
    const Judgement j = judge_gate(gate_file(rows), probe(), "limit shape tokens=70000,d=4096");
    EXPECT_FALSE(j.passed);
    EXPECT_EQ(j.verdict, Node::narrower_than_s) << j.reason;
    EXPECT_HAS(j.reason, "fp16 tokens=70000,d=4096");
    EXPECT_HAS(j.reason, "tpb_128.vb_1");
    EXPECT_HAS(j.reason, message);
  }
  // A wrong variant is the worse finding: it is the verdict even when the unaligned point also refuses.
  auto rows = passing_rows();
  rows.push_back(row("fp16", "tokens=70000,d=4096", "original"));
  rows.push_back(row("fp16", "tokens=70000,d=4096", "tpb_128.vb_1", "cannot implement: too many rows"));
  rows.push_back(row("fp16", "tokens=70000,d=4096", "tpb_256.vb_4", "incorrect: the launch failed: invalid configuration argument"));
  EXPECT_EQ(judge_gate(gate_file(rows), probe(), "limit").verdict, Node::incorrect);
}

TEST(JudgeGate, CallsSCannotRunAreSkippedWithANote) {
  auto rows = passing_rows();
  // The bench could not allocate the 2^31-element call: every row of it is an "error: ".
  const std::string big = "tokens=262145,d=4096";
  for (const char* id : {"original", "tpb_128.vb_1", "tpb_256.vb_4"})
    rows.push_back(row("fp16", big, id, "error: cudaMalloc of 12884967424 bytes: out of memory"));
  // The harness failed on another call: skipped too, even without S's row.
  rows.push_back(row("fp32", "tokens=1,d=1", "tpb_256.vb_4", "error: the harness failed: S returned an error"));
  // S refuses a call: whatever the family does there is not held against it.
  rows.push_back(row("fp32", "tokens=5,d=5", "original", "cannot implement: S needs an even d"));
  rows.push_back(row("fp32", "tokens=5,d=5", "tpb_128.vb_1", "cannot implement: needs an even d"));
  const Judgement j = judge_gate(gate_file(rows), probe(), "limit shape");
  EXPECT_TRUE(j.passed) << j.reason;
  EXPECT_HAS(j.findings, "S itself cannot run 3 call(s)");
  EXPECT_HAS(j.findings, "fp16 " + big);
  EXPECT_HAS(j.findings, "cudaMalloc");
  EXPECT_HAS(j.findings, "6 of 6 gate runs passed");
}

TEST(JudgeGate, SOwnWrongRowsAreNotedNotHeldAgainstTheFamily) {
  auto rows = passing_rows();
  rows.push_back(row("fp32", "tokens=37,d=24", "original", "nondeterministic: out: the second identical call differs"));
  rows.push_back(row("fp32", "tokens=37,d=24", "tpb_128.vb_1"));
  const Judgement j = judge_gate(gate_file(rows), probe(), "edge shapes");
  EXPECT_TRUE(j.passed) << j.reason;
  EXPECT_HAS(j.findings, "S itself fails the gate at 1 call(s)");
  EXPECT_HAS(j.findings, "nondeterministic");
}

TEST(JudgeGate, MalformedVerdictsAreARejection) {
  const Judgement j = judge_gate("{\"gpu\": 1}", probe(), "edge shapes");
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.verdict, Node::rejected);
  EXPECT_HAS(j.reason, "malformed");
}

// ---- the shapes ----

TEST(JudgeShapes, LimitShapesOfTheSampleSpec) {
  std::string err;
  const std::vector<LimitSpec> limits = limit_specs(sample_spec(), err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(limits.size(), 3u);
  std::map<std::string, ktune::Spec> specs;
  for (const LimitSpec& l : limits) {
    // Each a valid spec of its own, with one shape and no edge_dims.
    const ktune::Spec s = ktune::parse_spec_text(l.spec_text, l.name);
    EXPECT_EQ(s.shapes().size(), 1u) << l.name;
    EXPECT_FALSE(ojson::parse(l.spec_text).contains("edge_dims")) << l.name;
    specs.emplace(l.name, s);
  }
  EXPECT_EQ(limits[0].name, "rows");
  EXPECT_EQ(specs.at("rows").shapes()[0].key(), "tokens=70000,d=4096");
  EXPECT_EQ(specs.at("rows").dtypes.size(), 3u);
  EXPECT_HAS(limits[0].what, "past 65,535");
  EXPECT_EQ(specs.at("width").shapes()[0].key(), "tokens=3,d=14336");
  // in [tokens, 2*d] is the largest tensor: 8192 elements per token at d=4096.
  const ktune::Spec& big = specs.at("elements");
  EXPECT_EQ(big.shapes()[0].key(), "tokens=262145,d=4096");
  ASSERT_EQ(big.dtypes.size(), 1u);
  EXPECT_EQ(ktune::name(big.dtypes[0]), std::string("fp16")) << "the first dtype of the smallest element size";
  const std::int64_t in = big.elements(big.tensors[0], big.shapes()[0]);
  EXPECT_GT(in, std::int64_t{1} << 31);
  EXPECT_LE(in - (std::int64_t{1} << 31), 2 * 8192) << "just past 2^31";
  EXPECT_HAS(limits[2].what, "past 2^31");
  EXPECT_HAS(limits[2].what, "fp16 only");
}

TEST(JudgeShapes, LimitShapesOfShippedSpecsAndOddOnes) {
  std::string err;
  // Three dimensions, fp32 tensors beside element ones: the largest tensor per token decides.
  const auto merge = limit_specs(slurp(source_dir() / "kernels/merge_attn_states_lse/spec.json"), err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(merge.size(), 3u);
  // The smallest head count of the spec (2 since the shapes catalogue of issue 42) at 70,000 rows.
  EXPECT_EQ(ktune::parse_spec_text(merge[0].spec_text, "rows").shapes()[0].key(), "tokens=70000,heads=2,head_size=128");
  EXPECT_EQ(ktune::parse_spec_text(merge[1].spec_text, "width").shapes()[0].key(), "tokens=3,heads=64,head_size=128");
  EXPECT_EQ(ktune::parse_spec_text(merge[2].spec_text, "elements").shapes()[0].key(), "tokens=8388609,heads=2,head_size=128");
  // The spec's held-out values (issue 42) are its own shapes': the gate's specs of other shapes drop them.
  const std::string shipped = slurp(source_dir() / "kernels/merge_attn_states_lse/spec.json");
  ASSERT_NE(shipped.find("held_out"), std::string::npos);
  const std::string edges = edge_spec(shipped, err);
  ASSERT_EQ(err, "");
  EXPECT_NO_THROW(ktune::parse_spec_text(edges, "edge"));
  std::vector<std::string> keys;
  const std::string sanitized = sanitizer_spec(shipped, keys, err);
  ASSERT_EQ(err, "");
  EXPECT_NO_THROW(ktune::parse_spec_text(sanitized, "sanitizer"));

  // One dimension only: no width shape (tokens at 3 is an edge shape already).
  const std::string one_dim = R"({"op": "x", "tokens_dim": "n", "width_dim": "n", "dims": {"n": [1024, 8]}, "dtypes": ["fp32"],
    "tolerance": {"fp32": {"rel_l2": 1e-5, "atol": 1e-5, "rtol": 1e-5}},
    "tensors": [{"name": "a", "shape": ["n"], "dtype": "element", "access": "read"},
                {"name": "b", "shape": ["n"], "dtype": "element", "access": "write"}]})";
  const auto one = limit_specs(one_dim, err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].name, "rows");
  EXPECT_EQ(one[1].name, "elements");
  EXPECT_EQ(ojson::parse(one[1].spec_text)["dims"]["n"], ojson::array({(std::int64_t{1} << 31) + 1}));

  // No tokens_dim: the largest-width shape only.
  const std::string no_tokens = R"({"op": "x", "dims": {"h": [4, 64], "w": [128, 16]}, "dtypes": ["fp32"],
    "tensors": [{"name": "b", "shape": ["h", "w"], "dtype": "element", "access": "write"}]})";
  const auto width = limit_specs(no_tokens, err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(width.size(), 1u);
  EXPECT_EQ(width[0].name, "width");
  EXPECT_EQ(ojson::parse(width[0].spec_text)["dims"], ojson::parse(R"({"h": [64], "w": [128]})"));

  limit_specs("{not json", err);
  EXPECT_HAS(err, "limit shapes");
  limit_specs(R"({"op": "x", "tokens_dim": "t", "dims": {"n": [1]}, "tensors": []})", err);
  EXPECT_HAS(err, "tokens_dim");
  // The tensors are read as ktune::Spec reads them (the bench's parser): a malformed spec says what is wrong.
  EXPECT_TRUE(limit_specs(R"({"op": "x", "tokens_dim": "n", "dims": {"n": [1]}, "tensors": [{"shape": ["n*q"]}]})", err).empty());
  EXPECT_HAS(err, "limit shapes");
}

TEST(JudgeShapes, SanitizerShapesAreTheSmallestEdgeAndSpecShapes) {
  std::string err;
  std::vector<std::string> keys;
  const std::string spec = sanitizer_spec(sample_spec(), keys, err);
  ASSERT_EQ(err, "");
  EXPECT_EQ(keys, (std::vector<std::string>{"tokens=1,d=1", "tokens=1,d=4096"}));
  const ktune::Spec s = ktune::parse_spec_text(spec, "sanitize");
  std::vector<std::string> have;
  for (const ktune::Shape& sh : s.shapes()) have.push_back(sh.key());
  for (const std::string& k : keys) EXPECT_NE(std::find(have.begin(), have.end(), k), have.end()) << k;

  // Without edge_dims the smallest edge shape is the smallest spec shape: one key.
  const std::string plain = R"({"op": "x", "tokens_dim": "t", "width_dim": "w", "dims": {"t": [16, 4], "w": [4096, 1024]}})";
  sanitizer_spec(plain, keys, err);
  ASSERT_EQ(err, "");
  EXPECT_EQ(keys, (std::vector<std::string>{"t=1,w=1024", "t=4,w=1024"}));
  sanitizer_spec("[]", keys, err);
  EXPECT_NE(err, "");
  EXPECT_TRUE(keys.empty());
}

TEST(JudgeShapes, EveryOtherScalarValueGetsAnEdgeRun) {
  std::string err;
  const std::vector<ScalarSpec> runs = scalar_specs(scalar_spec(), err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(runs.size(), 3u);
  // The bool's other value, then the float's values other than its default; every other scalar at its default.
  const std::vector<std::pair<std::string, std::string>> want = {
      {"approximate-1", "approximate=false"}, {"scale-0", "scale=0.5"}, {"scale-2", "scale=4"}};
  const std::string edges = edge_spec(scalar_spec(), err);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    SCOPED_TRACE(runs[i].name);
    EXPECT_EQ(runs[i].name, want[i].first);
    EXPECT_EQ(runs[i].what, want[i].second);
    const ktune::Spec s = ktune::parse_spec_text(runs[i].spec_text, runs[i].name);
    EXPECT_EQ(s.dims, ktune::parse_spec_text(edges, "edges").dims) << "edge shapes only";
    for (const ktune::Shape& shape : s.shapes()) {
      EXPECT_EQ(shape.scalar("approximate", -1), i == 0 ? 0.0 : 1.0);
      EXPECT_EQ(shape.scalar("scale", -1), i == 0 ? 1.0 : i == 1 ? 0.5 : 4.0);
    }
  }
  // The judge meets S at both values of a bool: the default through the plain edge run, the other here.
  EXPECT_TRUE(scalar_specs(sample_spec(), err).empty()) << "no scalars, no extra runs";
  EXPECT_EQ(err, "");
  scalar_specs("{not json", err);
  EXPECT_HAS(err, "edge shapes");
}

// ---- what the sanitizer runs ----

TEST(JudgeSanitizer, EveryVariantTheTunedTableCanInstall) {
  Ranking r;
  r.shapes = {{"fp32", "tokens=1,d=4096", 2, "tpb_64.vb_4", 1}, {"fp32", "tokens=16,d=4096", 2, "tpb_256.vb_4", 1},
              {"fp16", "tokens=1,d=4096", 2, "tpb_64.vb_4", 1}, {"fp16", "tokens=16,d=4096", 2, "original", 2},
              {"bf16", "tokens=1,d=4096", 0, "", 0}};
  r.general = {{"fp32", "tpb_256.vb_4"}, {"fp16", "tpb_128.vb_8"}, {"bf16", ""}};
  const std::vector<std::string> ids = installable_variants(r, probe());
  EXPECT_EQ(ids, (std::vector<std::string>{"tpb_128.vb_1", "tpb_128.vb_4", "tpb_128.vb_8", "tpb_256.vb_4", "tpb_64.vb_4"}));

  const std::regex re(variants_regex(ids));
  for (const std::string& id : ids) EXPECT_TRUE(std::regex_search(id, re)) << id;
  for (const char* other : {"tpb_128xvb_1", "tpb_128.vb_16", "xtpb_64.vb_4", "original"}) EXPECT_FALSE(std::regex_search(other, re)) << other;
}

TEST(JudgeSanitizer, ReportsBecomeTheirVerdicts) {
  const std::string what = "variant(s) a, b at tokens=1,d=1";
  ProcessResult r;
  r.started = true;
  r.exit_code = 86;
  r.output = "========= Invalid __global__ write of size 16 bytes\n=========     at void ktune::ops::x::kernel<ktune::ops::x::Config<128, 4>>(...)\n"
             "========= ERROR SUMMARY: 1 error\n";
  Judgement j = read_sanitizer_report("memcheck", r, what, 600);
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.verdict, Node::out_of_bounds_access);
  EXPECT_HAS(j.reason, what);
  EXPECT_HAS(j.findings, "Invalid __global__ write");

  r.output = "========= Uninitialized __global__ memory read of size 4 bytes\n=========     at void k<Config<1>>()\n========= ERROR SUMMARY: 2 errors\n";
  EXPECT_EQ(read_sanitizer_report("initcheck", r, what, 600).verdict, Node::uninitialized_read);

  r.exit_code = 0;  // warnings only: racecheck exits 0, and they count too
  r.output = "========= Warning: Race reported between Write access ... in Config<2>\n========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n";
  EXPECT_EQ(read_sanitizer_report("racecheck", r, what, 600).verdict, Node::race);

  // Only in S's own kernels: a note, the family passes.
  r.exit_code = 86;
  r.output = "========= Uninitialized __global__ memory read\n=========     at void ktune::ops::x::original::source::kernel(float*)\n"
             "========= ERROR SUMMARY: 1 error\n";
  j = read_sanitizer_report("initcheck", r, what, 600);
  EXPECT_TRUE(j.passed) << j.reason;
  EXPECT_HAS(j.findings, "S itself");

  r.output = "========= ERROR SUMMARY: 0 errors\n";
  r.exit_code = 0;
  j = read_sanitizer_report("memcheck", r, what, 600);
  EXPECT_TRUE(j.passed);
  EXPECT_HAS(j.findings, "no reports");

  r.output = "========= Program hit cudaErrorInvalidValue\n";
  r.exit_code = 1;
  EXPECT_EQ(read_sanitizer_report("memcheck", r, what, 600).verdict, Node::rejected);

  r.timed_out = true;
  r.exit_code = 137;
  j = read_sanitizer_report("racecheck", r, what, 45);
  EXPECT_EQ(j.verdict, Node::timeout);
  EXPECT_HAS(j.reason, "45 s");

  ProcessResult missing;  // not started: the tool is not installed here
  j = read_sanitizer_report("memcheck", missing, what, 600);
  EXPECT_TRUE(j.passed);
  EXPECT_HAS(j.findings, "not available");
}

// ---- the ranking ----

TEST(JudgeRanking, EveryWrongVerdictOfTheSearchRejectsWithItsName) {
  Ranking r;
  r.measured_shapes = 2;
  r.band = 0.02;
  r.best_id = "tpb_128";
  r.geomean_speedup = 1.5;
  for (const judge::VerdictInfo& i : judge::verdicts) {
    Ranking x = r;
    x.excluded.push_back({"fp16", "tpb_256", i.name, std::string(i.prefix) + "details"});
    const Judgement j = judge_ranking(x);
    if (i.wrong) {
      EXPECT_FALSE(j.passed) << i.name;
      EXPECT_STREQ(to_string(j.verdict), i.name);
      EXPECT_HAS(j.reason, "tpb_256");
      EXPECT_HAS(j.reason, "details");
    } else {
      EXPECT_TRUE(j.passed) << i.name << ": " << j.reason;
      EXPECT_EQ(j.verdict, Node::measured) << i.name;
    }
  }
  // S's own exclusion is noted, not held against the family.
  Ranking s = r;
  s.excluded.push_back({"fp32", "original", "nondeterministic", "nondeterministic: out differs"});
  const Judgement j = judge_ranking(s);
  EXPECT_TRUE(j.passed) << j.reason;
  EXPECT_HAS(j.findings, "S itself");
}

// ---- the judge end to end, with scripted tools ----

namespace {

/// A work folder with shell scripts standing in for the candidate's ktune_bench, `ktune select` and
/// compute-sanitizer; every call is logged to calls.log. The bench's gate answers from
/// gate-<folder>-<range>.json when the test wrote one (folder: edge, limit-rows, ..., sanitize), else
/// from gate-ok.json; it sleeps first where sleep-<folder> exists. The sanitizer prints report-<tool>
/// and exits 86 where that file exists.
struct ScriptedJudge {
  fs::path dir;
  Toolchain tc;
  Candidate c;

  explicit ScriptedJudge(const std::string& name) {
    dir = fs::path(KTUNE_TEST_WORK_DIR) / "judge" / name;
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    const std::string d = dir.string();
    script("bench", R"sh(echo "bench $*" >> ")sh" + d + R"sh(/calls.log"
out=""; kernels=""; range=default; raw=""
while [ $# -gt 0 ]; do
  case "$1" in
    --gate) out="$2"; shift ;;
    --kernels) kernels="$2"; shift ;;
    --value-range) range="$2"; shift ;;
    --benchmark_out=*) raw="${1#--benchmark_out=}" ;;
  esac
  shift
done
set=$(basename "$kernels")
if [ -n "$out" ]; then
  [ -f ")sh" + d + R"sh(/sleep-$set" ] && sleep 30
  f=")sh" + d + R"sh(/gate-$set-$range.json"
  [ -f "$f" ] || f=")sh" + d + R"sh(/gate-ok.json"
  cp "$f" "$out"
  exit 0
fi
echo '[]' > "$raw"
)sh");
    script("ktune", R"sh(echo "ktune $*" >> ")sh" + d + R"sh(/calls.log"
res=""
while [ $# -gt 0 ]; do
  [ "$1" = "--results" ] && res="$2"
  shift
done
mkdir -p "$res/scripted-gpu" && cp ")sh" + d + R"sh(/results.json" "$res/scripted-gpu/gelu_tanh_and_mul.json"
)sh");
    script("sanitizer", R"sh(echo "sanitizer $*" >> ")sh" + d + R"sh(/calls.log"
tool=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool="$2"; shift 2 ;;
    --error-exitcode|--print-limit|--padding|--report-api-errors) shift 2 ;;
    *) break ;;
  esac
done
"$@"
if [ -f ")sh" + d + R"sh(/report-$tool" ]; then cat ")sh" + d + R"sh(/report-$tool"; exit 86; fi
if [ "$tool" = racecheck ]; then echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
else echo "========= ERROR SUMMARY: 0 errors"; fi
)sh");
    tc.ktune = (dir / "ktune").string();
    tc.sanitizer = (dir / "sanitizer").string();
    c.op = "gelu_tanh_and_mul";
    c.root = dir / "root";
    c.binary = dir / "bench";
    c.probe = probe();
    write("gate-ok.json", gate_file(passing_rows()));
    write("results.json", results());
  }

  void script(const std::string& name, const std::string& body) {
    write(name, "#!/bin/sh\n" + body);
    fs::permissions(dir / name, fs::perms::owner_all, fs::perm_options::add);
  }
  void write(const std::string& name, const std::string& content) { ASSERT_EQ(write_file_atomic(dir / name, content), ""); }
  std::string calls() const { return slurp(dir / "calls.log"); }
  std::size_t count(const std::string& part) const {
    const std::string s = calls();
    std::size_t n = 0;
    for (std::size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
    return n;
  }

  /// A results file of `ktune select` (docs/results-schema.md) with one fp32 shape.
  static std::string results(const std::string& excluded_verdict = "") {
    nlohmann::json excluded = nlohmann::json::array();
    if (!excluded_verdict.empty())
      excluded.push_back({{"id", "tpb_512.vb_8"}, {"verdict", excluded_verdict}, {"error", excluded_verdict + ": the timed calls left stale rows"},
                          {"shapes", {"tokens=16,d=4096"}}});
    const nlohmann::json doc = {
        {"schema", "ktune.results"},
        {"gpu", "Scripted GPU"},
        {"dtypes",
         {{{"dtype", "fp32"},
           {"general", {{"id", "tpb_256.vb_4"}}},
           {"excluded", excluded},
           {"shapes",
            {{{"shape", "tokens=16,d=4096"},
              {"winner", "tpb_64.vb_4"},
              {"noise_band", 0.01},
              {"variants",
               {{{"id", "original"}, {"verdict", "ok"}, {"sweep", {{"median_us", 4.0}}}},
                {{"id", "tpb_64.vb_4"}, {"verdict", "ok"}, {"sweep", {{"median_us", 2.0}}}}}}}}}}}}};
    return doc.dump(1) + "\n";
  }

  Judgement judge(const TestingOptions& t = {}, TuningResult* tuned = nullptr, const std::string& spec = sample_spec()) const {
    return judge_family(tc, c, spec, dir / "round", t, TuningOptions{}, tuned);
  }
};

}  // namespace

TEST(JudgeFamily, AnHonestFamilyPassesEveryStepAndEveryRunIsMade) {
  ScriptedJudge s("honest");
  TuningResult tuned;
  const Judgement j = s.judge({}, &tuned);
  ASSERT_TRUE(j.passed) << j.reason << "\n" << j.findings << "\n" << j.log;
  EXPECT_EQ(j.verdict, Node::measured);
  EXPECT_EQ(j.stage, "ranking");
  EXPECT_HAS(j.reason, "2.000x over S");
  EXPECT_TRUE(tuned.ok);
  EXPECT_EQ(tuned.ranking.best_id, "tpb_64.vb_4");
  for (const char* f : {"judge.log", "tune.log", "results.json", "sanitizer.log"}) EXPECT_TRUE(j.files.count(f)) << f;
  EXPECT_HAS(j.files.at("results.json"), "ktune.results");

  // The gate: the edge shapes with the default and the wide range, then one run per limit set.
  const std::string calls = s.calls();
  EXPECT_EQ(s.count("bench --kernels " + (s.dir / "round/judge/edge").string() + " "), 2u) << calls;
  EXPECT_EQ(s.count("--value-range wide"), 1u) << calls;
  for (const char* set : {"limit-rows", "limit-width", "limit-elements"}) {
    EXPECT_EQ(s.count("/round/judge/" + std::string(set) + " "), 1u) << set << "\n" << calls;
    EXPECT_TRUE(fs::exists(s.dir / "round/judge" / set / "gelu_tanh_and_mul/spec.json")) << set;
  }
  EXPECT_HAS(j.findings, "edge shapes: 6 of 6");
  EXPECT_HAS(j.findings, "edge shapes, wide values: 6 of 6");
  EXPECT_HAS(j.findings, "tokens=70000,d=4096");
  // The search, then the selection.
  EXPECT_EQ(s.count("--benchmark_out="), 1u);
  EXPECT_EQ(s.count("ktune select"), 1u);
  // One sanitizer process per tool, every installable variant at both shapes, separate allocations.
  for (const char* tool : {"memcheck", "racecheck", "initcheck"}) EXPECT_EQ(s.count("--tool " + std::string(tool)), 1u) << tool;
  // memcheck pads every allocation: a read past one tensor must not land in the next.
  EXPECT_EQ(s.count("--tool memcheck --error-exitcode 86 --print-limit 20 --report-api-errors no --padding 4096 "), 1u) << calls;
  // Each logged twice: by the sanitizer and by the bench it runs.
  EXPECT_EQ(s.count("\nbench --kernels " + (s.dir / "round/judge/sanitize").string() + " "), 3u) << calls;
  EXPECT_EQ(s.count("--separate-allocations"), 2 * 3u);
  EXPECT_EQ(s.count("--variants ^(tpb_128\\.vb_1|tpb_128\\.vb_4|tpb_256\\.vb_4|tpb_64\\.vb_4)$"), 2 * 3u) << calls;
  EXPECT_EQ(s.count("--shapes ^(tokens=1,d=1|tokens=1,d=4096)$"), 2 * 3u) << calls;
  EXPECT_HAS(j.findings, "compute-sanitizer initcheck: no reports");
}

TEST(JudgeFamily, EachScalarValueGetsAnEdgeRunAndAWrongOneRejects) {
  {
    ScriptedJudge s("scalars");
    const Judgement j = s.judge({}, nullptr, scalar_spec());
    ASSERT_TRUE(j.passed) << j.reason << "\n" << j.findings;
    const std::string calls = s.calls();
    // The plain edge runs (default and wide) at approximate=true, one more at approximate=false: both values.
    EXPECT_EQ(s.count("bench --kernels " + (s.dir / "round/judge/edge").string() + " "), 2u) << calls;
    for (const char* set : {"edge-approximate-1", "edge-scale-0", "edge-scale-2"}) {
      EXPECT_EQ(s.count("/round/judge/" + std::string(set) + " "), 1u) << set << "\n" << calls;
      EXPECT_TRUE(fs::exists(s.dir / "round/judge" / set / "gelu_tanh_and_mul/spec.json")) << set;
    }
    const ktune::Spec flipped =
        ktune::parse_spec_text(slurp(s.dir / "round/judge/edge-approximate-1/gelu_tanh_and_mul/spec.json"), "flipped");
    ASSERT_EQ(flipped.scalars.size(), 2u);
    EXPECT_EQ(flipped.scalars[0].default_value, 0.0);
    const ktune::Spec plain = ktune::parse_spec_text(slurp(s.dir / "round/judge/edge/gelu_tanh_and_mul/spec.json"), "plain");
    EXPECT_EQ(plain.scalars.at(0).default_value, 1.0);
    EXPECT_HAS(j.findings, "edge shapes, approximate=false: 6 of 6");
    EXPECT_HAS(j.findings, "edge shapes, scale=4: 6 of 6");
  }
  {  // a variant wrong only at the bool's other value
    ScriptedJudge s("scalar-wrong");
    auto rows = passing_rows();
    rows.push_back(row("fp32", "tokens=3,d=7", "tpb_256.vb_4", "incorrect: out: 21 of 21 elements outside the tolerance"));
    s.write("gate-edge-approximate-1-default.json", gate_file(rows));
    const Judgement j = s.judge({}, nullptr, scalar_spec());
    EXPECT_FALSE(j.passed);
    EXPECT_EQ(j.verdict, Node::incorrect);
    EXPECT_HAS(j.reason, "approximate=false");
  }
}

TEST(JudgeFamily, TheFirstFailingStepIsTheVerdict) {
  {  // a wrong variant in the gate with wide values: nothing after the gate runs
    ScriptedJudge s("gate-wide");
    auto rows = passing_rows();
    rows.push_back(row("fp16", "tokens=3,d=7", "tpb_256.vb_4", "incorrect: out: 4094 of 4096 elements are 0 where S gives up to 290"));
    s.write("gate-edge-wide.json", gate_file(rows));
    const Judgement j = s.judge();
    EXPECT_FALSE(j.passed);
    EXPECT_EQ(j.verdict, Node::incorrect);
    EXPECT_EQ(j.stage, "gate");
    EXPECT_HAS(j.reason, "wide values");
    EXPECT_HAS(j.findings, "edge shapes: 6 of 6") << "the steps before it are findings too";
    EXPECT_EQ(j.files.size(), 1u);
    EXPECT_TRUE(j.files.count("judge.log"));
    EXPECT_EQ(s.count("ktune select"), 0u);
    EXPECT_EQ(s.count("limit-rows"), 0u) << "the gate stops at its first failure";
  }
  {  // the rows limit: the unaligned point refuses 70,000 rows that S answers
    ScriptedJudge s("narrower");
    auto rows = passing_rows("tokens=70000,d=4096");
    rows[1] = row("fp32", "tokens=70000,d=4096", "tpb_128.vb_1", "cannot implement: at most 65535 rows");
    s.write("gate-limit-rows-default.json", gate_file(rows));
    const Judgement j = s.judge();
    EXPECT_EQ(j.verdict, Node::narrower_than_s) << j.reason;
    EXPECT_HAS(j.reason, "fp32 tokens=70000,d=4096");
  }
  {  // the 2^31 call does not fit: skipped with a note, the family goes on
    ScriptedJudge s("no-memory");
    std::vector<nlohmann::json> rows;
    for (const char* id : {"original", "tpb_128.vb_1"})
      rows.push_back(row("fp16", "tokens=262145,d=4096", id, "error: cudaMalloc of 12884967424 bytes: out of memory"));
    s.write("gate-limit-elements-default.json", gate_file(rows));
    const Judgement j = s.judge();
    EXPECT_TRUE(j.passed) << j.reason;
    EXPECT_HAS(j.findings, "S itself cannot run 1 call(s)");
  }
  {  // the search excluded a variant whose timed calls skipped the work
    ScriptedJudge s("work-skipped");
    s.write("results.json", ScriptedJudge::results("work_skipped"));
    const Judgement j = s.judge();
    EXPECT_EQ(j.verdict, Node::work_skipped) << j.reason;
    EXPECT_EQ(j.stage, "ranking");
    EXPECT_TRUE(j.files.count("results.json"));
    EXPECT_FALSE(j.files.count("sanitizer.log"));
  }
  {  // memcheck in the family's kernels
    ScriptedJudge s("memcheck");
    s.write("report-memcheck", "========= Invalid __global__ read of size 16 bytes\n=========     at void k<Config<64, 4>>()\n"
                               "========= ERROR SUMMARY: 1 error\n");
    const Judgement j = s.judge();
    EXPECT_EQ(j.verdict, Node::out_of_bounds_access) << j.reason;
    EXPECT_EQ(j.stage, "sanitizer");
    EXPECT_HAS(j.reason, "tpb_64.vb_4");
    EXPECT_TRUE(j.files.count("sanitizer.log"));
    EXPECT_EQ(s.count("--tool racecheck"), 0u);
  }
  {  // initcheck only in S's kernels: a note
    ScriptedJudge s("initcheck-s");
    s.write("report-initcheck", "========= Uninitialized __global__ memory read\n=========     at void ktune::ops::gelu_tanh_and_mul::original::source::k()\n"
                                "========= ERROR SUMMARY: 1 error\n");
    const Judgement j = s.judge();
    EXPECT_TRUE(j.passed) << j.reason;
    EXPECT_HAS(j.findings, "S itself has reports");
  }
  {  // a wrong verdict of the gate run under the sanitizer (separate allocations) counts too
    ScriptedJudge s("sanitizer-gate");
    auto rows = passing_rows("tokens=1,d=1");
    rows.push_back(row("fp32", "tokens=1,d=1", "tpb_64.vb_4", "incorrect: out: 1 of 1 elements outside the tolerance"));
    s.write("gate-sanitize-default.json", gate_file(rows));
    const Judgement j = s.judge();
    EXPECT_EQ(j.verdict, Node::incorrect) << j.reason;
    EXPECT_EQ(j.stage, "sanitizer");
    EXPECT_HAS(j.reason, "compute-sanitizer memcheck");
  }
}

TEST(JudgeFamily, AHangingGateCostsAtMostTheGateLimitForAllItsRuns) {
  ScriptedJudge s("hang");
  s.write("sleep-limit-width", "");
  TestingOptions t;
  t.gate_timeout_s = 2;
  const auto start = std::chrono::steady_clock::now();
  const Judgement j = s.judge(t);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.verdict, Node::timeout);
  EXPECT_EQ(j.stage, "gate");
  EXPECT_HAS(j.reason, "2 s");
  EXPECT_HAS(j.reason, "--gate-timeout");
  EXPECT_LT(took, 10.0);
  EXPECT_EQ(s.count("ktune select"), 0u);
}
