// generator/record/run_record.hpp: the record of one `ktune agent` run, under runs/<op>/<timestamp>/
// (git-ignored). Everything a person or a replay needs, written as it happens:
//
//   run.json              the settings of the run and, at the end, its outcome
//   llm.jsonl             every LLM exchange (generator/llm: keys redacted); `--replay` reads it
//   system-prompt.md      the conventions every call carries (the example family, the op's generated files)
//   round-NN/             per round: decision.json (the planner's choice and why), prompt-K.md and
//                         answer-K.json (each exchange of the round), space.hpp and family.cuh (the
//                         candidate), build.log, judge.log, tune.log, results.json (the candidate's
//                         results file), sanitizer.log, verdict.json (the judge's verdict and findings)
//   planner.json          the planner's tree after every round
//   summary.md            what was tried, what won, by how much over S, and why (Markdown)
//   result.json           exit code, outcome, best node, token usage
//   session.json          what a replay does not reproduce: the start time, wall times per round
//
// Every file is written atomically. Nothing in it depends on the clock but session.json and the
// folder's name, so a replayed run writes the same bytes elsewhere (generator/README.md).
#pragma once

#include <filesystem>
#include <string>

namespace ktune::gen {

class RunRecord {
 public:
  /// Creates runs_dir/<op>/<stamp>/ (a suffix keeps two runs in the same second apart).
  static std::string create(const std::filesystem::path& runs_dir, const std::string& op, const std::string& stamp,
                            RunRecord& out);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path round_dir(int round) const;
  std::filesystem::path llm_log() const { return dir_ / "llm.jsonl"; }

  /// Writes dir/<name> (or round-NN/<name>); returns an empty string or the error.
  std::string write(const std::string& name, const std::string& content) const;
  std::string write_round(int round, const std::string& name, const std::string& content) const;

 private:
  std::filesystem::path dir_;
};

/// "20261122T224610Z": the UTC time as a folder name.
std::string utc_stamp();

}  // namespace ktune::gen
