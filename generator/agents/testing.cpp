// generator/agents/testing.cpp: the judge (testing.hpp).
#include "generator/agents/testing.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "generator/record/files.hpp"
#include "generator/toolchain/process.hpp"

namespace ktune::gen {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

Judgement fail(Node::Verdict v, std::string reason, std::string findings = {}) {
  Judgement j;
  j.passed = false;
  j.verdict = v;
  j.reason = std::move(reason);
  j.findings = std::move(findings);
  return j;
}


std::vector<std::string> gate_command(const Candidate& c, const fs::path& kernels, const fs::path& out,
                                      const TestingOptions& o) {
  std::vector<std::string> cmd{c.binary.string(), "--kernels", kernels.string(), "--ops", c.op, "--gate", out.string()};
  if (o.seed) cmd.insert(cmd.end(), {"--seed", std::to_string(o.seed)});
  return cmd;
}

}  // namespace

std::string edge_spec(const std::string& spec_text, std::string& error) {
  try {
    ojson spec = ojson::parse(spec_text);
    ojson edges = ojson::object();
    if (spec.contains("edge_dims")) {
      edges = spec.at("edge_dims");
      for (const auto& [name, values] : spec.at("dims").items())
        if (!edges.contains(name)) edges[name] = ojson::array({values.at(0)});
      // Keep the spec's order of dimensions: shapes and names depend on it.
      ojson ordered = ojson::object();
      for (const auto& [name, values] : spec.at("dims").items()) ordered[name] = edges.at(name);
      edges = ordered;
    } else {
      const std::string tokens = spec.value("tokens_dim", "");
      for (const auto& [name, values] : spec.at("dims").items()) {
        if (name == tokens) {
          edges[name] = ojson::array({1, 3});
        } else {
          std::int64_t smallest = values.at(0).get<std::int64_t>();
          for (const auto& v : values) smallest = std::min(smallest, v.get<std::int64_t>());
          edges[name] = ojson::array({smallest});
        }
      }
    }
    spec["dims"] = edges;
    spec.erase("edge_dims");
    error.clear();
    return spec.dump(2) + "\n";
  } catch (const std::exception& e) {
    error = std::string("cannot derive the edge shapes from spec.json: ") + e.what();
    return {};
  }
}

