"""The cumulant collision operator (Geier, Schoenherr, Pasquali & Krafczyk, Comput. Math. Appl. 70
(2015) 507), derived: the chimera transforms to central moments and back, the cumulants of the
central moments, the relaxation, all as sympy assignments for ``lbgen.model.collision``.

* **Sets**: the tensor-product sets whose velocities are every c in {-1, 0, 1}^D, D3Q27 and its
  2D reduction D2Q9 (the record's ``sets``, ``lbgen.model.operators``): each axis of the lattice then carries exactly the 1D
  moments 0, 1, 2, and the transforms factor into one 1D transform per axis (the chimera).
* **Well-conditioned** (Geier et al. 2015, Sec. 4): the transforms run on f_i - w_i (the rest
  state subtracted, O(delta rho, u) in size), the density as delta rho = sum (f - w); the central
  moments of the weights (polynomials in u) are added back symbolically, and subtracted again
  before the backward transform, whose result gets w_i back.
* **Forcing** (Geier's way, second order): the velocity is u = (sum c (f - w) + F/2) / rho with
  F = rho a (lattice units), so the pre-collision first central moments are -F/2, and the
  post-collision ones are set to +F/2: the momentum gains F, the stored velocity is u_pre + a
  (``collision.half_step_shift``).
* **Cumulants** C_alpha = rho c_alpha, c_alpha the cumulants of the normalised central moments
  kappa/rho with the first ones dropped (Geier's density-weighted cumulants, their Eqs. for
  C_211, C_220, C_122, C_222): derived here from log(M(t)) of the moment generating series and
  back through exp, not typed (the oracle ``lbgen.reference.cumulant`` types the paper's formulas).
* **Relaxation**: the off-diagonal second-order cumulants and the differences of the diagonal
  ones with omega_1 = 1/tau (nu = (tau - 1/2)/3), their trace towards D rho/3 with omega_bulk;
  Geier et al. 2015's Galilean-invariance correction on the diagonal ones (the velocity
  derivatives from the second-order cumulants, -3 rho (1 - omega/2) u_k^2 d_k u_k); every
  third-order cumulant with omega3, every one of order 4 and higher with omega4 (equilibria 0;
  both 1 by default: the cumulants go to equilibrium in one step, Geier's recommendation).
"""
from __future__ import annotations

from itertools import product
from typing import Dict, Tuple

import sympy as sp

from lbgen.model.catalog import AXES
from lbgen.model.derivation import Builder, const

Exponents = Tuple[int, ...]


def _exponents(D: int):
    return list(product(range(3), repeat=D))


def _order(alpha: Exponents) -> int:
    return sum(alpha)


def _let(b, name, expr):
    """b.let where b is a Builder, the expression itself where b is None (the weights' moments)."""
    if b is None or expr == 0 or isinstance(expr, (sp.Symbol, sp.Number)):
        return expr
    return b.let(b.fresh(name), expr)


def chimera_forward(values: Dict[Exponents, sp.Expr], u, b: Builder = None) -> Dict[Exponents, sp.Expr]:
    """Central moments kappa_alpha = sum_i f_i prod_k (c_ik - u_k)^alpha_k from {c_i: f_i}, one axis at a
    time (Geier et al. 2015, Eqs. 43-45: z, then y, then x): along an axis with f_-, f_0, f_+,
    k_0 = f_- + f_0 + f_+, k_1 = f_+ - f_- - u k_0, k_2 = f_+ + f_- - 2 u (f_+ - f_-) + u^2 k_0."""
    D = len(u)
    state = dict(values)
    for k in reversed(range(D)):
        new = {}
        for key in state:
            if key[k] != -1:
                continue
            fm, f0, fp = (state[key[:k] + (c,) + key[k + 1:]] for c in (-1, 0, 1))
            k0 = _let(b, "k", fm + f0 + fp)
            d = _let(b, "kd", fp - fm)
            new[key[:k] + (0,) + key[k + 1:]] = k0
            new[key[:k] + (1,) + key[k + 1:]] = _let(b, "k", d - u[k] * k0)
            new[key[:k] + (2,) + key[k + 1:]] = _let(b, "k", fp + fm - 2 * u[k] * d + u[k] ** 2 * k0)
        state = new
    return state


