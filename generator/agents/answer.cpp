// generator/agents/answer.cpp: parsing and the static check of an answer (answer.hpp).
#include "generator/agents/answer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "generator/llm/client.hpp"

namespace ktune::gen {

std::string parse_answer(const std::string& content, Answer& out) {
  if (content.find_first_not_of(" \t\r\n") == std::string::npos) return "the answer is blank";
  const std::optional<nlohmann::json> parsed = llm::parse_json_answer(content);
  if (!parsed) return "the answer is not a JSON object (nothing in it parses as JSON)";
  const nlohmann::json& j = *parsed;
  if (!j.is_object()) return "the answer must be one JSON object";
  auto field = [&](const char* key, std::string& dst) -> std::string {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::string("the answer lacks the string field \"") + key + "\"";
    dst = it->get<std::string>();
    return {};
  };
  out = Answer{};
  for (auto [key, dst] : {std::pair{"reasoning", &out.reasoning}, {"summary", &out.summary}, {"kind", &out.kind},
                          {"space_hpp", &out.space_hpp}, {"family_cuh", &out.family_cuh}})
    if (std::string e = field(key, *dst); !e.empty()) return e;
  if (out.kind != "rewrite" && out.kind != "reparam") return "\"kind\" must be \"rewrite\" or \"reparam\"";
  if (out.space_hpp.find("struct Space") == std::string::npos) return "space_hpp must define struct Space";
  if (out.family_cuh.find("struct Family") == std::string::npos) return "family_cuh must define struct Family";
  if (const std::size_t nl = out.summary.find('\n'); nl != std::string::npos) out.summary.resize(nl);
  return {};
}

// ---- the static check -----------------------------------------------------------------------------
//
// A first filter only, over C++ read approximately (regular expressions and a scan of declarations,
// no parser): it refuses what an LLM writes when it reaches around the judge or keeps state between
// calls, and says so in a sentence the LLM can act on. A determined cheat gets past it (a macro, a
// pointer cast); the GPU checks (guarded buffers, verified timed calls, the plausibility of times,
// the sanitizers) are the real defence.

namespace {

/// A file as the check reads it. `code`: comments removed and string and character literals emptied
/// (`""`), except on preprocessor lines, which stay whole (the #include rule reads their file names).
/// `literals`: comments removed, literals kept (inline PTX is a string). `declarations`: `code`
/// without its preprocessor lines, for the scan of declarations.
struct Stripped {
  std::string code, literals, declarations;
};

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Whether the quote at `i` is a digit separator (1'000'000) rather than a character literal.
bool digit_separator(const std::string& s, std::size_t i) {
  std::size_t b = i;
  while (b > 0 && (identifier_char(s[b - 1]) || s[b - 1] == '\'')) --b;
  return b < i && std::isdigit(static_cast<unsigned char>(s[b]));
}

/// The end (one past the closing quote) of the literal that opens at `i`; raw strings included.
std::size_t literal_end(const std::string& s, std::size_t i) {
  const char q = s[i];
  if (q == '"' && i > 0 && s[i - 1] == 'R') {
    const std::size_t open = s.find('(', i);
    if (open != std::string::npos) {
      std::string close(1, ')');
      close.append(s, i + 1, open - i - 1).push_back('"');
      const std::size_t end = s.find(close, open);
      return end == std::string::npos ? s.size() : end + close.size();
    }
  }
  std::size_t j = i + 1;
  while (j < s.size() && s[j] != q && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
  return std::min(j + 1, s.size());
}

std::string without_directives(const std::string& code) {
  std::string out;
  bool directive = false;
  for (std::size_t i = 0; i < code.size();) {
    std::size_t eol = code.find('\n', i);
    if (eol == std::string::npos) eol = code.size();
    const std::string line = code.substr(i, eol - i);
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (!directive && first != std::string::npos && line[first] == '#') directive = true;
    if (!directive) out += line;
    if (directive) directive = !line.empty() && line.back() == '\\';
    if (eol < code.size()) out += '\n';
    i = eol + 1;
  }
  return out;
}

Stripped strip(const std::string& s) {
  Stripped o;
  bool line_start = true, directive = false;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const char next = i + 1 < s.size() ? s[i + 1] : '\0';
    if (c == '\n') {
      if (!(i > 0 && s[i - 1] == '\\')) directive = false;
      line_start = true;
    } else if (line_start && c == '#') {
      directive = true;
    }
    if (c != '\n' && !std::isspace(static_cast<unsigned char>(c))) line_start = false;
    if (c == '/' && next == '/') {
      i = s.find('\n', i);
      if (i == std::string::npos) i = s.size();
      continue;
    }
    if (c == '/' && next == '*') {
      const std::size_t end = s.find("*/", i + 2);
      const std::size_t stop = end == std::string::npos ? s.size() : end + 2;
      o.code += ' ';
      o.literals += ' ';
      for (std::size_t j = i; j < stop; ++j)
        if (s[j] == '\n') o.code += '\n', o.literals += '\n';
      i = stop;
      continue;
    }
    if (c == '"' || (c == '\'' && !digit_separator(s, i))) {
      const std::size_t end = literal_end(s, i);
      o.literals.append(s, i, end - i);
      if (directive) o.code.append(s, i, end - i);
      else o.code += std::string(2, c);
      i = end;
      continue;
    }
    o.code += c;
    o.literals += c;
    ++i;
  }
  o.declarations = without_directives(o.code);
  return o;
}

/// Removes attribute-like words that take arguments (`__launch_bounds__(256)`, `alignas(16)`), so
/// that their parentheses are not read as a parameter list.
std::string drop_attributes(std::string s) {
  static const std::regex attribute(
      R"(\b(__launch_bounds__|__align__|alignas|__attribute__|__declspec|__cluster_dims__|decltype)\s*\()");
  std::smatch m;
  while (std::regex_search(s, m, attribute)) {
    const std::size_t at = static_cast<std::size_t>(m.position(0));
    std::size_t j = at + static_cast<std::size_t>(m.length(0)) - 1;
    for (int depth = 0; j < s.size(); ++j)
      if (s[j] == '(') ++depth;
      else if (s[j] == ')' && --depth == 0) break;
    s.erase(at, std::min(j + 1, s.size()) - at);
    s.insert(at, 1, ' ');
  }
  return s;
}

/// The head of a statement: its text up to the first `(` or `=` outside brackets (a declaration's
/// specifiers and name), and the words and `*`s in it outside template arguments and brackets.
struct Head {
  std::string text;
  char delimiter = '\0';  ///< '(', '=' or '\0' (the statement ended first)
  std::vector<std::string> words;
  bool const_after_last_pointer = false, has_pointer = false;
};

Head head_of(const std::string& s) {
  Head h;
  int angle = 0, square = 0, paren = 0;
  bool seen_const = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '[') ++square;
    else if (c == ']') --square;
    else if (square > 0) {
    } else if (c == '(' && angle == 0 && paren == 0) {
      h.delimiter = '(';
    } else if (c == '=' && angle == 0 && paren == 0) {
      h.delimiter = '=';
    } else if (c == '(') {
      ++paren;
    } else if (c == ')') {
      --paren;
    } else if (paren > 0) {
    } else if (c == '<' && i + 1 < s.size() && s[i + 1] == '<') {
      ++i;  // a shift, not a template argument list
    } else if (c == '<') {
      ++angle;
    } else if (c == '>' && angle > 0) {
      --angle;
    } else if (angle == 0 && c == '*') {
      h.has_pointer = true;
      seen_const = false;
    } else if (angle == 0 && identifier_char(c) && (i == 0 || !identifier_char(s[i - 1]))) {
      std::size_t e = i;
      while (e < s.size() && identifier_char(s[e])) ++e;
      h.words.push_back(s.substr(i, e - i));
      if (h.words.back() == "const") seen_const = true;
    }
    if (h.delimiter) {
      h.text = s.substr(0, i);
      break;
    }
  }
  if (!h.delimiter) h.text = s;
  h.const_after_last_pointer = seen_const;
  return h;
}

