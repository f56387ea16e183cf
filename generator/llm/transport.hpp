// generator/llm/transport.hpp: one HTTP POST and its outcome as a value. The client sees every network
// failure as an HttpResponse with status 0 and an ErrorKind, so the retry policy lives in one place
// (client.cpp) and a recording can stand in for the network (recording.hpp's ReplayTransport).
#pragma once

#include <map>
#include <string>

namespace ktune::gen::llm {

/// Why an attempt produced no HTTP status.
enum class ErrorKind {
  none,       ///< an HTTP status arrived (any status, 500 included)
  connect,    ///< the connection could not be made (refused, unresolved host, connect timeout)
  timeout,    ///< the overall time cap of the attempt was reached
  stalled,    ///< less than 1 byte/s arrived for the stall time
  closed,     ///< the server dropped the connection or sent a broken reply
  other,      ///< any other transport failure (TLS, bad URL, ...): not retried
  replay,     ///< a replay ran off its recording or diverged from it: not retried
};

/// Stable lower-case names ("none", "connect", ...) for recordings and messages.
const char* error_kind_name(ErrorKind kind);
ErrorKind error_kind_from_name(const std::string& name);  ///< unknown names give ErrorKind::other

/// True for the failures worth another attempt: connect, timeout, stalled, closed.
bool retryable(ErrorKind kind);

struct HttpRequest {
  std::string url;
  std::string body;
  std::map<std::string, std::string> headers;  ///< sent as given (Authorization among them; never recorded)
  double connect_timeout_s = 10;
  double stall_timeout_s = 60;
  double total_timeout_s = 600;
};

struct HttpResponse {
  int status = 0;                              ///< 0: no HTTP status arrived (see kind and error)
  std::string body;
  std::map<std::string, std::string> headers;  ///< names in lower case; a repeated header keeps the last value
  ErrorKind kind = ErrorKind::none;
  std::string error;                           ///< what went wrong in words, "" when a status arrived
  double latency_ms = 0;                       ///< from sending the request to the end of the reply or failure
};

/// Sends one request. Implementations never throw and must be safe to call from several threads.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual HttpResponse post(const HttpRequest& request) = 0;
};

/// libcurl, a fresh easy handle per call (no shared state between threads). Honours the usual proxy
/// variables (https_proxy, no_proxy) as curl does.
class CurlTransport final : public Transport {
 public:
  CurlTransport();
  HttpResponse post(const HttpRequest& request) override;

  /// Bodies beyond this size are cut off and reported as ErrorKind::other (no answer is that long).
  static constexpr std::size_t max_body_bytes = 64u << 20;
};

}  // namespace ktune::gen::llm
