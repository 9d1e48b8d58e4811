"""The central-moment MRT operator (the cascaded LBM's central moments), derived for D2Q9, D3Q19, D3Q27.

* **Basis**: the raw (non-orthogonal) central moments kappa_alpha = sum_i f_i prod_k (c_ik - u_k)^alpha_k
  with every exponent alpha_k <= 2 and at most as many non-zero exponents as the set's velocities have
  non-zero components (``central_basis``): the 9 of D2Q9 and the 27 of D3Q27 (De Rosis, PRE 95 (2017)
  013310, his D3Q27 basis; Geier, Greiner & Korvink, PRE 73 (2006) 066705 for the cascaded idea), the 19
  of D3Q19 (per pair of axes x y, x^2 y, x y^2, x^2 y^2: lbgen's choice by the rule above, its velocities
  having at most two non-zero components).  The set is closed under lowering an exponent, so the shift between raw and central
  moments stays inside it.
* **Equilibrium**: the central moments of the continuous Maxwellian, kappa_eq = rho c_s^(2 n) where n
  exponents are 2 and none is 1 (0 otherwise), c_s^2 = 1/3 (the cascaded equilibrium of Geier et al. 2006
  and De Rosis 2017).
* **Relaxation** (moment by moment): the off-diagonal second-order ones and the deviatoric part of the
  diagonal ones with omega_1 = 1/tau (nu = (tau - 1/2)/3), their trace with omega_bulk, the third-order
  ones with omega3, orders 4 and up with omega4.
* **Forcing** (second order, Fei & Luo, PRE 96 (2017) 053307 in 2D; Fei, Luo & Li, PRE 97 (2018) 053309
  in 3D: Guo's scheme in central-moment space): u = (sum c f + F/2)/rho, F = rho a (lattice units), and the
  central moments of the continuous source F.(xi - u)/(rho c_s^2) f_Maxwell added with (1 - omega/2):
  sigma_alpha = F_k c_s^(2 n) where alpha has a single exponent 1, on axis k, and n exponents 2
  (first order F, third order F_x c_s^2 on x y^2 ..., fifth F_x c_s^4 on x y^2 z^2), 0 otherwise.  The
  first central moments go -F/2 -> +F/2, so the stored/physical fields are those of BGK.
* **Well-conditioned** as the cumulant operator (``lbgen.model.cumulant``): the transform runs on
  f_i - w_i; the weights' central moments (polynomials in u) are added back symbolically, so the
  constants of kappa - kappa_eq cancel exactly, and the collision adds its change to f:
  f' = f + T(u)^-1 delta kappa.
* **Transforms**: forward, the chimera transform of ``lbgen.model.cumulant`` on the set embedded in
  {-1, 0, 1}^D (the absent corners of D3Q19 are zeros); back, the backward chimera transform on the
  tensor-product sets, and on D3Q19 the binomial shift kappa -> raw moments axis by axis, then the
  inverse of the set's exact-rational moment matrix.
"""
from __future__ import annotations

from itertools import product
from typing import Dict, List, Tuple

import sympy as sp

from lbgen.model.catalog import AXES
from lbgen.model.cumulant import chimera_backward, chimera_forward
from lbgen.model.derivation import Builder, const, grouped_sum

Exponents = Tuple[int, ...]
CS2 = sp.Rational(1, 3)


def central_basis(vs) -> List[Exponents]:
    """The exponents of the set's central moments, by order (the module doc), Q of them."""
    D = vs.D
    width = max(sum(1 for x in c if x) for c in vs.velocities)
    basis = sorted((e for e in product(range(3), repeat=D) if sum(1 for x in e if x) <= width),
                   key=lambda e: (sum(e), tuple(-x for x in e)))
    M = moment_matrix(vs, basis)
    if len(basis) != vs.Q or M.rank() != vs.Q:
        raise ValueError(f"{vs.name}: no central-moment basis of exponents <= 2 ({len(basis)} moments for "
                         f"{vs.Q} populations)")
    return basis


def moment_matrix(vs, basis) -> sp.Matrix:
    """M[alpha, i] = prod_k c_ik^alpha_k (exact integers)."""
    return sp.Matrix([[sp.prod([sp.Integer(c[k]) ** e[k] for k in range(vs.D)]) for c in vs.velocities]
                      for e in basis])


def equilibrium_moment(e: Exponents, rho) -> sp.Expr:
    """The continuous Maxwellian's central moment: rho c_s^(2 n), n exponents 2, none 1 (else 0)."""
    if 1 in e:
        return sp.Integer(0)
    return rho * CS2 ** sum(1 for x in e if x == 2)


def source_moment(e: Exponents, F) -> sp.Expr:
    """The central moment of the continuous Guo source (Fei & Luo 2017): F_k c_s^(2 n) for a single 1 at k."""
    ones = [k for k, x in enumerate(e) if x == 1]
    if len(ones) != 1:
        return sp.Integer(0)
    return F[ones[0]] * CS2 ** sum(1 for x in e if x == 2)


