// kernels/common/norm_rows/checks.hpp: host-side size and overlap checks the RMS norm ops' validate()
// share. Host only: g++ and nvcc both compile it.
#pragma once

#include <cstdint>
#include <limits>

#include <ktune/overlap.hpp>

namespace ktune::ops::norm_rows {

/// The largest element offset a tensor of `rows` rows of `h` elements at `stride` reaches, plus one,
/// fits a byte offset (ptrdiff_t) of elements of `bytes` each.
constexpr bool extent_fits(std::int64_t rows, std::int64_t h, std::int64_t stride, std::int64_t bytes) {
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / bytes;
  if (rows <= 1) return h <= limit;
  return stride <= (limit - h) / (rows - 1);
}

/// Whether two [rows, h] tensors of `bytes`-byte elements, at a (row stride sa) and b (row stride sb),
/// share an element; rows >= 1, both extents already checked by extent_fits. Exact for any strides
/// (ktune::share_a_byte): rows interleaved in one buffer, as [T, 2h] halves or rows of one between rows
/// of the other, do not overlap.
inline bool rows_overlap(const void* a, std::int64_t sa, const void* b, std::int64_t sb, std::int64_t rows,
                         std::int64_t h, std::int64_t bytes) {
  auto byte_rows = [&](const void* p, std::int64_t stride) {
    return ByteRows{static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p)), h * bytes, stride * bytes, rows};
  };
  return share_a_byte(byte_rows(a, sa), byte_rows(b, sb));
}

}  // namespace ktune::ops::norm_rows
