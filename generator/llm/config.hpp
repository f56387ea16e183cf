// generator/llm/config.hpp: how to reach an OpenAI-compatible Chat Completions provider (base URL,
// model, the environment variable holding the key, limits, timeouts, retry budgets), layered as
// defaults < provider preset < JSON config file < command-line flags.
//
// Provider presets (`--llm-provider NAME` or "provider" in the file; every field stays overridable):
//
// | preset     | base URL                      | token field           | JSON mode   | key env var        |
// | ---------- | ----------------------------- | --------------------- | ----------- | ------------------ |
// | `openai`   | https://api.openai.com/v1     | max_completion_tokens | json_object | KTUNE_LLM_API_KEY  |
// | `deepseek` | https://api.deepseek.com      | max_tokens            | json_object | KTUNE_LLM_API_KEY  |
// | `vllm`     | http://localhost:8000/v1      | max_tokens            | json_object | none (`--api-key`: set one) |
// | `llamacpp` | http://127.0.0.1:8080/v1      | max_tokens            | json_object | none               |
// | `ollama`   | http://localhost:11434/v1     | max_tokens            | json_object | none               |
//
// No preset names a model: the model is always the user's choice (`--llm-model`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace CLI {
class App;
}

namespace ktune::gen::llm {

/// The default name of the environment variable that holds the API key.
inline constexpr const char* default_key_env = "KTUNE_LLM_API_KEY";

struct ProviderConfig {
  std::string base_url;                      ///< up to and including the version segment, e.g. https://api.openai.com/v1
  std::string model;
  std::string api_key_env = default_key_env; ///< NAME of the variable holding the key; "" = no key (local servers)
  std::string token_field = "max_tokens";    ///< "max_tokens" or "max_completion_tokens" (OpenAI reasoning models)
  int max_tokens = 8192;                     ///< output-token limit sent with each request
  int max_tokens_limit = 16384;              ///< the most a `finish_reason: length` retry may raise it to
  std::optional<double> temperature;         ///< unset: not sent (provider default)
  std::optional<std::int64_t> seed;          ///< unset: not sent; best effort where sent
  bool json_mode = false;                    ///< send response_format {type: json_object}; answers must be JSON
  double connect_timeout_s = 10;
  double stall_timeout_s = 60;               ///< abort when less than 1 byte/s arrives for this long
  double total_timeout_s = 600;              ///< hard cap on one HTTP attempt
  int max_attempts = 5;                      ///< HTTP attempts per answer (1 = no transport retry)
  double backoff_base_s = 1;                 ///< full-jitter exponential backoff: U(0, min(cap, base * 2^k))
  double backoff_cap_s = 60;
  int max_answer_retries = 2;                ///< re-asks after blank, non-JSON (json_mode) or truncated answers
  std::uint64_t jitter_seed = 0;             ///< seeds the backoff jitter, so a run and its replay wait alike
};

/// Applies preset `name` (openai, deepseek, vllm, llamacpp, ollama) to `config`: base_url, token_field,
/// api_key_env. Returns an error naming the known presets when `name` is unknown.
std::string apply_preset(std::string_view name, ProviderConfig& config);

/// The known preset names, in table order.
std::vector<std::string> preset_names();

/// Overlays the keys of a JSON object (the field names above, plus "provider") onto `config`. Unknown
/// keys and wrong types are errors (a typo must not silently fall back to a default). "" on success.
std::string apply_json(const nlohmann::json& object, ProviderConfig& config);

/// Reads a JSON config file and overlays it (apply_json). "" on success, else the error with the path.
std::string load_config_file(const std::string& path, ProviderConfig& config);

/// The whole configuration as JSON (for run records). Holds the key's variable name, never the key.
nlohmann::json to_json(const ProviderConfig& config);

/// The --llm-* flags as given on a command line, (flag, value) in the order the parser saw them.
using FlagValues = std::vector<std::pair<std::string, std::string>>;

/// Adds the --llm-* flags (--llm-provider, --llm-config and one per setting) to a command's parser, in a
/// group of their own in its --help; what the user gives lands in `values` for resolve_flags.
void add_flags(CLI::App& app, FlagValues& values);

struct FlagParse {
  ProviderConfig config;
  std::string error;  ///< non-empty: the first problem, naming the flag
  bool ok() const { return error.empty(); }
};

/// The configuration the flags give. Layering: `base` < preset (--llm-provider, else the file's
/// "provider") < the --llm-config file < the other flags, whatever their order on the command line.
/// Never throws.
FlagParse resolve_flags(const FlagValues& values, const ProviderConfig& base = {});

/// Checks ranges and enumerations (token_field, positive limits, attempts >= 1 ...). "" when valid.
std::string invalid_setting(const ProviderConfig& config);

/// Names exactly which setting is missing to reach a provider — the base URL, the model, or the key
/// (the variable named by api_key_env is unset or empty) — and how to give it. "" when none is.
std::string missing_setting(const ProviderConfig& config);

/// The API key from the environment ("" when api_key_env is "" or the variable is unset).
std::string api_key(const ProviderConfig& config);

}  // namespace ktune::gen::llm
