// generator/agents/answer.hpp: what the LLM answers (a family, its space and its reasoning), parsed and
// checked before anything is compiled. The static check refuses answers that try to reach around the
// judge (call S, register variants or a harness, copy memory) or to behave differently from one call to
// the next (state kept between calls, clocks, questions about graph capture): the judge is deterministic
// code and the family may only be a kernel and its adapter. It reads C++ approximately and is a first
// filter only; the judge's GPU checks are the real defence.
#pragma once

#include <string>

namespace ktune::gen {

struct Answer {
  std::string reasoning;
  std::string summary;   ///< one line
  std::string kind;      ///< "rewrite" or "reparam", as the LLM labelled it
  std::string space_hpp;
  std::string family_cuh;
};

/// Parses the answer's JSON object (as llm::parse_json_answer finds it: bare, fenced or embedded).
/// Returns an empty string, or what is wrong with it in words the LLM can act on.
std::string parse_answer(const std::string& content, Answer& out);

/// The static check of the two files (comments and string contents ignored): an empty string when they
/// may be compiled, else one sentence naming the file, what it does, the code quoted and what to do instead.
std::string check_answer(const Answer& a);

}  // namespace ktune::gen
