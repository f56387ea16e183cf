// bench/build_info.hpp: what ktune_bench was built from: version, git commit, toolchain, and per op
// the source hash, spec.json and space hash, generated at build time (bench/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ktune::bench {

struct OpBuild {
  std::string op;
  std::string source_hash;   ///< bench/source_hash.cmake over kernels/<op>/
  std::string spec_json;     ///< kernels/<op>/spec.json as built
  bool has_space_hash = false;
  std::uint64_t space_hash = 0;  ///< Space::space.hash()
};

struct BuildInfo {
  std::string version;
  std::string git_commit;
  std::string toolchain;     ///< compiler version, flags and architectures of the variants
  std::vector<OpBuild> ops;
  const OpBuild* find(const std::string& op) const {
    for (const OpBuild& o : ops)
      if (o.op == op) return &o;
    return nullptr;
  }
};

const BuildInfo& build_info();

}  // namespace ktune::bench
