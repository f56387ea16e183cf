// generator/llm/config.cpp: provider presets, config file, flags and the missing-setting check (config.hpp).
#include "generator/llm/config.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ktune::gen::llm {

namespace {

struct Preset {
  const char* name;
  const char* base_url;
  const char* token_field;
  const char* key_env;
};

// The sources of these values are listed in generator/llm/README.md.
constexpr Preset presets[] = {
    {"openai", "https://api.openai.com/v1", "max_completion_tokens", default_key_env},
    {"deepseek", "https://api.deepseek.com", "max_tokens", default_key_env},
    {"vllm", "http://localhost:8000/v1", "max_tokens", ""},
    {"llamacpp", "http://127.0.0.1:8080/v1", "max_tokens", ""},
    {"ollama", "http://localhost:11434/v1", "max_tokens", ""},
};

// Parsing of one setting from text (flags) — each returns "" or what is wrong with the value.
std::string parse_int(const std::string& text, std::int64_t& out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, out);
  if (text.empty() || ec != std::errc() || p != end) return fmt::format("'{}' is not an integer", text);
  return {};
}

std::string parse_double(const std::string& text, double& out) {
  // strtod rather than from_chars<double>: the latter is missing from some libstdc++ still in use.
  if (text.empty()) return "an empty value is not a number";
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(out))
    return fmt::format("'{}' is not a number", text);
  return {};
}

std::string parse_bool(const std::string& text, bool& out) {
  if (text == "1" || text == "true" || text == "on" || text == "yes") { out = true; return {}; }
  if (text == "0" || text == "false" || text == "off" || text == "no") { out = false; return {}; }
  return fmt::format("'{}' is not 0 or 1", text);
}

/// One setting: its config-file key, its flag, and how to set it from text or from JSON.
struct Setting {
  const char* key;
  const char* flag;
  const char* help;
  std::function<std::string(const std::string&, ProviderConfig&)> from_text;
  std::function<std::string(const nlohmann::json&, ProviderConfig&)> from_json;
};

template <class Field>
Setting string_setting(const char* key, const char* flag, const char* help, Field field) {
  return {key, flag, help,
          [field](const std::string& t, ProviderConfig& c) { c.*field = t; return std::string(); },
          [field, key](const nlohmann::json& j, ProviderConfig& c) {
            if (!j.is_string()) return fmt::format("\"{}\" must be a string", key);
            c.*field = j.get<std::string>();
            return std::string();
          }};
}

template <class Field>
Setting int_setting(const char* key, const char* flag, const char* help, Field field) {
  return {key, flag, help,
          [field](const std::string& t, ProviderConfig& c) {
            using T = std::remove_reference_t<decltype(c.*field)>;
            std::int64_t v = 0;
            std::string e = parse_int(t, v);
            if (e.empty() && (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()))
              e = fmt::format("{} is out of range", v);
            if (e.empty()) c.*field = static_cast<T>(v);
            return e;
          },
          [field, key](const nlohmann::json& j, ProviderConfig& c) {
            using T = std::remove_reference_t<decltype(c.*field)>;
            if (!j.is_number_integer()) return fmt::format("\"{}\" must be an integer", key);
            const std::int64_t v = j.get<std::int64_t>();
            if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
              return fmt::format("\"{}\" is out of range", key);
            c.*field = static_cast<T>(v);
            return std::string();
          }};
}

