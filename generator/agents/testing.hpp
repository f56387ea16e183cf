// generator/agents/testing.hpp: the testing agent, the judge of every candidate. Deterministic code
// on the GPU, never an LLM: it runs the candidate's own benchmark binary, whose correctness gate
// compares each variant with S itself (the op's harness runs S for the reference: the method's
// ε-check) on fresh random inputs, in guarded buffers, with poisoned outputs, twice per call
// (include/ktune/judge.hpp lists the verdicts it gives, docs/judge.md the threat model).
//
//   judge_family   the one entry point: gate_edges, tune_candidate, judge_ranking, sanitize, in that
//                  order; the first failure is the family's verdict
//   gate_edges     the gate: every variant and S on the spec's edge shapes, with the default inputs and
//                  with wide values (--value-range wide), at every other value of each scalar
//                  (scalar_specs), then on the limit shapes (limit_specs), all within one time limit
//   judge_gate     what one gate run's verdicts file says about the family (pure)
//   judge_ranking  the search's verdicts (a variant wrong anywhere rejects the family) and the speedup
//                  over S (slower or measured)
//   sanitize       compute-sanitizer memcheck (separate allocations), racecheck and initcheck on every
//                  variant the tuned table can install, at the smallest edge shape and the smallest
//                  spec shape
//   profile        the CUPTI profile of the winner and S (ktune_profile: bandwidth against the copy
//                  ceiling, DRAM throughput, occupancy, stall reasons, and diagnose.hpp's findings),
//                  for the next prompt; it informs, it never rejects
//
// A family fails as a whole: the public API may route any call to any of its variants.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "generator/agents/candidate.hpp"
#include "generator/agents/planning.hpp"
#include "generator/agents/tuning.hpp"
#include "generator/toolchain/process.hpp"
#include "generator/toolchain/toolchain.hpp"
#include "ktune/judge.hpp"

