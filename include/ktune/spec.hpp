// ktune/spec.hpp: loads and checks kernels/<op>/spec.json (docs/kernel-folder.md).
//
// A spec names an op's dimensions and their spec values, its dtypes and tolerances, and its tensors,
// from which the bytes moved per call follow. The benchmark, the tests and the `ktune` tool all read
// specs through this header, so a malformed spec fails the same way everywhere: a ktune::SpecError
// whose message names the file and the offending field.
//
// Host-only (nlohmann-json); C++17 so that nvcc-compiled benchmark code can include it.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dtype.hpp"
#include "harness.hpp"
#include "verify.hpp"  // Tolerance

namespace ktune {

/// A spec that cannot be used; what() names the file (when known) and the field.
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One factor of a tensor's extent: a dimension name (coefficient 1) or an integer constant.
struct ExtentFactor {
  std::string dim;  ///< empty for a constant
  std::int64_t constant = 1;
};

/// A tensor's dtype: the op's (`element`, one of the spec's dtypes) or a fixed one (schema 2).
enum class TensorDType { element, fp32, int32, int64 };

inline const char* name(TensorDType t) {
  switch (t) {
    case TensorDType::element: return "element";
    case TensorDType::fp32: return "fp32";
    case TensorDType::int32: return "int32";
    case TensorDType::int64: return "int64";
  }
  return "?";
}

/// One end of an index tensor's value range: an integer or a dimension's value.
struct RangeBound {
  std::string dim;  ///< empty for a constant
  std::int64_t constant = 0;  ///< the bound when dim is empty, else dim's multiplier ("2*tokens": 2)
  std::int64_t value(const Shape& shape) const { return dim.empty() ? constant : constant * shape.at(dim); }
};

struct SpecTensor {
  std::string name;
  std::vector<std::string> shape;                  ///< as written: "tokens", "2*d"
  std::vector<std::vector<ExtentFactor>> extents;  ///< parsed shape: one product per axis
  TensorDType dtype = TensorDType::element;
  Access access = Access::read;
  /// int32/int64 tensors: every value lies in [range_lo, range_hi). The caller's promise, which no
  /// validate() can check without reading the tensor (as SGLang's kernels take positions); the harness
  /// draws inside it.
  RangeBound range_lo, range_hi;
  /// "moved" (schema 2, optional): the part of the tensor one call moves where it moves only part of it, a
  /// cache written at scattered rows that the harness makes larger than what a call writes, so that the rows
  /// no call writes are checked to stay as they were. Its extents and access give the tensor's bytes moved.
  bool has_moved = false;
  std::vector<std::vector<ExtentFactor>> moved_extents;
  Access moved_access = Access::write;

  bool element_dtype() const { return dtype == TensorDType::element; }
  bool is_index() const { return dtype == TensorDType::int32 || dtype == TensorDType::int64; }
  /// Bytes per value when the op runs in `e`.
  int value_bytes(DType e) const {
    return dtype == TensorDType::element ? size_of(e) : dtype == TensorDType::int64 ? 8 : 4;
  }
};

/// A scalar argument's type (schema 2): C++ float, std::int64_t or bool.
enum class ScalarType { float_, int_, bool_ };

inline const char* name(ScalarType t) {
  return t == ScalarType::float_ ? "float" : t == ScalarType::int_ ? "int" : "bool";
}

/// One comparison of a scalar's "valid" rule: value > 0, value <= 64, ...
struct ScalarBound {
  enum class Op { gt, ge, lt, le, ne } op = Op::gt;
  double bound = 0;
  bool admits(double v) const {
    switch (op) {
      case Op::gt: return v > bound;
      case Op::ge: return v >= bound;
      case Op::lt: return v < bound;
      case Op::le: return v <= bound;
      case Op::ne: return v != bound;
    }
    return false;
  }
};

/// A scalar argument of the op (schema 2): eps, is_neox, ... A parameter of S's launcher and the public
/// API (with its default), a member of Args, checked by validate(). The benchmark runs every shape at the
/// default; the judge runs the spec's other values too (a bool's both).
struct SpecScalar {
  std::string name;
  ScalarType type = ScalarType::float_;
  double default_value = 0;      ///< a bool is 0 or 1
  std::vector<double> values;    ///< the values the judge tries: the spec's "values", else the default (and a bool's both)
  std::vector<ScalarBound> valid;  ///< all must hold; empty: any finite value of the type
  std::string valid_text;        ///< as written ("> 0"), for messages