def chimera_backward(kappa: Dict[Exponents, sp.Expr], u, b: Builder = None) -> Dict[Exponents, sp.Expr]:
    """The inverse of ``chimera_forward``, axis by axis (x, then y, then z; Geier et al. 2015, Eqs. 88-90):
    f_0 = k_0 (1 - u^2) - 2 u k_1 - k_2, f_-+ = (k_0 (u^2 -+ u) + k_1 (2 u -+ 1) + k_2) / 2."""
    D = len(u)
    state = dict(kappa)
    for k in range(D):
        new = {}
        for key in state:
            if key[k] != 0:
                continue
            k0, k1, k2 = (state[key[:k] + (n,) + key[k + 1:]] for n in range(3))
            uk = u[k]
            new[key[:k] + (0,) + key[k + 1:]] = _let(b, "fc", k0 * (1 - uk ** 2) - 2 * uk * k1 - k2)
            new[key[:k] + (-1,) + key[k + 1:]] = _let(b, "fc", (k0 * (uk ** 2 - uk) + k1 * (2 * uk - 1) + k2) / 2)
            new[key[:k] + (1,) + key[k + 1:]] = _let(b, "fc", (k0 * (uk ** 2 + uk) + k1 * (2 * uk + 1) + k2) / 2)
        state = new
    return state


def _series_product(p, q):
    """Product of two truncated power series {exponents: coefficient}, keeping exponents <= 2 per axis."""
    out: Dict[Exponents, sp.Expr] = {}
    for a, x in p.items():
        for c, y in q.items():
            e = tuple(i + j for i, j in zip(a, c))
            if max(e) <= 2:
                out[e] = out.get(e, 0) + x * y
    return out


def _factorial(alpha: Exponents) -> int:
    return sp.prod(sp.factorial(a) for a in alpha)


def _series_map(values: Dict[Exponents, sp.Expr], D: int, coefficients):
    """sum_n coefficients[n] x^n of x = sum_alpha values[alpha] t^alpha/alpha! (orders >= 2 only), as
    {alpha: alpha! [t^alpha]} for every alpha in {0, 1, 2}^D of order >= 2."""
    x = {a: v / _factorial(a) for a, v in values.items() if _order(a) >= 2}
    total: Dict[Exponents, sp.Expr] = {}
    power = {(0,) * D: sp.Integer(1)}
    for n, coefficient in enumerate(coefficients):
        if n:
            power = _series_product(power, x)
        if n and coefficient:
            for a, v in power.items():
                total[a] = total.get(a, 0) + coefficient * v
    return {a: sp.expand(v * _factorial(a)) for a, v in total.items()}


#: log(1 + x) and exp(x) - 1 to the third power of x (orders >= 2: at most 3 factors reach order 6)
_LOG = (0, 1, sp.Rational(-1, 2), sp.Rational(1, 3))
_EXP = (0, 1, sp.Rational(1, 2), sp.Rational(1, 6))


def _to_inverse_rho(expr, rho, inv_rho):
    return expr.replace(lambda e: e.is_Pow and e.base == rho and e.exp.is_negative,
                        lambda e: inv_rho ** (-e.exp))


def cumulants_of(kappa, rho, inv_rho, D: int):
    """{alpha: C_alpha} (order >= 2) of the central moments: C = rho log-series of kappa / rho."""
    normal = _series_map({a: kappa[a] / rho for a in kappa}, D, _LOG)
    return {a: _to_inverse_rho(sp.expand(rho * v), rho, inv_rho) for a, v in normal.items()}


