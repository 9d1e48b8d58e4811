"""A plain NumPy oracle of the TRT operator and the Smagorinsky subgrid model, isothermal sets.

Independent of lbgen's derivation on purpose (it imports nothing of lbgen): written from the
papers' formulas, in **lattice units** (hops c_i, c_s^2 = 1/3, nu = (tau - 1/2)/3), for any
isothermal lattice given as hops ``c`` (Q, D) and weights ``w`` (Q,) -- D2Q9 here, D3Q19 and
D3Q27 through ``lbgen.reference.bulk3d``.  Populations ``f`` have shape (Q, *field); the force
``a`` is the velocity gain per step (D components), as in the other oracles.

* TRT (Ginzburg, Verhaeghe & d'Humieres, Commun. Comput. Phys. 3 (2008) 427, Eqs. 2-5):
  f^+-_i = (f_i +- f_ibar)/2 (ibar: c_ibar = -c_i), tau^- from the magic parameter
  Lambda = (tau^+ - 1/2)(tau^- - 1/2), and
  f_i' = f_i - (f^+_i - f^eq+_i)/tau^+ - (f^-_i - f^eq-_i)/tau^- + (1 - 1/(2 tau^+)) F^+_i + (1 - 1/(2 tau^-)) F^-_i
  with Guo's force (Guo, Zheng & Shi, PRE 65 (2002) 046308, Eqs. 20, 21, without its (1 - 1/(2 tau))
  factor, which TRT applies per part): F_i = w_i rho [(c_i - u)/c_s^2 + (c_i.u) c_i / c_s^4] . a,
  f^eq at u = sum c f / rho + a/2.
* Smagorinsky (Hou, Sterling, Chen & Doolen, Fields Inst. Commun. 6 (1996) 151; the closed form of
  Yu, Girimaji & Luo, J. Comput. Phys. 209 (2005) 599, Eqs. 12-14): Pi^neq = sum_i c_i c_i (f_i - f^eq_i)
  (f^eq at the half-step velocity), Q = sqrt(Pi^neq : Pi^neq), and
  tau_eff = (tau0 + sqrt(tau0^2 + 18 sqrt(2) C_s^2 Q / rho)) / 2;
  BGK (shifted equilibrium u* = u + tau_eff a, as bulk3d.collide_bgk), regularized (tau1 = 1/2 + C1/rho
  becomes tau_eff) and TRT (tau^+ = tau_eff, tau^- from Lambda and tau_eff) relax with it.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

CS2 = 1.0 / 3.0

#: D2Q9 in lbgen's population order (c_x descending, then c_y ascending), textbook weights
D2Q9_C = np.array([(1, -1), (1, 0), (1, 1), (0, -1), (0, 0), (0, 1), (-1, -1), (-1, 0), (-1, 1)])
D2Q9_W = np.array([1 / 36, 1 / 9, 1 / 36, 1 / 9, 4 / 9, 1 / 9, 1 / 36, 1 / 9, 1 / 36])


def _col(v, ndim):
    return np.asarray(v, dtype=float).reshape((-1,) + (1,) * ndim)


def _vec(a, ndim):
    a = np.asarray(a, dtype=float)
    return a.reshape((-1,) + (1,) * ndim) if a.ndim == 1 else a


def opposite(c) -> np.ndarray:
    """ibar for every i: the index of -c_i."""
    index = {tuple(v): i for i, v in enumerate(np.asarray(c).tolist())}
    return np.array([index[tuple(-x for x in v)] for v in np.asarray(c).tolist()])


def moments(f, c) -> Tuple[np.ndarray, np.ndarray]:
    f = np.asarray(f, dtype=float)
    rho = f.sum(axis=0)
    return rho, np.einsum("ia,i...->a...", np.asarray(c, dtype=float), f) / rho



def half_force_moments(f, c, force):
    """The moment-space oracles' start: (f as floats, the force per unit mass a shaped (D, 1, ...),
    rho, the velocity with half the force (sum c f + rho a / 2) / rho)."""
    f = np.asarray(f, dtype=float)
    D, nd = np.asarray(c).shape[1], f.ndim - 1
    a = (np.zeros(D) if force is None else np.asarray(force, dtype=float)).reshape((D,) + (1,) * nd)
    rho = f.sum(axis=0)
    return f, a, rho, (np.einsum("ia,i...->a...", np.asarray(c, dtype=float), f) + rho * a / 2) / rho

def equilibrium(rho, u, c, w):
    """w_i rho [1 + c.u/cs^2 + (c.u)^2/(2 cs^4) - u^2/(2 cs^2)]."""
    rho = np.asarray(rho, dtype=float)
    cu = np.einsum("ia,a...->i...", np.asarray(c, dtype=float), u)
    u2 = (u * u).sum(axis=0)
    return _col(w, rho.ndim) * rho * (1 + cu / CS2 + cu * cu / (2 * CS2 * CS2) - u2 / (2 * CS2))


def guo_source(rho, u, a, c, w):
    """F_i = w_i rho [(c_i - u)/cs^2 + (c_i.u) c_i/cs^4] . a (Guo et al. 2002, Eq. 20 without 1 - 1/(2 tau))."""
    cf = np.asarray(c, dtype=float)
    ca = np.einsum("ia,a...->i...", cf, a)
    cu = np.einsum("ia,a...->i...", cf, u)
    ua = (u * a).sum(axis=0)
    return _col(w, np.ndim(rho)) * rho * ((ca - ua) / CS2 + cu * ca / (CS2 * CS2))


def tau_minus(tau, magic):
    return 0.5 + magic / (tau - 0.5)


def smagorinsky_tau(f, tau0, smagorinsky, force, c, w):
    """tau_eff = (tau0 + sqrt(tau0^2 + 18 sqrt(2) C_s^2 Q / rho)) / 2 (Yu et al. 2005, Eq. 14)."""
    f = np.asarray(f, dtype=float)
    nd = f.ndim - 1
    rho, u = moments(f, c)
    uh = u + 0.5 * _vec(force, nd)
    cf = np.asarray(c, dtype=float)
    pi = np.einsum("ia,ib,i...->ab...", cf, cf, f - equilibrium(rho, uh, c, w))
    q = np.sqrt((pi * pi).sum(axis=(0, 1)))
    return 0.5 * (tau0 + np.sqrt(tau0 * tau0 + 18.0 * np.sqrt(2.0) * smagorinsky ** 2 * q / rho))


def collide_trt(f, tau, magic=3.0 / 16.0, force=None, c=D2Q9_C, w=D2Q9_W):
    """TRT with Guo's forcing split into its symmetric and antisymmetric parts (module doc)."""
    f = np.asarray(f, dtype=float)
    nd = f.ndim - 1
    D = np.asarray(c).shape[1]
    a = _vec(np.zeros(D) if force is None else force, nd)
    rho, u = moments(f, c)
    uh = u + 0.5 * a
    feq = equilibrium(rho, uh, c, w)
    F = guo_source(rho, uh, a, c, w)
    bar = opposite(c)
    tm = tau_minus(tau, magic)

    def sym(x):
        return 0.5 * (x + x[bar]), 0.5 * (x - x[bar])
    (fp, fm), (ep, em), (Fp, Fm) = sym(f), sym(feq), sym(F)
    return f - (fp - ep) / tau - (fm - em) / tm + (1 - 0.5 / tau) * Fp + (1 - 0.5 / tm) * Fm


