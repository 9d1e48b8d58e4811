"""A deliberately plain NumPy oracle for D2Q37 (and any other velocity set) on a periodic box.

Everything here is typed straight from the model description (docs/d2q37.md) so that
the sympy-generated kernels in :mod:`lbgen.model.collision` can be checked against an
independent implementation.  It uses only the velocity set (xi_i = r e_i, w_i, its
degree); it must not import the Hermite/collision machinery it is meant to test.

D2Q37 (Hermite order 4) uses the explicit formula of d2q37.md; other sets use the
generic sum w_i sum_{n<=N} a_n : H_n(xi_i) / n! over the NumPy tensors below, with N
from the quadrature degree (D2Q9: N = 2 and isothermal, theta = 1 and T reported as 1).

Populations are arrays ``f`` of shape (Q, LX, LY) (any trailing field shape works for
the local operators); tensors carry their Cartesian indices first, fields last.
Speed is not a goal: clarity is.
"""
from __future__ import annotations

import numpy as np

from lbgen.model.velocity_set import DEFAULT_VELOCITY_SET, velocity_set

__all__ = ["equilibrium", "fields", "propagate", "collide_bgk", "collide_regularized",
           "collide", "step", "run", "force_from_gravity", "hermite_tensors", "projections",
           "equilibrium_moments", "energy"]


def _vs(vs):
    return velocity_set(DEFAULT_VELOCITY_SET) if vs is None else vs


def _order(vs) -> int:
    """Hermite order the quadrature supports: moments up to degree 2N must be exact."""
    return (vs.degree - 1) // 2


def _isothermal(vs) -> bool:
    return _order(vs) < 3


def _col(v, ndim):
    """A per-population vector (Q,) shaped to broadcast against fields of ndim dims."""
    return np.asarray(v).reshape((-1,) + (1,) * ndim)


def _lift(x, ndim):
    """A constant tensor (e.g. delta) shaped to broadcast against trailing field dims."""
    x = np.asarray(x, dtype=float)
    return x.reshape(x.shape + (1,) * ndim)


# --- equilibrium: the explicit 4th-order formula ------------------------------------------

def equilibrium(rho, ux, uy, T, vs=None):
    """f_eq, shape (Q, *field): the explicit formula of d2q37.md for order-4 sets (not via
    Hermite tensors), else the generic Hermite sum up to the set's order."""
    vs = _vs(vs)
    rho, ux, uy, T = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (rho, ux, uy, T)))
    if _order(vs) != 4:
        return _equilibrium_generic(rho, ux, uy, T, vs)
    nd = rho.ndim
    xx, xy = _col(vs.xi[:, 0], nd), _col(vs.xi[:, 1], nd)
    w = _col(vs.weights, nd)
    s = xx * ux + xy * uy              # xi_i . u
    c2 = xx ** 2 + xy ** 2             # |xi_i|^2
    u2 = ux ** 2 + uy ** 2
    t1 = T - 1.0                       # theta - 1
    bracket = (1.0 + s + 0.5 * (s ** 2 - u2) + 0.5 * t1 * (c2 - 2.0)
               + (s / 6.0) * (s ** 2 - 3.0 * u2 + 3.0 * t1 * (c2 - 4.0))
               + (s ** 4 - 6.0 * s ** 2 * u2 + 3.0 * u2 ** 2) / 24.0
               + (t1 / 4.0) * ((c2 - 4.0) * (s ** 2 - u2) - 2.0 * s ** 2)
               + (t1 ** 2 / 8.0) * (c2 ** 2 - 8.0 * c2 + 8.0))
    return w * rho * bracket


def _equilibrium_generic(rho, ux, uy, T, vs):
    """w_i sum_{n<=N} a_n(rho, u, theta) : H_n(xi_i) / n!; isothermal sets take theta = 1."""
    N = _order(vs)
    theta = np.ones_like(T) if _isothermal(vs) else T
    a = equilibrium_moments(rho, ux, uy, theta)
    H = hermite_tensors(vs)
    nd = rho.ndim
    out = H[0].reshape((-1,) + (1,) * nd) * a[0]
    for n in range(1, N + 1):
        out = out + _contract(H[n], a[n], n) / float(np.prod(np.arange(1, n + 1)))
    return _col(vs.weights, nd) * out


