// generator/derive/derive.cpp: checks the inputs and builds the model the emitters write from
// (derive.hpp).
#include "generator/derive/derive.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
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

/// The type tokens of a parameter without `const`, `volatile`, restrict qualifiers and a leading `std::` or
/// `::`: {"int64_t"} for `const std::int64_t`.
std::vector<std::string> base_type(const std::vector<std::string>& type) {
  std::vector<std::string> base;
  for (const std::string& tok : type)
    if (tok != "const" && tok != "volatile" && tok != "__restrict__" && tok != "__restrict" && tok != "restrict")
      base.push_back(tok);
  while (!base.empty() && (base.front() == "::" || base.front() == "std")) base.erase(base.begin());
  return base;
}

/// The pointee spellings S may use for a tensor: the op's `T`, float, int32_t (or int, the same type on every
/// platform CUDA supports) and int64_t (only as spelled: `long long` is another type than std::int64_t).
bool pointee_matches(const std::vector<std::string>& base, const TensorModel& x, const std::string& t) {
  if (base.size() != 1) return false;
  switch (x.dtype) {
    case TensorDType::element: return base[0] == t;
    case TensorDType::fp32: return base[0] == "float";
    case TensorDType::int32: return base[0] == "int32_t" || base[0] == "int";
    case TensorDType::int64: return base[0] == "int64_t";
  }
  return false;
}

/// How S's launcher spells scalar `s`: float, int64_t, bool.
std::string launcher_type(const ScalarModel& s) { return s.type == ScalarType::int_ ? "int64_t" : s.cpp_type; }

/// Checks the launcher's parameters against the spec: one pointer per tensor (const for "read"; pointee E for
/// "element", float for "fp32", int32_t / int64_t for index tensors), one int64_t per dimension, one value per
/// scalar (float, int64_t, bool), then the stream.
std::string check_launch(const Model& m) {
  const auto& params = m.source.params;
  const std::string& t = m.source.element_param;
  std::vector<std::string> expected;
  for (const TensorModel& x : m.tensors) expected.push_back(x.name);
  for (const std::string& d : m.dims) expected.push_back(d);
  for (const ScalarModel& s : m.scalars) expected.push_back(s.name);
  expected.push_back("stream");
  const std::size_t first_dim = m.tensors.size(), first_scalar = first_dim + m.dims.size();
  const std::string order =
      m.scalars.empty()
          ? "the launcher takes the tensors in spec order, then the dimensions in spec order, then the stream"
          : "the launcher takes the tensors in spec order, then the dimensions in spec order, then the scalars in "
            "spec order (after the dimensions, before the stream), then the stream";
  auto where = [&](std::size_t k) {
    return fmt::format("S line {}: parameter {} of launch (`{}`)", m.source.launch_line, k + 1, params[k].text);
  };
  if (params.size() != expected.size()) {
    std::string list;
    for (const TensorModel& x : m.tensors) list += fmt::format("{}{} {}", list.empty() ? "" : ", ", x.pointer(t), x.name);
    for (const std::string& d : m.dims) list += ", int64_t " + d;
    for (const ScalarModel& s : m.scalars) list += ", " + launcher_type(s) + " " + s.name;
    return fmt::format("S line {}: launch takes {} parameters, spec.json asks for {}: ({}, cudaStream_t stream)",
                       m.source.launch_line, params.size(), expected.size(), list);
  }
  const std::set<std::string> spec_names(expected.begin(), expected.end() - 1);
  for (std::size_t k = 0; k < params.size(); ++k) {
    const LaunchParam& p = params[k];
    if (!p.name.empty() && p.name != expected[k] && spec_names.count(p.name)) {
      const ScalarModel* scalar = nullptr;
      for (const ScalarModel& s : m.scalars)
        if (s.name == p.name) scalar = &s;
      if (scalar)
        return fmt::format("{} is scalar `{}`, but spec.json puts `{}` there: scalars come after the dimensions and "
                           "before the stream, in spec order ({})",
                           where(k), p.name, expected[k], order);
      return fmt::format("{} is named `{}`, but spec.json puts `{}` there: {}", where(k), p.name, expected[k], order);
    }
    std::vector<std::string> type;
    for (const std::string& tok : p.type)
      if (tok != "__restrict__" && tok != "__restrict" && tok != "restrict") type.push_back(tok);
    if (k < first_dim) {
      const TensorModel& x = m.tensors[k];
      const auto star = std::find(type.begin(), type.end(), "*");
      const bool one_pointer = star != type.end() && std::count(type.begin(), type.end(), "*") == 1 &&
                               std::find(type.begin(), type.end(), "&") == type.end();
      const bool pointee_const = std::find(type.begin(), star, "const") != star;
      const std::vector<std::string> base = base_type(std::vector<std::string>(type.begin(), star));
      if (!one_pointer || !pointee_matches(base, x, t) || pointee_const != x.read_only())
        return fmt::format("{} should be `{} {}`: tensor `{}` is {}, dtype \"{}\", access \"{}\" in spec.json", where(k),
                           x.pointer(t), x.name, x.name, x.shape, name(x.dtype),
                           x.access == Access::read ? "read" : x.access == Access::write ? "write" : "read_write");
    } else if (k < first_scalar) {
      if (base_type(type) != std::vector<std::string>{"int64_t"})
        return fmt::format("{} should be `int64_t {}` (dimension `{}` of spec.json; 64-bit so no size is truncated){}",
                           where(k), expected[k], expected[k], m.scalars.empty() ? "" : "; " + order);
    } else if (k + 1 < params.size()) {
      const ScalarModel& s = m.scalars[k - first_scalar];
      const bool by_value = std::find(type.begin(), type.end(), "*") == type.end() &&
                            std::find(type.begin(), type.end(), "&") == type.end();
      if (!by_value || base_type(type) != std::vector<std::string>{launcher_type(s)})
        return fmt::format("{} should be `{} {}` (scalar `{}` of spec.json, type \"{}\", by value); {}", where(k),
                           launcher_type(s), s.name, s.name, name(s.type), order);
    } else {
      std::vector<std::string> base;
      for (const std::string& tok : type)
        if (tok != "const" && tok != "::") base.push_back(tok);
      if (base != std::vector<std::string>{"cudaStream_t"})
        return fmt::format("{} should be `cudaStream_t stream`: the launcher's last parameter is the stream{}", where(k),
                           m.scalars.empty() ? "" : "; " + order);
    }
  }
  return "";
}

