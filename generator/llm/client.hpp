// generator/llm/client.hpp: the OpenAI-compatible Chat Completions client the agents talk through. One
// chat() is one answer: HTTP attempts with jittered exponential backoff on transient failures, bounded
// re-asks on unusable answers (blank, non-JSON in JSON mode, truncated), token usage summed, every
// attempt recorded. Errors come back as values; nothing is thrown or printed.
#pragma once

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generator/llm/config.hpp"
#include "generator/llm/recording.hpp"
#include "generator/llm/transport.hpp"

namespace ktune::gen::llm {

struct Message {
  std::string role;  ///< system | user | assistant
  std::string content;

  static Message system(std::string text) { return {"system", std::move(text)}; }
  static Message user(std::string text) { return {"user", std::move(text)}; }
  static Message assistant(std::string text) { return {"assistant", std::move(text)}; }
};

struct Usage {
  long long prompt_tokens = 0;
  long long completion_tokens = 0;
  long long total_tokens = 0;
  int calls = 0;          ///< chat() calls
  int http_attempts = 0;  ///< HTTP attempts, failed ones included
  int answers = 0;        ///< answers received (HTTP 2xx), discarded ones included: each one cost tokens

  Usage& operator+=(const Usage& other);
};
nlohmann::json to_json(const Usage& usage);

/// What went wrong, for callers that react differently (e.g. stop the run on `refused`).
enum class Failure {
  none,
  transport,  ///< connection errors, timeouts, stalls, retryable statuses: the attempt budget ran out
  refused,    ///< a status that is never retried (400, 401, 402, 403, 404, 422, exhausted quota, ...)
  answer,     ///< the answers stayed blank, non-JSON or truncated after max_answer_retries re-asks
  malformed,  ///< the provider answered 2xx with something that is not a chat completion
  replay,     ///< a replay diverged from its recording
};
const char* failure_name(Failure failure);

struct ChatResult {
  bool ok = false;
  std::string content;        ///< the answer's text (leading and trailing whitespace kept)
  std::string reasoning;      ///< reasoning_content where the provider sends it (DeepSeek thinking mode)
  std::string finish_reason;  ///< of the answer returned (or of the last one when !ok)
  Usage usage;                ///< this call alone
  int http_attempts = 0;      ///< HTTP attempts this call made
  int answer_retries = 0;     ///< re-asks this call made
  int status = 0;             ///< HTTP status of the last attempt (0: none arrived)
  Failure failure = Failure::none;
  std::string error;          ///< ok == false: what happened, in a sentence a user can act on
  std::vector<double> waits_s;  ///< the backoff waits chosen, in order
};

/// Per-call overrides of the configuration (e.g. a planner that samples hotter than the coder).
struct ChatOptions {
  std::optional<bool> json_mode;
  std::optional<int> max_tokens;
  std::optional<double> temperature;
};

/// How the client waits between attempts (seconds). Tests and replays pass one that returns at once.
using Sleeper = std::function<void(double seconds)>;
void real_sleep(double seconds);

/// The JSON value in an answer: the whole text, else the inside of one ``` or ```json fence, else the
/// span from the first '{' to the last '}'. nullopt when none parses. Agents parse answers with this.
std::optional<nlohmann::json> parse_json_answer(const std::string& content);

/// The backoff before retry number `retry` (1 = after the first failure): uniform in
/// [0, min(cap, base * 2^(retry-1))] drawn from `rng`, then at least `retry_after_s` (when >= 0), all
/// capped at `cap`.
double backoff_wait(int retry, double base_s, double cap_s, double retry_after_s, std::mt19937_64& rng);

/// Seconds a `retry-after` / `retry-after-ms` header asks for: delta seconds (fractions allowed) or an
/// HTTP-date measured from the response's `date` header (else from the clock). -1 when absent or unreadable.
double retry_after_seconds(const std::map<std::string, std::string>& headers);

class Client {
 public:
  /// The key is read once here from the variable config.api_key_env names. The transport and the
  /// recorder must outlive the client. Not thread-safe: one Client per thread (they may share the
  /// transport and the recorder).
  Client(ProviderConfig config, Transport& transport, Recorder* recorder = nullptr, Sleeper sleeper = real_sleep);

  ChatResult chat(const std::vector<Message>& messages, const ChatOptions& options = {});

  Usage usage() const { return usage_; }  ///< summed over every call so far
  const ProviderConfig& config() const { return config_; }
  std::string endpoint() const;           ///< {base_url}/chat/completions

  /// The request body chat() sends first for these messages (for tests and records).
  std::string request_body(const std::vector<Message>& messages, const ChatOptions& options = {}) const;

 private:
  ChatResult chat_once(const std::vector<Message>& messages, const ChatOptions& options);
  /// HTTP attempts for one request body until a 2xx arrives (true, in `out`) or the policy gives up
  /// (false, with result.failure and result.error set). `attempts` counts on across answer retries.
  bool send(const std::string& body, int call, int& attempts, ChatResult& result, HttpResponse& out);
  std::string build_body(const std::vector<Message>& messages, bool json_mode, int max_tokens,
                         const std::optional<double>& temperature) const;
  std::string describe_status(const HttpResponse& response, bool quota) const;

  ProviderConfig config_;
  Transport& transport_;
  Recorder* recorder_;
  Sleeper sleeper_;
  std::string key_;
  std::mt19937_64 rng_;
  Usage usage_;
};

}  // namespace ktune::gen::llm
