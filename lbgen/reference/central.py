"""A plain NumPy oracle of the central-moment MRT (D2Q9, D3Q19, D3Q27), written from the papers' formulas.

Independent of lbgen's derivation on purpose (lbgen.model.central runs the chimera transform on f - w and
adds the change of the central moments to f): this file imports nothing of lbgen's model, builds each
site's transform matrix T_alpha,i = prod_k (c_ik - u_k)^alpha_k from its definition, relaxes the central
moments to their post-collision values and solves T f' = kappa' site by site (numpy.linalg.solve).
Lattice units: hops c (Q, D), c_s^2 = 1/3; populations f of shape (Q, *field); force a = velocity gain per step.

* basis: exponents alpha in {0, 1, 2}^D with at most as many non-zero entries as the hops have non-zero
  components (De Rosis, PRE 95 (2017) 013310 for D2Q9/D3Q27; on D3Q19 the same rule gives x y, x^2 y, x y^2,
  x^2 y^2 per pair of axes);
* rho = sum f, F = rho a, u = (sum c f + F/2)/rho;
* equilibrium: kappa_eq = rho (1/3)^n, n exponents 2 and none 1, else 0 (the continuous Maxwellian);
* source (Fei & Luo, PRE 96 (2017) 053307; Fei, Luo & Li, PRE 97 (2018) 053309): sigma_alpha = F_k (1/3)^n
  for a single exponent 1 (axis k) and n exponents 2, else 0;
* post-collision: kappa'_0 = rho, kappa'_1 = kappa_1 + F (= +F/2); off-diagonal second order
  (1 - 1/tau) kappa; diagonal: deviatoric part of kappa - kappa_eq with 1/tau, trace with omega_bulk;
  third order kappa - omega3 (kappa - kappa_eq) + (1 - omega3/2) sigma, orders 4+ the same with omega4.
"""
from __future__ import annotations

from itertools import product

import numpy as np

from lbgen.reference.trt_les import D2Q9_C, D2Q9_W, half_force_moments  # noqa: F401  (the lattice's plain data)

CS2 = 1.0 / 3.0


def basis(c):
    """The exponents (tuples) of the central moments of the hops c, ordered by total order."""
    c = np.asarray(c)
    D = c.shape[1]
    width = int((c != 0).sum(axis=1).max())
    out = [e for e in product(range(3), repeat=D) if sum(1 for x in e if x) <= width]
    out.sort(key=sum)
    assert len(out) == len(c), f"{len(out)} central moments for {len(c)} populations"
    return out


def collide(f, force=None, c=D2Q9_C, w=D2Q9_W, tau=0.8, omega_bulk=1.0, omega3=1.0, omega4=1.0):
    """One central-moment MRT collision of every site (the module doc); ``w`` is not used (no weights
    enter: the equilibrium is the Maxwellian's central moments)."""
    f, a, rho, u = half_force_moments(f, c, force)
    c = np.asarray(c, dtype=float)
    Q, D = c.shape
    nd = f.ndim - 1
    F = rho * a
    exps = basis(c)
    # T[alpha, i] per site: prod_k (c_ik - u_k)^alpha_k, shape (Q, Q, *field)
    rel = [c[:, k].reshape((Q,) + (1,) * nd) - u[k][None] for k in range(D)]
    T = np.array([np.prod([rel[k] ** e[k] for k in range(D)], axis=0) for e in exps])
    kappa = np.einsum("aq...,q...->a...", T, f)
    post = np.empty_like(kappa)
    om1 = 1.0 / tau
    index = {e: n for n, e in enumerate(exps)}
    unit2 = [tuple(2 if j == k else 0 for j in range(D)) for k in range(D)]
    trace = sum(kappa[index[e]] - rho * CS2 for e in unit2) / D
    for e, n in index.items():
        order = sum(e)
        twos = sum(1 for x in e if x == 2)
        ones = [k for k, x in enumerate(e) if x == 1]
        eq = rho * CS2 ** twos if not ones else 0.0
        sigma = F[ones[0]] * CS2 ** twos if len(ones) == 1 else 0.0
        if order == 0:
            post[n] = rho
        elif order == 1:
            post[n] = kappa[n] + F[ones[0]]
        elif e in unit2:
            neq = kappa[n] - eq
            post[n] = kappa[n] - om1 * (neq - trace) - omega_bulk * trace
        elif order == 2:
            post[n] = (1 - om1) * kappa[n]
        else:
            rate = omega3 if order == 3 else omega4
            post[n] = kappa[n] - rate * (kappa[n] - eq) + (1 - rate / 2) * sigma
    # solve T f' = kappa' site by site
    Tm = np.moveaxis(T.reshape(Q, Q, -1), -1, 0)
    rhs = np.moveaxis(post.reshape(Q, -1), -1, 0)[..., None]
    out = np.linalg.solve(Tm, rhs)[..., 0]
    return np.moveaxis(out, 0, -1).reshape(f.shape)
