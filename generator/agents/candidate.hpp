// generator/agents/candidate.hpp: one built candidate family, as the tuning and testing agents see it.
#pragma once

#include <filesystem>
#include <string>

#include "generator/toolchain/toolchain.hpp"

namespace ktune::gen {

struct Candidate {
  std::string op;
  std::filesystem::path root;    ///< the work folder: root/kernels/<op>/, root/bin/ktune_bench
  std::filesystem::path binary;  ///< the candidate's ktune_bench (every feasible variant and S)
  std::filesystem::path profiler;  ///< its ktune_profile (CUPTI); may be empty
  SpaceProbe probe;
  std::filesystem::path kernels_dir() const { return root / "kernels"; }
};

}  // namespace ktune::gen