# --- macroscopic fields ----------------------------------------------------------------------

def fields(f, vs=None):
    """(rho, ux, uy, T): rho = sum f, rho u = sum xi f, rho T = sum |xi - u|^2 f / 2 (D = 2)."""
    vs = _vs(vs)
    f = np.asarray(f, dtype=float)
    nd = f.ndim - 1
    xx, xy = _col(vs.xi[:, 0], nd), _col(vs.xi[:, 1], nd)
    rho = f.sum(axis=0)
    ux = (xx * f).sum(axis=0) / rho
    uy = (xy * f).sum(axis=0) / rho
    if _isothermal(vs):
        return rho, ux, uy, np.ones_like(rho)     # isothermal sets: T = 1 by construction
    T = (0.5 * ((xx - ux) ** 2 + (xy - uy) ** 2) * f).sum(axis=0) / rho
    return rho, ux, uy, T


def energy(f, vs=None):
    """Total energy density sum_i |xi_i|^2 f_i / 2 per site (= rho (T + |u|^2/2))."""
    vs = _vs(vs)
    f = np.asarray(f, dtype=float)
    c2 = _col((vs.xi ** 2).sum(axis=1), f.ndim - 1)
    return 0.5 * (c2 * f).sum(axis=0)


# --- streaming -------------------------------------------------------------------------------

def propagate(f, vs=None):
    """Pull scheme, periodic: f'_p(x, y) = f_p(x - e_px, y - e_py) (np.roll by +e_p)."""
    vs = _vs(vs)
    out = np.empty_like(f)
    for p, (ex, ey) in enumerate(vs.e):
        out[p] = np.roll(f[p], shift=(int(ex), int(ey)), axis=(0, 1))
    return out


# --- BGK -------------------------------------------------------------------------------------

def collide_bgk(f, tau, force=(0.0, 0.0), wall=False, vs=None):
    """BGK with shifted equilibrium (paper Eq. 1); force = a, the velocity gain per step.

    u* = u + tau a, T* = T + tau (1 - tau) |a|^2 / 2, f <- f - (f - f_eq(rho, u*, T*)) / tau.
    Where `wall` is true (rows next to a thermal wall) tau = 1, as in the regularized operator.
    """
    vs = _vs(vs)
    ax, ay = force
    if np.any(wall):
        tau = np.where(np.broadcast_to(wall, f.shape[1:]), 1.0, tau)
    rho, ux, uy, T = fields(f, vs)
    us_x, us_y = ux + tau * ax, uy + tau * ay
    Ts = T + 0.5 * tau * (1.0 - tau) * (np.square(ax) + np.square(ay))
    return f - (f - equilibrium(rho, us_x, us_y, Ts, vs)) / tau


# --- regularized: the literal two-stage recipe ---------------------------------------------

