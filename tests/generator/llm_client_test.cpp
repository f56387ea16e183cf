// tests/generator/llm_client_test.cpp: the Chat Completions client against a real HTTP server on
// loopback (tests/generator/llm_server.py) with scripted answers: retries, refusals, answer re-asks,
// stalls, recordings without the key, and replay with no network.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "generator/llm/client.hpp"
#include "generator/llm/recording.hpp"
#include "generator/llm/transport.hpp"
#include "llm_test_server.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ktune::gen::llm;
using ktune::gen::test::LlmTestServer;
using nlohmann::json;

constexpr const char* key_env = "KTUNE_TEST_LLM_KEY";
constexpr const char* secret_key = "not-a-secret-DO-NOT-RECORD";

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<json> lines(const fs::path& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

json answer(const std::string& content, int prompt = 10, int completion = 5) {
  return {{"content", content},
          {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}}}};
}

json failure(int status, const std::string& message, const json& headers = json::object()) {
  return {{"status", status}, {"headers", headers}, {"body", {{"error", {{"message", message}, {"type", "x"}}}}}};
}

const std::vector<Message> question = {Message::system("You answer in JSON."), Message::user("Say hello.")};

class LlmClient : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(KTUNE_TEST_WORK_DIR) / "llm" / (std::string(info->test_suite_name()) + "." + info->name());
    std::error_code ec;
    fs::remove_all(dir_, ec);
    fs::create_directories(dir_);
    ::setenv(key_env, secret_key, 1);
    // Loopback must never go through a proxy that the environment may name.
    ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  }

  /// Short timeouts and a seeded jitter; the backoff itself is never slept (see sleeper()).
  ProviderConfig config(const std::string& base_url) const {
    ProviderConfig c;
    c.base_url = base_url;
    c.model = "scripted-model";
    c.api_key_env = key_env;
    c.max_tokens = 100;
    c.max_tokens_limit = 400;
    c.connect_timeout_s = 2;
    c.stall_timeout_s = 1;
    c.total_timeout_s = 10;
    c.max_attempts = 5;
    c.backoff_base_s = 0.5;
    c.backoff_cap_s = 30;
    c.jitter_seed = 11;
    return c;
  }

  /// Records the waits the client chose instead of waiting.
  Sleeper sleeper() {
    return [this](double s) { waits_.push_back(s); };
  }

  fs::path dir_;
  std::vector<double> waits_;
};

