"""A plain NumPy oracle of the cumulant operator (D2Q9 and D3Q27), written from the paper's formulas.

Geier, Schoenherr, Pasquali & Krafczyk, "The cumulant lattice Boltzmann equation in three
dimensions: theory and validation", Comput. Math. Appl. 70 (2015) 507.  Independent of lbgen's
derivation on purpose (lbgen.model.cumulant runs the chimera transform and derives the cumulants
from the logarithm of the moment generating series; this file imports nothing of lbgen, computes
the central moments from their definition, types the paper's cumulant formulas, and goes back
through raw moments and the inverse of the moment matrix).  Lattice units: hops c (Q, D),
weights w, c_s^2 = 1/3; populations f of shape (Q, *field); the force a is the velocity gain per step.

1. rho = sum f, u = (sum c f + rho a/2) / rho (the forcing of Geier et al.: the first central
   moments are -rho a/2 before the collision and +rho a/2 after it);
2. kappa_abc = sum_i f_i (c_x - u_x)^a (c_y - u_y)^b (c_z - u_z)^c;
3. the density-weighted cumulants (their Eqs. for C_211, C_220, C_122, C_222 and permutations):
   orders 2 and 3 equal the central moments, orders 4-6 below (``_CORRECTIONS``);
4. relaxation: C_110 etc. with omega_1 = 1/tau, C_200 - C_020, C_200 - C_002 with omega_1 and the
   trace towards rho with omega_bulk, each with the Galilean-invariance correction
   -3 rho (1 - omega/2)(u_x^2 D_x u -+ ...), the velocity derivatives from the second-order cumulants
   (rho D_x u = -omega_1/2 (2 C_200 - C_020 - C_002) - omega_bulk/2 (C_200 + C_020 + C_002 - rho),
   rho D_y u = rho D_x u + 3 omega_1/2 (C_200 - C_020), ...); third order times 1 - omega3, orders
   4-6 times 1 - omega4 (equilibria 0).  D2Q9: the same with x, y (trace towards 2 rho/3).  The limiter of
   Geier, Pasquali & Schoenherr, J. Comput. Phys. 348 (2017) 862 (lambda > 0): the third-order
   combinations C_120 +- C_102, C_210 +- C_012, C_201 +- C_021, C_111 (2D: C_21, C_12) relax with
   omega3 + (1 - omega3) |x| / (rho lambda + |x|) each;
5. back: the same formulas solved for kappa (post-collision kappa of lower order on the right), raw
   moments by the binomial theorem, populations by the inverse of the moment matrix.
"""
from __future__ import annotations

from itertools import product

import numpy as np

from lbgen.reference.trt_les import D2Q9_C, D2Q9_W, half_force_moments, smagorinsky_tau, stream  # noqa: F401  (the lattices' plain data)


def d3q27():
    """D3Q27 hops and weights (products of the 1D weights 1/6, 2/3, 1/6), any order of populations."""
    c = np.array(list(product((-1, 0, 1), repeat=3)))
    w1 = {-1: 1 / 6, 0: 2 / 3, 1: 1 / 6}
    return c, np.array([w1[a] * w1[b] * w1[g] for a, b, g in c])


def _key(*e):
    return "".join(map(str, e))


