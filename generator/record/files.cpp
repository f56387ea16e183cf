// generator/record/files.cpp: file helpers (files.hpp).
#include "generator/record/files.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "ktune/io.hpp"

namespace ktune::gen {

namespace fs = std::filesystem;

std::string write_file_atomic(const fs::path& path, const std::string& content) {
  try {
    tool::write_atomic(path.string(), content);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string read_file(const fs::path& path, std::string& error) {
  try {
    error.clear();
    return tool::read_file(path.string());
  } catch (const std::exception& e) {
    error = e.what();
    return {};
  }
}

std::string append_line(const fs::path& path, const std::string& line) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  FILE* f = std::fopen(path.c_str(), "ab");
  if (!f) return "cannot append to " + path.string() + ": " + std::strerror(errno);
  const std::string l = line + "\n";
  const bool ok = std::fwrite(l.data(), 1, l.size(), f) == l.size() && std::fflush(f) == 0;
  if (std::fclose(f) != 0 || !ok) return "cannot append to " + path.string();
  return {};
}

}  // namespace ktune::gen
