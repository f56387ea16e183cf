// tests/generator/agent_test.cpp: `ktune agent` without a GPU, against the scripted LLM server on
// loopback: the loop runs through generation and compilation (with nvcc, as in CI), sends the
// compiler's messages back, stops with a clear message for want of a GPU, leaves its record, and a
// replay of that record with no server reproduces it byte for byte.
#include <gtest/gtest.h>

#include <sstream>

#include "agent_support.hpp"

namespace fs = std::filesystem;
using namespace ktune::gen;
using namespace ktune::gen::test;

namespace {

fs::path fresh(const std::string& name) {
  const fs::path d = fs::path(KTUNE_TEST_WORK_DIR) / "agent" / name;
  std::error_code ec;
  fs::remove_all(d, ec);
  fs::create_directories(d, ec);
  return d;
}

}  // namespace

TEST(AgentCpu, TimeLimitFlagsSetTheJudgesLimits) {
  const std::vector<std::string> base = {"s.cu", "--spec", "op.spec.json", "--name", "my_op", "--llm-base-url", "http://127.0.0.1:9/v1"};
  AgentOptions defaults;
  ASSERT_EQ(parse_agent_args(base, defaults), "");
  EXPECT_EQ(defaults.source, "s.cu");
  EXPECT_EQ(defaults.testing.gate_timeout_s, 300);
  EXPECT_EQ(defaults.testing.sanitizer_timeout_s, 600);
  EXPECT_EQ(defaults.tuning.timeout_s, 900);

  std::vector<std::string> args = base;
  args.insert(args.end(), {"--gate-timeout", "45", "--sanitizer-timeout", "120.5", "--tune-timeout", "1e3"});
  AgentOptions o;
  ASSERT_EQ(parse_agent_args(args, o), "");
  EXPECT_EQ(o.testing.gate_timeout_s, 45);
  EXPECT_EQ(o.testing.sanitizer_timeout_s, 120.5);
  EXPECT_EQ(o.tuning.timeout_s, 1000);

  for (const char* flag : {"--gate-timeout", "--sanitizer-timeout", "--tune-timeout"}) {
    for (const char* bad : {"0", "-5", "ten", "5s", "", "inf", "nan"}) {
      std::vector<std::string> a = base;
      a.insert(a.end(), {flag, bad});
      AgentOptions x;
      const std::string e = parse_agent_args(a, x);
      EXPECT_NE(e.find(flag), std::string::npos) << flag << " " << bad << ": " << e;
      EXPECT_NE(e.find("above zero"), std::string::npos) << e;
      EXPECT_EQ(agent_command(a), agent_usage) << flag << " " << bad;
    }
    std::vector<std::string> a = base;
    a.push_back(flag);  // no value
    AgentOptions x;
    EXPECT_NE(parse_agent_args(a, x).find("needs a value"), std::string::npos) << flag;
    EXPECT_EQ(agent_command(a), agent_usage);
  }
  // Other usage errors still read as before.
  AgentOptions x;
  EXPECT_NE(parse_agent_args({"s.cu", "--name", "op"}, x).find("--spec"), std::string::npos);
  EXPECT_NE(parse_agent_args({"s.cu", "--spec", "a", "--name", "op", "--rounds", "x"}, x).find("non-negative integer"), std::string::npos);
  EXPECT_NE(parse_agent_args({"s.cu", "--spec", "a", "--name", "op", "--bogus"}, x).find("unknown option --bogus"), std::string::npos);
}

TEST(AgentCpu, MissingEndpointNamesTheSettingAndWritesNothing) {
  const fs::path work = fresh("missing");
  AgentOptions o = sample_options(work, "");
  std::ostringstream log;
  EXPECT_EQ(run_agent(o, log), agent_usage);
  EXPECT_NE(log.str().find("--llm-base-url"), std::string::npos) << log.str();
  EXPECT_FALSE(fs::exists(work / "runs"));
  EXPECT_FALSE(fs::exists(work / "kernels"));

  o.llm.base_url = "http://127.0.0.1:9/v1";
  ::unsetenv("KTUNE_TEST_LLM_KEY");
  std::ostringstream log2;
  EXPECT_EQ(run_agent(o, log2), agent_usage);
  EXPECT_NE(log2.str().find("KTUNE_TEST_LLM_KEY"), std::string::npos) << log2.str();
}

