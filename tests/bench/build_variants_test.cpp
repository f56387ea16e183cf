// The tolerant tune build (tools/build-variants.sh) on a tree whose one variant does not compile: the
// test-only op tests/bench/fixtures/kernels/planted_scale plants a static_assert in tpb_128.vb_16.
// The build must finish, leave exactly that shard out, report it with the compiler's message and every
// shard's compile time in ktune-build.json, and link a ktune_bench that lists the other variants.
//
// Builds a small tree of its own (symlinks to this repository's CMake, include/ and bench/, plus the
// fixture op) in the test build directory; a few minutes on two cores the first time, incremental after.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

std::string run(const std::string& cmd, int& status) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen((cmd + " 2>&1").c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf{};
  while (p && fgets(buf.data(), buf.size(), p.get())) out += buf.data();
  const int rc = p ? pclose(p.release()) : -1;
  status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

TEST(BuildVariants, APlantedCompileFailureCostsOnlyItsShard) {
  if (std::system("command -v ninja >/dev/null 2>&1") != 0) GTEST_SKIP() << "ninja is not installed";
  const fs::path repo = KTUNE_SOURCE_DIR;
  const fs::path work = fs::path(KTUNE_TEST_WORK_DIR) / "planted";
  const fs::path src = work / "src", build = work / "build";
  fs::create_directories(src / "kernels");
  // Everything the top-level CMakeLists.txt adds when the benchmark is on (generator/ builds on tools/).
  for (const char* entry : {"CMakeLists.txt", "cmake", "include", "bench", "tools", "generator"})
    if (!fs::exists(src / entry) && fs::exists(repo / entry)) fs::create_directory_symlink(repo / entry, src / entry);
  if (!fs::exists(src / "kernels" / "planted_scale"))
    fs::create_directory_symlink(repo / "tests" / "bench" / "fixtures" / "kernels" / "planted_scale",
                                 src / "kernels" / "planted_scale");
  fs::remove(build / "ktune-build.json");

  const std::string cmd = "CMAKE=\"" KTUNE_TEST_CMAKE "\" bash \"" + (repo / "tools" / "build-variants.sh").string() +
                          "\" --build-dir \"" + build.string() + "\" --source-dir \"" + src.string() +
                          "\" --jobs 2 --target ktune_bench -- -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90"
                          " -DCMAKE_CUDA_COMPILER=\"" KTUNE_TEST_CUDA_COMPILER "\" -DKTUNE_BUILD_TESTS=OFF"
                          " -DKTUNE_INSTALL=OFF -DKTUNE_SHARDS_PER_OP=4"
                          // Host code at -O1, as the tests' own (tests/CMakeLists.txt): half the compile time.
                          " -DCMAKE_CXX_FLAGS_RELEASE=\"-O1 -DNDEBUG\" -DCMAKE_CUDA_FLAGS_RELEASE=\"-O1 -DNDEBUG\"";
  int status = -1;
  const std::string log = run(cmd, status);
  ASSERT_EQ(status, 0) << log;

  std::ifstream in(build / "ktune-build.json");
  ASSERT_TRUE(in) << "no ktune-build.json\n" << log;
  nlohmann::json report;
  ASSERT_NO_THROW(report = nlohmann::json::parse(in)) << log;
  EXPECT_EQ(report.at("status"), "ok");
  EXPECT_EQ(report.at("skipped_shards"), nlohmann::json::array({"planted_scale.sm90.3"}));
  EXPECT_TRUE(report.at("excluded_ops").empty());

  // Feasible points in space order: tpb_64.vb_4, tpb_64.vb_16, tpb_128.vb_4, tpb_128.vb_16: shard 3 holds
  // the planted one alone.
  ASSERT_EQ(report.at("failures").size(), 1u) << report.dump(2);
  const nlohmann::json& f = report.at("failures")[0];
  EXPECT_EQ(f.at("target"), "ktune_variants_planted_scale_sm90_3");
  EXPECT_EQ(f.at("kind"), "shard");
  EXPECT_EQ(f.at("left_out"), "planted_scale.sm90.3");
  EXPECT_NE(f.at("message").get<std::string>().find("planted compile failure"), std::string::npos) << f.dump(2);
  EXPECT_TRUE(f.at("seconds").is_number());

  int ok_shards = 0;
  for (const nlohmann::json& s : report.at("shards")) {
    if (s.at("shard") == "3") {
      EXPECT_EQ(s.at("status"), "failed");
      continue;
    }
    EXPECT_EQ(s.at("status"), "ok") << s.dump();
    EXPECT_TRUE(s.at("seconds").is_number()) << s.dump();
    ++ok_shards;
  }
  EXPECT_EQ(ok_shards, 4);  // shards 0-2 and the original
  EXPECT_GT(report.at("compile_seconds").get<double>(), 0);

  // The tune goes on: the benchmark links and lists every variant but the planted one.
  const std::string listed = run("\"" + (build / "bench" / "ktune_bench").string() + "\" --list", status);
  ASSERT_EQ(status, 0) << listed;
  for (const char* dtype : {"fp32", "fp16", "bf16"}) {
    const std::string prefix = std::string("planted_scale/") + dtype + "/n=1000/";
    for (const char* id : {"original", "tpb_64.vb_4", "tpb_64.vb_16", "tpb_128.vb_4"})
      EXPECT_NE(listed.find(prefix + id + "\n"), std::string::npos) << prefix + id << "\n" << listed;
  }
  EXPECT_EQ(listed.find("tpb_128.vb_16"), std::string::npos) << listed;

  // A second run starts again with nothing left out, meets the same failure, and says so again.
  const std::string again = run(cmd, status);
  ASSERT_EQ(status, 0) << again;
  std::ifstream in2(build / "ktune-build.json");
  const nlohmann::json report2 = nlohmann::json::parse(in2);
  EXPECT_EQ(report2.at("skipped_shards"), nlohmann::json::array({"planted_scale.sm90.3"}));
}

}  // namespace
