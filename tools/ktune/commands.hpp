// tools/ktune/commands.hpp: the tool's own subcommands of `ktune` (the table is in cli.cpp).
#pragma once

#include <string>
#include <vector>

namespace ktune::tool {

/// Each takes the arguments after its name and returns the process exit code (0 ok, 1 failure, 2 usage),
/// printing to stdout/stderr; a ToolError it throws is printed by cli::run_ktune.
int cmd_list(const std::vector<std::string>& args);
int cmd_gen(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);      ///< replaces this process with ktune_bench
int cmd_select(const std::vector<std::string>& args);
int cmd_merge_raw(const std::vector<std::string>& args);  // merge_raw.cpp
int cmd_replay_guides(const std::vector<std::string>& args);  // replay_guides.cpp
int cmd_tables(const std::vector<std::string>& args);
int cmd_shapes(const std::vector<std::string>& args);        // shapes_command.cpp
int cmd_report(const std::vector<std::string>& args);
int cmd_compare(const std::vector<std::string>& args);       // stability.cpp
int cmd_profile(const std::vector<std::string>& args);       ///< replaces this process with ktune_profile
int cmd_profile_plan(const std::vector<std::string>& args);  // profile_section.cpp
int cmd_profile_attach(const std::vector<std::string>& args);  // profile_section.cpp

}  // namespace ktune::tool
