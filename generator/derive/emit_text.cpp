// generator/derive/emit_text.cpp: the text helpers every emitter shares (emit_detail.hpp): the banner and
// description header, wrapped comments and parameter lists, the tensor table, the API's parameter lists.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "generator/derive/emit_detail.hpp"

namespace ktune::gen::derive::detail {

namespace {

/// `text` as comment lines of at most `width` columns, each starting with `prefix` ("// ", "/// ");
/// words are never split, a '\n' starts a new line. Backslashes would continue a line comment onto the
/// next line of code, and control characters have no place in a comment: both are dropped.
std::string wrap(const std::string& text, const std::string& prefix, std::size_t width = 110) {
  std::string out;
  std::istringstream paragraphs(text);
  for (std::string para; std::getline(paragraphs, para);) {
    std::string line;
    std::istringstream words(para);
    for (std::string w; words >> w;) {
      std::string clean;
      for (char c : w)
        if (c != '\\' && static_cast<unsigned char>(c) >= 0x20) clean += c;
      if (!line.empty() && prefix.size() + line.size() + 1 + clean.size() > width) {
        out += prefix + line + "\n";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + clean;
    }
    std::string last = prefix + line;
    while (!last.empty() && last.back() == ' ') last.pop_back();
    out += last + "\n";
  }
  return out;
}

std::string banner(const Model& m) {
  return wrap(fmt::format("Derived by ktune {} (`ktune derive`, `ktune agent`) for op {} from S ({}, {}) and spec.json ({}).\n"
                          "Do not edit: change S or spec.json and run `ktune derive` (or `ktune agent`) again.",
                          KTUNE_TOOL_VERSION, m.op, m.s_name, m.s_hash, m.spec_hash),
              "// ");
}

}  // namespace

std::string header(const Model& m, const std::string& description) {
  std::string o = banner(m) + "//\n";
  std::size_t pos = 0;
  while (pos <= description.size()) {
    std::size_t end = description.find("\n\n", pos);
    if (end == std::string::npos) end = description.size();
    if (pos) o += "//\n";
    o += wrap(description.substr(pos, end - pos), "// ");
    pos = end + 2;
  }
  return o;
}

std::string wrap_list(const std::string& head, const std::vector<std::string>& items, const std::string& tail) {
  std::string one = head;
  for (std::size_t i = 0; i < items.size(); ++i) one += (i ? ", " : "") + items[i];
  one += tail;
  if (one.size() <= 120) return one + "\n";
  const std::string indent(head.size() <= 60 ? head.size() : 4, ' ');
  std::vector<std::string> lines{head};
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string piece = items[i] + (i + 1 < items.size() ? "," : tail);
    if (i == 0) lines.back() += piece;
    else if (lines.back().size() + 1 + piece.size() > 120) lines.push_back(indent + piece);
    else lines.back() += " " + piece;
  }
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

std::string doc_lines(const std::string& text, const std::string& indent) { return wrap(text, indent + "/// ", 100); }

std::string tensor_table(const Model& m, const std::string& indent) {
  std::size_t nw = 0, sw = 0;
  for (const TensorModel& t : m.tensors) {
    nw = std::max(nw, t.name.size());
    sw = std::max(sw, t.shape.size());
  }
  std::string out;
  for (const TensorModel& t : m.tensors)
    out += fmt::format("{}///   {:<{}}  {:<{}}  {}, {}{}\n", indent, t.name, nw, t.shape, sw, t.dtype_text(),
                       t.access_text(), t.index() ? ", values in " + t.range_text : "");
  return out;
}

std::vector<std::string> api_params(const Model& m, const std::string& e, bool names, bool defaults) {
  std::vector<std::string> v;
  for (const TensorModel& t : m.tensors) v.push_back(t.pointer(e) + (names ? " " + t.name : ""));
  for (const std::string& d : m.dims) v.push_back(std::string("std::int64_t") + (names ? " " + d : ""));
  for (const ScalarModel& s : m.scalars)
    v.push_back(s.cpp_type + (names ? " " + s.name : "") + (names && defaults ? " = " + s.default_cpp : ""));
  return v;
}

std::string scalar_table(const Model& m, const std::string& indent) {
  std::size_t nw = 0, tw = 0;
  for (const ScalarModel& s : m.scalars) {
    nw = std::max(nw, s.name.size());
    tw = std::max(tw, s.cpp_type.size());
  }
  std::string out;
  for (const ScalarModel& s : m.scalars)
    out += fmt::format("{}///   {:<{}}  {:<{}}  default {}{}\n", indent, s.name, nw, s.cpp_type, tw, s.default_cpp,
                       s.valid_words.empty() ? "" : ", valid: " + s.valid_words);
  return out;
}

std::string empty_words(const Model& m) {
  std::string s;
  for (std::size_t i = 0; i < m.empty_dims.size(); ++i)
    s += (i == 0 ? "" : i + 1 == m.empty_dims.size() ? " or " : ", ") + m.empty_dims[i];
  return s + " is 0";
}

std::vector<std::string> call_args(const Model& m) {
  std::vector<std::string> v;
  for (const TensorModel& t : m.tensors) v.push_back(t.name);
  for (const std::string& d : m.dims) v.push_back(d);
  for (const ScalarModel& s : m.scalars) v.push_back(s.name);
  return v;
}

}  // namespace ktune::gen::derive::detail
