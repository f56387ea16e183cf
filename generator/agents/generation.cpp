// generator/agents/generation.cpp: the generation agent (generation.hpp).
#include "generator/agents/generation.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "generator/record/files.hpp"

namespace ktune::gen {

namespace fs = std::filesystem;

std::string write_kernel_folder(const fs::path& dir, const std::vector<PromptFile>& derived, const Answer& answer) {
  for (const PromptFile& f : derived)
    if (std::string e = write_file_atomic(dir / f.name, f.content); !e.empty()) return e;
  if (std::string e = write_file_atomic(dir / "space.hpp", answer.space_hpp); !e.empty()) return e;
  return write_file_atomic(dir / "family.cuh", answer.family_cuh);
}

GenerationResult generate(const GenerationContext& ctx, const std::string& prompt, llm::Client& client,
                          const Toolchain& tc, const fs::path& root, const RunRecord& record, int round, int max_fixes) {
  GenerationResult g;
  std::vector<llm::Message> messages{llm::Message::system(ctx.system_prompt), llm::Message::user(prompt)};
  std::string build_log;
  for (int attempt = 0; attempt <= max_fixes; ++attempt) {
    const int k = attempt + 1;
    (void)record.write_round(round, fmt::format("prompt-{}.md", k), messages.back().content);
    const llm::ChatResult r = client.chat(messages);
    ++g.exchanges;
    nlohmann::ordered_json answer_record = {{"ok", r.ok}, {"finish_reason", r.finish_reason},
                                            {"usage", llm::to_json(r.usage)}, {"content", r.content}};
    if (!r.ok) answer_record["error"] = r.error;
    (void)record.write_round(round, fmt::format("answer-{}.json", k), answer_record.dump(2) + "\n");
    if (!r.ok) {
      g.llm_failed = true;
      g.error = std::string("the LLM call failed (") + llm::failure_name(r.failure) + "): " + r.error;
      break;
    }
    messages.push_back(llm::Message::assistant(r.content));

    Answer a;
    std::string problem = parse_answer(r.content, a);
    if (problem.empty()) problem = check_answer(a);
    if (!problem.empty()) {
      g.error = "the answer was refused: " + problem;
      messages.push_back(llm::Message::user(fix_prompt("answer check", problem + "\n")));
      continue;
    }
    g.answer = a;
    (void)record.write_round(round, "space.hpp", a.space_hpp);
    (void)record.write_round(round, "family.cuh", a.family_cuh);
    if (std::string e = write_kernel_folder(root / "kernels" / ctx.op, ctx.derived, a); !e.empty()) {
      g.error = e;
      break;
    }
    g.build = build_candidate(tc, ctx.op, root);
    build_log += fmt::format("# attempt {}\n{}", k, g.build.log);
    (void)record.write_round(round, "build.log", build_log);
    if (g.build.ok) {
      g.ok = true;
      g.error.clear();
      break;
    }
    // One line for the verdict (the first error); the whole messages go back to the LLM and into the record.
    std::string first = g.build.diagnostics.substr(0, g.build.diagnostics.find('\n'));
    if (first.size() > 240) first = first.substr(0, 240) + "...";
    g.error = fmt::format("the build failed at the {} stage{}: {}", g.build.stage, g.build.timed_out ? " (time limit)" : "", first);
    messages.push_back(llm::Message::user(fix_prompt(g.build.stage, g.build.diagnostics)));
  }
  return g;
}

}  // namespace ktune::gen
