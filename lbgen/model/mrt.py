"""The MRT operator on the weighted-orthogonal Hermite basis of an isothermal set, derived.

The basis (Coreixas, Chopard & Latt, PRE 100 (2019) 033305, their Hermite-moment MRT; the
moment-space MRT of d'Humieres, Ginzburg, Krafczyk, Lallemand & Luo, Phil. Trans. R. Soc. A 360
(2002) 437 on another orthogonal basis): the Hermite polynomials of order 0, 1, 2 (lbgen's
``hermite_moments`` and ``reconstruct``), then the set's remaining monomials c^alpha (each
exponent <= 2, by degree) orthogonalised under the weights sum_i w_i p(c_i) q(c_i) against
everything before them (Gram-Schmidt, exact rationals), those the set cannot tell from earlier
ones dropped: 9 on D2Q9, 19 on D3Q19 (d'Humieres' count), 27 on D3Q27.

Relaxation (``mrt_collision``): the deviatoric second-order Hermite moments (off-diagonal ones
and the diagonal ones less their trace) with omega_1 = 1/tau (nu = (tau - 1/2)/3), their trace
with omega_bulk, the third-degree moments with omega3, the higher ones with omega4, towards the
second-order equilibrium, whose higher moments are 0 (f_eq / w is a second-degree polynomial,
orthogonal to them).  Forcing: Guo, Zheng & Shi, PRE 65 (2002) 046308 in moment space,
(I - S/2) M F (the MRT form of Guo & Zheng, Theor. Comput. Fluid Dyn. 22 (2008) 465): f_eq at the
half-step velocity u + a/2, the source's moments rho a (first order) and rho (u a + a u) (second),
none higher.  With every rate 1/tau the operator is BGK with Guo's forcing (TRT with
Lambda = (tau - 1/2)^2: a test checks it).
"""
from __future__ import annotations

from itertools import product
from typing import List, Tuple

import sympy as sp

from lbgen.model.catalog import AXES
from lbgen.model.derivation import Builder, component_tag, grouped_sum, opposite_pairs, reconstruct
from lbgen.model.derivation import unit_component as unit
from lbgen.model.hermite import components, maxwellian_coefficient


def ghost_basis(vs) -> List[Tuple[int, Tuple[sp.Rational, ...], sp.Rational]]:
    """[(degree, p(c_i) for every i, <p, p>_w)] of the moments beyond the second-order Hermite ones."""
    w = [sp.nsimplify(x) for x in vs.weights_exact]
    vel = [tuple(c) for c in vs.velocities]
    D = vs.D

    def dot(p, q):
        return sum(wi * x * y for wi, x, y in zip(w, p, q))

    basis: List[Tuple[int, tuple, sp.Rational]] = []
    exponents = sorted(product(range(3), repeat=D), key=lambda e: (sum(e), tuple(-x for x in e)))
    for e in exponents:
        v = [sp.Integer(sp.prod(c[k] ** e[k] for k in range(D))) for c in vel]
        for _, p, norm in basis:
            coef = dot(v, p) / norm
            if coef != 0:
                v = [x - coef * y for x, y in zip(v, p)]
        norm = dot(v, v)
        if norm != 0:
            basis.append((sum(e), tuple(v), norm))
    assert len(basis) == vs.Q, f"{vs.name}: {len(basis)} independent moments for {vs.Q} populations"
    return [(n, p, norm) for n, p, norm in basis if n >= 3]


