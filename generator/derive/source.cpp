// generator/derive/source.cpp: the scan of S (source.hpp).
#include "generator/derive/source.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace ktune::gen::derive {

namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

/// Whether the '"' at `q` opens a raw string literal: R, u8R, uR, UR or LR right before it, and no
/// identifier character before the prefix.
bool opens_raw_string(const std::string& t, std::size_t q) {
  if (q == 0 || t[q - 1] != 'R') return false;
  std::size_t p = q - 1;  // the 'R'
  if (p >= 2 && t[p - 2] == 'u' && t[p - 1] == '8') p -= 2;
  else if (p >= 1 && (t[p - 1] == 'u' || t[p - 1] == 'U' || t[p - 1] == 'L')) p -= 1;
  return p == 0 || !ident_char(t[p - 1]);
}

}  // namespace

std::string mask_source(const std::string& t) {
  std::string m = t;
  const std::size_t n = t.size();
  auto blank = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < n; ++k)
      if (m[k] != '\n') m[k] = ' ';
  };
  std::size_t i = 0;
  while (i < n) {
    const char c = t[i];
    const char next = i + 1 < n ? t[i + 1] : '\0';
    if (c == '/' && next == '/') {  // to the end of the line; a backslash-newline continues it
      std::size_t j = i;
      while (j < n && t[j] != '\n') j += (t[j] == '\\' && j + 1 < n && t[j + 1] == '\n') ? 2 : 1;
      blank(i, j);
      i = j;
    } else if (c == '/' && next == '*') {
      std::size_t j = t.find("*/", i + 2);
      j = j == std::string::npos ? n : j + 2;
      blank(i, j);
      i = j;
    } else if (c == '"' && opens_raw_string(t, i)) {
      const std::size_t open = t.find('(', i + 1);
      if (open == std::string::npos) break;
      const std::string close = ")" + t.substr(i + 1, open - i - 1) + "\"";
      std::size_t j = t.find(close, open + 1);
      j = j == std::string::npos ? n : j + close.size();
      blank(i + 1, j - 1);
      i = j;
    } else if (c == '"' || c == '\'') {  // ends at the matching quote or, unterminated, at the line end
      std::size_t j = i + 1;
      while (j < n && t[j] != c && t[j] != '\n') j += (t[j] == '\\' && j + 1 < n) ? 2 : 1;
      blank(i + 1, std::min(j, n));
      i = j < n && t[j] == c ? j + 1 : j;
    } else if (ident_start(c)) {  // whole identifiers, so the u8 of u8'x' or a digit in a name is no literal
      while (i < n && ident_char(t[i])) ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && std::isdigit(static_cast<unsigned char>(next)))) {
      // A pp-number, digit separators (1'000'000) and exponents (1e-5, 0x1p+3) included.
      ++i;
      while (i < n) {
        const char d = t[i];
        if (ident_char(d) || d == '.') ++i;
        else if (d == '\'' && i + 1 < n && ident_char(t[i + 1])) i += 2;
        else if ((d == '+' || d == '-') && (t[i - 1] == 'e' || t[i - 1] == 'E' || t[i - 1] == 'p' || t[i - 1] == 'P')) ++i;
        else break;
      }
    } else {
      ++i;
    }
  }
  return m;
}

int line_of(const std::string& text, std::size_t pos) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(std::min(pos, text.size())), '\n'));
}

namespace {

struct Line {
  std::size_t begin, end;  ///< [begin, end) without the newline
};

std::vector<Line> split_lines(const std::string& t) {
  std::vector<Line> lines;
  std::size_t b = 0;
  while (b <= t.size()) {
    std::size_t e = t.find('\n', b);
    if (e == std::string::npos) e = t.size();
    lines.push_back({b, e});
    if (e == t.size()) break;
    b = e + 1;
  }
  return lines;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

/// The directive name of a masked line that starts with '#' ("include", "if", ...; "" for a null
/// directive); nullopt-like empty optional via the bool.
bool directive_of(std::string_view line, std::string& name) {
  line = trim(line);
  if (line.empty() || line[0] != '#') return false;
  line.remove_prefix(1);
  line = trim(line);
  std::size_t k = 0;
  while (k < line.size() && ident_char(line[k])) ++k;
  name = std::string(line.substr(0, k));
  return true;
}

/// Tokens of a masked declaration fragment: identifiers, "::", "[[", "]]" and single punctuation.
std::vector<std::string> tokenize(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (ident_char(c)) {
      std::size_t j = i;
      while (j < s.size() && ident_char(s[j])) ++j;
      out.emplace_back(s.substr(i, j - i));
      i = j;
    } else if (c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      out.emplace_back("::");
      i += 2;
    } else {
      out.emplace_back(1, c);
      ++i;
    }
  }
  return out;
}

bool is_qualifier(const std::string& t) {
  return t == "const" || t == "volatile" || t == "__restrict__" || t == "__restrict" || t == "restrict";
}

/// Whether `tokens` (a declaration prefix ending just before "launch") reads
/// `template <typename|class X> [specifiers] cudaError_t`; sets `param` to X.
bool is_launch_template(const std::vector<std::string>& tokens, std::string& param) {
  if (tokens.size() < 6 || tokens[0] != "template" || tokens[1] != "<") return false;
  if (tokens[2] != "typename" && tokens[2] != "class") return false;
  if (!ident_start(tokens[3][0]) || tokens[4] != ">") return false;
  const std::string& ret = tokens.back();
  if (ret != "cudaError_t" && ret != "cudaError") return false;
  static const char* allowed[] = {"inline", "static", "__host__", "__forceinline__", "__inline__", "constexpr",
                                  "[", "]", "nodiscard", "maybe_unused", "::"};
  for (std::size_t k = 5; k + 1 < tokens.size(); ++k)
    if (std::find_if(std::begin(allowed), std::end(allowed), [&](const char* a) { return tokens[k] == a; }) ==
        std::end(allowed))
      return false;
  param = tokens[3];
  return true;
}

}  // namespace

