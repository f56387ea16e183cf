// tools/ktune/io.hpp: files, errors and number formatting shared by the `ktune` subcommands.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ktune::tool {

/// Exit codes of every subcommand.
enum ExitCode : int { exit_ok = 0, exit_failure = 1, exit_usage = 2 };

/// A failure the user should read; `code` is the process exit code it leads to.
class ToolError : public std::runtime_error {
 public:
  explicit ToolError(const std::string& what, int code = exit_failure) : std::runtime_error(what), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// A usage error (exit code 2).
inline ToolError usage_error(const std::string& what) { return ToolError(what, exit_usage); }

std::string read_file(const std::string& path);
bool file_exists(const std::string& path);
bool is_directory(const std::string& path);
/// Sub-directories (names only, sorted) of `dir`; empty when `dir` does not exist.
std::vector<std::string> list_dirs(const std::string& dir);
/// Files (names only, sorted) of `dir` whose name ends with `suffix`.
std::vector<std::string> list_files(const std::string& dir, const std::string& suffix);
void make_dirs(const std::string& dir);

/// Writes `content` to `path` through a temporary file in the same directory and a rename, so
/// readers see the old file or the new one, never half of one. Creates missing parent directories.
/// Returns false (and writes nothing) when the file already holds exactly `content`.
bool write_atomic(const std::string& path, const std::string& content);

/// 64-bit FNV-1a of bytes, as hex "0x...": names the inputs of generated files.
std::string content_hash(const std::string& bytes);

/// Fixed-point formatting that never depends on the locale: fixed(3.14159, 2) == "3.14".
std::string fixed(double v, int digits);
/// Shortest form that keeps three significant digits for times and ratios: "12.3", "0.0456", "1234".
std::string sig3(double v);

/// CMake's configure_file(@ONLY) on a template: @NAME@ replaced by its value, nothing else touched.
std::string substitute(std::string text, const std::map<std::string, std::string>& values);

/// Path join with exactly one '/'.
std::string join_path(const std::string& a, const std::string& b);

}  // namespace ktune::tool
