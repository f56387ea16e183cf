// bench/spec_reader.hpp: what the benchmark needs from kernels/<op>/spec.json (docs/kernel-folder.md):
// the spec shapes (cartesian product of `dims` in the order written), the dtypes, the tolerances, and
// the bytes one call moves (from `tensors`). Parsed with nlohmann::ordered_json, which keeps the
// order of `dims` that the shapes and their keys depend on.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/verify.hpp>

namespace ktune::bench {

struct TensorSpec {
  std::string name;
  std::vector<std::string> shape;   ///< extents: products of dimension names and integers ("2*d")
  bool fp32 = false;                ///< dtype "fp32"; otherwise "element" (the op's dtype)
  Access access = Access::read;
};

struct OpSpec {
  std::string op;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> dims;
  std::vector<DType> dtypes;
  std::map<DType, Tolerance> tolerance;
  std::vector<TensorSpec> tensors;

  /// The spec shapes: the first dimension varies slowest.
  std::vector<Shape> shapes() const;
  /// The spec's tolerance for `dtype`, else ktune::default_tolerance.
  Tolerance tolerance_for(DType dtype) const;
  /// Bytes one call moves: elements x element bytes over all tensors, read_write counted twice.
  std::int64_t bytes_moved(const Shape& shape, DType dtype) const;
  /// True when `shape` names exactly the spec's dimensions, in the spec's order.
  bool same_dims(const Shape& shape) const;
};

/// Parses spec.json text; throws std::runtime_error naming `origin` on anything malformed.
OpSpec parse_spec(std::string_view json_text, const std::string& origin);

/// Evaluates an extent such as "2*d" or "tokens" for `shape`; throws std::runtime_error.
std::int64_t eval_extent(const std::string& expr, const Shape& shape);

}  // namespace ktune::bench
