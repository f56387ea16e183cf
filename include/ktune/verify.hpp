// ktune/verify.hpp: the correctness gate. A variant's output is compared with a float64 reference
// element by element; outputs are poisoned before the kernel runs so an element the kernel forgot to
// write is caught even when its stale value would happen to be right.
//
// Host-only (no nvcc needed); element types come from dtype.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "dtype.hpp"

namespace ktune {

/// An output passes when its relative L2 error is within `rel_l2` and every element is within
/// `atol + rtol * |ref|` (numpy's allclose rule). NaN and ±inf must match the reference exactly. The
/// relative L2 error takes the reference's root mean square as at least l2_floor() (relative_l2).
struct Tolerance {
  double rel_l2 = 0;
  double atol = 0;
  double rtol = 0;
  /// The spec's "rms_floor" (0: none): the scale of an output where the op's own formula loses its relative
  /// accuracy. gelu's 1 + erf(x / √2) cancels for x below about -3, so S's fp32 result there is off by up
  /// to 1e-2 of itself; against a one-element reference of 1e-4 that fails any fp32 rel_l2 bound.
  double rms_floor = 0;

  /// The reference's root mean square is taken as at least this: atol, or the spec's rms_floor if larger.
  double l2_floor() const noexcept { return std::max(atol, rms_floor); }
};

/// ‖out − ref‖ / ‖ref‖ from the squared sums over n elements, the reference's norm taken as at least
/// floor·√n: an output whose every element is within atol of zero (a gelu's saturated tail; one element at
/// d = 1) is judged by its absolute error, not by its ratio to a norm of 1e-9 (seen: a correct fp32
/// variant failed with 0 against a reference of -1e-9, every element within atol).
inline double relative_l2(double err2, double ref2, std::size_t n, double floor) {
  const double den2 = std::max(ref2, floor * floor * static_cast<double>(n));
  return den2 > 0 ? std::sqrt(err2 / den2) : std::sqrt(err2);
}

/// The squared error sum back from a relative_l2 of the same n, reference and floor (chunks compared apart).
inline double squared_error(double rel_l2, double ref2, std::size_t n, double floor) {
  const double den2 = std::max(ref2, floor * floor * static_cast<double>(n));
  return rel_l2 * rel_l2 * (den2 > 0 ? den2 : 1.0);
}

/// Defaults for a result computed in fp32 and rounded once to the storage type: half an ulp of the
/// storage type is 2^-24 (fp32), 2^-11 (fp16), 2^-8 (bf16); the bounds leave room for a different
/// but valid fp32 summation order and one extra rounding of an intermediate.
constexpr Tolerance default_tolerance(DType t) noexcept {
  switch (t) {
    case DType::f32: return {1e-5, 1e-5, 1e-5};
    case DType::f16: return {2e-3, 1e-3, 4e-3};
    case DType::bf16: return {1.6e-2, 8e-3, 3.2e-2};
  }
  return {};
}

/// A NaN bit pattern that no arithmetic produces (not the canonical 0x7FFFFFFF / 0x7FFF / 0x7FC0
/// NaN), written into outputs before a kernel runs.
template <class T>
constexpr std::uint32_t poison_bits() noexcept {
  if constexpr (sizeof(T) == 4) return 0x7FBADBADu;
  else if constexpr (std::is_same_v<T, __half>) return 0x7DADu;   // fp16 NaN, payload 0x1AD
  else return 0x7FADu;                                             // bf16 NaN, payload 0x2D
}

template <class T>
inline bool is_poison(T x) noexcept {
  return bits_of(x) == poison_bits<T>();
}

struct Comparison {
  std::size_t count = 0;
  std::size_t unwritten = 0;      ///< elements still holding the poison pattern
  std::size_t mismatched = 0;     ///< elements outside atol + rtol*|ref|, or with NaN/inf mismatch
  std::size_t first_bad = static_cast<std::size_t>(-1);
  std::size_t first_unwritten = static_cast<std::size_t>(-1);
  double first_bad_value = 0;
  double first_bad_ref = 0;
  double max_abs = 0;             ///< over finite pairs
  double rel_l2 = 0;              ///< ||out - ref|| / max(||ref||, l2_floor sqrt(n)) over finite pairs
  bool passed = false;

  std::string summary() const {
    std::string s = passed ? "pass" : "FAIL";
    s += ": rel_l2=" + std::to_string(rel_l2) + " max_abs=" + std::to_string(max_abs);
    if (unwritten) s += " unwritten=" + std::to_string(unwritten);
    if (mismatched) {
      s += " mismatched=" + std::to_string(mismatched) + " first at [" + std::to_string(first_bad) +
           "] got " + std::to_string(first_bad_value) + " want " + std::to_string(first_bad_ref);
    }
    return s;
  }
};

/// Compares n outputs with their float64 reference. `out` is host memory (copied back).
template <class T>
Comparison compare(const T* out, const double* ref, std::size_t n, Tolerance tol) {
  Comparison c;
  c.count = n;
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    bool bad = false;
    const double r = ref[i];
    double o = 0;
    if (is_poison(out[i])) {
      if (c.unwritten++ == 0) c.first_unwritten = i;
      bad = true;
    } else {
      o = static_cast<double>(to_float(out[i]));
      if (std::isnan(r) || std::isnan(o)) {
        bad = std::isnan(r) != std::isnan(o);
      } else if (std::isinf(r) || std::isinf(o)) {
        bad = o != r;
      } else {
        const double d = std::fabs(o - r);
        err2 += d * d;
        ref2 += r * r;
        if (d > c.max_abs) c.max_abs = d;
        bad = d > tol.atol + tol.rtol * std::fabs(r);
      }
    }
    if (bad) {
      ++c.mismatched;
      if (c.first_bad == static_cast<std::size_t>(-1)) {
        c.first_bad = i;
        c.first_bad_value = o;
        c.first_bad_ref = r;
      }
    }
  }
  c.rel_l2 = relative_l2(err2, ref2, n, tol.l2_floor());
  c.passed = c.mismatched == 0 && c.rel_l2 <= tol.rel_l2;
  return c;
}

}  // namespace ktune
