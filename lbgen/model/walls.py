"""Thermal no-slip walls (the bc kernel): lbgen's and the production ("reference") scheme, any velocity set.

Walls bound the lattice at the bottom (below y = 0) and the top (above y = LY-1); X stays
periodic.  The wall rows are the H = ``VelocitySet.max_hop`` rows next to each wall (3
for D2Q37 and D2V17, 1 for D2Q9).  After propagate, at row j = 0 .. H-1 from a wall the
populations that would have come from outside the fluid are unknown: at the bottom those
with e_y >= j + 1 (15, 8 and 3 of them for D2Q37), at the top those with e_y <= -(j + 1).
They are rebuilt as

    f_i = (N / S) w_i (1 + xi_i . p + |xi_i|^2 E / 2),   S = sum_{i in U} w_i (1 + xi_i . p + |xi_i|^2 E / 2)

* (p, E) make the site's momentum equal -rho a / 2 (the wall is at rest for the physical,
  half-step-corrected velocity u + a/2) and its energy rho (T_w + |a|^2/8), i.e. the
  temperature T_w of the row.  Multiplying by S turns the conditions into a linear
  system for (p_x, p_y, E) whose coefficients are lattice sums over the unknown set;
  sympy computes those sums and solves the system (Cramer's rule), nothing is typed.
  Isothermal sets (``VelocitySet.isothermal``, D2Q9) have no energy condition and no E.
  A condition whose moment is, on the unknown set, a combination of the ones before it
  (D2Q9's single row: its three unknowns share e_y, so their y-momentum is r times their
  mass) cannot be imposed independently of the mass and is dropped with its term of the
  bracket: the mass balance below decides it;
* N, the mass they carry, makes the net mass flux through the wall zero: the mass that
  enters a column through the wall rows equals the mass that left it towards the wall in
  the same propagate (the populations of the opposite sets before propagate, sum of L_j).
  A row j > 0 takes N_j = L_j, except one whose unknowns are exactly as many as the
  momentum and energy conditions (D2Q37's row 2: 3 populations): there N is left free and
  the populations solve those conditions directly (a linear system); row 0 then takes the
  rest, N_0 = sum L_j - sum_{j>0} N_j.  At rest in equilibrium every row reproduces the
  equilibrium exactly, and total mass is conserved to round-off.

Row temperatures (thermal sets): fixed walls impose T_w at the last wall row (j = H-1) and
extrapolate linearly through the first bulk row (j = H) into the rows nearer the wall,
T_j = T_w + (H-1-j)(T_w - T_H); adiabatic walls copy T_H into every wall row.  The kernel
takes T_j as an input.  Isothermal walls take no temperature.

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

from lbgen.model.assignments import AssignmentList
from lbgen.model.catalog import AXES, CHANNEL_WALLS, DEFAULT_SCHEME, SCHEMES, SIDES
from lbgen.model.collision import CONSTANT_DIGITS, Builder, cse_assignments, population_symbols
from lbgen.model.velocity_set import VelocitySet



def check_scheme(scheme: str) -> str:
    """The scheme name, or a ValueError naming the bad value and the choices."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown wall scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    return scheme


def wall_axis(vs: VelocitySet, axis=None) -> int:
    """The axis a wall pair stands across: None is the last axis (y in 2D, z in 3D); an axis
    index or name (x, y, z) of the set's dimension, or a ValueError naming the choices."""
    if axis is None:
        return vs.D - 1
    names = AXES[:vs.D]
    if isinstance(axis, str) and axis in names:
        return names.index(axis)
    if isinstance(axis, int) and not isinstance(axis, bool) and 0 <= axis < vs.D:
        return axis
    raise ValueError(f"wall axis {axis!r} does not exist in {vs.D}D; choose one of {', '.join(names)}")


def _sign(side: str) -> int:
    """+1 at the low face (bottom), -1 at the high face (top)."""
    if side in (CHANNEL_WALLS[0], SIDES[0]):
        return 1
    if side in (CHANNEL_WALLS[1], SIDES[1]):
        return -1
    raise ValueError(f"unknown wall side {side!r}; choose {' or '.join(CHANNEL_WALLS)} (= {' or '.join(SIDES)})")


