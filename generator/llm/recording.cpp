// generator/llm/recording.cpp: JSON-lines recordings with redaction, and their replay (recording.hpp).
#include "generator/llm/recording.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace ktune::gen::llm {

namespace fs = std::filesystem;

namespace {

std::string dump(const nlohmann::json& j) {
  // replace: an invalid UTF-8 byte in a provider's answer must not lose the whole line.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// A short rendering of a JSON value for messages.
std::string brief(const nlohmann::json& j) {
  std::string s = dump(j);
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
}

/// Writes all of `text` with one write() on an O_APPEND descriptor; retries only the remainder of a
/// partial write (which O_APPEND on a local file does not produce in practice).
std::string append_whole(const fs::path& path, const std::string& text) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("cannot open the LLM recording {}: {}", path.string(), std::strerror(errno));
  std::size_t done = 0;
  std::string error;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = fmt::format("cannot write the LLM recording {}: {}", path.string(), std::strerror(errno));
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && error.empty())
    error = fmt::format("cannot write the LLM recording {}: {}", path.string(), std::strerror(errno));
  return error;
}

nlohmann::json redact_json(const nlohmann::json& j, const std::vector<std::string>& secrets) {
  if (j.is_string()) return redact(j.get<std::string>(), secrets);
  if (j.is_array() || j.is_object()) {
    nlohmann::json out = j;
    for (auto it = out.begin(); it != out.end(); ++it) *it = redact_json(*it, secrets);
    if (j.is_object()) {
      // Keys too: a provider could echo anything.
      nlohmann::json keyed = nlohmann::json::object();
      for (auto it = out.begin(); it != out.end(); ++it) keyed[redact(it.key(), secrets)] = *it;
      return keyed;
    }
    return out;
  }
  return j;
}

Exchange exchange_from_json(const nlohmann::json& j) {
  Exchange e;
  e.seq = j.value("seq", 0);
  e.info.call = j.value("call", 0);
  e.info.attempt = j.value("attempt", 0);
  e.info.wait_s = j.value("wait_s", 0.0);
  e.url = j.value("url", "");
  e.request = j.contains("request") ? j["request"] : nlohmann::json();
  e.response.status = j.value("status", 0);
  e.response.body = j.value("body", "");
  e.response.error = j.value("error", "");
  e.response.kind = error_kind_from_name(j.value("error_kind", "none"));
  e.response.latency_ms = j.value("latency_ms", 0.0);
  if (auto it = j.find("headers"); it != j.end() && it->is_object())
    for (auto h = it->begin(); h != it->end(); ++h)
      if (h->is_string()) e.response.headers[h.key()] = h->get<std::string>();
  return e;
}

nlohmann::json request_json(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? nlohmann::json(body) : j;
}

}  // namespace

std::string redact(std::string text, const std::vector<std::string>& secrets) {
  for (const std::string& secret : secrets) {
    if (secret.empty()) continue;
    for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + std::strlen(redacted)))
      text.replace(at, secret.size(), redacted);
  }
  return text;
}

bool recorded_header(const std::string& name) {
  return name == "retry-after" || name == "retry-after-ms" || name == "date" || name == "content-type" ||
         name == "x-request-id" || name.starts_with("x-ratelimit-");
}

Recorder::Recorder(fs::path path, std::vector<std::string> secrets)
    : path_(std::move(path)), secrets_(std::move(secrets)) {
  std::error_code ec;
  if (fs::exists(path_, ec)) {
    const Recording existing = read_recording(path_);
    if (!existing.exchanges.empty()) seq_ = existing.exchanges.back().seq;
  }
}