  /// Whether `v` is a value validate() must accept: finite, of the type, and inside `valid`.
  bool admits(double v) const {
    if (!std::isfinite(v)) return false;
    if (type == ScalarType::bool_ && v != 0 && v != 1) return false;
    if (type == ScalarType::int_ && (v != static_cast<double>(static_cast<std::int64_t>(v)))) return false;
    for (const ScalarBound& b : valid)
      if (!b.admits(v)) return false;
    return true;
  }
};

/// The newest spec schema (docs/kernel-folder.md): 2 adds scalars and fixed-dtype (int32, int64) tensors.
inline constexpr int spec_schema = 2;

struct Spec {
  int schema = 1;  ///< "schema" as written; 1 when absent
  std::string op;
  std::string summary;
  /// The upstream build S's unit is compiled as ("original_build": its code-generating flags, from
  /// cmake/KtuneOriginalBuilds.cmake), so that S runs as upstream runs it; empty: ktune's flags.
  std::string original_build;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> dims;  ///< in the order written
  std::string tokens_dim;  ///< the dimension tuned tables bucket by token count
  std::string width_dim;   ///< the dimension tuned tables bucket by row width
  /// Values of `dims` whose shapes are measured but never used to select (the held-out set of issue 42):
  /// a shape is held out when any of its values is listed here. Empty: every shape selects.
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> held_out;
  std::vector<DType> dtypes;
  std::map<DType, Tolerance> tolerance;
  std::vector<SpecTensor> tensors;
  std::vector<SpecScalar> scalars;  ///< in the order written

  /// The spec shapes: the cartesian product of `dims` in the order written, the first dimension
  /// varying slowest (as in the benchmark's enumeration).
  std::vector<Shape> shapes() const {
    Shape first;
    for (const SpecScalar& sc : scalars) first.scalars.emplace_back(sc.name, sc.default_value);
    std::vector<Shape> out{first};
    for (const auto& [name, values] : dims) {
      std::vector<Shape> next;
      next.reserve(out.size() * values.size());
      for (const Shape& s : out)
        for (std::int64_t v : values) {
          Shape t = s;
          t.dims.emplace_back(name, v);
          next.push_back(std::move(t));
        }
      out = std::move(next);
    }
    return out;
  }

  /// The op's tensors for `shape` and `dtype`, in spec order.
  std::vector<TensorInfo> tensor_infos(const Shape& shape, DType dtype) const {
    std::vector<TensorInfo> out;
    for (const SpecTensor& t : tensors) {
      TensorInfo info;
      info.name = t.name;
      info.elements = static_cast<std::size_t>(elements(t, shape));
      info.element_bytes = t.value_bytes(dtype);
      info.access = t.access;
      if (t.has_moved) info.part_moved = moved_bytes(t, shape, dtype);
      out.push_back(std::move(info));
    }
    return out;
  }

  /// Elements of one tensor for `shape`; throws SpecError when the count overflows 64 bits.
  std::int64_t elements(const SpecTensor& t, const Shape& shape) const {
    std::int64_t n = 1;
    for (const auto& axis : t.extents)
      for (const ExtentFactor& f : axis) n = checked_mul(n, f.dim.empty() ? f.constant : shape.at(f.dim), t.name);
    return n;
  }

  /// Bytes one call moves of one tensor: its elements (or its "moved" part's) × element bytes, twice for
  /// read_write.
  std::int64_t moved_bytes(const SpecTensor& t, const Shape& shape, DType dtype) const {
    std::int64_t n = 1;
    if (t.has_moved) {
      for (const auto& axis : t.moved_extents)
        for (const ExtentFactor& f : axis) n = checked_mul(n, f.dim.empty() ? f.constant : shape.at(f.dim), t.name);
    } else {
      n = elements(t, shape);
    }
    const std::int64_t b = checked_mul(n, t.value_bytes(dtype), t.name);
    return (t.has_moved ? t.moved_access : t.access) == Access::read_write ? 2 * b : b;
  }

  /// Bytes moved by one call: Σ elements × element bytes, read_write tensors counted twice; a tensor with a
  /// "moved" part counts that part instead.
  std::int64_t bytes(const Shape& shape, DType dtype) const {
    std::int64_t total = 0;
    for (const SpecTensor& t : tensors) total += moved_bytes(t, shape, dtype);
    return total;
  }

