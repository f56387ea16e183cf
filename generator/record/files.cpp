// generator/record/files.cpp: atomic writes and small file helpers (files.hpp).
#include "generator/record/files.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ktune::gen {

namespace fs = std::filesystem;

std::string write_file_atomic(const fs::path& path, const std::string& content) {
  std::error_code ec;
  if (path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
    if (ec) return "cannot create " + path.parent_path().string() + ": " + ec.message();
  }
  // The temporary is unique per process and sits in the same folder, so the rename cannot cross filesystems.
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return "cannot write " + tmp.string() + ": " + std::strerror(errno);
  const bool written = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  const bool flushed = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!written || !flushed || !closed) {
    fs::remove(tmp, ec);
    return "cannot write " + tmp.string() + " (disk full?)";
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return "cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message();
  }
  return {};
}

std::string read_file(const fs::path& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path.string();
    return {};
  }
  std::ostringstream s;
  s << in.rdbuf();
  error.clear();
  return s.str();
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
