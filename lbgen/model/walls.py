"""Thermal no-slip walls (the bc kernel): lbgen's and the production ("reference") scheme, any velocity set.

Walls bound the lattice at the bottom (below y = 0) and the top (above y = LY-1); X stays
periodic.  After propagate, at row j = 0, 1, 2 from a wall the populations that would
have come from outside the fluid are unknown: at the bottom those with e_y >= j + 1
(15, 8 and 3 of them for D2Q37), at the top those with e_y <= -(j + 1).  They are rebuilt
as

    f_i = (N / S) w_i (1 + xi_i . p + |xi_i|^2 E / 2),   S = sum_{i in U} w_i (1 + xi_i . p + |xi_i|^2 E / 2)

* (p, E) make the site's momentum equal -rho a / 2 (the wall is at rest for the physical,
  half-step-corrected velocity u + a/2) and its energy rho (T_w + |a|^2/8), i.e. the
  temperature T_w of the row.  Multiplying by S turns both conditions into a 3x3 linear
  system for (p_x, p_y, E) whose coefficients are lattice sums over the unknown set;
  sympy computes those sums and solves the system (Cramer's rule), nothing is typed;
* N, the mass they carry, makes the net mass flux through the wall zero: the mass that
  enters a column through rows 0..2 equals the mass that left it towards the wall in the
  same propagate (the populations of the opposite sets before propagate, L_0 + L_1 + L_2).
  Row 1 takes N_1 = L_1.  Row 2 has only 3 unknown populations: with N fixed they could
  not meet three conditions, so there N is left free and the three populations solve the
  momentum and energy conditions directly (a 3x3 linear system, still of the form above);
  row 0 then takes the rest, N_0 = L_0 + L_1 + L_2 - N_1 - N_2.  At rest in equilibrium
  every row reproduces the equilibrium exactly, and total mass is conserved to round-off.

Row temperatures: fixed walls impose T_w at the third row (j = 2) and extrapolate
linearly through the fourth row (j = 3) into rows 1 and 0, T_j = T_w + (2 - j)(T_w - T_3);
adiabatic walls copy T_3 into rows 0..2.  The kernel takes T_j as an input.

The weights w_i in the bracket are lbgen's choice.  The reference production code uses
the bare bracket, whose lattice sums are the integers 15, 26, 40, 47, 54, 91, 367/2
(``lattice_sums(..., weighted=False)``); that is harmless there because its wall rows
relax with tau = 1 to the equilibrium of the imposed moments, but under BGK it would
not even keep a wall at rest in equilibrium.  With w_i the rest state at T = 1 is an
exact fixed point for both operators.

Two schemes (``SCHEMES``), chosen per kernel:

* ``"lbgen"`` (default): the scheme above, weighted bracket, the raw temperature T_3 of
  the fourth row, column mass balance closed by row 0.
* ``"reference"``: the production code's wall scheme, derived here for any velocity set.
  Its differences: (1) the bare bracket 1 + xi.p + |xi|^2 E/2 (no w_i); (2) every row
  keeps its own mass: rows with a mixed unknown set take N_j = L_j, and the farthest row,
  whose unknown populations all share one e_y (3 of them for D2Q37), takes its total N
  from the y-momentum condition alone (those populations carry y-momentum xi_y N, so
  -rho a_y/2 = M_Ky + xi_y N with rho = rho_K + L fixes N), solves (p_x, E) from the
  x-momentum and energy conditions (p_y is redundant there: xi_y is the same for every
  unknown), and hands N - L back to the rest population of the same site (f_0 += L - N),
  so the site gains exactly the mass L that left it; (3) the fourth-row temperature it
  extrapolates from (or copies, adiabatic) is T_3 + |a|^2/8 instead of T_3 (the bc kernel
  adds it; the production code calls it ``localTempfic``).  The wall is at rest in every
  row (the production code's bottom row 1 reads its wall velocity ``vtilde2``
  uninitialised; its output behaves as 0, which is what is used here).  Total mass is
  conserved to round-off by both.
"""
from __future__ import annotations