def hermite_tensors(vs=None):
    """Full Hermite tensors H0..H4 at xi_i (unit temperature), shapes (Q,), (Q,2), ... (Q,2,2,2,2).

    Written with the explicit symmetrised sums: H2 = xx - d, H3 = xxx - 3[x d],
    H4 = xxxx - 6[x x d] + 3[d d].
    """
    vs = _vs(vs)
    x = vs.xi
    d = np.eye(2)
    H0 = np.ones(vs.Q)
    H1 = x.copy()
    H2 = np.einsum("ia,ib->iab", x, x) - d[None]
    xxx = np.einsum("ia,ib,ic->iabc", x, x, x)
    xd = (np.einsum("ia,bc->iabc", x, d) + np.einsum("ib,ac->iabc", x, d)
          + np.einsum("ic,ab->iabc", x, d))
    H3 = xxx - xd
    xxxx = np.einsum("ia,ib,ic,id->iabcd", x, x, x, x)
    xxd = (np.einsum("ia,ib,cd->iabcd", x, x, d) + np.einsum("ia,ic,bd->iabcd", x, x, d)
           + np.einsum("ia,id,bc->iabcd", x, x, d) + np.einsum("ib,ic,ad->iabcd", x, x, d)
           + np.einsum("ib,id,ac->iabcd", x, x, d) + np.einsum("ic,id,ab->iabcd", x, x, d))
    dd = (np.einsum("ab,cd->abcd", d, d) + np.einsum("ac,bd->abcd", d, d)
          + np.einsum("ad,bc->abcd", d, d))
    H4 = xxxx - xxd + dd[None]
    return H0, H1, H2, H3, H4


def projections(f, vs=None):
    """A_n = sum_i f_i H_n(xi_i), n = 0..4, tensor indices first: A2 has shape (2, 2, *field)."""
    H = hermite_tensors(vs)
    specs = ["i,i...->...", "ia,i...->a...", "iab,i...->ab...", "iabc,i...->abc...",
             "iabcd,i...->abcd..."]
    return [np.einsum(s, h, f) for s, h in zip(specs, H)]


def equilibrium_moments(rho, ux, uy, T):
    """Maxwellian Hermite coefficients a^(0..4) of d2q37.md at (rho, u, theta = T)."""
    rho, ux, uy, T = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (rho, ux, uy, T)))
    nd = rho.ndim
    d = _lift(np.eye(2), nd)
    u = np.stack([ux, uy])                                   # (2, *field)
    t1 = T - 1.0
    uu = np.einsum("a...,b...->ab...", u, u)
    uuu = np.einsum("a...,b...,c...->abc...", u, u, u)
    uuuu = np.einsum("a...,b...,c...,d...->abcd...", u, u, u, u)
    a0 = rho
    a1 = rho * u
    a2 = rho * (uu + t1 * d)
    du = (np.einsum("ab...,c...->abc...", d, u) + np.einsum("ac...,b...->abc...", d, u)
          + np.einsum("bc...,a...->abc...", d, u))
    a3 = rho * (uuu + t1 * du)
    duu = (np.einsum("ab...,cd...->abcd...", d, uu) + np.einsum("ac...,bd...->abcd...", d, uu)
           + np.einsum("ad...,bc...->abcd...", d, uu) + np.einsum("bc...,ad...->abcd...", d, uu)
           + np.einsum("bd...,ac...->abcd...", d, uu) + np.einsum("cd...,ab...->abcd...", d, uu))
    dd = (np.einsum("ab...,cd...->abcd...", d, d) + np.einsum("ac...,bd...->abcd...", d, d)
          + np.einsum("ad...,bc...->abcd...", d, d))
    a4 = rho * (uuuu + t1 * duu + t1 ** 2 * dd)
    return [a0, a1, a2, a3, a4]


def _contract(H, A, n):
    """w_i-less sum A_n : H_n(xi_i) over all 2^n index tuples, shape (Q, *field)."""
    letters = "abcd"[:n]
    return np.einsum(f"i{letters},{letters}...->i...", H, A)


