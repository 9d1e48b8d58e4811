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

from lbgen.model.catalog import DEFAULT_VELOCITY_SET
from lbgen.model.velocity_set import velocity_set

__all__ = ["equilibrium", "fields", "physical_fields", "physical_equilibrium", "propagate", "collide_bgk",
           "collide_regularized", "collide", "step", "run", "force_from_gravity", "hermite_tensors",
           "projections", "equilibrium_moments", "energy"]


def set_of(vs):
    return velocity_set(DEFAULT_VELOCITY_SET) if vs is None else vs


def _order(vs) -> int:
    """Hermite order the quadrature supports: moments up to degree 2N must be exact."""
    return (vs.degree - 1) // 2


def isothermal(vs) -> bool:
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
    vs = set_of(vs)
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
    theta = np.ones_like(T) if isothermal(vs) else T
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
    vs = set_of(vs)
    f = np.asarray(f, dtype=float)
    nd = f.ndim - 1
    xx, xy = _col(vs.xi[:, 0], nd), _col(vs.xi[:, 1], nd)
    rho = f.sum(axis=0)
    ux = (xx * f).sum(axis=0) / rho
    uy = (xy * f).sum(axis=0) / rho
    if isothermal(vs):
        return rho, ux, uy, np.ones_like(rho)     # isothermal sets: T = 1 by construction
    T = (0.5 * ((xx - ux) ** 2 + (xy - uy) ** 2) * f).sum(axis=0) / rho
    return rho, ux, uy, T


def physical_fields(f, force=(0.0, 0.0), vs=None):
    """The physical (half-step) fields of post-collision populations f under the force
    a = (ax, ay) per unit mass per step, typed from their definition (docs/physics.md),
    not from the model's code: the mean of the moments before and after the collision that
    produced f.  The collision adds a to u and keeps T (its energy gain is exactly
    rho (u.a + |a|^2/2)), so

        rho_H = rho,  u_H = u - a/2,  T_H = (E_before + E_after) / (2 rho) - |u_H|^2 / 2 = T + |a|^2 / 8

    with (rho, u, T) = ``fields(f)`` and E = rho (T + |u|^2/2); isothermal sets report T = 1."""
    vs = set_of(vs)
    ax, ay = force
    rho, ux, uy, T = fields(f, vs)
    if isothermal(vs):
        return rho, ux - 0.5 * ax, uy - 0.5 * ay, T
    return rho, ux - 0.5 * ax, uy - 0.5 * ay, T + (ax * ax + ay * ay) / 8.0


def physical_equilibrium(rho, ux, uy, T, force=(0.0, 0.0), vs=None):
    """The equilibrium populations whose ``physical_fields`` are (rho, ux, uy, T): f_eq at
    u + a/2 and T - |a|^2/8 (isothermal sets: theta = 1)."""
    ax, ay = force
    shift = 0.0 if isothermal(set_of(vs)) else (ax * ax + ay * ay) / 8.0
    return equilibrium(rho, np.asarray(ux) + 0.5 * ax, np.asarray(uy) + 0.5 * ay, np.asarray(T) - shift, vs)


def energy(f, vs=None):
    """Total energy density sum_i |xi_i|^2 f_i / 2 per site (= rho (T + |u|^2/2))."""
    vs = set_of(vs)
    f = np.asarray(f, dtype=float)
    c2 = _col((vs.xi ** 2).sum(axis=1), f.ndim - 1)
    return 0.5 * (c2 * f).sum(axis=0)


# --- streaming -------------------------------------------------------------------------------

def propagate(f, vs=None):
    """Pull scheme, periodic: f'_p(x, y) = f_p(x - e_px, y - e_py) (np.roll by +e_p)."""
    vs = set_of(vs)
    out = np.empty_like(f)
    for p, (ex, ey) in enumerate(vs.e):
        out[p] = np.roll(f[p], shift=(int(ex), int(ey)), axis=(0, 1))
    return out


# --- BGK -------------------------------------------------------------------------------------

