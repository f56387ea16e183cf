// Tests of `ktune merge-raw` (tools/ktune/merge_raw.cpp): the slices' files merge into one that `ktune select`
// reads as it reads a one-GPU run; inputs that are not slices of one tune are refused by file and field.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "ktune/cli.hpp"
#include "ktune/io.hpp"
#include "ktune/merge_raw.hpp"

namespace {

using namespace ktune::tool;
using ktune::cli::run_ktune;
using ojson = nlohmann::ordered_json;

/// A fresh temporary folder per test, removed at the end.
class MergeRaw : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ktune_merge_raw_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const ojson& j) const {
    write_atomic(path(name), j.dump(2));
    return path(name);
  }
  /// Runs `ktune merge-raw ARGS`; returns (exit code, stderr).
  static std::pair<int, std::string> merge(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"merge-raw"};
    argv.insert(argv.end(), args.begin(), args.end());
    ::testing::internal::CaptureStderr();
    const int rc = run_ktune(argv);
    return {rc, ::testing::internal::GetCapturedStderr()};
  }

  std::filesystem::path dir_;
};

ojson row(const std::string& name, double time_us) {
  return {{"name", name}, {"run_type", "iteration"}, {"iterations", 10}, {"real_time", time_us}, {"time_unit", "us"}};
}

/// A small slice file: the references, its shapes' copy rows and variants, counters.
ojson slice(int k, const std::string& op) {
  ojson c = {{"gpu", "NVIDIA H200"}, {"gpu_slug", "nvidia-h200"},   {"arch", "90"},
             {"git_commit", "abc"},  {"ktune_version", "0.1.0"},     {"mode", "search"},
             {"quick", "0"},        {"complete", "1"},               {"copy_ceiling_gbps", k == 0 ? "4257.1" : "4250"},
             {"run_seed", std::to_string(100 + k)},                 {"screened", k == 0 ? "10" : "5"},
             {"finalists", "2"},    {"phase_gate_s", k == 0 ? "1.5" : "2.25"},
             {"phase_gate_cpu_s", "3"}, {"measure_wall_s", k == 0 ? "40.5" : "12"}, {"startup_s", k == 0 ? "1" : "3"},
             {"part_gate_runs_s", k == 0 ? "1" : "0.5"}, {"search_guide_ratio", "1.3"}, {"search_rounds", "5"}};
  ojson rows = ojson::array();
  rows.push_back(row("ktune/copy_ceiling", 500 + k));
  rows.push_back(row("ktune/empty_kernel", 2 + k));
  rows.push_back(row("ktune/copy_same_size/" + op + "/bf16/tokens=1,d=64", 3));
  rows.push_back(row(op + "/bf16/tokens=1,d=64/original", 5));
  rows.push_back(row(op + "/bf16/tokens=1,d=64/tpb_64", 4));
  ojson refined = row(op + "/bf16/tokens=1,d=64/tpb_64", 4.1);
  refined["rounds"] = 3;
  rows.push_back(refined);  // a finalist: its screen, then its refined row, under one name
  return {{"context", c}, {"benchmarks", rows}};
}

std::vector<std::string> names_of(const ojson& doc) {
  std::vector<std::string> out;
  for (const ojson& r : doc.at("benchmarks")) out.push_back(r.at("name").get<std::string>());
  return out;
}