bool scan_source(const std::string& text, ScannedSource& out, std::string& error) {
  out = ScannedSource{};
  const std::string m = mask_source(text);
  const std::vector<Line> lines = split_lines(m);
  auto line_text = [&](const Line& l) { return std::string_view(m).substr(l.begin, l.end - l.begin); };

  // 1. The leading block: blank and comment lines and preprocessor directives, up to the last line
  //    where every #if it opened is closed again.
  std::size_t leading_end = 0;  // offset just past the last line of the block
  {
    int depth = 0;
    bool continued = false;  // the previous line ended with a backslash: still the same directive
    for (const Line& l : lines) {
      const std::string_view s = line_text(l);
      std::string name;
      if (continued) {
        // part of the directive above
      } else if (trim(s).empty()) {
        // blank or comment only
      } else if (directive_of(s, name)) {
        if (name == "if" || name == "ifdef" || name == "ifndef") ++depth;
        else if (name == "endif") --depth;
      } else {
        break;
      }
      continued = !trim(s).empty() && trim(s).back() == '\\';
      if (depth == 0 && !continued) leading_end = std::min(l.end + 1, text.size());
    }
  }
  for (const Line& l : lines) {
    if (l.begin >= leading_end) break;
    std::string name;
    const std::string_view s = line_text(l);
    const bool once = directive_of(s, name) && name == "pragma" && tokenize(trim(s)).size() >= 3 &&
                      tokenize(trim(s))[2] == "once";
    if (!once) out.leading += text.substr(l.begin, std::min(l.end + 1, text.size()) - l.begin);
  }
  out.body = text.substr(leading_end);
  out.body_line = line_of(text, leading_end);

  // 2. Constructs that a namespace around S breaks.
  for (const Line& l : lines) {
    if (l.begin < leading_end) continue;
    std::string name;
    if (directive_of(line_text(l), name) && name == "include") {
      error = "S line " + std::to_string(line_of(text, l.begin)) +
              ": #include after the first line of code. ktune wraps S in a namespace and hoists only the leading "
              "block of #include lines above it; move every #include to the top of the file";
      return false;
    }
  }
  for (std::size_t p = m.find("extern"); p != std::string::npos; p = m.find("extern", p + 6)) {
    if ((p > 0 && ident_char(m[p - 1])) || (p + 6 < m.size() && ident_char(m[p + 6]))) continue;
    std::size_t q = p + 6;
    while (q < m.size() && std::isspace(static_cast<unsigned char>(m[q]))) ++q;
    if (q < m.size() && m[q] == '"' && text.compare(q, 3, "\"C\"") == 0) {
      error = "S line " + std::to_string(line_of(text, p)) +
              ": extern \"C\". Every translation unit of a kernel folder includes S, so a C-linkage definition "
              "would be defined many times at link time; drop the extern \"C\" (ktune gives S's own names internal "
              "linkage instead)";
      return false;
    }
  }

  // 3. The launcher: `template <typename T> cudaError_t launch(...)` at file scope (brace depth 0).
  std::vector<int> depth_at(m.size() + 1, 0);
  {
    int d = 0;
    for (std::size_t k = 0; k < m.size(); ++k) {
      depth_at[k] = d;
      if (m[k] == '{') ++d;
      else if (m[k] == '}') d = std::max(0, d - 1);
    }
    depth_at[m.size()] = d;
  }
  std::size_t found = std::string::npos, open_paren = 0;
  int nested_line = 0, other_line = 0, definitions = 0;
  for (std::size_t p = m.find("launch"); p != std::string::npos; p = m.find("launch", p + 6)) {
    if ((p > 0 && ident_char(m[p - 1])) || (p + 6 < m.size() && ident_char(m[p + 6]))) continue;
    std::size_t q = p + 6;
    while (q < m.size() && std::isspace(static_cast<unsigned char>(m[q]))) ++q;
    if (q >= m.size() || m[q] != '(') continue;
    // The declaration starts after the previous ';', '{' or '}' or preprocessor line.
    std::size_t start = p;
    while (start > 0 && m[start - 1] != ';' && m[start - 1] != '{' && m[start - 1] != '}') --start;
    for (const Line& l : lines) {
      std::string directive;
      if (l.end < p && l.begin >= start && directive_of(line_text(l), directive)) start = l.end;
    }
    std::string param;
    const bool templated = is_launch_template(tokenize(std::string_view(m).substr(start, p - start)), param);
    if (!templated) {
      if (depth_at[p] == 0 && !other_line) other_line = line_of(text, p);
      continue;
    }
    if (depth_at[p] != 0) {
      if (!nested_line) nested_line = line_of(text, p);
      continue;
    }
    // A definition has '{' after the matching ')'; a declaration ';'.
    int parens = 0;
    std::size_t close = q;
    for (; close < m.size(); ++close) {
      if (m[close] == '(') ++parens;
      else if (m[close] == ')' && --parens == 0) break;
    }
    if (close >= m.size()) {
      error = "S line " + std::to_string(line_of(text, p)) + ": the parameter list of launch is not closed";
      return false;
    }
    std::size_t after = close + 1;
    while (after < m.size() && m[after] != '{' && m[after] != ';') ++after;
    const bool definition = after < m.size() && m[after] == '{';
    if (definition) ++definitions;
    if (found == std::string::npos || (definition && definitions == 1)) {
      found = p;
      open_paren = q;
      out.element_param = param;
    }
  }
  if (definitions > 1) {
    error = "S defines launch more than once: overloads are not supported (spec.json fixes one signature)";
    return false;
  }
  if (found == std::string::npos) {
    if (nested_line)
      error = "S line " + std::to_string(nested_line) +
              ": launch is declared inside a namespace, class or function; the launcher must be at file scope";
    else if (other_line)
      error = "S line " + std::to_string(other_line) +
              ": launch is not declared as `template <typename T> cudaError_t launch(...)`, the launcher form ktune "
              "calls (generator/derive/README.md)";
    else
      error = "S has no launcher: ktune calls S through `template <typename T> cudaError_t launch(<one pointer per spec "
              "tensor>, <one int64_t per spec dim>, cudaStream_t stream)` at file scope (generator/derive/README.md)";
    return false;
  }
  out.launch_line = line_of(text, found);

  // 4. Its parameters: split at top-level commas, default arguments dropped.
  int depth = 0;
  std::size_t begin = open_paren + 1;
  std::vector<std::string> raw;
  for (std::size_t k = open_paren; k < m.size(); ++k) {
    const char c = m[k];
    if (c == '(' || c == '[' || c == '{' || c == '<') ++depth;
    else if (c == ')' || c == ']' || c == '}' || c == '>') --depth;
    if ((c == ',' && depth == 1) || depth == 0) {
      raw.push_back(m.substr(begin, k - begin));
      begin = k + 1;
    }
    if (depth == 0) break;
  }
  for (std::string r : raw) {
    int d = 0;
    for (std::size_t k = 0; k < r.size(); ++k) {
      if (r[k] == '(' || r[k] == '[' || r[k] == '{' || r[k] == '<') ++d;
      else if (r[k] == ')' || r[k] == ']' || r[k] == '}' || r[k] == '>') --d;
      else if (r[k] == '=' && d == 0) {
        r.resize(k);
        break;
      }
    }
    std::vector<std::string> tokens = tokenize(r);
    if (tokens.empty() || (tokens.size() == 1 && tokens[0] == "void" && raw.size() == 1)) continue;
    LaunchParam lp;
    for (std::size_t k = 0; k < tokens.size(); ++k) {
      const bool glued = k == 0 || tokens[k] == "*" || tokens[k] == "&" || tokens[k] == "::" || tokens[k - 1] == "::";
      lp.text += (glued ? "" : " ") + tokens[k];
    }
    const std::string& last = tokens.back();
    if (tokens.size() >= 2 && ident_start(last[0]) && !is_qualifier(last) && tokens[tokens.size() - 2] != "::") {
      lp.name = last;
      tokens.pop_back();
    }
    lp.type = std::move(tokens);
    out.params.push_back(std::move(lp));
  }
  return true;
}

}  // namespace ktune::gen::derive
