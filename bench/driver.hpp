// bench/driver.hpp: ktune_bench's entry point (bench/main.cpp calls it; the GPU smoke test too).
//
// A run has two phases. First ktune measures: for each shape group the inputs, reference and rotation
// arena are prepared once and every variant is gated, checked and timed (or taken from the result
// cache), with progress and an ETA on stderr. Then Google Benchmark reports: each result is registered
// as a benchmark with manual time (the median per call, iterations = samples) and its counters, so the
// JSON that `--benchmark_out` writes is Google Benchmark's own format (see docs of the bench interface
// in bench/README.md).
#pragma once

namespace ktune::bench {

/// Exit status: 0 done, 1 error, 2 bad usage, 3 stopped early (a kernel broke the CUDA context; rerun
/// the same command to resume).
int run_bench(int argc, char** argv);

}  // namespace ktune::bench
