// generator/agents/generation.hpp: the generation agent. It asks the LLM for a family (space.hpp and
// family.cuh) for the planner's decision, checks the answer, writes the candidate's kernel folder into
// its work folder (the derived files plus the two answered ones) and builds it; a malformed answer or
// a failed build goes back to the LLM with the messages, a bounded number of times.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "generator/agents/answer.hpp"
#include "generator/agents/prompts.hpp"
#include "generator/llm/client.hpp"
#include "generator/record/run_record.hpp"
#include "generator/toolchain/toolchain.hpp"

namespace ktune::gen {

/// What stays the same for every round of a run.
struct GenerationContext {
  std::string op;
  std::string system_prompt;
  std::vector<PromptFile> derived;   ///< the generated files of the kernel folder (all but the two answered)
};

struct GenerationResult {
  bool ok = false;            ///< an answer that built
  bool llm_failed = false;    ///< the LLM could not be reached or kept answering unusably (stop the run)
  std::string error;          ///< !ok: why (the last build's stage and messages, or the LLM's failure)
  Answer answer;              ///< the last usable answer
  CandidateBuild build;       ///< its build
  int exchanges = 0;          ///< LLM calls this round
};

/// One round: prompt, answer, check, build, and up to max_fixes follow-ups. Records prompt-K.md,
/// answer-K.json, space.hpp, family.cuh and build.log in the round's folder. The candidate's files go
/// to root/kernels/<op>/.
GenerationResult generate(const GenerationContext& ctx, const std::string& prompt, llm::Client& client,
                          const Toolchain& tc, const std::filesystem::path& root, const RunRecord& record, int round,
                          int max_fixes);

/// Writes the kernel folder of a candidate: the derived files and the answer's two files.
std::string write_kernel_folder(const std::filesystem::path& dir, const std::vector<PromptFile>& derived,
                                const Answer& answer);

}  // namespace ktune::gen
