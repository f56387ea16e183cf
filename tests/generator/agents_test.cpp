// tests/generator/agents_test.cpp: the deterministic parts of the generation, testing and tuning agents
// that need no GPU: the answer's parsing and static check, the prompts, the edge shapes, the ranking
// read from a real results file, and the verdicts drawn from a ranking.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agent_support.hpp"
#include "generator/agents/answer.hpp"
#include "generator/agents/prompts.hpp"
#include "generator/agents/testing.hpp"
#include "generator/agents/tuning.hpp"

using namespace ktune::gen;
using namespace ktune::gen::test;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::string err;
  std::string s = read_file(p, err);
  EXPECT_EQ(err, "") << p;
  return s;
}

Answer valid_answer() {
  Answer a;
  EXPECT_EQ(parse_answer(slurp(answer("faster")), a), "");
  return a;
}

}  // namespace

TEST(AgentsAnswer, StoredAnswersParseAndPassTheStaticCheck) {
  for (const char* name : {"does_not_compile", "wrong", "races", "slower", "faster"}) {
    Answer a;
    ASSERT_EQ(parse_answer(slurp(answer(name)), a), "") << name;
    EXPECT_EQ(check_answer(a), "") << name;
    EXPECT_FALSE(a.summary.empty());
    EXPECT_EQ(a.summary.find('\n'), std::string::npos);
  }
}

TEST(AgentsAnswer, MalformedAnswersSayWhatIsWrong) {
  Answer a;
  EXPECT_NE(parse_answer("   \n", a).find("blank"), std::string::npos);
  EXPECT_NE(parse_answer("here is my family: it is great", a).find("not a JSON object"), std::string::npos);
  EXPECT_NE(parse_answer(R"({"reasoning": "x", "summary": "y", "kind": "rewrite", "space_hpp": "struct Space {};"})", a)
                .find("family_cuh"),
            std::string::npos);
  EXPECT_NE(parse_answer(R"({"reasoning": "x", "summary": "y", "kind": "rename", "space_hpp": "struct Space", "family_cuh": "struct Family"})", a)
                .find("kind"),
            std::string::npos);
  // A fenced answer is accepted: models do that despite JSON mode.
  EXPECT_EQ(parse_answer("```json\n" + slurp(answer("faster")) + "\n```", a), "");
}

TEST(AgentsAnswer, StaticCheckRefusesReachingAroundTheJudge) {
  const Answer base = valid_answer();
  const std::pair<const char*, const char*> cheats[] = {
      {"static int r = (ktune::HarnessRegistry::global(), 0);", "registry"},
      {"KTUNE_REGISTER_ORIGINAL(Family, 90)", "registers"},
      {"return original::run(a, s);", "calls S"},
      {"cudaMemcpyAsync(a.out, a.in, 4, cudaMemcpyDeviceToDevice, s);", "memory"},
      {"std::system(\"nvidia-smi\");", "runs programs"},
      {"#include \"harness.hpp\"", "judge"},
      {"atomicAdd(p, 1.0f);", "atomics"},
  };
  for (const auto& [code, why] : cheats) {
    Answer a = base;
    a.family_cuh += std::string("\n") + code + "\n";
    const std::string verdict = check_answer(a);
    EXPECT_NE(verdict.find(why), std::string::npos) << code << " -> " << verdict;
  }
}