namespace ktune::gen {

struct TestingOptions {
  double gate_timeout_s = 300;       ///< every gate run of one family together (`ktune agent --gate-timeout`)
  double sanitizer_timeout_s = 600;  ///< each compute-sanitizer process (`--sanitizer-timeout`)
  bool sanitizer = true;
  /// The limit call with a tensor past 2^31 elements (limit_specs' "elements"): gigabytes per tensor and a
  /// float64 reference of as many elements, tens of seconds per variant. On unless a test bounds its time.
  bool limit_elements = true;
  std::uint64_t seed = 0;  ///< 0: fresh inputs every run
};

struct Judgement {
  bool passed = true;                       ///< false: `verdict` says why the family is rejected
  Node::Verdict verdict = Node::pending;    ///< set when it failed, and by judge_ranking
  std::string reason;                       ///< one sentence, for the planner and the summary
  std::string findings;                     ///< details for the next prompt (messages, figures)
  std::string log;                          ///< commands and output, for the record
  /// judge_family: the step that gave the verdict: "gate", "tune", "ranking" or "sanitizer".
  std::string stage;
  /// judge_family: the run record's files of the steps that ran (judge.log, tune.log, results.json,
  /// sanitizer.log), by name.
  std::map<std::string, std::string> files;
};

/// The planner's verdict for a verdict of ktune_bench that says a variant is wrong (judge::is_wrong):
/// the same name. Any other verdict maps to incorrect (callers map only wrong ones).
Node::Verdict node_verdict(judge::Verdict v);

/// The edge shapes of a spec: its optional "edge_dims" (name -> values, like "dims"), else the token
/// counts 1 and 3 at the smallest spec value of every other dimension. Returns the spec text with
/// "dims" replaced by them (the gate's spec), or an error in `error`.
std::string edge_spec(const std::string& spec_text, std::string& error);

/// One run of the edge shapes at another value of one scalar (spec.json's "scalars", schema 2).
struct ScalarSpec {
  std::string name;       ///< "<scalar>-<k>", k its index in SpecScalar::values: the run's folder (edge-<name>) and file
  std::string spec_text;  ///< edge_spec's text with that scalar's "default" set to the value
  std::string what;       ///< "is_neox=false", for the findings and the reasons
};

/// The scalar runs of a spec: for every scalar, one per value of SpecScalar::values other than the default
/// (the spec's "values", a bool's both), each the edge shapes (edge_spec) with that scalar's "default"
/// rewritten and every other scalar at its default. The bench runs every shape at the defaults, so this is
/// how S and the family meet at the other values; edge shapes only, to keep it cheap. Pure; `error` is set
/// (and nothing returned) when the spec cannot be read.
std::vector<ScalarSpec> scalar_specs(const std::string& spec_text, std::string& error);

/// One set of limit shapes (issue 15, item 8): calls S accepts that friendly shapes never make.
struct LimitSpec {
  std::string name;       ///< "rows", "width" or "elements": its folder (limit-<name>) and gate file
  std::string spec_text;  ///< the spec with "dims" holding this one shape ("edge_dims" dropped)
  std::string what;       ///< one line for the findings and the reasons
};

/// The limit shapes of a spec, each in a spec text of its own:
///  - rows: the tokens_dim at kLimitRows (past 65,535: the grid's y and z limit), every other dimension
///    at its smallest spec value;
///  - width: tokens_dim at 3, every other dimension at its largest spec value (without other
///    dimensions there is no such shape);
///  - elements: the tokens_dim at ceil(2^31 / e) + 1, where e is the largest number of elements per
///    token of a tensor at the smallest other dimensions (so that tensor passes 2^31 elements: 32-bit
///    indices overflow), for one dtype only, the spec's first of the smallest element size (the least
///    memory for that element count).
/// A spec without "tokens_dim" gets the width shape only, every dimension at its largest value.
/// Pure; `error` is set (and nothing returned) when the spec cannot be read.
std::vector<LimitSpec> limit_specs(const std::string& spec_text, std::string& error);
inline constexpr std::int64_t kLimitRows = 70000;

/// What one gate run's verdicts file (ktune_bench --gate FILE) says about the family. Pure. In order:
///  - a (dtype, shape) where S's own row failed with a verdict that is not a wrong result (error: the
///    harness or an allocation failed; cannot implement; rejected) is a call S cannot run: skipped, with
///    a note in the findings (a row whose error says "the harness failed" likewise);
///  - any other variant with a verdict that says it is wrong (judge::is_wrong: incorrect,
///    out_of_bounds_write, ...) fails the family with that verdict, the variant, the call and the
///    bench's message (tensor, side, offset) in the reason;
///  - where S passes a call but Space::unaligned_point's variant (probe.unaligned_id for the dtype's
///    element bytes) refuses it (cannot implement) or cannot launch it (rejected), the family is
///    narrower_than_s, with the call in the reason;
///  - else it passes, the findings counting the gate runs that passed.
/// S's own wrong rows are noted, never held against the family. `label` names the run ("edge shapes").
Judgement judge_gate(const std::string& gate_json, const SpaceProbe& probe, const std::string& label);

/// The gate: every variant and S on the edge shapes (edge_spec) with the default inputs, again with
/// wide values (--value-range wide), again at each scalar value other than the default (scalar_specs),
/// then on each limit set (limit_specs); one ktune_bench --gate run per spec file under out_dir (edge/,
/// edge-<scalar>-<k>/, limit-<name>/), all of them together within
/// options.gate_timeout_s (a run that passes it is killed: the timeout verdict, the limit in the
/// reason). Each run is read by judge_gate; the first failure is the family's.
Judgement gate_edges(const Toolchain& tc, const Candidate& c, const std::string& spec_text,
                     const std::filesystem::path& out_dir, const TestingOptions& options);

/// The ranking's verdicts: a variant excluded anywhere with a verdict that says it is wrong rejects the
/// family with that verdict (S's own exclusions are noted only); no measured shape is rejected; else
/// measured, or slower when the geometric mean is below S beyond the band.
Judgement judge_ranking(const Ranking& r);

/// The distinct variants a tuned table of this family can install, sorted: every per-shape winner,
/// each dtype's general configuration, Space::default_point and Space::unaligned_point ("original"
/// never: S is not the family's).
std::vector<std::string> installable_variants(const Ranking& r, const SpaceProbe& probe);

/// "^(a|b)$" with the ids' regex characters escaped: the --variants filter of exactly these ids.
std::string variants_regex(const std::vector<std::string>& ids);

/// The sanitizer's spec: "dims" holding, per dimension, its smallest edge value (edge_spec) and its
/// smallest spec value, so that the smallest edge shape and the smallest spec shape both belong to it;
/// their keys ("tokens=1,d=1") go to `shape_keys` (one when they are the same shape). Pure.
std::string sanitizer_spec(const std::string& spec_text, std::vector<std::string>& shape_keys, std::string& error);

/// What one compute-sanitizer process said (tool: memcheck, racecheck or initcheck). Pure. Not
/// started or exit 127: passes with a note (not available here). Timed out: timeout, with the limit.
/// Reports: memcheck -> out_of_bounds_access, racecheck (errors or warnings) -> race, initcheck ->
/// uninitialized_read, unless they are only in S's own kernels (namespace ::original::, which runs for
/// the reference, and no kernel templated on the family's Config): then a note. `what` names the
/// variants and shapes for the reason.
Judgement read_sanitizer_report(const std::string& tool, const ProcessResult& r, const std::string& what, double timeout_s);

/// compute-sanitizer memcheck, racecheck and initcheck, one process per tool, each on all of `ids` at
/// once (variants_regex) at the smallest edge shape and the smallest spec shape (sanitizer_spec, written
/// to out_dir/sanitize/), every dtype of the spec, the gate's tensors each in a cudaMalloc of its own
/// (--separate-allocations: an out-of-bounds access is an invalid address). Each process is bounded by
/// options.sanitizer_timeout_s. Its gate verdicts are read by judge_gate as well.
Judgement sanitize(const Toolchain& tc, const Candidate& c, const std::vector<std::string>& ids, const std::string& spec_text,
                   const std::filesystem::path& out_dir, const TestingOptions& options);

/// The whole judge of one built family, the only entry point the loop (and the red-team tests) use:
/// gate_edges (under dir/judge), tune_candidate (under dir/tune), judge_ranking, sanitize on
/// installable_variants (under dir/judge). Returns the first failing step's judgement (with the
/// findings of the steps before it), else judge_ranking's measured or slower judgement with the
/// findings of every step. `files` holds the run record's logs of the steps that ran; *tuned, when
/// given, gets the tuning result (its ranking for the caller's summary and profile).
Judgement judge_family(const Toolchain& tc, const Candidate& c, const std::string& spec_text, const std::filesystem::path& dir,
                       const TestingOptions& testing, const TuningOptions& tuning, TuningResult* tuned = nullptr);

/// Profiles S and variant `id` at each of `shapes` (keys) for `dtype`; the findings are ktune_profile's
/// report. Always passes.
Judgement profile(const Toolchain& tc, const Candidate& c, const std::string& id, const std::string& dtype,
                  const std::vector<std::string>& shapes, const std::filesystem::path& out_dir, double timeout_s = 300);

}  // namespace ktune::gen
