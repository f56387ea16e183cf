// generator/agents/testing.cpp: the judge (testing.hpp).
#include "generator/agents/testing.hpp"

#include <ktune/spec.hpp>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

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

Judgement with_log(Judgement j, const std::string& log) {
  j.log = log;
  return j;
}

std::vector<std::string> gate_command(const Candidate& c, const fs::path& kernels, const fs::path& out,
                                      const TestingOptions& o) {
  std::vector<std::string> cmd{c.binary.string(), "--kernels", kernels.string(), "--ops", c.op, "--gate", out.string()};
  if (o.seed) cmd.insert(cmd.end(), {"--seed", std::to_string(o.seed)});
  return cmd;
}

std::int64_t smallest(const ojson& values) {
  std::int64_t v = values.at(0).get<std::int64_t>();
  for (const auto& x : values) v = std::min(v, x.get<std::int64_t>());
  return v;
}

std::int64_t largest(const ojson& values) {
  std::int64_t v = values.at(0).get<std::int64_t>();
  for (const auto& x : values) v = std::max(v, x.get<std::int64_t>());
  return v;
}

/// "dims" holding one value per dimension, in the spec's order.
ojson one_shape(const ojson& dims, const std::map<std::string, std::int64_t>& value) {
  ojson out = ojson::object();
  for (const auto& [name, values] : dims.items()) out[name] = ojson::array({value.at(name)});
  return out;
}

std::string shape_key(const ojson& dims, const std::map<std::string, std::int64_t>& value) {
  std::string key;
  for (const auto& [name, values] : dims.items()) key += (key.empty() ? "" : ",") + name + "=" + std::to_string(value.at(name));
  return key;
}

int dtype_bytes(const std::string& dtype) { return dtype == "fp32" ? 4 : 2; }

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

}  // namespace

Node::Verdict node_verdict(judge::Verdict v) {
  switch (v) {
    case judge::Verdict::out_of_bounds_write: return Node::out_of_bounds_write;
    case judge::Verdict::input_modified: return Node::input_modified;
    case judge::Verdict::unwritten_output: return Node::unwritten_output;
    case judge::Verdict::nondeterministic: return Node::nondeterministic;
    case judge::Verdict::work_skipped: return Node::work_skipped;
    case judge::Verdict::implausible_time: return Node::implausible_time;
    case judge::Verdict::state_changed: return Node::state_changed;
    case judge::Verdict::reads_before_wait: return Node::reads_before_wait;
    default: return Node::incorrect;
  }
}

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
        if (name == tokens) edges[name] = ojson::array({1, 3});
        else edges[name] = ojson::array({smallest(values)});
      }
    }
    spec["dims"] = edges;
    spec.erase("edge_dims");
    spec.erase("held_out");  // values of the spec's own shapes, held out of selection: no gate selects
    error.clear();
    return spec.dump(2) + "\n";
  } catch (const std::exception& e) {
    error = std::string("cannot derive the edge shapes from spec.json: ") + e.what();
    return {};
  }
}

std::vector<ScalarSpec> scalar_specs(const std::string& spec_text, std::string& error) {
  std::vector<ScalarSpec> out;
  const std::string edges = edge_spec(spec_text, error);
  if (!error.empty()) return out;
  try {
    const ktune::Spec parsed = ktune::parse_spec_text(spec_text, "spec.json");
    const ojson edge = ojson::parse(edges);
    for (const ktune::SpecScalar& sc : parsed.scalars) {
      for (std::size_t k = 0; k < sc.values.size(); ++k) {
        const double v = sc.values[k];
        if (v == sc.default_value) continue;
        ojson s = edge;
        ojson value;
        std::string text;
        if (sc.type == ktune::ScalarType::bool_) {
          value = v != 0;
          text = v != 0 ? "true" : "false";
        } else if (sc.type == ktune::ScalarType::int_) {
          value = static_cast<std::int64_t>(v);
          text = std::to_string(static_cast<std::int64_t>(v));
        } else {
          value = v;
          text = fmt::format("{}", v);
        }
        // The bench runs every shape at the scalars' defaults (ktune::Spec::shapes): this run's default is v.
        for (auto& x : s.at("scalars"))
          if (x.value("name", std::string()) == sc.name) x["default"] = value;
        out.push_back({fmt::format("{}-{}", sc.name, k), s.dump(2) + "\n", sc.name + "=" + text});
      }
    }
    error.clear();
  } catch (const std::exception& e) {
    error = std::string("cannot derive the scalar runs from spec.json: ") + e.what();
    out.clear();
  }
  return out;
}

