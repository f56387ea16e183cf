// generator/record/run_record.cpp: the run's folder under runs/ (run_record.hpp).
#include "generator/record/run_record.hpp"

#include <fmt/format.h>

#include <ctime>

#include "generator/record/files.hpp"

namespace ktune::gen {

namespace fs = std::filesystem;

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string RunRecord::create(const fs::path& runs_dir, const std::string& op, const std::string& stamp, RunRecord& out) {
  std::error_code ec;
  fs::create_directories(runs_dir / op, ec);
  if (ec) return "cannot create " + (runs_dir / op).string() + ": " + ec.message();
  for (int k = 0; k < 100; ++k) {
    const fs::path d = runs_dir / op / (k == 0 ? stamp : fmt::format("{}-{}", stamp, k));
    if (fs::create_directory(d, ec)) {  // false when it exists: another run took this name
      out.dir_ = d;
      return {};
    }
    if (ec) return "cannot create " + d.string() + ": " + ec.message();
  }
  return "cannot find a free run folder under " + (runs_dir / op).string();
}

fs::path RunRecord::round_dir(int round) const { return dir_ / fmt::format("round-{:02}", round); }

std::string RunRecord::write(const std::string& name, const std::string& content) const {
  return write_file_atomic(dir_ / name, content);
}

std::string RunRecord::write_round(int round, const std::string& name, const std::string& content) const {
  return write_file_atomic(round_dir(round) / name, content);
}

}  // namespace ktune::gen