bool has_word(const std::vector<std::string>& words, const char* w) {
  return std::find(words.begin(), words.end(), w) != words.end();
}

/// What a scope is: a namespace (or the file), and whether its code runs on the device.
struct Scope {
  bool names = false;
  bool device = false;
};

enum class State { none, device, host };

/// Whether `statement` (the text before a `;` or `{`) declares a variable that keeps state between
/// calls: a static or thread_local one anywhere, or any at namespace scope, that is neither const nor
/// constexpr nor __constant__ / __shared__. `shown` gets the declaration as the refusal quotes it.
State state_declared(const std::string& statement, const Scope& scope, std::string& shown) {
  static const std::regex prefix(R"(^\s*((public|private|protected)\s*:\s*|\[\[[^\]]*\]\]\s*))");
  static const std::regex space(R"(\s+)");
  static const std::set<std::string> not_a_variable = {
      "using",  "typedef", "namespace", "friend", "return", "static_assert", "struct",   "class",  "union",
      "enum",   "if",      "else",      "for",    "while",  "do",            "switch",   "case",   "default",
      "goto",   "break",   "continue",  "asm",    "extern", "throw",         "try",      "catch",  "operator",
      "delete", "sizeof",  "co_return", "concept", "requires", "template"};
  std::string s = drop_attributes(statement);
  for (std::smatch m; std::regex_search(s, m, prefix);) s.erase(0, static_cast<std::size_t>(m.length(0)));
  // A template header: `template <...>` with its nested argument lists.
  for (std::size_t t = s.find_first_not_of(" \t\r\n");
       t != std::string::npos && s.compare(t, 8, "template") == 0 && !(t + 8 < s.size() && identifier_char(s[t + 8]));
       t = s.find_first_not_of(" \t\r\n")) {
    std::size_t j = s.find('<', t);
    if (j == std::string::npos) break;
    for (int depth = 0; j < s.size(); ++j)
      if (s[j] == '<') ++depth;
      else if (s[j] == '>' && --depth == 0) break;
    s.erase(0, std::min(j + 1, s.size()));
  }
  const std::size_t first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || !(identifier_char(s[first]) || s[first] == ':')) return State::none;
  const Head h = head_of(s.substr(first));
  if (h.words.empty() || not_a_variable.count(h.words.front()) || has_word(h.words, "operator")) return State::none;
  if (h.delimiter == '(') return State::none;  // a function (or a call, or `T x(args)`: approximate)
  const bool kept = has_word(h.words, "static") || has_word(h.words, "thread_local");
  if (!kept) {
    // At namespace scope every variable lives as long as the program: a type and a name at least.
    const std::size_t last = h.text.find_last_not_of(" \t\r\n");
    if (!scope.names || h.words.size() < 2 || last == std::string::npos || !(identifier_char(h.text[last]) || h.text[last] == ']'))
      return State::none;
  }
  if (has_word(h.words, "constexpr") || has_word(h.words, "__constant__") || has_word(h.words, "__shared__"))
    return State::none;
  if (h.has_pointer ? h.const_after_last_pointer : has_word(h.words, "const")) return State::none;
  shown = std::regex_replace(h.text, space, " ");
  shown.erase(shown.find_last_not_of(' ') + 1);
  if (shown.size() > 80) shown = shown.substr(0, 45) + " ... " + shown.substr(shown.size() - 30);
  return has_word(h.words, "__device__") || has_word(h.words, "__managed__") || scope.device ? State::device
                                                                                              : State::host;
}

