#!/usr/bin/env python3
"""Fits the polynomial of kernels/gelu_and_mul/normal_cdf.hpp and prints its coefficients and errors.

Phi(x) = 1 - h(t) for x >= 0 and h(t) for x < 0, with t = |x| / sqrt 2 and h(t) = erfc(t) / 2 = 2^p(t / T).
p is fitted to log2(h(T u)) on u in [0, 1] by Lawson's iteratively reweighted least squares (a weighted
minimax fit) in the Chebyshev basis, then rounded to fp32 monomial coefficients for Horner's rule. The
weight is h (an error d in p moves Phi by h ln2 d: absolute for x >= 0), floored at 2e-3 so the relative
error below zero stays small too. The errors are measured with fp32 Horner (fma) and an exact exp2,
against float64, on the grid of the CPU test. Python's standard library only.

    tools/fit_normal_cdf.py [DEGREE [T]]     (normal_cdf.hpp: degree 9, T = 4)
"""
import math
import struct
import sys


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def chebyshev_row(u, n):
    x = 2 * u - 1
    row = [1.0, x]
    while len(row) <= n:
        row.append(2 * x * row[-1] - row[-2])
    return row[: n + 1]


def weighted_lstsq(rows, b, w):
    """Solves min sum (w_i (rows_i . c - b_i))^2 by the normal equations (the Chebyshev basis is well
    conditioned at these degrees)."""
    n = len(rows[0])
    m = [[0.0] * n for _ in range(n)]
    v = [0.0] * n
    for r, bi, wi in zip(rows, b, w):
        w2 = wi * wi
        for j in range(n):
            rj = r[j] * w2
            v[j] += rj * bi
            for k in range(n):
                m[j][k] += rj * r[k]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p], v[c], v[p] = m[p], m[c], v[p], v[c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            for k in range(c, n):
                m[r][k] -= f * m[c][k]
            v[r] -= f * v[c]
    x = [0.0] * n
    for c in reversed(range(n)):
        x[c] = (v[c] - sum(m[c][k] * x[k] for k in range(c + 1, n))) / m[c][c]
    return x


def to_monomials(cheb):
    """Chebyshev coefficients in x = 2u - 1 to monomial coefficients in u, lowest degree first."""
    basis = [[1.0], [-1.0, 2.0]]
    while len(basis) < len(cheb):
        a = [0.0] + [2 * 2 * c for c in basis[-1]]  # 2 (2u - 1) T_k: the 2u part
        for i, c in enumerate(basis[-1]):
            a[i] -= 2 * c  # ... and the -1 part
        b = basis[-2]
        basis.append([a[i] - (b[i] if i < len(b) else 0.0) for i in range(len(a))])
    mono = [0.0] * len(cheb)
    for ck, poly in zip(cheb, basis):
        for i, c in enumerate(poly):
            mono[i] += ck * c
    return [f32(c) for c in mono]


def main():
    degree = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    t_max = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
    h = lambda t: 0.5 * math.erfc(t)
    n = 3000
    us = [0.5 - 0.5 * math.cos(math.pi * (k + 0.5) / n) for k in range(n)]
    target = [math.log2(h(t_max * u)) for u in us]
    weight = [max(h(t_max * u), 2e-3) for u in us]
    rows = [chebyshev_row(u, degree) for u in us]
    lawson = [1.0] * n
    for _ in range(60):
        cheb = weighted_lstsq(rows, target, [w * math.sqrt(l) for w, l in zip(weight, lawson)])
        err = [abs(sum(c * a for c, a in zip(cheb, r)) - y) * w for r, y, w in zip(rows, target, weight)]
        total = sum(l * e for l, e in zip(lawson, err))
        lawson = [l * e / total for l, e in zip(lawson, err)]
    mono = to_monomials(cheb)

    unit = f32(1 / (t_max * math.sqrt(2)))

    def phi(x):
        u = f32(abs(x) * unit)
        p = mono[-1]
        for c in reversed(mono[:-1]):
            p = f32(p * u + c)  # a product of two floats is exact in a double: one rounding, as fma
        hh = f32(2.0**p) if u < 1 else 0.0
        return f32(1 - hh) if x >= 0 else hh

    max_abs = max_rel = 0.0
    for i in range(-8 * 4096, 8 * 4096 + 1):
        x = i / 4096.0
        ref = 0.5 * math.erfc(-x / math.sqrt(2))
        e = abs(phi(x) - ref)
        max_abs = max(max_abs, e)
        if -5.4 <= x < 0:
            max_rel = max(max_rel, e / ref)
    print(f"degree {degree}, T = {t_max}: unit {unit!r}")
    print("coefficients, highest degree first:")
    for c in reversed(mono):
        print(f"  {float.hex(c)}  ({c!r})")
    print(f"max |Phi - Phi64| = {max_abs:.3g}; max relative for -5.4 <= x < 0: {max_rel:.3g}")


if __name__ == "__main__":
    main()
