// Reports from results: plots, self-containment, determinism, --check, reproduce commands.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

#include "ktune/commands.hpp"
#include "ktune/io.hpp"
#include "ktune/report.hpp"

namespace {

using namespace ktune::tool;
namespace fs = std::filesystem;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(ToolReport, ReproduceCommandSelectsSAndTheVariantExactly) {
  EXPECT_EQ(reproduce_command("silu_and_mul", "bf16", "tokens=16,d=11008", "tpb_256.vb_16"),
            "build/bench/ktune_bench --ops silu_and_mul --dtypes bf16 --shapes 'tokens=16,d=11008' "
            "--variants '^(original|tpb_256\\.vb_16)$'");
  EXPECT_EQ(reproduce_command("op", "fp32", "tokens=1", "original"),
            "build/bench/ktune_bench --ops op --dtypes fp32 --shapes 'tokens=1' --variants '^original$'");
}

class ToyReports : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ktune_report_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/kernels/toyop");
    const std::string data = KTUNE_TOOL_TEST_DATA;
    fs::copy_file(data + "/kernels/toyop/spec.json", dir_ + "/kernels/toyop/spec.json");
    ASSERT_EQ(run_ktune({"select", "--raw", data + "/raw/sweep.json", data + "/raw/retest.json", "--kernels",
                         dir_ + "/kernels", "--results", dir_ + "/reports", "--build-json", "none"}),
              exit_ok);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ToyReports, PagesHavePlotsTablesAndNoExternalReferences) {
  ASSERT_EQ(run_ktune({"report", "--results", dir_ + "/reports"}), exit_ok);
  const std::string out = dir_ + "/reports/nvidia-h200/";
  const std::string html = read_file(out + "toyop.html");
  EXPECT_EQ(count(html, "<svg"), op_page_plots);
  EXPECT_EQ(count(read_file(out + "index.html"), "<svg"), index_page_plots);
  for (const char* external : {"http:", "https:", "<script", "<link", "<img", "url("}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
    EXPECT_EQ(read_file(out + "index.html").find(external), std::string::npos) << external;
  }
  // Excluded variants with their reasons, the noise band and a reproduce command per row.
  EXPECT_NE(html.find("tpb_512.vb_8.pdl_0"), std::string::npos);
  EXPECT_NE(html.find("40 bytes of local memory"), std::string::npos);
  EXPECT_EQ(count(html, "build/bench/ktune_bench --ops toyop"), 12);
  const std::string md = read_file(out + "toyop.md");
  EXPECT_NE(md.find("| tokens=16,d=4096 |"), std::string::npos);
  EXPECT_NE(md.find("1.0% (retest)"), std::string::npos);
  EXPECT_NE(read_file(out + "index.md").find("[toyop](toyop.md)"), std::string::npos);
}

TEST_F(ToyReports, ReportsAreDeterministicAndCheckDetectsEdits) {
  const std::vector<std::string> gen = {"report", "--results", dir_ + "/reports"};
  ASSERT_EQ(run_ktune(gen), exit_ok);
  const std::string path = dir_ + "/reports/nvidia-h200/toyop.html";
  const std::string first = read_file(path);
  EXPECT_EQ(first.find(dir_), std::string::npos);
  ASSERT_EQ(run_ktune(gen), exit_ok);
  EXPECT_EQ(read_file(path), first);
  EXPECT_EQ(run_ktune({"report", "--results", dir_ + "/reports", "--check"}), exit_ok);
  write_atomic(dir_ + "/reports/nvidia-h200/index.md", "stale\n");
  EXPECT_EQ(run_ktune({"report", "--results", dir_ + "/reports", "--check"}), exit_failure);
}

}  // namespace
