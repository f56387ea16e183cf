// tools/ktune/cli.cpp: the command table, `ktune`'s dispatch and the parsing every command shares.
#include "cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "commands.hpp"

namespace ktune::cli {

namespace {

/// The tool's own commands, in the order `ktune --help` lists them.
const Command core_commands[] = {
    {"list", "a kernel's space per dtype and architecture: total, feasible, pruned per rule", tool::cmd_list},
    {"gen", "the generated translation units: every op's feasible variants in shards (as the build does)",
     tool::cmd_gen},
    {"run", "the benchmark sweep on this GPU (runs ktune_bench; tools/tune.sh run adds the retest)", tool::cmd_run},
    {"select", "Google Benchmark JSON -> retest candidates (--topk) or reports/<gpu>/<op>.json + .t4.json",
     tool::cmd_select},
    {"merge-raw", "the slices' Google Benchmark JSON (one per GPU or cluster task) -> one file for select",
     tool::cmd_merge_raw},
    {"shapes", "the shapes serving models call the ops with: the catalogue's tune grid, or one config.json's\n"
               "(--from-config; --write-specs: the specs' dims from the catalogue)",
     tool::cmd_shapes},
    {"tables", "reports/*/<op>.json -> kernels/<op>/tuned.cuh (--check: fail if out of date)", tool::cmd_tables},
    {"report", "reports/*/<op>.json -> reports/<gpu>/<op>.{md,html} and index.{md,html} (--check)", tool::cmd_report},
    {"compare", "two tunes shape by shape: the user's regret, winners held or within band (--attach: the reports'\n"
                "run-to-run section)",
     tool::cmd_compare},
    {"replay-guides", "a full search -> what the guided screens' rule would keep at a ratio, the winners it would\n"
                      "leave out",
     tool::cmd_replay_guides},
    {"profile", "CUPTI metrics and findings of one op's variants on this GPU (runs ktune_profile)", tool::cmd_profile},
    {"profile-plan", "reports/<gpu>/<op>.json -> the calls `ktune_profile --plan` profiles (S and the winners)",
     tool::cmd_profile_plan},
    {"profile-attach", "ktune_profile's JSON -> the \"profile\" section of reports/<gpu>/<op>.json",
     tool::cmd_profile_attach},
};

std::vector<Command>& registered() {
  static std::vector<Command> table;  // filled before main by the Registrars of other layers
  return table;
}

std::string main_help() {
  std::string o = "ktune " KTUNE_TOOL_VERSION ": kernels refactored into tunable families, judged and tuned on the GPU\n\n"
                  "usage: ktune <command> [options]     ktune <command> --help\n\ncommands:\n";
  for (const Command& c : commands()) {
    std::string summary = c.summary;
    for (std::size_t nl = summary.find('\n'); nl != std::string::npos; nl = summary.find('\n', nl + 1))
      summary.insert(nl + 1, std::string(17, ' '));  // a second line under the first
    o += fmt::format("  {:<14} {}\n", c.name, summary);
  }
  return o + "\nexit codes: 0 ok, 1 failure, 2 usage error\n";
}

/// Levenshtein distance (insert, delete, substitute: 1 each).
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

/// The long names of app's options, as "--name".
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) out.push_back("--" + n);
  return out;
}

}  // namespace

Registrar::Registrar(Command command) { registered().push_back(command); }

std::vector<Command> commands() {
  std::vector<Command> out(std::begin(core_commands), std::end(core_commands));
  std::vector<Command> more = registered();
  std::sort(more.begin(), more.end(), [](const Command& a, const Command& b) { return std::string(a.name) < b.name; });
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

int run_ktune(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << main_help();
    return args.empty() ? exit_usage : exit_ok;
  }
  if (args[0] == "--version") {
    std::cout << "ktune " KTUNE_TOOL_VERSION "\n";
    return exit_ok;
  }
  const std::vector<Command> table = commands();
  const auto command = std::find_if(table.begin(), table.end(), [&](const Command& c) { return args[0] == c.name; });
  if (command == table.end()) {
    std::vector<std::string> names;
    for (const Command& c : table) names.push_back(c.name);
    std::cerr << fmt::format("ktune: unknown command '{}'{}\n(ktune --help lists the commands)\n", args[0],
                             did_you_mean(args[0], names));
    return exit_usage;
  }
  try {
    return command->run({args.begin() + 1, args.end()});
  } catch (const tool::ToolError& e) {
    std::cerr << fmt::format("ktune {}: {}\n", command->name, e.what());
    if (e.code() == exit_usage) std::cerr << fmt::format("(ktune {} --help lists its options)\n", command->name);
    return e.code();
  } catch (const std::exception& e) {
    std::cerr << fmt::format("ktune {}: {}\n", command->name, e.what());
    return exit_failure;
  }
}

void style(CLI::App& app) {
  app.set_help_flag("-h,--help", "print this help and exit");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(30);
  app.get_formatter()->label("OPTIONS", "options");
  app.get_formatter()->label("Usage", "usage");
  app.allow_extras();  // parse() names what is left over, with a suggestion
}

Parsed parse_args(CLI::App& app, const std::vector<std::string>& args) {
  Parsed out;
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the arguments last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out.help = true;
    return out;
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--x: 1 required TEXT missing" for an option given without its value.
    const std::string what = e.what();
    const std::size_t colon = what.find(": ");
    const bool no_value = colon != std::string::npos && what.find(" required ") != std::string::npos &&
                          what.size() >= 7 && what.compare(what.size() - 7, 7, "missing") == 0;
    out.error = no_value ? what.substr(0, colon) + " needs a value" : what;
    return out;
  } catch (const CLI::ParseError& e) {
    out.error = e.what();
    return out;
  }
  for (const std::string& extra : app.remaining()) {
    if (extra.size() > 1 && extra[0] == '-') {
      const std::string flag = extra.substr(0, extra.find('='));
      out.error = fmt::format("unknown option {}{}", flag, did_you_mean(flag, option_names(app)));
    } else {
      out.error = fmt::format("unexpected argument '{}'", extra);
    }
    break;
  }
  return out;
}

std::optional<int> parse(CLI::App& app, const std::vector<std::string>& args) {
  const Parsed p = parse_args(app, args);
  if (p.help) {
    std::cout << app.help();
    return exit_ok;
  }
  if (p.error.empty()) return std::nullopt;
  std::cerr << fmt::format("{}: {}\n({} --help lists its options)\n", app.get_name(), p.error, app.get_name());
  return exit_usage;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::size_t best = limit + 1;
  std::vector<std::string> nearest;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best) best = d, nearest.clear();
    if (d == best && std::find(nearest.begin(), nearest.end(), c) == nearest.end()) nearest.push_back(c);
  }
  if (nearest.empty()) return {};
  return fmt::format(" (did you mean {}?)", fmt::join(nearest, " or "));
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t from = 0; from <= text.size();) {
    const std::size_t end = std::min(text.find(',', from), text.size());
    if (end > from) out.push_back(text.substr(from, end - from));
    from = end + 1;
  }
  return out;
}

}  // namespace ktune::cli