def check_wall_scheme_dimension(vs: VelocitySet, scheme: str, axis=None) -> None:
    """The reference scheme is the production code's 2D bc on y: refused elsewhere, in words."""
    if check_scheme(scheme) == "reference" and (vs.D != 2 or wall_axis(vs, axis) != 1):
        raise ValueError(f"wall scheme 'reference' is the production code's 2D bc for walls across y; "
                         f"{vs.name} with walls across {AXES[wall_axis(vs, axis)]} takes the lbgen scheme")


def mass_rule(vs: VelocitySet, side: str, row: int, scheme: str = DEFAULT_SCHEME, axis=None) -> str:
    """How a wall row gets the mass N of its unknown populations.

    ``"leaving"``: N = L, the mass that left this site towards the wall;
    ``"column"``: N = the column's leaving mass minus what the other rows took (lbgen, row 0);
    ``"free"``: no N, a row j > 0 whose unknowns are as many as its momentum and energy
    conditions meets them directly (lbgen; D2Q37's row 2);
    ``"rest"``: N from the y-momentum condition, the rest population takes L - N (reference,
    the row whose unknowns share one e_y).
    """
    check_wall_scheme_dimension(vs, scheme, axis)
    U = unknown_set(vs, side, row, axis)
    if scheme == "reference":
        return "rest" if len({vs.velocities[i][1] for i in U}) == 1 else "leaving"
    if row > 0 and len(U) == condition_count(vs):
        return "free"
    return "column" if row == 0 else "leaving"


def wall_row_count(vs: VelocitySet) -> int:
    """Rows next to each wall with unknown populations: the largest hop."""
    return vs.max_hop


def min_ly_walls(vs: VelocitySet) -> int:
    """Smallest LY with walls: the wall rows at each side and the bulk row they extrapolate from."""
    return 2 * (wall_row_count(vs) + 1)


def condition_count(vs: VelocitySet) -> int:
    """Momentum (one per axis) and, for thermal sets, energy: the conditions of a wall row besides mass."""
    return vs.D if vs.isothermal else vs.D + 1


def _moment_functions(vs: VelocitySet, unknown) -> List[int]:
    """Which of the moments (1, e_x, e_y[, e_z], |e|^2/2) are independent on the unknown set.

    Index 0 (mass) always, 1..D the momenta, D + 1 the energy moment (thermal sets only).  A
    moment that is a combination of the kept ones on U cannot be imposed separately from them.
    """
    e = [vs.velocities[i] for i in unknown]
    rows = [[1] * len(e)] + [[v[d] for v in e] for d in range(vs.D)] + [[sum(c * c for c in v) for v in e]]
    kept = [0]
    for k in range(1, condition_count(vs) + 1):
        if sp.Matrix([rows[j] for j in kept + [k]]).rank() == len(kept) + 1:
            kept.append(k)
    return kept


def unknown_set(vs: VelocitySet, side: str, row: int, axis=None) -> Tuple[int, ...]:
    """Populations arriving from outside the fluid at `row` (0 = next to the wall) of the wall
    across `axis` (``wall_axis``) at `side` (bottom/low or top/high)."""
    sign, a = _sign(side), wall_axis(vs, axis)
    return tuple(i for i, v in enumerate(vs.velocities) if sign * v[a] >= row + 1)


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
        "s1": sum((wi * v for wi, v in zip(w, e)), sp.zeros(vs.D, 1)),
        "T": sum((wi * v * v.T for wi, v in zip(w, e)), sp.zeros(vs.D, vs.D)),
        "s2": sum((wi * v.dot(v) for wi, v in zip(w, e)), sp.Integer(0)) / 2,
        "V": sum((wi * v * v.dot(v) for wi, v in zip(w, e)), sp.zeros(vs.D, 1)) / 2,
        "W": sum((wi * v.dot(v) ** 2 for wi, v in zip(w, e)), sp.Integer(0)) / 4,
    }