from typing import List, Tuple

import sympy as sp

from .assignments import AssignmentList
from .collision import CONSTANT_DIGITS, Builder, cse_assignments, population_symbols
from .velocity_set import VelocitySet

WALL_ROWS = 3  # rows next to each wall with unknown populations (= the largest hop)
SIDES = ("bottom", "top")
#: wall schemes: lbgen's own (the default) and the production code's (see the module docstring)
SCHEMES = ("lbgen", "reference")
DEFAULT_SCHEME = "lbgen"


def check_scheme(scheme: str) -> str:
    """The scheme name, or a ValueError naming the bad value and the choices."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown wall scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    return scheme


def mass_rule(vs: VelocitySet, side: str, row: int, scheme: str = DEFAULT_SCHEME) -> str:
    """How a wall row gets the mass N of its unknown populations.

    ``"leaving"``: N = L, the mass that left this site towards the wall;
    ``"column"``: N = the column's leaving mass minus what rows 1 and 2 took (lbgen, row 0);
    ``"free"``: no N, the 3 unknowns meet the 3 conditions directly (lbgen, 3 unknowns);
    ``"rest"``: N from the y-momentum condition, the rest population takes L - N (reference,
    the row whose unknowns share one e_y).
    """
    check_scheme(scheme)
    U = unknown_set(vs, side, row)
    if scheme == "reference":
        return "rest" if len({vs.velocities[i][1] for i in U}) == 1 else "leaving"
    if len(U) == 3:
        return "free"
    return "column" if row == 0 else "leaving"


def unknown_set(vs: VelocitySet, side: str, row: int) -> Tuple[int, ...]:
    """Populations arriving from outside the fluid at `row` (0 = next to the wall)."""
    if side not in SIDES:
        raise ValueError(f"unknown wall side {side!r}; choose bottom or top")
    sign = 1 if side == "bottom" else -1
    return tuple(i for i, (_, ey) in enumerate(vs.velocities) if sign * ey >= row + 1)


def leaving_set(vs: VelocitySet, side: str, row: int) -> Tuple[int, ...]:
    """Populations that leave the fluid from `row` in one propagate (opposites of the unknown set)."""
    return tuple(vs.opposite[i] for i in unknown_set(vs, side, row))


def _c(x):
    return sp.Float(sp.N(x, CONSTANT_DIGITS + 10), CONSTANT_DIGITS)


def lattice_sums(vs: VelocitySet, unknown, weighted: bool = True) -> dict:
    """Exact lattice sums over an unknown set, in hop units e_i (weighted by w_i or not).

    With xi = r e the conditions use s0 = sum w, s1 = sum w e, T = sum w e e,
    s2 = sum w |e|^2/2, V = sum w e |e|^2/2, W = sum w |e|^4/4.  Unweighted they are the
    integers of the reference code (15, 26, 40, 47, 54, 91, 367/2 at the bottom row).
    """
    w = [vs.weights_exact[i] if weighted else sp.Integer(1) for i in unknown]
    e = [sp.Matrix(vs.velocities[i]) for i in unknown]
    return {
        "s0": sum(w, sp.Integer(0)),
        "s1": sum((wi * v for wi, v in zip(w, e)), sp.zeros(2, 1)),
        "T": sum((wi * v * v.T for wi, v in zip(w, e)), sp.zeros(2, 2)),
        "s2": sum((wi * v.dot(v) for wi, v in zip(w, e)), sp.Integer(0)) / 2,
        "V": sum((wi * v * v.dot(v) for wi, v in zip(w, e)), sp.zeros(2, 1)) / 2,
        "W": sum((wi * v.dot(v) ** 2 for wi, v in zip(w, e)), sp.Integer(0)) / 4,
    }


def wall_assignments(vs: VelocitySet, side: str, row: int, scheme: str = DEFAULT_SCHEME) -> AssignmentList:
    """bc body for one wall row under a scheme (see :func:`mass_rule`).

    Mass rules "leaving"/"column": parameters (N, Tw, ax, ay).  "free": (Tw, ax, ay).
    "rest": (L, Tw, ax, ay), and the rest population is the last output.
    Inputs are the known populations the body uses; outputs the unknown ones, in order.
    """
    U = unknown_set(vs, side, row)
    if len(U) < 3:
        raise ValueError(f"{side} row {row} has {len(U)} unknown populations; the scheme needs at least 3")
    rule = mass_rule(vs, side, row, scheme)
    if rule == "free":
        return _direct_wall_assignments(vs, side, row, U)
    if rule == "rest":
        return _rest_mass_assignments(vs, side, row, U)
    weighted = scheme == "lbgen"
    K = [i for i in range(vs.Q) if i not in U]
    f = population_symbols(vs.Q)
    N, Tw, ax, ay = sp.symbols("N Tw ax ay", real=True)
    r = vs.r_float(CONSTANT_DIGITS + 10)
    xi = [(r * a, r * b) for a, b in vs.velocities]
    sums = lattice_sums(vs, U, weighted)
    # lattice sums in xi units: every xi carries one factor r
    s0 = _c(sums["s0"])
    s1 = [_c(r * sums["s1"][a]) for a in range(2)]
    Tm = [[_c(r ** 2 * sums["T"][a, b]) for b in range(2)] for a in range(2)]
    s2 = _c(r ** 2 * sums["s2"])
    V = [_c(r ** 3 * sums["V"][a]) for a in range(2)]
    W = _c(r ** 4 * sums["W"])

    b = Builder()
    rhoK = b.let("rhoK", sp.Add(*[f[i] for i in K]))
    MKx = b.let("MKx", sp.Add(*[_c(xi[i][0]) * f[i] for i in K if xi[i][0] != 0]))
    MKy = b.let("MKy", sp.Add(*[_c(xi[i][1]) * f[i] for i in K if xi[i][1] != 0]))
    EK = b.let("EK", sp.Add(*[_c((xi[i][0] ** 2 + xi[i][1] ** 2) / 2) * f[i] for i in K]))
    rho = b.let("rho", rhoK + N)
    # targets: momentum -rho a/2, energy rho (Tw + |a|^2/8); m, e = target - known part
    m = [b.let("mx", -rho * ax / 2 - MKx), b.let("my", -rho * ay / 2 - MKy)]
    e = b.let("en", rho * (Tw + (ax ** 2 + ay ** 2) / 8) - EK)
    # rows: m_a S - N sum_U xi_a b = 0 and e S - N sum_U |xi|^2/2 b = 0, linear in z = (px, py, E)
    A = sp.Matrix([
        [m[0] * s1[0] - N * Tm[0][0], m[0] * s1[1] - N * Tm[0][1], m[0] * s2 - N * V[0]],
        [m[1] * s1[0] - N * Tm[1][0], m[1] * s1[1] - N * Tm[1][1], m[1] * s2 - N * V[1]],
        [e * s1[0] - N * V[0], e * s1[1] - N * V[1], e * s2 - N * W],
    ])
    rhs = sp.Matrix([N * s1[0] - m[0] * s0, N * s1[1] - m[1] * s0, N * s2 - e * s0])
    det = b.let("det", sp.expand(A.det(method="berkowitz")))
    inv_det = b.let("inv_det", 1 / det)
    z = []
    for col, name in enumerate(("px", "py", "E")):
        Ai = A.copy()
        Ai[:, col] = rhs
        z.append(b.let(name, sp.expand(Ai.det(method="berkowitz")) * inv_det))
    px, py, E = z
    w = vs.weights_float(CONSTANT_DIGITS + 10) if weighted else [1] * vs.Q
    bracket = {i: b.let(f"b{i}", _c(w[i]) + _c(w[i] * xi[i][0]) * px + _c(w[i] * xi[i][1]) * py
                        + _c(w[i] * (xi[i][0] ** 2 + xi[i][1] ** 2) / 2) * E) for i in U}
    S = b.let("S", sp.Add(*bracket.values()))
    scale = b.let("NoS", N / S)
    outputs = tuple(b.let(f"fout{i}", scale * bracket[i]) for i in U)
    assignments = cse_assignments(b.assignments, outputs)
    used = {s for _, ex in assignments for s in ex.free_symbols}
    inputs = tuple(f[i] for i in K if f[i] in used)
    return AssignmentList(name=f"wall_{side}_{row}", inputs=inputs, parameters=(N, Tw, ax, ay),
                          assignments=assignments, outputs=outputs,
                          description=f"thermal wall ({scheme} scheme), {side} row {row}: {len(U)} unknown "
                                      f"populations {list(U)} rebuilt for zero mass flux, u = -a/2, T = Tw")


def _direct_wall_assignments(vs: VelocitySet, side: str, row: int, U) -> AssignmentList:
    """Three unknown populations fixed by the momentum (x, y) and energy conditions."""
    K = [i for i in range(vs.Q) if i not in U]
    f = population_symbols(vs.Q)
    Tw, ax, ay = sp.symbols("Tw ax ay", real=True)
    r = vs.r_float(CONSTANT_DIGITS + 10)
    xi = [(r * a, r * b) for a, b in vs.velocities]
    b = Builder()
    rhoK = b.let("rhoK", sp.Add(*[f[i] for i in K]))
    MKx = b.let("MKx", sp.Add(*[_c(xi[i][0]) * f[i] for i in K if xi[i][0] != 0]))
    MKy = b.let("MKy", sp.Add(*[_c(xi[i][1]) * f[i] for i in K if xi[i][1] != 0]))
    EK = b.let("EK", sp.Add(*[_c((xi[i][0] ** 2 + xi[i][1] ** 2) / 2) * f[i] for i in K]))
    g = sp.symbols(f"g0:{len(U)}", real=True)
    rho = rhoK + sp.Add(*g)
    energy_target = Tw + (ax ** 2 + ay ** 2) / 8
    equations = [
        MKx + sp.Add(*[_c(xi[i][0]) * gi for i, gi in zip(U, g)]) + rho * ax / 2,
        MKy + sp.Add(*[_c(xi[i][1]) * gi for i, gi in zip(U, g)]) + rho * ay / 2,
        EK + sp.Add(*[_c((xi[i][0] ** 2 + xi[i][1] ** 2) / 2) * gi for i, gi in zip(U, g)]) - rho * energy_target,
    ]
    A, rhs = sp.linear_eq_to_matrix(equations, g)
    det = b.let("det", sp.expand(A.det(method="berkowitz")))
    inv_det = b.let("inv_det", 1 / det)
    outputs = []
    for col, i in enumerate(U):
        Ai = A.copy()
        Ai[:, col] = rhs
        outputs.append(b.let(f"fout{i}", sp.expand(Ai.det(method="berkowitz")) * inv_det))
    outputs = tuple(outputs)
    assignments = cse_assignments(b.assignments, outputs)
    used = {s for _, ex in assignments for s in ex.free_symbols}
    inputs = tuple(f[i] for i in K if f[i] in used)
    return AssignmentList(name=f"wall_{side}_{row}", inputs=inputs, parameters=(Tw, ax, ay),
                          assignments=assignments, outputs=outputs,
                          description=f"thermal wall, {side} row {row}: {len(U)} unknown populations "
                                      f"{list(U)} fixed by u = -a/2 and T = Tw (mass free)")


def _rest_mass_assignments(vs: VelocitySet, side: str, row: int, U) -> AssignmentList:
    """Reference scheme, the row whose unknowns share one e_y: N from y-momentum, rest takes L - N.

    With f_0 -> f_0 + L - N the site's mass becomes rho = rho_K + L (rho_K: the known
    populations, rest included), so the y-momentum condition M_Ky + xi_y N = -rho a_y/2 gives
    N.  Then f_i = (N/S) phi_i, phi_i = 1 + xi_x,i p_x + |xi_i|^2 E/2 (bare bracket, no p_y:
    xi_y,i is the same for all i and would duplicate the constant), and the x-momentum and
    energy conditions, multiplied by S, are linear in (p_x, E):
        m_x S - N sum_U xi_x phi = 0,   e S - N sum_U |xi|^2/2 phi = 0.
    """
    if (0, 0) not in vs.velocities:
        raise ValueError(f"the reference wall scheme needs a rest population; {vs.name} has none")
    rest = vs.velocities.index((0, 0))
    K = [i for i in range(vs.Q) if i not in U]
    f = population_symbols(vs.Q)
    L, Tw, ax, ay = sp.symbols("L Tw ax ay", real=True)
    r = vs.r_float(CONSTANT_DIGITS + 10)
    xi = [(r * a, r * b) for a, b in vs.velocities]
    sums = lattice_sums(vs, U, weighted=False)
    s0 = _c(sums["s0"])
    s1x, Txx, s2 = _c(r * sums["s1"][0]), _c(r ** 2 * sums["T"][0, 0]), _c(r ** 2 * sums["s2"])
    Vx, W = _c(r ** 3 * sums["V"][0]), _c(r ** 4 * sums["W"])
    xi_y = _c(xi[U[0]][1])

    b = Builder()
    rhoK = b.let("rhoK", sp.Add(*[f[i] for i in K]))
    MKx = b.let("MKx", sp.Add(*[_c(xi[i][0]) * f[i] for i in K if xi[i][0] != 0]))
    MKy = b.let("MKy", sp.Add(*[_c(xi[i][1]) * f[i] for i in K if xi[i][1] != 0]))
    EK = b.let("EK", sp.Add(*[_c((xi[i][0] ** 2 + xi[i][1] ** 2) / 2) * f[i] for i in K]))
    rho = b.let("rho", rhoK + L)
    N = b.let("N", (-rho * ay / 2 - MKy) / xi_y)
    mx = b.let("mx", -rho * ax / 2 - MKx)
    e = b.let("en", rho * (Tw + (ax ** 2 + ay ** 2) / 8) - EK)
    A = sp.Matrix([[mx * s1x - N * Txx, mx * s2 - N * Vx],
                   [e * s1x - N * Vx, e * s2 - N * W]])
    rhs = sp.Matrix([N * s1x - mx * s0, N * s2 - e * s0])
    det = b.let("det", sp.expand(A.det()))
    inv_det = b.let("inv_det", 1 / det)
    z = []
    for col, name in enumerate(("px", "E")):
        Ai = A.copy()
        Ai[:, col] = rhs
        z.append(b.let(name, sp.expand(Ai.det()) * inv_det))
    px, E = z
    phi = {i: b.let(f"b{i}", 1 + _c(xi[i][0]) * px + _c((xi[i][0] ** 2 + xi[i][1] ** 2) / 2) * E) for i in U}
    S = b.let("S", sp.Add(*phi.values()))
    scale = b.let("NoS", N / S)
    outputs = tuple(b.let(f"fout{i}", scale * phi[i]) for i in U)
    outputs += (b.let(f"fout{rest}", f[rest] + L - N),)
    assignments = cse_assignments(b.assignments, outputs)
    used = {s for _, ex in assignments for s in ex.free_symbols}
    inputs = tuple(f[i] for i in K if f[i] in used)
    return AssignmentList(name=f"wall_{side}_{row}", inputs=inputs, parameters=(L, Tw, ax, ay),
                          assignments=assignments, outputs=outputs,
                          description=f"thermal wall (reference scheme), {side} row {row}: {len(U)} unknown "
                                      f"populations {list(U)} carry N from y-momentum, rest population "
                                      f"{rest} takes L - N, u = -a/2, T = Tw")


def wall_rows(vs: VelocitySet, scheme: str = DEFAULT_SCHEME) -> List[Tuple[str, int, Tuple[int, ...], AssignmentList]]:
    """(side, row, unknown set, assignments) for the 2 x 3 wall rows."""
    return [(side, row, unknown_set(vs, side, row), wall_assignments(vs, side, row, scheme))
            for side in SIDES for row in range(WALL_ROWS)]
