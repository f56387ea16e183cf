// generator/llm/client.cpp: request building, the retry policy and tolerant answer parsing (client.hpp).
#include "generator/llm/client.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <thread>

#include <fmt/format.h>

namespace ktune::gen::llm {

namespace {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n\f\v");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n\f\v");
  return s.substr(first, last - first + 1);
}

/// Statuses worth another attempt: the request was fine, the provider was busy or failing.
bool retryable_status(int status) {
  if (status == 408 || status == 409 || status == 429) return true;
  return status >= 500 && status <= 599 && status != 501 && status != 505;
}

/// The provider's own words for an error: error.message (OpenAI, DeepSeek, vLLM), else the body's start.
std::string provider_message(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    if (auto e = j.find("error"); e != j.end()) {
      if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
        return (*e)["message"].get<std::string>();
      if (e->is_string()) return e->get<std::string>();
    }
    if (auto m = j.find("message"); m != j.end() && m->is_string()) return m->get<std::string>();
  }
  std::string s = trim(body);
  if (s.size() > 200) s = s.substr(0, 197) + "...";
  return s;
}

/// OpenAI's 429 insufficient_quota (and any provider's quota code) must not be retried: waiting cannot help.
bool quota_exhausted(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  auto e = j.find("error");
  if (e == j.end() || !e->is_object()) return false;
  for (const char* field : {"code", "type"})
    if (auto f = e->find(field); f != e->end() && f->is_string() && f->get<std::string>() == "insufficient_quota")
      return true;
  return false;
}

std::string string_or_empty(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

long long count_or_zero(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<long long>() : 0;
}

/// Parses an HTTP-date (IMF-fixdate, the form every provider sends) as seconds since the epoch; -1 if not one.
double parse_http_date(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S", &tm);
  if (!end) return -1;
  return static_cast<double>(timegm(&tm));
}

bool parse_number(const std::string& text, double& out) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  char* end = nullptr;
  out = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() && std::isfinite(out);
}

std::optional<json> parse_container(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !(j.is_object() || j.is_array())) return std::nullopt;
  return j;
}

}  // namespace

Usage& Usage::operator+=(const Usage& o) {
  prompt_tokens += o.prompt_tokens;
  completion_tokens += o.completion_tokens;
  total_tokens += o.total_tokens;
  calls += o.calls;
  http_attempts += o.http_attempts;
  answers += o.answers;
  return *this;
}

nlohmann::json to_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens}, {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.total_tokens},   {"calls", u.calls},
          {"http_attempts", u.http_attempts}, {"answers", u.answers}};
}

const char* failure_name(Failure failure) {
  switch (failure) {
    case Failure::none: return "none";
    case Failure::transport: return "transport";
    case Failure::refused: return "refused";
    case Failure::answer: return "answer";
    case Failure::malformed: return "malformed";
    case Failure::replay: return "replay";
  }
  return "none";
}

