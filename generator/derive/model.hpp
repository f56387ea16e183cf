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
  bool element = true;             ///< the op's dtype E; false: fp32 (float whatever E is)
  Access access = Access::read;

  bool read_only() const { return access == Access::read; }
  /// "const E*", "E*", "const float*", "float*"; `e` replaces E (e.g. "void" for the dtype entry).
  std::string pointer(const std::string& e = "E") const {
    return std::string(read_only() ? "const " : "") + (element ? e : "float") + "*";
  }
  /// "read", "written", "read and written"
  std::string access_text() const {
    return access == Access::read ? "read" : access == Access::write ? "written" : "read and written";
  }
};

struct Model {
  std::string op;
  std::string s_name, s_hash, spec_hash;  ///< the banner's inputs
  std::string spec_json;                  ///< verbatim
  Spec spec;
  std::vector<std::string> dims;          ///< dimension names in spec order
  std::vector<TensorModel> tensors;       ///< spec order
  std::vector<std::string> empty_dims;    ///< dims some tensor's extent uses: any of them 0 means an empty call
  ScannedSource source;
};

}  // namespace ktune::gen::derive