def collide_regularized(f, C1=1e-3, C2=1e-3, C3=0.5, force=(0.0, 0.0), wall=False, vs=None):
    """The reference production operator, literally in two stages (d2q37.md).

    1. f <- f + w_i [rho a.xi_i - (A2 - A2eq):H2/(2 tau1) - (A3 - A3eq):H3/(6 tau2)
       - (A4 - A4eq):H4/(24 tau3)] with the equilibrium at (rho, u*, T*),
       u* = u + tau1 a, T* = T + tau1 (1 - tau1) |a|^2 / 2;
    2. re-project: f_i = w_i sum_{n<=4} A_n(f):H_n(xi_i)/n!.
    tau1, tau2 = 1/2 + C/(rho T), tau3 = 1/2 + C3; all 1 where ``wall`` is true.
    Sets of Hermite order N < 4 relax and re-project only up to A_N (isothermal ones at T = 1).
    """
    vs = _vs(vs)
    N = _order(vs)
    f = np.asarray(f, dtype=float)
    nd = f.ndim - 1
    w = _col(vs.weights, nd)
    H = hermite_tensors(vs)
    ax, ay = force
    rho, ux, uy, T = fields(f, vs)
    wall = np.asarray(wall, dtype=bool)
    tau1 = np.where(wall, 1.0, 0.5 + C1 / (rho * T))
    tau2 = np.where(wall, 1.0, 0.5 + C2 / (rho * T))
    tau3 = np.where(wall, 1.0, 0.5 + C3 + 0.0 * rho)
    us_x, us_y = ux + tau1 * ax, uy + tau1 * ay
    Ts = T + 0.5 * tau1 * (1.0 - tau1) * (np.square(ax) + np.square(ay))
    if _isothermal(vs):
        Ts = np.ones_like(T)
    A = projections(f, vs)
    Aeq = equilibrium_moments(rho, us_x, us_y, Ts)
    force_term = rho * (_col(vs.xi[:, 0], nd) * ax + _col(vs.xi[:, 1], nd) * ay)
    relaxed = [(2, 2.0, tau1), (3, 6.0, tau2), (4, 24.0, tau3)]
    stage1 = f + w * force_term
    for n, fact, tau in relaxed[:N - 1]:
        stage1 = stage1 - w * _contract(H[n], A[n] - Aeq[n], n) / (fact * tau)
    B = projections(stage1, vs)
    out = H[0].reshape((-1,) + (1,) * nd) * B[0] + _contract(H[1], B[1], 1)
    for n, fact, _ in relaxed[:N - 1]:
        out = out + _contract(H[n], B[n], n) / fact
    return w * out


# --- driving ---------------------------------------------------------------------------------

_COLLIDE = {"bgk": collide_bgk, "regularized": collide_regularized}


def collide(f, operator="bgk", **params):
    """Dispatch to collide_bgk / collide_regularized by name."""
    try:
        op = _COLLIDE[operator]
    except KeyError:
        raise ValueError(f"unknown operator {operator!r}; choose one of {sorted(_COLLIDE)}") from None
    return op(f, **params)


def step(f, operator="bgk", **params):
    """One time step in the production order: collide(propagate(f))."""
    return collide(propagate(f, params.get("vs")), operator, **params)


def run(f, steps, operator="bgk", **params):
    """``steps`` calls of :func:`step`."""
    for _ in range(steps):
        f = step(f, operator, **params)
    return f


def force_from_gravity(g, vs=None):
    """Acceleration per step a = g dt with dt = 1/r (d2q37.md: F = rho g dt)."""
    vs = _vs(vs)
    dt = 1.0 / vs.r
    return (g[0] * dt, g[1] * dt)


# --- thermal walls (bottom y = 0 side, top y = LY-1 side), periodic in X -----------------------

def _wall_sets(vs, side, row):
    """Unknown populations at `row` from the wall (arriving from outside) and their opposites."""
    sign = 1 if side == "bottom" else -1
    unknown = [i for i, (_, ey) in enumerate(vs.velocities) if sign * ey >= row + 1]
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
    if not _isothermal(vs):
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
    if not _isothermal(vs):
        rows.append((half_c2[unknown], rho * (Tw + (ax ** 2 + ay ** 2) / 8) - EK))
    kept = []                                                # conditions independent on the unknown set
    for row in rows:
        if np.linalg.matrix_rank(np.array([r for r, _ in kept + [row]])) == len(kept) + 1:
            kept.append(row)
    B = np.array([r for r, _ in kept])
    targets = [t for _, t in kept]
    c = np.linalg.solve(B @ B.T, np.array(targets))          # moments B f = B B^T c = targets
    return B.T @ c, (L - N if one_shell else 0.0 * L)