template <class Field>
Setting double_setting(const char* key, const char* flag, const char* help, Field field) {
  return {key, flag, help,
          [field](const std::string& t, ProviderConfig& c) {
            double v = 0;
            std::string e = parse_double(t, v);
            if (e.empty()) c.*field = v;
            return e;
          },
          [field, key](const nlohmann::json& j, ProviderConfig& c) {
            if (!j.is_number()) return fmt::format("\"{}\" must be a number", key);
            c.*field = j.get<double>();
            return std::string();
          }};
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> all = {
      string_setting("base_url", "--llm-base-url", "URL up to the version segment, e.g. https://api.openai.com/v1",
                     &ProviderConfig::base_url),
      string_setting("model", "--llm-model", "model name as the provider spells it", &ProviderConfig::model),
      string_setting("api_key_env", "--llm-key-env",
                     "NAME of the environment variable holding the key ('' = send no key)",
                     &ProviderConfig::api_key_env),
      string_setting("token_field", "--llm-token-field", "max_tokens | max_completion_tokens",
                     &ProviderConfig::token_field),
      int_setting("max_tokens", "--llm-max-tokens", "output-token limit per request", &ProviderConfig::max_tokens),
      int_setting("max_tokens_limit", "--llm-max-tokens-limit",
                  "the most a truncated (finish_reason length) answer may raise it to",
                  &ProviderConfig::max_tokens_limit),
      {"temperature", "--llm-temperature", "sampling temperature ('' = provider default)",
       [](const std::string& t, ProviderConfig& c) {
         if (t.empty() || t == "none") { c.temperature.reset(); return std::string(); }
         double v = 0;
         std::string e = parse_double(t, v);
         if (e.empty()) c.temperature = v;
         return e;
       },
       [](const nlohmann::json& j, ProviderConfig& c) {
         if (j.is_null()) { c.temperature.reset(); return std::string(); }
         if (!j.is_number()) return std::string("\"temperature\" must be a number or null");
         c.temperature = j.get<double>();
         return std::string();
       }},
      {"seed", "--llm-seed", "sampling seed, best effort ('' = not sent)",
       [](const std::string& t, ProviderConfig& c) {
         if (t.empty() || t == "none") { c.seed.reset(); return std::string(); }
         std::int64_t v = 0;
         std::string e = parse_int(t, v);
         if (e.empty()) c.seed = v;
         return e;
       },
       [](const nlohmann::json& j, ProviderConfig& c) {
         if (j.is_null()) { c.seed.reset(); return std::string(); }
         if (!j.is_number_integer()) return std::string("\"seed\" must be an integer or null");
         c.seed = j.get<std::int64_t>();
         return std::string();
       }},
      {"json_mode", "--llm-json-mode", "0|1: ask for response_format json_object; answers must parse as JSON",
       [](const std::string& t, ProviderConfig& c) { return parse_bool(t, c.json_mode); },
       [](const nlohmann::json& j, ProviderConfig& c) {
         if (!j.is_boolean()) return std::string("\"json_mode\" must be true or false");
         c.json_mode = j.get<bool>();
         return std::string();
       }},
      double_setting("connect_timeout_s", "--llm-connect-timeout", "seconds to establish a connection",
                     &ProviderConfig::connect_timeout_s),
      double_setting("stall_timeout_s", "--llm-stall-timeout", "seconds without a byte before an attempt is abandoned",
                     &ProviderConfig::stall_timeout_s),
      double_setting("total_timeout_s", "--llm-total-timeout", "hard cap in seconds on one HTTP attempt",
                     &ProviderConfig::total_timeout_s),
      int_setting("max_attempts", "--llm-max-attempts", "HTTP attempts per answer", &ProviderConfig::max_attempts),
      double_setting("backoff_base_s", "--llm-backoff-base", "first backoff ceiling in seconds",
                     &ProviderConfig::backoff_base_s),
      double_setting("backoff_cap_s", "--llm-backoff-cap", "largest wait in seconds", &ProviderConfig::backoff_cap_s),
      int_setting("max_answer_retries", "--llm-answer-retries", "re-asks after blank, non-JSON or truncated answers",
                  &ProviderConfig::max_answer_retries),
      {"jitter_seed", "--llm-jitter-seed", "seed of the backoff jitter",
       [](const std::string& t, ProviderConfig& c) {
         std::int64_t v = 0;
         std::string e = parse_int(t, v);
         if (e.empty()) c.jitter_seed = static_cast<std::uint64_t>(v);
         return e;
       },
       [](const nlohmann::json& j, ProviderConfig& c) {
         if (!j.is_number_integer()) return std::string("\"jitter_seed\" must be an integer");
         c.jitter_seed = j.get<std::uint64_t>();
         return std::string();
       }},
  };
  return all;
}