TEST_F(LlmClient, CleanRunSendsTheKeyAndRecordsWithoutIt) {
  LlmTestServer server(dir_ / "server", json::array({answer("{\"hello\": \"world\"}", 12, 7)}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  Recorder recorder(dir_ / "recording.jsonl", {secret_key});
  Client client(config(server.base_url()), transport, &recorder, sleeper());

  const ChatResult r = client.chat(question);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.content, "{\"hello\": \"world\"}");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.http_attempts, 1);
  EXPECT_EQ(r.answer_retries, 0);
  EXPECT_EQ(r.failure, Failure::none);
  EXPECT_EQ(r.usage.prompt_tokens, 12);
  EXPECT_EQ(r.usage.completion_tokens, 7);
  EXPECT_EQ(r.usage.total_tokens, 19);
  EXPECT_TRUE(waits_.empty());

  // What the server received: the endpoint, the key as a bearer token, the documented body.
  const std::vector<json> got = server.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["path"], "/v1/chat/completions");
  EXPECT_EQ(got[0]["headers"]["authorization"], std::string("Bearer ") + secret_key);
  EXPECT_EQ(got[0]["headers"]["content-type"], "application/json");
  const json& body = got[0]["body"];
  EXPECT_EQ(body["model"], "scripted-model");
  EXPECT_EQ(body["max_tokens"], 100);
  EXPECT_EQ(body["stream"], false);
  EXPECT_FALSE(body.contains("response_format"));
  EXPECT_FALSE(body.contains("temperature"));
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0], json({{"role", "system"}, {"content", "You answer in JSON."}}));
  EXPECT_EQ(body["messages"][1]["content"], "Say hello.");

  // A second call sums into the client's usage.
  LlmTestServer second(dir_ / "server2", json::array({answer("{}", 3, 2)}));
  ASSERT_TRUE(second.ok()) << second.error();
  ProviderConfig c2 = config(second.base_url());
  Client client2(c2, transport, &recorder, sleeper());
  ASSERT_TRUE(client2.chat(question).ok);
  ASSERT_TRUE(client.chat(question).ok == false);  // the first server's script is exhausted: 500s
  const Usage total = client.usage();
  EXPECT_EQ(total.calls, 2);
  EXPECT_EQ(total.prompt_tokens, 12);
  EXPECT_EQ(total.http_attempts, 1 + 5);

  // The recording: every attempt, never the key or the Authorization header.
  const std::string text = slurp(recorder.path());
  EXPECT_EQ(text.find(secret_key), std::string::npos);
  EXPECT_EQ(text.find("Bearer"), std::string::npos);
  EXPECT_EQ(text.find("uthorization"), std::string::npos);
  const std::vector<json> rec = lines(recorder.path());
  ASSERT_EQ(rec.size(), 1u + 1u + 5u);
  EXPECT_EQ(rec[0]["seq"], 1);
  EXPECT_EQ(rec[0]["call"], 1);
  EXPECT_EQ(rec[0]["attempt"], 1);
  EXPECT_EQ(rec[0]["status"], 200);
  EXPECT_EQ(rec[0]["request"], body);
  EXPECT_EQ(rec[0]["error_kind"], "none");
  EXPECT_GT(rec[0]["latency_ms"].get<double>(), 0.0);
  EXPECT_EQ(rec.back()["seq"], 7);
  EXPECT_EQ(recorder.count(), 7);
  EXPECT_EQ(recorder.error(), "");
}