def moments_of(cumulant, rho, inv_rho, D: int):
    """{alpha: kappa_alpha} (order >= 2) of density-weighted cumulants: rho exp-series of C / rho."""
    normal = _series_map({a: cumulant[a] / rho for a in cumulant}, D, _EXP)
    return {a: _to_inverse_rho(sp.expand(rho * v), rho, inv_rho) for a, v in normal.items()}


def weight_moments(vs, u) -> Dict[Exponents, sp.Expr]:
    """The central moments of the weights w_i at velocity u: polynomials in u (Geier's constants K)."""
    w = vs.weights_exact
    return {a: sp.expand(v) for a, v in chimera_forward({tuple(c): w[i] for i, c in enumerate(vs.velocities)},
                                                        u).items()}


def third_order_groups(D: int):
    """The third-order cumulants by the axes they are odd in: pairs (alpha, beta) whose sum and difference the
    limiter takes (3D: C_120 +- C_102, C_210 +- C_012, C_201 +- C_021; Geier, Pasquali & Schoenherr 2017,
    Eqs. 116-123), and the single ones (C_111; 2D: C_21, C_12)."""
    groups: Dict[Tuple[int, ...], list] = {}
    for e in _exponents(D):
        if _order(e) == 3:
            groups.setdefault(tuple(k for k in range(D) if e[k] == 1), []).append(e)
    return [sorted(g, reverse=True) for g in groups.values()]


def _limited(b: Builder, x, rho, on, limiter):
    """|x| / (rho lambda + |x|), the share of the way to equilibrium the limiter adds (0 where it is off:
    ``on`` is 0, and the denominator stays positive)."""
    ax = b.let(b.fresh("lima"), sp.Abs(x))
    return b.let(b.fresh("limg"), on * ax / (rho * limiter + ax + (1 - on)))


def _third_order(b: Builder, C, D, om3, rho, limiter):
    """Post-collision third-order cumulants (1 - omega3) C, each of the limiter's combinations x relaxed with
    omega3 + (1 - omega3) |x| / (rho lambda + |x|) where lambda > 0 (Geier, Pasquali & Schoenherr, J. Comput.
    Phys. 348 (2017) 862, Eqs. 116-123; lambda = 0: off, the rate omega3 bit for bit)."""
    on = b.let("lim_on", sp.Piecewise((sp.Integer(1), limiter > 0), (sp.Integer(0), True)))
    post = {}
    for group in third_order_groups(D):
        if len(group) == 1:
            e, = group
            post[e] = b.let(f"C{''.join(map(str, e))}_s", om3 * (C[e] - _limited(b, C[e], rho, on, limiter) * C[e]))
            continue
        p, q = group
        plus = b.let(b.fresh("Cp"), C[p] + C[q])
        minus = b.let(b.fresh("Cm"), C[p] - C[q])
        gp = b.let(b.fresh("limp"), _limited(b, plus, rho, on, limiter) * plus / 2)
        gm = b.let(b.fresh("limm"), _limited(b, minus, rho, on, limiter) * minus / 2)
        post[p] = b.let(f"C{''.join(map(str, p))}_s", om3 * (C[p] - (gp + gm)))
        post[q] = b.let(f"C{''.join(map(str, q))}_s", om3 * (C[q] - (gp - gm)))
    return post


