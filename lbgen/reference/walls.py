"""The NumPy oracle's thermal walls (bottom y = 0 side, top y = LY-1 side; X periodic; or, with
``axis=0``, across x: bottom x = 0, top x = LX-1, Y periodic): both wall schemes typed from their
descriptions (lbgen's and the production code's; the production code's on y only), independent of
the sympy derivation in :mod:`lbgen.model.walls` they check."""
from __future__ import annotations

import numpy as np

from lbgen.reference.bulk import collide, fields, isothermal, physical_fields, propagate, set_of

__all__ = ["apply_walls", "step_walls", "wall_mask", "wall_row_temperatures"]


def _wall_sets(vs, side, row, axis=1):
    """Unknown populations at `row` from the wall across `axis` (arriving from outside) and their opposites."""
    sign = 1 if side == "bottom" else -1
    unknown = [i for i, e in enumerate(vs.velocities) if sign * e[axis] >= row + 1]
    return unknown, [vs.opposite[i] for i in unknown]


def wall_row_temperatures(T_wall, T_first_bulk, adiabatic, rows):
    """Temperatures of the wall rows 0 .. rows-1: fixed walls impose T_wall at the last wall
    row and extrapolate through the first bulk row (row `rows`); adiabatic ones copy it."""
    if adiabatic:
        return [T_first_bulk] * rows
    return [T_wall + (rows - 1 - j) * (T_wall - T_first_bulk) for j in range(rows)]


def _conditions(vs):
    """Moment functions of the wall conditions besides mass: xi_x, xi_y and (thermal) |xi|^2/2."""
    xi = vs.xi
    funcs = [xi[:, 0], xi[:, 1]]
    if not isothermal(vs):
        funcs.append(0.5 * (xi ** 2).sum(1))
    return np.array(funcs)


def _rebuild_row(g, known, unknown, N, Tw, a, vs):
    """Unknown populations of one wall row (arrays over x), numerically, per site.

    Conditions: momentum -rho a/2 and (thermal sets) energy rho (Tw + |a|^2/8).  With N given
    the unknowns are N b_i / S, b_i = w_i (1 + sum_k z_k phi_k(xi_i)) over the condition
    functions phi_k that are independent of 1 and of each other on the unknown set (the
    others are decided by the mass); multiplying by S makes the conditions linear in z.
    With N None (as many unknowns as conditions) the unknowns are solved directly.
    """
    ax, ay = a
    phi = _conditions(vs)                                    # (C, Q)
    rhoK = g[known].sum(0)
    known_moments = phi[:, known] @ g[known]                 # (C, nx)
    nx = g.shape[1]
    out = np.empty((len(unknown), nx))
    for x in range(nx):
        rho_coef = [ax / 2, ay / 2]                           # target_k = -rho_coef_k * rho
        if phi.shape[0] == 3:
            rho_coef.append(-(Tw[x] + (ax ** 2 + ay ** 2) / 8))
        rho_coef = np.array(rho_coef)
        if N is None:
            # sum phi_k g + rho_coef_k rho = -known_k, rho = rhoK + sum g
            A = phi[:, unknown] + rho_coef[:, None]
            rhs = -known_moments[:, x] - rho_coef * rhoK[x]
            out[:, x] = np.linalg.solve(A, rhs)
            continue
        rho = rhoK[x] + N[x]
        targets = -rho_coef * rho - known_moments[:, x]      # what the unknowns must carry
        # independent moment functions on the unknown set (mass first)
        keep = []
        for k in range(phi.shape[0]):
            trial = np.vstack([np.ones(len(unknown))] + [phi[j, unknown] for j in keep + [k]])
            if np.linalg.matrix_rank(trial) == trial.shape[0]:
                keep.append(k)
        w = vs.weights[unknown]
        basis = w[:, None] * np.column_stack([np.ones(len(unknown))] + [phi[k, unknown] for k in keep])
        if not keep:
            out[:, x] = N[x] * w / w.sum()
            continue
        # t_k sum_i b_i - N sum_i phi_k,i b_i = 0 for the kept k, with b_i = basis_i . (1, z)
        M = np.outer(targets[keep], basis.sum(0)) - N[x] * phi[keep][:, unknown] @ basis
        z = np.linalg.solve(M[:, 1:], -M[:, 0])
        b = basis @ np.concatenate([[1.0], z])
        out[:, x] = N[x] * b / b.sum()
    return out


def _reference_row(g, known, unknown, L, Tw, a, vs):
    """The production code's wall row, as a moment fit: f_i = c0 + c1 xi_x + [c2 xi_y] + c3 |xi|^2/2.

    That is the bare bracket N (1 + xi.p + |xi|^2 E/2) / S with its factors merged, so the
    four (three) conditions are linear in c: mass N, momentum -rho a/2, energy
    rho (Tw + |a|^2/8).  A row whose unknowns share one e_y has no separate xi_y term; its N
    comes from the y-momentum with rho = known + L, and the rest population takes L - N.
    Returns (unknown populations, change of the rest population), arrays over x.
    """
    xi = vs.xi
    half_c2 = 0.5 * (xi ** 2).sum(1)
    ax, ay = a
    rhoK = g[known].sum(0)
    MK = xi[known].T @ g[known]
    EK = half_c2[known] @ g[known]
    rho = rhoK + L
    one_shell = len({int(vs.e[i, 1]) for i in unknown}) == 1
    N = (-rho * ay / 2 - MK[1]) / xi[unknown[0], 1] if one_shell else L
    rows = [(np.ones(len(unknown)), N), (xi[unknown, 0], -rho * ax / 2 - MK[0]),
            (xi[unknown, 1], -rho * ay / 2 - MK[1])]
    if not isothermal(vs):
        rows.append((half_c2[unknown], rho * (Tw + (ax ** 2 + ay ** 2) / 8) - EK))
    kept = []                                                # conditions independent on the unknown set
    for row in rows:
        if np.linalg.matrix_rank(np.array([r for r, _ in kept + [row]])) == len(kept) + 1:
            kept.append(row)
    B = np.array([r for r, _ in kept])
    targets = [t for _, t in kept]
    c = np.linalg.solve(B @ B.T, np.array(targets))          # moments B f = B B^T c = targets
    return B.T @ c, (L - N if one_shell else 0.0 * L)