def _bracket_coefficients(b, free, target, N, lattice_sum, det_method=None, D=2) -> dict:
    """z_k of the bracket b_i = w_i (1 + sum_k z_k phi_k(xi_i)) over the unknowns, both wall
    schemes: condition k, target_k S - N sum_U phi_k b = 0, is linear in z; solved by
    Cramer's rule (``det_method``: sympy's determinant method; the two schemes keep theirs
    so that their emitted code stays as it is)."""
    def det(M):
        return M.det(method=det_method) if det_method else M.det()

    s0 = lattice_sum()
    A = sp.Matrix(len(free), len(free), lambda m, n: target[free[m]] * lattice_sum(free[n])
                  - N * lattice_sum(free[m], free[n]))
    rhs = sp.Matrix([N * lattice_sum(k) - target[k] * s0 for k in free])
    z = {}
    if free:
        inv_det = b.let("inv_det", 1 / b.let("det", sp.expand(det(A))))
        for col, k in enumerate(free):
            Ai = A.copy()
            Ai[:, col] = rhs
            z[k] = b.let("E" if k == D + 1 else f"p{AXES[k - 1]}", sp.expand(det(Ai)) * inv_det)
    return z


def wall_name(vs: VelocitySet, side: str, row: int, axis=None) -> str:
    """The assignment list's name: wall_bottom_0 for the 2D channel (walls across y),
    wall_z_low_0 for any other axis or dimension."""
    a = wall_axis(vs, axis)
    if vs.D == 2 and a == 1:
        return f"wall_{CHANNEL_WALLS[0 if _sign(side) > 0 else 1]}_{row}"
    return f"wall_{AXES[a]}_{SIDES[0 if _sign(side) > 0 else 1]}_{row}"


def _force_symbols(vs: VelocitySet):
    """(ax, ay[, az]): the force per unit mass per step, one symbol per axis."""
    return sp.symbols(" ".join(f"a{AXES[d]}" for d in range(vs.D)), real=True)


def _energy_target(vs: VelocitySet, rho, Tw, a):
    """Energy of a wall site at rest for the physical velocity u + a/2 = 0 and temperature Tw:
    rho (D Tw / 2 + |a|^2 / 8) (T = sum |xi - u|^2 f / (D rho))."""
    return rho * (sp.Rational(vs.D, 2) * Tw + sp.Add(*[c ** 2 for c in a]) / 8)


