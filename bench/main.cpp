// ktune_bench: checks and times every compiled kernel variant; see bench/driver.hpp and --help.
#include "driver.hpp"

int main(int argc, char** argv) { return ktune::bench::run_bench(argc, argv); }
