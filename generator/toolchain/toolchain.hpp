// generator/toolchain/toolchain.hpp: how a candidate family becomes a benchmark binary, without CMake.
//
// The build writes <build>/generator/toolchain.json (generator/CMakeLists.txt): nvcc, flags, include
// folders (ktune's headers, Boost.Hana) and the prebuilt parts of ktune_bench (its main object, the
// driver and core libraries, Google Benchmark). A candidate is then: a kernel folder under a work
// directory in the build tree, the same generated translation units the build makes
// (bench/shard.cu.in, bench/original.cu.in), compiled in parallel with a time limit and linked with
// those parts. tools/gpu.sh stages the same files for the GPU machine, where only nvcc is installed;
// relative paths in the manifest are taken from the manifest's folder, so the staged copy works.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "generator/toolchain/process.hpp"

namespace ktune::gen {

struct Toolchain {
  std::string nvcc;
  int arch = 90;                               ///< the architecture variants are compiled and pruned for
  std::vector<std::string> cuda_flags;         ///< e.g. -std=c++17 -O3 --expt-relaxed-constexpr
  std::vector<std::string> include_dirs;       ///< ktune's include/, Boost (Hana)
  std::vector<std::string> link_inputs;        ///< ktune_bench's main object, libraries, libbenchmark
  std::vector<std::string> link_flags;
  std::vector<std::string> profile_link_inputs;  ///< ktune_profile's main object (CUPTI), for the winner's profile
  std::vector<std::string> profile_link_flags;
  std::vector<std::string> library_path;       ///< LD_LIBRARY_PATH for running what was linked
  std::string templates_dir;                   ///< bench/: shard.cu.in, original.cu.in
  std::string kernels_dir;                     ///< the project's kernels/ (the example family in prompts)
  std::string ktune;                           ///< the ktune command line (select)
  std::string sanitizer = "compute-sanitizer";
  int jobs = 2;                                ///< parallel compiles (default: the machine's cores)
  double compile_timeout_s = 300;              ///< per translation unit
  int shards = 4;                              ///< shard units per candidate (default: jobs, 4 to 16)
  std::string cuda_visible_devices;            ///< the GPU its programs run on (ktune agent --gpus; empty: inherited)
  /// Host threads a run's float64 references are prepared on (KTUNE_PREP_THREADS of ktune_bench; 0: its
  /// default, every core but two): set when judges share the host, and never over the user's own setting.
  unsigned prep_threads = 0;
};

/// Reads a toolchain.json; relative paths are taken from its folder. Empty string on success.
std::string load_toolchain(const std::filesystem::path& path, Toolchain& out);

/// The toolchain.json a command uses: `explicit_path` (its --toolchain) when given, else $KTUNE_TOOLCHAIN (a
/// staged copy: tools/gpu.sh), else the one of the build this binary comes from.
std::filesystem::path toolchain_path(const std::filesystem::path& explicit_path);

/// What the probe of a candidate's space.hpp reports (compiled and run on the host, no GPU).
struct SpaceProbe {
  std::uint64_t hash = 0;                       ///< Space::space.hash()
  std::size_t total = 0;                        ///< points in the space
  std::map<std::string, std::size_t> feasible;  ///< per dtype, for the toolchain's architecture
  std::string default_id;                       ///< Space::default_point
  std::map<int, std::string> unaligned_id;      ///< Space::unaligned_point(element bytes), for 4 and 2
};

struct CandidateBuild {
  bool ok = false;
  bool timed_out = false;
  std::string stage;        ///< "space probe", "compile" or "link": where it stopped
  std::string diagnostics;  ///< the compiler's messages for the LLM, bounded (errors first)
  std::string log;          ///< every command and its whole output, for the run record
  std::filesystem::path binary;
  std::filesystem::path profiler;  ///< the candidate's ktune_profile; empty when the toolchain has none or it failed to link
  double seconds = 0;
  SpaceProbe probe;
};

/// Compiles space.hpp of root/kernels/<op>/ alone into a small host program (source in src_dir, binary in
/// bin_dir) and reads its facts into `out`. Empty string on success, else what went wrong (the compiler's
/// messages, bounded); `log` gets every command and its output, `timed_out` whether the compile ran out of time.
std::string probe_space(const Toolchain& tc, const std::string& op, const std::filesystem::path& root,
                        const std::filesystem::path& src_dir, const std::filesystem::path& bin_dir, SpaceProbe& out,
                        std::string& log, bool& timed_out);

/// Builds the candidate whose kernel folder is root/kernels/<op>/: probes the space, writes the
/// translation units to root/generated/, compiles them and links root/bin/ktune_bench (and, where the
/// toolchain has its parts, root/bin/ktune_profile from the same objects). Everything it writes stays
/// under root.
CandidateBuild build_candidate(const Toolchain& tc, const std::string& op, const std::filesystem::path& root);

/// The environment a linked candidate runs with (LD_LIBRARY_PATH).
std::vector<std::string> run_environment(const Toolchain& tc);

/// The compiler's messages cut to about max_chars, from the line of the first error on.
std::string bounded_diagnostics(const std::string& output, std::size_t max_chars);

}  // namespace ktune::gen
