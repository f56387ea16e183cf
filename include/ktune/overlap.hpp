// ktune/overlap.hpp: whether two strided tensors share an element, decided by element, not by address range.
//
// Two views of one buffer can interleave without sharing an element: q and k split from one packed qkv
// tensor (SGLang's `q, k, v = qkv.split(...)`), the two halves of a [T, 2h] buffer, rows of one view
// between rows of another. A test of address ranges refuses them all; the test here answers exactly for
// every layout whose elements are evenly spaced runs of contiguous elements (ByteRows: a contiguous
// tensor, a slice of wider rows, every other row, their transposes, any rank that collapses to that),
// which is every layout ktune's ops and bindings take. Host only, standard C++17 (and the compiler's
// 128-bit integer, which GCC, Clang and nvcc's host compilers have); g++ and nvcc both compile it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

namespace ktune {

/// The bytes {base + i * stride + j : 0 <= i < rows, 0 <= j < length}: `rows` runs of `length`
/// contiguous bytes, `stride` bytes apart. Empty when rows or length is 0.
struct ByteRows {
  std::int64_t base = 0;
  std::int64_t length = 0;
  std::int64_t stride = 0;
  std::int64_t rows = 0;

  constexpr bool empty() const noexcept { return rows <= 0 || length <= 0; }
  /// One past the last byte (for a non-empty set).
  constexpr std::int64_t end() const noexcept { return base + (rows - 1) * stride + length; }
};

namespace detail {
__extension__ typedef __int128 OverlapWide;  // products of two strides and two addresses need more than 64 bits

constexpr OverlapWide floor_div(OverlapWide a, OverlapWide b) noexcept {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
constexpr OverlapWide ceil_div(OverlapWide a, OverlapWide b) noexcept { return -floor_div(-a, b); }  // b > 0
constexpr OverlapWide floor_mod(OverlapWide a, OverlapWide b) noexcept { return a - floor_div(a, b) * b; }

/// The smallest x >= 0 with l <= (a * x mod m) <= r, or -1 when there is none; 0 < l <= r < m, 0 <= a < m.
/// Euclid's recursion ((a, m) -> (m mod a, a)), so O(log m) steps: when no multiple of a lies in [l, r],
/// every solution wraps, a * x = m * y + u with u in [l, r] and y >= 1, and the smallest such y (a
/// problem of the same form modulo a) gives the smallest x.
inline OverlapWide first_residue_in(OverlapWide a, OverlapWide m, OverlapWide l, OverlapWide r) noexcept {
  if (a == 0) return -1;
  const OverlapWide x = ceil_div(l, a);
  if (a * x <= r) return x;
  // [l, r] lies strictly between two multiples of a, so a multiple of a falls in [m y + l, m y + r] exactly
  // when (m y) mod a lies in [(-r) mod a, (-l) mod a], a range that holds neither 0 nor wraps.
  const OverlapWide y = first_residue_in(m % a, a, floor_mod(-r, a), floor_mod(-l, a));
  if (y < 0) return -1;
  return ceil_div(m * y + l, a);
}

/// One run when the runs touch or overlap each other (stride <= length), and stride = length for one run.
constexpr ByteRows normalised(ByteRows t) noexcept {
  if (t.rows > 1 && t.stride <= t.length) {
    t.length += (t.rows - 1) * t.stride;
    t.rows = 1;
  }
  if (t.rows == 1) t.stride = t.length;
  return t;
}
}  // namespace detail

/// Whether the two byte sets share a byte. Exact, in O(log stride): the extents first (apart: no), then
/// for runs of one set against runs of the other, the first run of `a` whose window meets a run of `b`,
/// found as the first x with (B + A x) mod M in a range (detail::first_residue_in).
inline bool share_a_byte(ByteRows a, ByteRows b) noexcept {
  using W = detail::OverlapWide;
  if (a.empty() || b.empty()) return false;
  a = detail::normalised(a);
  b = detail::normalised(b);
  if (!(a.base < b.end() && b.base < a.end())) return false;  // the extents are apart: the common answer
  if (a.rows == 1 && b.rows == 1) return true;
  if (a.rows == 1) std::swap(a, b);
  if (b.rows == 1) {  // runs i of a starting in (b.base - la, b.base + lb): i sa in [-ab - la + 1, -ab + lb - 1]
    const W ab = W(a.base) - W(b.base);
    const W i_lo = std::max<W>(0, detail::ceil_div(-ab - a.length + 1, a.stride));
    const W i_hi = std::min<W>(W(a.rows) - 1, detail::floor_div(-ab + b.length - 1, a.stride));
    return i_lo <= i_hi;
  }
  if (a.stride < b.stride) std::swap(a, b);  // a: the larger stride, so few of its runs straddle b's ends
  const W la = a.length, lb = b.length, sa = a.stride, sb = b.stride, rb = b.rows;
  const W ab = W(a.base) - W(b.base);
  // Run i of a, at y_i = ab + i sa from b's base, meets run k of b iff k sb lies in [y_i - lb + 1, y_i + la - 1].
  auto run_meets = [&](W i) {
    const W y = ab + i * sa;
    const W k_lo = std::max<W>(0, detail::ceil_div(y - lb + 1, sb));
    const W k_hi = std::min<W>(rb - 1, detail::floor_div(y + la - 1, sb));
    return k_lo <= k_hi;
  };
  const W ra = a.rows;
  // Runs of a whose window lies inside [0, (rb - 1) sb]: i in [i_lo, i_hi]. There every multiple of sb in
  // the window is a run of b, so run i meets one iff (y_i + la - 1) mod sb <= la + lb - 2.
  const W i_lo = detail::ceil_div(-ab + lb - 1, sa);
  const W i_hi = detail::floor_div((rb - 1) * sb - ab - la + 1, sa);
  // Runs just outside that range straddle b's first or last run; further out they miss b entirely, so
  // `reach` runs on each side are tried one by one (sa >= sb > lb and sa > la keep reach at most 3).
  const W reach = detail::ceil_div(la + lb, sa) + 1;
  for (W i = std::max<W>(0, i_lo - reach); i <= std::min<W>(ra - 1, i_lo - 1); ++i)
    if (run_meets(i)) return true;
  for (W i = std::max<W>(0, i_hi + 1); i <= std::min<W>(ra - 1, i_hi + reach); ++i)
    if (run_meets(i)) return true;
  const W i0 = std::max<W>(0, i_lo), i1 = std::min<W>(ra - 1, i_hi);
  if (i0 > i1) return false;
  const W w = la + lb - 2;  // the window holds w + 1 bytes
  if (w >= sb - 1) return true;
  const W start = detail::floor_mod(ab + la - 1 + i0 * sa, sb);
  if (start <= w) return true;
  // (start + (sa mod sb) x) mod sb <= w  <=>  ((sa mod sb) x) mod sb in [sb - start, sb - start + w].
  const W x = detail::first_residue_in(sa % sb, sb, sb - start, sb - start + w);
  return x >= 0 && x <= i1 - i0;
}

/// A strided tensor's elements as ByteRows: `rank` dimensions of `sizes` and `strides` (in elements, as
/// PyTorch gives them; negative and zero strides too), elements of `element_size` bytes at `address`.
/// False where they do not form evenly spaced runs (three levels of stride, say), or the extent does not
/// fit 62 bits; then `out` is left as it was. Dimensions are taken in order of stride, so a transposed
/// view of a row layout has that form too.
inline bool byte_rows_of(std::int64_t address, std::int64_t element_size, int rank, const std::int64_t* sizes,
                         const std::int64_t* strides, ByteRows& out) noexcept {
  using W = detail::OverlapWide;
  constexpr W limit = W(1) << 62;
  struct Dim {
    W size, stride;
  };
  constexpr int max_rank = 64;
  if (rank < 0 || rank > max_rank || element_size <= 0) return false;
  Dim dims[max_rank];
  int n = 0;
  W base = address;
  for (int d = 0; d < rank; ++d) {
    if (sizes[d] == 0) {
      out = ByteRows{address, 0, 0, 0};
      return true;
    }
    if (sizes[d] < 0) return false;
    if (sizes[d] == 1 || strides[d] == 0) continue;  // a broadcast dimension repeats the same elements
    W stride = strides[d];
    if (stride < 0) {  // the same elements, walked from the other end
      base += (W(sizes[d]) - 1) * stride * element_size;
      stride = -stride;
    }
    dims[n++] = Dim{sizes[d], stride};
  }
  std::sort(dims, dims + n, [](const Dim& x, const Dim& y) { return x.stride < y.stride; });
  W length = 1;  // elements of the contiguous run
  int i = 0;
  for (; i < n && dims[i].stride <= length; ++i) {  // shifted copies of a run that touch it: a longer run
    length += (dims[i].size - 1) * dims[i].stride;
    if (length > limit) return false;
  }
  W stride = length, rows = 1;
  if (i < n) {
    stride = dims[i].stride;
    rows = dims[i].size;
    for (++i; i < n; ++i) {  // a further dimension must step by whole rows, without a gap
      const W step = dims[i].stride / stride;
      if (dims[i].stride % stride != 0 || step > rows) return false;
      rows += (dims[i].size - 1) * step;
      if (rows > limit) return false;
    }
  }
  const W extent = ((rows - 1) * stride + length) * element_size;
  if (extent > limit || base < -limit || base > limit) return false;
  out = ByteRows{static_cast<std::int64_t>(base), static_cast<std::int64_t>(length * element_size),
                 static_cast<std::int64_t>(stride * element_size), static_cast<std::int64_t>(rows)};
  return true;
}

/// Whether two strided tensors (as byte_rows_of takes them) may share an element: exact where both have
/// ByteRows form; otherwise whether their extents intersect, which may refuse a pair that shares nothing
/// (no ktune op or binding takes such a layout: they refuse it for its layout anyway).
inline bool may_share_an_element(std::int64_t address_a, std::int64_t element_size_a, int rank_a,
                                 const std::int64_t* sizes_a, const std::int64_t* strides_a, std::int64_t address_b,
                                 std::int64_t element_size_b, int rank_b, const std::int64_t* sizes_b,
                                 const std::int64_t* strides_b) noexcept {
  ByteRows a, b;
  if (byte_rows_of(address_a, element_size_a, rank_a, sizes_a, strides_a, a) &&
      byte_rows_of(address_b, element_size_b, rank_b, sizes_b, strides_b, b))
    return share_a_byte(a, b);
  // The extents, each dimension walked to its far end (strides of either sign).
  auto extent = [](std::int64_t address, std::int64_t e, int rank, const std::int64_t* sizes, const std::int64_t* strides,
                   detail::OverlapWide& lo, detail::OverlapWide& hi) {
    lo = hi = address;
    for (int d = 0; d < rank; ++d) {
      if (sizes[d] == 0) return false;
      const detail::OverlapWide reach = (detail::OverlapWide(sizes[d]) - 1) * strides[d] * e;
      (reach < 0 ? lo : hi) += reach;
    }
    hi += e;
    return true;
  };
  detail::OverlapWide a0, a1, b0, b1;
  if (!extent(address_a, element_size_a, rank_a, sizes_a, strides_a, a0, a1) ||
      !extent(address_b, element_size_b, rank_b, sizes_b, strides_b, b0, b1))
    return false;  // an empty tensor shares nothing
  return a0 < b1 && b0 < a1;
}

}  // namespace ktune