def collide_bgk(f, tau, force=None, c=D2Q9_C, w=D2Q9_W):
    """BGK with the shifted equilibrium u* = u + tau a (tau may be a field)."""
    f = np.asarray(f, dtype=float)
    D = np.asarray(c).shape[1]
    rho, u = moments(f, c)
    us = u + tau * _vec(np.zeros(D) if force is None else force, f.ndim - 1)
    return f - (f - equilibrium(rho, us, c, w)) / tau


def collide_regularized(f, tau, force=None, c=D2Q9_C, w=D2Q9_W):
    """The second-order regularized operator of bulk3d.collide_regularized with tau given (may be a field)."""
    f = np.asarray(f, dtype=float)
    nd = f.ndim - 1
    D = np.asarray(c).shape[1]
    rho, u = moments(f, c)
    a = _vec(np.zeros(D) if force is None else force, nd)
    us = u + tau * a
    cf = np.asarray(c, dtype=float)
    Pi = np.einsum("ia,ib,i...->ab...", cf, cf, f)
    eye = np.eye(D).reshape((D, D) + (1,) * nd)
    usus = np.einsum("a...,b...->ab...", us, us)
    S = rho * usus + (1.0 - 1.0 / tau) * (Pi - rho * CS2 * eye - rho * usus)
    Qi = np.einsum("ia,ib->iab", cf, cf) - CS2 * np.eye(D)[None]
    j = rho * (u + a)
    out = rho + np.einsum("ia,a...->i...", cf, j) / CS2 + np.einsum("iab,ab...->i...", Qi, S) / (2 * CS2 * CS2)
    return _col(w, nd) * out


def collide(f, operator, force=None, c=D2Q9_C, w=D2Q9_W, tau=0.8, magic=3.0 / 16.0, C1=1e-3, smagorinsky=0.0):
    """Dispatch by lbgen's operator names: trt, bgk-les, regularized-les, trt-les (and bgk, regularized)."""
    f = np.asarray(f, dtype=float)
    D = np.asarray(c).shape[1]
    force = np.zeros(D) if force is None else force
    base, les = operator.replace("-les", ""), operator.endswith("-les")
    tau0 = 0.5 + C1 / moments(f, c)[0] if base == "regularized" else tau
    t = smagorinsky_tau(f, tau0, smagorinsky, force, c, w) if les else tau0
    if base == "trt":
        return collide_trt(f, t, magic, force, c, w)
    if base == "bgk":
        return collide_bgk(f, t, force, c, w)
    if base == "regularized":
        return collide_regularized(f, t, force, c, w)
    raise ValueError(f"unknown operator {operator!r}")


def stream(f, c):
    """Periodic streaming: f_i(x + c_i) <- f_i(x)."""
    out = np.empty_like(f)
    for i, ci in enumerate(np.asarray(c).tolist()):
        out[i] = np.roll(f[i], shift=tuple(ci), axis=tuple(range(len(ci))))
    return out
