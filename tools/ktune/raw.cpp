// tools/ktune/raw.cpp: the benchmark's Google Benchmark JSON read into plain records (raw.hpp).
#include "raw.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "io.hpp"

namespace ktune::tool {

const char* to_string(Verdict v) { return judge::name(v); }

Verdict parse_verdict_name(const std::string& s) {
  Verdict v{};
  if (!judge::verdict_of_name(s, v)) throw ToolError("unknown verdict '" + s + "'");
  return v;
}

Verdict verdict_of_message(const std::string& message) {
  // A failure without a known prefix is an error of the run, never ok.
  return message.empty() ? Verdict::error : judge::verdict_of_message(message);
}

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t end = s.find(sep, pos);
    out.push_back(s.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

bool is_gbench_suffix(const std::string& part) {
  if (part == "manual_time" || part == "real_time" || part == "process_time") return true;
  for (const char* p : {"repeats:", "iterations:", "threads:", "min_time:", "min_warmup_time:"})
    if (part.rfind(p, 0) == 0) return true;
  return false;
}

std::string context_string(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

namespace {
bool cost_key(const std::string& key, const std::string& prefix) {
  return key.size() > prefix.size() + 2 && key.rfind(prefix, 0) == 0 && key.compare(key.size() - 2, 2, "_s") == 0;
}
}  // namespace

bool is_phase_key(const std::string& key) { return cost_key(key, "phase_"); }
bool is_part_key(const std::string& key) { return cost_key(key, "part_"); }

std::string part_label(const std::string& key) {
  std::string name = key.substr(5, key.size() - 7);
  std::replace(name.begin(), name.end(), '_', ' ');
  return name;
}

std::optional<BenchName> parse_bench_name(const std::string& name) {
  std::vector<std::string> parts = split(name, '/');
  while (!parts.empty() && is_gbench_suffix(parts.back())) parts.pop_back();
  if (parts.size() != 4) return std::nullopt;
  for (const auto& p : parts)
    if (p.empty()) return std::nullopt;
  BenchName b{parts[0], parts[1], parts[2], parts[3], {}};
  for (const std::string& field : split(b.shape, ',')) {
    const std::size_t eq = field.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == field.size()) return std::nullopt;
    std::int64_t v = 0;
    for (std::size_t i = eq + 1; i < field.size(); ++i) {
      if (field[i] < '0' || field[i] > '9' || v > (INT64_MAX - 9) / 10) return std::nullopt;
      v = v * 10 + (field[i] - '0');
    }
    b.dims.emplace_back(field.substr(0, eq), v);
  }
  return b;
}

double to_microseconds(double value, const std::string& unit) {
  if (unit == "us") return value;
  if (unit == "ns") return value * 1e-3;
  if (unit == "ms") return value * 1e3;
  if (unit == "s") return value * 1e6;
  throw ToolError("unknown time_unit '" + unit + "'");
}

RawFile parse_raw(const nlohmann::json& j, const std::string& path, const std::string& hash) {
  RawFile f;
  f.path = path;
  const std::size_t slash = path.find_last_of('/');
  f.label = slash == std::string::npos ? path : path.substr(slash + 1);
  f.hash = hash;
  if (!j.is_object() || !j.contains("benchmarks") || !j["benchmarks"].is_array())
    throw ToolError(path + ": not Google Benchmark JSON (no \"benchmarks\" array)");
  if (j.contains("context") && j["context"].is_object())
    for (const auto& [k, v] : j["context"].items()) f.context[k] = context_string(v);
  f.mode = f.context.count("mode") ? f.context["mode"] : "sweep";
  if (f.mode != "sweep" && f.mode != "retest" && f.mode != "search")
    throw ToolError(path + ": context \"mode\" is '" + f.mode + "', expected sweep, retest or search");

  static const char* standard[] = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
                                   "repetitions", "repetition_index", "threads", "iterations", "real_time",
                                   "cpu_time", "time_unit", "error_occurred", "error_message", "aggregate_name",
                                   "aggregate_unit", "label"};
  for (const auto& b : j["benchmarks"]) {
    const std::string name = b.value("name", std::string());
    if (b.value("run_type", std::string("iteration")) == "aggregate") {
      f.warnings.push_back(fmt::format("{}: skipped aggregate row {}", f.label, name));
      continue;
    }
    std::map<std::string, double> counters;
    for (const auto& [k, v] : b.items()) {
      bool is_standard = false;
      for (const char* s : standard) is_standard = is_standard || k == s;
      if (!is_standard && v.is_number()) counters[k] = v.get<double>();
    }
    const bool failed = b.value("error_occurred", false);
    const double time_us =
        failed ? 0.0 : to_microseconds(b.value("real_time", 0.0), b.value("time_unit", std::string("ns")));

    std::vector<std::string> parts = split(name, '/');
    if (parts.size() >= 5 && parts[0] == "ktune" && parts[1] == "copy_same_size") {
      if (!failed && time_us > 0) f.same_size_copies.push_back({parts[2], parts[3], parts[4], time_us});
      else f.warnings.push_back(fmt::format("{}: same-size copy {} failed: {}", f.label, name, b.value("error_message", "")));
      continue;
    }
    if (parts.size() >= 2 && parts[0] == "ktune") {
      if (!failed) f.references.push_back({parts[1], time_us, counters});
      else f.warnings.push_back(fmt::format("{}: reference {} failed: {}", f.label, name, b.value("error_message", "")));
      continue;
    }
    auto parsed = parse_bench_name(name);
    if (!parsed) {
      f.warnings.push_back(fmt::format("{}: skipped '{}' (not <op>/<dtype>/<dims>/<id>)", f.label, name));
      continue;
    }
    RawRun r;
    r.name = std::move(*parsed);
    r.mode = f.mode != "search" ? f.mode : counters.count("rounds") ? "retest" : "sweep";
    r.iterations = b.value("iterations", std::int64_t{0});
    r.counters = std::move(counters);
    if (failed) {
      r.error = b.value("error_message", std::string("(no message)"));
      r.verdict = verdict_of_message(r.error);
    } else {
      r.time_us = time_us;
      if (!(time_us > 0))
        throw ToolError(fmt::format("{}: {} has a non-positive time and no error", path, name));
    }
    f.runs.push_back(std::move(r));
  }
  return f;
}

RawFile load_raw(const std::string& path) {
  const std::string text = read_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ToolError(path + ": not valid JSON: " + e.what());
  }
  return parse_raw(j, path, content_hash(text));
}

}  // namespace ktune::tool