std::vector<LimitSpec> limit_specs(const std::string& spec_text, std::string& error) {
  std::vector<LimitSpec> out;
  try {
    const ojson spec = ojson::parse(spec_text);
    const ojson& dims = spec.at("dims");
    if (!dims.is_object() || dims.empty()) throw std::invalid_argument("\"dims\" is not a non-empty object");
    const std::string tokens = spec.value("tokens_dim", "");
    if (!tokens.empty() && !dims.contains(tokens)) throw std::invalid_argument("tokens_dim '" + tokens + "' is not a dimension");
    std::map<std::string, std::int64_t> low, high;
    for (const auto& [name, values] : dims.items()) {
      if (!values.is_array() || values.empty()) throw std::invalid_argument("dims." + name + " is not a non-empty array");
      low[name] = smallest(values);
      high[name] = largest(values);
    }
    auto make = [&](const std::string& name, const std::map<std::string, std::int64_t>& value, const std::string& why,
                    const std::string& dtype) {
      ojson s = spec;
      s["dims"] = one_shape(dims, value);
      s.erase("edge_dims");
      s.erase("held_out");
      if (!dtype.empty()) s["dtypes"] = ojson::array({dtype});
      std::string what = shape_key(dims, value) + " (" + why + ")";
      if (!dtype.empty()) what += ", " + dtype + " only";
      out.push_back({name, s.dump(2) + "\n", what});
    };
    if (tokens.empty()) {
      make("width", high, "the largest value of every dimension", "");
      error.clear();
      return out;
    }
    auto rows = low;
    rows[tokens] = kLimitRows;
    make("rows", rows, fmt::format("{} rows: past 65,535, the grid's y and z limit", kLimitRows), "");
    if (dims.size() > 1) {
      auto width = high;
      width[tokens] = 3;
      make("width", width, "the largest spec value of every other dimension", "");
    }
    // The tensor with the most elements per token at the smallest other dimensions (ktune::Spec reads the
    // tensors' extents as the bench does).
    const ktune::Spec parsed = ktune::parse_spec_text(spec_text, "spec.json");
    ktune::Shape one;
    for (const auto& [name, values] : parsed.dims) one.dims.push_back({name, name == tokens ? 1 : low.at(name)});
    std::int64_t per_token = 0;
    std::string biggest;
    for (const ktune::SpecTensor& t : parsed.tensors) {
      int factors = 0;
      for (const auto& axis : t.extents)
        for (const ktune::ExtentFactor& f : axis) factors += f.dim == tokens;
      const std::int64_t n = parsed.elements(t, one);
      if (factors == 1 && n > per_token) per_token = n, biggest = t.name;
    }
    const std::string dtype = [&] {
      std::string best;
      for (const auto& d : spec.value("dtypes", ojson::array()))
        if (best.empty() || dtype_bytes(d.get<std::string>()) < dtype_bytes(best)) best = d.get<std::string>();
      return best;
    }();
    if (per_token > 0) {
      constexpr std::int64_t limit = std::int64_t{1} << 31;
      auto elements = low;
      elements[tokens] = (limit + per_token - 1) / per_token + 1;
      make("elements", elements,
           fmt::format("tensor {} holds {} elements, past 2^31", biggest, elements[tokens] * per_token), dtype);
    }
    error.clear();
  } catch (const std::exception& e) {
    error = std::string("cannot derive the limit shapes from spec.json: ") + e.what();
    out.clear();
  }
  return out;
}

