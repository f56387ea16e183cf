// generator/record/files.hpp: the generator's file writes, as error values instead of exceptions, on
// top of the `ktune` tool's atomic write (a reader sees the old file or the whole new one, never a
// prefix), plus an append for JSON-lines logs.
#pragma once

#include <filesystem>
#include <string>

namespace ktune::gen {

/// Writes `content` to `path` atomically, creating missing parent folders. Returns an empty string on
/// success, else the error.
std::string write_file_atomic(const std::filesystem::path& path, const std::string& content);

/// Reads a whole file; `error` is set (and the result empty) when it cannot be read.
std::string read_file(const std::filesystem::path& path, std::string& error);

/// Appends one line (a newline is added) and flushes, for JSON-lines logs that a crash may cut short.
std::string append_line(const std::filesystem::path& path, const std::string& line);

}  // namespace ktune::gen