TEST(AgentCpu, NeverOverwritesAKernelFolderWithoutForce) {
  const fs::path work = fresh("exists");
  ASSERT_EQ(write_file_atomic(work / "kernels/gelu_tanh_and_mul/keep.txt", "mine\n"), "");
  ScopedEnv key("KTUNE_TEST_LLM_KEY", "placeholder-unused");
  std::ostringstream log;
  EXPECT_EQ(run_agent(sample_options(work, "http://127.0.0.1:9/v1"), log), agent_failed);
  EXPECT_NE(log.str().find("--force"), std::string::npos) << log.str();
  std::string err;
  EXPECT_EQ(read_file(work / "kernels/gelu_tanh_and_mul/keep.txt", err), "mine\n");
  EXPECT_FALSE(fs::exists(work / "runs"));
}

TEST(AgentCpu, CompilerMessagesGoBackThenNoGpuStopsAndTheReplayIsIdentical) {
  const fs::path work = fresh("loop");
  const std::string fake_key = "not-a-secret-agent-loop";  // sent to the loopback server only
  ScopedEnv key("KTUNE_TEST_LLM_KEY", fake_key.c_str());
  ScopedEnv no_gpu("CUDA_VISIBLE_DEVICES", "");  // the candidates see no GPU, even on a GPU machine
  LlmTestServer server(work / "server", script_of({"does_not_compile", "faster"}));
  ASSERT_TRUE(server.ok()) << server.error();
  AgentOptions o = sample_options(work, server.base_url());
  o.budget.max_rounds = 1;
  o.max_fixes = 1;
  std::ostringstream log;
  ASSERT_EQ(run_agent(o, log), agent_no_gpu) << log.str();
  EXPECT_NE(log.str().find("no usable GPU"), std::string::npos) << log.str();

  // The second request carries the first answer and the compiler's messages about it.
  const std::vector<nlohmann::json> got = server.requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["headers"].value("authorization", ""), "Bearer " + fake_key);
  const auto& messages = got[1]["body"]["messages"];
  ASSERT_EQ(messages.size(), 4u);  // system, task, the broken answer, the compiler's messages
  EXPECT_EQ(messages[2]["role"], "assistant");
  const std::string fix = messages[3]["content"];
  EXPECT_NE(fix.find("error"), std::string::npos) << fix;
  EXPECT_NE(fix.find("kernels/gelu_tanh_and_mul/family.cuh"), std::string::npos) << "relative paths: " << fix;

  const fs::path run = only_run(work / "runs", "gelu_tanh_and_mul");
  ASSERT_FALSE(run.empty());
  for (const char* f : {"run.json", "llm.jsonl", "summary.md", "planner.json", "result.json", "session.json",
                        "round-01/decision.json", "round-01/prompt-1.md", "round-01/answer-1.json", "round-01/prompt-2.md",
                        "round-01/answer-2.json", "round-01/space.hpp", "round-01/family.cuh", "round-01/build.log",
                        "round-01/verdict.json", "original/original.cu", "original/spec.json"})
    EXPECT_TRUE(fs::exists(run / f)) << f;
  std::string err;
  const std::string recording = read_file(run / "llm.jsonl", err);
  EXPECT_EQ(recording.find(fake_key), std::string::npos) << "the key leaked into the recording";
  EXPECT_FALSE(fs::exists(work / "kernels/gelu_tanh_and_mul")) << "nothing judged, nothing installed";

  // Replay: no server, no key, the same record.
  server.stop();
  AgentOptions r = o;
  // The server is gone (its port closed): a replay must not need it.
  r.replay = run / "llm.jsonl";
  r.runs_dir = work / "runs-replay";
  std::ostringstream log2;
  ASSERT_EQ(run_agent(r, log2), agent_no_gpu) << log2.str();
  const fs::path replayed = only_run(work / "runs-replay", "gelu_tanh_and_mul");
  ASSERT_FALSE(replayed.empty());
  const auto a = record_files(run), b = record_files(replayed);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, content] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_TRUE(b.at(name) == content) << name << " differs between the run and its replay";
  }
}
