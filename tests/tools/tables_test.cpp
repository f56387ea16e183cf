// Tuned tables from results: bucket bounds, merging, determinism, --check, atomic writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

#include "ktune/cli.hpp"
#include "ktune/io.hpp"
#include "ktune/list.hpp"
#include "ktune/tables.hpp"

namespace {

using namespace ktune::tool;
using ktune::cli::run_ktune;
namespace fs = std::filesystem;

TEST(ToolTables, TokenBucketsEndAtGeometricMidpoints) {
  EXPECT_EQ(bucket_upper_bounds({1, 16, 128, 512, 2048, 8192}),
            (std::vector<std::int64_t>{4, 45, 256, 1024, 4096, INT64_MAX}));
  // sqrt(11008 * 13824) = 12335.9, sqrt(13824 * 28672) = 19908.8
  EXPECT_EQ(bucket_upper_bounds({11008, 13824, 28672}), (std::vector<std::int64_t>{12335, 19908, INT64_MAX}));
  EXPECT_EQ(bucket_upper_bounds({7, 8}), (std::vector<std::int64_t>{7, INT64_MAX}));  // sqrt(56) = 7.48
  EXPECT_EQ(bucket_upper_bounds({5}), (std::vector<std::int64_t>{INT64_MAX}));
}

/// A scratch copy of the toy kernel folder and results produced by `ktune select` from the fixtures.
class ToyTree : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ktune_tables_test_" + std::to_string(::getpid()));
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

TEST_F(ToyTree, RowsAreMergedBucketsInLookupOrder) {
  const auto all = load_all_results(dir_ + "/reports");
  ASSERT_EQ(all.size(), 1u);
  const auto rows = table_rows(all[0].second);
  ASSERT_EQ(rows.size(), 7u);  // fp32: 2 + 2, bf16: 2 + 1 (d=4096 has one winner for every token count)
  EXPECT_EQ(rows[0].dtype, "fp32");
  EXPECT_EQ(rows[0].id, "tpb_64.vb_4.pdl_0");
  EXPECT_EQ(rows[0].tokens_max, 4);
  EXPECT_EQ(rows[0].width_min, 0);
  EXPECT_EQ(rows[0].width_max, 2048);
  EXPECT_EQ(rows[1].tokens_max, INT64_MAX);
  EXPECT_EQ(rows[1].provenance.size(), 2u);  // tokens 16 and 128 merged
  EXPECT_EQ(rows[2].width_min, 2049);
  EXPECT_EQ(rows[2].width_max, INT64_MAX);
  EXPECT_EQ(rows[6].dtype, "bf16");
  EXPECT_EQ(rows[6].id, "tpb_512.vb_16.pdl_1");
  EXPECT_EQ(rows[6].tokens_max, INT64_MAX);
  EXPECT_EQ(rows[6].provenance.size(), 3u);
}

TEST_F(ToyTree, TablesAreDeterministicAndCheckDetectsEdits) {
  const std::vector<std::string> gen = {"tables", "--results", dir_ + "/reports", "--kernels", dir_ + "/kernels"};
  ASSERT_EQ(run_ktune(gen), exit_ok);
  const std::string path = dir_ + "/kernels/toyop/tuned.cuh";
  const std::string first = read_file(path);
  EXPECT_NE(first.find("Do not edit: regenerate with `make tune` or `ktune tables`"), std::string::npos);
  EXPECT_NE(first.find("nvidia-h200/toyop.json"), std::string::npos);
  EXPECT_NE(first.find("commit 0123abc"), std::string::npos);
  EXPECT_EQ(first.find(dir_), std::string::npos) << "the banner must not depend on where the files are";
  ASSERT_EQ(run_ktune(gen), exit_ok);
  EXPECT_EQ(read_file(path), first);

  std::vector<std::string> check = gen;
  check.push_back("--check");
  EXPECT_EQ(run_ktune(check), exit_ok);
  write_atomic(path, first + "// edited by hand\n");
  EXPECT_EQ(run_ktune(check), exit_failure);
  fs::remove(path);
  EXPECT_EQ(run_ktune(check), exit_failure);
}

// A table across GPUs may take a GPU's rows from results of an older space (tuned before points were added):
// its header names them stale, and its hash is the current space's. Without a current space among the
// inputs, results of two spaces are refused: no space says what their ids mean.
TEST_F(ToyTree, ResultsOfAnOlderSpaceGiveTheirRowsAndAreNamedStale) {
  const auto all = load_all_results(dir_ + "/reports");
  ASSERT_EQ(all.size(), 1u);
  const LoadedResults& current = all[0].second.at(0);
  LoadedResults older = current;
  older.label = "nvidia-h100-80gb-hbm3/toyop.json";
  older.selection.gpu = "NVIDIA H100 80GB HBM3";
  older.selection.gpu_slug = "nvidia-h100-80gb-hbm3";
  older.selection.space_hash = "0x0000000000000001";
  const std::string& hash = current.selection.space_hash;

  const std::string table = generate_table("toyop", {current, older}, hash);
  EXPECT_NE(table.find("space_hash = " + hash + "ull"), std::string::npos);
  const std::size_t stale = table.find("stale: measured on space 0x0000000000000001");
  ASSERT_NE(stale, std::string::npos);
  EXPECT_LT(table.rfind("nvidia-h100-80gb-hbm3/toyop.json", stale), stale) << "under the older input's line";
  EXPECT_NE(table.find("NVIDIA H100 80GB HBM3"), std::string::npos) << "its rows are in the table";
  EXPECT_EQ(generate_table("toyop", {current}, hash).find("stale: measured"), std::string::npos);

  EXPECT_THROW(generate_table("toyop", {current, older}), ToolError);  // no current space known
  EXPECT_THROW(generate_table("toyop", {current, older}, "0x00000000000000ff"), ToolError);
}

TEST(ToolList, AnIdNamesAPointWhenEveryFieldIsAParameterWithOneOfItsValues) {
  const SpaceInfo* rmsnorm = nullptr;
  for (const SpaceInfo& s : known_spaces())
    if (s.op == "rmsnorm") rmsnorm = &s;
  ASSERT_NE(rmsnorm, nullptr);
  EXPECT_TRUE(names_point(*rmsnorm, "vb_16.vpt_4.stage_7.cs_1.pdl_1"));
  EXPECT_TRUE(names_point(*rmsnorm, "vb_0.vpt_8.stage_7.cs_8.pdl_0"));   // a point, though not a feasible one
  EXPECT_FALSE(names_point(*rmsnorm, "vb_16.vpt_4.stage_9.cs_1.pdl_1"));  // no such stage
  EXPECT_FALSE(names_point(*rmsnorm, "vb_16.vpt_4.cs_1.stage_7.pdl_1"));  // fields out of order
  EXPECT_FALSE(names_point(*rmsnorm, "vb_16.vpt_4.stage_7.cs_1"));        // one field short
  EXPECT_FALSE(names_point(*rmsnorm, "original"));
}

TEST(ToolIo, WriteAtomicReplacesWholeFilesAndSkipsIdenticalContent) {
  const std::string dir = fs::temp_directory_path() / ("ktune_io_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string path = dir + "/a/b/file.txt";
  EXPECT_TRUE(write_atomic(path, "one"));
  EXPECT_EQ(read_file(path), "one");
  EXPECT_FALSE(write_atomic(path, "one"));
  EXPECT_TRUE(write_atomic(path, "two"));
  EXPECT_EQ(read_file(path), "two");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir + "/a/b")) {
    ++entries;
    EXPECT_EQ(e.path().filename(), "file.txt");
  }
  EXPECT_EQ(entries, 1);
  fs::remove_all(dir);
}

TEST(ToolIo, NumbersFormatTheSameEverywhere) {
  EXPECT_EQ(fixed(3.14159, 2), "3.14");
  EXPECT_EQ(fixed(-0.0001, 2), "0.00");
  EXPECT_EQ(sig3(12.345), "12.3");
  EXPECT_EQ(sig3(1234.5), "1234");  // fixed(.., 0) rounds half to even in fmt: 1234.5 -> "1234"
  EXPECT_EQ(sig3(0.04567), "0.0457");
  EXPECT_EQ(content_hash(""), "0xcbf29ce484222325");
}

}  // namespace
