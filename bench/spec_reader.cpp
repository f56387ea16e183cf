#include "spec_reader.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ktune::bench {

namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw std::runtime_error(origin + ": " + what);
}

Tolerance parse_tolerance(const Json& j, const std::string& origin, const std::string& dtype) {
  Tolerance t;
  for (auto [field, dst] : {std::pair<const char*, double*>{"rel_l2", &t.rel_l2}, {"atol", &t.atol}, {"rtol", &t.rtol}}) {
    if (!j.contains(field) || !j.at(field).is_number() || j.at(field).get<double>() < 0)
      fail(origin, "tolerance." + dtype + "." + field + " must be a non-negative number");
    *dst = j.at(field).get<double>();
  }
  return t;
}

}  // namespace

std::int64_t eval_extent(const std::string& expr, const Shape& shape) {
  if (expr.empty()) throw std::runtime_error("empty extent");
  std::int64_t product = 1;
  std::size_t pos = 0;
  while (pos <= expr.size()) {
    std::size_t end = expr.find('*', pos);
    if (end == std::string::npos) end = expr.size();
    std::string factor = expr.substr(pos, end - pos);
    while (!factor.empty() && factor.front() == ' ') factor.erase(factor.begin());
    while (!factor.empty() && factor.back() == ' ') factor.pop_back();
    if (factor.empty()) throw std::runtime_error("extent '" + expr + "' has an empty factor");
    std::int64_t v = 0;
    if (factor[0] >= '0' && factor[0] <= '9') {
      for (char c : factor) {
        if (c < '0' || c > '9') throw std::runtime_error("extent '" + expr + "': bad integer '" + factor + "'");
        v = v * 10 + (c - '0');
      }
    } else {
      try {
        v = shape.at(factor);
      } catch (const std::out_of_range&) {
        throw std::runtime_error("extent '" + expr + "' names unknown dimension '" + factor + "'");
      }
    }
    product *= v;
    pos = end + 1;
  }
  return product;
}

std::vector<Shape> OpSpec::shapes() const {
  std::vector<Shape> out;
  if (dims.empty()) return out;
  std::vector<std::size_t> at(dims.size(), 0);
  for (;;) {
    Shape s;
    for (std::size_t k = 0; k < dims.size(); ++k) s.dims.emplace_back(dims[k].first, dims[k].second[at[k]]);
    out.push_back(std::move(s));
    std::size_t k = dims.size();
    while (k > 0) {
      --k;
      if (++at[k] < dims[k].second.size()) break;
      at[k] = 0;
      if (k == 0) return out;
    }
  }
}

Tolerance OpSpec::tolerance_for(DType dtype) const {
  auto it = tolerance.find(dtype);
  return it != tolerance.end() ? it->second : default_tolerance(dtype);
}

std::int64_t OpSpec::bytes_moved(const Shape& shape, DType dtype) const {
  std::int64_t total = 0;
  for (const TensorSpec& t : tensors) {
    std::int64_t elements = 1;
    for (const std::string& e : t.shape) elements *= eval_extent(e, shape);
    const std::int64_t bytes = elements * (t.fp32 ? 4 : size_of(dtype));
    total += t.access == Access::read_write ? 2 * bytes : bytes;
  }
  return total;
}

bool OpSpec::same_dims(const Shape& shape) const {
  if (shape.dims.size() != dims.size()) return false;
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (shape.dims[k].first != dims[k].first) return false;
  return true;
}

OpSpec parse_spec(std::string_view json_text, const std::string& origin) {
  Json j;
  try {
    j = Json::parse(json_text.begin(), json_text.end());
  } catch (const Json::parse_error& e) {
    fail(origin, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) fail(origin, "the top level must be an object");
  OpSpec s;
  try {
    s.op = j.at("op").get<std::string>();
    for (const auto& [dim, values] : j.at("dims").items()) {
      if (!values.is_array() || values.empty()) fail(origin, "dims." + dim + " must be a non-empty array");
      std::vector<std::int64_t> v;
      for (const Json& x : values) {
        if (!x.is_number_integer() || x.get<std::int64_t>() < 0)
          fail(origin, "dims." + dim + " must hold non-negative integers");
        v.push_back(x.get<std::int64_t>());
      }
      s.dims.emplace_back(dim, std::move(v));
    }
    if (s.dims.empty()) fail(origin, "dims is empty");
    for (const Json& d : j.at("dtypes")) {
      DType t;
      if (!parse_dtype(d.get<std::string>(), t)) fail(origin, "unknown dtype '" + d.get<std::string>() + "'");
      s.dtypes.push_back(t);
    }
    if (j.contains("tolerance")) {
      for (const auto& [name, tol] : j.at("tolerance").items()) {
        DType t;
        if (!parse_dtype(name, t)) fail(origin, "tolerance for unknown dtype '" + name + "'");
        s.tolerance[t] = parse_tolerance(tol, origin, name);
      }
    }
    for (const Json& t : j.at("tensors")) {
      TensorSpec ts;
      ts.name = t.at("name").get<std::string>();
      for (const Json& e : t.at("shape")) ts.shape.push_back(e.is_string() ? e.get<std::string>() : std::to_string(e.get<std::int64_t>()));
      const std::string dtype = t.value("dtype", std::string("element"));
      if (dtype != "element" && dtype != "fp32") fail(origin, "tensor " + ts.name + ": dtype must be element or fp32");
      ts.fp32 = dtype == "fp32";
      const std::string access = t.at("access").get<std::string>();
      if (access == "read") ts.access = Access::read;
      else if (access == "write") ts.access = Access::write;
      else if (access == "read_write") ts.access = Access::read_write;
      else fail(origin, "tensor " + ts.name + ": access must be read, write or read_write");
      s.tensors.push_back(std::move(ts));
    }
  } catch (const Json::exception& e) {
    fail(origin, std::string("missing or mistyped field: ") + e.what());
  }
  // Every extent must name known dimensions: check once on the first shape.
  const std::vector<Shape> shapes = s.shapes();
  try {
    (void)s.bytes_moved(shapes.front(), DType::f32);
  } catch (const std::runtime_error& e) {
    fail(origin, e.what());
  }
  return s;
}

}  // namespace ktune::bench