def collide_bgk(f, tau, force=(0.0, 0.0), wall=False, vs=None, tau_wall=1.0):
    """BGK with shifted equilibrium (paper Eq. 1); force = a, the velocity gain per step.

    u* = u + tau a, T* = T + tau (1 - tau) |a|^2 / 2, f <- f - (f - f_eq(rho, u*, T*)) / tau.
    Where `wall` is true (rows next to a thermal wall) tau = tau_wall (default 1), as in the
    regularized operator.
    """
    vs = set_of(vs)
    ax, ay = force
    if np.any(wall):
        tau = np.where(np.broadcast_to(wall, f.shape[1:]), float(tau_wall), tau)
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
    vs = set_of(vs)
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


def collide_regularized(f, C1=1e-3, C2=1e-3, C3=0.5, force=(0.0, 0.0), wall=False, vs=None, tau_wall=1.0):
    """The reference production operator, literally in two stages (d2q37.md).

    1. f <- f + w_i [rho a.xi_i - (A2 - A2eq):H2/(2 tau1) - (A3 - A3eq):H3/(6 tau2)
       - (A4 - A4eq):H4/(24 tau3)] with the equilibrium at (rho, u*, T*),
       u* = u + tau1 a, T* = T + tau1 (1 - tau1) |a|^2 / 2;
    2. re-project: f_i = w_i sum_{n<=4} A_n(f):H_n(xi_i)/n!.
    tau1, tau2 = 1/2 + C/(rho T), tau3 = 1/2 + C3; all tau_wall (default 1) where ``wall`` is true.
    Sets of Hermite order N < 4 relax and re-project only up to A_N (isothermal ones at T = 1).
    """
    vs = set_of(vs)
    N = _order(vs)
    f = np.asarray(f, dtype=float)
    nd = f.ndim - 1
    w = _col(vs.weights, nd)
    H = hermite_tensors(vs)
    ax, ay = force
    rho, ux, uy, T = fields(f, vs)
    wall = np.asarray(wall, dtype=bool)
    tw = float(tau_wall)
    tau1 = np.where(wall, tw, 0.5 + C1 / (rho * T))
    tau2 = np.where(wall, tw, 0.5 + C2 / (rho * T))
    tau3 = np.where(wall, tw, 0.5 + C3 + 0.0 * rho)
    us_x, us_y = ux + tau1 * ax, uy + tau1 * ay
    Ts = T + 0.5 * tau1 * (1.0 - tau1) * (np.square(ax) + np.square(ay))
    if isothermal(vs):
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

def subgrid_tau(f, tau0, smagorinsky, force=(0.0, 0.0), vs=None):
    """The Smagorinsky relaxation time (Hou et al. 1996; closed form: Yu, Girimaji & Luo, J. Comput.
    Phys. 209 (2005) 599, Eq. 14) with the lattice sound speed c_s^2 = T / r^2 of any set:
    tau_eff = (tau0 + sqrt(tau0^2 + 2 sqrt(2) C_s^2 |Pi| / (rho c_s^4))) / 2, Pi = sum_i c_i c_i (f_i - f_eq,i)
    in lattice units (c = xi / r): (A_2 - A_2,eq) / r^2 with A_2,eq at the half-step velocity u + a/2."""
    vs = set_of(vs)
    rho, ux, uy, T = fields(f, vs)
    r2 = float(vs.r) ** 2
    pi = (projections(f, vs)[2] - equilibrium_moments(rho, ux + 0.5 * force[0], uy + 0.5 * force[1], T)[2]) / r2
    cs2 = T / r2
    norm = np.sqrt((pi * pi).sum(axis=(0, 1)))
    return 0.5 * (tau0 + np.sqrt(tau0 * tau0 + 2.0 * np.sqrt(2.0) * smagorinsky ** 2 * norm / (rho * cs2 * cs2)))


