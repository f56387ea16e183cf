// generator/derive/emit_detail.hpp: private to the emit_*.cpp files: the text helpers they share
// (emit_text.cpp) and one function per derived file, which emit_files (emit.cpp) lists in order.
#pragma once

#include <string>
#include <vector>

#include "generator/derive/model.hpp"

namespace ktune::gen::derive::detail {

// ---- shared text helpers (emit_text.cpp) ---------------------------------------------------------

/// The banner (tool, version, op, S and spec.json with their hashes; do not edit), then the file's
/// description: paragraphs separated by "\n\n", as wrapped "// " comment lines.
std::string header(const Model& m, const std::string& description);

/// `head` + the comma-separated `items` + `tail` as one line, or, beyond 120 columns, greedily filled lines
/// continuing under the first item (4 columns in when `head` is long).
std::string wrap_list(const std::string& head, const std::vector<std::string>& items, const std::string& tail);

/// `text` as "/// " doc lines of at most 100 columns, after `indent`.
std::string doc_lines(const std::string& text, const std::string& indent);

/// The tensor table of doc comments: "///   in   [tokens, 2*d]  E, read"; index tensors add their value range.
std::string tensor_table(const Model& m, const std::string& indent);

/// Parameters of the public API and of make_args: the tensors, then the dims, then the scalars (S's launcher
/// order). `e` spells the element type ("E", "float", "void"); `names` adds the parameter names, `defaults`
/// (with names) the scalars' defaults: "float eps = 1e-06f".
std::vector<std::string> api_params(const Model& m, const std::string& e, bool names, bool defaults = false);

/// The scalar table of doc comments: "///   eps  float  default 1e-06f, valid: finite and > 0"; empty without
/// scalars.
std::string scalar_table(const Model& m, const std::string& indent);

/// "tokens or d is 0", for doc comments.
std::string empty_words(const Model& m);

/// The tensor names, then the dim names, then the scalar names: the arguments of a call in S's launcher order.
std::vector<std::string> call_args(const Model& m);

// ---- the derived files ---------------------------------------------------------------------------

std::string args_hpp(const Model& m);         // emit_args.cpp
std::string original_cuh(const Model& m);     // emit_args.cpp
std::string harness_hpp(const Model& m);      // emit_harness.cpp
std::string family_base_cuh(const Model& m);  // emit_api.cpp
std::string op_hpp(const Model& m);           // emit_api.cpp: <op>.hpp
std::string op_cuh(const Model& m);           // emit_api.cpp: <op>.cuh
std::string op_cu(const Model& m);            // emit_api.cpp: <op>.cu

}  // namespace ktune::gen::derive::detail
