// tools/ktune/cli.hpp: the command table of `ktune` and the one way every command reads its arguments.
//
// The tool's core defines the table; a layer built on the core (the generator's `agent` and `derive`)
// adds its commands with a static cli::Registrar in a file linked into the `ktune` executable, so the
// core never depends on what it dispatches to and main() knows only the table. Every command parses
// with CLI11 through cli::parse: one --help layout, --name=value and --name value, exit codes 0 ok,
// 1 failure, 2 usage, and a suggestion for a mistyped option or command.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "io.hpp"  // the exit codes and ToolError

namespace ktune::cli {

using tool::exit_failure;
using tool::exit_ok;
using tool::exit_usage;

/// One subcommand: `ktune <name> ARGS...`.
struct Command {
  const char* name;
  const char* summary;  ///< one line of `ktune --help`; a second line may follow after '\n'
  int (*run)(const std::vector<std::string>& args);  ///< the arguments after the name; returns the exit code
};

/// Adds a command of another layer to the table (at static initialisation, before main).
class Registrar {
 public:
  explicit Registrar(Command command);
};

/// The tool's own commands in their order, then the registered ones by name.
std::vector<Command> commands();

/// `ktune ARGS...`: --help, --version, or the command named first. Returns the exit code; a ToolError
/// (tools/ktune/io.hpp) or other exception thrown by a command is printed with the command's name.
int run_ktune(const std::vector<std::string>& args);

/// Gives a command's parser (CLI::App{description, "ktune <name>"}) the layout and rules every command
/// shares. Options given twice keep the last value (add TakeAll to a vector option yourself).
void style(CLI::App& app);

/// What parsing `args` into `app` found: --help asked for, or the usage problem ("" when none), worded
/// the same for every command ("--x needs a value", "unknown option --tpok (did you mean --topk?)").
struct Parsed {
  bool help = false;
  std::string error;
};
Parsed parse_args(CLI::App& app, const std::vector<std::string>& args);

/// parse_args, then what every command does with it. Returns nothing to go on, or the exit code to
/// return at once: 0 after printing the help, 2 after printing "<name>: <problem>" and a pointer to --help.
std::optional<int> parse(CLI::App& app, const std::vector<std::string>& args);

/// The candidates nearest to `word` by edit distance (at most a third of its length, at least 1), as
/// " (did you mean X?)", or "" when none is near.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

/// A comma-separated list ("0,1", "fp16,bf16") split into its non-empty items.
std::vector<std::string> split_list(const std::string& text);

}  // namespace ktune::cli
