"""The entropic KBC operator (Karlin, Boesch & Chikatamarla, PRE 90 (2014) 031302(R)), its N4 variant on
D3Q27 and D2Q9 (Boesch, Chikatamarla & Karlin, PRE 92 (2015) 043309), derived for ``lbgen.model.collision``.

* **Moments**: the natural raw moments M_alpha = sum_i f_i prod_k c_ik^alpha_k, alpha in {0, 1, 2}^D (the
  tensor-product sets, every velocity of {-1, 0, 1}^D: the record's ``sets``).  f = k + s + h with
  k spanned by the conserved moments (order 0, 1), the shear part s by the N4 group (order 2: the
  deviatoric stress and its trace T; order 3: the heat-flux-like moments x^2 y, ..., x y z) and the higher
  part h by the rest (order 4 and up: x^2 y^2, ..., x^2 y^2 z^2); each part is the populations of its
  moments alone (the dual basis of the moment matrix).
* **Equilibrium**: the product form f_eq,i = rho prod_k phi(c_ik, u_k), phi(0, u) = 2/3 - u^2,
  phi(+-1, u) = (1/3 + u^2 +- u)/2 (its raw moments are the Maxwellian's for every exponent <= 2,
  c_s^2 = 1/3: the equilibrium of the D3Q27 KBC papers and of ``lbgen.model.central``).
* **Forcing** (Guo, Zheng & Shi, PRE 65 (2002) 046308, second order): u = (sum c f + F/2)/rho, F = rho a
  (lattice units); the source S_i = F . d f_eq,i / d u / rho (Guo's term for this equilibrium); the
  non-equilibrium at the half step Delta = f + S/2 - f_eq has no k part, and
  f' = f + S - beta (2 Delta_s + gamma Delta_h), beta = 1/(2 tau): the shear part relaxes with 1/tau
  (nu = (tau - 1/2)/3, as BGK), each part's share of S with Guo's factor (1 - rate/2).
* **Stabiliser** (the paper's Eq. 12, per site): gamma = 1/beta - (2 - 1/beta) <Delta_s|Delta_h> /
  <Delta_h|Delta_h>, the entropic scalar product <X|Y> = sum_i X_i Y_i / f_eq,i (the second-order expansion
  of the H function about f_eq, Boesch et al. 2015); where Delta_h = 0 the ratio is 0 (the h part is then
  at equilibrium, gamma multiplies nothing).  With gamma = 2 the operator is BGK (with Guo's forcing).
* **Evaluation**: the equilibrium, 1/f_eq (from the 3 D reciprocals of phi) and S (f_eq sum_k a_k phi'/phi)
  population by population; Delta on the well-conditioned f - w (w - f_eq is O(u, delta rho)); Delta_h from
  the raw moments of Delta of order 4 and up (the chimera transform at u = 0 of ``lbgen.model.cumulant``, and
  back), Delta_s = Delta - Delta_h (Delta has no k part).
"""
from __future__ import annotations

from itertools import product
from typing import Tuple

import sympy as sp

from lbgen.model.catalog import AXES
from lbgen.model.cumulant import chimera_backward, chimera_forward, well_conditioned_start
from lbgen.model.derivation import Builder, const

Exponents = Tuple[int, ...]
CS2 = sp.Rational(1, 3)
#: the orders of the N4 shear group s (the deviatoric stress, its trace, the third-order moments)
SHEAR_ORDERS = (2, 3)


def phi(c: int, u):
    """The product-form equilibrium's 1D population at hop c (per unit density)."""
    return 2 * CS2 - u ** 2 if c == 0 else (CS2 + u ** 2 + c * u) / 2


def phi_du(c: int, u):
    """d phi / du: -2 u, u +- 1/2."""
    return -2 * u if c == 0 else u + sp.Rational(c, 2)


