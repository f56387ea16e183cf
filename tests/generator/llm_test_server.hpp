// tests/generator/llm_test_server.hpp: starts tests/generator/llm_server.py (the scripted
// OpenAI-compatible server) as a child process for a test, and reads back what it received.
//
//   ktune::gen::test::LlmTestServer server(dir, nlohmann::json::array({
//       {{"status", 429}, {"headers", {{"retry-after", "2"}}}},
//       {{"content", "{\"ok\": true}"}}}));
//   ASSERT_TRUE(server.ok()) << server.error();
//   config.base_url = server.base_url();                  // http://127.0.0.1:<port>/v1
//   ... client.chat(...) ...
//   std::vector<nlohmann::json> got = server.requests();  // one per request: path, headers, body, step
//
// The script format is documented at the top of llm_server.py. A script given as a file path keeps its
// folder, so its content_file / body_file entries may name answers stored beside it (tests/generator/
// data/...). `dir` receives script.json (when given as JSON), requests.jsonl, port and server.out.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

extern char** environ;

namespace ktune::gen::test {

class LlmTestServer {
 public:
  /// Starts the server on `script` (a JSON array of steps or {"steps": [...]}) written to dir/script.json.
  LlmTestServer(const std::filesystem::path& dir, const nlohmann::json& script) : dir_(dir) {
    prepare();
    const std::filesystem::path file = dir_ / "script.json";
    std::ofstream(file) << script.dump(2) << "\n";
    start(file);
  }

  /// Starts the server on a script file (relative content_file paths resolve against its folder).
  LlmTestServer(const std::filesystem::path& dir, const std::filesystem::path& script_file) : dir_(dir) {
    prepare();
    start(script_file);
  }

  ~LlmTestServer() { stop(); }
  LlmTestServer(const LlmTestServer&) = delete;
  LlmTestServer& operator=(const LlmTestServer&) = delete;

  bool ok() const { return port_ > 0; }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  /// The base URL a ProviderConfig wants: http://127.0.0.1:<port>/v1
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::filesystem::path log_path() const { return dir_ / "requests.jsonl"; }

  /// The requests received so far, in arrival order (see llm_server.py for the fields).
  std::vector<nlohmann::json> requests() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(log_path());
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded()) out.push_back(std::move(j));
    }
    return out;
  }

  /// Stops the server (SIGTERM, then SIGKILL after 2 s) and reaps it. The port is closed afterwards.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
  }

 private:
  void prepare() {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    for (const char* name : {"requests.jsonl", "port", "server.out"}) std::filesystem::remove(dir_ / name, ec);
  }

  void start(const std::filesystem::path& script_file) {
    // On another machine (the GPU machine runs a copy of the tree) the environment says where they are.
    const char* env_python = std::getenv("KTUNE_TEST_PYTHON");
    const char* env_source = std::getenv("KTUNE_SOURCE_DIR");
    const std::string python = env_python && *env_python ? env_python : KTUNE_TEST_PYTHON;
    const std::string server = env_source && *env_source ? std::string(env_source) + "/tests/generator/llm_server.py"
                                                         : std::string(KTUNE_TEST_LLM_SERVER);
    const std::string port_file = (dir_ / "port").string(), log = log_path().string(),
                      out = (dir_ / "server.out").string(), script = script_file.string();
    std::vector<std::string> args = {python, server, "--script", script, "--log", log, "--port-file", port_file};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int rc = posix_spawnp(&pid_, python.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      error_ = "cannot start " + python + ": " + std::strerror(rc);
      return;
    }
    // The port file appears (renamed into place, so never half-written) once the socket is bound.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(port_file);
      int port = 0;
      if (in >> port && port > 0) {
        port_ = port;
        return;
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        error_ = "the scripted LLM server exited at start: " + slurp(out);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    error_ = "the scripted LLM server did not report its port within 20 s: " + slurp(out);
    stop();
  }

  static std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string error_;
};

}  // namespace ktune::gen::test
