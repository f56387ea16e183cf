// generator/toolchain/process.cpp: child processes with time limits (process.hpp).
#include "generator/toolchain/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <thread>

extern char** environ;

namespace ktune::gen {

namespace {

/// Keeps the first and the last half of max bytes, so both the first error and the summary survive.
class Capped {
 public:
  explicit Capped(std::size_t max) : max_(max) {}
  void add(const char* p, std::size_t n) {
    total_ += n;
    if (head_.size() < max_ / 2) {
      const std::size_t take = std::min(n, max_ / 2 - head_.size());
      head_.append(p, take);
      p += take;
      n -= take;
    }
    tail_.append(p, n);
    if (tail_.size() > max_ / 2) tail_.erase(0, tail_.size() - max_ / 2);
  }
  std::string str() const {
    const std::size_t kept = head_.size() + tail_.size();
    if (total_ <= kept) return head_ + tail_;
    return head_ + "\n[... " + std::to_string(total_ - kept) + " bytes of output left out ...]\n" + tail_;
  }

 private:
  std::size_t max_, total_ = 0;
  std::string head_, tail_;
};

}  // namespace

std::string command_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    if (!s.empty()) s += ' ';
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == std::string::npos;
    if (plain) {
      s += a;
    } else {
      s += '\'';
      for (char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
      s += '\'';
    }
  }
  return s;
}

void log_process(std::string& log, const std::vector<std::string>& argv, const ProcessResult& r) {
  char tail[96];
  std::snprintf(tail, sizeof tail, "[exit %d%s, %.1f s]\n\n", r.exit_code, r.timed_out ? ", timed out" : "", r.seconds);
  log += "$ " + command_line(argv) + "\n" + r.output + (r.output.empty() || r.output.back() == '\n' ? "" : "\n") + tail;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ProcessResult r;
  if (argv.empty()) {
    r.error = "no command";
    return r;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The environment too: putenv after fork could take a lock another thread held (run_processes forks
  // from several threads).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('=') + 1);
    bool overridden = false;
    for (const std::string& o : options.env) overridden = overridden || o.rfind(key, 0) == 0;
    if (!overridden) env_strings.push_back(entry);
  }
  for (const std::string& o : options.env) env_strings.push_back(o);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.error = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return r;
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group: a timeout kills the compiler's or the benchmark's children too
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) ::_exit(126);
    ::execvpe(args[0], args.data(), envp.data());
    const char msg[] = "exec failed\n";
    [[maybe_unused]] auto ignored = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(fds[1]);
  r.started = true;
  Capped out(options.max_output);
  const auto deadline = start + std::chrono::duration<double>(options.timeout_s);
  char buf[65536];
  bool open = true;
  while (open) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      r.timed_out = true;
      break;
    }
    const int wait_ms = static_cast<int>(std::min<double>(
        1000, std::chrono::duration<double, std::milli>(deadline - now).count() + 1));
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, wait_ms);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got > 0) out.add(buf, static_cast<std::size_t>(got));
    else if (got == 0 || errno != EINTR) open = false;
  }
  if (r.timed_out) ::kill(-pid, SIGKILL);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!r.timed_out) ::kill(-pid, SIGKILL);  // stray grandchildren holding nothing we wait for
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  r.output = out.str();
  if (r.timed_out) r.error = "timed out after " + std::to_string(static_cast<int>(options.timeout_s)) + " s";
  else if (r.exit_code == 127 && r.output.find("exec failed") != std::string::npos) r.error = "cannot run " + argv[0];
  return r;
}

std::vector<ProcessResult> run_processes(const std::vector<std::vector<std::string>>& commands, int jobs,
                                         const ProcessOptions& options) {
  std::vector<ProcessResult> results(commands.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < commands.size();) results[i] = run_process(commands[i], options);
  };
  std::vector<std::thread> pool;
  const int n = std::max(1, std::min<int>(jobs, static_cast<int>(commands.size())));
  for (int t = 0; t < n; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  return results;
}

}  // namespace ktune::gen