Judgement gate_edges(const Toolchain& tc, const Candidate& c, const std::string& spec_text, const fs::path& out_dir,
                     const TestingOptions& options) {
  std::string err;
  const std::string edges = edge_spec(spec_text, err);
  if (!err.empty()) return fail(Node::rejected, err);
  const fs::path kernels = out_dir / "edge";
  if (std::string e = write_file_atomic(kernels / c.op / "spec.json", edges); !e.empty()) return fail(Node::rejected, e);
  const fs::path out = out_dir / "gate-edge.json";
  std::error_code ec;
  fs::remove(out, ec);
  ProcessOptions popt;
  popt.timeout_s = options.gate_timeout_s;
  popt.env = run_environment(tc);
  const auto cmd = gate_command(c, kernels, out, options);
  const ProcessResult r = run_process(cmd, popt);
  Judgement j;
  log_process(j.log, cmd, r);
  if (r.timed_out) {
    Judgement t = fail(Node::timeout, fmt::format("the edge-shape gate did not finish in {:.0f} s (a variant hangs?)", options.gate_timeout_s));
    t.log = j.log;
    return t;
  }
  const std::string text = read_file(out, err);
  if (!err.empty()) {
    Judgement t = fail(Node::rejected, "the edge-shape gate wrote no verdicts (exit " + std::to_string(r.exit_code) + ")",
                       bounded_diagnostics(r.output, 3000));
    t.log = j.log;
    return t;
  }
  std::set<std::string> s_cannot;  // shapes S itself cannot run: not held against the candidate
  std::string first_wrong, unaligned_gap;
  std::size_t rows = 0, passed = 0;
  try {
    const nlohmann::json doc = nlohmann::json::parse(text);
    for (const auto& row : doc.at("results")) {
      const std::string error = row.value("error", ""), id = row.value("id", "");
      const std::string where = fmt::format("{} on {} {}", id, row.value("dtype", ""), row.value("shape", ""));
      ++rows;
      if (row.value("ok", false)) {
        ++passed;
        continue;
      }
      if (error.find("the harness failed") != std::string::npos) {
        s_cannot.insert(row.value("dtype", "") + " " + row.value("shape", ""));
        continue;
      }
      if (error.rfind("incorrect: ", 0) == 0 && first_wrong.empty()) first_wrong = where + ": " + error;
      const int bytes = row.value("dtype", "") == "fp32" ? 4 : 2;
      const auto u = c.probe.unaligned_id.find(bytes);
      if (u != c.probe.unaligned_id.end() && id == u->second && error.rfind("incorrect: ", 0) != 0 && unaligned_gap.empty())
        unaligned_gap = where + ": " + error;
    }
  } catch (const std::exception& e) {
    Judgement t = fail(Node::rejected, std::string("the edge-shape gate's verdicts are malformed: ") + e.what());
    t.log = j.log;
    return t;
  }
  std::string s_note;
  if (!s_cannot.empty()) {
    s_note = fmt::format("S itself cannot run {} edge shape(s) (", s_cannot.size());
    for (const std::string& s : s_cannot) s_note += s + (s == *s_cannot.rbegin() ? "" : ", ");
    s_note += "); they were skipped.\n";
  }
  if (!first_wrong.empty()) {
    Judgement t = fail(Node::incorrect, "a variant disagrees with S at an edge shape: " + first_wrong, s_note);
    t.log = j.log;
    return t;
  }
  if (!unaligned_gap.empty()) {
    Judgement t = fail(Node::incorrect,
                       "Space::unaligned_point must implement every valid input, but it refused or failed: " + unaligned_gap, s_note);
    t.log = j.log;
    return t;
  }
  if (r.exit_code != 0) {
    Judgement t = fail(Node::rejected, "the edge-shape gate stopped (exit " + std::to_string(r.exit_code) + ")",
                       bounded_diagnostics(r.output, 3000));
    t.log = j.log;
    return t;
  }
  j.findings = fmt::format("Edge shapes: {} of {} gate runs passed (the others: cannot implement or device-check rejections).\n{}",
                           passed, rows, s_note);
  return j;
}

Judgement judge_ranking(const Ranking& r) {
  for (const ExcludedVariant& e : r.excluded)
    if (e.verdict == "incorrect")
      return fail(Node::incorrect, fmt::format("variant {} ({}) failed the correctness gate against S: {}", e.id, e.dtype, e.error),
                  describe_ranking(r));
  if (r.measured_shapes == 0) return fail(Node::rejected, "no shape has both S and a correct variant measured", describe_ranking(r));
  Judgement j;
  j.findings = describe_ranking(r);
  std::size_t rejected = 0;
  for (const ExcludedVariant& e : r.excluded) rejected += e.verdict == "rejected";
  if (rejected) j.findings += fmt::format("{} variant(s) were rejected by the device check (spills, launch limits).\n", rejected);
  if (r.geomean_speedup < 1.0 / (1.0 + r.band)) {
    j.verdict = Node::slower;
    j.reason = fmt::format("correct, but slower than S: {:.3f}x geometric mean over {} shapes", r.geomean_speedup, r.measured_shapes);
  } else {
    j.verdict = Node::measured;
    j.reason = fmt::format("correct, {:.3f}x over S (geometric mean over {} shapes, band {:.1f}%), best variant {}",
                           r.geomean_speedup, r.measured_shapes, 100 * r.band, r.best_id);
  }
  return j;
}

