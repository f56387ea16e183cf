// generator/agents/prompts.hpp: the text the generation agent sends. What the LLM must write is kept
// as small as the method allows: two files (space.hpp, family.cuh) and its reasoning. Everything else
// (the argument struct, the harness, the public API, the judge) is derived from S and the spec by
// deterministic code, and the prompt shows those files so the LLM writes against them.
#pragma once

#include <string>
#include <vector>

namespace ktune::gen {

struct PromptFile {
  std::string name, content;
};

/// The conventions: the kernel-folder contract, the space API, the host adapter's shape, the answer
/// format, the rules a family must follow, one existing family as the example, and the generated files
/// of this op the family builds on.
std::string system_prompt(const std::string& op, const PromptFile& example_space, const PromptFile& example_family,
                          const std::vector<PromptFile>& generated);

struct RoundPrompt {
  int round = 0;
  std::string action;            ///< "rewrite" or "reparam"
  std::string planner_reason;
  std::string s_name, s_source, spec_json;
  std::string target_summary;    ///< empty when the target is S
  std::string target_space, target_family;
  std::string findings;          ///< the testing and tuning agents' findings on the target
  std::string history;           ///< the planner's summary of earlier rounds (bounded)
};

std::string round_prompt(const RoundPrompt& p);

/// The follow-up after a failed build or a malformed answer.
std::string fix_prompt(const std::string& stage, const std::string& messages);

}  // namespace ktune::gen