  const std::vector<std::int64_t>& values(const std::string& dim) const {
    for (const auto& [name, v] : dims)
      if (name == dim) return v;
    throw SpecError("spec of '" + op + "' has no dimension '" + dim + "'");
  }
  /// The spec's tolerance for `dtype`, else ktune::default_tolerance.
  Tolerance tolerance_for(DType dtype) const {
    auto it = tolerance.find(dtype);
    return it == tolerance.end() ? default_tolerance(dtype) : it->second;
  }
  /// True when `shape` names exactly the spec's dimensions, in the spec's order.
  bool same_dims(const Shape& shape) const {
    if (shape.dims.size() != dims.size()) return false;
    for (std::size_t i = 0; i < dims.size(); ++i)
      if (shape.dims[i].first != dims[i].first) return false;
    return true;
  }
  /// Whether (dim, value) is held out: measured, never selected on.
  bool held_out_value(const std::string& dim, std::int64_t value) const {
    for (const auto& [d, values] : held_out)
      if (d == dim)
        for (std::int64_t v : values)
          if (v == value) return true;
    return false;
  }
  bool has_dim(const std::string& dim) const {
    for (const auto& d : dims)
      if (d.first == dim) return true;
    return false;
  }
  const SpecScalar* find_scalar(const std::string& scalar) const {
    for (const SpecScalar& sc : scalars)
      if (sc.name == scalar) return &sc;
    return nullptr;
  }

 private:
  static std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& tensor) {
    if (a != 0 && b > std::numeric_limits<std::int64_t>::max() / a)
      throw SpecError("tensor '" + tensor + "': element count overflows 64 bits");
    return a * b;
  }
};

namespace detail {

[[noreturn]] inline void spec_fail(const std::string& where, const std::string& what) {
  throw SpecError(where + ": " + what);
}

/// Parses "2*d*heads" into factors; names must be dimensions of the spec.
inline std::vector<ExtentFactor> parse_extent(const std::string& text, const Spec& spec, const std::string& where) {
  std::vector<ExtentFactor> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('*', pos);
    if (end == std::string::npos) end = text.size();
    std::string term = text.substr(pos, end - pos);
    while (!term.empty() && term.front() == ' ') term.erase(term.begin());
    while (!term.empty() && term.back() == ' ') term.pop_back();
    if (term.empty()) spec_fail(where, "empty factor in extent '" + text + "'");
    ExtentFactor f;
    if (term[0] >= '0' && term[0] <= '9') {
      std::int64_t v = 0;
      for (char c : term) {
        if (c < '0' || c > '9') spec_fail(where, "factor '" + term + "' is neither an integer nor a dimension name");
        if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10) spec_fail(where, "constant '" + term + "' is too large");
        v = v * 10 + (c - '0');
      }
      if (v <= 0) spec_fail(where, "constant factor must be positive in '" + text + "'");
      f.constant = v;
    } else {
      if (!spec.has_dim(term)) spec_fail(where, "'" + term + "' is not a dimension of the spec");
      f.dim = term;
    }
    out.push_back(std::move(f));
    pos = end + 1;
  }
  return out;
}

