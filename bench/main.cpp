// ktune_bench: checks and times every compiled kernel variant; see bench/driver.hpp and --help.
#include "driver.hpp"

#include <benchmark/benchmark.h>

int main(int argc, char** argv) {
  const int rc = ktune::bench::run_bench(argc, argv);
  benchmark::Shutdown();
  return rc;
}
