// generator/llm/recording.hpp: every HTTP attempt of a run as one JSON line (request body, status,
// selected response headers, response body, transport error, latency), with the API key redacted, and
// a Transport that answers a run again from such a recording with no network.
//
// One line per attempt, keys in this order (nlohmann sorts them):
//   {"attempt":2,"body":"{...}","call":1,"error":"","error_kind":"none","headers":{"retry-after":"2"},
//    "latency_ms":3.5,"request":{...},"seq":3,"status":200,"url":"http://.../chat/completions",
//    "wait_s":2.0}
// seq counts attempts from 1 over the whole recording; call counts Client::chat calls from 1; attempt
// counts the HTTP attempts of one answer (answer retries continue the count); wait_s is the backoff the
// client waited before this attempt. request is the body sent, parsed as JSON (a string if it was not).
// Request headers are never written (Authorization lives there); the key is replaced by "[REDACTED]"
// wherever else it appears.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generator/llm/transport.hpp"

namespace ktune::gen::llm {

inline constexpr const char* redacted = "[REDACTED]";

/// Replaces every occurrence of each non-empty secret in text by "[REDACTED]".
std::string redact(std::string text, const std::vector<std::string>& secrets);

/// The response headers kept in recordings (and so available to a replayed client): retry-after,
/// retry-after-ms, date, content-type, x-request-id, and every x-ratelimit-* header.
bool recorded_header(const std::string& lower_case_name);

/// Where the client stood when it made an attempt (recorded beside the exchange).
struct AttemptInfo {
  int call = 0;       ///< Client::chat call, from 1
  int attempt = 0;    ///< HTTP attempt within that call, from 1
  double wait_s = 0;  ///< backoff waited before this attempt
};

/// One recorded attempt, as read back.
struct Exchange {
  int seq = 0;
  AttemptInfo info;
  std::string url;
  nlohmann::json request;  ///< the request body (JSON, or a string when it was not JSON)
  HttpResponse response;   ///< status, selected headers, body, kind, error, latency
};

/// Appends one JSON line per attempt. Each line goes out in a single write on an O_APPEND descriptor, so
/// a crash leaves at most one truncated last line and concurrent clients never interleave bytes.
/// Thread-safe.
class Recorder {
 public:
  /// secrets: strings that must never reach the file (the API key). An existing file is appended to;
  /// seq continues from its last complete line.
  Recorder(std::filesystem::path path, std::vector<std::string> secrets);

  /// Writes the exchange; returns "" or the error (the run can go on without its recording).
  std::string record(const AttemptInfo& info, const HttpRequest& request, const HttpResponse& response);

  const std::filesystem::path& path() const { return path_; }
  int count() const;                 ///< lines written by this recorder
  const std::string& error() const;  ///< the first write error, "" if none

 private:
  std::filesystem::path path_;
  std::vector<std::string> secrets_;
  mutable std::mutex mutex_;
  int seq_ = 0;
  int written_ = 0;
  std::string error_;
};

struct Recording {
  std::vector<Exchange> exchanges;
  bool truncated_tail = false;  ///< the last line was cut short (a crash mid-write) and was skipped
  std::string error;            ///< non-empty: the file could not be read or a complete line is broken
  bool ok() const { return error.empty(); }
};

/// Reads a recording. A last line without its newline that does not parse is skipped (truncated_tail);
/// any other line that does not parse is an error naming its line number.
Recording read_recording(const std::filesystem::path& path);

/// Answers each request with the next recorded exchange, after checking that the request body equals the
/// recorded one. Divergence (a different body, or more requests than recorded) is an ErrorKind::replay
/// response whose error names the exchange and the first difference; the client does not retry it.
/// Thread-safe, but a replay is only meaningful for the single-threaded order it was recorded in.
class ReplayTransport final : public Transport {
 public:
  explicit ReplayTransport(std::vector<Exchange> exchanges);
  HttpResponse post(const HttpRequest& request) override;

  std::size_t used() const;       ///< exchanges answered so far
  std::size_t remaining() const;  ///< exchanges not yet asked for (a complete replay leaves 0)
  const std::string& divergence() const;  ///< the first divergence, "" while none

 private:
  std::vector<Exchange> exchanges_;
  mutable std::mutex mutex_;
  std::size_t next_ = 0;
  std::string divergence_;
};

/// The transport for a run: a CurlTransport, or — when replay_path is non-empty — a ReplayTransport over
/// that recording (nullptr with `error` set when it cannot be read).
std::unique_ptr<Transport> open_transport(const std::filesystem::path& replay_path, std::string& error);

}  // namespace ktune::gen::llm
