// generator/derive/source.hpp: reads the user's S (generator/derive/README.md, "The form of S") just
// far enough to wrap it: where its leading #include block ends, where its launcher is and what its
// parameters look like, and the constructs that cannot be wrapped in a namespace.
//
// This is not a C++ parser. It blanks comments and the insides of string and character literals (so
// nothing in them is mistaken for code), then matches tokens; what it cannot read it reports as an
// error naming the line, and the user fixes S rather than the generator guessing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ktune::gen::derive {

/// `text` with every comment and the contents of every string and character literal replaced by
/// spaces (newlines kept), so offsets and line numbers are the same as in `text`.
std::string mask_source(const std::string& text);

/// 1-based line number of byte offset `pos` in `text`.
int line_of(const std::string& text, std::size_t pos);

/// One parameter of the launcher, as written.
struct LaunchParam {
  std::string text;               ///< the whole declaration, whitespace collapsed: "const T* __restrict__ in"
  std::string name;               ///< the declared name; empty when unnamed
  std::vector<std::string> type;  ///< type tokens without the name, qualifiers kept: {"const", "T", "*"}
};

struct ScannedSource {
  std::string leading;                 ///< S's leading block (comments, #include, #pragma, ...), hoisted
                                       ///< out of the namespace; `#pragma once` lines removed
  std::string body;                    ///< the rest of S, wrapped in the namespace verbatim
  int body_line = 1;                   ///< line of S where `body` starts
  std::string element_param;           ///< the launcher's template parameter: "T"
  std::vector<LaunchParam> params;     ///< the launcher's parameters, in order
  int launch_line = 0;                 ///< line of S where the launcher is declared
};

/// Scans S. On failure returns false with `error` saying what and where (S's line numbers).
bool scan_source(const std::string& text, ScannedSource& out, std::string& error);

}  // namespace ktune::gen::derive
