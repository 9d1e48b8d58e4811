"""Tensor Hermite polynomials (probabilists', weight exp(-|xi|^2/2)) and Maxwellian moments,
in D = 2 or 3 dimensions.

H_n(xi) = (-1)^n w(xi)^-1 grad^n w(xi) (Rodrigues).  In Cartesian components a symmetric
tensor of order n is fixed by its components (n_1, ..., n_D), n_1 + ... + n_D = n, and
the Gaussian weight factorises, so H_n[n_1, ..., n_D](xi) = He_n1(xi_1) ... He_nD(xi_D).
A full contraction A:H over all D^n index tuples equals the sum over the components with
multiplicity n!/(n_1! ... n_D!).  The dimension is the length of a component (and of xi):
``components(n, D)`` is the one place it is chosen.
"""
from __future__ import annotations

from functools import lru_cache, reduce
from operator import mul
from typing import Dict, Tuple

import sympy as sp

Component = Tuple[int, ...]  # (n_x, n_y[, n_z])


@lru_cache(maxsize=None)
def components(n: int, D: int = 2) -> Tuple[Component, ...]:
    """Independent components of a symmetric D-dimensional tensor of order n, in descending
    lexicographic order: 2D (n,0), (n-1,1), ..., (0,n); 3D (n,0,0), (n-1,1,0), (n-1,0,1), ..."""
    if D == 1:
        return ((n,),)
    return tuple((k,) + rest for k in range(n, -1, -1) for rest in components(n - k, D - 1))


def multiplicity(c: Component) -> int:
    """n!/(n_1! ... n_D!): the number of index tuples of component c."""
    return int(sp.factorial(sum(c)) / reduce(mul, (sp.factorial(k) for k in c)))


@lru_cache(maxsize=None)
def he(n: int, x: sp.Symbol = sp.Symbol("x")) -> sp.Expr:
    """1D probabilists' Hermite polynomial from Rodrigues' formula."""
    w = sp.exp(-x ** 2 / 2)
    return sp.expand(sp.simplify((-1) ** n * sp.diff(w, x, n) / w))


def hermite(c: Component, xi: Tuple[sp.Expr, ...]) -> sp.Expr:
    """Component c of the tensor Hermite polynomial H_{|c|} at xi (len(xi) == len(c) == D)."""
    x = sp.Symbol("x")
    return sp.expand(reduce(mul, (he(k, x).subs(x, v) for k, v in zip(c, xi, strict=True))))


def hermite_tensor_rodrigues(n: int, xi: Tuple[sp.Symbol, ...]) -> Dict[Component, sp.Expr]:
    """All components of H_n from the D-dimensional Rodrigues formula (used to check the
    factorised form)."""
    w = sp.exp(-sum(x ** 2 for x in xi) / 2)
    out = {}
    for c in components(n, len(xi)):
        d = w
        for k, x in zip(c, xi):
            if k:
                d = sp.diff(d, x, k)
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
    """a^(n)[c] = int f_MB H_n[c] dxi for f_MB = rho N(u, theta I) (len(u) == len(c) == D)."""
    return reduce(mul, (gaussian_hermite_moment(k, v, theta) for k, v in zip(c, u, strict=True)), rho)


def expansion(coefficients: Dict[Component, sp.Expr], xi, weight, order: int) -> sp.Expr:
    """w * sum_{n <= order} a^(n):H^(n)(xi) / n!  (full contraction via multiplicities)."""
    total = 0
    for n in range(order + 1):
        for c in components(n, len(xi)):
            total += coefficients[c] * hermite(c, xi) * multiplicity(c) / sp.factorial(n)
    return weight * total