TEST_F(MergeRaw, SumsCountersAndKeepsRowsInInputOrder) {
  const std::string a = write("a.json", slice(0, "opa")), b = write("b.json", slice(1, "opb"));
  const auto [rc, err] = merge({"--out", path("out/merged.json"), a, b});
  ASSERT_EQ(rc, exit_ok) << err;
  const ojson m = ojson::parse(read_file(path("out/merged.json")));
  const ojson& c = m.at("context");
  EXPECT_EQ(c.at("screened"), "15");
  EXPECT_EQ(c.at("finalists"), "4");
  EXPECT_EQ(c.at("phase_gate_s"), "3.75");
  EXPECT_EQ(c.at("part_gate_runs_s"), "1.5");  // a part of a phase, summed as the phase
  EXPECT_EQ(c.at("phase_gate_cpu_s"), "6");
  EXPECT_EQ(c.at("measure_wall_s"), "40.5");  // the slices ran at once: the largest
  EXPECT_EQ(c.at("startup_s"), "3");
  EXPECT_EQ(c.at("copy_ceiling_gbps"), "4257.1");  // the first file's
  EXPECT_EQ(c.at("slices"), "2");
  EXPECT_EQ(c.at("slice0.copy_ceiling_gbps"), "4257.1");
  EXPECT_EQ(c.at("slice1.copy_ceiling_gbps"), "4250");
  EXPECT_EQ(c.at("slice0.run_seed"), "100");
  EXPECT_EQ(c.at("slice1.run_seed"), "101");
  EXPECT_EQ(c.begin().key(), "gpu");  // the first file's order
  const std::vector<std::string> expected{"ktune/copy_ceiling",
                                          "ktune/empty_kernel",
                                          "ktune/copy_same_size/opa/bf16/tokens=1,d=64",
                                          "opa/bf16/tokens=1,d=64/original",
                                          "opa/bf16/tokens=1,d=64/tpb_64",
                                          "opa/bf16/tokens=1,d=64/tpb_64",
                                          "ktune/copy_same_size/opb/bf16/tokens=1,d=64",
                                          "opb/bf16/tokens=1,d=64/original",
                                          "opb/bf16/tokens=1,d=64/tpb_64",
                                          "opb/bf16/tokens=1,d=64/tpb_64"};
  EXPECT_EQ(names_of(m), expected);
  EXPECT_EQ(m.at("benchmarks")[0].at("real_time"), 500.0);  // the first file's copy ceiling row
  EXPECT_EQ(m.at("benchmarks")[5].at("rounds"), 3);
  for (const auto& e : std::filesystem::directory_iterator(path("out")))
    EXPECT_EQ(e.path().filename().string(), "merged.json");  // no temporary file left behind
}

TEST_F(MergeRaw, RefusesWhatIsNotASliceOfOneTune) {
  const std::string a = write("a.json", slice(0, "opa"));
  const auto refused = [&](const std::string& file, const std::vector<std::string>& phrases) {
    const auto [rc, err] = merge({"--out", path("out.json"), a, file});
    EXPECT_EQ(rc, exit_failure) << file;
    EXPECT_NE(err.find(file), std::string::npos) << err;
    for (const std::string& p : phrases) EXPECT_NE(err.find(p), std::string::npos) << err;
    EXPECT_FALSE(file_exists(path("out.json")));
  };
  for (const char* field : {"gpu_slug", "arch", "ktune_version", "git_commit", "mode", "quick"}) {
    ojson b = slice(1, "opb");
    b["context"][field] = "other";
    refused(write(std::string("differs_") + field + ".json", b), {std::string("\"") + field + "\"", "other"});
  }
  ojson every_shape = slice(1, "opb");  // another way of searching: --screen-every-shape
  every_shape["context"]["search_guide_ratio"] = "0";
  refused(write("every_shape.json", every_shape), {"\"search_guide_ratio\"", "\"0\""});
  ojson no_settings = slice(1, "opb");
  no_settings["context"].erase("search_rounds");
  refused(write("no_settings.json", no_settings), {"\"search_rounds\"", "missing"});
  ojson incomplete = slice(1, "opb");
  incomplete["context"]["complete"] = "0";
  refused(write("incomplete.json", incomplete), {"\"complete\"", "\"0\""});
  ojson no_complete = slice(1, "opb");
  no_complete["context"].erase("complete");
  refused(write("no_complete.json", no_complete), {"\"complete\"", "missing"});
  refused(write("google_benchmark.json", ojson{{"context", {{"date", "x"}}}, {"benchmarks", ojson::array()}}),
          {"not ktune_bench output", "ktune_version"});
  refused(write("no_benchmarks.json", ojson{{"context", slice(1, "opb")["context"]}}), {"\"benchmarks\""});
  refused(write("overlap.json", slice(1, "opa")), {"opa/bf16/tokens=1,d=64", a});
  ojson not_a_number = slice(1, "opb");
  not_a_number["context"]["screened"] = "many";
  refused(write("nan.json", not_a_number), {"\"screened\"", "many"});
  write_atomic(path("broken.json"), "{\"context\": ");
  refused(path("broken.json"), {"not valid JSON"});
}

