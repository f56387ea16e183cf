// tools/ktune/commands.hpp: the subcommands of `ktune`, callable from main() and from tests.
#pragma once

#include <string>
#include <vector>

namespace ktune::tool {

/// Each returns the process exit code (0 ok, 1 failure, 2 usage) and prints to stdout/stderr.
int cmd_list(const std::vector<std::string>& args);
int cmd_select(const std::vector<std::string>& args);
int cmd_tables(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);

/// Entry point: argv without the program name.
int run_ktune(const std::vector<std::string>& args);

}  // namespace ktune::tool
