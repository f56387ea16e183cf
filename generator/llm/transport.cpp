// generator/llm/transport.cpp: the libcurl transport (transport.hpp).
#include "generator/llm/transport.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <mutex>

#include <fmt/format.h>

namespace ktune::gen::llm {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::none: return "none";
    case ErrorKind::connect: return "connect";
    case ErrorKind::timeout: return "timeout";
    case ErrorKind::stalled: return "stalled";
    case ErrorKind::closed: return "closed";
    case ErrorKind::other: return "other";
    case ErrorKind::replay: return "replay";
  }
  return "other";
}

ErrorKind error_kind_from_name(const std::string& name) {
  for (ErrorKind k : {ErrorKind::none, ErrorKind::connect, ErrorKind::timeout, ErrorKind::stalled,
                      ErrorKind::closed, ErrorKind::other, ErrorKind::replay})
    if (name == error_kind_name(k)) return k;
  return ErrorKind::other;
}

bool retryable(ErrorKind kind) {
  return kind == ErrorKind::connect || kind == ErrorKind::timeout || kind == ErrorKind::stalled ||
         kind == ErrorKind::closed;
}

namespace {

using Clock = std::chrono::steady_clock;

struct Received {
  HttpResponse* response;
  CURL* curl = nullptr;
  double stall_s = 60;
  Clock::time_point last_activity = Clock::now();
  curl_off_t last_uploaded = 0;
  bool too_large = false;
  bool stalled = false;
};

/// The stall watchdog. curl's own LOW_SPEED check measures a moving average over about five seconds,
/// so after the request's upload it fires seconds late; this one fires within about a second of
/// stall_s without a byte moving either way.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t uploaded) {
  auto* r = static_cast<Received*>(user);
  const Clock::time_point now = Clock::now();
  // Until the connection stands, the connect timeout is the judge, not the stall watchdog.
  curl_off_t connected_us = 0;
  if (curl_easy_getinfo(r->curl, CURLINFO_CONNECT_TIME_T, &connected_us) == CURLE_OK && connected_us == 0)
    r->last_activity = now;
  if (uploaded != r->last_uploaded) {
    r->last_uploaded = uploaded;
    r->last_activity = now;
  }
  if (std::chrono::duration<double>(now - r->last_activity).count() >= r->stall_s) {
    r->stalled = true;
    return 1;  // abort: CURLE_ABORTED_BY_CALLBACK
  }
  return 0;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* r = static_cast<Received*>(user);
  const std::size_t n = size * count;
  r->last_activity = Clock::now();
  if (r->response->body.size() + n > CurlTransport::max_body_bytes) {
    r->too_large = true;
    return 0;  // makes curl abort the transfer
  }
  r->response->body.append(data, n);
  return n;
}

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* r = static_cast<Received*>(user);
  const std::size_t n = size * count;
  r->last_activity = Clock::now();
  const std::string line(data, n);
  // A new status line (after a 100 Continue or a redirect) starts a new set of headers.
  if (line.starts_with("HTTP/")) {
    r->response->headers.clear();
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string::npos) return n;
  std::string name = trim(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  r->response->headers[name] = trim(line.substr(colon + 1));
  return n;
}

/// curl wants whole seconds (or milliseconds) as long; never round a positive limit down to 0 (= off).
long whole_ms(double seconds) { return std::max(1L, static_cast<long>(std::ceil(seconds * 1000.0))); }
long whole_s(double seconds) { return std::max(1L, static_cast<long>(std::ceil(seconds))); }

}  // namespace

CurlTransport::CurlTransport() {
  // curl_global_init is not thread-safe itself; once per process is what libcurl asks for.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpResponse CurlTransport::post(const HttpRequest& request) {
  HttpResponse response;
  CURL* curl = curl_easy_init();
  if (!curl) {
    response.kind = ErrorKind::other;
    response.error = "curl_easy_init failed";
    return response;
  }
  Received received{&response, curl};
  received.stall_s = request.stall_timeout_s;
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers) headers = curl_slist_append(headers, (name + ": " + value).c_str());
  // An empty Expect header stops curl from waiting for "100 Continue" before sending large bodies.
  headers = curl_slist_append(headers, "Expect:");
  char error_buffer[CURL_ERROR_SIZE] = {0};

  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &received);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &received);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for timeouts: safe in threads
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, whole_ms(request.connect_timeout_s));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, whole_ms(request.total_timeout_s));
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &received);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  // curl's own stall check stays as a second line of defence (see on_progress for why it is late).
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, whole_s(request.stall_timeout_s));
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "ktune-generator/0.1");

  const auto start = Clock::now();
  received.last_activity = start;
  const CURLcode code = curl_easy_perform(curl);
  response.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();

  if (code == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    response.status = static_cast<int>(status);
  } else {
    const std::string detail = error_buffer[0] ? error_buffer : curl_easy_strerror(code);
    response.body.clear();
    switch (code) {
      case CURLE_COULDNT_CONNECT:
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY:
        response.kind = ErrorKind::connect;
        response.error = "connect failed: " + detail;
        break;
      case CURLE_OPERATION_TIMEDOUT: {
        // One curl code covers three limits; tell them apart by what had happened so far.
        double connect_time = 0;
        curl_easy_getinfo(curl, CURLINFO_CONNECT_TIME, &connect_time);
        if (connect_time <= 0) {
          response.kind = ErrorKind::connect;
          response.error = fmt::format("connect failed: no connection within {} s ({})",
                                       request.connect_timeout_s, detail);
        } else if (response.latency_ms >= request.total_timeout_s * 1000.0 - 50.0 ||
                   detail.find("too slow") == std::string::npos) {
          response.kind = ErrorKind::timeout;
          response.error = fmt::format("timeout: no complete answer within {} s ({})", request.total_timeout_s,
                                       detail);
        } else {
          response.kind = ErrorKind::stalled;
          response.error = fmt::format("stalled: nothing received for {} s ({})", request.stall_timeout_s, detail);
        }
        break;
      }
      case CURLE_GOT_NOTHING:
      case CURLE_RECV_ERROR:
      case CURLE_SEND_ERROR:
      case CURLE_PARTIAL_FILE:
      case CURLE_HTTP2:
      case CURLE_HTTP2_STREAM:
        response.kind = ErrorKind::closed;
        response.error = "connection closed: " + detail;
        break;
      case CURLE_ABORTED_BY_CALLBACK:
        response.kind = received.stalled ? ErrorKind::stalled : ErrorKind::other;
        response.error = received.stalled
                             ? fmt::format("stalled: nothing received for {} s", request.stall_timeout_s)
                             : "transport error: " + detail;
        break;
      case CURLE_WRITE_ERROR:
        response.kind = received.too_large ? ErrorKind::other : ErrorKind::closed;
        response.error = received.too_large
                             ? fmt::format("the response exceeds {} bytes", max_body_bytes)
                             : "connection closed: " + detail;
        break;
      default:
        response.kind = ErrorKind::other;
        response.error = fmt::format("transport error: {}", detail);
        break;
    }
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return response;
}

}  // namespace ktune::gen::llm
