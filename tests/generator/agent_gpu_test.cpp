// tests/generator/agent_gpu_test.cpp: the whole `ktune agent` loop on a GPU, with scripted LLM answers,
// on an op ktune does not ship (gelu_tanh_and_mul, tests/generator/data). The script holds a family
// that does not compile, one that is wrong, one that races, one slower than S and one faster; the test
// checks each verdict, the planner's pick, the record on disk, and that the kernels/<op>/ it leaves
// builds, passes the gate against S on every spec shape and tunes like the shipped ops.
// Skips without a GPU. On the GPU machine: tools/gpu.sh remote agent.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <sstream>

#include "agent_support.hpp"
#include "generator/agents/candidate.hpp"
#include "generator/agents/testing.hpp"
#include "generator/agents/tuning.hpp"

namespace fs = std::filesystem;
using namespace ktune::gen;
using namespace ktune::gen::test;

namespace {

bool have_gpu(std::string& why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) why = std::string("no usable CUDA device: ") + cudaGetErrorString(e);
  else if (n == 0) why = "no CUDA device";
  return e == cudaSuccess && n > 0;
}

/// Where the GPU run leaves its record: build/agent-gpu-runs (tools/gpu.sh brings it back).
fs::path gpu_work() {
  const char* env = std::getenv("KTUNE_AGENT_GPU_WORK");
  return env && *env ? fs::path(env) : source_dir() / "build/agent-gpu-runs";
}

/// Runs the scripted loop (five families, five rounds) in `work` with judges on `gpus`, checks each
/// round's verdict, the planner's pick and the record, and returns the options it ran with.
AgentOptions run_scripted_loop(const fs::path& work, const std::vector<std::string>& gpus) {
  std::error_code ec;
  fs::remove_all(work, ec);
  ScopedEnv key("KTUNE_TEST_LLM_KEY", "not-a-secret-agent-gpu");
  LlmTestServer server(work / "server", script_of({"does_not_compile", "wrong", "races", "slower", "faster"}));
  EXPECT_TRUE(server.ok()) << server.error();
  AgentOptions o = sample_options(work, server.base_url());
  o.max_fixes = 0;            // a family that does not compile stays a compile error
  o.budget.max_rounds = 5;
  o.budget.patience = 0;      // the first three rounds fail; patience would stop the run there
  o.testing.seed = o.tuning.seed = 20261122;
  o.gpus = gpus;
  // The 2^31-element limit call costs tens of seconds per family; the red-team suite runs it
  // (red_team_gpu_test.cpp), this test keeps the loop's five rounds within one device call.
  o.testing.limit_elements = false;
  std::ostringstream log;
  const int rc = run_agent(o, log);
  std::cout << log.str();
  EXPECT_EQ(rc, agent_ok) << log.str();

  const fs::path run = only_run(work / "runs", o.op);
  EXPECT_FALSE(run.empty());
  std::string err;
  const nlohmann::json planner = nlohmann::json::parse(read_file(run / "planner.json", err));
  const std::vector<std::string> expected = {"compile_error", "incorrect", "race", "slower", "measured"};
  EXPECT_EQ(planner["nodes"].size(), expected.size() + 1) << planner.dump(1);
  for (std::size_t i = 0; i < expected.size() && i + 1 < planner["nodes"].size(); ++i) {
    const auto& node = planner["nodes"][i + 1];
    EXPECT_EQ(node["verdict"], expected[i]) << "round " << i + 1 << ": " << node.dump();
    EXPECT_TRUE(fs::exists(run / fmt::format("round-{:02}/verdict.json", i + 1)));
  }
  const nlohmann::json result = nlohmann::json::parse(read_file(run / "result.json", err));
  EXPECT_EQ(result["best_node"], 5);
  if (planner["nodes"].size() > 5) {
    const auto& winner = planner["nodes"][5];
    EXPECT_TRUE(winner["geomean_speedup"].is_number() && winner["geomean_speedup"].get<double>() > 1.0) << winner.dump();
  }
  EXPECT_TRUE(fs::exists(run / "round-05/results.json"));
  EXPECT_TRUE(fs::exists(run / "round-03/sanitizer.log"));
  EXPECT_NE(read_file(run / "round-05/profile.log", err).find("finding"), std::string::npos) << "the winner's CUPTI profile";
  const std::string summary = read_file(run / "summary.md", err);
  EXPECT_NE(summary.find("The winner: node 5"), std::string::npos) << summary;
  std::cout << "agent record: " << run << "\n" << summary;
  // The loop's pace (docs/scale.md): rounds per hour of wall time, the LLM's answers scripted.
  const nlohmann::json session = nlohmann::json::parse(read_file(run / "session.json", err));
  const double wall_s = session["wall_s"].value("total_s", 0.0);
  std::cout << fmt::format("agent pace: {} judge(s) on GPUs [{}]: {} rounds in {:.1f} s = {:.0f} rounds per hour\n",
                           std::max<std::size_t>(1, gpus.size()), fmt::join(gpus, ","), expected.size(), wall_s,
                           wall_s > 0 ? 3600.0 * static_cast<double>(expected.size()) / wall_s : 0.0)
            << "session: " << session.dump(1) << "\n";
  return o;
}

}  // namespace

