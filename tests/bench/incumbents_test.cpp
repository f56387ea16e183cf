// The incumbents (bench/incumbents.hpp): an earlier tune's winners, read from its results files, only
// those of this GPU model; the committed reports are read as the tune reads them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "bench/incumbents.hpp"

namespace ktune::bench {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ktune-incumbents-" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name) << text; }
};

std::string results(const std::string& op, const std::string& slug, const std::string& winner) {
  return R"({"schema": "ktune.results", "op": ")" + op + R"(", "gpu_slug": ")" + slug +
         R"(", "dtypes": [{"dtype": "bf16", "shapes": [{"shape": "tokens=16,d=64", "winner": ")" + winner +
         R"("}, {"shape": "tokens=1,d=64", "winner": null}]}]})";
}

TEST(BenchIncumbents, TheWinnersOfThisGpuModelByOpDtypeAndShape) {
  TempDir dir;
  dir.write("a.json", results("a", "nvidia-h200", "tpb_256"));
  dir.write("b.json", results("b", "nvidia-h100-80gb-hbm3", "tpb_128"));  // another model: never defended here
  dir.write("index.md", "not a results file");
  Incumbents inc;
  ASSERT_EQ(load_incumbents(dir.path.string(), "nvidia-h200", inc), "");
  EXPECT_EQ(inc.files, 1u);
  EXPECT_EQ(inc.size(), 1u);  // a shape with no winner defends nothing
  EXPECT_EQ(inc.find("a", "bf16", "tokens=16,d=64"), "tpb_256");
  EXPECT_EQ(inc.find("a", "fp16", "tokens=16,d=64"), "");
  EXPECT_EQ(inc.find("b", "bf16", "tokens=16,d=64"), "");
}

TEST(BenchIncumbents, AMissingFolderDefendsNothingAndABrokenFileIsAnError) {
  Incumbents inc;
  EXPECT_EQ(load_incumbents("/nonexistent/ktune/reports", "nvidia-h200", inc), "");
  EXPECT_EQ(inc.size(), 0u);
  TempDir dir;
  dir.write("a.json", "{\"schema\": \"ktune.results\", ");
  const std::string err = load_incumbents(dir.path.string(), "nvidia-h200", inc);
  EXPECT_NE(err.find("a.json: not a JSON object"), std::string::npos) << err;
}

TEST(BenchIncumbents, TheCommittedReportsGiveAWinnerForEveryShapeTheyTuned) {
  Incumbents inc;
  ASSERT_EQ(load_incumbents(KTUNE_SOURCE_DIR "/reports/nvidia-h200", "nvidia-h200", inc), "");
  EXPECT_GE(inc.files, 4u);
  EXPECT_GE(inc.size(), 100u);
  EXPECT_NE(inc.find("silu_and_mul", "bf16", "tokens=16,d=4096"), "");
}

}  // namespace
}  // namespace ktune::bench