/// Dimension, scalar and tensor names become C++ identifiers: [A-Za-z_][A-Za-z0-9_]*.
inline bool is_identifier(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

/// Parses a scalar's "valid" rule: comparisons joined by "and", each an operator (>, >=, <, <=, !=) and
/// a number: "> 0", ">= 1 and <= 64".
inline std::vector<ScalarBound> parse_valid(const std::string& text, const std::string& where) {
  std::vector<ScalarBound> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(" and ", pos);
    if (end == std::string::npos) end = text.size();
    std::string term = text.substr(pos, end - pos);
    while (!term.empty() && term.front() == ' ') term.erase(term.begin());
    while (!term.empty() && term.back() == ' ') term.pop_back();
    ScalarBound b;
    std::size_t skip = 0;
    if (term.rfind(">=", 0) == 0) b.op = ScalarBound::Op::ge, skip = 2;
    else if (term.rfind("<=", 0) == 0) b.op = ScalarBound::Op::le, skip = 2;
    else if (term.rfind("!=", 0) == 0) b.op = ScalarBound::Op::ne, skip = 2;
    else if (term.rfind(">", 0) == 0) b.op = ScalarBound::Op::gt, skip = 1;
    else if (term.rfind("<", 0) == 0) b.op = ScalarBound::Op::lt, skip = 1;
    else spec_fail(where, "\"valid\": '" + term + "' is not a comparison (>, >=, <, <=, != and a number; join with \" and \")");
    std::string number = term.substr(skip);
    while (!number.empty() && number.front() == ' ') number.erase(number.begin());
    std::size_t used = 0;
    try {
      b.bound = std::stod(number, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != number.size() || !std::isfinite(b.bound))
      spec_fail(where, "\"valid\": '" + number + "' in '" + term + "' is not a finite number");
    out.push_back(b);
    pos = end + 5;
  }
  return out;
}

/// A scalar's value as written: a number of the type (a bool: true or false), as a double.
template <class Json>
double scalar_value(const Json& v, ScalarType type, const std::string& where, const char* what) {
  if (type == ScalarType::bool_) {
    if (!v.is_boolean()) spec_fail(where, std::string(what) + " must be true or false (a bool scalar)");
    return v.template get<bool>() ? 1.0 : 0.0;
  }
  if (type == ScalarType::int_) {
    if (!v.is_number_integer()) spec_fail(where, std::string(what) + " must be an integer (an int scalar)");
    return static_cast<double>(v.template get<std::int64_t>());
  }
  if (!v.is_number()) spec_fail(where, std::string(what) + " must be a number (a float scalar)");
  const double x = v.template get<double>();
  if (!std::isfinite(x) || std::fabs(x) > std::numeric_limits<float>::max())
    spec_fail(where, std::string(what) + " must be a finite number in float's range");
  return x;
}

/// One end of an index tensor's range: a non-negative integer or a dimension's name.
template <class Json>
RangeBound range_bound(const Json& v, const Spec& spec, const std::string& where) {
  RangeBound b;
  if (v.is_number_integer()) {
    b.constant = v.template get<std::int64_t>();
    if (b.constant < 0) spec_fail(where, "\"range\": bounds are non-negative integers or dimension names");
  } else if (v.is_string()) {
    // A dimension's name, or a positive integer times one ("2*tokens"): a cache larger than the call.
    b.constant = 1;
    for (const ExtentFactor& f : parse_extent(v.template get<std::string>(), spec, where + ": \"range\"")) {
      if (f.dim.empty()) {
        b.constant *= f.constant;
      } else if (b.dim.empty()) {
        b.dim = f.dim;
      } else {
        spec_fail(where, "\"range\": a bound names at most one dimension");
      }
    }
    if (b.dim.empty()) spec_fail(where, "\"range\": a bound written as a string names a dimension");
  } else {
    spec_fail(where, "\"range\": bounds are non-negative integers or dimension names");
  }
  return b;
}

template <class Json>
const Json& spec_member(const Json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) spec_fail(where, std::string("missing \"") + key + "\"");
  return *it;
}

template <class Json>
std::string spec_string(const Json& j, const char* key, const std::string& where) {
  const Json& v = spec_member(j, key, where);
  if (!v.is_string() || v.template get<std::string>().empty())
    spec_fail(where, std::string("\"") + key + "\" must be a non-empty string");
  return v.template get<std::string>();
}

}  // namespace detail