Judgement judge_gate(const std::string& gate_json, const SpaceProbe& probe, const std::string& label) {
  struct Row {
    std::string dtype, shape, id, error;
    judge::Verdict verdict = judge::Verdict::ok;
    std::string call() const { return dtype + " " + shape; }
  };
  std::vector<Row> rows;
  try {
    const nlohmann::json doc = nlohmann::json::parse(gate_json);
    for (const auto& r : doc.at("results")) {
      Row row{r.value("dtype", ""), r.value("shape", ""), r.value("id", ""), r.value("error", "")};
      if (!r.value("ok", false)) row.verdict = row.error.empty() ? judge::Verdict::error : judge::verdict_of_message(row.error);
      rows.push_back(std::move(row));
    }
  } catch (const std::exception& e) {
    return fail(Node::rejected, fmt::format("the gate's verdicts ({}) are malformed: {}", label, e.what()));
  }
  // S's own row per call: what S cannot run is skipped, what S gets wrong is noted.
  std::map<std::string, const Row*> s_row;
  std::map<std::string, std::string> s_cannot;  // call -> S's message
  for (const Row& r : rows) {
    if (r.id == "original") s_row[r.call()] = &r;
    if (r.error.find("the harness failed") != std::string::npos) s_cannot.emplace(r.call(), r.error);
  }
  std::vector<std::string> s_wrong;
  for (const auto& [call, r] : s_row) {
    if (r->verdict == judge::Verdict::ok) continue;
    if (judge::is_wrong(r->verdict)) s_wrong.push_back(call + ": " + r->error);
    else s_cannot[call] = r->error;
  }
  std::size_t counted = 0, passed = 0;
  const Row* wrong = nullptr;
  const Row* narrower = nullptr;
  for (const Row& r : rows) {
    if (s_cannot.count(r.call())) continue;
    ++counted;
    if (r.verdict == judge::Verdict::ok) {
      ++passed;
      continue;
    }
    if (r.id == "original") continue;
    if (judge::is_wrong(r.verdict)) {
      if (!wrong) wrong = &r;
      continue;
    }
    const auto u = probe.unaligned_id.find(dtype_bytes(r.dtype));
    const auto s = s_row.find(r.call());
    if (!narrower && u != probe.unaligned_id.end() && r.id == u->second && s != s_row.end() &&
        s->second->verdict == judge::Verdict::ok &&
        (r.verdict == judge::Verdict::cannot_implement || r.verdict == judge::Verdict::rejected))
      narrower = &r;
  }
  std::string notes;
  if (!s_cannot.empty()) {
    std::vector<std::string> calls;
    for (const auto& [call, message] : s_cannot) calls.push_back(call + " (" + message + ")");
    notes += fmt::format("{}: S itself cannot run {} call(s); they were skipped: {}.\n", label, s_cannot.size(), join(calls, "; "));
  }
  if (!s_wrong.empty())
    notes += fmt::format("{}: S itself fails the gate at {} call(s) (not held against the family): {}.\n", label, s_wrong.size(),
                         join(s_wrong, "; "));
  if (wrong)
    return fail(node_verdict(wrong->verdict),
                fmt::format("variant {} fails the gate ({}) on {}: {}", wrong->id, label, wrong->call(), wrong->error), notes);
  if (narrower)
    return fail(Node::narrower_than_s,
                fmt::format("S answers {} ({}), but Space::unaligned_point (variant {}) {} it, so the dispatch cannot answer "
                            "every call S answers: {}",
                            narrower->call(), label, narrower->id,
                            narrower->verdict == judge::Verdict::cannot_implement ? "refuses" : "cannot launch", narrower->error),
                notes);
  Judgement j;
  j.findings = fmt::format("{}: {} of {} gate runs passed (the others: cannot implement or device-check rejections).\n{}", label,
                           passed, counted, notes);
  return j;
}