TEST_F(MergeRaw, UsageErrors) {
  EXPECT_EQ(merge({"--help"}).first, exit_ok);
  EXPECT_EQ(merge({}).first, exit_usage);
  EXPECT_EQ(merge({path("a.json")}).first, exit_usage);                       // no --out
  EXPECT_EQ(merge({"--out", path("o.json")}).first, exit_usage);              // no input
  EXPECT_EQ(merge({"--out"}).first, exit_usage);                              // --out without a value
  EXPECT_EQ(merge({"--frob", "--out", "o", path("a.json")}).first, exit_usage);  // unknown option
  EXPECT_EQ(merge({"--out", path("o.json"), path("missing.json")}).first, exit_failure);
}

TEST_F(MergeRaw, NamesKeepsTheListedRowsAndTheReferences) {
  const std::string a = write("a.json", slice(0, "opa"));
  write_atomic(path("names.txt"),
               "opa/bf16/tokens=1,d=64/tpb_64\r\nktune/copy_same_size/opa/bf16/tokens=1,d=64\n\nnot/in/the/run\n");
  const auto [rc, err] = merge({"--names", path("names.txt"), "--out", path("s.json"), a});
  ASSERT_EQ(rc, exit_ok) << err;
  const std::vector<std::string> expected{"ktune/copy_ceiling", "ktune/empty_kernel",
                                          "ktune/copy_same_size/opa/bf16/tokens=1,d=64",
                                          "opa/bf16/tokens=1,d=64/tpb_64", "opa/bf16/tokens=1,d=64/tpb_64"};
  EXPECT_EQ(names_of(ojson::parse(read_file(path("s.json")))), expected);
}

// The key property: the committed run cut into two slices by (op, dtype), merged and selected, gives the
// results files that selecting the whole run gives, byte for byte. The one difference allowed is each
// results file's `sources[].hash`, the hash of the raw file's bytes (a different file: another context).
/// `text` without the lines of what the run's GPU step cost (the environment's measure_wall_s, startup_s,
/// slices, prep_threads, phase_*_s, part_*_s): a merge sums or takes the largest of them, as it should.
std::string without_run_cost(const std::string& text) {
  static const std::regex cost("\"(measure_wall_s|startup_s|slices|prep_threads|phase_[a-z]+_s|part_[a-z_]+_s)\": ");
  std::istringstream in(text);
  std::string out;
  for (std::string line; std::getline(in, line);)
    if (!std::regex_search(line, cost)) out += line + "\n";
  return out;
}

