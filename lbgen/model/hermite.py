"""Tensor Hermite polynomials (probabilists', weight exp(-|xi|^2/2)) and Maxwellian moments.

H_n(xi) = (-1)^n w(xi)^-1 grad^n w(xi) (Rodrigues).  In Cartesian components a symmetric
tensor of order n is fixed by its (nx, ny) components, nx + ny = n, and the Gaussian
weight factorises, so H_n[nx, ny](xi) = He_nx(xi_x) He_ny(xi_y).  A full contraction
A:H over all 2^n index tuples equals the sum over (nx, ny) with multiplicity
n!/(nx! ny!).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Dict, List, Tuple

import sympy as sp

Component = Tuple[int, int]  # (nx, ny)


def components(n: int) -> List[Component]:
    """Independent components of a symmetric 2D tensor of order n: (n,0), (n-1,1), ..., (0,n)."""
    return [(n - k, k) for k in range(n + 1)]


def multiplicity(c: Component) -> int:
    nx, ny = c
    return int(sp.binomial(nx + ny, nx))


@lru_cache(maxsize=None)
def he(n: int, x: sp.Symbol = sp.Symbol("x")) -> sp.Expr:
    """1D probabilists' Hermite polynomial from Rodrigues' formula."""
    w = sp.exp(-x ** 2 / 2)
    return sp.expand(sp.simplify((-1) ** n * sp.diff(w, x, n) / w))


def hermite(c: Component, xi: Tuple[sp.Expr, sp.Expr]) -> sp.Expr:
    """Component c of the tensor Hermite polynomial H_{nx+ny} at xi."""
    x = sp.Symbol("x")
    return sp.expand(he(c[0], x).subs(x, xi[0]) * he(c[1], x).subs(x, xi[1]))


def hermite_tensor_rodrigues(n: int, xi: Tuple[sp.Symbol, sp.Symbol]) -> Dict[Component, sp.Expr]:
    """All components of H_n from the 2D Rodrigues formula (used to check the factorised form)."""
    w = sp.exp(-(xi[0] ** 2 + xi[1] ** 2) / 2)
    out = {}
    for c in components(n):
        d = w
        if c[0]:
            d = sp.diff(d, xi[0], c[0])
        if c[1]:
            d = sp.diff(d, xi[1], c[1])
        out[c] = sp.expand(sp.simplify((-1) ** n * d / w))
    return out


def gaussian_hermite_moment(n: int, u: sp.Expr, theta: sp.Expr) -> sp.Expr:
    """E[He_n(X)] for X ~ N(u, theta).

    He_n(x) = E[(x + iZ)^n] with Z ~ N(0, 1), so E[He_n(X)] = E[(u + sqrt(theta-1) Z)^n]
    = sum_k C(n, 2k) u^(n-2k) (theta-1)^k (2k-1)!!.
    """
    return sp.expand(sum(sp.binomial(n, 2 * k) * u ** (n - 2 * k) * (theta - 1) ** k * sp.factorial2(2 * k - 1)
                         for k in range(n // 2 + 1)))


def maxwellian_coefficient(c: Component, rho, u, theta) -> sp.Expr:
    """a^(n)[c] = int f_MB H_n[c] dxi for f_MB = rho N(u, theta I)."""
    return rho * gaussian_hermite_moment(c[0], u[0], theta) * gaussian_hermite_moment(c[1], u[1], theta)


def expansion(coefficients: Dict[Component, sp.Expr], xi, weight, order: int) -> sp.Expr:
    """w * sum_{n <= order} a^(n):H^(n)(xi) / n!  (full contraction via multiplicities)."""
    total = 0
    for n in range(order + 1):
        for c in components(n):
            total += coefficients[c] * hermite(c, xi) * multiplicity(c) / sp.factorial(n)
    return weight * total
