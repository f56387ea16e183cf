// tests/generator/llm_config_test.cpp: provider settings — presets, defaults < file < flags, the
// missing-setting messages — and the retry arithmetic (backoff, retry-after), no network involved.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include <CLI/CLI.hpp>

#include "generator/llm/client.hpp"
#include "generator/llm/config.hpp"
#include "ktune/cli.hpp"

namespace {

using namespace ktune::gen::llm;

const std::string config_file = std::string(KTUNE_TEST_DATA_DIR) + "/llm/config.json";

/// A command that takes source files and the --llm-* flags, parsed as `ktune agent` parses them:
/// the usage error, else the resolved configuration; `files` gets the positionals.
FlagParse parse_flags(const std::vector<std::string>& args, std::vector<std::string>* files = nullptr) {
  CLI::App app{"", "ktune test"};
  ktune::cli::style(app);
  std::vector<std::string> positional;
  app.add_option("files", positional);
  FlagValues values;
  add_flags(app, values);
  const ktune::cli::Parsed parsed = ktune::cli::parse_args(app, args);
  if (files) *files = positional;
  if (!parsed.error.empty()) return {{}, parsed.error};
  return resolve_flags(values);
}

TEST(LlmConfig, DefaultsArePlausible) {
  const ProviderConfig c;
  EXPECT_EQ(c.api_key_env, "KTUNE_LLM_API_KEY");
  EXPECT_EQ(c.token_field, "max_tokens");
  EXPECT_EQ(c.connect_timeout_s, 10);
  EXPECT_EQ(c.stall_timeout_s, 60);
  EXPECT_EQ(c.total_timeout_s, 600);
  EXPECT_EQ(c.max_attempts, 5);
  EXPECT_EQ(c.max_answer_retries, 2);
  EXPECT_FALSE(c.temperature.has_value());
  EXPECT_EQ(invalid_setting(c), "");
}

TEST(LlmConfig, PresetsSetEndpointAndTokenField) {
  ProviderConfig c;
  ASSERT_EQ(apply_preset("openai", c), "");
  EXPECT_EQ(c.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(c.token_field, "max_completion_tokens");
  ASSERT_EQ(apply_preset("deepseek", c), "");
  EXPECT_EQ(c.base_url, "https://api.deepseek.com");
  EXPECT_EQ(c.token_field, "max_tokens");
  EXPECT_EQ(c.api_key_env, "KTUNE_LLM_API_KEY");
  ASSERT_EQ(apply_preset("ollama", c), "");
  EXPECT_EQ(c.base_url, "http://localhost:11434/v1");
  EXPECT_EQ(c.api_key_env, "");  // local servers need no key
  ASSERT_EQ(apply_preset("llamacpp", c), "");
  EXPECT_EQ(c.base_url, "http://127.0.0.1:8080/v1");
  ASSERT_EQ(apply_preset("vllm", c), "");
  EXPECT_EQ(c.base_url, "http://localhost:8000/v1");
  const std::string e = apply_preset("anthropic", c);
  EXPECT_NE(e.find("unknown LLM provider preset 'anthropic'"), std::string::npos) << e;
  EXPECT_NE(e.find("deepseek"), std::string::npos) << e;
}

TEST(LlmConfig, FileOverDefaultsAndFlagsOverFile) {
  // Defaults alone.
  std::vector<std::string> files;
  FlagParse none = parse_flags({"kernel.cu"}, &files);
  ASSERT_TRUE(none.ok()) << none.error;
  EXPECT_EQ(none.config.max_tokens, ProviderConfig{}.max_tokens);
  EXPECT_EQ(files, std::vector<std::string>{"kernel.cu"});

  // The file over the defaults (and its "provider" preset under its own keys).
  FlagParse file = parse_flags({"--llm-config", config_file});
  ASSERT_TRUE(file.ok()) << file.error;
  EXPECT_EQ(file.config.base_url, "https://api.deepseek.com");
  EXPECT_EQ(file.config.model, "file-model");
  EXPECT_EQ(file.config.max_tokens, 2048);
  ASSERT_TRUE(file.config.temperature.has_value());
  EXPECT_DOUBLE_EQ(*file.config.temperature, 0.3);
  EXPECT_TRUE(file.config.json_mode);
  EXPECT_EQ(file.config.stall_timeout_s, 30);
  EXPECT_EQ(file.config.total_timeout_s, 600);  // untouched default

  // Flags over the file, whatever their order; --flag=value and --flag value; the command's own arguments
  // in between.
  FlagParse flags = parse_flags({"a.cu", "--llm-model", "flag-model", "b.cu", "--llm-config=" + config_file,
                                 "--llm-max-tokens=1000", "--llm-json-mode", "0", "--llm-seed", "42",
                                 "--llm-total-timeout", "90.5", "--llm-temperature", ""},
                                &files);
  ASSERT_TRUE(flags.ok()) << flags.error;
  EXPECT_EQ(flags.config.model, "flag-model");
  EXPECT_EQ(flags.config.max_tokens, 1000);
  EXPECT_FALSE(flags.config.json_mode);
  EXPECT_EQ(flags.config.seed, 42);
  EXPECT_DOUBLE_EQ(flags.config.total_timeout_s, 90.5);
  EXPECT_FALSE(flags.config.temperature.has_value());  // '' unsets what the file set
  EXPECT_EQ(flags.config.base_url, "https://api.deepseek.com");
  EXPECT_EQ(files, (std::vector<std::string>{"a.cu", "b.cu"}));

  // A preset flag wins over the file's "provider", the file's own keys win over the preset.
  FlagParse preset = parse_flags({"--llm-config", config_file, "--llm-provider", "openai"});
  ASSERT_TRUE(preset.ok()) << preset.error;
  EXPECT_EQ(preset.config.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(preset.config.token_field, "max_completion_tokens");
  EXPECT_EQ(preset.config.model, "file-model");

  // And an explicit flag over a preset.
  FlagParse url = parse_flags({"--llm-provider", "openai", "--llm-base-url", "http://proxy.local/v1"});
  ASSERT_TRUE(url.ok()) << url.error;
  EXPECT_EQ(url.config.base_url, "http://proxy.local/v1");
  EXPECT_EQ(url.config.token_field, "max_completion_tokens");
}

TEST(LlmConfig, BadInputIsAMessageNotAnException) {
  auto error = [](const std::vector<std::string>& args) { return parse_flags(args).error; };
  EXPECT_NE(error({"--llm-modle", "x"}).find("unknown option --llm-modle (did you mean --llm-model?)"), std::string::npos)
      << error({"--llm-modle", "x"});
  EXPECT_NE(error({"--llm-model"}).find("--llm-model needs a value"), std::string::npos);
  EXPECT_NE(error({"--llm-max-tokens", "many"}).find("--llm-max-tokens: 'many' is not an integer"), std::string::npos);
  EXPECT_NE(error({"--llm-max-tokens", "99999999999"}).find("out of range"), std::string::npos);
  EXPECT_NE(error({"--llm-json-mode", "maybe"}).find("not 0 or 1"), std::string::npos);
  EXPECT_NE(error({"--llm-token-field", "max_output"}).find("max_tokens or max_completion_tokens"), std::string::npos);
  EXPECT_NE(error({"--llm-max-attempts", "0"}).find("at least 1"), std::string::npos);
  EXPECT_NE(error({"--llm-config", "/nonexistent/llm.json"}).find("cannot read the LLM config file"),
            std::string::npos);
  EXPECT_NE(error({"--llm-provider", "nobody"}).find("unknown LLM provider preset"), std::string::npos);

  ProviderConfig c;
  EXPECT_NE(apply_json({{"max_tokenz", 5}}, c).find("unknown LLM config key \"max_tokenz\""), std::string::npos);
  EXPECT_NE(apply_json({{"max_tokens", "5"}}, c).find("must be an integer"), std::string::npos);
  EXPECT_NE(apply_json({{"json_mode", 1}}, c).find("true or false"), std::string::npos);
  EXPECT_NE(apply_json(nlohmann::json::array(), c).find("JSON object"), std::string::npos);
  CLI::App app{"", "ktune test"};
  FlagValues values;
  add_flags(app, values);
  EXPECT_NE(app.help().find("--llm-total-timeout"), std::string::npos) << app.help();
}

TEST(LlmConfig, MissingSettingNamesIt) {
  ProviderConfig c;
  c.api_key_env = "KTUNE_TEST_LLM_UNSET_KEY";
  ::unsetenv("KTUNE_TEST_LLM_UNSET_KEY");
  EXPECT_NE(missing_setting(c).find("--llm-base-url"), std::string::npos) << missing_setting(c);
  c.base_url = "https://api.deepseek.com";
  EXPECT_NE(missing_setting(c).find("--llm-model"), std::string::npos) << missing_setting(c);
  c.model = "deepseek-chat";
  const std::string key = missing_setting(c);
  EXPECT_NE(key.find("environment variable KTUNE_TEST_LLM_UNSET_KEY is not set"), std::string::npos) << key;
  ::setenv("KTUNE_TEST_LLM_UNSET_KEY", "", 1);  // set but empty counts as missing
  EXPECT_NE(missing_setting(c).find("KTUNE_TEST_LLM_UNSET_KEY"), std::string::npos);
  ::setenv("KTUNE_TEST_LLM_UNSET_KEY", "placeholder-x", 1);
  EXPECT_EQ(missing_setting(c), "");
  EXPECT_EQ(api_key(c), "placeholder-x");
  ::unsetenv("KTUNE_TEST_LLM_UNSET_KEY");
  c.api_key_env = "";  // a local server: no key wanted
  EXPECT_EQ(missing_setting(c), "");
  EXPECT_EQ(api_key(c), "");
}

TEST(LlmConfig, ToJsonHoldsTheVariableNameNotTheKey) {
  ::setenv("KTUNE_TEST_LLM_JSON_KEY", "placeholder-never-in-json", 1);
  ProviderConfig c;
  c.api_key_env = "KTUNE_TEST_LLM_JSON_KEY";
  c.temperature = 0.5;
  const nlohmann::json j = to_json(c);
  EXPECT_EQ(j["api_key_env"], "KTUNE_TEST_LLM_JSON_KEY");
  EXPECT_EQ(j["temperature"], 0.5);
  EXPECT_TRUE(j["seed"].is_null());
  EXPECT_EQ(j.dump().find("placeholder-never-in-json"), std::string::npos);
  // And it reads back to the same configuration.
  ProviderConfig back;
  ASSERT_EQ(apply_json(j, back), "");
  EXPECT_EQ(to_json(back), j);
  ::unsetenv("KTUNE_TEST_LLM_JSON_KEY");
}

TEST(LlmRetryPolicy, BackoffIsFullJitterCappedAndSeeded) {
  std::mt19937_64 a(7), b(7);
  for (int retry = 1; retry <= 12; ++retry) {
    const double w = backoff_wait(retry, 1.0, 60.0, -1, a);
    EXPECT_GE(w, 0.0);
    EXPECT_LE(w, std::min(60.0, std::ldexp(1.0, retry - 1)));
    EXPECT_EQ(w, backoff_wait(retry, 1.0, 60.0, -1, b));  // same seed, same waits: replays wait alike
  }
  std::mt19937_64 r(1);
  EXPECT_GE(backoff_wait(1, 0.01, 60.0, 2.0, r), 2.0);   // retry-after beats a short backoff
  EXPECT_EQ(backoff_wait(1, 0.01, 60.0, 500.0, r), 60.0);  // and is capped
}

TEST(LlmRetryPolicy, RetryAfterForms) {
  EXPECT_EQ(retry_after_seconds({}), -1);
  EXPECT_EQ(retry_after_seconds({{"retry-after", "2"}}), 2);
  EXPECT_DOUBLE_EQ(retry_after_seconds({{"retry-after", "1.5"}}), 1.5);
  EXPECT_DOUBLE_EQ(retry_after_seconds({{"retry-after-ms", "250"}, {"retry-after", "9"}}), 0.25);
  EXPECT_EQ(retry_after_seconds({{"retry-after", "Wed, 21 Oct 2015 07:28:10 GMT"},
                                 {"date", "Wed, 21 Oct 2015 07:28:00 GMT"}}),
            10);
  EXPECT_EQ(retry_after_seconds({{"retry-after", "Wed, 21 Oct 2015 07:28:10 GMT"},
                                 {"date", "Wed, 21 Oct 2015 07:29:00 GMT"}}),
            0);  // already past
  EXPECT_EQ(retry_after_seconds({{"retry-after", "soon"}}), -1);
}

TEST(LlmParseJsonAnswer, PlainFencedAndEmbedded) {
  EXPECT_EQ(parse_json_answer("{\"a\": 1}").value()["a"], 1);
  EXPECT_EQ(parse_json_answer("\n\n  [1, 2]  ").value().size(), 2u);
  EXPECT_EQ(parse_json_answer("Here it is:\n```json\n{\"b\": 2}\n```\nDone.").value()["b"], 2);
  EXPECT_EQ(parse_json_answer("The plan is {\"c\": 3} as agreed.").value()["c"], 3);
  EXPECT_FALSE(parse_json_answer("no json here").has_value());
  EXPECT_FALSE(parse_json_answer("42").has_value());  // JSON mode promises an object
  EXPECT_FALSE(parse_json_answer("{\"cut\": ").has_value());
  EXPECT_FALSE(parse_json_answer("").has_value());
}

}  // namespace
