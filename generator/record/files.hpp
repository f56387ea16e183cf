// generator/record/files.hpp: file writes that never leave a half-written file behind (write to a
// temporary beside the target, flush, rename), and the other small file helpers the generator shares.
#pragma once

#include <filesystem>
#include <string>

namespace ktune::gen {

/// Writes `content` to `path` atomically: a reader sees the old file or the whole new one, never a
/// prefix. Creates missing parent folders. Returns an empty string on success, else the error.
std::string write_file_atomic(const std::filesystem::path& path, const std::string& content);

/// Reads a whole file; `error` is set (and the result empty) when it cannot be read.
std::string read_file(const std::filesystem::path& path, std::string& error);

/// Appends one line (a newline is added) and flushes, for JSON-lines logs that a crash may cut short.
std::string append_line(const std::filesystem::path& path, const std::string& line);

}  // namespace ktune::gen
