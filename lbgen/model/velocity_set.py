"""Velocity sets built from integer shells, with weights and scale factor *solved*.

A shell is one integer vector (a, b) or (a, b, c) with a >= b [>= c] >= 0; its members are
all signed permutations, and its length is the dimension D.  Given the shells and the
quadrature degree, the unknowns are the shell weights and t = 1/r^2 (xi_i = r e_i).  The
Gauss-Hermite conditions

    sum_i w_i (r e_ix)^m (r e_iy)^n [(r e_iz)^l] = E[X^m] E[Y^n] [E[Z^l]],   X, Y, Z ~ N(0, 1)

for even m >= n [>= l] >= 0, m + n [+ l] < degree, are linear in the weights once divided
by r^(m+n+l):  S w = g(t).  They are solvable only where det([S | g(t)]) = 0, a
polynomial in t whose admissible root (real, positive, all weights positive) fixes r.

When the degree gives fewer conditions than shells + 1 (D3Q27: degree 5 gives 4 for 5
unknowns, a one-parameter family from D3Q19 to beyond D3Q27), the conditions of the next
even orders are added, most mixed first (x^2 y^2 z^2 before x^4 y^2 before x^6), until
the system is square: for D3Q27 this is the tensor product of D1Q3, the standard set.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Tuple

import numpy as np
import sympy as sp

from lbgen.model.catalog import hermite_order, is_isothermal, set_entry, shell_members
from lbgen.system.cache import cached_pickle, digest, source_digest

#: digits kept when the exact algebraic numbers are turned into floats
PRECISION_DIGITS = 40


def _gauss_moment(n: int) -> int:
    """E[X^n] for X ~ N(0, 1): (n-1)!! for even n, 0 for odd n."""
    return 0 if n % 2 else int(sp.factorial2(n - 1))


def _even_indices(order: int, D: int):
    """(m, n[, l]) even, non-increasing, summing to ``order``: the symmetry classes of the
    moments of that order, in descending lexicographic order ((4, 0), (2, 2); ...)."""
    def split(total, parts, largest):
        if parts == 1:
            return [(total,)] if total <= largest else []
        return [(k,) + rest for k in range(min(total, largest), -1, -2) for rest in split(total - k, parts - 1, k)]
    return split(order, D, order)


def _moment_indices(degree: int, D: int = 2):
    """(m, n[, l]) even, m >= n [>= l] >= 0, m + n [+ l] < degree (<= degree - 1)."""
    return [idx for order in range(0, degree, 2) for idx in _even_indices(order, D)]


def _conditions(degree: int, D: int, unknowns: int):
    """The moment conditions of the solve: those of the degree, then, while fewer than the
    unknowns, those of the next even orders, most mixed first (ascending lexicographic)."""
    conditions = _moment_indices(degree, D)
    order = degree + degree % 2                       # the first even order not required
    while len(conditions) < unknowns and order <= degree + 4:
        for idx in sorted(_even_indices(order, D)):
            if len(conditions) < unknowns:
                conditions.append(idx)
        order += 2
    return conditions


def _monomial(v, powers) -> int:
    """e_x^m e_y^n [e_z^l] of one integer velocity."""
    out = 1
    for c, k in zip(v, powers, strict=True):
        out *= c ** k
    return out


def _gaussian_monomial(powers) -> int:
    """E[X^m] E[Y^n] [E[Z^l]] for independent standard normals."""
    out = 1
    for k in powers:
        out *= _gauss_moment(k)
    return out


@dataclass(frozen=True)
class VelocitySet:
    """A velocity set with exact (sympy) and float (numpy) views.

    ``velocities`` are the integer hops e_i in the population order of the reference
    code: c_x descending, then c_y ascending (then c_z ascending in 3D), so
    ``opposite[p] == Q - 1 - p``.
    """

    name: str
    shells: Tuple[Tuple[int, ...], ...]
    degree: int
    velocities: Tuple[Tuple[int, ...], ...]
    shell_of: Tuple[int, ...]              # shell index of each population
    t_exact: sp.Expr = field(repr=False)   # 1/r^2, exact algebraic number
    shell_weights_exact: Tuple[sp.Expr, ...] = field(repr=False)
    minimal_polynomial: sp.Expr = field(repr=False)  # in t

    # --- sizes and tables -------------------------------------------------------------
    @property
    def Q(self) -> int:
        return len(self.velocities)

    @property
    def D(self) -> int:
        """The dimension: the length of a shell (lbgen.model.catalog.SetEntry.D)."""
        return len(self.shells[0])

    @cached_property
    def e(self) -> np.ndarray:
        """Integer hops, shape (Q, D)."""
        return np.array(self.velocities, dtype=np.int64)

    @cached_property
    def opposite(self) -> Tuple[int, ...]:
        index = {v: i for i, v in enumerate(self.velocities)}
        return tuple(index[tuple(-c for c in v)] for v in self.velocities)

    @property
    def propagate_offsets(self) -> Tuple[Tuple[int, ...], ...]:
        """Pull scheme: population p at site x comes from site x - e_p."""
        return tuple(tuple(-c for c in v) for v in self.velocities)

    @property
    def max_hop(self) -> int:
        """The largest hop along one axis: the halo width and the number of wall rows."""
        return int(np.abs(self.e).max())

    @property
    def hermite_order(self) -> int:
        """Order N of the equilibrium and of the regularized projection (catalog.hermite_order)."""
        return hermite_order(self.degree)

    @property
    def isothermal(self) -> bool:
        return is_isothermal(self.hermite_order)

    # --- exact values -----------------------------------------------------------------
    @cached_property
    def r_exact(self) -> sp.Expr:
        return 1 / sp.sqrt(self.t_exact)

    @cached_property
    def weights_exact(self) -> Tuple[sp.Expr, ...]:
        return tuple(self.shell_weights_exact[s] for s in self.shell_of)

    def r_float(self, digits: int = PRECISION_DIGITS) -> sp.Float:
        return sp.Float(sp.N(self.r_exact, digits + 10), digits)

    def weights_float(self, digits: int = PRECISION_DIGITS) -> Tuple[sp.Float, ...]:
        sw = [sp.Float(sp.N(w, digits + 10), digits) for w in self.shell_weights_exact]
        return tuple(sw[s] for s in self.shell_of)

    # --- float views ------------------------------------------------------------------
    @cached_property
    def r(self) -> float:
        return float(self.r_float())

    @cached_property
    def weights(self) -> np.ndarray:
        return np.array([float(w) for w in self.weights_float()])

    @cached_property
    def xi(self) -> np.ndarray:
        """Molecular velocities xi_i = r e_i, shape (Q, D)."""
        return self.r * self.e.astype(float)

    def summary(self) -> dict:
        return {
            "name": self.name,
            "D": self.D,
            "Q": self.Q,
            "degree": self.degree,
            "hermite_order": self.hermite_order,
            "isothermal": self.isothermal,
            "max_hop": self.max_hop,
            "r": self.r,
            "r_digits": str(self.r_float(25)),
            "minimal_polynomial_of_t": str(self.minimal_polynomial),
            "velocities": [list(v) for v in self.velocities],
            "weights": [float(w) for w in self.weights],
            "shells": [
                {"shell": list(s), "count": self.shell_of.count(i),
                 "weight": float(sp.N(self.shell_weights_exact[i], 30)),
                 "weight_digits": str(sp.Float(sp.N(self.shell_weights_exact[i], 35), 23))}
                for i, s in enumerate(self.shells)
            ],
            "opposite": list(self.opposite),
        }


def solve_weights(shells, degree):
    """Solve the moment conditions; returns (t, shell weights, polynomial in t)."""
    t = sp.Symbol("t", positive=True)
    nshell = len(shells)
    conditions = _conditions(degree, len(shells[0]), nshell + 1)
    if len(conditions) != nshell + 1:
        raise ValueError(
            f"{len(shells)} shells need {nshell + 1} moment conditions to fix weights and r; "
            f"degree {degree} gives {len(conditions)}: {conditions}")
    members = [sorted(shell_members(s)) for s in shells]
    # S[k, s] = sum over shell s of e_x^m e_y^n [e_z^l]; rhs_k = E[X^m]E[Y^n][E[Z^l]] t^((m+n+l)/2)
    S = sp.Matrix(len(conditions), nshell,
                  lambda k, s: sum(_monomial(v, conditions[k]) for v in members[s]))
    g = sp.Matrix([_gaussian_monomial(idx) * t ** (sum(idx) // 2) for idx in conditions])
    poly = sp.factor(S.row_join(g).det())
    # drop one condition so that the remaining square system is regular
    drop = next(k for k in range(nshell + 1)
                if S.extract([j for j in range(nshell + 1) if j != k], list(range(nshell))).det() != 0)
    candidates = []
    for factor, _ in sp.factor_list(poly)[1]:
        if not factor.has(t):
            continue
        for root in sp.Poly(factor, t).all_roots():
            if not root.is_real or not root.is_positive:
                continue
            keep = [k for k in range(nshell + 1) if k != drop]
            sol = S.extract(keep, list(range(nshell))).LUsolve(g.extract(keep, [0])).subs(t, root)
            weights = [sp.radsimp(w) for w in sol]
            # the dropped condition holds by construction of the determinant; check anyway
            residual = (S[drop, :] * sp.Matrix(weights))[0] - g[drop].subs(t, root)
            if abs(sp.N(residual, 50)) > 1e-35:
                continue
            if all(sp.N(w, 30) > 0 for w in weights):
                candidates.append((root, tuple(weights), factor))
    if len(candidates) != 1:
        raise ValueError(f"expected one admissible lattice, found {len(candidates)} for shells {shells}")
    root, weights, factor = candidates[0]
    return root, weights, sp.Poly(factor, t).monic().as_expr()


def build_velocity_set(name: str, shells, degree: int) -> VelocitySet:
    shells = tuple(tuple(int(c) for c in s) for s in shells)
    # the sympy solve takes about a second: cached on disk, keyed by this file and sympy
    key = digest(source_digest(__file__), sp.__version__, "solve_weights", shells, degree)
    t, shell_weights, poly = cached_pickle("model", key, lambda: solve_weights(shells, degree))
    vel = []
    for s_index, s in enumerate(shells):
        vel += [(v, s_index) for v in shell_members(s)]
    # reference order: c_x descending, then c_y ascending (then c_z ascending)
    vel.sort(key=lambda vs: (-vs[0][0],) + vs[0][1:])
    return VelocitySet(
        name=name, shells=shells, degree=degree,
        velocities=tuple(v for v, _ in vel), shell_of=tuple(s for _, s in vel),
        t_exact=t, shell_weights_exact=shell_weights, minimal_polynomial=poly)


def velocity_set(name: str) -> VelocitySet:
    """The solved set of a catalogue name (``lbgen.model.catalog``; any case), or ValueError
    naming the choices.  One object per set for the life of the process."""
    return _solved(set_entry(name))


@lru_cache(maxsize=None)
def _solved(entry) -> VelocitySet:
    return build_velocity_set(entry.label, entry.shells, entry.degree)


def d2q37() -> VelocitySet:
    """The D2Q37 set: 8 shells, degree-9 Gauss-Hermite quadrature."""
    return velocity_set("d2q37")


def d2q9() -> VelocitySet:
    """The D2Q9 set: 3 shells, degree-5 quadrature: second order, isothermal."""
    return velocity_set("d2q9")


def d2v17() -> VelocitySet:
    """The D2V17 set: 5 shells, degree-7 quadrature (a third-order thermal lattice)."""
    return velocity_set("d2v17")