def apply_walls(g, f_before, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), force=(0.0, 0.0), vs=None,
                scheme="lbgen"):
    """The bc step after propagate: rebuild the unknown populations of the H = max hop rows
    at each wall.

    `g` is the propagated state (modified in place and returned), `f_before` the state before
    propagate (the populations that left towards the wall).  scheme "lbgen": zero net mass
    flux per column, rows H-1 .. 1 first (each its own leaving mass, or free where it has
    exactly as many unknowns as conditions), row 0 takes the remaining mass.  scheme
    "reference" (the production code's): each row takes the mass L that left it (the row
    whose unknowns share one e_y through its rest population, see _reference_row), bare
    bracket, and the first bulk row's temperature plus |a|^2/8.
    """
    vs = _vs(vs)
    if scheme not in ("lbgen", "reference"):
        raise ValueError(f"unknown wall scheme {scheme!r}; choose lbgen or reference")
    ly = g.shape[2]
    rest = vs.velocities.index((0, 0)) if scheme == "reference" else None
    H = vs.max_hop
    n_conditions = _conditions(vs).shape[0]
    for side, T_wall, adiabatic_side in (("bottom", T_bottom, adiabatic[0]), ("top", T_top, adiabatic[1])):
        y_of = (lambda j: j) if side == "bottom" else (lambda j: ly - 1 - j)
        T_bulk = fields(g[:, :, y_of(H)], vs)[3]
        if scheme == "reference":
            T_bulk = T_bulk + (force[0] ** 2 + force[1] ** 2) / 8
            temps = wall_row_temperatures(T_wall, T_bulk, adiabatic_side, H)
            for j in range(H):
                unknown, leaving = _wall_sets(vs, side, j)
                known = [i for i in range(vs.Q) if i not in unknown]
                Tw = np.broadcast_to(np.asarray(temps[j], dtype=float), (g.shape[1],))
                new, to_rest = _reference_row(g[:, :, y_of(j)], known, unknown, f_before[leaving, :, y_of(j)].sum(0),
                                              Tw, force, vs)
                g[unknown, :, y_of(j)] = new
                g[rest, :, y_of(j)] += to_rest
            continue
        temps = wall_row_temperatures(T_wall, T_bulk, adiabatic_side, H)
        left = [f_before[_wall_sets(vs, side, j)[1], :, y_of(j)].sum(0) for j in range(H)]
        entered = 0.0
        for j in range(H - 1, -1, -1):
            unknown, _ = _wall_sets(vs, side, j)
            known = [i for i in range(vs.Q) if i not in unknown]
            col = g[:, :, y_of(j)]
            Tw = np.broadcast_to(np.asarray(temps[j], dtype=float), (g.shape[1],))
            if j > 0 and len(unknown) == n_conditions:
                N = None
            elif j == 0:
                N = sum(left) - entered
            else:
                N = left[j]
            new = _rebuild_row(col, known, unknown, N, Tw, force, vs)
            g[unknown, :, y_of(j)] = new
            entered = entered + new.sum(0)
    return g


def wall_mask(lx, ly, vs=None):
    """True on the H = max hop rows next to each wall (where the operators use tau = 1)."""
    H = _vs(vs).max_hop
    mask = np.zeros((lx, ly), dtype=bool)
    mask[:, :H] = True
    mask[:, ly - H:] = True
    return mask


def step_walls(f, operator="bgk", T_bottom=1.0, T_top=1.0, adiabatic=(False, False), scheme="lbgen", **params):
    """propagate -> bc (wall `scheme`) -> collide with thermal walls at the bottom and top."""
    vs = params.get("vs")
    g = apply_walls(propagate(f, vs), f, T_bottom, T_top, adiabatic, params.get("force", (0.0, 0.0)), vs, scheme)
    params = dict(params, wall=wall_mask(f.shape[1], f.shape[2], vs))
    return collide(g, operator, **params)