TEST(AgentsPrompts, CarryTheConventionsTheTaskAndTheFindings) {
  const std::string sys = system_prompt("my_op", {"kernels/x/space.hpp", "struct Space { /*example*/ };"},
                                        {"kernels/x/family.cuh", "struct Family {};"}, {{"kernels/my_op/args.hpp", "struct Args;"}});
  for (const char* part : {"ktune::ops::my_op", "space.hpp", "family.cuh", "unaligned_point", "/*example*/",
                           "kernels/my_op/args.hpp", "\"space_hpp\"", "KTUNE_REGISTER"})
    EXPECT_NE(sys.find(part), std::string::npos) << part;
  RoundPrompt p;
  p.round = 3;
  p.action = "reparam";
  p.planner_reason = "its θ has not been searched yet";
  p.s_name = "s.cu";
  p.s_source = "__global__ void k() {}";
  p.spec_json = "{}";
  p.target_summary = "split tiling";
  p.target_space = "SPACE";
  p.target_family = "FAMILY";
  p.findings = "bf16 tokens=1: 1.2x";
  const std::string r = round_prompt(p);
  for (const char* part : {"Round 3", "re-parameterisation", "split tiling", "θ has not been searched", "SPACE", "FAMILY",
                           "bf16 tokens=1: 1.2x", "__global__ void k"})
    EXPECT_NE(r.find(part), std::string::npos) << part;
  EXPECT_NE(fix_prompt("compile", "x.cuh(3): error: nope").find("x.cuh(3): error: nope"), std::string::npos);
}

TEST(AgentsTesting, EdgeShapesFromTheSpecOrDerived) {
  std::string err;
  const std::string with = edge_spec(slurp(sample_dir() / "spec.json"), err);
  ASSERT_EQ(err, "");
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(with);
  EXPECT_FALSE(j.contains("edge_dims"));
  EXPECT_EQ(j["dims"].begin().key(), "tokens") << "the spec's order of dimensions is kept";

  const std::string plain = R"({"op": "x", "tokens_dim": "t", "width_dim": "w", "dims": {"t": [16, 4], "w": [4096, 1024]}})";
  const nlohmann::ordered_json k = nlohmann::ordered_json::parse(edge_spec(plain, err));
  ASSERT_EQ(err, "");
  EXPECT_EQ(k["dims"]["t"], nlohmann::ordered_json::array({1, 3}));
  EXPECT_EQ(k["dims"]["w"], nlohmann::ordered_json::array({1024}));
  edge_spec("{not json", err);
  EXPECT_NE(err, "");
}

TEST(AgentsTuning, RankingFromACommittedResultsFile) {
  Ranking r;
  ASSERT_EQ(read_ranking(nlohmann::json::parse(slurp(source_dir() / "reports/nvidia-h200/silu_and_mul.json")), r), "");
  EXPECT_EQ(r.gpu, "NVIDIA H200");
  EXPECT_EQ(r.shapes.size(), 54u);  // 3 dtypes x 18 shapes
  EXPECT_EQ(r.measured_shapes, 54u);
  EXPECT_GT(r.geomean_speedup, 1.0);
  EXPECT_GE(r.band, 0.01);
  EXPECT_FALSE(r.best_id.empty());
  EXPECT_EQ(r.general.size(), 3u);
  const std::string text = describe_ranking(r);
  EXPECT_NE(text.find("bf16 tokens=1,d=11008: S"), std::string::npos) << text;
  EXPECT_NE(read_ranking(nlohmann::json::object(), r), "");
}

TEST(AgentsTesting, VerdictsFromARanking) {
  Ranking r;
  r.measured_shapes = 2;
  r.band = 0.02;
  r.best_id = "tpb_128";
  r.geomean_speedup = 1.5;
  EXPECT_EQ(judge_ranking(r).verdict, Node::measured);
  r.geomean_speedup = 0.99;  // inside the band: not "slower"
  EXPECT_EQ(judge_ranking(r).verdict, Node::measured);
  r.geomean_speedup = 0.5;
  EXPECT_EQ(judge_ranking(r).verdict, Node::slower);
  EXPECT_TRUE(judge_ranking(r).passed);
  r.excluded.push_back({"bf16", "tpb_256", "incorrect", "incorrect: out: rel_l2 0.3"});
  const Judgement j = judge_ranking(r);
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.verdict, Node::incorrect);
  EXPECT_NE(j.reason.find("tpb_256"), std::string::npos);
  Ranking none;
  EXPECT_EQ(judge_ranking(none).verdict, Node::rejected);
}
