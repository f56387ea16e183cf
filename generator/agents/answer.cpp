// generator/agents/answer.cpp: parsing and the static check of an answer (answer.hpp).
#include "generator/agents/answer.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <regex>

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

std::string check_answer(const Answer& a) {
  // Each entry: a pattern that must not appear in either file, and why.
  static const std::pair<const char*, const char*> forbidden[] = {
      {R"(\bKTUNE_REGISTER)", "registers variants (the build does that)"},
      {R"(\b(Harness)?Registry\b)", "touches the registry of variants or harnesses"},
      {R"(\boriginal\s*::|\boriginal_(run|can_implement)\b)", "calls S, which it must replace, not wrap"},
      {R"(\bcudaMemcpy|\bcudaMalloc|\bcudaFree|\bmalloc\s*\(|\bnew\s+\w)", "allocates or copies memory itself"},
      {R"(\b(system|popen|fopen|exec[lv]p?e?)\s*\()", "runs programs or opens files"},
      {R"(#\s*include\s*["<][^">]*(harness|registry|instantiate|original)[^">]*[">])",
       "includes the judge's or S's headers (family_base.cuh brings what a family needs)"},
      {R"(\batomic[A-Z]\w*\s*\()", "uses atomics (results must be bitwise reproducible)"},
  };
  for (const auto& [pattern, why] : forbidden) {
    const std::regex re(pattern);
    for (const std::string* file : {&a.space_hpp, &a.family_cuh}) {
      std::smatch m;
      if (std::regex_search(*file, m, re))
        return std::string(file == &a.space_hpp ? "space.hpp" : "family.cuh") + " " + why + " (\"" + m.str() +
               "\"); a family is only its kernel and its adapter";
    }
  }
  return {};
}

}  // namespace ktune::gen