def _corrections_3d(k, rho):
    """{cumulant name: kappa_name - C_name} of orders 4-6 in 3D, from the (central) moments k."""
    out = {}
    for a, b_, c_ in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):      # x, y, z cyclic
        def K(ex):
            e = [0, 0, 0]
            for axis, n in zip((a, b_, c_), ex):
                e[axis] = n
            return k[_key(*e)]

        def name(ex):
            e = [0, 0, 0]
            for axis, n in zip((a, b_, c_), ex):
                e[axis] = n
            return _key(*e)
        # C_211 = k_211 - (k_200 k_011 + 2 k_110 k_101)/rho
        out[name((2, 1, 1))] = (K((2, 0, 0)) * K((0, 1, 1)) + 2 * K((1, 1, 0)) * K((1, 0, 1))) / rho
        # C_220 = k_220 - (k_200 k_020 + 2 k_110^2)/rho
        out[name((2, 2, 0))] = (K((2, 0, 0)) * K((0, 2, 0)) + 2 * K((1, 1, 0)) ** 2) / rho
        # C_122 = k_122 - (k_002 k_120 + k_020 k_102 + 4 k_011 k_111 + 2 (k_101 k_021 + k_110 k_012))/rho
        out[name((1, 2, 2))] = (K((0, 0, 2)) * K((1, 2, 0)) + K((0, 2, 0)) * K((1, 0, 2)) + 4 * K((0, 1, 1)) * K((1, 1, 1))
                                + 2 * (K((1, 0, 1)) * K((0, 2, 1)) + K((1, 1, 0)) * K((0, 1, 2)))) / rho
    two = (k["200"] * k["022"] + k["020"] * k["202"] + k["002"] * k["220"]
           + 4 * (k["110"] * k["112"] + k["101"] * k["121"] + k["011"] * k["211"]) + 4 * k["111"] ** 2
           + 2 * (k["210"] * k["012"] + k["201"] * k["021"] + k["120"] * k["102"]))
    three = (16 * k["110"] * k["101"] * k["011"] + 4 * (k["101"] ** 2 * k["020"] + k["011"] ** 2 * k["200"]
                                                        + k["110"] ** 2 * k["002"]) + 2 * k["200"] * k["020"] * k["002"])
    out["222"] = two / rho - three / rho ** 2
    return out


def _corrections_2d(k, rho):
    return {"22": (k["20"] * k["02"] + 2 * k["11"] ** 2) / rho}


def _names(D):
    return [_key(*e) for e in product(range(3), repeat=D)]


def _order(name):
    return sum(map(int, name))


def _limited_rate(omega, x, rho, lam):
    """Geier, Pasquali & Schoenherr, J. Comput. Phys. 348 (2017) 862, Eqs. 116-123:
    omega_lambda = omega + (1 - omega) |x| / (rho lambda + |x|)."""
    return omega + (1 - omega) * np.abs(x) / (rho * lam + np.abs(x))


#: the third-order combinations the limiter takes: (C_a + C_b, C_a - C_b) pairs and single ones
_PAIRS_3D = (("120", "102"), ("210", "012"), ("201", "021"))
_SINGLE = {3: ("111",), 2: ("21", "12")}


def _third_order_post(C, rho, omega3, lam, D):
    """{name: post-collision third-order cumulant}: (1 - omega3) C, or with the limiter (lam > 0) each
    combination x = C_a + C_b, C_a - C_b (3D) and C_111 (2D: C_21, C_12) times 1 - omega_lambda(x)."""
    if not lam:
        return {n: (1 - omega3) * C[n] for n in C if _order(n) == 3}
    post = {n: (1 - _limited_rate(omega3, C[n], rho, lam)) * C[n] for n in _SINGLE[D]}
    for a, b_ in (_PAIRS_3D if D == 3 else ()):
        plus, minus = C[a] + C[b_], C[a] - C[b_]
        plus = (1 - _limited_rate(omega3, plus, rho, lam)) * plus
        minus = (1 - _limited_rate(omega3, minus, rho, lam)) * minus
        post[a], post[b_] = (plus + minus) / 2, (plus - minus) / 2
    return post


