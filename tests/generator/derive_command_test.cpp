// tests/generator/derive_command_test.cpp: `ktune derive` (generator/derive/command.hpp) on the tutorial's
// op (examples/03_your_own_kernel): the derived files it writes are the ones the example commits (so the
// tutorial cannot drift from the generator), the default tuned table once space.hpp exists (space probe
// with the build's nvcc) and never a table with tuned rows, nothing rewritten when nothing changed, --force needed to replace a derived file
// that differs, the hand-written files never touched, and clear failures that change nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "generator/derive/command.hpp"
#include "generator/derive/derive.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path example = fs::path(KTUNE_SOURCE_DIR) / "examples" / "03_your_own_kernel";
const fs::path committed = example / "kernels" / "add_bias";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

class DeriveCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    kernels_ = fs::path(KTUNE_TEST_WORK_DIR) / "derive_command" /
               ::testing::UnitTest::GetInstance()->current_test_info()->name() / "kernels";
    fs::remove_all(kernels_.parent_path());
    fs::create_directories(kernels_);
  }
  int derive(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{(example / "add_bias.cu").string(), "--spec", (example / "add_bias.spec.json").string(),
                                  "--name", "add_bias", "--kernels", kernels_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return ktune::gen::derive_command(args);
  }
  fs::path folder() const { return kernels_ / "add_bias"; }
  fs::path kernels_;
};

TEST_F(DeriveCommand, WritesTheDerivedFilesTheTutorialCommits) {
  ASSERT_EQ(derive(), 0);
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(folder())) {
    const std::string name = entry.path().filename().string();
    ASSERT_TRUE(fs::exists(committed / name)) << name << " is derived but not committed with the example";
    EXPECT_EQ(slurp(entry.path()), slurp(committed / name))
        << "examples/03_your_own_kernel/kernels/add_bias/" << name << " differs from what `ktune derive` writes now: "
        << "regenerate it with the command in examples/03_your_own_kernel/README.md";
    ++compared;
  }
  EXPECT_EQ(compared, 8);  // spec.json, args.hpp, original.cuh, harness.hpp, family_base.cuh, add_bias.{hpp,cuh,cu}
  EXPECT_FALSE(fs::exists(folder() / "space.hpp"));
  EXPECT_FALSE(fs::exists(folder() / "tuned.cuh")) << "no tuned table before space.hpp exists";
}

TEST_F(DeriveCommand, DerivesTheDefaultTableFromSpaceHppAndNeverTouchesHandWrittenFilesOrATunedTable) {
  put(folder() / "space.hpp", slurp(committed / "space.hpp"));
  put(folder() / "family.cuh", "// a family in progress\n");
  ASSERT_EQ(derive(), 0);
  const std::string table = slurp(folder() / "tuned.cuh");
  EXPECT_NE(table.find("space_hash = 0x"), std::string::npos);
  EXPECT_NE(table.find("entries = nullptr"), std::string::npos) << "a default-only table has no tuned rows";
  EXPECT_EQ(slurp(folder() / "family.cuh"), "// a family in progress\n");
  EXPECT_EQ(slurp(folder() / "space.hpp"), slurp(committed / "space.hpp"));

  // A changed space gives another default table: derived like the other files, so replaced with --force.
  std::string space = slurp(committed / "space.hpp");
  const std::string rows = R"(ktune::param("rpb", "rows", {1, 2, 4, 8}))";
  ASSERT_NE(space.find(rows), std::string::npos);
  put(folder() / "space.hpp", space.replace(space.find(rows), rows.size(), R"(ktune::param("rpb", "rows", {1, 2, 4}))"));
  EXPECT_EQ(derive(), 1);
  EXPECT_EQ(slurp(folder() / "tuned.cuh"), table);
  ASSERT_EQ(derive({"--force"}), 0);
  EXPECT_NE(slurp(folder() / "tuned.cuh"), table);
  EXPECT_NE(slurp(folder() / "tuned.cuh").find("entries = nullptr"), std::string::npos);

  // A table with tuned rows is kept, --force or not: a tune wrote it.
  put(folder() / "tuned.cuh", "// tuned rows\n");
  ASSERT_EQ(derive({"--force"}), 0);
  EXPECT_EQ(slurp(folder() / "tuned.cuh"), "// tuned rows\n");
}

TEST_F(DeriveCommand, RewritesNothingUnchangedAndNeedsForceToReplaceAChangedDerivedFile) {
  ASSERT_EQ(derive(), 0);
  const fs::path args = folder() / "args.hpp";
  const std::string derived = slurp(args);
  const auto stamp = fs::last_write_time(folder() / "harness.hpp");
  ASSERT_EQ(derive(), 0);
  EXPECT_EQ(fs::last_write_time(folder() / "harness.hpp"), stamp) << "an unchanged file was rewritten";

  put(args, derived + "// edited by hand\n");
  EXPECT_EQ(derive(), 1);
  EXPECT_EQ(slurp(args), derived + "// edited by hand\n") << "a refused run changed a file";
  EXPECT_EQ(derive({"--force"}), 0);
  EXPECT_EQ(slurp(args), derived);
}

TEST_F(DeriveCommand, FailsClearlyAndWritesNothingOnBadInput) {
  EXPECT_EQ(ktune::gen::derive_command({(example / "add_bias.cu").string(), "--name", "add_bias"}), 2) << "no --spec";
  EXPECT_EQ(ktune::gen::derive_command({"--spec", "x.json", "--name", "add_bias"}), 2) << "no S";
  EXPECT_EQ(ktune::gen::derive_command({(example / "add_bias.cu").string(), "--spec", (example / "add_bias.spec.json").string(),
                                        "--name", "add_bias", "--frobnicate"}),
            2);
  // The spec names add_bias: deriving it under another name is refused.
  EXPECT_EQ(ktune::gen::derive_command({(example / "add_bias.cu").string(), "--spec", (example / "add_bias.spec.json").string(),
                                        "--name", "other_op", "--kernels", kernels_.string()}),
            1);
  EXPECT_EQ(ktune::gen::derive_command({(kernels_ / "missing.cu").string(), "--spec", (example / "add_bias.spec.json").string(),
                                        "--name", "add_bias", "--kernels", kernels_.string()}),
            1);
  // A space.hpp that does not compile: the probe fails, and nothing is written.
  put(folder() / "space.hpp", "#error not a space\n");
  EXPECT_EQ(derive(), 1);
  EXPECT_FALSE(fs::exists(folder() / "args.hpp"));
  EXPECT_FALSE(fs::exists(folder() / "tuned.cuh"));
  EXPECT_FALSE(fs::exists(kernels_ / "other_op"));
}

}  // namespace