def mrt_collision(b: Builder, vs, f, H, A, rho, u, a, tau, omega_bulk, omega3, omega4, wall, tau_wall):
    """Post-collision populations of the MRT operator (the module doc), as Builder symbols; ``tau``
    may be the Smagorinsky tau_eff of the ``-les`` variant.

    Each parity of f is relaxed as a whole with one rate and only what differs is corrected (the
    projection of a parity onto its ghosts is the parity less its Hermite part, so no ghost moment
    but D3Q27's five-degree ones is computed): with the pair sums s_i and differences d_i,

    * odd part (d_i; TRT's antisymmetric part with omega_minus = omega3): (1 - omega3) d_i / 2 +
      w_i xi_i.B_1, B_1 = omega3 A_1 + rho a; the odd ghosts of degree >= 5 (D3Q27) add
      (omega3 - omega4) g_k w_i p_k(xi_i);
    * even part (s_i; every even ghost relaxes with omega4): (1 - omega4) s_i / 2 + w_i sum_n B_n:H_n/n!,
      B_0 = omega4 rho, B_2 = omega4 A_2 + omega_1 (A_2,eq - A_2) + (1 - omega_1/2) S_2 written as
      omega_1 A_2,eq(u + tau a) - omega_1 (tau - 1/2)^2 rho a a - (omega_1 - omega4) A_2 (Guo's source S as
      a shifted equilibrium, as in lbgen.model.collision._trt), plus on the diagonal the trace's own
      rate: (omega_bulk - omega_1)(tr(A_2,eq - A_2) - tr S_2 / 2) / D = (omega_bulk - omega_1)
      (rho (|u|^2 - |a|^2/4) - tr A_2) / D.
    """
    D = vs.D
    half = sp.Rational(1, 2)
    b.block("MRT rates: 1/tau (1/tau_wall on wall rows) on the deviatoric second-order moments, omega_bulk on "
            "their trace (lbgen.model.mrt.mrt_collision)")
    tau1 = b.let("tau1", wall * tau_wall + (1 - wall) * tau)
    om1 = b.let("om1", 1 / tau1)
    b.block("relaxation: even part with omega4, its second order corrected to omega_1 (Guo's source as the "
            "shifted equilibrium at u + tau a less (tau - 1/2)^2 rho a a) and the trace to omega_bulk; odd part "
            "with omega3, B_1 = omega3 A_1 + rho a (lbgen.model.mrt.mrt_collision)")
    us = tuple(b.let(f"us{AXES[k]}", u[k] + tau1 * a[k]) for k in range(D))
    rate_rho = b.let("rw", rho * om1)
    correction = b.let("kaa", rate_rho * (tau1 - half) ** 2)
    # omega_1 rho us_k us_j - kaa a_k a_j as (omega_1 rho us_k) us_j - (kaa a_k) a_j
    rus = tuple(b.let(f"rus{AXES[k]}", rate_rho * us[k]) for k in range(D))
    ka = tuple(b.let(f"ka{AXES[k]}", correction * a[k]) for k in range(D))
    second = components(2, D)
    diag = [c for c in second if max(c) == 2]
    a2 = b.let("a2", sp.Add(*(a[k] ** 2 for k in range(D))))
    # rho |u|^2 = A_1 . u
    u2 = sp.Add(*(A[unit(D, k)] * u[k] for k in range(D))) - rho * a2 / 4
    bulk = b.let("dbulk", (omega_bulk - om1) * (u2 - sp.Add(*(A[c] for c in diag))) / D)
    dom = b.let("dom2", om1 - omega4)
    B = {(0,) * D: b.let(f"B{component_tag((0,) * D)}", omega4 * rho)}
    for k in range(D):
        c = unit(D, k)
        B[c] = b.let(f"B{component_tag(c)}", omega3 * A[c] + rho * a[k])
    for c in second:
        k, j = [m for m in range(D) for _ in range(c[m])]
        # the Maxwellian's second-order coefficient at theta = 1 is rho us_k us_j
        assert sp.expand(maxwellian_coefficient(c, 1, us, 1) - us[k] * us[j]) == 0
        value = rus[k] * us[j] - ka[k] * a[j] - dom * A[c]
        B[c] = b.let(f"B{component_tag(c)}", value + bulk if c in diag else value)
    pairs, rest = opposite_pairs(vs)
    named = {str(s): s for s, _ in b.assignments}
    extra = {}
    ghosts = [(p, norm) for n, p, norm in ghost_basis(vs) if n % 2 and n >= 5]
    if ghosts:
        b.block("the odd ghost moments of degree >= 5, g_k = sum f p_k / <p_k, p_k>, to omega4: (omega3 - omega4) "
                "g_k w_i p_k(xi_i) on the odd parts (lbgen.model.mrt.ghost_basis)")
        w = vs.weights_float()
        dom_odd = b.let("dom_odd", omega3 - omega4)
        for p, norm in ghosts:
            g = b.let(b.fresh("gm"), dom_odd * grouped_sum([(p[i] / norm, named[f"d{i}"]) for i, _ in pairs], b))
            for i, _ in pairs:
                if p[i] != 0:
                    extra[i] = extra.get(i, 0) + sp.Float(w[i] * p[i], 30) * g
    even = {i: -omega4 / 2 * named[f"s{i}"] for i, _ in pairs}
    even.update({i: -omega4 * f[i] for i in rest})
    odd = {i: -omega3 / 2 * named[f"d{i}"] for i, _ in pairs}
    return reconstruct(b, vs, H, B, f=f, shifts=(even, odd), extra=({}, extra))
