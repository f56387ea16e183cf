// tools/ktune/merge_raw.cpp: `ktune merge-raw`, the slices of one tune merged into one Google Benchmark JSON
// file (see merge_raw.hpp). The slices ran at once on one GPU model: the work counters add up, the wall
// times overlap (the largest is the run's), and each slice's own copy ceiling and seed are kept by index.
#include "merge_raw.hpp"

#include "cli.hpp"
#include "commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

#include "io.hpp"
#include "raw.hpp"

namespace ktune::tool {

namespace {

using ojson = nlohmann::ordered_json;

/// Context fields every input must share with the first: a slice of another GPU model, build or method
/// would give tables that mean something else.
const char* const same_fields[] = {"gpu_slug", "arch", "ktune_version", "git_commit", "mode", "quick"};
/// Context counters of work done, added up over the slices (besides every phase_<name>_s and _cpu_s).
const char* const summed_fields[] = {"screened",   "remeasured",   "still_noisy",       "pruned",      "guided_out", "finalists",
                                     "left_out",   "prep_ahead",   "prep_in_line",      "prep_worker_cpu_s", "prep_wait_s"};
/// Wall times of the whole slice: the slices ran at once, so the run took the longest one.
const char* const max_fields[] = {"measure_wall_s", "startup_s"};
/// Reference rows every slice measures; the merged file keeps the first one's.
bool is_reference(const std::string& name) { return name == "ktune/copy_ceiling" || name == "ktune/empty_kernel"; }

bool is_summed(const std::string& key) {
  if (std::find(std::begin(summed_fields), std::end(summed_fields), key) != std::end(summed_fields)) return true;
  return is_phase_key(key) || is_part_key(key);
}
bool is_max(const std::string& key) {
  return std::find(std::begin(max_fields), std::end(max_fields), key) != std::end(max_fields);
}

/// A context value as the string ktune_bench wrote (numbers too, in case a writer used them).
std::optional<std::string> context_string(const ojson& context, const std::string& key) {
  auto it = context.find(key);
  if (it == context.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

/// A counter of a slice's context: (value, written as an integer).
std::pair<double, bool> counter(const RawInput& in, const std::string& key, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    throw ToolError(fmt::format("{}: context \"{}\" is \"{}\", not a number", in.path, key, text));
  return {v, text.find_first_of(".eE") == std::string::npos};
}

/// A sum or maximum written back the way ktune_bench writes context numbers (integers as integers,
/// seconds with six significant digits).
std::string format_counter(double v, bool integral) {
  if (integral) return fmt::format("{}", static_cast<long long>(std::llround(v)));
  return fmt::format("{:.6g}", v);
}

/// Refuses what is not a complete ktune_bench file.
void check_input(const RawInput& in) {
  const ojson& d = in.doc;
  if (!d.is_object() || !d.contains("context") || !d.at("context").is_object())
    throw ToolError(in.path + ": not ktune_bench output: no \"context\" object");
  if (!d.contains("benchmarks") || !d.at("benchmarks").is_array())
    throw ToolError(in.path + ": not ktune_bench output: no \"benchmarks\" array");
  const ojson& c = d.at("context");
  for (const char* k : {"ktune_version", "gpu_slug"})
    if (!c.contains(k)) throw ToolError(fmt::format("{}: not ktune_bench output: context has no \"{}\"", in.path, k));
  const auto complete = context_string(c, "complete");
  if (complete != std::string("1"))
    throw ToolError(fmt::format("{}: context \"complete\" is {}, not \"1\": that slice did not finish (run it again: "
                                "it resumes from its result cache)",
                                in.path, complete ? "\"" + *complete + "\"" : "missing"));
  for (const ojson& row : d.at("benchmarks"))
    if (!row.is_object() || !row.contains("name") || !row.at("name").is_string())
      throw ToolError(in.path + ": not ktune_bench output: a benchmark row has no \"name\"");
}

}  // namespace

ojson merge_raw(const std::vector<RawInput>& inputs, const std::set<std::string>* names) {
  if (inputs.empty()) throw usage_error("ktune merge-raw needs at least one input file");
  for (const RawInput& in : inputs) check_input(in);
  const ojson& first = inputs.front().doc.at("context");
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const ojson& c = inputs[i].doc.at("context");
    std::set<std::string> keys(std::begin(same_fields), std::end(same_fields));
    for (const ojson* ctx : {&first, &c})  // and the search's settings (search_<field>): one tune, one way of searching
      for (auto it = ctx->begin(); it != ctx->end(); ++it)
        if (it.key().rfind("search_", 0) == 0) keys.insert(it.key());
    for (const std::string& k : keys) {
      const auto a = context_string(first, k), b = context_string(c, k);
      if (a != b)
        throw ToolError(fmt::format("{}: context \"{}\" is {}, {} has {}: slices of one tune share it", inputs[i].path,
                                    k, b ? "\"" + *b + "\"" : "missing", inputs.front().path,
                                    a ? "\"" + *a + "\"" : "none"));
    }
  }

  // Rows: input order, each file's order; a name in two files is refused (a finalist's screen and rounds
  // share a name within one file).
  ojson rows = ojson::array();
  std::map<std::string, std::size_t> file_of;  // name -> input index
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    for (const ojson& row : inputs[i].doc.at("benchmarks")) {
      const std::string name = row.at("name").get<std::string>();
      const bool reference = is_reference(name);
      if (!reference && names && !names->count(name)) continue;
      auto [it, fresh] = file_of.emplace(name, i);
      if (!fresh && it->second != i) {
        if (reference) continue;  // every slice measures the references: the first file's stay
        throw ToolError(fmt::format("{}: benchmark \"{}\" is in {} too: slices must not overlap", inputs[i].path, name,
                                    inputs[it->second].path));
      }
      rows.push_back(row);
    }
  }

