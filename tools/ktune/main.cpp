// The `ktune` command line: see `ktune --help` and tools/ktune/commands.cpp.
#include <string>
#include <vector>

#include "commands.hpp"
#include "generator/agent.hpp"
#include "generator/derive/command.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // `ktune agent` and `ktune derive` live in the generator library, which builds on the tool's core (not the
  // other way).
  if (!args.empty() && args[0] == "agent") return ktune::gen::agent_command({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "derive") return ktune::gen::derive_command({args.begin() + 1, args.end()});
  return ktune::tool::run_ktune(args);
}
