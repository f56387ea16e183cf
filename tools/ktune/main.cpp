// The `ktune` command line: see `ktune --help` and tools/ktune/commands.cpp.
#include <string>
#include <vector>

#include "commands.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return ktune::tool::run_ktune(args);
}
