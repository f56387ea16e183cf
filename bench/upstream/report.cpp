// bench/upstream/report.cpp: flashinfer.json and flashinfer.md from one run's results (results.hpp).
#include "results.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "flashinfer_launch.hpp"  // the commits
#include "ktune/io.hpp"           // tools/ktune: write_atomic, sig3, fixed, join_path

namespace ktune::upstream {
namespace {

using nlohmann::ordered_json;
using tool::fixed;
using tool::sig3;

/// Tuned slower than upstream by more than this counts in the summary.
constexpr double slower_margin = 1.02;

/// One (op, dtype) row of the summary, from its shapes' results.
struct Summary {
  int shapes = 0, compared = 0, slower = 0, disagreements = 0, errors = 0;
  double geomean_tuned = std::nan(""), geomean_original = std::nan("");
  double largest_tuned = std::nan("");
  std::string largest_shape;
};

double geomean(const std::vector<double>& v) {
  if (v.empty()) return std::nan("");
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

Summary summarize(const std::vector<const ShapeResult*>& rows) {
  Summary s;
  std::vector<double> tuned, original;
  for (const ShapeResult* r : rows) {
    ++s.shapes;
    if (!r->error.empty()) {
      ++s.errors;
      continue;
    }
    if (!r->agrees[upstream_call] || !r->agrees[original_call] || !r->agrees[tuned_call]) ++s.disagreements;
    if (const double o = r->ratio(original_call); std::isfinite(o)) original.push_back(o);
    const double t = r->ratio(tuned_call);
    if (!std::isfinite(t)) continue;
    ++s.compared;
    tuned.push_back(t);
    if (t > slower_margin) ++s.slower;
    if (s.compared == 1 || t > s.largest_tuned) {
      s.largest_tuned = t;
      s.largest_shape = r->shape;
    }
  }
  s.geomean_tuned = geomean(tuned);
  s.geomean_original = geomean(original);
  return s;
}

ordered_json number_or_null(double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr); }

std::string cell(double v, bool ratio = false) {
  if (!std::isfinite(v)) return "–";
  return ratio ? fixed(v, 2) : sig3(v);
}

/// The results grouped by (op, dtype), in the order they ran.
std::vector<std::vector<const ShapeResult*>> groups(const std::vector<ShapeResult>& results) {
  std::vector<std::vector<const ShapeResult*>> out;
  for (const ShapeResult& r : results) {
    if (out.empty() || out.back().front()->op != r.op || out.back().front()->dtype != r.dtype) out.emplace_back();
    out.back().push_back(&r);
  }
  return out;
}

const OpCalls& op_calls(const std::string& op) {
  for (const OpCalls& o : compared_ops())
    if (o.op == op) return o;
  throw std::logic_error("ktune_vs_flashinfer: no calls for op " + op);
}

std::string dtype_list(const std::vector<DType>& dtypes) {
  std::string s;
  for (DType t : dtypes) s += (s.empty() ? "" : ", ") + std::string(name(t));
  return s;
}

ordered_json to_json(const ShapeResult& r) {
  ordered_json j;
  j["shape"] = r.shape;
  ordered_json dims = ordered_json::object();
  for (const auto& [n, v] : r.dims) dims[n] = v;
  j["dims"] = dims;
  j["bytes"] = r.bytes;
  j["seed"] = r.seed;
  j["rotations"] = r.rotations;
  j["set_bytes"] = r.set_bytes;
  j["cold_l2"] = r.cold_l2;
  if (!r.error.empty()) j["error"] = r.error;
  j["tuned_variant"] = r.tuned_id;
  j["tuned_source"] = r.tuned_source;
  for (int c = 0; c < call_kinds; ++c) {
    const CallTiming& t = r.timing[c];
    ordered_json call;
    call["us"] = r.timed() ? number_or_null(t.us) : ordered_json(nullptr);
    call["round_us"] = t.round_us;
    call["batch"] = t.batch;
    call["graph"] = t.graph;
    call["agrees_with_upstream"] = r.agrees[c];
    call["check"] = r.check[c];
    if (c != upstream_call) call["ratio_to_upstream"] = number_or_null(r.ratio(c));
    j[call_names[c]] = call;
  }
  return j;
}

std::string json_text(const RunInfo& run, const std::vector<ShapeResult>& results) {
  ordered_json j;
  j["tool"] = "ktune_vs_flashinfer";
  j["command"] = run.command;
  j["date"] = run.date;
  j["seed"] = run.seed;
  j["shapes"] = run.held_out_only ? "the specs' held-out shapes" : "every spec shape";
  j["ktune_commit"] = run.ktune_commit;
  j["flashinfer_commit"] = run.flashinfer_commit;
  j["flashinfer_pinned_commit"] = flashinfer_pinned_commit;
  j["sglang_commit"] = sglang_commit;
  j["gpu"] = {{"name", run.gpu},          {"arch", run.arch},     {"sms", run.sms},
              {"l2_bytes", run.l2_bytes}, {"driver", run.driver}, {"runtime", run.runtime}};
  j["timing"] = {{"timer",
                  "ktune::time_kernel (graph replay, events inside the graph, cold L2 by rotation: a replay of whole "
                  "rotations, or flush_l2 before each shorter one; the three calls replay one batch, sized by the "
                  "first call's probe)"},
                 {"rounds", run.rounds},
                 {"order", "rotated each round"},
                 {"statistic", "median of the rounds' medians"}};
  j["calls"] = {
      {"upstream", "FlashInfer's kernel launched as sgl-kernel launches it, built with sgl-kernel's sm_90 flags"},
      {"original", "ktune's original kernel S (kernels/<op>/original.cuh), as the tune runs it"},
      {"tuned", "ktune's public API, the tuned dispatch a user calls"}};
  ordered_json left = ordered_json::array();
  for (const LeftOut& l : left_out_ops) left.push_back({{"op", l.op}, {"why", l.why}});
  j["left_out"] = left;
  ordered_json ops = ordered_json::array();
  for (const auto& g : groups(results)) {
    const Summary s = summarize(g);
    ordered_json o;
    o["op"] = g.front()->op;
    o["dtype"] = name(g.front()->dtype);
    o["upstream"] = op_calls(g.front()->op).upstream;
    o["summary"] = {{"shapes", s.shapes},
                    {"compared", s.compared},
                    {"geomean_tuned_over_upstream", number_or_null(s.geomean_tuned)},
                    {"geomean_original_over_upstream", number_or_null(s.geomean_original)},
                    {"largest_tuned_over_upstream", number_or_null(s.largest_tuned)},
                    {"largest_at", s.largest_shape},
                    {"tuned_slower_than_upstream_by_over_2pct", s.slower},
                    {"disagreements", s.disagreements},
                    {"errors", s.errors}};
    ordered_json shapes = ordered_json::array();
    for (const ShapeResult* r : g) shapes.push_back(to_json(*r));
    o["shapes"] = shapes;
    ops.push_back(o);
  }
  j["results"] = ops;
  return j.dump(2) + "\n";
}

/// Where the tuned variant comes from, when not from a tune on this very device.
std::string source_tag(const std::string& source) {
  if (source == to_string(TunedSource::arch)) return " (tuned on another sm_90 device)";
  if (source == to_string(TunedSource::fallback)) return " (general configuration)";
  return "";
}

std::string check_cell(const ShapeResult& r) {
  if (!r.error.empty()) return "error";
  std::string bad;
  for (int c = 0; c < call_kinds; ++c)
    if (!r.agrees[c]) bad += (bad.empty() ? "" : ", ") + std::string(call_labels[c]);
  return bad.empty() ? "ok" : bad + " disagree";
}

std::string markdown_text(const RunInfo& run, const std::vector<ShapeResult>& results) {
  std::string md = "# ktune against FlashInfer, as sgl-kernel runs it, on " + run.gpu + "\n\n";
  md += "<!-- Generated by ktune_vs_flashinfer (bench/upstream/) with `" + run.command +
        "`. Do not edit: rerun that command to regenerate. -->\n\n";
  md += "- Device: " + run.gpu + " (sm_" + std::to_string(run.arch) + ", " + std::to_string(run.sms) + " SMs, L2 " +
        std::to_string(run.l2_bytes) + " bytes), driver " + std::to_string(run.driver) + ", CUDA runtime " +
        std::to_string(run.runtime) + "\n";
  md += "- Measured " + run.date + " at ktune commit " + run.ktune_commit + ", seed " + std::to_string(run.seed) +
        "; FlashInfer " + run.flashinfer_commit + " (sgl-kernel pins " + flashinfer_pinned_commit + " at sglang " +
        sglang_commit + ")\n";
  if (run.flashinfer_commit != flashinfer_pinned_commit)
    md += "- **The FlashInfer built (" + run.flashinfer_commit +
          ") is not the commit sgl-kernel pins**: this is not a comparison with what sgl-kernel runs.\n";
  if (run.held_out_only)
    md += "- Shapes: **the specs' held-out shapes only** (`--held-out`: a held-out value in any dimension, measured "
          "in every tune and never selected on).\n";
  md +=
      "- Three calls per shape on the same tensors: **upstream**, FlashInfer's kernel launched as sgl-kernel "
      "launches it and compiled with sgl-kernel's sm_90 flags; **S**, ktune's original kernel "
      "(`kernels/<op>/original.cuh`), as the tune runs it; **tuned**, ktune's public API (the tuned dispatch).\n";
  md +=
      "- Timing: `ktune::time_kernel` as the tune times (graph replay, events inside the graph, cold L2: rotation "
      "over input/output sets and an L2 flush before each replay; the three calls replay one batch, so a replay's "
      "fixed cost weighs the same on each), " +
      std::to_string(run.rounds) +
      " rounds with the three calls in an order rotated each round; each time is the median of the rounds' "
      "medians. Ratios are times over upstream's: **below 1.00 is faster than upstream**.\n";
  md +=
      "- Checked before timing (random inputs, never zeros; write-only outputs poisoned; in-place tensors "
      "restored and both compared): S's and the tuned dispatch's outputs within the spec's tolerance of "
      "upstream's. A call that disagrees has no ratio.\n";
  for (const LeftOut& l : left_out_ops) md += std::string("- Not compared: ") + l.op + ", " + l.why + ".\n";

  const auto grouped = groups(results);
  md += "\n## Summary\n\n";
  md +=
      "| op | dtype | shapes | compared | geomean tuned / upstream | geomean S / upstream | largest tuned / "
      "upstream | tuned slower by > 2% | disagreements | errors |\n";
  md += "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n";
  for (const auto& g : grouped) {
    const Summary s = summarize(g);
    md += "| " + g.front()->op + " | " + name(g.front()->dtype) + " | " + std::to_string(s.shapes) + " | " +
          std::to_string(s.compared) + " | " + cell(s.geomean_tuned, true) + " | " + cell(s.geomean_original, true) +
          " | " + cell(s.largest_tuned, true) + (s.largest_shape.empty() ? "" : " (" + s.largest_shape + ")") + " | " +
          std::to_string(s.slower) + " | " + std::to_string(s.disagreements) + " | " + std::to_string(s.errors) +
          " |\n";
  }

  std::string current_op;
  for (const auto& g : grouped) {
    const ShapeResult& first = *g.front();
    const OpCalls& calls = op_calls(first.op);
    if (first.op != current_op) {
      current_op = first.op;
      md += "\n## " + first.op + "\n\nUpstream: " + calls.upstream + ". sgl-kernel dispatches " +
            dtype_list(calls.dtypes) + ".\n";
    }
    md += "\n### " + first.op + ", " + name(first.dtype) + "\n\n";
    md += "Reproduce: `" + run.program + " --ops " + first.op + " --dtypes " + name(first.dtype) +
          (run.held_out_only ? " --held-out" : "") + " --rounds " + std::to_string(run.rounds) + " --out DIR`\n\n";
    md +=
        "| shape | MB | upstream (us) | S (us) | tuned (us) | S / upstream | tuned / upstream | tuned variant | check "
        "|\n";
    md += "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n";
    std::string notes;
    bool launch_by_launch = false;
    for (const ShapeResult* r : g) {
      auto us = [&](int c) {
        if (!r->timed()) return std::string("–");
        if (!r->timing[c].graph) launch_by_launch = true;
        return cell(r->timing[c].us) + (r->timing[c].graph ? "" : "*");
      };
      md += "| " + r->shape + " | " + fixed(static_cast<double>(r->bytes) / 1e6, 1) + " | " + us(upstream_call) +
            " | " + us(original_call) + " | " + us(tuned_call) + " | " + cell(r->ratio(original_call), true) + " | " +
            cell(r->ratio(tuned_call), true) + " | `" + r->tuned_id + "`" + source_tag(r->tuned_source) + " | " +
            check_cell(*r) + " |\n";
      if (!r->error.empty()) notes += "- " + r->shape + ": " + r->error + "\n";
      for (int c = 0; c < call_kinds; ++c)
        if (!r->agrees[c]) notes += "- " + r->shape + ", " + call_labels[c] + ": " + r->check[c] + "\n";
    }
    if (launch_by_launch)
      notes += "- \\* timed launch by launch, its launch latency included: the call could not be captured in a graph\n";
    if (!notes.empty()) md += "\n" + notes;
  }
  return md;
}

}  // namespace

void prepare_out_dir(const std::string& dir) {
  tool::make_dirs(dir);
  const std::string probe = tool::join_path(dir, ".ktune_vs_flashinfer.probe");
  const bool writable = static_cast<bool>(std::ofstream(probe) << "");
  std::remove(probe.c_str());
  if (!writable) throw std::runtime_error("--out: cannot write in " + dir);
}

void write_reports(const std::string& dir, const RunInfo& run, const std::vector<ShapeResult>& results) {
  tool::make_dirs(dir);
  tool::write_atomic(tool::join_path(dir, "flashinfer.json"), json_text(run, results));
  tool::write_atomic(tool::join_path(dir, "flashinfer.md"), markdown_text(run, results));
}

}  // namespace ktune::upstream
