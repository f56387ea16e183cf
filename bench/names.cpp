// bench/names.cpp: benchmark names, GPU slugs and shape keys (names.hpp).
#include "names.hpp"

#include <cmath>
#include <cstdio>

namespace ktune::bench {

std::string benchmark_name(std::string_view op, DType dtype, std::string_view shape_key, std::string_view id) {
  std::string s;
  s.reserve(op.size() + shape_key.size() + id.size() + 8);
  s.append(op).append("/").append(name(dtype)).append("/").append(shape_key).append("/").append(id);
  return s;
}

std::string copy_same_size_name(std::string_view op, DType dtype, std::string_view shape_key) {
  std::string s(copy_same_size_id);
  s.append("/").append(op).append("/").append(name(dtype)).append("/").append(shape_key);
  return s;
}

std::string gpu_slug(std::string_view device_name) {
  std::string s(device_name);
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) c = '-';
  }
  return s;
}

bool parse_shape_key(std::string_view key, Shape& out, std::string& error) {
  out = Shape{};
  if (key.empty()) {
    error = "empty shape key";
    return false;
  }
  std::size_t pos = 0;
  while (pos <= key.size()) {
    std::size_t end = key.find(',', pos);
    if (end == std::string_view::npos) end = key.size();
    const std::string_view field = key.substr(pos, end - pos);
    const std::size_t eq = field.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == field.size()) {
      error = "shape field '" + std::string(field) + "' is not <dim>=<value>";
      return false;
    }
    const std::string dim(field.substr(0, eq));
    std::int64_t v = 0;
    for (char c : field.substr(eq + 1)) {
      if (c < '0' || c > '9' || v > (INT64_MAX - 9) / 10) {
        error = "shape field '" + std::string(field) + "' has no non-negative integer value";
        return false;
      }
      v = v * 10 + (c - '0');
    }
    for (const auto& d : out.dims)
      if (d.first == dim) {
        error = "shape key names dimension '" + dim + "' twice";
        return false;
      }
    out.dims.emplace_back(dim, v);
    pos = end + 1;
  }
  return true;
}

std::string format_duration(double seconds) {
  char buf[32];
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  if (seconds < 0.9995) {
    std::snprintf(buf, sizeof buf, "%dms", static_cast<int>(std::lround(seconds * 1e3)));
    return buf;
  }
  const long s = std::lround(seconds);
  if (s < 60) std::snprintf(buf, sizeof buf, "%lds", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  return buf;
}

}  // namespace ktune::bench
