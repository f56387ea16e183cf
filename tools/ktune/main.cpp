// The `ktune` executable: the command table (tools/ktune/cli.hpp) and nothing else. The generator's
// commands join the table from generator/subcommands.cpp, which the build links into this executable.
#include <string>
#include <vector>

#include "cli.hpp"

int main(int argc, char** argv) { return ktune::cli::run_ktune(std::vector<std::string>(argv + 1, argv + argc)); }
