// generator/agents/tuning.cpp: the tuning agent (tuning.hpp).
#include "generator/agents/tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "generator/record/files.hpp"
#include "generator/toolchain/process.hpp"

namespace ktune::gen {

namespace fs = std::filesystem;

namespace {

double median_us(const nlohmann::json& variant, const std::string& source) {
  if (!variant.contains(source)) return 0;
  return variant[source].value("median_us", 0.0);
}


}  // namespace

std::string read_ranking(const nlohmann::json& results, Ranking& out) {
  out = Ranking{};
  try {
    if (results.value("schema", "") != "ktune.results") return "not a ktune results file";
    out.gpu = results.value("gpu", "");
    double log_sum = 0;
    std::vector<double> bands;
    std::map<std::string, int> wins;
    for (const auto& d : results.at("dtypes")) {
      const std::string dtype = d.at("dtype").get<std::string>();
      out.general[dtype] = d.at("general").value("id", "");
      for (const auto& e : d.value("excluded", nlohmann::json::array()))
        out.excluded.push_back({dtype, e.value("id", ""), e.value("verdict", ""), e.value("error", "")});
      for (const auto& sh : d.at("shapes")) {
        ShapeOutcome o;
        o.dtype = dtype;
        o.shape = sh.at("shape").get<std::string>();
        o.winner = sh.value("winner", "");
        o.band = sh.value("noise_band", 0.01);
        o.copy_same_size_us = sh.value("copy_same_size_us", 0.0);
        const std::string source = sh.value("band_source", "sweep");
        for (const auto& v : sh.at("variants")) {
          const std::string id = v.at("id").get<std::string>();
          // Both from the same source, so the ratio compares like with like (S is among every shape's finalists).
          const double t = median_us(v, source) > 0 ? median_us(v, source) : median_us(v, "sweep");
          if (id == "original" && v.value("verdict", "") == "ok") o.s_us = t;
          if (id == o.winner) o.winner_us = t;
        }
        if (!o.winner.empty()) ++wins[o.winner];
        if (o.s_us > 0 && o.winner_us > 0) {
          log_sum += std::log(o.s_us / o.winner_us);
          bands.push_back(o.band);
          ++out.measured_shapes;
        }
        out.shapes.push_back(o);
      }
    }
    if (out.measured_shapes) out.geomean_speedup = std::exp(log_sum / static_cast<double>(out.measured_shapes));
    if (!bands.empty()) {
      std::sort(bands.begin(), bands.end());
      out.band = std::max(0.01, bands[bands.size() / 2]);
    }
    int most = 0;
    for (const auto& [id, n] : wins)
      if (n > most) most = n, out.best_id = id;
    if (out.best_id.empty() && !out.general.empty()) out.best_id = out.general.begin()->second;
  } catch (const std::exception& e) {
    return std::string("malformed results file: ") + e.what();
  }
  return {};
}

std::string describe_ranking(const Ranking& r) {
  std::string s = fmt::format("geometric-mean speedup over S {:.3f}x over {} shapes (noise band {:.1f}%), most frequent winner {}\n",
                              r.geomean_speedup, r.measured_shapes, 100 * r.band, r.best_id.empty() ? "(none)" : r.best_id);
  for (const ShapeOutcome& o : r.shapes) {
    if (o.winner.empty()) {
      s += fmt::format("  {} {}: no correct variant\n", o.dtype, o.shape);
      continue;
    }
    s += fmt::format("  {} {}: S {:.2f} us, best {} {:.2f} us ({:.2f}x){}\n", o.dtype, o.shape, o.s_us, o.winner,
                     o.winner_us, o.winner_us > 0 ? o.s_us / o.winner_us : 0.0,
                     o.copy_same_size_us > 0 ? fmt::format(", same-size copy {:.2f} us", o.copy_same_size_us) : "");
  }
  return s;
}

TuningResult tune_candidate(const Toolchain& tc, const Candidate& c, const fs::path& out_dir, const TuningOptions& options) {
  TuningResult t;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  ProcessOptions popt;
  popt.timeout_s = options.timeout_s;
  popt.env = run_environment(tc);
  std::vector<std::string> common{c.binary.string(), "--kernels", c.kernels_dir().string(), "--ops", c.op, "--no-cache",
                                  "--benchmark_format=console"};
  if (options.quick) common.push_back("--quick");
  if (options.seed) common.insert(common.end(), {"--seed", std::to_string(options.seed)});

  auto run = [&](std::vector<std::string> cmd, const char* what) -> bool {
    const ProcessResult r = run_process(cmd, popt);
    log_process(t.log, cmd, r);
    if (r.ok()) return true;
    t.timed_out = r.timed_out;
    t.error = fmt::format("{} {}: {}", what,
                          r.timed_out ? fmt::format("did not finish within the tuning time limit of {:.0f} s (--tune-timeout)", options.timeout_s)
                                      : "failed (exit " + std::to_string(r.exit_code) + ")",
                          bounded_diagnostics(r.output + r.error, 2000));
    return false;
  };

  // The search stage as `make tune` runs it: screens of every variant, then the finalists of each shape
  // in interleaved rounds, S in the same process (bench/README.md), into one raw file.
  const fs::path search = out_dir / "search.json";
  auto search_cmd = common;
  search_cmd.push_back("--benchmark_out=" + search.string());
  if (!run(search_cmd, "the search")) return t;
  const fs::path results_dir = out_dir / "results";
  if (!run({tc.ktune, "select", "--raw", search.string(), "--kernels", c.kernels_dir().string(),
            "--results", results_dir.string(), "--build-json", "none"},
           "ktune select"))
    return t;
  for (const auto& gpu : fs::directory_iterator(results_dir, ec))
    if (fs::exists(gpu.path() / (c.op + ".json"))) t.results_file = gpu.path() / (c.op + ".json");
  std::string err;
  const std::string text = t.results_file.empty() ? "" : read_file(t.results_file, err);
  if (t.results_file.empty() || !err.empty()) {
    t.error = "ktune select wrote no results file for " + c.op + " under " + results_dir.string();
    return t;
  }
  try {
    err = read_ranking(nlohmann::json::parse(text), t.ranking);
  } catch (const std::exception& e) {
    err = e.what();
  }
  if (!err.empty()) {
    t.error = t.results_file.string() + ": " + err;
    return t;
  }
  t.ok = true;
  return t;
}

}  // namespace ktune::gen
