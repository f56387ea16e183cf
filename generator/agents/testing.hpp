// generator/agents/testing.hpp: the testing agent, the judge of every candidate. Deterministic code
// on the GPU, never an LLM: it runs the candidate's own benchmark binary, whose correctness gate
// compares each variant with S itself (the op's harness runs S for the reference: the method's
// ε-check) on fresh random inputs with poisoned outputs.
//
//   gate_edges     every variant and S on the spec's edge shapes (small and ragged sizes: the tails)
//   judge_ranking  the sweep's and re-test's verdicts (a variant wrong anywhere rejects the family)
//                  and the speedup over S (slower or measured)
//   sanitize       compute-sanitizer racecheck and memcheck on the family's winner
//   profile        the CUPTI profile of the winner and S (ktune_profile: bandwidth against the copy
//                  ceiling, DRAM throughput, occupancy, stall reasons, and diagnose.hpp's findings),
//                  for the next prompt; it informs, it never rejects
//
// A family fails as a whole: the public API may route any call to any of its variants.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "generator/agents/candidate.hpp"
#include "generator/agents/planning.hpp"
#include "generator/agents/tuning.hpp"
#include "generator/toolchain/toolchain.hpp"

namespace ktune::gen {

struct TestingOptions {
  double gate_timeout_s = 300;
  double sanitizer_timeout_s = 600;
  bool sanitizer = true;
  std::uint64_t seed = 0;  ///< 0: fresh inputs every run
};

struct Judgement {
  bool passed = true;                       ///< false: `verdict` says why the family is rejected
  Node::Verdict verdict = Node::pending;    ///< set when it failed, and by judge_ranking
  std::string reason;                       ///< one sentence, for the planner and the summary
  std::string findings;                     ///< details for the next prompt (messages, figures)
  std::string log;                          ///< commands and output, for the record
};

/// The edge shapes of a spec: its optional "edge_dims" (name -> values, like "dims"), else the token
/// counts 1 and 3 at the smallest spec value of every other dimension. Returns the spec text with
/// "dims" replaced by them (the gate's spec), or an error in `error`.
std::string edge_spec(const std::string& spec_text, std::string& error);

Judgement gate_edges(const Toolchain& tc, const Candidate& c, const std::string& spec_text,
                     const std::filesystem::path& out_dir, const TestingOptions& options);

Judgement judge_ranking(const Ranking& r);

Judgement sanitize(const Toolchain& tc, const Candidate& c, const std::string& id, const std::string& dtype,
                   const std::string& shape_key, const std::filesystem::path& out_dir, const TestingOptions& options);

/// Profiles S and variant `id` at each of `shapes` (keys) for `dtype`; the findings are ktune_profile's
/// report. Always passes.
Judgement profile(const Toolchain& tc, const Candidate& c, const std::string& id, const std::string& dtype,
                  const std::vector<std::string>& shapes, const std::filesystem::path& out_dir, double timeout_s = 300);

}  // namespace ktune::gen