Judgement gate_edges(const Toolchain& tc, const Candidate& c, const std::string& spec_text, const fs::path& out_dir,
                     const TestingOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  std::string err;
  const std::string edges = edge_spec(spec_text, err);
  if (!err.empty()) return fail(Node::rejected, err);
  const std::vector<LimitSpec> limits = limit_specs(spec_text, err);
  if (!err.empty()) return fail(Node::rejected, err);
  const std::vector<ScalarSpec> scalars = scalar_specs(spec_text, err);
  if (!err.empty()) return fail(Node::rejected, err);

  struct GateRun {
    std::string label, folder, file, spec;
    std::vector<std::string> extra;
  };
  std::vector<GateRun> runs{{"edge shapes", "edge", "gate-edge.json", edges, {}},
                            {"edge shapes, wide values", "edge", "gate-edge-wide.json", edges, {"--value-range", "wide"}}};
  for (const ScalarSpec& sc : scalars)
    runs.push_back({"edge shapes, " + sc.what, "edge-" + sc.name, "gate-edge-" + sc.name + ".json", sc.spec_text, {}});
  for (const LimitSpec& l : limits)
    if (l.name != "elements" || options.limit_elements)
      runs.push_back({"limit shape " + l.what, "limit-" + l.name, "gate-limit-" + l.name + ".json", l.spec_text, {}});

  Judgement j;
  std::string findings;
  auto failed = [&](Judgement t) {
    t.findings = findings + t.findings;
    t.log = j.log;
    return t;
  };
  for (const GateRun& run : runs) {
    const fs::path kernels = out_dir / run.folder;
    if (std::string e = write_file_atomic(kernels / c.op / "spec.json", run.spec); !e.empty()) return failed(fail(Node::rejected, e));
    const double left = options.gate_timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string over = fmt::format("the gate ({}) did not finish within the gate's time limit of {:.0f} s for all its runs "
                                         "(--gate-timeout; a variant hangs?)",
                                         run.label, options.gate_timeout_s);
    if (left <= 0) return failed(fail(Node::timeout, over));
    const fs::path out = out_dir / run.file;
    std::error_code ec;
    fs::remove(out, ec);
    ProcessOptions popt;
    popt.timeout_s = left;
    popt.env = run_environment(tc);
    auto cmd = gate_command(c, kernels, out, options);
    cmd.insert(cmd.end(), run.extra.begin(), run.extra.end());
    const ProcessResult r = run_process(cmd, popt);
    log_process(j.log, cmd, r);
    if (r.timed_out) return failed(fail(Node::timeout, over));
    const std::string text = read_file(out, err);
    if (!err.empty())
      return failed(fail(Node::rejected, fmt::format("the gate ({}) wrote no verdicts (exit {})", run.label, r.exit_code),
                         bounded_diagnostics(r.output, 3000)));
    Judgement g = judge_gate(text, c.probe, run.label);
    if (!g.passed) return failed(g);
    if (r.exit_code != 0)
      return failed(fail(Node::rejected, fmt::format("the gate ({}) stopped (exit {})", run.label, r.exit_code),
                         g.findings + bounded_diagnostics(r.output, 3000)));
    findings += g.findings;
  }
  j.findings = findings;
  return j;
}