def collide(f, force=None, c=D2Q9_C, w=D2Q9_W, tau=0.8, omega_bulk=1.0, omega3=1.0, omega4=1.0,
            cumulant_limiter=0.0, smagorinsky=None):
    """One cumulant collision of every site (the module doc); ``cumulant_limiter`` lambda > 0: the limiter of
    Geier, Pasquali & Schoenherr 2017 on the third-order cumulants (``_third_order_post``); ``smagorinsky``
    (C_s) given: ``cumulant-les``, the shear rate 1/tau_eff of trt_les.smagorinsky_tau (Yu et al. 2005)."""
    if smagorinsky is not None:
        D_ = np.asarray(c).shape[1]
        a_ = np.zeros(D_) if force is None else np.asarray(force, dtype=float)
        tau = smagorinsky_tau(f, tau, smagorinsky, a_, c, w)
    f, a, rho, u = half_force_moments(f, c, force)
    c = np.asarray(c)
    D = c.shape[1]
    nd = f.ndim - 1
    names = _names(D)
    rel = [(c[:, k].reshape((-1,) + (1,) * nd) - u[k][None]) for k in range(D)]
    k = {n: (f * np.prod([rel[j] ** int(n[j]) for j in range(D)], axis=0)).sum(axis=0) for n in names}
    corrections = _corrections_3d if D == 3 else _corrections_2d
    C = dict(k)
    for n, v in corrections(k, rho).items():
        C[n] = k[n] - v
    om1 = 1.0 / tau
    axes = range(D)
    diag = [C[_key(*(2 if j == i else 0 for j in axes))] for i in axes]
    trace = sum(diag)
    diff = [diag[0] - diag[i] for i in axes]            # diff[0] = 0
    # rho D_x u, rho D_i u (Geier et al. 2015, Eqs. 55-58; in D dimensions the trace goes to D rho / 3)
    dxu = -(1.5 * omega_bulk * (trace - D * rho / 3) + 1.5 * om1 * sum(diff[1:])) / D
    du = [dxu + 1.5 * om1 * diff[i] for i in axes]
    post = {}
    trace_s = trace + omega_bulk * (D * rho / 3 - trace) - 3 * (1 - omega_bulk / 2) * sum(u[i] ** 2 * du[i] for i in axes)
    diff_s = [(1 - om1) * diff[i] - 3 * (1 - om1 / 2) * (u[0] ** 2 * du[0] - u[i] ** 2 * du[i]) for i in axes]
    d0 = (trace_s + sum(diff_s[1:])) / D
    for i in axes:
        post[_key(*(2 if j == i else 0 for j in axes))] = d0 - diff_s[i]
    for n in names:
        o = _order(n)
        if o == 2 and n not in post:
            post[n] = (1 - om1) * C[n]
        elif o >= 4:
            post[n] = (1 - omega4) * C[n]
    post.update(_third_order_post(C, rho, omega3, cumulant_limiter, D))
    post[_key(*(0,) * D)] = rho
    for i in axes:
        post[_key(*(1 if j == i else 0 for j in axes))] = rho * a[i] / 2 * np.ones_like(rho)
    # back: kappa* = C* + the same corrections of the post-collision kappa*, lowest orders first
    ks = {n: v for n, v in post.items() if _order(n) <= 3}
    for order in (4, 5, 6):
        partial = {**ks, **{n: np.zeros_like(rho) for n in names if _order(n) >= order}}
        corr = corrections(partial, rho)
        for n in names:
            if _order(n) == order:
                ks[n] = post[n] + corr[n]
    # raw moments m_alpha = sum_beta prod binom(alpha_k, beta_k) u_k^(alpha_k - beta_k) kappa_beta
    binom = {(0, 0): 1, (1, 0): 1, (1, 1): 1, (2, 0): 1, (2, 1): 2, (2, 2): 1}
    raw = []
    for n in names:
        al = [int(x) for x in n]
        total = np.zeros_like(rho)
        for be in product(*(range(x + 1) for x in al)):
            coef = np.prod([binom[(al[j], be[j])] * u[j] ** (al[j] - be[j]) for j in axes], axis=0)
            total = total + coef * ks[_key(*be)]
        raw.append(total)
    M = np.array([[np.prod([float(ci[j]) ** int(n[j]) for j in axes]) for ci in c] for n in names])
    return np.einsum("ia,a...->i...", np.linalg.inv(M), np.array(raw))
