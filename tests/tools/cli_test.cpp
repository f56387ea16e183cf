// tests/tools/cli_test.cpp: the command table and the parsing every `ktune` command shares (tools/ktune/cli.hpp):
// one --help layout, both value forms, the exit codes, suggestions for typos.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ktune/cli.hpp"

namespace {

using namespace ktune::cli;

TEST(ToolCli, EveryCommandAnswersHelpInTheSameLayout) {
  for (const Command& c : commands()) {
    if (std::string(c.name) == "run") continue;  // hands everything, --help too, to ktune_bench (exec)
    testing::internal::CaptureStdout();
    const int rc = run_ktune({c.name, "--help"});
    const std::string help = testing::internal::GetCapturedStdout();
    EXPECT_EQ(rc, exit_ok) << c.name;
    EXPECT_NE(help.find("usage: ktune " + std::string(c.name)), std::string::npos) << c.name << ":\n" << help;
    EXPECT_NE(help.find("-h,--help"), std::string::npos) << c.name;
  }
}

TEST(ToolCli, BothValueFormsTheLastOneWinsAndTheExitCodesAreShared) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--out", "a", "--name=b", "c"}, {"--out=a", "--name", "x", "--name", "b", "c"}}) {
    CLI::App app{"", "ktune test"};
    style(app);
    std::string out, name, positional;
    app.add_option("--out", out);
    app.add_option("--name", name);
    app.add_option("file", positional);
    const Parsed p = parse_args(app, args);
    EXPECT_FALSE(p.help);
    EXPECT_EQ(p.error, "");
    EXPECT_EQ(out, "a");
    EXPECT_EQ(name, "b");
    EXPECT_EQ(positional, "c");
  }
  CLI::App app{"", "ktune test"};
  style(app);
  std::string out;
  app.add_option("--out", out);
  EXPECT_EQ(parse_args(app, {"--out"}).error, "--out needs a value");
  EXPECT_EQ(parse_args(app, {"stray"}).error, "unexpected argument 'stray'");
  EXPECT_TRUE(parse_args(app, {"-h"}).help);
  EXPECT_EQ(run_ktune({}), exit_usage);
  EXPECT_EQ(run_ktune({"--help"}), exit_ok);
  EXPECT_EQ(run_ktune({"tables", "--results"}), exit_usage);
  EXPECT_EQ(run_ktune({"select", "--raw", "/nonexistent/raw.json"}), exit_failure);
}

TEST(ToolCli, TyposGetTheNearestNames) {
  CLI::App app{"", "ktune test"};
  style(app);
  int topk = 0;
  std::string results;
  app.add_option("--topk", topk);
  app.add_option("--results", results);
  EXPECT_EQ(parse_args(app, {"--tpok", "3"}).error, "unknown option --tpok (did you mean --topk?)");
  EXPECT_EQ(parse_args(app, {"--result=x"}).error, "unknown option --result (did you mean --results?)");
  EXPECT_EQ(parse_args(app, {"--frobnicate"}).error, "unknown option --frobnicate");
  EXPECT_EQ(did_you_mean("selekt", {"select", "list", "report"}), " (did you mean select?)");
  EXPECT_EQ(did_you_mean("xyz", {"select", "list"}), "");
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_ktune({"selekt"}), exit_usage);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("unknown command 'selekt' (did you mean select?)"),
            std::string::npos);
}

TEST(ToolCli, ListsSplitIntoTheirItems) {
  EXPECT_EQ(split_list("0,1"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(split_list("fp16,,bf16,"), (std::vector<std::string>{"fp16", "bf16"}));
  EXPECT_TRUE(split_list("").empty());
}

}  // namespace