/// Checks and converts a parsed spec. `where` prefixes every error (usually the file name). The JSON
/// must keep object order (nlohmann::ordered_json): the order of `dims` is the order of the shapes.
inline Spec parse_spec(const nlohmann::ordered_json& j, const std::string& where = "spec.json") {
  using detail::spec_fail;
  if (!j.is_object()) spec_fail(where, "the spec must be a JSON object");
  Spec s;
  if (auto it = j.find("schema"); it != j.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1 || it->get<std::int64_t>() > spec_schema)
      spec_fail(where, "\"schema\" must be 1 or " + std::to_string(spec_schema) + " (this ktune reads up to " +
                           std::to_string(spec_schema) + ")");
    s.schema = it->get<int>();
  }
  s.op = detail::spec_string(j, "op", where);
  if (auto it = j.find("summary"); it != j.end()) {
    if (!it->is_string()) spec_fail(where, "\"summary\" must be a string");
    s.summary = it->get<std::string>();
  }
  if (auto it = j.find("original_build"); it != j.end()) {
    if (!it->is_string() || it->get<std::string>() != "sgl-kernel")
      spec_fail(where, "\"original_build\" must be \"sgl-kernel\", the one upstream build ktune compiles S as "
                       "(cmake/KtuneOriginalBuilds.cmake), or absent");
    s.original_build = it->get<std::string>();
  }

  const auto& dims = detail::spec_member(j, "dims", where);
  if (!dims.is_object() || dims.empty()) spec_fail(where, "\"dims\" must be a non-empty object of name: [values]");
  for (const auto& [name, values] : dims.items()) {
    const std::string w = where + ": dims." + name;
    if (!detail::is_identifier(name)) spec_fail(w, "a dimension name is [A-Za-z_][A-Za-z0-9_]*");
    if (!values.is_array() || values.empty()) spec_fail(w, "must be a non-empty array of positive integers");
    std::vector<std::int64_t> vs;
    for (const auto& v : values) {
      if (!v.is_number_integer() || v.template get<std::int64_t>() <= 0) spec_fail(w, "values must be positive integers");
      const std::int64_t x = v.template get<std::int64_t>();
      for (std::int64_t y : vs)
        if (y == x) spec_fail(w, "value " + std::to_string(x) + " is listed twice");
      vs.push_back(x);
    }
    s.dims.emplace_back(name, std::move(vs));
  }

  s.tokens_dim = detail::spec_string(j, "tokens_dim", where);
  s.width_dim = detail::spec_string(j, "width_dim", where);
  if (!s.has_dim(s.tokens_dim)) spec_fail(where, "tokens_dim '" + s.tokens_dim + "' is not a dimension");
  if (!s.has_dim(s.width_dim)) spec_fail(where, "width_dim '" + s.width_dim + "' is not a dimension");
  // tokens_dim and width_dim may name the same dimension: a one-dimensional op has only one.

  if (auto it = j.find("held_out"); it != j.end()) {
    if (!it->is_object()) spec_fail(where, "\"held_out\" must be an object of name: [values], each a dimension's");
    for (const auto& [name, values] : it->items()) {
      const std::string w = where + ": held_out." + name;
      const std::vector<std::int64_t>* listed = nullptr;
      for (const auto& d : s.dims)
        if (d.first == name) listed = &d.second;
      if (!listed) spec_fail(w, "'" + name + "' is not a dimension");
      if (!values.is_array()) spec_fail(w, "must be an array of values of dims." + name);
      std::vector<std::int64_t> vs;
      for (const auto& v : values) {
        const bool in_dims = v.is_number_integer() &&
                             std::find(listed->begin(), listed->end(), v.template get<std::int64_t>()) != listed->end();
        if (!in_dims) spec_fail(w, v.dump() + " is not a value of dims." + name + " (held-out shapes are measured)");
        vs.push_back(v.template get<std::int64_t>());
      }
      if (vs.size() >= listed->size()) spec_fail(w, "holds out every value of dims." + name + ": nothing would select");
      s.held_out.emplace_back(name, std::move(vs));
    }
  }

  const auto& dtypes = detail::spec_member(j, "dtypes", where);
  if (!dtypes.is_array() || dtypes.empty()) spec_fail(where, "\"dtypes\" must be a non-empty array");
  for (const auto& d : dtypes) {
    DType t{};
    if (!d.is_string() || !parse_dtype(d.get<std::string>(), t))
      spec_fail(where, "dtypes: " + d.dump() + " is not one of fp32, fp16, bf16");
    for (DType u : s.dtypes)
      if (u == t) spec_fail(where, "dtypes: " + d.dump() + " is listed twice");
    s.dtypes.push_back(t);
  }

  const auto& tol = detail::spec_member(j, "tolerance", where);
  if (!tol.is_object()) spec_fail(where, "\"tolerance\" must be an object keyed by dtype");
  for (DType t : s.dtypes) {
    const std::string w = where + ": tolerance." + name(t);
    auto it = tol.find(name(t));
    if (it == tol.end() || !it->is_object()) spec_fail(w, "missing (every listed dtype needs a tolerance)");
    Tolerance x;
    const char* keys[] = {"rel_l2", "atol", "rtol"};
    double* fields[] = {&x.rel_l2, &x.atol, &x.rtol};
    for (int k = 0; k < 3; ++k) {
      auto f = it->find(keys[k]);
      if (f == it->end() || !f->is_number()) spec_fail(w, std::string("\"") + keys[k] + "\" must be a number");
      *fields[k] = f->get<double>();
      if (!(*fields[k] >= 0) || *fields[k] >= 1) spec_fail(w, std::string("\"") + keys[k] + "\" must be in [0, 1)");
    }
    if (auto f = it->find("rms_floor"); f != it->end()) {  // optional: Tolerance::rms_floor
      if (!f->is_number() || !(f->get<double>() >= 0) || !std::isfinite(f->get<double>()))
        spec_fail(w, "\"rms_floor\" must be a finite number >= 0");
      x.rms_floor = f->get<double>();
    }
    s.tolerance[t] = x;
  }

  const auto& tensors = detail::spec_member(j, "tensors", where);
  if (!tensors.is_array() || tensors.empty()) spec_fail(where, "\"tensors\" must be a non-empty array");
  bool any_output = false;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    const std::string w = where + ": tensors[" + std::to_string(i) + "]";
    if (!t.is_object()) spec_fail(w, "must be an object");
    SpecTensor st;
    st.name = detail::spec_string(t, "name", w);
    for (const SpecTensor& u : s.tensors)
      if (u.name == st.name) spec_fail(w, "tensor name '" + st.name + "' is used twice");
    const auto& shape = detail::spec_member(t, "shape", w);
    if (!shape.is_array() || shape.empty()) spec_fail(w, "\"shape\" must be a non-empty array of extents");
    for (const auto& e : shape) {
      if (!e.is_string()) spec_fail(w, "shape entries are strings such as \"tokens\" or \"2*d\"");
      st.shape.push_back(e.get<std::string>());
      st.extents.push_back(detail::parse_extent(st.shape.back(), s, w));
    }
    const std::string dt = detail::spec_string(t, "dtype", w);
    if (dt == "element") st.dtype = TensorDType::element;
    else if (dt == "fp32") st.dtype = TensorDType::fp32;
    else if (dt == "int32" && s.schema >= 2) st.dtype = TensorDType::int32;
    else if (dt == "int64" && s.schema >= 2) st.dtype = TensorDType::int64;
    else if (dt == "int32" || dt == "int64") spec_fail(w, "\"dtype\": \"" + dt + "\" needs \"schema\": 2");
    else spec_fail(w, "\"dtype\" must be \"element\", \"fp32\", \"int32\" or \"int64\", not \"" + dt + "\"");
    if (auto r = t.find("range"); r != t.end()) {
      if (!st.is_index()) spec_fail(w, "\"range\" is for int32 and int64 tensors (index inputs)");
      if (!r->is_array() || r->size() != 2) spec_fail(w, "\"range\" must be [lo, hi): two bounds");
      st.range_lo = detail::range_bound((*r)[0], s, w);
      st.range_hi = detail::range_bound((*r)[1], s, w);
    } else if (st.is_index()) {
      spec_fail(w, "an " + dt + " tensor needs \"range\": [lo, hi), the values the caller promises (e.g. [0, \"max_pos\"])");
    }
    const std::string ac = detail::spec_string(t, "access", w);
    if (ac == "read") st.access = Access::read;
    else if (ac == "write") st.access = Access::write;
    else if (ac == "read_write") st.access = Access::read_write;
    else spec_fail(w, "\"access\" must be read, write or read_write, not \"" + ac + "\"");
    if (st.is_index() && st.access != Access::read)
      spec_fail(w, "an " + dt + " tensor is an index input: its \"access\" must be read");
    if (auto m = t.find("moved"); m != t.end()) {
      if (s.schema < 2) spec_fail(w, "\"moved\" needs \"schema\": 2");
      if (!m->is_object() || !m->contains("shape") || !m->contains("access"))
        spec_fail(w, "\"moved\" must be {\"shape\": [...], \"access\": ...}: the part of the tensor one call moves");
      const auto& ms = m->at("shape");
      if (!ms.is_array() || ms.size() != st.shape.size())
        spec_fail(w, "\"moved\": \"shape\" must have one extent per axis of the tensor's shape");
      for (const auto& e : ms) {
        if (!e.is_string()) spec_fail(w, "\"moved\": shape entries are strings such as \"tokens\"");
        st.moved_extents.push_back(detail::parse_extent(e.template get<std::string>(), s, w + ": \"moved\""));
      }
      const std::string ma = detail::spec_string(*m, "access", w + ": \"moved\"");
      if (ma == "read") st.moved_access = Access::read;
      else if (ma == "write") st.moved_access = Access::write;
      else if (ma == "read_write") st.moved_access = Access::read_write;
      else spec_fail(w, "\"moved\": \"access\" must be read, write or read_write, not \"" + ma + "\"");
      if (st.access == Access::read && st.moved_access != Access::read)
        spec_fail(w, "\"moved\": a read-only tensor's moved part is read too");
      st.has_moved = true;
    }
    if (s.has_dim(st.name)) spec_fail(w, "tensor name '" + st.name + "' is also a dimension");
    any_output = any_output || st.access != Access::read;
    s.tensors.push_back(std::move(st));
  }
  if (!any_output) spec_fail(where, "no tensor is written (access write or read_write)");

  if (auto it = j.find("scalars"); it != j.end()) {
    if (s.schema < 2) spec_fail(where, "\"scalars\" needs \"schema\": 2");
    if (!it->is_array()) spec_fail(where, "\"scalars\" must be an array of {name, type, default, ...}");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const auto& x = (*it)[i];
      const std::string w = where + ": scalars[" + std::to_string(i) + "]";
      if (!x.is_object()) spec_fail(w, "must be an object");
      SpecScalar sc;
      sc.name = detail::spec_string(x, "name", w);
      if (!detail::is_identifier(sc.name)) spec_fail(w, "a scalar name is [A-Za-z_][A-Za-z0-9_]*");
      if (s.has_dim(sc.name) || s.find_scalar(sc.name))
        spec_fail(w, "scalar name '" + sc.name + "' is already a dimension or a scalar");
      for (const SpecTensor& t : s.tensors)
        if (t.name == sc.name) spec_fail(w, "scalar name '" + sc.name + "' is already a tensor");
      const std::string type = detail::spec_string(x, "type", w);
      if (type == "float") sc.type = ScalarType::float_;
      else if (type == "int") sc.type = ScalarType::int_;
      else if (type == "bool") sc.type = ScalarType::bool_;
      else spec_fail(w, "\"type\" must be float, int or bool, not \"" + type + "\"");
      if (auto v = x.find("valid"); v != x.end()) {
        if (sc.type == ScalarType::bool_) spec_fail(w, "\"valid\" is for float and int scalars");
        if (!v->is_string()) spec_fail(w, "\"valid\" must be a string such as \"> 0\"");
        sc.valid_text = v->get<std::string>();
        sc.valid = detail::parse_valid(sc.valid_text, w);
      }
      sc.default_value = detail::scalar_value(detail::spec_member(x, "default", w), sc.type, w, "\"default\"");
      if (!sc.admits(sc.default_value)) spec_fail(w, "\"default\" is not valid (" + sc.valid_text + ")");
      if (auto v = x.find("values"); v != x.end()) {
        if (!v->is_array() || v->empty()) spec_fail(w, "\"values\" must be a non-empty array");
        for (const auto& e : *v) {
          const double value = detail::scalar_value(e, sc.type, w, "each of \"values\"");
          if (!sc.admits(value)) spec_fail(w, "\"values\": " + e.dump() + " is not valid (" + sc.valid_text + ")");
          for (double u : sc.values)
            if (u == value) spec_fail(w, "\"values\": " + e.dump() + " is listed twice");
          sc.values.push_back(value);
        }
      }
      // The judge tries the default and every listed value; a bool always both.
      auto add = [&](double v) {
        for (double u : sc.values)
          if (u == v) return;
        sc.values.push_back(v);
      };
      add(sc.default_value);
      if (sc.type == ScalarType::bool_) add(1 - sc.default_value);
      s.scalars.push_back(std::move(sc));
    }
  }

  // Surface overflow now rather than at the first benchmark.
  for (const Shape& shape : s.shapes())
    for (DType t : s.dtypes) (void)s.bytes(shape, t);
  return s;
}

/// Parses and checks spec.json text (e.g. a copy built into a binary); `where` names it in errors.
inline Spec parse_spec_text(const std::string& text, const std::string& where) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw SpecError(where + ": not valid JSON: " + e.what());
  }
  return parse_spec(j, where);
}

/// Reads and checks a spec file. Throws SpecError naming the file on any problem.
inline Spec load_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SpecError(path + ": cannot open");
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw SpecError(path + ": not valid JSON: " + e.what());
  }
  return parse_spec(j, path);
}

}  // namespace ktune