const Setting* find_flag(std::string_view flag) {
  for (const Setting& s : settings())
    if (flag == s.flag) return &s;
  return nullptr;
}

std::string read_json_file(const std::string& path, nlohmann::json& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fmt::format("cannot read the LLM config file {}", path);
  std::stringstream text;
  text << in.rdbuf();
  out = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) return fmt::format("the LLM config file {} is not valid JSON", path);
  if (!out.is_object()) return fmt::format("the LLM config file {} must hold a JSON object", path);
  return {};
}

constexpr std::string_view provider_flag = "--llm-provider";
constexpr std::string_view config_flag = "--llm-config";

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : presets) names.emplace_back(p.name);
  return names;
}

std::string apply_preset(std::string_view name, ProviderConfig& config) {
  for (const Preset& p : presets) {
    if (name != p.name) continue;
    config.base_url = p.base_url;
    config.token_field = p.token_field;
    config.api_key_env = p.key_env;
    return {};
  }
  return fmt::format("unknown LLM provider preset '{}' (known: {})", name, fmt::join(preset_names(), ", "));
}

std::string apply_json(const nlohmann::json& object, ProviderConfig& config) {
  if (!object.is_object()) return "an LLM config must be a JSON object";
  if (auto it = object.find("provider"); it != object.end()) {
    if (!it->is_string()) return "\"provider\" must be a string";
    if (std::string e = apply_preset(it->get<std::string>(), config); !e.empty()) return e;
  }
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (it.key() == "provider" || it.key().starts_with("//")) continue;  // "//..." keys are comments
    const Setting* setting = nullptr;
    for (const Setting& s : settings())
      if (it.key() == s.key) setting = &s;
    if (!setting) return fmt::format("unknown LLM config key \"{}\"", it.key());
    if (std::string e = setting->from_json(it.value(), config); !e.empty()) return e;
  }
  return {};
}

std::string load_config_file(const std::string& path, ProviderConfig& config) {
  nlohmann::json j;
  if (std::string e = read_json_file(path, j); !e.empty()) return e;
  if (std::string e = apply_json(j, config); !e.empty()) return fmt::format("{}: {}", path, e);
  return {};
}

nlohmann::json to_json(const ProviderConfig& c) {
  nlohmann::json j = {
      {"base_url", c.base_url},
      {"model", c.model},
      {"api_key_env", c.api_key_env},
      {"token_field", c.token_field},
      {"max_tokens", c.max_tokens},
      {"max_tokens_limit", c.max_tokens_limit},
      {"temperature", nullptr},
      {"seed", nullptr},
      {"json_mode", c.json_mode},
      {"connect_timeout_s", c.connect_timeout_s},
      {"stall_timeout_s", c.stall_timeout_s},
      {"total_timeout_s", c.total_timeout_s},
      {"max_attempts", c.max_attempts},
      {"backoff_base_s", c.backoff_base_s},
      {"backoff_cap_s", c.backoff_cap_s},
      {"max_answer_retries", c.max_answer_retries},
      {"jitter_seed", c.jitter_seed},
  };
  if (c.temperature) j["temperature"] = *c.temperature;
  if (c.seed) j["seed"] = *c.seed;
  return j;
}

void add_flags(CLI::App& app, FlagValues& values) {
  auto add = [&](std::string_view flag, const std::string& type, const std::string& help) {
    const std::string name(flag);
    app.add_option_function<std::string>(name, [&values, name](const std::string& v) { values.emplace_back(name, v); },
                                         help)
        ->type_name(type)
        ->group("LLM settings (flags over the --llm-config file over presets over defaults)");
  };
  add(provider_flag, "NAME", fmt::format("preset: {}", fmt::join(preset_names(), ", ")));
  add(config_flag, "FILE", "JSON file with the settings below (keys as in generator/llm/README.md)");
  for (const Setting& st : settings()) add(st.flag, "V", st.help);
}

