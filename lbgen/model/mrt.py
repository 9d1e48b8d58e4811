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
    may be the Smagorinsky tau_eff of the ``-les`` variant."""
    D = vs.D
    half = sp.Rational(1, 2)
    b.block("MRT rates: 1/tau (1/tau_wall on wall rows) on the deviatoric second-order moments, omega_bulk on "
            "their trace (lbgen.model.mrt.mrt_collision)")
    om1 = b.let("om1", 1 / (wall * tau_wall + (1 - wall) * tau))
    b.block("equilibrium and Guo's source at the half-step velocity u + a/2, second-order Hermite moments "
            "(lbgen.model.mrt.mrt_collision)")
    uh = tuple(b.let(f"uh{AXES[k]}", u[k] + a[k] / 2) for k in range(D))
    second = components(2, D)
    diag = [c for c in second if max(c) == 2]
    neq = {c: b.let(f"Dq{component_tag(c)}", sp.expand(maxwellian_coefficient(c, rho, uh, sp.Integer(1))) - A[c])
           for c in second}
    src = {c: b.let(f"Sq{component_tag(c)}", rho * (uh[_axes(c)[0]] * a[_axes(c)[1]] + a[_axes(c)[0]] * uh[_axes(c)[1]]))
           for c in second}
    tr = b.let("Dq_tr", sp.Add(*(neq[c] for c in diag)) / D)
    trs = b.let("Sq_tr", sp.Add(*(src[c] for c in diag)) / D)
    B = {(0,) * D: rho}
    for k in range(D):
        e = tuple(1 if j == k else 0 for j in range(D))
        B[e] = A[e] + rho * a[k]
    for c in second:
        if c in diag:
            value = (A[c] + om1 * (neq[c] - tr) + omega_bulk * tr + (1 - om1 / 2) * (src[c] - trs)
                     + (1 - omega_bulk * half) * trs)
        else:
            value = A[c] + om1 * neq[c] + (1 - om1 / 2) * src[c]
        B[c] = b.let(f"B{component_tag(c)}", value)
    b.block("the higher orthogonal moments g_k = sum f p_k / <p_k, p_k>, relaxed to 0 with omega3 (degree 3) and "
            "omega4 (degree 4 and up) (lbgen.model.mrt.ghost_basis)")
    keep = {3: b.let("keep3", 1 - omega3), 4: b.let("keep4", 1 - omega4)}
    w = vs.weights_float()
    pairs, rest = opposite_pairs(vs)
    named = {str(s): s for s, _ in b.assignments}
    # p_k has the parity of its degree: even ones see the pair sums s_i, odd ones the differences d_i
    # (``hermite_moments``' symbols), and add to the pair's even or odd part of the reconstruction
    extra = ({}, {})
    for n, p, norm in ghost_basis(vs):
        odd = n % 2
        terms = [(p[i] / norm, named[f"{'sd'[odd]}{i}"]) for i, _ in pairs]
        terms += [] if odd else [(p[i] / norm, f[i]) for i in rest]
        g = b.let(b.fresh("gm"), keep[min(n, 4)] * grouped_sum(terms, b))
        for i in [i for i, _ in pairs] + ([] if odd else rest):
            if p[i] != 0:
                extra[odd][i] = extra[odd].get(i, 0) + sp.Float(w[i] * p[i], 30) * g
    return reconstruct(b, vs, H, B, extra=extra)



def _axes(c) -> Tuple[int, int]:
    """The two axes (k <= j) of a second-order component: (0, 0) for xx, (0, 2) for xz."""
    k, j = [m for m in range(len(c)) for _ in range(c[m])]
    return k, j
