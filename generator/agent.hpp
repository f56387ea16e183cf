// generator/agent.hpp: `ktune agent`, the loop of stage 1. From the user's original kernel S and its
// spec.json it derives the kernel folder's fixed parts, then round after round: the planning agent
// decides (rewrite, re-parameterise, stop), the generation agent gets a family from the LLM and builds
// it, the testing agent judges it against S on the GPU, the tuning agent ranks its variants; the
// verdicts and timings go back to the planner and, as findings, into the next prompt. At the end the
// best correct family becomes kernels/<op>/, and runs/<op>/<timestamp>/ holds the record.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "generator/agents/planning.hpp"
#include "generator/agents/testing.hpp"
#include "generator/agents/tuning.hpp"
#include "generator/llm/config.hpp"

namespace ktune::gen {

struct AgentOptions {
  std::filesystem::path source;        ///< S: the user's CUDA file (generator/README.md: its form)
  std::filesystem::path spec;          ///< spec.json in the kernel-folder schema
  std::string op;                      ///< the new op's name (a C++ identifier)
  std::filesystem::path kernels_dir = "kernels";
  std::filesystem::path runs_dir = "runs";
  std::filesystem::path work_dir;      ///< candidates are built and run here (default: beside toolchain.json)
  std::filesystem::path toolchain;     ///< default: the build's generator/toolchain.json
  bool force = false;                  ///< replace an existing kernels/<op>/
  Budget budget;
  int max_fixes = 2;                   ///< follow-ups per round after a malformed answer or failed build
  std::vector<std::string> gpus;       ///< --gpus 0,1: candidates judged at once, one per GPU (empty: one at a time)
  TuningOptions tuning;
  TestingOptions testing;
  llm::ProviderConfig llm;
  std::filesystem::path replay;        ///< answer from this recording (llm.jsonl) instead of the network
};

/// Exit codes of `ktune agent`.
enum AgentExit : int {
  agent_ok = 0,          ///< kernels/<op>/ written
  agent_failed = 1,      ///< no family beat S, the LLM failed, or an input was bad (the message says which)
  agent_usage = 2,       ///< bad command line or a missing setting (named)
  agent_no_gpu = 4,      ///< stopped after generation and compilation: no GPU here
};

/// Runs the loop; progress and the outcome go to `log`.
int run_agent(const AgentOptions& options, std::ostream& log);

/// Reads `ktune agent`'s command line (args after "agent", --help excepted) into `out`. Returns the
/// usage error (agent_command prints it and exits with agent_usage), empty on success. The time limits
/// --gate-timeout, --sanitizer-timeout and --tune-timeout take seconds above zero.
std::string parse_agent_args(const std::vector<std::string>& args, AgentOptions& out);

/// `ktune agent` from the command line (args after "agent").
int agent_command(const std::vector<std::string>& args);

}  // namespace ktune::gen