FlagParse resolve_flags(const FlagValues& values, const ProviderConfig& base) {
  FlagParse out;
  out.config = base;
  try {
    std::string preset, config_file;
    for (const auto& [flag, value] : values) {
      if (flag == provider_flag) preset = value;
      if (flag == config_flag) config_file = value;
    }
    nlohmann::json file = nlohmann::json::object();
    if (!config_file.empty()) {
      if (std::string e = read_json_file(config_file, file); !e.empty()) {
        out.error = e;
        return out;
      }
      // A preset named on the command line wins over the file's "provider"; the file's keys win over both.
      if (auto it = file.find("provider"); it != file.end()) {
        if (!it->is_string()) {
          out.error = fmt::format("{}: \"provider\" must be a string", config_file);
          return out;
        }
        if (preset.empty()) preset = it->get<std::string>();
        file.erase(it);
      }
    }
    if (!preset.empty()) {
      if (std::string e = apply_preset(preset, out.config); !e.empty()) {
        out.error = e;
        return out;
      }
    }
    if (std::string e = apply_json(file, out.config); !e.empty()) {
      out.error = fmt::format("{}: {}", config_file, e);
      return out;
    }
    for (const auto& [flag, value] : values) {
      const Setting* setting = find_flag(flag);
      if (!setting) continue;  // the preset and the file, applied above
      if (std::string e = setting->from_text(value, out.config); !e.empty()) {
        out.error = fmt::format("{}: {}", flag, e);
        return out;
      }
    }
    if (std::string e = invalid_setting(out.config); !e.empty()) out.error = e;
  } catch (const std::exception& e) {  // not expected; the promise is "never throws"
    out.config = base;
    out.error = fmt::format("cannot read the LLM flags: {}", e.what());
  }
  return out;
}

std::string invalid_setting(const ProviderConfig& c) {
  if (c.token_field != "max_tokens" && c.token_field != "max_completion_tokens")
    return fmt::format("--llm-token-field must be max_tokens or max_completion_tokens, not '{}'", c.token_field);
  if (c.max_tokens < 1) return "--llm-max-tokens must be at least 1";
  if (c.max_tokens_limit < c.max_tokens) return "--llm-max-tokens-limit must be at least --llm-max-tokens";
  if (c.max_attempts < 1) return "--llm-max-attempts must be at least 1";
  if (c.max_answer_retries < 0) return "--llm-answer-retries must not be negative";
  if (c.connect_timeout_s <= 0 || c.stall_timeout_s <= 0 || c.total_timeout_s <= 0)
    return "the LLM timeouts (--llm-connect-timeout, --llm-stall-timeout, --llm-total-timeout) must be positive";
  if (c.backoff_base_s < 0 || c.backoff_cap_s < 0) return "the LLM backoff times must not be negative";
  if (c.temperature && (*c.temperature < 0 || *c.temperature > 2)) return "--llm-temperature must lie in [0, 2]";
  return {};
}

std::string missing_setting(const ProviderConfig& c) {
  if (c.base_url.empty())
    return "no LLM endpoint: set --llm-base-url (e.g. https://api.deepseek.com), --llm-provider NAME, "
           "or \"base_url\" in the --llm-config file";
  if (c.model.empty()) return "no LLM model: set --llm-model or \"model\" in the --llm-config file";
  if (!c.api_key_env.empty()) {
    const char* key = std::getenv(c.api_key_env.c_str());
    if (!key || !*key)
      return fmt::format(
          "no LLM API key: the environment variable {} is not set (export {}=<key>; --llm-key-env names another "
          "variable, --llm-key-env '' sends no key to a local server)",
          c.api_key_env, c.api_key_env);
  }
  return {};
}

std::string api_key(const ProviderConfig& c) {
  if (c.api_key_env.empty()) return {};
  const char* key = std::getenv(c.api_key_env.c_str());
  return key ? std::string(key) : std::string();
}

}  // namespace ktune::gen::llm