TEST_F(LlmClient, RateLimitedWithRetryAfterThenSuccess) {
  LlmTestServer server(dir_ / "server", json::array({failure(429, "Rate limit reached", {{"retry-after", "2"}}),
                                                     answer("{\"ok\": true}")}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  Recorder recorder(dir_ / "recording.jsonl", {secret_key});
  ProviderConfig c = config(server.base_url());
  c.backoff_base_s = 0.01;  // so the 2 s can only come from retry-after
  Client client(c, transport, &recorder, sleeper());

  const ChatResult r = client.chat(question);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.http_attempts, 2);
  ASSERT_EQ(waits_.size(), 1u);
  EXPECT_GE(waits_[0], 2.0);  // honoured
  EXPECT_LT(waits_[0], 2.1);
  EXPECT_EQ(r.waits_s, waits_);
  const std::vector<json> rec = lines(recorder.path());
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_EQ(rec[0]["status"], 429);
  EXPECT_EQ(rec[0]["headers"]["retry-after"], "2");
  EXPECT_EQ(rec[1]["wait_s"], waits_[0]);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST_F(LlmClient, ServerErrorsUntilTheBudgetIsSpent) {
  LlmTestServer server(dir_ / "server", json::array({failure(500, "boom"), failure(502, "bad gateway"),
                                                     failure(503, "overloaded"), answer("{\"late\": 1}")}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  ProviderConfig c = config(server.base_url());
  c.max_attempts = 3;
  Client client(c, transport, nullptr, sleeper());

  const ChatResult r = client.chat(question);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, Failure::transport);
  EXPECT_EQ(r.http_attempts, 3);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(waits_.size(), 2u);
  EXPECT_NE(r.error.find("gave up after 3 HTTP attempts"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("HTTP 503"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("overloaded"), std::string::npos) << r.error;
  EXPECT_TRUE(r.content.empty());
  // Full jitter under a doubling ceiling: first wait <= base, second <= 2 * base.
  EXPECT_LE(waits_[0], 0.5);
  EXPECT_LE(waits_[1], 1.0);
}

TEST_F(LlmClient, UnauthorizedIsNotRetriedAndNamesTheVariable) {
  LlmTestServer server(dir_ / "server",
                       json::array({failure(401, std::string("Incorrect API key provided: ") + secret_key),
                                    answer("{}")}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  Client client(config(server.base_url()), transport, nullptr, sleeper());

  const ChatResult r = client.chat(question);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, Failure::refused);
  EXPECT_EQ(r.http_attempts, 1);
  EXPECT_EQ(r.status, 401);
  EXPECT_TRUE(waits_.empty());
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_NE(r.error.find("HTTP 401"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find(std::string("the key in the environment variable ") + key_env + " was refused"),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("not retried"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find(secret_key), std::string::npos) << "the provider's echo of the key must be redacted";

  // Without the variable set, the message says so.
  LlmTestServer again(dir_ / "again", json::array({failure(401, "Missing bearer token")}));
  ASSERT_TRUE(again.ok()) << again.error();
  ::unsetenv(key_env);
  Client keyless(config(again.base_url()), transport, nullptr, sleeper());
  const ChatResult k = keyless.chat(question);
  EXPECT_NE(k.error.find(std::string("the environment variable ") + key_env + " is not set"), std::string::npos)
      << k.error;
  EXPECT_FALSE(again.requests().at(0)["headers"].contains("authorization"));
}

TEST_F(LlmClient, RefusalsAndExhaustedQuotaAreNotRetried) {
  const json quota = {{"status", 429},
                      {"body", {{"error", {{"message", "You exceeded your current quota"},
                                           {"type", "insufficient_quota"}, {"code", "insufficient_quota"}}}}}};
  LlmTestServer server(dir_ / "server",
                       json::array({failure(402, "Insufficient Balance"), quota, failure(400, "Unsupported parameter: "
                                                                                               "'max_tokens'"),
                                    failure(403, "Country not supported"), failure(404, "model not found"),
                                    failure(422, "Invalid parameters"),
                                    failure(301, "moved", {{"location", "https://elsewhere/v1/chat/completions"}})}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  Client client(config(server.base_url()), transport, nullptr, sleeper());

  const std::vector<std::pair<int, std::string>> expected = {
      {402, "insufficient balance"},   {429, "quota is exhausted (insufficient_quota)"},
      {400, "--llm-token-field max_completion_tokens"}, {403, "forbidden"},
      {404, "--llm-base-url"},         {422, "rejected the request"},
      {301, "redirects to https://elsewhere/v1/chat/completions"}};
  for (const auto& [status, words] : expected) {
    const ChatResult r = client.chat(question);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.status, status);
    EXPECT_EQ(r.http_attempts, 1) << status;
    EXPECT_EQ(r.failure, Failure::refused) << status;
    EXPECT_NE(r.error.find(words), std::string::npos) << status << ": " << r.error;
  }
  EXPECT_TRUE(waits_.empty());
  EXPECT_EQ(server.requests().size(), expected.size());
}

TEST_F(LlmClient, BlankAnswerIsAskedAgain) {
  LlmTestServer server(dir_ / "server", json::array({answer("  \n\t ", 10, 1), answer("{\"second\": true}", 10, 4)}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  Client client(config(server.base_url()), transport, nullptr, sleeper());

  const ChatResult r = client.chat(question);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.content, "{\"second\": true}");
  EXPECT_EQ(r.answer_retries, 1);
  EXPECT_EQ(r.http_attempts, 2);
  EXPECT_EQ(r.usage.answers, 2);
  EXPECT_EQ(r.usage.total_tokens, 11 + 14);  // the blank answer cost tokens too
  const std::vector<json> got = server.requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["body"], got[1]["body"]);  // the same question again
}

TEST_F(LlmClient, NonJsonAnswerInJsonModeIsAskedAgainWithTheReason) {
  LlmTestServer server(dir_ / "server",
                       json::array({answer("Sure! Here is the plan: rewrite it."), answer("{\"plan\": \"rewrite\"}")}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  ProviderConfig c = config(server.base_url());
  c.json_mode = true;
  Client client(c, transport, nullptr, sleeper());

  const ChatResult r = client.chat(question);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(parse_json_answer(r.content).value()["plan"], "rewrite");
  EXPECT_EQ(r.answer_retries, 1);
  const std::vector<json> got = server.requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["body"]["response_format"], json({{"type", "json_object"}}));
  ASSERT_EQ(got[1]["body"]["messages"].size(), 3u);
  EXPECT_EQ(got[1]["body"]["messages"][2]["role"], "user");
  EXPECT_NE(got[1]["body"]["messages"][2]["content"].get<std::string>().find("not valid JSON"), std::string::npos);

  // Without JSON mode, prose is a fine answer.
  LlmTestServer plain(dir_ / "plain", json::array({answer("Sure! Prose.")}));
  ASSERT_TRUE(plain.ok()) << plain.error();
  Client prose(config(plain.base_url()), transport, nullptr, sleeper());
  EXPECT_TRUE(prose.chat(question).ok);
  // Per-call override switches it on.
  LlmTestServer strict(dir_ / "strict", json::array({answer("prose"), answer("{}")}));
  ASSERT_TRUE(strict.ok()) << strict.error();
  Client per_call(config(strict.base_url()), transport, nullptr, sleeper());
  const ChatResult o = per_call.chat(question, ChatOptions{.json_mode = true, .max_tokens = 50, .temperature = 0.7});
  EXPECT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.answer_retries, 1);
  EXPECT_EQ(strict.requests().at(0)["body"]["max_tokens"], 50);
  EXPECT_EQ(strict.requests().at(0)["body"]["temperature"], 0.7);
}

TEST_F(LlmClient, TruncatedAnswerRaisesTheLimitOnce) {
  json cut = answer("{\"family\": \"tpb_25");
  cut["finish_reason"] = "length";
  LlmTestServer server(dir_ / "server", json::array({cut, cut, answer("{\"family\": \"ok\"}")}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  ProviderConfig c = config(server.base_url());
  c.token_field = "max_completion_tokens";
  Client client(c, transport, nullptr, sleeper());

  const ChatResult r = client.chat(question);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.answer_retries, 2);
  const std::vector<json> got = server.requests();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0]["body"]["max_completion_tokens"], 100);
  EXPECT_FALSE(got[0]["body"].contains("max_tokens"));
  EXPECT_EQ(got[1]["body"]["max_completion_tokens"], 200);  // doubled once
  EXPECT_EQ(got[2]["body"]["max_completion_tokens"], 200);  // and not again
}

TEST_F(LlmClient, AllAnswersBlankGivesUpAfterTheBound) {
  LlmTestServer server(dir_ / "server", json::array({answer(""), answer(" "), answer("\n"), answer("{\"never\": 1}")}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  Client client(config(server.base_url()), transport, nullptr, sleeper());  // max_answer_retries = 2

  const ChatResult r = client.chat(question);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, Failure::answer);
  EXPECT_EQ(r.answer_retries, 2);
  EXPECT_EQ(r.http_attempts, 3);
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_NE(r.error.find("no usable answer after 3 answers"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("blank"), std::string::npos) << r.error;
}

TEST_F(LlmClient, StalledConnectionTimesOutAndIsRetried) {
  LlmTestServer server(dir_ / "server", json::array({{{"stall_s", 8}}, answer("{\"after\": \"stall\"}")}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  Recorder recorder(dir_ / "recording.jsonl", {secret_key});
  Client client(config(server.base_url()), transport, &recorder, sleeper());  // stall_timeout_s = 1

  const auto start = std::chrono::steady_clock::now();
  const ChatResult r = client.chat(question);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.http_attempts, 2);
  EXPECT_LT(seconds, 5.0) << "the stall timeout should fire after about 1 s";
  const std::vector<json> rec = lines(recorder.path());
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_EQ(rec[0]["status"], 0);
  EXPECT_EQ(rec[0]["error_kind"], "stalled");
  EXPECT_NE(rec[0]["error"].get<std::string>().find("stalled"), std::string::npos) << rec[0]["error"];
  EXPECT_EQ(waits_.size(), 1u);
}

TEST_F(LlmClient, OverallTimeoutIsRetryable) {
  // The answer takes longer than the overall cap (the stall limit is longer, so only the cap can fire).
  LlmTestServer server(dir_ / "server", json::array({{{"delay_s", 3}, {"content", "{}"}}, answer("{\"ok\": 1}")}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  ProviderConfig c = config(server.base_url());
  c.stall_timeout_s = 30;
  c.total_timeout_s = 1;
  Recorder recorder(dir_ / "recording.jsonl", {});
  Client client(c, transport, &recorder, sleeper());
  const ChatResult r = client.chat(question);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.http_attempts, 2);
  EXPECT_EQ(lines(recorder.path())[0]["error_kind"], "timeout");
}

TEST_F(LlmClient, ConnectionRefusedIsRetriedThenReported) {
  int closed_port = 0;
  {
    LlmTestServer server(dir_ / "server", json::array());
    ASSERT_TRUE(server.ok()) << server.error();
    closed_port = server.port();
  }  // stopped: nothing listens there now
  CurlTransport transport;
  ProviderConfig c = config("http://127.0.0.1:" + std::to_string(closed_port) + "/v1");
  c.max_attempts = 3;
  Client client(c, transport, nullptr, sleeper());
  const ChatResult r = client.chat(question);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, Failure::transport);
  EXPECT_EQ(r.http_attempts, 3);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(waits_.size(), 2u);
  EXPECT_NE(r.error.find("gave up after 3 HTTP attempts"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("connect failed"), std::string::npos) << r.error;
}

TEST_F(LlmClient, DroppedConnectionIsRetried) {
  LlmTestServer server(dir_ / "server", json::array({{{"close", true}}, answer("{\"ok\": 1}")}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  Recorder recorder(dir_ / "recording.jsonl", {});
  Client client(config(server.base_url()), transport, &recorder, sleeper());
  const ChatResult r = client.chat(question);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.http_attempts, 2);
  EXPECT_EQ(lines(recorder.path())[0]["error_kind"], "closed");
}

TEST_F(LlmClient, ProviderExtrasAndMissingFieldsAreTolerated) {
  // content null with reasoning (DeepSeek thinking mode) -> asked again; then a body with leading blank
  // lines, extra fields everywhere and usage without total_tokens; then a body without usage at all.
  const std::string extras =
      "\n\n\n{\"id\":\"x\",\"object\":\"chat.completion\",\"system_fingerprint\":\"fp\",\"choices\":[{\"index\":0,"
      "\"logprobs\":null,\"message\":{\"role\":\"assistant\",\"content\":\"{\\\"v\\\": 2}\",\"reasoning_content\":"
      "\"because\",\"tool_calls\":null},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":30,"
      "\"completion_tokens\":4,\"prompt_cache_hit_tokens\":10,\"completion_tokens_details\":{\"reasoning_tokens\":2}}}";
  const std::string no_usage =
      "{\"choices\":[{\"message\":{\"content\":\"{\\\"v\\\": 3}\"},\"finish_reason\":null}]}";
  LlmTestServer server(dir_ / "server",
                       json::array({{{"content", nullptr}, {"reasoning_content", "thinking..."}},
                                    {{"body", extras}}, {{"body", no_usage}}, {{"body", "{\"object\":\"error\"}"}}}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  ProviderConfig c = config(server.base_url());
  c.json_mode = true;
  Client client(c, transport, nullptr, sleeper());

  const ChatResult r = client.chat(question);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.content, "{\"v\": 2}");
  EXPECT_EQ(r.reasoning, "because");
  EXPECT_EQ(r.answer_retries, 1);
  EXPECT_EQ(r.usage.prompt_tokens, 10 + 30);
  EXPECT_EQ(r.usage.total_tokens, 10 + 30 + 4);  // total_tokens missing: prompt + completion

  const ChatResult n = client.chat(question);
  ASSERT_TRUE(n.ok) << n.error;
  EXPECT_EQ(n.content, "{\"v\": 3}");
  EXPECT_EQ(n.finish_reason, "");
  EXPECT_EQ(n.usage.total_tokens, 0);

  // No choices at all is not a chat completion: an error, not a re-ask.
  const ChatResult m = client.chat(question);
  EXPECT_FALSE(m.ok);
  EXPECT_EQ(m.failure, Failure::malformed);
  EXPECT_EQ(m.http_attempts, 1);
  EXPECT_NE(m.error.find("no choices"), std::string::npos) << m.error;
}

TEST_F(LlmClient, LocalServerWithoutKeySendsNoAuthorization) {
  LlmTestServer server(dir_ / "server", json::array({answer("{}")}));
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  ProviderConfig c = config(server.base_url() + "/");  // a trailing slash is fine too
  c.api_key_env = "";
  c.temperature = 0.2;
  c.seed = 1234;
  Client client(c, transport, nullptr, sleeper());
  ASSERT_TRUE(client.chat(question).ok);
  const json got = server.requests().at(0);
  EXPECT_EQ(got["path"], "/v1/chat/completions");
  EXPECT_FALSE(got["headers"].contains("authorization"));
  EXPECT_EQ(got["body"]["temperature"], 0.2);
  EXPECT_EQ(got["body"]["seed"], 1234);
}

TEST_F(LlmClient, ScriptFileWithAnswersStoredAsFiles) {
  // The form the agent tests use: a script in tests/generator/data whose answers are files beside it.
  LlmTestServer server(dir_ / "server", fs::path(KTUNE_TEST_DATA_DIR) / "llm" / "conversation.json");
  ASSERT_TRUE(server.ok()) << server.error();
  CurlTransport transport;
  Client client(config(server.base_url()), transport, nullptr, sleeper());
  const ChatResult first = client.chat(question, ChatOptions{.json_mode = true});
  ASSERT_TRUE(first.ok) << first.error;
  EXPECT_EQ(first.http_attempts, 2);  // a 503 first
  ASSERT_EQ(first.waits_s.size(), 1u);
  EXPECT_EQ(parse_json_answer(first.content).value()["decision"], "rewrite");
  EXPECT_EQ(first.usage.total_tokens, 140);
  const ChatResult second = client.chat({Message::user("next")});
  ASSERT_TRUE(second.ok) << second.error;
  EXPECT_EQ(second.content, "second answer");
  EXPECT_EQ(second.reasoning, "thinking");
  EXPECT_EQ(server.requests().size(), 3u);
}

// ---- recording and replay ----

class LlmReplay : public LlmClient {};

/// Records a run with retries of every kind (429 with retry-after, 500, dropped connection, blank and
/// non-JSON answers) over two calls.
void record_run(const fs::path& dir, const ProviderConfig& base, const fs::path& recording,
                std::vector<ChatResult>& results, const Sleeper& sleeper) {
  LlmTestServer server(dir / "server",
                       json::array({failure(429, "slow down", {{"retry-after", "1"}}), failure(500, "oops"),
                                    {{"close", true}}, answer("   "), answer("not json at all"),
                                    answer("{\"round\": 1}", 40, 6), failure(503, "busy"), answer("{\"round\": 2}")}));
  ASSERT_TRUE(server.ok()) << server.error();
  ProviderConfig c = base;
  c.base_url = server.base_url();
  CurlTransport transport;
  Recorder recorder(recording, {secret_key});
  Client client(c, transport, &recorder, sleeper);
  results.push_back(client.chat(question));
  results.push_back(client.chat({Message::user("Round two.")}));
}

TEST_F(LlmReplay, ReplayReproducesTheRunByteForByte) {
  ProviderConfig c = config("");
  c.json_mode = true;
  std::vector<ChatResult> recorded;
  record_run(dir_, c, dir_ / "run.jsonl", recorded, sleeper());  // the server is stopped on return
  ASSERT_EQ(recorded.size(), 2u);
  ASSERT_TRUE(recorded[0].ok) << recorded[0].error;
  ASSERT_TRUE(recorded[1].ok) << recorded[1].error;
  EXPECT_EQ(recorded[0].http_attempts, 6);
  EXPECT_EQ(recorded[0].answer_retries, 2);
  const std::vector<double> recorded_waits = waits_;

  const Recording recording = read_recording(dir_ / "run.jsonl");
  ASSERT_TRUE(recording.ok()) << recording.error;
  ASSERT_EQ(recording.exchanges.size(), 8u);
  const std::string url = recording.exchanges[0].url;

  // Replay: no server, no key, and the same configuration (the base URL comes from the recording).
  ::unsetenv(key_env);
  ProviderConfig replay_config = c;
  replay_config.base_url = url.substr(0, url.size() - std::string("/chat/completions").size());
  std::string open_error;
  std::unique_ptr<Transport> opened = open_transport(dir_ / "run.jsonl", open_error);
  ASSERT_TRUE(opened) << open_error;
  ASSERT_NE(dynamic_cast<ReplayTransport*>(opened.get()), nullptr);
  EXPECT_EQ(open_transport(dir_ / "absent.jsonl", open_error), nullptr);
  EXPECT_NE(open_error.find("cannot read the LLM recording"), std::string::npos) << open_error;
  ReplayTransport& replay = *dynamic_cast<ReplayTransport*>(opened.get());
  Recorder again(dir_ / "replay.jsonl", {});
  waits_.clear();
  Client client(replay_config, replay, &again, sleeper());
  const ChatResult r0 = client.chat(question);
  const ChatResult r1 = client.chat({Message::user("Round two.")});
  const std::vector<const ChatResult*> replayed = {&r0, &r1};
  for (std::size_t i = 0; i < 2; ++i) {
    const ChatResult& a = recorded[i];
    const ChatResult& b = *replayed[i];
    EXPECT_EQ(a.ok, b.ok) << i;
    EXPECT_EQ(a.content, b.content) << i;
    EXPECT_EQ(a.finish_reason, b.finish_reason) << i;
    EXPECT_EQ(a.http_attempts, b.http_attempts) << i;
    EXPECT_EQ(a.answer_retries, b.answer_retries) << i;
    EXPECT_EQ(a.waits_s, b.waits_s) << i;
    EXPECT_EQ(a.error, b.error) << i;
    EXPECT_EQ(to_json(a.usage), to_json(b.usage)) << i;
  }
  EXPECT_EQ(waits_, recorded_waits);
  EXPECT_EQ(replay.remaining(), 0u);
  EXPECT_EQ(replay.divergence(), "");
  const std::string original = slurp(dir_ / "run.jsonl");
  EXPECT_FALSE(original.empty());
  EXPECT_EQ(original.find(secret_key), std::string::npos);
  EXPECT_EQ(slurp(dir_ / "replay.jsonl"), original) << "the replay's recording must be byte-identical";
}

TEST_F(LlmReplay, DivergenceIsAClearError) {
  ProviderConfig c = config("");
  c.json_mode = true;
  std::vector<ChatResult> recorded;
  record_run(dir_, c, dir_ / "run.jsonl", recorded, sleeper());
  const Recording recording = read_recording(dir_ / "run.jsonl");
  ASSERT_TRUE(recording.ok()) << recording.error;
  const std::string url = recording.exchanges[0].url;
  c.base_url = url.substr(0, url.size() - std::string("/chat/completions").size());

  // A different question: diverges at once, not retried.
  {
    ReplayTransport replay(recording.exchanges);
    Client client(c, replay, nullptr, sleeper());
    const ChatResult r = client.chat({Message::system("You answer in JSON."), Message::user("Say goodbye.")});
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.failure, Failure::replay);
    EXPECT_EQ(r.http_attempts, 1);
    EXPECT_NE(r.error.find("replay diverged at request 1"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("/messages/1/content"), std::string::npos) << r.error;
    EXPECT_NE(replay.divergence(), "");
  }
  // Another setting changes the body too (here the output limit).
  {
    ReplayTransport replay(recording.exchanges);
    ProviderConfig other = c;
    other.max_tokens = 101;
    Client client(other, replay, nullptr, sleeper());
    const ChatResult r = client.chat(question);
    EXPECT_EQ(r.failure, Failure::replay);
    EXPECT_NE(r.error.find("/max_tokens"), std::string::npos) << r.error;
  }
  // Asking for more than was recorded.
  {
    ReplayTransport replay(recording.exchanges);
    Client client(c, replay, nullptr, sleeper());
    EXPECT_TRUE(client.chat(question).ok);
    EXPECT_TRUE(client.chat({Message::user("Round two.")}).ok);
    const ChatResult r = client.chat(question);
    EXPECT_EQ(r.failure, Failure::replay);
    EXPECT_NE(r.error.find("holds only 8"), std::string::npos) << r.error;
  }
}

TEST_F(LlmReplay, RecordingRedactsTheKeyEverywhere) {
  Recorder recorder(dir_ / "r.jsonl", {secret_key});
  HttpRequest request;
  request.url = std::string("http://h/v1/chat/completions?key=") + secret_key;
  request.body = json({{"messages", {{{"role", "user"}, {"content", std::string("my key is ") + secret_key}}}}}).dump();
  request.headers["Authorization"] = std::string("Bearer ") + secret_key;
  HttpResponse response;
  response.status = 401;
  response.headers["x-request-id"] = secret_key;
  response.headers["set-cookie"] = "session=abc";  // not a recorded header
  response.body = std::string("{\"error\": {\"message\": \"bad key ") + secret_key + "\"}}";
  response.error = secret_key;
  ASSERT_EQ(recorder.record({1, 1, 0}, request, response), "");
  const std::string text = slurp(dir_ / "r.jsonl");
  EXPECT_EQ(text.find(secret_key), std::string::npos) << text;
  EXPECT_EQ(text.find("Bearer"), std::string::npos);
  EXPECT_EQ(text.find("set-cookie"), std::string::npos);
  EXPECT_NE(text.find("my key is [REDACTED]"), std::string::npos) << text;
  EXPECT_EQ(redact("a-SECRET-b-SECRET", {"SECRET", ""}), "a-[REDACTED]-b-[REDACTED]");
}

TEST_F(LlmReplay, TruncatedLastLineIsToleratedAndSeqContinues) {
  const fs::path path = dir_ / "r.jsonl";
  {
    Recorder recorder(path, {});
    HttpRequest request;
    request.url = "http://h/v1/chat/completions";
    request.body = "{\"model\":\"m\"}";
    HttpResponse response;
    response.status = 200;
    response.body = "{}";
    ASSERT_EQ(recorder.record({1, 1, 0}, request, response), "");
    ASSERT_EQ(recorder.record({2, 1, 0}, request, response), "");
  }
  std::ofstream(path, std::ios::app) << "{\"seq\":3,\"call\":3,\"requ";  // a crash mid-line
  const Recording r = read_recording(path);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(r.truncated_tail);
  ASSERT_EQ(r.exchanges.size(), 2u);
  EXPECT_EQ(r.exchanges[1].seq, 2);
  EXPECT_EQ(r.exchanges[1].info.call, 2);
  EXPECT_EQ(r.exchanges[0].request, json({{"model", "m"}}));

  // A broken line that is not the last one is an error naming it.
  std::ofstream(path, std::ios::app) << "\n{\"seq\":4}\n";
  const Recording broken = read_recording(path);
  EXPECT_NE(broken.error.find(":3: not a JSON object"), std::string::npos) << broken.error;
  EXPECT_NE(read_recording(dir_ / "absent.jsonl").error, "");
  const fs::path typed = dir_ / "typed.jsonl";
  std::ofstream(typed) << "{\"seq\": \"one\"}\n";
  EXPECT_NE(read_recording(typed).error.find("typed.jsonl:1:"), std::string::npos) << read_recording(typed).error;

  // A recorder opened on an existing recording continues its numbering.
  const fs::path fresh = dir_ / "fresh.jsonl";
  {
    Recorder a(fresh, {});
    HttpRequest q;
    q.body = "{}";
    ASSERT_EQ(a.record({1, 1, 0}, q, HttpResponse{}), "");
  }
  Recorder b(fresh, {});
  HttpRequest q;
  q.body = "{}";
  ASSERT_EQ(b.record({2, 1, 0}, q, HttpResponse{}), "");
  EXPECT_EQ(read_recording(fresh).exchanges.back().seq, 2);
}

}  // namespace
