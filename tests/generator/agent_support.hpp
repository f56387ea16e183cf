// tests/generator/agent_support.hpp: what the agent's CPU and GPU tests share: where the sample op's
// files are (tests/generator/data/gelu_tanh_and_mul: S, spec, scripted answers), a scripted run's
// options, and a comparison of two run records.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "generator/agent.hpp"
#include "generator/record/files.hpp"
#include "llm_test_server.hpp"

namespace ktune::gen::test {

/// The source tree: $KTUNE_SOURCE_DIR where set (a copy of the tree on another machine), else the
/// build's.
inline std::filesystem::path source_dir() {
  const char* env = std::getenv("KTUNE_SOURCE_DIR");
  return env && *env ? std::filesystem::path(env) : std::filesystem::path(KTUNE_SOURCE_DIR);
}
inline std::filesystem::path sample_dir() { return source_dir() / "tests/generator/data/gelu_tanh_and_mul"; }
inline std::filesystem::path answer(const std::string& name) { return sample_dir() / "answers" / (name + ".json"); }

/// A script of stored answers, in order.
inline nlohmann::json script_of(const std::vector<std::string>& answers) {
  nlohmann::json s = nlohmann::json::array();
  for (const std::string& a : answers) s.push_back({{"content_file", answer(a).string()}});
  return s;
}

/// Options for a run on the sample op against `base_url`, everything under `work`.
inline AgentOptions sample_options(const std::filesystem::path& work, const std::string& base_url) {
  AgentOptions o;
  o.source = sample_dir() / "original.cu";
  o.spec = sample_dir() / "spec.json";
  o.op = "gelu_tanh_and_mul";
  o.kernels_dir = work / "kernels";
  o.runs_dir = work / "runs";
  o.work_dir = work / "agent";
  o.llm.base_url = base_url;
  o.llm.model = "scripted";
  o.llm.api_key_env = "KTUNE_TEST_LLM_KEY";
  o.llm.json_mode = true;
  o.llm.max_attempts = 2;
  o.llm.backoff_base_s = 0.01;
  o.llm.backoff_cap_s = 0.05;
  o.tuning.quick = true;
  return o;
}

/// The one run folder under runs/<op>/.
inline std::filesystem::path only_run(const std::filesystem::path& runs, const std::string& op) {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(runs / op, ec)) found.push_back(e.path());
  return found.size() == 1 ? found[0] : std::filesystem::path();
}

/// Relative path -> content of every file of a run record, but the logs of tools and session.json
/// (wall times, the folder's name): what a replay must reproduce byte for byte.
inline std::map<std::string, std::string> record_files(const std::filesystem::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = std::filesystem::relative(e.path(), dir).string();
    if (rel.ends_with(".log") || rel == "session.json") continue;
    std::string err;
    out[rel] = read_file(e.path(), err);
  }
  return out;
}

/// Sets an environment variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? ::setenv(name_.c_str(), old_.c_str(), 1) : ::unsetenv(name_.c_str()); }

 private:
  std::string name_, old_;
  bool had_ = false;
};

}  // namespace ktune::gen::test