std::string Recorder::record(const AttemptInfo& info, const HttpRequest& request, const HttpResponse& response) {
  nlohmann::json headers = nlohmann::json::object();
  for (const auto& [name, value] : response.headers)
    if (recorded_header(name)) headers[name] = value;
  std::lock_guard lock(mutex_);
  nlohmann::json line = {
      {"seq", seq_ + 1},
      {"call", info.call},
      {"attempt", info.attempt},
      {"wait_s", info.wait_s},
      {"url", request.url},
      {"request", request_json(request.body)},
      {"status", response.status},
      {"headers", headers},
      {"body", response.body},
      {"error", response.error},
      {"error_kind", error_kind_name(response.kind)},
      {"latency_ms", response.latency_ms},
  };
  // Redact the values, then the finished line as well: the key must not survive in any form.
  std::string text = redact(dump(redact_json(line, secrets_)), secrets_) + "\n";
  std::string error = append_whole(path_, text);
  if (error.empty()) {
    ++seq_;
    ++written_;
  } else if (error_.empty()) {
    error_ = error;
  }
  return error;
}

int Recorder::count() const {
  std::lock_guard lock(mutex_);
  return written_;
}

const std::string& Recorder::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

Recording read_recording(const fs::path& path) {
  Recording out;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    out.error = fmt::format("cannot read the LLM recording {}", path.string());
    return out;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::size_t start = 0;
  int line_number = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    const bool complete = end != std::string::npos;
    if (!complete) end = text.size();
    const std::string line = text.substr(start, end - start);
    ++line_number;
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      if (!complete) {
        out.truncated_tail = true;
        break;
      }
      out.error = fmt::format("{}:{}: not a JSON object", path.string(), line_number);
      return out;
    }
    try {
      out.exchanges.push_back(exchange_from_json(j));
    } catch (const std::exception& e) {  // a field of the wrong type
      out.error = fmt::format("{}:{}: {}", path.string(), line_number, e.what());
      return out;
    }
  }
  return out;
}

std::unique_ptr<Transport> open_transport(const fs::path& replay_path, std::string& error) {
  error.clear();
  if (replay_path.empty()) return std::make_unique<CurlTransport>();
  Recording recording = read_recording(replay_path);
  if (!recording.ok()) {
    error = recording.error;
    return nullptr;
  }
  return std::make_unique<ReplayTransport>(std::move(recording.exchanges));
}

ReplayTransport::ReplayTransport(std::vector<Exchange> exchanges) : exchanges_(std::move(exchanges)) {}

HttpResponse ReplayTransport::post(const HttpRequest& request) {
  std::lock_guard lock(mutex_);
  HttpResponse diverged;
  diverged.kind = ErrorKind::replay;
  if (!divergence_.empty()) {
    diverged.error = divergence_;
    return diverged;
  }
  if (next_ >= exchanges_.size()) {
    divergence_ = fmt::format(
        "replay diverged: the run made request {} but the recording holds only {} (the run asked for more "
        "than was recorded)",
        next_ + 1, exchanges_.size());
    diverged.error = divergence_;
    return diverged;
  }
  const Exchange& e = exchanges_[next_];
  const nlohmann::json now = request_json(request.body);
  if (now != e.request) {
    std::string where = "the body";
    const nlohmann::json patch = nlohmann::json::diff(e.request, now);
    if (!patch.empty()) {
      const nlohmann::json& first = patch.front();
      const std::string path = first.value("path", "");
      where = fmt::format("{} ({} {})", path.empty() ? "/" : path, first.value("op", "?"),
                          first.contains("value") ? brief(first["value"]) : std::string("-"));
    }
    divergence_ = fmt::format(
        "replay diverged at request {} (recorded seq {}): the request body differs from the recording at {}",
        next_ + 1, e.seq, where);
    diverged.error = divergence_;
    return diverged;
  }
  ++next_;
  return e.response;
}

std::size_t ReplayTransport::used() const {
  std::lock_guard lock(mutex_);
  return next_;
}

std::size_t ReplayTransport::remaining() const {
  std::lock_guard lock(mutex_);
  return exchanges_.size() - next_;
}

const std::string& ReplayTransport::divergence() const {
  std::lock_guard lock(mutex_);
  return divergence_;
}

}  // namespace ktune::gen::llm