def wall_assignments(vs: VelocitySet, side: str, row: int, scheme: str = DEFAULT_SCHEME,
                     axis=None) -> AssignmentList:
    """bc body for one wall row under a scheme (see :func:`mass_rule`), walls across `axis`
    (``wall_axis``: y in 2D, z in 3D by default; the reference scheme only on 2D's y).

    Mass rules "leaving"/"column": parameters (N, Tw, ax, ay[, az]).  "free": (Tw, ax, ...).
    "rest": (L, Tw, ax, ay), and the rest population is the last output.  Isothermal sets
    (D2Q9) take no Tw.  Inputs are the known populations the body uses; outputs the
    unknown ones, in order.
    """
    H = wall_row_count(vs)
    if not 0 <= row < H:
        raise ValueError(f"wall row {row} does not exist; {vs.name} has rows 0..{H - 1}")
    U = unknown_set(vs, side, row, axis)
    rule = mass_rule(vs, side, row, scheme, axis)
    if rule == "free":
        return _direct_wall_assignments(vs, side, row, U, axis)
    if rule == "rest":
        return _rest_mass_assignments(vs, side, row, U)
    weighted = scheme == "lbgen"
    D = vs.D
    K = [i for i in range(vs.Q) if i not in U]
    f = population_symbols(vs.Q)
    N, Tw = sp.symbols("N Tw", real=True)
    a = _force_symbols(vs)
    r = vs.r_float(CONSTANT_DIGITS + 10)
    xi = [tuple(r * c for c in v) for v in vs.velocities]
    kept = _moment_functions(vs, U)
    # moment functions in hop units and their degree in xi (each xi carries one factor r):
    # 0 mass, 1..D momentum, D + 1 energy
    phi = ([lambda *e: 1] + [lambda *e, d=d: e[d] for d in range(D)]
           + [lambda *e: sp.Rational(sum(c * c for c in e), 2)])
    degree = [0] + [1] * D + [2]
    w_exact = vs.weights_exact if weighted else [sp.Integer(1)] * vs.Q

    def lattice_sum(*ks):
        total = sum((w_exact[i] * sp.Mul(*[phi[k](*vs.velocities[i]) for k in ks]) for i in U), sp.Integer(0))
        return _c(r ** sum(degree[k] for k in ks) * total)

    b = Builder()
    rhoK = b.let("rhoK", sp.Add(*[f[i] for i in K]))
    known = {d + 1: b.let(f"MK{AXES[d]}", sp.Add(*[_c(xi[i][d]) * f[i] for i in K if xi[i][d] != 0]))
             for d in range(D)}
    if not vs.isothermal:
        known[D + 1] = b.let("EK", sp.Add(*[_c(sum(c ** 2 for c in xi[i]) / 2) * f[i] for i in K]))
    rho = b.let("rho", rhoK + N)
    # targets: momentum -rho a/2, energy rho (D Tw/2 + |a|^2/8); minus the known part
    target = {d + 1: b.let(f"m{AXES[d]}", -rho * a[d] / 2 - known[d + 1]) for d in range(D)}
    if not vs.isothermal:
        target[D + 1] = b.let("en", _energy_target(vs, rho, Tw, a) - known[D + 1])
    # b_i = w_i (1 + sum_j z_j phi_j(xi_i)); condition k: target_k S - N sum_U phi_k b = 0, linear in z
    free = kept[1:]
    z = _bracket_coefficients(b, free, target, N, lattice_sum, det_method="berkowitz", D=D)
    w = vs.weights_float(CONSTANT_DIGITS + 10) if weighted else [1] * vs.Q
    bracket = {i: b.let(f"b{i}", _c(w[i]) + sp.Add(*[_c(w[i] * r ** degree[k] * phi[k](*vs.velocities[i])) * z[k]
                                                      for k in free]))
               for i in U}
    S = b.let("S", sp.Add(*bracket.values()))
    scale = b.let("NoS", N / S)
    outputs = tuple(b.let(f"fout{i}", scale * bracket[i]) for i in U)
    assignments = cse_assignments(b.assignments, outputs)
    used = {s for _, ex in assignments for s in ex.free_symbols}
    inputs = tuple(f[i] for i in K if f[i] in used)
    imposed = [f"u_{AXES[d]} = -a_{AXES[d]}/2" if d + 1 in free else None for d in range(D)]
    imposed.append("T = Tw" if D + 1 in free else None)
    parameters = (N, *a) if vs.isothermal else (N, Tw, *a)
    return AssignmentList(name=wall_name(vs, side, row, axis), inputs=inputs, parameters=parameters,
                          assignments=assignments, outputs=outputs,
                          description=f"{'isothermal' if vs.isothermal else 'thermal'} wall ({scheme} scheme), "
                                      f"{side} row {row}: {len(U)} unknown populations {list(U)} rebuilt for "
                                      f"zero mass flux"
                                      + "".join(f", {c}" for c in imposed if c))


def _direct_wall_assignments(vs: VelocitySet, side: str, row: int, U, axis=None) -> AssignmentList:
    """Unknown populations fixed by the momentum (one per axis) and (thermal sets) energy conditions."""
    D = vs.D
    K = [i for i in range(vs.Q) if i not in U]
    f = population_symbols(vs.Q)
    Tw = sp.Symbol("Tw", real=True)
    a = _force_symbols(vs)
    r = vs.r_float(CONSTANT_DIGITS + 10)
    xi = [tuple(r * c for c in v) for v in vs.velocities]
    b = Builder()
    rhoK = b.let("rhoK", sp.Add(*[f[i] for i in K]))
    MK = [b.let(f"MK{AXES[d]}", sp.Add(*[_c(xi[i][d]) * f[i] for i in K if xi[i][d] != 0])) for d in range(D)]
    g = sp.symbols(f"g0:{len(U)}", real=True)
    rho = rhoK + sp.Add(*g)
    equations = [MK[d] + sp.Add(*[_c(xi[i][d]) * gi for i, gi in zip(U, g)]) + rho * a[d] / 2 for d in range(D)]
    if not vs.isothermal:
        EK = b.let("EK", sp.Add(*[_c(sum(c ** 2 for c in xi[i]) / 2) * f[i] for i in K]))
        equations.append(EK + sp.Add(*[_c(sum(c ** 2 for c in xi[i]) / 2) * gi for i, gi in zip(U, g)])
                         - _energy_target(vs, rho, Tw, a))
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
    return AssignmentList(name=wall_name(vs, side, row, axis), inputs=inputs,
                          parameters=tuple(a) if vs.isothermal else (Tw, *a),
                          assignments=assignments, outputs=outputs,
                          description=f"{'isothermal' if vs.isothermal else 'thermal'} wall, {side} row {row}: "
                                      f"{len(U)} unknown populations {list(U)} fixed by u = -a/2"
                                      f"{'' if vs.isothermal else ' and T = Tw'} (mass free)")


