// bench/incumbents.hpp: the winners of an earlier tune, which a new search times in its rounds.
//
// `ktune_bench --incumbents DIR` reads the results files DIR/*.json (docs/results-schema.md) that were
// measured on this GPU model and keeps, per (op, dtype, shape), the variant the tuned table uses. The
// search makes it a finalist whenever it passes its screen (search.hpp), so a new tune compares the
// user's current choice with its challengers round medians with round medians: the user's regret is
// measured on the footing the selection ranks on, and a winner is never displaced by a noisy screen.
#pragma once

#include <map>
#include <string>
#include <tuple>

namespace ktune::bench {

class Incumbents {
 public:
  /// The winner for (op, dtype name, shape key), or empty.
  std::string find(const std::string& op, const std::string& dtype, const std::string& shape) const;
  std::size_t size() const { return winners_.size(); }
  std::size_t files = 0;  ///< results files read (those of other GPU models are skipped)

  void add(const std::string& op, const std::string& dtype, const std::string& shape, const std::string& id);

 private:
  std::map<std::tuple<std::string, std::string, std::string>, std::string> winners_;
};

/// Reads the results files of `dir` measured on `gpu_slug` (their `gpu_slug` field). Returns an empty
/// string, or why a file could not be read (a missing or empty folder is no error: nothing to defend).
std::string load_incumbents(const std::string& dir, const std::string& gpu_slug, Incumbents& out);

}  // namespace ktune::bench
