// generator/derive/model.hpp: what the emitters of the derived files know about an op: its name, its
// spec (checked, names usable as C++ parameters), S (scanned), and the banner's inputs.
#pragma once

#include <string>
#include <vector>

#include <ktune/spec.hpp>

#include "generator/derive/source.hpp"

namespace ktune::gen::derive {

struct TensorModel {
  std::string name;
  std::string shape;               ///< "[tokens, 2*d]": the spec's extents, normalised
  std::string factors;             ///< the element count as C++ factors over Args `a`: "a.tokens, 2, a.d"
  std::vector<std::string> dims;   ///< dimension names this tensor's extents use, in spec order
  TensorDType dtype = TensorDType::element;  ///< the op's dtype E, or a fixed one (fp32, int32, int64)
  Access access = Access::read;
  std::string range_lo, range_hi;  ///< index tensors: the value range's bounds over Args `a` ("0", "a.max_pos")
  std::string range_text;          ///< index tensors: "[0, max_pos)" as the spec writes it

  bool element() const { return dtype == TensorDType::element; }
  bool index() const { return dtype == TensorDType::int32 || dtype == TensorDType::int64; }
  bool read_only() const { return access == Access::read; }
  /// The C++ value type: `e` for the op's dtype, else float, std::int32_t or std::int64_t.
  std::string value_type(const std::string& e = "E") const {
    switch (dtype) {
      case TensorDType::element: return e;
      case TensorDType::fp32: return "float";
      case TensorDType::int32: return "std::int32_t";
      case TensorDType::int64: return "std::int64_t";
    }
    return e;
  }
  /// "const E*", "E*", "const float*", "const std::int64_t*"; `e` replaces E (e.g. "void" for the dtype entry).
  std::string pointer(const std::string& e = "E") const {
    return std::string(read_only() ? "const " : "") + value_type(e) + "*";
  }
  /// "E", "fp32", "int32", "int64": the dtype column of the doc comments' tensor tables.
  std::string dtype_text() const { return element() ? "E" : name_of(dtype); }
  /// "read", "written", "read and written"
  std::string access_text() const {
    return access == Access::read ? "read" : access == Access::write ? "written" : "read and written";
  }

 private:
  static std::string name_of(TensorDType t) { return ktune::name(t); }
};

/// A scalar argument (spec.json's "scalars", schema 2): a parameter of S's launcher after the dimensions, a
/// member of Args, a parameter of the public API with its default, checked by validate().
struct ScalarModel {
  std::string name;
  ScalarType type = ScalarType::float_;
  std::string cpp_type;     ///< "float", "std::int64_t", "bool"
  std::string default_cpp;  ///< the default as a C++ literal: "1e-06f", "4", "true"
  /// The condition a valid value satisfies, over `prefix` + name ("a.eps"): every float must be finite, then
  /// the spec's "valid" comparisons. Empty: every value of the type is valid (bools, ints with no rule).
  std::vector<std::string> valid_terms;  ///< "std::isfinite(a.eps)", "a.eps > 0", ...
  std::string valid_words;               ///< for messages and docs: "finite and > 0 and < 1"
};

struct Model {
  std::string op;
  std::string s_name, s_hash, spec_hash;  ///< the banner's inputs
  std::string spec_json;                  ///< verbatim
  Spec spec;
  std::vector<std::string> dims;          ///< dimension names in spec order
  std::vector<TensorModel> tensors;       ///< spec order
  std::vector<ScalarModel> scalars;       ///< spec order
  std::vector<std::string> empty_dims;    ///< dims some tensor's extent uses: any of them 0 means an empty call
  ScannedSource source;

  bool any_index() const {
    for (const TensorModel& t : tensors)
      if (t.index()) return true;
    return false;
  }
};

}  // namespace ktune::gen::derive
