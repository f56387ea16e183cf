// tests/generator/toolchain_test.cpp: child processes with time limits, the toolchain manifest, and
// the bounding of compiler messages sent back to the LLM.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "generator/record/files.hpp"
#include "generator/toolchain/process.hpp"
#include "generator/toolchain/toolchain.hpp"
#include "agent_support.hpp"

namespace fs = std::filesystem;
using namespace ktune::gen;

TEST(ToolchainProcess, CapturesOutputAndExitCode) {
  const ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.output.find("out"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
  EXPECT_FALSE(r.ok());
}

TEST(ToolchainProcess, TimeLimitKillsTheWholeProcessGroup) {
  ProcessOptions o;
  o.timeout_s = 0.5;
  // The grandchild holds the pipe open: only killing the group ends the wait.
  const ProcessResult r = run_process({"sh", "-c", "sleep 30 & sleep 30"}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 5.0);
  EXPECT_NE(r.error.find("timed out"), std::string::npos);
}

TEST(ToolchainProcess, MissingProgramIsAClearError) {
  const ProcessResult r = run_process({"/nonexistent/ktune-no-such-tool"});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.error.find("cannot run"), std::string::npos);
}

TEST(ToolchainProcess, EnvironmentOverridesAndWorkingDirectory) {
  ProcessOptions o;
  o.env = {"KTUNE_TEST_VALUE=42"};
  o.cwd = "/";
  const ProcessResult r = run_process({"sh", "-c", "echo $KTUNE_TEST_VALUE; pwd"}, o);
  ASSERT_TRUE(r.ok()) << r.output;
  EXPECT_EQ(r.output, "42\n/\n");
}

TEST(ToolchainProcess, LongOutputKeepsHeadAndTail) {
  ProcessOptions o;
  o.max_output = 1000;
  const ProcessResult r = run_process({"sh", "-c", "echo FIRST; seq 1 100000; echo LAST"}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.output.rfind("FIRST", 0), 0u);
  EXPECT_NE(r.output.find("LAST"), std::string::npos);
  EXPECT_NE(r.output.find("left out"), std::string::npos);
  EXPECT_LT(r.output.size(), 1200u);
}

TEST(ToolchainProcess, ParallelRunsKeepTheirOrder) {
  std::vector<std::vector<std::string>> cmds;
  for (int i = 0; i < 6; ++i) cmds.push_back({"sh", "-c", "echo " + std::to_string(i)});
  const auto rs = run_processes(cmds, 3);
  ASSERT_EQ(rs.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(rs[i].output, std::to_string(i) + "\n");
}

TEST(ToolchainManifest, RelativePathsAreTakenFromTheManifestFolder) {
  const fs::path dir = fs::path(KTUNE_TEST_WORK_DIR) / "manifest";
  ASSERT_EQ(write_file_atomic(dir / "toolchain.json", R"({"nvcc": "nvcc", "arch": 90, "cuda_flags": ["-O3"],
    "include_dirs": ["include", "/usr/include"], "link_inputs": ["lib/libx.a"], "link_flags": ["-cudart", "shared"],
    "library_path": ["lib"], "templates_dir": "bench", "kernels_dir": "kernels", "ktune": "bin/ktune"})"),
            "");
  Toolchain tc;
  ASSERT_EQ(load_toolchain(dir / "toolchain.json", tc), "");
  const std::string base = fs::absolute(dir).lexically_normal().string();
  EXPECT_EQ(tc.include_dirs[0], base + "/include");
  EXPECT_EQ(tc.include_dirs[1], "/usr/include");
  EXPECT_EQ(tc.link_inputs[0], base + "/lib/libx.a");
  EXPECT_EQ(tc.link_flags[0], "-cudart");
  EXPECT_EQ(tc.ktune, base + "/bin/ktune");
  EXPECT_EQ(tc.arch, 90);
}

TEST(ToolchainManifest, MissingManifestSaysWhereItComesFrom) {
  Toolchain tc;
  const std::string err = load_toolchain("/nonexistent/toolchain.json", tc);
  EXPECT_NE(err.find("written by the build"), std::string::npos) << err;
}

TEST(ToolchainManifest, ARunSeesItsGpuAndItsShareOfTheHostsCores) {
  test::ScopedEnv unset("KTUNE_PREP_THREADS", "");
  Toolchain tc;
  tc.library_path = {"/opt/lib"};
  auto has = [](const std::vector<std::string>& env, const std::string& entry) {
    return std::find(env.begin(), env.end(), entry) != env.end();
  };
  std::vector<std::string> env = run_environment(tc);  // one judge: the GPU and the cores it inherits
  EXPECT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0].rfind("LD_LIBRARY_PATH=/opt/lib", 0), 0u);
  tc.cuda_visible_devices = "1";
  tc.prep_threads = 7;  // a judge of a wave of two on 16 cores
  env = run_environment(tc);
  EXPECT_TRUE(has(env, "CUDA_VISIBLE_DEVICES=1"));
  EXPECT_TRUE(has(env, "KTUNE_PREP_THREADS=7"));
  test::ScopedEnv own("KTUNE_PREP_THREADS", "3");  // the user's own setting is theirs
  env = run_environment(tc);
  EXPECT_FALSE(std::any_of(env.begin(), env.end(), [](const std::string& e) { return e.rfind("KTUNE_PREP_THREADS=", 0) == 0; }));
}

TEST(ToolchainDiagnostics, ErrorsComeFirstAndTheBudgetHolds) {
  std::string out;
  for (int i = 0; i < 200; ++i) out += "note: instantiated from here " + std::to_string(i) + "\n";
  out += "family.cuh(12): error: identifier \"Tpbb\" is undefined\n";
  const std::string d = bounded_diagnostics(out, 500);
  EXPECT_EQ(d.rfind("family.cuh(12): error", 0), 0u) << d;
  EXPECT_LT(d.size(), 600u);
  EXPECT_NE(d.find("cut to 500"), std::string::npos);
}