def kbc_collision(b: Builder, vs, f, a, tau, wall, tau_wall):
    """Post-collision populations fout_i of the KBC-N4 operator (the module doc), as Builder symbols."""
    D, w = vs.D, vs.weights_float()
    zero = (sp.Integer(0),) * D
    exps = list(product(range(3), repeat=D))
    vel, fb, drho, rho, inv_rho, al, u = well_conditioned_start(b, vs, f, a, "lbgen.model.kbc.kbc_collision")
    b.block("the product-form equilibrium f_eq, 1/f_eq and Guo's source S = f_eq sum_k a_k phi'/phi in "
            "populations (lbgen.model.kbc.phi)")
    ph = [{c: b.let(f"phi{AXES[k]}{'mzp'[c + 1]}", phi(c, u[k])) for c in (-1, 0, 1)} for k in range(D)]
    iph = [{c: b.let(f"iphi{AXES[k]}{'mzp'[c + 1]}", 1 / ph[k][c]) for c in (-1, 0, 1)} for k in range(D)]
    g = [{c: b.let(f"gs{AXES[k]}{'mzp'[c + 1]}", al[k] * phi_du(c, u[k]) * iph[k][c]) for c in (-1, 0, 1)}
         for k in range(D)]
    feq = {c: b.let(b.fresh("feq"), rho * sp.prod([ph[k][c[k]] for k in range(D)])) for c in vel}
    weight = {c: b.let(b.fresh("ifeq"), inv_rho * sp.prod([iph[k][c[k]] for k in range(D)])) for c in vel}
    src = {c: b.let(b.fresh("src"), feq[c] * sp.Add(*(g[k][c[k]] for k in range(D)))) for c in vel}
    b.block("the half-step non-equilibrium Delta = f + S/2 - f_eq (no k part), its higher part Delta_h (raw "
            "moments of order 4+ by the chimera transform at u = 0, and back), the shear part Delta_s = Delta - Delta_h")
    delta = {c: b.let(b.fresh("dl"), fb[c] + (const(w[i]) - feq[c]) + src[c] / 2) for i, c in enumerate(vel)}
    m = chimera_forward(delta, zero, b)
    dh = chimera_backward({e: (m[e] if sum(e) > max(SHEAR_ORDERS) else sp.Integer(0)) for e in exps}, zero, b)
    dh = {c: _let(b, "dh", v) for c, v in dh.items()}
    ds = {c: b.let(b.fresh("ds"), delta[c] - dh[c]) for c in vel}
    b.block("the stabiliser: entropic scalar products <Delta_s|Delta_h>, <Delta_h|Delta_h> weighted by 1/f_eq, "
            "gamma (Karlin, Boesch & Chikatamarla 2014, Eq. 12)")
    num = b.let("sh_prod", sp.Add(*(ds[c] * dh[c] * weight[c] for c in vel)))
    den = b.let("hh_prod", sp.Add(*(dh[c] ** 2 * weight[c] for c in vel)))
    # <Delta_h|Delta_h> where positive, else 1 (then Delta_h = 0 and <Delta_s|Delta_h> = 0): a select, not
    # den + (1 - on), whose 1 - 1 would cancel the digits of a small den
    den_safe = b.let("hh_safe", sp.Piecewise((den, den > 0), (sp.Integer(1), True)))
    ratio = b.let("sh_ratio", num / den_safe)
    inv_tau = b.let("om1", 1 / (wall * tau_wall + (1 - wall) * tau))
    # beta gamma = 1 - (2 beta - 1) <s|h>/<h|h>, 2 beta = 1/tau
    beta_gamma = b.let("beta_gamma", 1 + (1 - inv_tau) * ratio)
    b.block("f' = f + S - beta (2 Delta_s + gamma Delta_h) (lbgen.model.kbc.kbc_collision)")
    return tuple(b.let(f"fout{i}", f[i] + src[c] - inv_tau * ds[c] - beta_gamma * dh[c]) for i, c in enumerate(vel))


def _let(b: Builder, name: str, expr):
    if expr == 0 or isinstance(expr, (sp.Symbol, sp.Number)):
        return expr
    return b.let(b.fresh(name), expr)