def _rest_mass_assignments(vs: VelocitySet, side: str, row: int, U) -> AssignmentList:
    """Reference scheme, the row whose unknowns share one e_y: N from y-momentum, rest takes L - N.

    With f_0 -> f_0 + L - N the site's mass becomes rho = rho_K + L (rho_K: the known
    populations, rest included), so the y-momentum condition M_Ky + xi_y N = -rho a_y/2 gives
    N.  Then f_i = (N/S) phi_i, phi_i = 1 + xi_x,i p_x + |xi_i|^2 E/2 (bare bracket, no p_y:
    xi_y,i is the same for all i and would duplicate the constant), and the x-momentum and
    energy conditions, multiplied by S, are linear in (p_x, E):
        m_x S - N sum_U xi_x phi = 0,   e S - N sum_U |xi|^2/2 phi = 0.
    Only the moments independent on U are imposed (``_moment_functions``): isothermal sets
    have no E, and a single unknown population just carries N.
    """
    if (0, 0) not in vs.velocities:
        raise ValueError(f"the reference wall scheme needs a rest population; {vs.name} has none")
    rest = vs.velocities.index((0, 0))
    K = [i for i in range(vs.Q) if i not in U]
    f = population_symbols(vs.Q)
    L, Tw, ax, ay = sp.symbols("L Tw ax ay", real=True)
    r = vs.r_float(CONSTANT_DIGITS + 10)
    xi = [(r * a, r * b) for a, b in vs.velocities]
    free = [k for k in _moment_functions(vs, U)[1:] if k != 2]      # of (x-momentum 1, energy 3)
    # bare-bracket lattice sums over U in xi units
    phi = {1: lambda i: xi[i][0], 3: lambda i: (xi[i][0] ** 2 + xi[i][1] ** 2) / 2}

    def lattice_sum(*ks):
        return _c(sum((sp.Mul(*[phi[k](i) for k in ks]) for i in U), sp.Integer(0)))

    xi_y = _c(xi[U[0]][1])
    b = Builder()
    rhoK = b.let("rhoK", sp.Add(*[f[i] for i in K]))
    MKx = b.let("MKx", sp.Add(*[_c(xi[i][0]) * f[i] for i in K if xi[i][0] != 0]))
    MKy = b.let("MKy", sp.Add(*[_c(xi[i][1]) * f[i] for i in K if xi[i][1] != 0]))
    rho = b.let("rho", rhoK + L)
    N = b.let("N", (-rho * ay / 2 - MKy) / xi_y)
    target = {1: b.let("mx", -rho * ax / 2 - MKx)}
    if 3 in free:
        EK = b.let("EK", sp.Add(*[_c((xi[i][0] ** 2 + xi[i][1] ** 2) / 2) * f[i] for i in K]))
        target[3] = b.let("en", rho * (Tw + (ax ** 2 + ay ** 2) / 8) - EK)
    z = _bracket_coefficients(b, free, target, N, lattice_sum)
    bracket = {i: b.let(f"b{i}", 1 + sp.Add(*[_c(phi[k](i)) * z[k] for k in free])) for i in U}
    S = b.let("S", sp.Add(*bracket.values()))
    scale = b.let("NoS", N / S)
    outputs = tuple(b.let(f"fout{i}", scale * bracket[i]) for i in U)
    outputs += (b.let(f"fout{rest}", f[rest] + L - N),)
    assignments = cse_assignments(b.assignments, outputs)
    used = {s for _, ex in assignments for s in ex.free_symbols}
    inputs = tuple(f[i] for i in K if f[i] in used)
    imposed = ", T = Tw" if 3 in free else ""
    return AssignmentList(name=f"wall_{side}_{row}", inputs=inputs,
                          parameters=(L, ax, ay) if vs.isothermal else (L, Tw, ax, ay),
                          assignments=assignments, outputs=outputs,
                          description=f"{'isothermal' if vs.isothermal else 'thermal'} wall (reference scheme), "
                                      f"{side} row {row}: {len(U)} unknown populations {list(U)} carry N from "
                                      f"y-momentum, rest population {rest} takes L - N, u = -a/2{imposed}")