TEST(AgentGpu, ScriptedLoopJudgesEachFamilyAndInstallsTheWinner) {
  std::string why;
  if (!have_gpu(why)) GTEST_SKIP() << why;
  const fs::path work = gpu_work();
  const AgentOptions o = run_scripted_loop(work, {});
  if (::testing::Test::HasFailure()) return;

  // The kernel folder it left builds, passes the gate against S on every spec shape, and tunes.
  const fs::path kernels = work / "kernels" / o.op;
  for (const char* f : {"spec.json", "original.cuh", "args.hpp", "harness.hpp", "family_base.cuh", "space.hpp",
                        "family.cuh", "tuned.cuh", "gelu_tanh_and_mul.cuh", "gelu_tanh_and_mul.hpp", "gelu_tanh_and_mul.cu"})
    EXPECT_TRUE(fs::exists(kernels / f)) << f;
  Toolchain tc;
  ASSERT_EQ(load_toolchain(toolchain_path({}), tc), "");
  const CandidateBuild b = build_candidate(tc, o.op, work);  // work/kernels/<op>/ is the installed folder
  ASSERT_TRUE(b.ok) << b.diagnostics;
  const Candidate c{o.op, work, b.binary, b.profiler, b.probe};
  TestingOptions t;
  t.seed = 7;
  std::string spec_err;
  const std::string spec = read_file(kernels / "spec.json", spec_err);
  const Judgement edges = gate_edges(tc, c, spec, work / "installed-judge", t);
  EXPECT_TRUE(edges.passed) << edges.reason << "\n" << edges.findings;
  const TuningResult tuned = tune_candidate(tc, c, work / "installed-tune", o.tuning);
  ASSERT_TRUE(tuned.ok) << tuned.error;
  const Judgement j = judge_ranking(tuned.ranking);
  EXPECT_TRUE(j.passed) << j.reason;
  EXPECT_EQ(j.verdict, Node::measured) << j.reason;
  std::cout << "installed family, re-tuned: " << describe_ranking(tuned.ranking);
}

// Two judges at once: the same answers in the same rounds get the same verdicts, and the rounds judged
// together overlap in time. By default `--gpus 0,0`, sharing the one GPU a test machine has (a check of
// the waves, not a speed-up); KTUNE_AGENT_GPUS=0,1 on a machine with two GPUs measures the pace.
TEST(AgentGpu, TwoJudgesAtOnceGiveEachRoundItsVerdict) {
  std::string why;
  if (!have_gpu(why)) GTEST_SKIP() << why;
  const char* env = std::getenv("KTUNE_AGENT_GPUS");
  std::vector<std::string> gpus;
  std::istringstream list(env && *env ? env : "0,0");
  for (std::string g; std::getline(list, g, ',');) gpus.push_back(g);
  ASSERT_EQ(gpus.size(), 2u) << "KTUNE_AGENT_GPUS names two GPUs (0,0 or 0,1), not " << env;
  run_scripted_loop(gpu_work() / "two-judges", gpus);
}