Judgement sanitize(const Toolchain& tc, const Candidate& c, const std::string& id, const std::string& dtype,
                   const std::string& shape_key, const fs::path& out_dir, const TestingOptions& options) {
  Judgement j;
  if (!options.sanitizer) {
    j.findings = "compute-sanitizer was not run (--no-sanitizer).\n";
    return j;
  }
  ProcessOptions popt;
  popt.timeout_s = options.sanitizer_timeout_s;
  popt.env = run_environment(tc);
  for (const std::string tool : {"racecheck", "memcheck"}) {
    const fs::path out = out_dir / fmt::format("sanitizer-{}.json", tool);
    // An exit code of its own: ktune_bench uses 3 for "stopped early".
    std::vector<std::string> cmd{tc.sanitizer, "--tool", tool, "--error-exitcode", "86", "--print-limit", "20"};
    auto gate = gate_command(c, c.kernels_dir(), out, options);
    cmd.insert(cmd.end(), gate.begin(), gate.end());
    cmd.insert(cmd.end(), {"--variants", "^" + id + "$", "--dtypes", dtype, "--shapes", "^" + shape_key + "$"});
    const ProcessResult r = run_process(cmd, popt);
    log_process(j.log, cmd, r);
    if (!r.started || r.exit_code == 127) {
      j.findings += fmt::format("compute-sanitizer {} was not run: {} is not available here.\n", tool, tc.sanitizer);
      continue;
    }
    if (r.timed_out) {
      Judgement t = fail(Node::timeout, fmt::format("compute-sanitizer {} on {} did not finish in {:.0f} s", tool, id, options.sanitizer_timeout_s));
      t.log = j.log;
      return t;
    }
    // racecheck counts hazards as errors or warnings and exits non-zero only for errors: both count here.
    const bool clean = tool == "racecheck" ? r.output.find("RACECHECK SUMMARY: 0 hazards") != std::string::npos
                                           : r.output.find("ERROR SUMMARY: 0 errors") != std::string::npos;
    if (!clean) {
      // Reports name the kernel; hazards only in S's own kernels (namespace ...::original::, which runs for
      // the reference) are not the candidate's doing. The family's kernels are templated on Space::Config.
      const bool candidate = r.output.find("::original::") == std::string::npos || r.output.find("Config<") != std::string::npos;
      if ((r.exit_code == 0 || r.exit_code == 86) && !candidate) {
        j.findings += fmt::format("compute-sanitizer {}: S itself has reports at {} {} (not held against the family).\n", tool,
                                  dtype, shape_key);
        continue;
      }
      Judgement t = r.exit_code == 0 || r.exit_code == 86
                        ? fail(tool == "racecheck" ? Node::race : Node::incorrect,
                               fmt::format("compute-sanitizer {} reported {} in variant {} ({} {})", tool,
                                           tool == "racecheck" ? "shared-memory hazards" : "memory errors", id, dtype, shape_key),
                               bounded_diagnostics(r.output, 4000))
                        : fail(Node::rejected, fmt::format("compute-sanitizer {} run failed (exit {})", tool, r.exit_code),
                               bounded_diagnostics(r.output, 3000));
      t.log = j.log;
      return t;
    }
    j.findings += fmt::format("compute-sanitizer {}: no errors on {} ({} {}).\n", tool, id, dtype, shape_key);
  }
  return j;
}

Judgement profile(const Toolchain& tc, const Candidate& c, const std::string& id, const std::string& dtype,
                  const std::vector<std::string>& shapes, const fs::path& out_dir, double timeout_s) {
  Judgement j;
  if (c.profiler.empty()) {
    j.findings = "No CUPTI profile: the toolchain has no profiler parts.\n";
    return j;
  }
  std::vector<std::string> cmd{c.profiler.string(), "--op", c.op, "--dtype", dtype, "--variant", "original", "--variant", id,
                               "--json", (out_dir / "profile.json").string()};
  for (const std::string& s : shapes) cmd.insert(cmd.end(), {"--shape", s});
  ProcessOptions popt;
  popt.timeout_s = timeout_s;
  popt.env = run_environment(tc);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  const ProcessResult r = run_process(cmd, popt);
  log_process(j.log, cmd, r);
  if (!r.ok()) {
    j.findings = fmt::format("The CUPTI profile of {} did not complete ({}).\n", id,
                             r.timed_out ? "time limit" : "exit " + std::to_string(r.exit_code));
    return j;
  }
  j.findings = fmt::format("CUPTI profile of S and {} ({}), ktune_profile's report:\n{}", id, dtype,
                           bounded_diagnostics(r.output, 4000));
  return j;
}

}  // namespace ktune::gen
