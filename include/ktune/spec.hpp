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

#include <cctype>
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

struct SpecTensor {
  std::string name;
  std::vector<std::string> shape;                  ///< as written: "tokens", "2*d"
  std::vector<std::vector<ExtentFactor>> extents;  ///< parsed shape: one product per axis
  bool element_dtype = true;                       ///< "element" (the op's dtype) or "fp32"
  Access access = Access::read;
};

struct Spec {
  std::string op;
  std::string summary;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> dims;  ///< in the order written
  std::string tokens_dim;  ///< the dimension tuned tables bucket by token count
  std::string width_dim;   ///< the dimension tuned tables bucket by row width
  std::vector<DType> dtypes;
  std::map<DType, Tolerance> tolerance;
  std::vector<SpecTensor> tensors;

  /// The spec shapes: the cartesian product of `dims` in the order written, the first dimension
  /// varying slowest (as in the benchmark's enumeration).
  std::vector<Shape> shapes() const {
    std::vector<Shape> out(1);
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
      info.element_bytes = t.element_dtype ? size_of(dtype) : 4;
      info.access = t.access;
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

  /// Bytes moved by one call: Σ elements × element bytes, read_write tensors counted twice.
  std::int64_t bytes(const Shape& shape, DType dtype) const {
    std::int64_t total = 0;
    for (const SpecTensor& t : tensors) {
      const std::int64_t b = checked_mul(elements(t, shape), t.element_dtype ? size_of(dtype) : 4, t.name);
      total += t.access == Access::read_write ? 2 * b : b;
    }
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
  bool has_dim(const std::string& dim) const {
    for (const auto& d : dims)
      if (d.first == dim) return true;
    return false;
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
  s.op = detail::spec_string(j, "op", where);
  if (auto it = j.find("summary"); it != j.end()) {
    if (!it->is_string()) spec_fail(where, "\"summary\" must be a string");
    s.summary = it->get<std::string>();
  }

  const auto& dims = detail::spec_member(j, "dims", where);
  if (!dims.is_object() || dims.empty()) spec_fail(where, "\"dims\" must be a non-empty object of name: [values]");
  for (const auto& [name, values] : dims.items()) {
    const std::string w = where + ": dims." + name;
    if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
      spec_fail(w, "a dimension name must start with a letter");
    for (char c : name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) spec_fail(w, "a dimension name is [A-Za-z_][A-Za-z0-9_]*");
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
    if (dt == "element") st.element_dtype = true;
    else if (dt == "fp32") st.element_dtype = false;
    else spec_fail(w, "\"dtype\" must be \"element\" or \"fp32\", not \"" + dt + "\"");
    const std::string ac = detail::spec_string(t, "access", w);
    if (ac == "read") st.access = Access::read;
    else if (ac == "write") st.access = Access::write;
    else if (ac == "read_write") st.access = Access::read_write;
    else spec_fail(w, "\"access\" must be read, write or read_write, not \"" + ac + "\"");
    any_output = any_output || st.access != Access::read;
    s.tensors.push_back(std::move(st));
  }
  if (!any_output) spec_fail(where, "no tensor is written (access write or read_write)");

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