/// The first declaration of state that survives between calls in `text` (declarations of strip()).
State find_state(const std::string& text, std::string& shown) {
  static const std::regex opens_namespace(R"(^\s*(inline\s+)?namespace\b[^=]*$|^\s*extern\s*""\s*$)");
  static const std::regex device_function(R"(\b(__global__|__device__)\b)");
  std::vector<Scope> scopes{{true, false}};
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != ';' && c != '{' && c != '}') continue;
    const std::string statement = text.substr(start, i - start);
    start = i + 1;
    if (c == '}') {
      if (scopes.size() > 1) scopes.pop_back();
      continue;
    }
    if (const State st = state_declared(statement, scopes.back(), shown); st != State::none) return st;
    if (c == '{') {
      Scope inner;
      inner.names = std::regex_search(statement, opens_namespace);
      inner.device = scopes.back().device || (!inner.names && std::regex_search(statement, device_function) &&
                                              head_of(drop_attributes(statement)).delimiter == '(');
      scopes.push_back(inner);
    }
  }
  return State::none;
}

}  // namespace

std::string check_answer(const Answer& a) {
  // Patterns that must not appear in either file, each with what the file does and what to do
  // instead. Matched against the code without comments and string contents; the one about inline
  // PTX (a string) reads the literals too.
  struct Rule {
    const char* pattern;
    bool in_literals;
    const char* what;
    const char* instead;
  };
  static const char* const only_kernel = "a family is only its kernel and its adapter";
  static const char* const no_time =
      "a family's work and result must not depend on time (the judge times calls from outside): remove it";
  // What a call must leave as it found it: the caller's stream, context and device (docs/judge.md, item 11).
  static const char* const callers_stream =
      "the caller's stream is the caller's: a call must leave its attributes as it found them (the judge compares "
      "them after every call). Set what your own launches need as launch attributes of those launches "
      "(ktune::LaunchShape: PDL, clusters), and leave L2 persistence to the caller";
  static const char* const callers_context =
      "the caller's context and device are the caller's: a call must leave their limits and configuration as it "
      "found them (the judge compares them after every call). Configure your own kernels instead: "
      "cudaFuncSetAttribute (dynamic shared memory, cudaFuncAttributePreferredSharedMemoryCarveout) or "
      "cudaFuncSetCacheConfig on your kernel is allowed, and ktune::launch raises the dynamic shared memory itself";
  static const char* const callers_device =
      "a call runs on the caller's current device and context, on the stream it is given: never select, create, "
      "reset or reconfigure a device or context";
  static const Rule rules[] = {
      {R"(\bKTUNE_REGISTER)", false, "registers variants (the build does that)", only_kernel},
      {R"(\b(Harness)?Registry\b)", false, "touches the registry of variants or harnesses", only_kernel},
      {R"(\boriginal\s*::|\boriginal_(run|can_implement)\b)", false, "calls S, which it must replace, not wrap",
       only_kernel},
      {R"(\bcudaMemcpy|\bcudaMalloc|\bcudaFree|\bmalloc\s*\(|\bnew\s+\w)", false, "allocates or copies memory itself",
       only_kernel},
      {R"(\b(system|popen|fopen|exec[lv]p?e?)\s*\()", false, "runs programs or opens files", only_kernel},
      {R"(#\s*include\s*["<][^">]*(harness|registry|instantiate|original)[^">]*[">])", false,
       "includes the judge's or S's headers (family_base.cuh brings what a family needs)", only_kernel},
      {R"(\batomic[A-Z]\w*\s*\()", false, "uses atomics (results must be bitwise reproducible)", only_kernel},
      {R"(\bclock(64)?\s*\(|\bchrono\b|\b(gettimeofday|clock_gettime|timespec_get|__rdtsc)\s*\()", false,
       "reads a clock or timer", no_time},
      {R"(globaltimer|%clock\w*)", true, "reads a clock or timer", no_time},
      {R"(\bcuda(StreamIsCapturing|StreamGetCaptureInfo\w*|ThreadExchangeStreamCaptureMode)\b)", false,
       "asks whether a CUDA graph is being captured",
       "the adapter must enqueue the same work whether or not it is captured: launch unconditionally"},
      {R"(\bcuda(StreamCreate\w*|EventCreate\w*|DeviceSynchronize|StreamSynchronize|EventSynchronize|StreamWaitEvent)\b)", false,
       "makes its own streams, events or synchronisation",
       "enqueue every launch on the stream the adapter is given, and never wait for the GPU: the caller orders and "
       "times the work (a kernel on another stream escapes the caller's graph and events)"},
      {R"(\bcu(da)?StreamSetAttribute\b|\bcudaStreamAttr(ibute)?AccessPolicyWindow\b|\bcudaStreamAttributeSynchronizationPolicy\b|\bCU_STREAM_ATTRIBUTE_\w+)",
       false, "sets an attribute of the caller's stream", callers_stream},
      {R"(\bcudaLaunchAttributeAccessPolicyWindow\b|\bCU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW\b|\baccessPolicyWindow\b)", false,
       "marks memory persisting in L2 (an access-policy window)",
       "persisting lines stay in L2 after the call and take the set-aside the caller made for its own data: launch "
       "without an access-policy window, with the attributes ktune::LaunchShape offers"},
      {R"(\bcuda(DeviceSetLimit|ThreadSetLimit|CtxSetLimit|CtxResetPersistingL2Cache|DeviceSetCacheConfig|ThreadSetCacheConfig|)"
       R"(DeviceSetSharedMemConfig|DeviceSetMemPool|MemPoolSetAttribute|MemPoolTrimTo|DeviceSetGraphMemAttribute|DeviceGraphMemTrim|)"
       R"(DeviceEnablePeerAccess|DeviceDisablePeerAccess)\b)",
       false, "changes a limit or the configuration of the caller's context or device", callers_context},
      {R"(\bcu(CtxSetLimit|CtxResetPersistingL2Cache|CtxSetCacheConfig|CtxSetSharedMemConfig|CtxSetFlags|DeviceSetMemPool|)"
       R"(MemPoolSetAttribute|MemPoolTrimTo|DeviceSetGraphMemAttribute|DeviceGraphMemTrim|CtxEnablePeerAccess|CtxDisablePeerAccess)\b)",
       false, "changes a limit or the configuration of the caller's context or device (driver API)", callers_context},
      {R"(\bcuda(SetDevice|SetDeviceFlags|DeviceReset|ThreadExit|SetValidDevices|InitDevice)\b)", false,
       "selects, resets or reconfigures the caller's device", callers_device},
      {R"(\bcu(CtxCreate\w*|CtxDestroy\w*|CtxSetCurrent|CtxPushCurrent\w*|CtxPopCurrent\w*|DevicePrimaryCtx\w+|GreenCtx\w+|)"
       R"(CtxFromGreenCtx|Init)\b)",
       false, "creates, switches or resets CUDA contexts", callers_device},
  };
  static const std::vector<std::regex> compiled = [] {
    std::vector<std::regex> v;
    for (const Rule& r : rules) v.emplace_back(r.pattern);
    return v;
  }();
  const std::pair<const char*, Stripped> files[] = {{"space.hpp", strip(a.space_hpp)},
                                                    {"family.cuh", strip(a.family_cuh)}};
  auto refusal = [](const char* file, const std::string& what, const std::string& found, const char* instead) {
    return std::string(file) + " " + what + " (\"" + found + "\"); " + instead;
  };
  for (std::size_t r = 0; r < std::size(rules); ++r)
    for (const auto& [name, text] : files) {
      std::smatch m;
      if (std::regex_search(rules[r].in_literals ? text.literals : text.code, m, compiled[r]))
        return refusal(name, rules[r].what, m.str(), rules[r].instead);
    }
  for (const auto& [name, text] : files) {
    std::string shown;
    switch (find_state(text.declarations, shown)) {
      case State::device:
        return refusal(name, "keeps device state that survives between calls", shown,
                       "a kernel must compute each call from that call's inputs alone: keep per-call data in "
                       "registers or __shared__ memory, and make a table constexpr, __constant__ or itself const (a pointer to "
                       "const is not)");
      case State::host:
        return refusal(name, "keeps host-side state that survives between calls", shown,
                       "the adapter must do the same for the same arguments on every call: compute what it needs "
                       "from the arguments, and make constants constexpr");
      case State::none:
        break;
    }
  }
  return {};
}

}  // namespace ktune::gen
