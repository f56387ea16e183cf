// generator/derive/derive.cpp: checks the inputs and builds the model the emitters write from
// (derive.hpp).
#include "generator/derive/derive.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "generator/derive/emit.hpp"
#include "generator/derive/model.hpp"
#include "generator/derive/source.hpp"
#include "ktune/io.hpp"      // content_hash
#include "ktune/tables.hpp"  // generate_default_table

namespace ktune::gen {

namespace derive {
namespace {

// C++20 keywords and alternative tokens: none can name a namespace, a member or a parameter.
const std::set<std::string> cpp_keywords = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
    "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
    "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
    "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
    "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
    "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
    "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
    "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};

// Object-like macros of the C and CUDA headers every kernel folder includes.
const std::set<std::string> macro_names = {"NULL", "EOF", "errno", "stdin", "stdout", "stderr"};

// Names of namespace ktune (functions and types an op's public function `ktune::<op>` would overload or
// hide) and of the derived code's own scopes.
const std::set<std::string> ktune_names = {
    "launch", "lookup", "compare", "name", "param", "explain", "diagnose", "occupancy", "detail", "ops", "tool",
    "gen", "tuned", "original", "derived", "size_of", "to_string", "current_device", "time_kernel",
    "fill_uniform", "make_space", "mix64", "uniform_at", "to_float", "from_float", "bits_of", "from_bits",
    "visit_dtype", "parse_dtype", "arch_limits", "load_spec", "parse_spec", "parse_spec_text", "is_poison",
    "poison_bits", "default_tolerance", "register_shard", "register_original", "for_each_feasible", "pdl_wait",
    "pdl_launch_dependents", "misalignment", "check_on_device", "query_device", "all_dtypes", "supported_archs",
    "nearest_known_arch", "Status", "Shape", "Spec", "Space", "Harness", "Variant", "Registry", "DType"};

/// Why `name` cannot be a C++ identifier of generated code, or "" when it can.
std::string identifier_problem(const std::string& name) {
  if (name.empty()) return "it is empty";
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return "a C++ identifier starts with a letter or '_'";
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return "a C++ identifier is [A-Za-z_][A-Za-z0-9_]*";
  if (name[0] == '_') return "names starting with '_' are reserved to the implementation";
  if (name.find("__") != std::string::npos) return "names containing \"__\" are reserved to the implementation";
  if (cpp_keywords.count(name)) return "it is a C++ keyword";
  if (macro_names.count(name)) return "it is a macro of the C headers";
  return "";
}

std::string canonical_extent(const std::vector<ExtentFactor>& axis) {
  std::string s;
  for (const ExtentFactor& f : axis) s += (s.empty() ? "" : "*") + (f.dim.empty() ? std::to_string(f.constant) : f.dim);
  return s;
}

/// Checks the launcher's parameters against the spec: one pointer per tensor (const for "read", E for
/// "element", float for "fp32"), one int64_t per dimension, then the stream.
std::string check_launch(const Model& m) {
  const auto& params = m.source.params;
  const std::string& t = m.source.element_param;
  std::vector<std::string> expected;
  for (const TensorModel& x : m.tensors) expected.push_back(x.name);
  for (const std::string& d : m.dims) expected.push_back(d);
  expected.push_back("stream");
  auto where = [&](std::size_t k) {
    return fmt::format("S line {}: parameter {} of launch (`{}`)", m.source.launch_line, k + 1, params[k].text);
  };
  if (params.size() != expected.size()) {
    std::string list;
    for (const TensorModel& x : m.tensors) list += fmt::format("{}{} {}", list.empty() ? "" : ", ", x.pointer(t), x.name);
    for (const std::string& d : m.dims) list += ", int64_t " + d;
    return fmt::format("S line {}: launch takes {} parameters, spec.json asks for {}: ({}, cudaStream_t stream)",
                       m.source.launch_line, params.size(), expected.size(), list);
  }
  const std::set<std::string> spec_names(expected.begin(), expected.end() - 1);
  for (std::size_t k = 0; k < params.size(); ++k) {
    const LaunchParam& p = params[k];
    if (!p.name.empty() && p.name != expected[k] && spec_names.count(p.name))
      return fmt::format("{} is named `{}`, but spec.json puts `{}` there: the launcher takes the tensors in spec order, "
                         "then the dimensions in spec order, then the stream", where(k), p.name, expected[k]);
    std::vector<std::string> type;
    for (const std::string& tok : p.type)
      if (tok != "__restrict__" && tok != "__restrict" && tok != "restrict") type.push_back(tok);
    if (k < m.tensors.size()) {
      const TensorModel& x = m.tensors[k];
      const auto star = std::find(type.begin(), type.end(), "*");
      const bool one_pointer = star != type.end() && std::count(type.begin(), type.end(), "*") == 1 &&
                               std::find(type.begin(), type.end(), "&") == type.end();
      const bool pointee_const = std::find(type.begin(), star, "const") != star;
      std::vector<std::string> base;
      for (auto it = type.begin(); it != star; ++it)
        if (*it != "const" && *it != "volatile") base.push_back(*it);
      const std::string want = x.element ? t : "float";
      if (!one_pointer || base.size() != 1 || base[0] != want || pointee_const != x.read_only())
        return fmt::format("{} should be `{} {}`: tensor `{}` is {}, dtype \"{}\", access \"{}\" in spec.json", where(k),
                           x.pointer(t), x.name, x.name, x.shape, x.element ? "element" : "fp32",
                           x.access == Access::read ? "read" : x.access == Access::write ? "write" : "read_write");
    } else if (k + 1 < params.size()) {
      std::vector<std::string> base;
      for (const std::string& tok : type)
        if (tok != "const") base.push_back(tok);
      while (!base.empty() && (base.front() == "::" || base.front() == "std")) base.erase(base.begin());
      if (base != std::vector<std::string>{"int64_t"})
        return fmt::format("{} should be `int64_t {}` (dimension `{}` of spec.json; 64-bit so no size is truncated)",
                           where(k), expected[k], expected[k]);
    } else {
      std::vector<std::string> base;
      for (const std::string& tok : type)
        if (tok != "const" && tok != "::") base.push_back(tok);
      if (base != std::vector<std::string>{"cudaStream_t"})
        return fmt::format("{} should be `cudaStream_t stream`: the launcher's last parameter is the stream", where(k));
    }
  }
  return "";
}

}  // namespace
}  // namespace derive

DeriveResult derive_kernel_folder(const std::string& op, const std::string& s_source, const std::string& s_name,
                                  const std::string& spec_json) {
  using namespace derive;
  DeriveResult r;
  auto fail = [&](std::string why) {
    r.files.clear();
    r.error = std::move(why);
    return r;
  };

  // The op's name becomes a namespace, a function, file names and a folder.
  if (std::string why = identifier_problem(op); !why.empty())
    return fail(fmt::format("op name '{}' cannot be used: {}", op, why));
  if (ktune_names.count(op))
    return fail(fmt::format("op name '{}' cannot be used: it is already a name of namespace ktune, which the op's public "
                            "function ktune::{} would clash with",
                            op, op));

  Model m;
  m.op = op;
  m.s_name = s_name;
  for (char& c : m.s_name)  // it appears in comments: keep them one line each
    if (static_cast<unsigned char>(c) < 0x20 || c == '\\') c = '?';
  m.s_hash = tool::content_hash(s_source);
  m.spec_hash = tool::content_hash(spec_json);
  m.spec_json = spec_json;
  try {
    m.spec = parse_spec_text(spec_json, "spec.json");
  } catch (const SpecError& e) {
    return fail(e.what());
  }
  if (m.spec.op != op)
    return fail(fmt::format("spec.json names op '{}' but the op is called '{}': they must agree (the benchmark and the "
                            "tools find an op's harness and kernel folder by the spec's name)",
                            m.spec.op, op));

  // Names of dimensions and tensors become members of Args and parameters of the public API.
  static const std::set<std::string> reserved = {"E", "stream", "dtype"};
  std::set<std::string> seen;
  auto check_name = [&](const std::string& kind, const std::string& name) -> std::string {
    if (std::string why = identifier_problem(name); !why.empty())
      return fmt::format("spec.json: {} name '{}' cannot be a C++ parameter: {}", kind, name, why);
    if (reserved.count(name))
      return fmt::format("spec.json: {} name '{}' is taken by the public API (E, stream and dtype are its own "
                         "parameters); rename it",
                         kind, name);
    if (name == op) return fmt::format("spec.json: {} name '{}' is the op's name; rename it", kind, name);
    if (!seen.insert(name).second)
      return fmt::format("spec.json: the name '{}' names both a dimension and a tensor; rename one", name);
    return "";
  };
  for (const auto& [dim, values] : m.spec.dims) {
    if (std::string e = check_name("dimension", dim); !e.empty()) return fail(e);
    m.dims.push_back(dim);
  }
  bool any_element = false;
  for (const SpecTensor& t : m.spec.tensors) {
    if (std::string e = check_name("tensor", t.name); !e.empty()) return fail(e);
    TensorModel x;
    x.name = t.name;
    x.element = t.element_dtype();
    x.access = t.access;
    any_element = any_element || t.element_dtype();
    std::string shape;
    for (std::size_t k = 0; k < t.extents.size(); ++k) {
      shape += (k ? ", " : "") + canonical_extent(t.extents[k]);
      for (const ExtentFactor& f : t.extents[k]) {
        x.factors += (x.factors.empty() ? "" : ", ") + (f.dim.empty() ? std::to_string(f.constant) : "a." + f.dim);
        if (!f.dim.empty() && std::find(x.dims.begin(), x.dims.end(), f.dim) == x.dims.end()) x.dims.push_back(f.dim);
      }
    }
    x.shape = "[" + shape + "]";
    m.tensors.push_back(std::move(x));
  }
  if (!any_element)
    return fail("spec.json: no tensor has dtype \"element\", so the op's dtype would choose nothing; give the tensors "
                "that follow the dtype \"element\"");
  for (const std::string& d : m.dims)
    for (const TensorModel& x : m.tensors)
      if (std::find(x.dims.begin(), x.dims.end(), d) != x.dims.end()) {
        m.empty_dims.push_back(d);
        break;
      }

  std::string error;
  if (!scan_source(s_source, m.source, error)) return fail(fmt::format("S ({}): {}", m.s_name, error));
  if (std::string e = check_launch(m); !e.empty()) return fail(fmt::format("S ({}): {}", m.s_name, e));

  r.files = emit_files(m);
  return r;
}

DerivedFile default_tuned_table(const std::string& op, std::uint64_t space_hash) {
  return {"tuned.cuh", tool::generate_default_table(op, space_hash)};
}

}  // namespace ktune::gen
