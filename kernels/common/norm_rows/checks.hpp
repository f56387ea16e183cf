// kernels/common/norm_rows/checks.hpp: host-side size and overlap checks the RMS norm ops' validate()
// share. Host only: g++ and nvcc both compile it.
#pragma once

#include <cstdint>
#include <limits>

namespace ktune::ops::norm_rows {

/// The largest element offset a tensor of `rows` rows of `h` elements at `stride` reaches, plus one,
/// fits a byte offset (ptrdiff_t) of elements of `bytes` each.
constexpr bool extent_fits(std::int64_t rows, std::int64_t h, std::int64_t stride, std::int64_t bytes) {
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / bytes;
  if (rows <= 1) return h <= limit;
  return stride <= (limit - h) / (rows - 1);
}

/// Whether two [rows, h] tensors of `bytes`-byte elements, at a (row stride sa) and b (row stride sb),
/// may share an element; rows >= 1, both extents already checked by extent_fits. Exact for equal
/// strides (rows interleaved in one buffer, as [T, 2h] halves, do not overlap); for different strides it
/// answers whether the two extents share a byte, which may refuse a call whose rows happen to interleave.
inline bool rows_overlap(const void* a, std::int64_t sa, const void* b, std::int64_t sb, std::int64_t rows,
                         std::int64_t h, std::int64_t bytes) {
  const auto x = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(a));
  const auto y = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(b));
  const std::int64_t ea = ((rows - 1) * sa + h) * bytes, eb = ((rows - 1) * sb + h) * bytes;
  if (!(x < y + eb && y < x + ea)) return false;
  if (sa != sb || (y - x) % bytes) return true;
  // Row r of a and row q of b overlap when |d - (r - q) * s| < h, d = (b - a) in elements.
  const std::int64_t d = (y - x) / bytes, s = sa;
  const std::int64_t k0 = d >= 0 ? d / s : -((-d + s - 1) / s);  // floor(d / s)
  for (std::int64_t k = k0; k <= k0 + 1; ++k) {
    const std::int64_t gap = d - k * s;
    if (k >= -(rows - 1) && k <= rows - 1 && gap > -h && gap < h) return true;
  }
  return false;
}

}  // namespace ktune::ops::norm_rows