def _embedded(values: Dict[Exponents, sp.Expr], D: int) -> Dict[Exponents, sp.Expr]:
    """Values on every c in {-1, 0, 1}^D, 0 where the set has no velocity."""
    return {c: values.get(c, sp.Integer(0)) for c in product((-1, 0, 1), repeat=D)}


def _raw_of_central(kappa: Dict[Exponents, sp.Expr], u, b: Builder) -> Dict[Exponents, sp.Expr]:
    """Raw moments m_alpha = sum_beta binom(alpha, beta) u^(alpha - beta) kappa_beta, one axis at a time
    (m_0 = k_0, m_1 = k_1 + u k_0, m_2 = k_2 + 2 u k_1 + u^2 k_0 along each axis)."""
    state = dict(kappa)
    for k in range(len(u)):
        new = {}
        for e, v in state.items():
            lower = [state.get(e[:k] + (n,) + e[k + 1:], 0) for n in range(e[k] + 1)]
            if e[k] == 0:
                new[e] = v
            elif e[k] == 1:
                new[e] = _let(b, v + u[k] * lower[0])
            else:
                new[e] = _let(b, v + 2 * u[k] * lower[1] + u[k] ** 2 * lower[0])
        state = new
    return state


def _let(b: Builder, expr):
    if expr == 0 or isinstance(expr, (sp.Symbol, sp.Number)):
        return expr
    return b.let(b.fresh("mr"), expr)


def central_collision(b: Builder, vs, f, a, tau, omega_bulk, omega3, omega4, wall, tau_wall):
    """Post-collision populations fout_i of the central-moment MRT (the module doc), as Builder symbols."""
    D = vs.D
    r = vs.r_float()
    w = vs.weights_float()
    vel = [tuple(c) for c in vs.velocities]
    basis = central_basis(vs)
    b.block("well-conditioned populations f - w, delta rho, the force F = rho a and the velocity with F/2 "
            "(lbgen.model.central.central_collision)")
    fb = {c: b.let(f"fb{i}", f[i] - const(w[i])) for i, c in enumerate(vel)}
    drho = b.let("drho", sp.Add(*fb.values()))
    rho = b.let("rho", 1 + drho)
    inv_rho = b.let("inv_rho", 1 / rho)
    F = tuple(b.let(f"F{AXES[k]}", rho * a[k] / const(r)) for k in range(D))       # lattice units
    u = tuple(b.let(f"u{AXES[k]}", (sp.Add(*(c[k] * fb[c] for c in vel if c[k])) + F[k] / 2) * inv_rho)
              for k in range(D))
    b.block("central moments of f - w (the chimera transform, absent velocities 0), plus the weights' "
            "(lbgen.model.cumulant.chimera_forward)")
    kbar = chimera_forward(_embedded(fb, D), u, b)
    kw = {e: sp.expand(v) for e, v in chimera_forward(_embedded(dict(zip(vel, vs.weights_exact)), D), u).items()}
    b.block("non-equilibrium central moments kappa - kappa_eq, kappa_eq the Maxwellian's "
            "(lbgen.model.central.equilibrium_moment)")
    neq = {e: b.let(f"kn{''.join(map(str, e))}", sp.expand(kbar[e] + kw[e] - equilibrium_moment(e, 1 + drho)))
           for e in basis if sum(e) >= 2}
    b.block("relaxation: deviatoric second order 1/tau, trace omega_bulk, third order omega3, higher omega4; "
            "Guo's source in central moments with (1 - omega/2) (lbgen.model.central.source_moment)")
    om1 = b.let("om1", 1 / (wall * tau_wall + (1 - wall) * tau))
    rates = {3: omega3, 4: omega4}
    unit2 = [tuple(2 if j == k else 0 for j in range(D)) for k in range(D)]
    trace = b.let("kn_tr", sp.Add(*(neq[e] for e in unit2)) / D)
    delta: Dict[Exponents, sp.Expr] = {(0,) * D: sp.Integer(0)}
    for k in range(D):
        delta[tuple(1 if j == k else 0 for j in range(D))] = F[k]
    for e in basis:
        n = sum(e)
        if n < 2:
            continue
        if e in unit2:
            value = -om1 * (neq[e] - trace) - omega_bulk * trace
        elif n == 2:
            value = -om1 * neq[e]
        else:
            rate = rates[min(n, 4)]
            value = -rate * neq[e] + (1 - rate / 2) * source_moment(e, F)
        delta[e] = b.let(f"dk{''.join(map(str, e))}", value)
    b.block("back to populations: f' = f + T(u)^-1 delta kappa (lbgen.model.central.central_collision)")
    if len(basis) == 3 ** D:                         # tensor-product set: the backward chimera transform
        df = chimera_backward(delta, u, b)
        return tuple(b.let(f"fout{i}", f[i] + df[c]) for i, c in enumerate(vel))
    raw = _raw_of_central(delta, u, b)
    inverse = moment_matrix(vs, basis).inv()
    return tuple(b.let(f"fout{i}", f[i] + grouped_sum([(inverse[i, j], raw[e]) for j, e in enumerate(basis)
                                                      if inverse[i, j] != 0 and raw[e] != 0], b))
                 for i in range(vs.Q))