def _smagorinsky_tau(b: Builder, kappa, rho, u, al, tau0, cs, D: int):
    """The Smagorinsky shear relaxation time of ``lbgen.model.collision._smagorinsky`` (the same closed form,
    tau_eff = (tau0 + sqrt(tau0^2 + 18 sqrt(2) C_s^2 |Pi_neq| / rho)) / 2, lattice units) with the
    non-equilibrium stress from the second central moments: u is the half-step velocity, and
    Pi_neq = sum c c f - rho u u - rho/3 I = kappa_2 - (u F + F u)/2 - rho/3 I (sum c f = rho u - F/2, F = rho a)."""
    b.block("Smagorinsky subgrid model: |Pi_neq| from the second central moments, tau_eff in closed form "
            "(lbgen.model.cumulant._smagorinsky_tau)")
    F = [rho * al[k] for k in range(D)]
    terms = []
    for e in _exponents(D):
        if _order(e) != 2:
            continue
        i, j = [k for k in range(D) for _ in range(e[k])]
        pi = b.let(f"Pn{''.join(map(str, e))}", kappa[e] - (u[i] * F[j] + F[i] * u[j]) / 2
                   - (rho / 3 if i == j else 0))
        terms.append((1 if i == j else 2) * pi ** 2)
    norm = b.let("Pi_neq", sp.sqrt(b.let("Pi2", sp.Add(*terms))))
    root = b.let("les_root", sp.sqrt(tau0 ** 2 + const(18 * sp.sqrt(2)) * cs ** 2 * norm / rho))
    return b.let("tau_les", (tau0 + root) / 2)


def well_conditioned_start(b: Builder, vs, f, a, where: str):
    """The opening of a moment-space operator that works in lattice units on f - w: (velocities,
    {velocity: f_i - w_i}, delta rho, rho, 1/rho, the force per unit mass a/r, the velocity with half
    the force), as Builder symbols; ``where`` names the operator in the block's comment."""
    D, r, w = vs.D, vs.r_float(), vs.weights_float()
    vel = [tuple(c) for c in vs.velocities]
    b.block(f"well-conditioned populations f - w, delta rho, and the velocity with half the force ({where})")
    fb = {c: b.let(f"fb{i}", f[i] - const(w[i])) for i, c in enumerate(vel)}
    drho = b.let("drho", sp.Add(*fb.values()))
    rho = b.let("rho", 1 + drho)
    inv_rho = b.let("inv_rho", 1 / rho)
    al = tuple(b.let(f"al{AXES[k]}", a[k] / const(r)) for k in range(D))       # lattice units
    u = tuple(b.let(f"u{AXES[k]}", (sp.Add(*(c[k] * fb[c] for c in vel if c[k])) + rho * al[k] / 2) * inv_rho)
              for k in range(D))
    return vel, fb, drho, rho, inv_rho, al, u