def _isothermal_operator(name: str):
    """TRT and the Smagorinsky operators: on an isothermal set those of ``lbgen.reference.trt_les``
    (written from their papers, in lattice units: f as is, the force a / r), periodic; on a thermal
    set (bgk-les, regularized-les) this module's BGK and regularized operators with the relaxation
    time of ``subgrid_tau`` (tau_wall on wall rows, as the kernels)."""
    def collide_op(f, force=(0.0, 0.0), vs=None, wall=False, tau_wall=1.0, **params):
        from lbgen.reference import trt_les
        vs = set_of(vs)
        base = name.replace("-les", "")
        if not isothermal(vs) and base != "trt":
            rho, _, _, T = fields(f, vs)
            tau0 = params["tau"] if base == "bgk" else 0.5 + params["C1"] / (rho * T)
            tau = subgrid_tau(f, tau0, params["smagorinsky"], force, vs)
            if base == "bgk":
                return collide_bgk(f, tau, force, wall, vs, tau_wall)
            return collide_regularized(f, (tau - 0.5) * rho * T, params["C2"], params["C3"], force, wall, vs, tau_wall)
        if not isothermal(vs) or np.any(wall):
            raise ValueError(f"the oracle's {name} operator is for the isothermal sets without thermal walls, "
                             f"not {vs.name}{' with walls' if np.any(wall) else ''}")
        keep = {k: v for k, v in params.items() if k in ("tau", "magic", "C1", "smagorinsky")}
        c = np.rint(np.asarray(vs.e, dtype=float)).astype(int)
        return trt_les.collide(f, name, force=np.asarray(force, dtype=float) / vs.r, c=c,
                               w=np.asarray(vs.weights, dtype=float), **keep)
    collide_op.__name__ = f"collide_{name.replace('-', '_')}"
    return collide_op


def collide_cumulant(f, force=(0.0, 0.0), vs=None, wall=False, tau_wall=1.0, **params):
    """The cumulant operator of ``lbgen.reference.cumulant`` (Geier et al. 2015; cumulant-les: with smagorinsky)
    on D2Q9, periodic
    (in lattice units: f as is, the force a / r)."""
    from lbgen.reference import cumulant
    vs = set_of(vs)
    if vs.name.lower() != "d2q9" or np.any(wall):
        raise ValueError(f"the oracle's cumulant operator is for D2Q9 without thermal walls, not {vs.name}"
                         f"{' with walls' if np.any(wall) else ''}")
    keep = {k: v for k, v in params.items() if k in ("tau", "omega_bulk", "omega3", "omega4", "cumulant_limiter",
                                                         "smagorinsky")}
    c = np.rint(np.asarray(vs.e, dtype=float)).astype(int)
    return cumulant.collide(f, force=np.asarray(force, dtype=float) / vs.r, c=c,
                            w=np.asarray(vs.weights, dtype=float), **keep)


def _mrt(name: str, oracle: str = "mrt"):
    """The MRT operator of ``lbgen.reference.mrt`` (``oracle``: or the central-moment MRT of
    ``lbgen.reference.central``, or the KBC operator of ``lbgen.reference.kbc``) on D2Q9 (lattice units: f as is, the force a / r),
    periodic; ``-les``: with the Smagorinsky relaxation time."""
    def collide_op(f, force=(0.0, 0.0), vs=None, wall=False, tau_wall=1.0, **params):
        from importlib import import_module
        mrt = import_module(f"lbgen.reference.{oracle}")
        vs = set_of(vs)
        if not isothermal(vs) or np.any(wall):
            raise ValueError(f"the oracle's {name} operator is for the isothermal sets without thermal walls, "
                             f"not {vs.name}{' with walls' if np.any(wall) else ''}")
        keep = {k: v for k, v in params.items() if k in ("tau", "omega_bulk", "omega3", "omega4", "smagorinsky")}
        c = np.rint(np.asarray(vs.e, dtype=float)).astype(int)
        return mrt.collide(f, force=np.asarray(force, dtype=float) / vs.r, c=c,
                           w=np.asarray(vs.weights, dtype=float), **keep)
    collide_op.__name__ = f"collide_{name.replace('-', '_')}"
    return collide_op


_COLLIDE = {"bgk": collide_bgk, "regularized": collide_regularized, "cumulant": collide_cumulant,
            "cumulant-les": collide_cumulant,
            "mrt": _mrt("mrt"), "mrt-les": _mrt("mrt-les"), "central": _mrt("central", "central"), "kbc": _mrt("kbc", "kbc"),
            **{n: _isothermal_operator(n) for n in ("trt", "bgk-les", "regularized-les", "trt-les")}}


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
    vs = set_of(vs)
    dt = 1.0 / vs.r
    return (g[0] * dt, g[1] * dt)
