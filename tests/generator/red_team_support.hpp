// tests/generator/red_team_support.hpp: the red-team suite's files (tests/judge/rms_norm: S, the spec and one
// adversarial family per attack under answers/<attack>/, docs/judge.md's table), shared by its CPU test
// (red_team_test.cpp) and its GPU test (red_team_gpu_test.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "agent_support.hpp"

namespace ktune::gen::test {

inline std::filesystem::path red_team_dir() { return source_dir() / "tests/judge/rms_norm"; }

struct Attack {
  std::string name;
  std::string space_hpp, family_cuh;
  nlohmann::json meta;  ///< attack, how_it_cheats, expected_verdict, caught_by, static_check
  /// Honest families pass with either of the passing verdicts; every other family has one verdict.
  bool honest() const { return meta.value("expected_verdict", "") == "measured or slower"; }
};

/// Every family under answers/, sorted by name; `error` says what could not be read.
inline std::vector<Attack> red_team_attacks(std::string& error) {
  std::vector<Attack> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(red_team_dir() / "answers", ec)) {
    if (!e.is_directory()) continue;
    Attack a;
    a.name = e.path().filename().string();
    std::string err;
    a.space_hpp = read_file(e.path() / "space.hpp", err);
    if (err.empty()) a.family_cuh = read_file(e.path() / "family.cuh", err);
    std::string meta;
    if (err.empty()) meta = read_file(e.path() / "meta.json", err);
    if (!err.empty()) {
      error = a.name + ": " + err;
      return {};
    }
    try {
      a.meta = nlohmann::json::parse(meta);
    } catch (const std::exception& x) {
      error = a.name + "/meta.json: " + x.what();
      return {};
    }
    out.push_back(std::move(a));
  }
  if (ec) error = "cannot list " + (red_team_dir() / "answers").string() + ": " + ec.message();
  std::sort(out.begin(), out.end(), [](const Attack& a, const Attack& b) { return a.name < b.name; });
  return out;
}

}  // namespace ktune::gen::test
