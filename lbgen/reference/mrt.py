"""A plain NumPy oracle of the MRT operator (D2Q9, D3Q19, D3Q27), from the moment-space formulas.

Independent of lbgen's derivation on purpose (it imports nothing of lbgen; lbgen.model.mrt relaxes
Hermite coefficients and projects on exact-rational polynomials): here the moment matrix M is built
numerically and the collision is the textbook moment-space MRT with Guo's forcing,

    f' = f - M^-1 S (M f - M f^eq) + M^-1 (I - S/2) M F

(d'Humieres, Ginzburg, Krafczyk, Lallemand & Luo, Phil. Trans. R. Soc. A 360 (2002) 437, Eq. 2.1;
the forcing of Guo, Zheng & Shi, PRE 65 (2002) 046308 in moment space as in Guo & Zheng, Theor.
Comput. Fluid Dyn. 22 (2008) 465), f^eq the second-order equilibrium at the half-step velocity
u = (sum c f + rho a / 2) / rho and F_i = w_i rho [(c_i - u)/c_s^2 + (c_i.u) c_i/c_s^4].a.

The rows of M (lattice units), orthogonal under the weights (sum_i w_i p(c_i) q(c_i)): 1; c_x, c_y[, c_z];
the off-diagonal c_a c_b (rate 1/tau); the deviatoric diagonal c_x^2 - c_y^2 [and c_x^2 + c_y^2 - 2 c_z^2]
(1/tau); the trace |c|^2 - D/3 (omega_bulk); then the monomials c_x^i c_y^j [c_z^k] (exponents <= 2) of
degree 3 (omega3) and 4 and more (omega4), Gram-Schmidt orthogonalised under the weights against every
row before them, those the lattice cannot tell from earlier rows dropped (the Hermite-moment basis of
Coreixas, Chopard & Latt, PRE 100 (2019) 033305).  The ``-les`` variant takes 1/tau_eff of
trt_les.smagorinsky_tau.
"""
from __future__ import annotations

from itertools import product

import numpy as np

from lbgen.reference.trt_les import CS2, D2Q9_C, D2Q9_W, equilibrium, guo_source, moments, smagorinsky_tau


def basis(c, w):
    """(M, groups): the moment matrix (Q, Q) and each row's group: rho, j, shear, bulk, 3, 4."""
    c = np.asarray(c, dtype=float)
    w = np.asarray(w, dtype=float)
    D = c.shape[1]
    rows, groups = [np.ones(len(c))], ["rho"]
    rows += [c[:, k] for k in range(D)]
    groups += ["j"] * D
    for k in range(D):
        for j in range(k + 1, D):
            rows.append(c[:, k] * c[:, j])
            groups.append("shear")
    rows.append(c[:, 0] ** 2 - c[:, 1] ** 2)
    groups.append("shear")
    if D == 3:
        rows.append(c[:, 0] ** 2 + c[:, 1] ** 2 - 2 * c[:, 2] ** 2)
        groups.append("shear")
    rows.append((c ** 2).sum(axis=1) - D * CS2)
    groups.append("bulk")
    for e in sorted((e for e in product(range(3), repeat=D) if sum(e) >= 3), key=sum):
        v = np.prod(c ** np.array(e), axis=1)
        for p in rows:
            v = v - (w * v * p).sum() / (w * p * p).sum() * p
        if (w * v * v).sum() > 1e-12:
            rows.append(v)
            groups.append(3 if sum(e) == 3 else 4)
    M = np.array(rows)
    assert M.shape == (len(c), len(c)), f"{M.shape[0]} independent moments for {len(c)} populations"
    return M, groups


def collide(f, force=None, c=D2Q9_C, w=D2Q9_W, tau=0.8, omega_bulk=1.0, omega3=1.0, omega4=1.0, smagorinsky=None):
    """One MRT collision of every site (module doc); ``smagorinsky`` (C_s) given: the -les variant."""
    f = np.asarray(f, dtype=float)
    nd = f.ndim - 1
    D = np.asarray(c).shape[1]
    a = np.zeros(D) if force is None else np.asarray(force, dtype=float)
    a = a.reshape((D,) + (1,) * nd)
    if smagorinsky is not None:
        tau = smagorinsky_tau(f, tau, smagorinsky, a.reshape(-1), c, w)
    M, groups = basis(c, w)
    rho, u = moments(f, c)
    uh = u + 0.5 * a
    feq = equilibrium(rho, uh, c, w)
    F = guo_source(rho, uh, a, c, w)
    rate = {"rho": 0.0, "j": 0.0, "bulk": omega_bulk, 3: omega3, 4: omega4}
    S = np.array([np.broadcast_to(1.0 / tau if g == "shear" else rate[g], rho.shape) for g in groups])
    m, meq, mF = (np.einsum("qi,i...->q...", M, x) for x in (f, feq, F))
    Minv = np.linalg.inv(M)
    return f + np.einsum("iq,q...->i...", Minv, -S * (m - meq) + (1 - S / 2) * mF)
