// bench/cache.cpp: the result cache (cache.hpp): one JSON line per benchmark, read once, appended as results arrive.
#include "cache.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace ktune::bench {

namespace {
std::uint64_t fnv1a(std::uint64_t h, const std::string& s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}
}  // namespace

std::string cache_key(const CacheKeyInputs& in) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const std::string* f : {&in.op, &in.dtype, &in.shape, &in.id, &in.source_hash, &in.toolchain, &in.device, &in.method}) {
    h = fnv1a(h, std::to_string(f->size()));
    h = fnv1a(h, ":");
    h = fnv1a(h, *f);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

ResultCache::ResultCache(std::string path) : path_(std::move(path)) {}

std::string ResultCache::load() {
  entries_.clear();
  skipped_ = 0;
  if (path_.empty()) return {};
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return {};
  std::ifstream in(path_);
  if (!in) return "cannot read the result cache " + path_ + ": " + std::strerror(errno);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      entries_[j.at("key").get<std::string>()] = result_from_json(j.at("result"));
    } catch (const nlohmann::json::exception&) {
      ++skipped_;  // a line torn by an interrupted run, or from an older format
    }
  }
  return {};
}

const BenchResult* ResultCache::find(const std::string& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::string ResultCache::store(const std::string& key, const BenchResult& r) {
  if (path_.empty()) return {};
  if (!out_.is_open()) {
    const std::filesystem::path p(path_);
    std::error_code ec;
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
    out_.open(path_, std::ios::app);
    if (!out_) return "cannot append to the result cache " + path_ + ": " + std::strerror(errno);
    // A torn line from an interrupted run would glue onto ours: start on a fresh line.
    out_ << '\n';
  }
  BenchResult stored = r;
  stored.cached = false;
  out_ << nlohmann::json{{"key", key}, {"result", to_json(stored)}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out_.flush();
  if (!out_) return "writing the result cache " + path_ + " failed";
  entries_[key] = stored;
  return {};
}

}  // namespace ktune::bench
