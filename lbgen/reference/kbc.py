"""A plain NumPy oracle of the entropic KBC-N4 operator (D2Q9, D3Q27), written from the papers' formulas.

Karlin, Boesch & Chikatamarla, PRE 90 (2014) 031302(R) (the split f = k + s + h, the post-collision state
k + (1 - 2 beta) s + 2 beta s_eq + (1 - beta gamma) h + beta gamma h_eq and the stabiliser gamma, their Eq. 12);
Boesch, Chikatamarla & Karlin, PRE 92 (2015) 043309 (the N4 grouping: s = the deviatoric stress, its trace and
the third-order moments; the entropic scalar product <X|Y> = sum_i X_i Y_i / f_eq,i).
Independent of lbgen's derivation on purpose (lbgen.model.kbc works in raw moments with the chimera
transform on f - w): this file imports nothing of lbgen's model, builds the moment matrix
M[alpha, i] = prod_k c_ik^alpha_k of the hops, projects on each part with M^-1 diag(mask) M (numpy.linalg),
and evaluates the equilibrium and Guo's source population by population.
Lattice units: hops c (Q, D), c_s^2 = 1/3; populations f of shape (Q, *field); force a = velocity gain per step.

* rho = sum f, F = rho a, u = (sum c f + F/2)/rho;
* f_eq,i = rho prod_k Psi(c_ik, u_k), Psi(0, u) = 2/3 - u^2, Psi(+-1, u) = (1/3 + u^2 +- u)/2 (product form);
* Guo's source (Guo, Zheng & Shi, PRE 65 (2002) 046308) S_i = sum_k a_k d f_eq,i / d u_k;
* with fbar = f + S/2: Delta_s = s(fbar) - s(f_eq), Delta_h = h(fbar) - h(f_eq);
* gamma = 1/beta - (2 - 1/beta) <Delta_s|Delta_h>/<Delta_h|Delta_h> (the ratio 0 where Delta_h = 0),
  beta = 1/(2 tau);
* f' = f + S - beta (2 Delta_s + gamma Delta_h).
"""
from __future__ import annotations

from itertools import product

import numpy as np

from lbgen.reference.trt_les import D2Q9_C, D2Q9_W, half_force_moments  # noqa: F401  (the lattice's plain data)


def _psi(c, u):
    return np.where(c == 0, 2.0 / 3.0 - u ** 2, (1.0 / 3.0 + u ** 2 + c * u) / 2)


def _dpsi(c, u):
    return np.where(c == 0, -2.0 * u, (2.0 * u + c) / 2)


def parts(c):
    """The moment matrix M (rows: exponents in {0, 1, 2}^D) and the projectors on k (orders 0, 1), s (orders 2,
    3: KBC-N4) and h (orders 4+), each M^-1 diag(mask) M."""
    c = np.asarray(c, dtype=float)
    Q, D = c.shape
    exps = list(product(range(3), repeat=D))
    M = np.array([[np.prod([ci[k] ** e[k] for k in range(D)]) for ci in c] for e in exps])
    Minv = np.linalg.inv(M)
    order = np.array([sum(e) for e in exps])
    project = {name: Minv @ np.diag(mask.astype(float)) @ M
               for name, mask in (("k", order <= 1), ("s", (order >= 2) & (order <= 3)), ("h", order >= 4))}
    return M, project


def equilibrium(rho, u, c):
    """The product-form equilibrium, shape (Q, *field)."""
    c = np.asarray(c, dtype=float)
    out = np.ones((len(c),) + np.shape(rho)) * rho
    for k in range(c.shape[1]):
        out = out * _psi(c[:, k].reshape((-1,) + (1,) * np.ndim(rho)), u[k][None])
    return out


def collide(f, force=None, c=D2Q9_C, w=D2Q9_W, tau=0.8, gamma=False):
    """One KBC-N4 collision of every site (the module doc); ``w`` is not used (the equilibrium is the
    product form); ``gamma``: also return the stabiliser of every site."""
    f, a, rho, u = half_force_moments(f, c, force)
    c = np.asarray(c, dtype=float)
    Q, D = c.shape
    nd = f.ndim - 1
    feq = equilibrium(rho, u, c)
    cs = [c[:, k].reshape((Q,) + (1,) * nd) for k in range(D)]
    S = np.zeros_like(f)
    for k in range(D):
        term = rho * a[k] * _dpsi(cs[k], u[k][None])
        for j in range(D):
            if j != k:
                term = term * _psi(cs[j], u[j][None])
        S += term
    _, project = parts(c)
    fbar = f + S / 2
    ds = np.einsum("ij,j...->i...", project["s"], fbar - feq)
    dh = np.einsum("ij,j...->i...", project["h"], fbar - feq)
    beta = 1.0 / (2.0 * tau)
    sh = (ds * dh / feq).sum(axis=0)
    hh = (dh * dh / feq).sum(axis=0)
    ratio = np.divide(sh, hh, out=np.zeros_like(sh), where=hh > 0)
    g = 1.0 / beta - (2.0 - 1.0 / beta) * ratio
    post = f + S - beta * (2.0 * ds + g * dh)
    return (post, g) if gamma else post