void real_sleep(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

std::optional<nlohmann::json> parse_json_answer(const std::string& content) {
  const std::string text = trim(content);
  if (auto j = parse_container(text)) return j;
  // A fenced block: ```json\n...\n``` (models add fences even in JSON mode).
  if (auto open = text.find("```"); open != std::string::npos) {
    const auto line_end = text.find('\n', open);
    if (line_end != std::string::npos) {
      const auto close = text.find("```", line_end);
      if (close != std::string::npos)
        if (auto j = parse_container(text.substr(line_end + 1, close - line_end - 1))) return j;
    }
  }
  const auto first = text.find('{');
  const auto last = text.rfind('}');
  if (first != std::string::npos && last != std::string::npos && last > first)
    if (auto j = parse_container(text.substr(first, last - first + 1))) return j;
  return std::nullopt;
}

double backoff_wait(int retry, double base_s, double cap_s, double retry_after_s, std::mt19937_64& rng) {
  const double ceiling = std::min(cap_s, base_s * std::ldexp(1.0, std::clamp(retry - 1, 0, 62)));
  // 53 random bits to [0, 1): the same value on every standard library, unlike uniform_real_distribution.
  const double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  double wait = unit * ceiling;
  if (retry_after_s >= 0) wait = std::max(wait, retry_after_s);
  return std::min(wait, cap_s);
}

double retry_after_seconds(const std::map<std::string, std::string>& headers) {
  double v = 0;
  if (auto ms = headers.find("retry-after-ms"); ms != headers.end() && parse_number(ms->second, v) && v >= 0)
    return v / 1000.0;
  auto ra = headers.find("retry-after");
  if (ra == headers.end()) return -1;
  if (parse_number(ra->second, v)) return v >= 0 ? v : -1;
  const double when = parse_http_date(ra->second);
  if (when < 0) return -1;
  // Measured from the server's own clock when it says what time it is, so a replay waits the same.
  double now = -1;
  if (auto date = headers.find("date"); date != headers.end()) now = parse_http_date(date->second);
  if (now < 0) now = static_cast<double>(std::time(nullptr));
  return std::max(0.0, when - now);
}

Client::Client(ProviderConfig config, Transport& transport, Recorder* recorder, Sleeper sleeper)
    : config_(std::move(config)),
      transport_(transport),
      recorder_(recorder),
      sleeper_(sleeper ? std::move(sleeper) : Sleeper(real_sleep)),
      key_(api_key(config_)),
      rng_(config_.jitter_seed) {}

std::string Client::endpoint() const {
  std::string base = config_.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  // Tolerate a pasted full endpoint.
  if (base.ends_with("/chat/completions")) return base;
  return base + "/chat/completions";
}

std::string Client::build_body(const std::vector<Message>& messages, bool json_mode, int max_tokens,
                               const std::optional<double>& temperature) const {
  json body = json::object();
  body["model"] = config_.model;
  json list = json::array();
  for (const Message& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  body["messages"] = std::move(list);
  body[config_.token_field] = max_tokens;
  if (temperature) body["temperature"] = *temperature;
  if (config_.seed) body["seed"] = *config_.seed;
  if (json_mode) body["response_format"] = {{"type", "json_object"}};
  body["stream"] = false;
  return dump(body);
}

std::string Client::request_body(const std::vector<Message>& messages, const ChatOptions& options) const {
  return build_body(messages, options.json_mode.value_or(config_.json_mode),
                    options.max_tokens.value_or(config_.max_tokens),
                    options.temperature ? options.temperature : config_.temperature);
}

std::string Client::describe_status(const HttpResponse& r, bool quota) const {
  const std::string where = fmt::format("HTTP {} from {}", r.status, endpoint());
  const std::string said = provider_message(r.body);
  const std::string words = said.empty() ? std::string() : fmt::format(" (the provider said: {})", said);
  const std::string key_source =
      config_.api_key_env.empty()
          ? std::string("no key is configured (--llm-key-env names the variable that holds one)")
          : key_.empty() ? fmt::format("no key was sent: the environment variable {} is not set", config_.api_key_env)
                         : fmt::format("the key in the environment variable {} was refused", config_.api_key_env);
  if (quota) return fmt::format("{}: the account's quota is exhausted (insufficient_quota){}", where, words);
  switch (r.status) {
    case 401: return fmt::format("{}: authentication failed: {}{}", where, key_source, words);
    case 403:
      return fmt::format("{}: forbidden: {} for this request (model access, region or permissions){}", where,
                         key_source, words);
    case 402: return fmt::format("{}: payment required: the account has insufficient balance{}", where, words);
    case 404:
      return fmt::format(
          "{}: not found: check --llm-base-url (with its version segment, e.g. .../v1) and --llm-model '{}'{}", where,
          config_.model, words);
    case 400:
    case 422: {
      std::string hint;
      const std::string other =
          config_.token_field == "max_tokens" ? "max_completion_tokens" : "max_tokens";
      if (said.find("max_tokens") != std::string::npos || said.find("max_completion_tokens") != std::string::npos)
        hint = fmt::format("; if the provider wants the other output-limit field, try --llm-token-field {}", other);
      return fmt::format("{}: the provider rejected the request{}{}", where, words, hint);
    }
    case 301:
    case 302:
    case 307:
    case 308: {
      auto location = r.headers.find("location");
      return fmt::format("{}: the endpoint redirects{} (redirects are not followed, so the key is never sent "
                         "elsewhere): check --llm-base-url",
                         where, location == r.headers.end() ? std::string() : " to " + location->second);
    }
    default: return fmt::format("{}{}", where, words);
  }
}

bool Client::send(const std::string& body, int call, int& attempts, ChatResult& result, HttpResponse& out) {
  HttpRequest request;
  request.url = endpoint();
  request.body = body;
  request.headers["Content-Type"] = "application/json";
  request.headers["Accept"] = "application/json";
  if (!key_.empty()) request.headers["Authorization"] = "Bearer " + key_;
  request.connect_timeout_s = config_.connect_timeout_s;
  request.stall_timeout_s = config_.stall_timeout_s;
  request.total_timeout_s = config_.total_timeout_s;

  double wait = 0;
  for (int k = 1;; ++k) {
    if (wait > 0) {
      sleeper_(wait);
      result.waits_s.push_back(wait);
    }
    ++attempts;
    ++result.http_attempts;
    ++result.usage.http_attempts;
    ++usage_.http_attempts;
    HttpResponse response = transport_.post(request);
    // A failed recording must not fail the run; the recorder keeps its first error for the caller.
    if (recorder_) (void)recorder_->record({call, attempts, wait}, request, response);
    result.status = response.status;

    if (response.kind == ErrorKind::replay) {
      result.failure = Failure::replay;
      result.error = response.error;
      return false;
    }
    if (response.status >= 200 && response.status < 300) {
      out = std::move(response);
      return true;
    }
    bool retry = false;
    std::string what;
    if (response.status == 0) {
      retry = retryable(response.kind);
      what = fmt::format("{} ({})", response.error, endpoint());
    } else {
      const bool quota = quota_exhausted(response.body);
      retry = retryable_status(response.status) && !quota;
      what = describe_status(response, quota);
    }
    if (!retry) {
      result.failure = response.status == 0 ? Failure::transport : Failure::refused;
      result.error = what + "; not retried";
      return false;
    }
    if (k >= config_.max_attempts) {
      result.failure = Failure::transport;
      result.error = fmt::format("gave up after {} HTTP attempt{}: the last one failed with {}", k,
                                 k == 1 ? "" : "s", what);
      return false;
    }
    wait = backoff_wait(k, config_.backoff_base_s, config_.backoff_cap_s, retry_after_seconds(response.headers), rng_);
  }
}

ChatResult Client::chat(const std::vector<Message>& messages, const ChatOptions& options) {
  // Nothing below is expected to throw (tolerant parsing throughout); this keeps the promise regardless.
  try {
    return chat_once(messages, options);
  } catch (const std::exception& e) {
    ChatResult result;
    result.failure = Failure::malformed;
    result.error = redact(fmt::format("internal error in the LLM client: {}", e.what()), {key_});
    return result;
  }
}

ChatResult Client::chat_once(const std::vector<Message>& messages, const ChatOptions& options) {
  ChatResult result;
  ++usage_.calls;
  result.usage.calls = 1;
  const int call = usage_.calls;
  const bool json_mode = options.json_mode.value_or(config_.json_mode);
  const std::optional<double> temperature = options.temperature ? options.temperature : config_.temperature;
  int max_tokens = options.max_tokens.value_or(config_.max_tokens);
  bool raised = false, corrected = false;
  std::vector<Message> conversation = messages;
  int attempts = 0;

  for (int answer = 0;; ++answer) {
    HttpResponse response;
    if (!send(build_body(conversation, json_mode, max_tokens, temperature), call, attempts, result, response)) break;

    ++result.usage.answers;
    ++usage_.answers;
    std::string problem;  // non-empty: this answer is unusable and worth asking again
    // DeepSeek may send blank lines before the JSON while a request waits in its queue.
    const json j = json::parse(trim(response.body), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      problem = blank(response.body) ? "the response body was empty" : "the response body was not JSON";
    } else {
      if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
        Usage add;
        add.prompt_tokens = count_or_zero(*u, "prompt_tokens");
        add.completion_tokens = count_or_zero(*u, "completion_tokens");
        add.total_tokens = u->contains("total_tokens") ? count_or_zero(*u, "total_tokens")
                                                       : add.prompt_tokens + add.completion_tokens;
        result.usage += add;
        usage_ += add;
      }
      auto choices = j.find("choices");
      if (choices == j.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) {
        result.failure = Failure::malformed;
        const std::string said = j.contains("error") ? provider_message(response.body) : std::string();
        result.error = fmt::format("HTTP {} from {} carried no choices, so it is not a chat completion{}",
                                   response.status, endpoint(),
                                   said.empty() ? std::string() : " (the provider said: " + said + ")");
        break;
      }
      const json& choice = (*choices)[0];
      json message = choice.contains("message") && choice["message"].is_object() ? choice["message"] : json::object();
      result.content = string_or_empty(message, "content");
      result.reasoning = string_or_empty(message, "reasoning_content");
      result.finish_reason = string_or_empty(choice, "finish_reason");
      if (result.finish_reason == "length") {
        problem = fmt::format("the answer was cut off at the output limit ({} {})", config_.token_field, max_tokens);
        // Raise the limit once: a second truncation at twice the limit means the prompt asks for too much.
        if (!raised && max_tokens < config_.max_tokens_limit) {
          max_tokens = std::min(config_.max_tokens_limit, max_tokens * 2);
          raised = true;
        }
      } else if (blank(result.content)) {
        problem = message.contains("tool_calls") ? "the answer was a tool call, which this client does not take"
                                                 : "the answer was blank";
      } else if (json_mode && !parse_json_answer(result.content)) {
        problem = "the answer was not valid JSON";
        // Re-asking with the reason beats resending the same prompt; once is enough to make the point.
        if (!corrected) {
          conversation.push_back(Message::user(
              "Your previous answer was not valid JSON. Answer again with exactly one JSON object and nothing "
              "else."));
          corrected = true;
        }
      } else {
        result.ok = true;
        break;
      }
    }
    if (answer >= config_.max_answer_retries) {
      result.failure = Failure::answer;
      result.error = fmt::format("no usable answer after {} answer{} ({} re-ask{}): {}", answer + 1,
                                 answer == 0 ? "" : "s", answer, answer == 1 ? "" : "s", problem);
      break;
    }
    ++result.answer_retries;
  }
  if (!result.ok) result.content.clear();
  result.error = redact(result.error, {key_});  // a provider may echo the key in its message
  return result;
}

}  // namespace ktune::gen::llm