/// `v` as a C++ literal of scalar type `type`: "1e-06f", "0.5f", "4", "true".
std::string scalar_literal(double v, ScalarType type) {
  if (type == ScalarType::bool_) return v != 0 ? "true" : "false";
  if (type == ScalarType::int_) {
    // The spec holds ints as doubles: within int64_t's range by construction (parse_spec read them as int64_t).
    if (v <= -9223372036854775808.0) return "std::numeric_limits<std::int64_t>::min()";
    if (v >= 9223372036854775808.0) return "std::numeric_limits<std::int64_t>::max()";
    return fmt::format("{}", static_cast<std::int64_t>(v));
  }
  std::string s = fmt::format("{}", static_cast<float>(v));  // shortest text that reads back as the same float
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

/// A bound of a "valid" rule as a C++ literal that compares exactly as the spec's double does.
std::string bound_literal(double v) {
  std::string s = fmt::format("{}", v);  // shortest text that reads back as the same double
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

const char* op_text(ScalarBound::Op op) {
  switch (op) {
    case ScalarBound::Op::gt: return ">";
    case ScalarBound::Op::ge: return ">=";
    case ScalarBound::Op::lt: return "<";
    case ScalarBound::Op::le: return "<=";
    case ScalarBound::Op::ne: return "!=";
  }
  return "?";
}

/// A range bound over Args `a`: "0", "a.max_pos".
std::string range_cpp(const RangeBound& b) {
  if (b.dim.empty()) return std::to_string(b.constant);
  return b.constant == 1 ? "a." + b.dim : std::to_string(b.constant) + " * a." + b.dim;
}
std::string range_words(const RangeBound& b) {
  if (b.dim.empty()) return std::to_string(b.constant);
  return b.constant == 1 ? b.dim : std::to_string(b.constant) + "*" + b.dim;
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

  // Names of dimensions, tensors and scalars become members of Args and parameters of the public API.
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
      return fmt::format("spec.json: the name '{}' names two of the dimensions, tensors and scalars; rename one", name);
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
    x.dtype = t.dtype;
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
    if (x.index()) {
      x.range_lo = range_cpp(t.range_lo);
      x.range_hi = range_cpp(t.range_hi);
      x.range_text = "[" + range_words(t.range_lo) + ", " + range_words(t.range_hi) + ")";
    }
    m.tensors.push_back(std::move(x));
  }
  if (!any_element)
    return fail("spec.json: no tensor has dtype \"element\", so the op's dtype would choose nothing; give the tensors "
                "that follow the dtype \"element\"");
  for (std::size_t i = 0; i < m.spec.scalars.size(); ++i) {
    const SpecScalar& sc = m.spec.scalars[i];
    const std::string field = fmt::format("spec.json: scalars[{}] ({})", i, sc.name);
    if (std::string e = check_name("scalar", sc.name); !e.empty()) return fail(e);
    ScalarModel x;
    x.name = sc.name;
    x.type = sc.type;
    x.cpp_type = sc.type == ScalarType::float_ ? "float" : sc.type == ScalarType::int_ ? "std::int64_t" : "bool";
    x.default_cpp = scalar_literal(sc.default_value, sc.type);
    std::vector<std::string> words;
    if (sc.type == ScalarType::float_) {
      x.valid_terms.push_back("std::isfinite(a." + sc.name + ")");  // NaN and infinities: never a valid float
      words.push_back("finite");
      // The API passes a float: a value the spec admits as a double may round to one validate() refuses.
      for (double v : sc.values)
        if (!sc.admits(static_cast<float>(v)))
          return fail(fmt::format("{}: {} {} rounds to {} as a C++ float, which \"valid\" ({}) refuses; give a value that "
                                  "stays valid in float",
                                  field, v == sc.default_value ? "\"default\"" : "the value", bound_literal(v),
                                  scalar_literal(v, sc.type), sc.valid_text));
    }
    for (const ScalarBound& b : sc.valid) {
      x.valid_terms.push_back(fmt::format("a.{} {} {}", sc.name, op_text(b.op), bound_literal(b.bound)));
      words.push_back(fmt::format("{} {}", op_text(b.op), fmt::format("{}", b.bound)));
    }
    for (std::size_t k = 0; k < words.size(); ++k) x.valid_words += (k ? " and " : "") + words[k];
    m.scalars.push_back(std::move(x));
  }
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
