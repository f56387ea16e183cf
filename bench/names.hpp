// bench/names.hpp: the names the benchmark prints and writes: benchmark names (contract 5), GPU slugs
// (contract 6), shape keys, and short durations for progress lines.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>

namespace ktune::bench {

/// `<op>/<dtype>/<dim>=<v>,<dim>=<v>/<id>`, e.g. `silu_and_mul/bf16/tokens=16,d=11008/tpb_256.vb_16`.
std::string benchmark_name(std::string_view op, DType dtype, std::string_view shape_key, std::string_view id);

/// Cache-key id of a shape's same-size copy row (no variant id has a '/').
inline constexpr std::string_view copy_same_size_id = "ktune/copy_same_size";

/// `ktune/copy_same_size/<op>/<dtype>/<shape key>`: the same-size copy row of one shape.
std::string copy_same_size_name(std::string_view op, DType dtype, std::string_view shape_key);

/// The device name as a directory name: lowercase, every other non-alphanumeric character becomes '-'
/// ("NVIDIA H200" -> "nvidia-h200").
std::string gpu_slug(std::string_view device_name);

/// Parses a shape key "tokens=16,d=11008" into named dimensions, in the order written. Returns false
/// and says why on anything else (empty names, non-integer or negative values, repeated names).
bool parse_shape_key(std::string_view key, Shape& out, std::string& error);

/// "850ms", "42s", "3m05s", "1h02m": for progress and ETA lines.
std::string format_duration(double seconds);

}  // namespace ktune::bench