Judgement judge_ranking(const Ranking& r) {
  std::string notes;
  for (const ExcludedVariant& e : r.excluded) {
    judge::Verdict v = judge::Verdict::error;
    if (!judge::verdict_of_name(e.verdict, v) || !judge::is_wrong(v)) continue;
    if (e.id == "original") {
      notes += fmt::format("S itself was excluded from the search ({}): {} (not held against the family).\n", e.dtype, e.error);
      continue;
    }
    // The error is the judge's message, which starts with the verdict's name.
    return fail(node_verdict(v), fmt::format("variant {} ({}) failed the judge in the search: {}", e.id, e.dtype, e.error),
                notes + describe_ranking(r));
  }
  if (r.measured_shapes == 0) return fail(Node::rejected, "no shape has both S and a correct variant measured", notes + describe_ranking(r));
  Judgement j;
  j.findings = notes + describe_ranking(r);
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

std::vector<std::string> installable_variants(const Ranking& r, const SpaceProbe& probe) {
  std::set<std::string> ids;
  for (const ShapeOutcome& s : r.shapes) ids.insert(s.winner);
  for (const auto& [dtype, id] : r.general) ids.insert(id);
  ids.insert(probe.default_id);
  for (const auto& [bytes, id] : probe.unaligned_id) ids.insert(id);
  ids.erase("");
  ids.erase("original");
  return {ids.begin(), ids.end()};
}

std::string variants_regex(const std::vector<std::string>& ids) {
  std::vector<std::string> escaped;
  for (const std::string& id : ids) {
    std::string e;
    for (char ch : id) {
      if (std::string_view("\\^$.|?*+()[]{}").find(ch) != std::string_view::npos) e += '\\';
      e += ch;
    }
    escaped.push_back(e);
  }
  return "^(" + join(escaped, "|") + ")$";
}

std::string sanitizer_spec(const std::string& spec_text, std::vector<std::string>& shape_keys, std::string& error) {
  shape_keys.clear();
  const std::string edges = edge_spec(spec_text, error);
  if (!error.empty()) return {};
  try {
    ojson spec = ojson::parse(spec_text);
    const ojson edge_dims = ojson::parse(edges).at("dims");
    const ojson& dims = spec.at("dims");
    std::map<std::string, std::int64_t> edge, low;
    ojson both = ojson::object();
    for (const auto& [name, values] : dims.items()) {
      edge[name] = smallest(edge_dims.at(name));
      low[name] = smallest(values);
      both[name] = edge[name] == low[name] ? ojson::array({edge[name]}) : ojson::array({edge[name], low[name]});
    }
    shape_keys.push_back(shape_key(dims, edge));
    if (shape_keys.back() != shape_key(dims, low)) shape_keys.push_back(shape_key(dims, low));
    spec["dims"] = both;
    spec.erase("edge_dims");
    spec.erase("held_out");
    error.clear();
    return spec.dump(2) + "\n";
  } catch (const std::exception& e) {
    error = std::string("cannot derive the sanitizer's shapes from spec.json: ") + e.what();
    shape_keys.clear();
    return {};
  }
}

Judgement read_sanitizer_report(const std::string& tool, const ProcessResult& r, const std::string& what, double timeout_s) {
  Judgement j;
  if (!r.started || r.exit_code == 127) {
    j.findings = fmt::format("compute-sanitizer {} was not run: it is not available here.\n", tool);
    return j;
  }
  if (r.timed_out)
    return fail(Node::timeout, fmt::format("compute-sanitizer {} on {} did not finish within the sanitizer's time limit of {:.0f} s "
                                           "(--sanitizer-timeout; a variant hangs?)",
                                           tool, what, timeout_s));
  // racecheck counts hazards as errors or warnings and exits non-zero only for errors: both count here.
  const bool clean = tool == "racecheck" ? r.output.find("RACECHECK SUMMARY: 0 hazards") != std::string::npos
                                         : r.output.find("ERROR SUMMARY: 0 errors") != std::string::npos;
  if (clean) {
    j.findings = fmt::format("compute-sanitizer {}: no reports on {}.\n", tool, what);
    return j;
  }
  const bool reported = r.exit_code == 0 || r.exit_code == 86;  // 86: --error-exitcode (ktune_bench uses 3 for "stopped early")
  if (!reported)
    return fail(Node::rejected, fmt::format("compute-sanitizer {} run failed (exit {})", tool, r.exit_code), bounded_diagnostics(r.output, 3000));
  // Reports name the kernel; reports only in S's own kernels (namespace ...::original::, which runs for
  // the reference) are not the candidate's doing. The family's kernels are templated on Space::Config.
  const bool candidate = r.output.find("::original::") == std::string::npos || r.output.find("Config<") != std::string::npos;
  if (!candidate) {
    j.findings = fmt::format("compute-sanitizer {}: S itself has reports on {} (not held against the family).\n", tool, what);
    return j;
  }
  const Node::Verdict v = tool == "racecheck" ? Node::race : tool == "initcheck" ? Node::uninitialized_read : Node::out_of_bounds_access;
  const char* kind = tool == "racecheck"   ? "shared-memory hazards"
                     : tool == "initcheck" ? "reads of uninitialised global memory"
                                           : "invalid memory accesses";
  return fail(v, fmt::format("compute-sanitizer {} reported {} in the family's kernels ({})", tool, kind, what),
              bounded_diagnostics(r.output, 4000));
}

Judgement sanitize(const Toolchain& tc, const Candidate& c, const std::vector<std::string>& ids, const std::string& spec_text,
                   const fs::path& out_dir, const TestingOptions& options) {
  Judgement j;
  if (!options.sanitizer) {
    j.findings = "compute-sanitizer was not run (--no-sanitizer).\n";
    return j;
  }
  if (ids.empty()) {
    j.findings = "compute-sanitizer was not run: the tuned table would install no variant.\n";
    return j;
  }
  std::vector<std::string> keys;
  std::string err;
  const std::string spec = sanitizer_spec(spec_text, keys, err);
  if (!err.empty()) return fail(Node::rejected, err);
  const fs::path kernels = out_dir / "sanitize";
  if (std::string e = write_file_atomic(kernels / c.op / "spec.json", spec); !e.empty()) return fail(Node::rejected, e);
  const std::string what = fmt::format("variant(s) {} at {}", join(ids, ", "), join(keys, " and "));
  ProcessOptions popt;
  popt.timeout_s = options.sanitizer_timeout_s;
  popt.env = run_environment(tc);
  for (const std::string tool : {"memcheck", "racecheck", "initcheck"}) {
    const fs::path out = out_dir / fmt::format("sanitizer-{}.json", tool);
    std::error_code ec;
    fs::remove(out, ec);
    // API errors are not the family's memory errors: the judge's own snapshot of the caller's state asks once,
    // and is refused once, for limits and stream attributes a device does not have (bench/caller_state.hpp), which
    // memcheck counted as errors of every family (both honest red-team families on an H200).
    std::vector<std::string> cmd{tc.sanitizer, "--tool", tool, "--error-exitcode", "86", "--print-limit", "20",
                                 "--report-api-errors", "no"};
    // Allocations follow each other in memory: without padding after each, a read past one tensor lands
    // in the next and is a valid address.
    if (tool == "memcheck") cmd.insert(cmd.end(), {"--padding", "4096"});
    const auto gate = gate_command(c, kernels, out, options);
    cmd.insert(cmd.end(), gate.begin(), gate.end());
    // Each tensor in its own allocation: an access past a tensor is an invalid address for memcheck (in
    // the guarded arena it would land in a guard zone, a valid one), and the same layout for every tool.
    cmd.insert(cmd.end(), {"--separate-allocations", "--variants", variants_regex(ids), "--shapes",
                           "^(" + join(keys, "|") + ")$"});
    const ProcessResult r = run_process(cmd, popt);
    log_process(j.log, cmd, r);
    Judgement t = read_sanitizer_report(tool, r, what, options.sanitizer_timeout_s);
    if (!t.passed) return with_log(t, j.log);
    j.findings += t.findings;
    if (!r.started || r.exit_code == 127) continue;
    // The gate ran under the sanitizer too: its verdicts count like any gate's.
    const std::string text = read_file(out, err);
    if (err.empty()) {
      Judgement g = judge_gate(text, c.probe, "compute-sanitizer " + std::string(tool));
      if (!g.passed) return with_log(g, j.log);
    }
    if (r.exit_code != 0 && r.exit_code != 86)
      return with_log(fail(Node::rejected, fmt::format("the gate under compute-sanitizer {} stopped (exit {})", tool, r.exit_code),
                           bounded_diagnostics(r.output, 3000)),
                      j.log);
  }
  return j;
}

Judgement judge_family(const Toolchain& tc, const Candidate& c, const std::string& spec_text, const fs::path& dir,
                       const TestingOptions& testing, const TuningOptions& tuning, TuningResult* tuned) {
  const fs::path judge_dir = dir / "judge";
  std::map<std::string, std::string> files;
  std::string findings, log;
  auto done = [&](Judgement j, const char* stage) {
    j.stage = stage;
    j.files = files;
    j.findings = findings + j.findings;
    j.log = log;
    return j;
  };

  Judgement gate = gate_edges(tc, c, spec_text, judge_dir, testing);
  files["judge.log"] = gate.log;
  log += gate.log;
  if (!gate.passed) return done(gate, "gate");
  findings += gate.findings;

  TuningResult t = tune_candidate(tc, c, dir / "tune", tuning);
  files["tune.log"] = t.log;
  log += t.log;
  if (!t.results_file.empty()) {
    std::string err;
    files["results.json"] = read_file(t.results_file, err);
  }
  if (tuned) *tuned = t;
  if (!t.ok) return done(fail(t.timed_out ? Node::timeout : Node::rejected, t.error), "tune");

  Judgement rank = judge_ranking(t.ranking);
  if (!rank.passed) return done(rank, "ranking");
  findings += rank.findings;

  Judgement san = sanitize(tc, c, installable_variants(t.ranking, c.probe), spec_text, judge_dir, testing);
  files["sanitizer.log"] = san.log;
  log += san.log;
  if (!san.passed) return done(san, "sanitizer");

  rank.findings = san.findings;  // after the gate's and the ranking's, by done()
  return done(rank, "ranking");
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