def _line(axis, index):
    """Index tuple of the row (axis 1: all x at y = index) or column (axis 0) of a (Q, LX, LY) array."""
    return (slice(None), index, slice(None)) if axis == 0 else (slice(None), slice(None), index)


def apply_walls(g, f_before, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), force=(0.0, 0.0), vs=None,
                scheme="lbgen", axis=1):
    """The bc step after propagate: rebuild the unknown populations of the H = max hop rows
    at each wall.

    `g` is the propagated state (modified in place and returned), `f_before` the state before
    propagate (the populations that left towards the wall).  scheme "lbgen": zero net mass
    flux per column, rows H-1 .. 1 first (each its own leaving mass, or free where it has
    exactly as many unknowns as conditions), row 0 takes the remaining mass.  scheme
    "reference" (the production code's): each row takes the mass L that left it (the row
    whose unknowns share one e_y through its rest population, see _reference_row), bare
    bracket, and the first bulk row's temperature plus |a|^2/8.  ``axis``: 1, the walls across y
    (rows y = j and LY-1-j); 0, across x (the wall rows are the columns x = j and LX-1-j; lbgen's
    scheme only).
    """
    vs = set_of(vs)
    if scheme not in ("lbgen", "reference"):
        raise ValueError(f"unknown wall scheme {scheme!r}; choose lbgen or reference")
    if axis not in (0, 1) or (scheme == "reference" and axis != 1):
        raise ValueError(f"walls across axis {axis!r}: the oracle's 2D walls stand across y (1) or, lbgen's "
                         f"scheme, x (0)")
    ly = g.shape[1 + axis]              # the extent across the walls
    width = g.shape[2 - axis]           # the sites of a wall row
    rest = vs.velocities.index((0, 0)) if scheme == "reference" else None
    H = vs.max_hop
    n_conditions = _conditions(vs).shape[0]
    for side, T_wall, adiabatic_side in (("bottom", T_bottom, adiabatic[0]), ("top", T_top, adiabatic[1])):
        y_of = (lambda j: j) if side == "bottom" else (lambda j: ly - 1 - j)
        T_bulk = fields(g[_line(axis, y_of(H))], vs)[3]
        if scheme == "reference":
            # the production code's localTempfic: the first bulk row's physical temperature T + |a|^2/8
            T_bulk = physical_fields(g[:, :, y_of(H)], force, vs)[3]
            temps = wall_row_temperatures(T_wall, T_bulk, adiabatic_side, H)
            for j in range(H):
                unknown, leaving = _wall_sets(vs, side, j)
                known = [i for i in range(vs.Q) if i not in unknown]
                Tw = np.broadcast_to(np.asarray(temps[j], dtype=float), (width,))
                new, to_rest = _reference_row(g[:, :, y_of(j)], known, unknown, f_before[leaving, :, y_of(j)].sum(0),
                                              Tw, force, vs)
                g[unknown, :, y_of(j)] = new
                g[rest, :, y_of(j)] += to_rest
            continue
        temps = wall_row_temperatures(T_wall, T_bulk, adiabatic_side, H)
        left = [f_before[_line(axis, y_of(j))][_wall_sets(vs, side, j, axis)[1]].sum(0) for j in range(H)]
        entered = 0.0
        for j in range(H - 1, -1, -1):
            unknown, _ = _wall_sets(vs, side, j, axis)
            known = [i for i in range(vs.Q) if i not in unknown]
            row = g[_line(axis, y_of(j))]
            Tw = np.broadcast_to(np.asarray(temps[j], dtype=float), (width,))
            if j > 0 and len(unknown) == n_conditions:
                N = None
            elif j == 0:
                N = sum(left) - entered
            else:
                N = left[j]
            new = _rebuild_row(row, known, unknown, N, Tw, force, vs)
            row[unknown] = new             # a view of g
            entered = entered + new.sum(0)
    return g


def wall_mask(lx, ly, vs=None, axis=1):
    """True on the H = max hop rows next to each wall across `axis` (where the operators use tau = tau_wall)."""
    H = set_of(vs).max_hop
    mask = np.zeros((lx, ly), dtype=bool)
    n = (lx, ly)[axis]
    for j in (*range(H), *range(n - H, n)):
        mask[_line(axis, j)[1:]] = True
    return mask


def step_walls(f, operator="bgk", T_bottom=1.0, T_top=1.0, adiabatic=(False, False), scheme="lbgen", axis=1,
               **params):
    """propagate -> bc (wall `scheme`) -> collide with thermal walls at the bottom and top across
    `axis` (1: y, 0: x); the wall rows relax with ``tau_wall`` (a keyword of ``params``, default 1)."""
    vs = params.get("vs")
    g = apply_walls(propagate(f, vs), f, T_bottom, T_top, adiabatic, params.get("force", (0.0, 0.0)), vs, scheme,
                    axis)
    params = dict(params, wall=wall_mask(f.shape[1], f.shape[2], vs, axis))
    return collide(g, operator, **params)