def cumulant_collision(b: Builder, vs, f, a, tau, omega_bulk, omega3, omega4, wall, tau_wall, limiter=None,
                       smagorinsky=None):
    """Post-collision populations fout_i of the cumulant operator (the module doc), as Builder symbols;
    ``limiter``: the symbol of Geier, Pasquali & Schoenherr's lambda (0: off), None: no limiter code;
    ``omega3``, ``omega4``: symbols, or the number 1 (no code for the cumulants that rate sends to 0);
    ``smagorinsky``: the symbol of C_s of ``cumulant-les`` (the shear rate 1/tau_eff), None: no subgrid model."""
    D = vs.D
    w = vs.weights_float()
    vel, fb, drho, rho, inv_rho, al, u = well_conditioned_start(b, vs, f, a, "lbgen.model.cumulant.cumulant_collision")
    b.block("central moments: the chimera transform of f - w, plus the weights' central moments "
            "(lbgen.model.cumulant.chimera_forward)")
    kbar = chimera_forward(fb, u, b)
    kw = weight_moments(vs, u)
    # named, so that the cumulant formulas multiply moments, not the expanded sums
    kappa = {e: (b.let(f"kap{''.join(map(str, e))}", kbar[e] + kw[e]) if _order(e) >= 2 else kbar[e] + kw[e])
             for e in kbar}
    b.block("cumulants of order 4 and up from the central moments (lbgen.model.cumulant.cumulants_of)")
    C = cumulants_of(kappa, rho, inv_rho, D)
    C = {e: (b.let(f"C{''.join(map(str, e))}", v) if _order(e) >= 4 else kappa[e]) for e, v in C.items()}
    b.block("relaxation: second order with 1/tau (bulk: omega_bulk) and Geier's Galilean correction, "
            "third order with omega3, higher with omega4 (lbgen.model.cumulant.cumulant_collision)")
    if smagorinsky is not None:
        tau = _smagorinsky_tau(b, kappa, rho, u, al, tau, smagorinsky, D)
    om1 = b.let("om1", 1 / (wall * tau_wall + (1 - wall) * tau))
    unit2 = [tuple(2 if j == k else 0 for j in range(D)) for k in range(D)]
    diag = [C[e] for e in unit2]
    trace = b.let("Ctr", sp.Add(*diag))
    diffs = [b.let(f"Cd{AXES[k]}", diag[0] - diag[k]) for k in range(1, D)]
    # rho d_k u_k from the pre-collision cumulants (Geier et al. 2015, Eqs. 55-58; rho times them)
    g0 = b.let("gx", -(sp.Rational(3, 2) * (omega_bulk * (trace - D * rho / 3) + om1 * sp.Add(*diffs))) / D)
    grad = [g0] + [b.let(f"g{AXES[k]}", g0 + sp.Rational(3, 2) * om1 * diffs[k - 1]) for k in range(1, D)]
    post: Dict[Exponents, sp.Expr] = {}
    trace_s = b.let("Ctr_s", trace + omega_bulk * (D * rho / 3 - trace)
                    - 3 * (1 - omega_bulk / 2) * sp.Add(*(u[k] ** 2 * grad[k] for k in range(D))))
    diffs_s = [b.let(f"Cd{AXES[k]}_s", (1 - om1) * diffs[k - 1]
                     - 3 * (1 - om1 / 2) * (u[0] ** 2 * grad[0] - u[k] ** 2 * grad[k])) for k in range(1, D)]
    d0 = b.let("Cxx_s", (trace_s + sp.Add(*diffs_s)) / D)
    post[unit2[0]] = d0
    for k in range(1, D):
        post[unit2[k]] = b.let(f"C{AXES[k] * 2}_s", d0 - diffs_s[k - 1])
    # a rate given as the number 1 (the specialised collision: lbgen.model.collision.collision) leaves the
    # number 0: those cumulants are 0 after the collision, and the ones before it are never computed
    om4 = b.let("om4c", 1 - omega4) if omega4 != 1 else sp.Integer(0)
    om3 = b.let("om3c", 1 - omega3) if omega3 != 1 else sp.Integer(0)
    if limiter is not None and om3 != 0:       # omega3 = 1: the limited rate is 1 whatever lambda
        post.update(_third_order(b, C, D, om3, rho, limiter))
    for e, v in C.items():
        n = _order(e)
        if n == 2 and e not in unit2:
            post[e] = b.let(f"C{''.join(map(str, e))}_s", (1 - om1) * v)
        elif n >= 3 and e not in post:
            rate = om3 if n == 3 else om4
            post[e] = b.let(f"C{''.join(map(str, e))}_s", rate * v) if rate != 0 else sp.Integer(0)
    b.block("back to central moments, first ones +F/2, less the weights' (lbgen.model.cumulant.moments_of)")
    kappa_s = moments_of(post, rho, inv_rho, D)
    kappa_s[(0,) * D] = rho
    for k in range(D):
        kappa_s[tuple(1 if j == k else 0 for j in range(D))] = rho * al[k] / 2
    kbar_s = {e: _let(b, "kb", sp.expand(v - kw[e])) for e, v in kappa_s.items()}
    b.block("backward chimera transform to f - w, then f (lbgen.model.cumulant.chimera_backward)")
    fbar_s = chimera_backward(kbar_s, u, b)
    return tuple(b.let(f"fout{i}", fbar_s[c] + const(w[i])) for i, c in enumerate(vel))
