// bench/incumbents.cpp: the winners of an earlier tune, from its results files (incumbents.hpp).
#include "incumbents.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

namespace ktune::bench {

std::string Incumbents::find(const std::string& op, const std::string& dtype, const std::string& shape) const {
  const auto it = winners_.find({op, dtype, shape});
  return it == winners_.end() ? std::string() : it->second;
}

void Incumbents::add(const std::string& op, const std::string& dtype, const std::string& shape, const std::string& id) {
  winners_[{op, dtype, shape}] = id;
}

std::string load_incumbents(const std::string& dir, const std::string& gpu_slug, Incumbents& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  if (ec) return dir + ": " + ec.message();
  std::sort(files.begin(), files.end());
  for (const fs::path& path : files) {
    std::ifstream in(path);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return path.string() + ": not a JSON object";
    // Only results files of this GPU model: the search never defends another model's winner.
    if (j.value("schema", "") != "ktune.results" || j.value("gpu_slug", "") != gpu_slug) continue;
    const std::string op = j.value("op", "");
    if (op.empty() || !j.contains("dtypes") || !j["dtypes"].is_array()) return path.string() + ": no op or dtypes";
    ++out.files;
    for (const nlohmann::json& d : j["dtypes"]) {
      if (!d.is_object() || !d.contains("shapes") || !d["shapes"].is_array()) return path.string() + ": a dtype without shapes";
      for (const nlohmann::json& s : d["shapes"]) {
        const nlohmann::json* winner = s.is_object() && s.contains("winner") ? &s["winner"] : nullptr;
        if (winner && winner->is_string() && s.contains("shape") && s["shape"].is_string())
          out.add(op, d.value("dtype", ""), s["shape"].get<std::string>(), winner->get<std::string>());
      }
    }
  }
  return {};
}

}  // namespace ktune::bench