  // Context: the first file's; counters summed, wall times the largest, each slice's ceiling and seed.
  ojson context = first;
  std::map<std::string, std::pair<double, bool>> totals;  // key -> (value, integral)
  std::vector<std::string> order;                        // keys in first-seen order
  for (const RawInput& in : inputs)
    for (const auto& item : in.doc.at("context").items()) {
      const std::string& key = item.key();
      if (!is_summed(key) && !is_max(key)) continue;
      const auto [v, integral] = counter(in, key, context_string(in.doc.at("context"), key).value());
      auto [it, fresh] = totals.emplace(key, std::make_pair(v, integral));
      if (fresh) {
        order.push_back(key);
        continue;
      }
      it->second.first = is_max(key) ? std::max(it->second.first, v) : it->second.first + v;
      it->second.second = it->second.second && integral;
    }
  for (const std::string& key : order) context[key] = format_counter(totals.at(key).first, totals.at(key).second);
  context["slices"] = std::to_string(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    for (const char* k : {"copy_ceiling_gbps", "run_seed"})
      if (const auto v = context_string(inputs[i].doc.at("context"), k))
        context[fmt::format("slice{}.{}", i, k)] = *v;

  ojson out = ojson::object();
  out["context"] = std::move(context);
  out["benchmarks"] = std::move(rows);
  return out;
}

int cmd_merge_raw(const std::vector<std::string>& args) {
  CLI::App app{
      "Merges the Google Benchmark JSON files of a tune's slices (ktune_bench --slice K/N, one per GPU or per\n"
      "cluster task) into OUT, which `ktune select --raw OUT` reads as it reads a one-GPU run. Refuses files that\n"
      "are not complete ktune_bench output, that differ in gpu_slug, arch, ktune_version, git_commit, mode,\n"
      "quick or the search's settings (search_*), or that hold the same benchmark (ktune/copy_ceiling and\n"
      "ktune/empty_kernel: the first file's).\n"
      "The context is the first file's with the work counters summed (screened, remeasured, still_noisy, pruned,\n"
      "guided_out, finalists, left_out, phase_*_s, part_*_s, prep_*), measure_wall_s and startup_s the largest,\n"
      "`slices` the number of inputs and slice<k>.copy_ceiling_gbps / slice<k>.run_seed of each. Rows: input\n"
      "order, then file order.",
      "ktune merge-raw"};
  cli::style(app);
  std::string out, names_path;
  std::vector<std::string> in_paths;
  app.add_option("inputs", in_paths, "the slices' raw files")->required();
  app.add_option("--out", out, "the merged file (written atomically: a temporary file beside it, then a rename)")
      ->required();
  app.add_option("--names", names_path,
                 "keep only the rows named in FILE (one per line, as `ktune_bench --slice K/N --list` prints them) "
                 "and the two reference rows: with one input, that slice of a whole run (a replay without a GPU; its "
                 "counters stay the whole run's)");
  if (auto done = cli::parse(app, args)) return *done;

  std::optional<std::set<std::string>> names;
  if (!names_path.empty()) {
    names.emplace();
    std::istringstream lines(read_file(names_path));
    for (std::string line; std::getline(lines, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      if (!line.empty()) names->insert(line);
    }
  }
  std::vector<RawInput> inputs;
  for (const std::string& p : in_paths) {
    RawInput in{p, {}};
    try {
      in.doc = ojson::parse(read_file(p));
    } catch (const nlohmann::json::exception& e) {
      throw ToolError(p + ": not valid JSON: " + e.what());
    }
    inputs.push_back(std::move(in));
  }
  const ojson merged = merge_raw(inputs, names ? &*names : nullptr);
  write_atomic(out, merged.dump(2) + "\n");
  fmt::print("ktune merge-raw: {} rows from {} file(s) -> {}\n", merged.at("benchmarks").size(), inputs.size(), out);
  return exit_ok;
}

}  // namespace ktune::tool
