// bench/options.hpp: ktune_bench's command line. ktune's own flags are parsed here; flags that start
// with --benchmark_ go to Google Benchmark untouched (its output flags are also read here, because the
// driver installs its own reporters).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ktune::bench {

struct Options {
  std::vector<std::string> ops;          ///< --ops a,b: exact op names (empty: every registered op)
  std::vector<std::string> dtypes;       ///< --dtypes fp16,bf16 (empty: the spec's dtypes)
  std::string shapes;                    ///< --shapes REGEX, searched in the shape key
  std::string variants;                  ///< --variants REGEX, searched in the variant id
  bool quick = false;                    ///< --quick: few samples, for smoke runs
  bool exhaustive = false;               ///< --exhaustive: the full timing of every variant, no rounds (the
                                         ///< method before issue 9; tools/tune.sh then re-tests the top K)
  bool every_shape = false;              ///< --screen-every-shape: no guided screens (SearchSettings::guide_ratio, dtype_guide_ratio)
  bool warm_l2 = false;                  ///< --warm-l2: no buffer rotation
  bool list = false;                     ///< --list: print what would run; no GPU needed
  bool no_cache = false;                 ///< --no-cache: neither read nor write the result cache
  bool help = false;
  bool print_gpu_slug = false;           ///< --print-gpu-slug: print the device's slug and exit
  std::string retest;                    ///< --retest FILE: interleaved re-test of candidates
  std::string gate;                      ///< --gate FILE: correctness gate only (no timing), verdicts to FILE
  std::string kernels;                   ///< --kernels DIR: read spec.json from DIR/<op>/ instead of the built-in copy
  std::string incumbents;                ///< --incumbents DIR: results files whose winners are always finalists
  bool separate_allocations = false;     ///< --separate-allocations: the gate's tensors each in a cudaMalloc of
                                         ///< their own (for compute-sanitizer) instead of guarded regions
  bool wide_values = false;              ///< --value-range wide: inputs reaching the hundreds, exact zeros
  int slice = 0, slices = 1;             ///< --slice K/N: only the (op, element size) units of slice K of N (plan.hpp)
  std::string cache;                     ///< --cache FILE (empty: beside the executable)
  std::optional<std::uint64_t> seed;     ///< --seed N: the run's seed (default: fresh per run)
  std::string benchmark_out;             ///< --benchmark_out=FILE (also passed through)
  std::string benchmark_out_format = "json";
  std::string benchmark_format = "console";
  std::vector<std::string> passthrough;  ///< every --benchmark_* flag, verbatim, in order
};

/// Parses `args` (argv without argv[0]). Returns an empty string on success, else the error.
std::string parse_options(const std::vector<std::string>& args, Options& out);

/// The --help text.
std::string usage();

}  // namespace ktune::bench