TEST_F(MergeRaw, SelectingMergedSlicesEqualsSelectingTheWholeRun) {
  const std::string source = KTUNE_SOURCE_DIR;
  const std::string gz = source + "/reports/nvidia-h200/raw/search.json.gz";
  if (!file_exists(gz)) GTEST_SKIP() << gz << " is not committed";
  std::filesystem::create_directories(path("whole"));
  const std::string whole = path("whole/search.json");
  ASSERT_EQ(std::system(("gzip -dc '" + gz + "' > '" + whole + "'").c_str()), 0);
  // Only the ops of ktune's own kernels/ (the tutorial's op has its folder in examples/).
  ojson run = ojson::parse(read_file(whole));
  std::set<std::string> ops;  // the ops the selection writes results for
  {
    ojson kept = ojson::array();
    for (const ojson& r : run.at("benchmarks")) {
      std::string name = r.at("name").get<std::string>();
      if (name.rfind("ktune/copy_same_size/", 0) == 0) name = name.substr(std::string("ktune/copy_same_size/").size());
      const std::string op = name.substr(0, name.find('/'));
      if (op != "ktune" && file_exists(source + "/kernels/" + op + "/spec.json")) ops.insert(op);
      if (op == "ktune" || ops.count(op)) kept.push_back(r);
    }
    run["benchmarks"] = kept;
    write("whole/search.json", run);
  }

  // (op, dtype) units in order of first appearance, dealt out to the two slices in turn.
  std::map<std::string, int> slice_of;
  ojson parts[2] = {{{"context", run.at("context")}, {"benchmarks", ojson::array()}},
                    {{"context", run.at("context")}, {"benchmarks", ojson::array()}}};
  for (const ojson& r : run.at("benchmarks")) {
    std::string name = r.at("name").get<std::string>();
    if (name == "ktune/copy_ceiling" || name == "ktune/empty_kernel") {
      for (ojson& p : parts) p["benchmarks"].push_back(r);
      continue;
    }
    const std::string copy_prefix = "ktune/copy_same_size/";
    if (name.rfind(copy_prefix, 0) == 0) name = name.substr(copy_prefix.size());
    const std::size_t op_end = name.find('/'), dtype_end = name.find('/', op_end + 1);
    ASSERT_NE(dtype_end, std::string::npos) << name;
    const std::string unit = name.substr(0, dtype_end);
    const int k = slice_of.emplace(unit, static_cast<int>(slice_of.size() % 2)).first->second;
    parts[k]["benchmarks"].push_back(r);
  }
  ASSERT_GE(slice_of.size(), 2u);
  const std::string s0 = write("s0.json", parts[0]), s1 = write("s1.json", parts[1]);
  std::filesystem::create_directories(path("merged"));
  const std::string merged = path("merged/search.json");  // same file name: sources[].file equal
  const auto [rc, err] = merge({"--out", merged, s0, s1});
  ASSERT_EQ(rc, exit_ok) << err;
  EXPECT_EQ(ojson::parse(read_file(merged)).at("benchmarks").size(), run.at("benchmarks").size());

  for (const auto& [raw, results] : {std::pair{whole, path("results-whole")}, std::pair{merged, path("results-merged")}}) {
    ::testing::internal::CaptureStdout();  // select's summary of every op and dtype
    const int select_rc = run_ktune({"select", "--raw", raw, "--kernels", source + "/kernels", "--results", results,
                                     "--build-json", "none"});
    const std::string summary = ::testing::internal::GetCapturedStdout();
    ASSERT_EQ(select_rc, exit_ok) << summary;
  }
  const std::string whole_hash = content_hash(read_file(whole)), merged_hash = content_hash(read_file(merged));
  ASSERT_NE(whole_hash, merged_hash);
  std::size_t compared = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(path("results-whole"))) {
    if (!e.is_regular_file()) continue;
    const auto rel = std::filesystem::relative(e.path(), path("results-whole"));
    const std::string other = (std::filesystem::path(path("results-merged")) / rel).string();
    ASSERT_TRUE(file_exists(other)) << rel;
    std::string expected = read_file(e.path().string());
    for (std::size_t at = expected.find(whole_hash); at != std::string::npos; at = expected.find(whole_hash, at))
      expected.replace(at, whole_hash.size(), merged_hash);
    EXPECT_TRUE(without_run_cost(read_file(other)) == without_run_cost(expected))
        << rel << " differs between the whole run and the merged slices";
    ++compared;
  }
  ASSERT_GE(ops.size(), 2u);
  EXPECT_EQ(compared, 2 * ops.size());  // per op: the results file and the T4 export
  std::size_t merged_files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(path("results-merged")))
    merged_files += e.is_regular_file();
  EXPECT_EQ(merged_files, compared);
}

}  // namespace
