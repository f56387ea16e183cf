// generator/toolchain/process.hpp: runs a child process (a compiler, a candidate's benchmark, the
// sanitizer) with a time limit, capturing its output. Generated code only ever runs this way: a
// candidate that hangs is killed with its whole process group and reported as timed out.
#pragma once

#include <string>
#include <vector>

namespace ktune::gen {

struct ProcessResult {
  bool started = false;     ///< false: it could not be started (error says why)
  int exit_code = -1;       ///< the exit status; 128 + N when killed by signal N
  bool timed_out = false;   ///< killed at the time limit
  double seconds = 0;       ///< wall time
  std::string output;       ///< stdout and stderr interleaved; long output keeps its head and tail
  std::string error;
  bool ok() const { return started && !timed_out && exit_code == 0; }
};

struct ProcessOptions {
  double timeout_s = 600;
  std::string cwd;                        ///< empty: the current directory
  std::vector<std::string> env;           ///< extra KEY=VALUE entries (override the inherited ones)
  std::size_t max_output = 256 * 1024;    ///< bytes kept of the output (head and tail)
};

/// Runs argv[0] (searched on PATH) with argv, waits at most options.timeout_s.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

/// Runs the commands with at most `jobs` at a time; results in the order given.
std::vector<ProcessResult> run_processes(const std::vector<std::vector<std::string>>& commands, int jobs,
                                         const ProcessOptions& options = {});

/// A shell-style rendering of argv for logs ('quoted' where needed).
std::string command_line(const std::vector<std::string>& argv);

/// Appends "$ command", its output and "[exit N, T s]" to a log (the records' *.log files).
void log_process(std::string& log, const std::vector<std::string>& argv, const ProcessResult& r);

}  // namespace ktune::gen
