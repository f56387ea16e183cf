// bench/cache.hpp: the result cache that makes a tune resumable.
//
// One entry per (op, dtype, shape, variant), keyed by a hash of everything that can change its
// result: the kernel folder's sources (hashed at build time: bench/source_hash.cmake), the variant
// id (θ), the toolchain (nvcc version and flags), the device name and the measurement method (cold or
// warm L2, quick or full). The file is JSON lines, appended and flushed after every benchmark, so an
// interrupted run loses at most the line being written; a torn last line is ignored on load.
#pragma once

#include <cstddef>
#include <fstream>
#include <string>
#include <unordered_map>

#include "result.hpp"

namespace ktune::bench {

struct CacheKeyInputs {
  std::string op, dtype, shape, id;
  std::string source_hash;   ///< of kernels/<op>/ (and the framework headers its kernels use)
  std::string toolchain;     ///< compiler version, flags, architectures
  std::string device;        ///< device name
  std::string method;        ///< measurement method: version, cold/warm L2, quick/full
};

/// 16 hex digits. Fields are length-prefixed, so no two different inputs serialise alike.
std::string cache_key(const CacheKeyInputs& in);

class ResultCache {
 public:
  /// An empty path disables the cache: nothing is found, nothing is written.
  explicit ResultCache(std::string path = {});

  /// Reads the file if it exists. Malformed lines are skipped and counted. Returns an error message
  /// only when an existing file cannot be read.
  std::string load();
  const BenchResult* find(const std::string& key) const;
  /// Appends one entry and flushes. Returns an error message on failure.
  std::string store(const std::string& key, const BenchResult& r);

  bool enabled() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::size_t size() const { return entries_.size(); }
  std::size_t skipped_lines() const { return skipped_; }

 private:
  std::string path_;
  std::unordered_map<std::string, BenchResult> entries_;
  std::size_t skipped_ = 0;
  std::ofstream out_;
};

}  // namespace ktune::bench
