"""Equilibrium and collision operators as CSE'd assignment lists.

Everything is phrased through Hermite moments, which is what makes the kernels cheap:

* the populations are paired with their opposites (xi_opp = -xi): even-order Hermite
  polynomials are even in xi and odd-order ones odd, so moments of even order need the
  pair sums s_i = f_i + f_opp and odd ones the differences d_i = f_i - f_opp;
* the macroscopic fields and all Hermite projections A_n (n <= N) are computed once;
* the post-collision populations are rebuilt as w_i sum_n B_n:H_n(xi_i)/n!, again split
  into an even part E_i and an odd part O_i so that f'_i = E_i + O_i, f'_opp = E_i - O_i;
* numeric coefficients w_i H_n(xi_i) mult/n! are folded into constants, and equal
  constants are factored out of the sums.

BGK (shifted equilibrium, paper Eq. 1):  f' = f - (f - f_eq(rho, u*, T*)) / tau with
u* = u + tau a, T* = T + tau (1 - tau) |a|^2 / D, a = force per unit mass per step.
On the rows next to a thermal wall (input ``wall`` = 1) tau = tau_wall (parameter, > 1/2;
default 1: the wall rows relax to the equilibrium of the moments the bc imposed -- without
it BGK walls are unstable for tau <~ 0.75).

Regularized (the reference production operator): relax A_2, A_3, A_4 towards the
equilibrium moments at (rho, u*, T*) with tau1, tau2, tau3, add the force to A_1, and
rebuild f from A_0..A_4.  tau1 = 1/2 + C1/(rho T), tau2 = 1/2 + C2/(rho T),
tau3 = 1/2 + C3; all three are tau_wall (default 1) on wall rows (input ``wall`` = 1).  The shift uses tau1.
The reference code does this in two stages (relax f, then project); by Hermite
orthogonality under the degree-9 quadrature the moments of the relaxed f are exactly
the relaxed moments, so one reconstruction suffices (tests check it against the literal
two-stage NumPy version).

TRT (``_trt``; isothermal sets): the symmetric and antisymmetric parts of f - f_eq relaxed with
tau and tau_minus = 1/2 + Lambda/(tau - 1/2), Guo's force split the same way; the even Hermite
orders rebuild the symmetric part and the odd ones the antisymmetric part.  The subgrid model
(``_smagorinsky``; the ``-les`` operators) replaces the shear relaxation time (tau, tau1) by the
closed-form Smagorinsky tau_eff.  The shared machinery (moments, reconstruction, CSE) is
``lbgen.model.derivation``.

The Hermite order N follows from the quadrature (``VelocitySet.hermite_order``): 4 for
D2Q37, 3 for D2V17 and D3Q39, 2 for D2Q9, D3Q19 and D3Q27.  Sets below order 3 are
isothermal: the equilibrium is taken at theta = 1 (no shift of T), the reported
temperature is the constant 1, and the regularized operator relaxes A_2 only (C2, C3 have
no effect).

The dimension D is the set's (``VelocitySet.D``, the length of its shells): it enters
through the Hermite components (``hermite.components(n, D)``), the D velocity and force
components (ux, uy[, uz], ax, ay[, az]), the temperature (D rho T = sum |xi - u|^2 f, so
T* - T = tau (1 - tau) |a|^2 / D) and the symmetries the reconstruction shares.
"""
from __future__ import annotations

import sympy as sp

from lbgen.model.assignments import AssignmentList
# the shared machinery (CONSTANT_DIGITS, Builder, cse_assignments, population_symbols: also imported from here)
from lbgen.model.derivation import (CONSTANT_DIGITS, Builder, component_tag, const, cse_assignments,  # noqa: F401
                                    fields_of_moments, grouped_sum, hermite_moments, hermite_values, in_blocks,
                                    opposite_pairs, population_symbols, reconstruct, unit_component)
from lbgen.model.hermite import components, maxwellian_coefficient, multiplicity
from lbgen.model.catalog import AXES
from lbgen.model.central import central_collision
from lbgen.model.cumulant import cumulant_collision
from lbgen.model.kbc import kbc_collision
from lbgen.model.mrt import mrt_collision
from lbgen.model.operators import LES_DESCRIPTION, force_arguments, operator as operator_record
from lbgen.model.velocity_set import VelocitySet

#: the collision's parameter for the relaxation time of the rows next to a thermal wall (all
#: three regularized ones): after ``wall`` in the parameters, 1 by default
WALL_TAU = "tau_wall"
#: its default: the fixed value of earlier releases, whose bits it keeps
WALL_TAU_DEFAULT = 1.0

def _description(record, vs: VelocitySet) -> str:
    """The operator record's description (written for D2Q37, order 4), or one for the set's order."""
    order = vs.hermite_order
    les = LES_DESCRIPTION if record.base is not None else ""
    name = record.base or record.name
    if order == 4 or name in ("trt", "cumulant", "mrt", "central", "kbc"):
        return record.description
    if name == "bgk":
        return (f"BGK with shifted-equilibrium forcing (Hermite order {order}"
                f"{', isothermal: T = 1' if vs.isothermal else ''})" + les)
    taus = ["tau1 = 1/2 + C1/(rho T)", "tau2 = 1/2 + C2/(rho T)", "tau3 = 1/2 + C3"][:order - 1]
    return (f"regularized: {', '.join(f'A{n}' for n in range(2, order + 1))} relaxed with {', '.join(taus)}, "
            f"force on A1, f rebuilt from A0..A{order}" + (" (isothermal: T = 1)" if vs.isothermal else "") + les)


def _smagorinsky(b: Builder, vs: VelocitySet, A, rho, u, T, a, tau0, cs) -> sp.Symbol:
    """The shear relaxation time with the Smagorinsky subgrid model, in closed form.

    Hou, Sterling, Chen & Doolen (1996); the form of Yu, Girimaji & Luo (J. Comput. Phys. 209
    (2005) 599) and Malaspinas & Sagaut (J. Fluid Mech. 700 (2012) 514).  In lattice units
    (Delta = 1, dt = 1): nu_t = (C_s Delta)^2 |S|, |S| = sqrt(2 S:S), tau_eff = tau0 + nu_t / c_s^2,
    and the strain rate from the non-equilibrium second moment of the populations relaxing with
    tau_eff: S = -Pi_neq / (2 rho c_s^2 tau_eff), Pi_neq = sum_i c_i c_i (f_i - f_eq_i).  Then
    tau_eff^2 - tau0 tau_eff - sqrt(2) C_s^2 |Pi_neq| / (2 rho c_s^4) = 0, |Pi_neq| = sqrt(Pi_neq:Pi_neq),
    whose positive root is tau_eff = (tau0 + sqrt(tau0^2 + 2 sqrt(2) C_s^2 |Pi_neq| / (rho c_s^4))) / 2
    (c_s^2 = 1/3: the 18 sqrt(2) C_s^2 |Pi_neq| / rho of the papers).  Here c_i = xi_i / r, c_s^2 = T / r^2
    and sum_i xi xi (f - f_eq) = A_2 - A_2,eq (the delta of H_2 cancels: the mass is in equilibrium), so
    |Pi_neq| / c_s^4 = r^2 |A_2 - A_2,eq| / T^2.  f_eq is taken at the half-step (physical) velocity
    u + a/2, which no relaxation time enters; C_s = 0 gives tau_eff = tau0 bit for bit (sqrt(tau0^2) = tau0
    in IEEE arithmetic).
    """
    D = vs.D
    b.block("Smagorinsky subgrid model: |Pi_neq| from A_2 - A_2,eq at the half-step velocity, tau_eff in closed "
            "form (lbgen.model.collision._smagorinsky)")
    uh = tuple(b.let(f"les_u{AXES[k]}", u[k] + a[k] / 2) for k in range(D))
    neq = {c: b.let(f"Aneq{component_tag(c)}", A[c] - sp.expand(maxwellian_coefficient(c, rho, uh, T)))
           for c in components(2, D)}
    norm2 = b.let("Pi2", sp.Add(*(multiplicity(c) * neq[c] ** 2 for c in components(2, D))))
    norm = b.let("Pi_neq", sp.sqrt(norm2))
    coef = const(2 * sp.sqrt(2) * vs.r_float() ** 2)
    radicand = b.let("les_q", tau0 ** 2 + coef * cs ** 2 * norm * inv_rho_T(rho, T) / T)
    root = b.let("les_root", sp.sqrt(radicand))
    return b.let("tau_les", (tau0 + root) / 2)


def _trt(b: Builder, vs: VelocitySet, f, H, A, rho, u, a, tau_bulk, magic, wall, tau_wall):
    """TRT with Guo's forcing: f' = f - w+ (f - f_eq)^+ - w- (f - f_eq)^- + (1 - w+/2) F^+ + (1 - w-/2) F^-.

    Ginzburg, Verhaeghe & d'Humieres, Commun. Comput. Phys. 3 (2008) 427: phi^+-_i = (phi_i +- phi_ibar)/2,
    ibar the opposite velocity (``VelocitySet.opposite``), w+ = 1/tau, w- = 1/tau_minus with
    (tau - 1/2)(tau_minus - 1/2) = Lambda.  Guo, Zheng & Shi, PRE 65 (2002) 046308: f_eq at the half-step
    velocity u + a/2 and the source F_i = w_i [H_1 . rho a + H_2 : rho (u a + a u) / 2].  Even Hermite orders
    are symmetric in xi -> -xi and odd ones antisymmetric, so the symmetric part of w+ f_eq + (1 - w+/2) F is
    rebuilt from the even coefficients B_n = w+ A_eq,n + (1 - w+/2) S_n and the antisymmetric part from the
    odd ones with w-, and the populations enter only as the pair sums s_i and differences d_i.  S_n is the
    derivative a . d/du of A_eq,n, so (order <= 2) B_n = w [A_eq,n(u + tau_n a) - (tau_n - 1/2)^2 rho (a a)_n]:
    shifted equilibria at u + tau a (even) and u + tau_minus a (odd), the even ones less a correction
    (the cheaper form; the identity is checked symbolically by the tests).
    """
    D = vs.D
    b.block("relaxation times tau (tau_wall on wall rows) and tau_minus = 1/2 + Lambda/(tau - 1/2) "
            "(lbgen.model.collision._trt)")
    tau_p = b.let("tau_p", wall * tau_wall + (1 - wall) * tau_bulk)
    tau_m = b.let("tau_m", wall * tau_wall + (1 - wall) * (sp.Rational(1, 2) + magic / (tau_bulk - sp.Rational(1, 2))))
    om = {0: b.let("om_p", 1 / tau_p), 1: b.let("om_m", 1 / tau_m)}
    b.block("equilibrium and Guo's source as shifted equilibria: even orders at u + tau a with 1/tau less "
            "(tau - 1/2)^2 rho a a, odd ones at u + tau_minus a with 1/tau_minus (lbgen.model.collision._trt)")
    # w A_eq(u + a/2) + (1 - w/2) S(u + a/2) = w [A_eq(u + tau_n a) - (tau_n - 1/2)^2 rho a a] (order <= 2,
    # tau_n = 1/w): Guo's source is the a-derivative of the equilibrium (tests/model/test_trt_les_physics.py)
    assert vs.hermite_order <= 2, "TRT is derived for the isothermal (second-order) sets"
    taus = (tau_p, tau_m)
    shifted = [tuple(b.let(f"u{'pm'[p]}{AXES[k]}", u[k] + taus[p] * a[k]) for k in range(D)) for p in (0, 1)]
    rate_rho = [b.let(f"rw{'pm'[p]}", rho * om[p]) for p in (0, 1)]
    correction = b.let("kaa", rate_rho[0] * (tau_p - sp.Rational(1, 2)) ** 2)
    B = {}
    for n in range(vs.hermite_order + 1):
        p = n % 2
        for c in components(n, D):
            coefficient = sp.expand(maxwellian_coefficient(c, rate_rho[p], shifted[p], sp.Integer(1)))
            if n == 2:
                coefficient -= correction * sp.Mul(*(a[k] ** c[k] for k in range(D)))
            B[c] = b.let(f"B{component_tag(c)}", coefficient)
    pairs, rest = opposite_pairs(vs)
    half = (b.let("hp", om[0] / 2), b.let("hm", om[1] / 2))
    # f_i - w+ f^+_i - w- f^-_i: the pair's shares -w+ (f_i + f_ibar)/2 and -w- (f_i - f_ibar)/2 ride on E_i, O_i
    even = {i: -half[0] * (f[i] + f[o]) for i, o in pairs}
    even.update({i: -om[0] * f[i] for i in rest})
    odd = {i: -half[1] * (f[i] - f[o]) for i, o in pairs}
    return reconstruct(b, vs, H, B, f=f, shifts=(even, odd))


def collision(vs: VelocitySet, operator: str, specialised: bool = False) -> AssignmentList:
    """The collide kernel body for one site: inputs f0..f{Q-1}, outputs fout0...; ``specialised``: the
    body derived with the operator's ``specialised`` parameters fixed at their defaults (the same
    parameters and, at those values, the same results: the cumulant at omega3 = omega4 = 1 without its
    cumulants of order >= 3, which then relax to 0, nor the limiter, whose rate is then 1 whatever lambda)."""
    record = operator_record(operator)          # ParameterError (a ValueError) for unknown names
    record.check_set(vs.name, not vs.isothermal)
    if specialised and not record.specialised:
        raise ValueError(f"operator {operator!r} has no parameters a specialised collision is derived at")
    base = record.base or record.name
    f = population_symbols(vs.Q)
    D = vs.D
    a = tuple(sp.Symbol(n, real=True) for n in force_arguments(D))
    order = vs.hermite_order
    H = hermite_values(vs, order)
    b = Builder()
    if base not in ("cumulant", "central", "kbc"):   # these have their own moments (lbgen.model.cumulant, ...)
        A = hermite_moments(b, vs, f, H)
        rho, u, T = fields_of_moments(b, A, vs)
    a2 = sp.Add(*(ak ** 2 for ak in a))
    wall = sp.Symbol("wall", real=True)
    # the wall rows' relaxation time (a parameter, > 1/2; 1 by default: the bits of a fixed 1)
    tau_wall = sp.Symbol(WALL_TAU, positive=True)
    symbols = {n: sp.Symbol(n, positive=True) if n in ("tau", "magic") else sp.Symbol(n, real=True)
               for n in record.parameter_names}
    params = (*symbols.values(), *a, wall, tau_wall)
    # the specialised body: those parameters' defaults as numbers (the arguments stay; the body ignores them)
    symbols = {**symbols, **({n: sp.Rational(v) for n, v in record.special_values().items()} if specialised else {})}

    def subgrid(tau0):
        """tau0, or the Smagorinsky tau_eff of it for an operator with the subgrid model."""
        if record.base is None:
            return tau0
        return _smagorinsky(b, vs, A, rho, u, T, a, tau0, symbols["smagorinsky"])

    if base == "bgk":
        tau_in = subgrid(symbols["tau"])
        # rows next to a thermal wall (wall = 1) relax with tau = tau_wall, as in the regularized operator
        b.block("relaxation: tau (tau_wall on wall rows) and 1/tau (lbgen.model.collision.collision, bgk)")
        tau = b.let("tau_w", wall * tau_wall + (1 - wall) * tau_in)
        inv_tau = b.let("inv_tau", 1 / tau)
        b.block("equilibrium: shifted u* = u + tau a, T* and the Maxwellian's Hermite coefficients "
                "times 1/tau (lbgen.model.hermite.maxwellian_coefficient via collision.collision, bgk)")
        us = tuple(b.let(f"us{AXES[k]}", u[k] + tau * a[k]) for k in range(D))
        # D (T* - T) = tau (1 - tau) |a|^2: the step adds u.F + |F|^2/(2 rho) to the energy
        Ts = T if vs.isothermal else b.let("Ts", T + tau * (1 - tau) * a2 / D)
        # f' = (1 - 1/tau) f + f_eq*/tau: the equilibrium coefficients carry the 1/tau
        B = {}
        for n in range(order + 1):
            for c in components(n, D):
                B[c] = b.let(f"B{component_tag(c)}", sp.expand(maxwellian_coefficient(c, rho * inv_tau, us, Ts)))
        outputs = reconstruct(b, vs, H, B, f_scale=1 - inv_tau, f=f)
    elif base == "cumulant":
        outputs = cumulant_collision(b, vs, f, a, symbols["tau"], symbols["omega_bulk"], symbols["omega3"],
                                     symbols["omega4"], wall, tau_wall,
                                     limiter=symbols["cumulant_limiter"],
                                     smagorinsky=symbols.get("smagorinsky"))
    elif base == "central":
        outputs = central_collision(b, vs, f, a, symbols["tau"], symbols["omega_bulk"], symbols["omega3"],
                                    symbols["omega4"], wall, tau_wall)
    elif base == "kbc":
        outputs = kbc_collision(b, vs, f, a, symbols["tau"], wall, tau_wall)
    elif base == "mrt":
        outputs = mrt_collision(b, vs, f, H, A, rho, u, a, subgrid(symbols["tau"]), symbols["omega_bulk"],
                                symbols["omega3"], symbols["omega4"], wall, tau_wall)
    elif base == "trt":
        outputs = _trt(b, vs, f, H, A, rho, u, a, subgrid(symbols["tau"]), symbols["magic"], wall, tau_wall)
    else:
        C1, C2, C3 = (symbols[n] for n in ("C1", "C2", "C3"))
        b.block("relaxation times tau1, tau2, tau3 (tau_wall on wall rows) "
                "(lbgen.model.collision.collision, regularized)")
        inv_rhoT = b.let("inv_rhoT", inv_rho_T(rho, T))
        tau1_bulk = sp.Rational(1, 2) + C1 * inv_rhoT
        if record.base is not None:
            tau1_bulk = subgrid(b.let("tau1_bulk", tau1_bulk))
        # wall rows (wall = 1) relax everything with tau = tau_wall
        tau1 = b.let("tau1", wall * tau_wall + (1 - wall) * tau1_bulk)
        tau2 = b.let("tau2", wall * tau_wall + (1 - wall) * (sp.Rational(1, 2) + C2 * inv_rhoT))
        tau3 = b.let("tau3", wall * tau_wall + (1 - wall) * (sp.Rational(1, 2) + C3))
        rates = {2: b.let("om1", 1 / tau1), 3: b.let("om2", 1 / tau2), 4: b.let("om3", 1 / tau3)}
        b.block("equilibrium: shifted u* = u + tau1 a, T* and the Maxwellian's Hermite coefficients "
                "A_eq, n = 2..4 (lbgen.model.hermite.maxwellian_coefficient via collision.collision, regularized)")
        us = tuple(b.let(f"us{AXES[k]}", u[k] + tau1 * a[k]) for k in range(D))
        Ts = T if vs.isothermal else b.let("Ts", T + tau1 * (1 - tau1) * a2 / D)
        eqs = {c: b.let(f"Aeq{component_tag(c)}", sp.expand(maxwellian_coefficient(c, rho, us, Ts)))
               for n in range(2, order + 1) for c in components(n, D)}
        b.block("relaxation: B_n = A_n + (A_eq,n - A_n)/tau_n, force on A_1 "
                "(lbgen.model.collision.collision, regularized)")
        B = {(0,) * D: rho, **{unit_component(D, k): A[unit_component(D, k)] + rho * a[k] for k in range(D)}}
        for n in range(2, order + 1):
            for c in components(n, D):
                B[c] = b.let(f"B{component_tag(c)}", A[c] + (eqs[c] - A[c]) * rates[n])
        outputs = reconstruct(b, vs, H, B)
    description = f"{_description(record, vs)}; wall rows: {record.wall_rows}"
    assert tuple(map(str, params[:-2])) == record.kernel_arguments_of(D), "collision symbols != operator record"
    assignments, blocks = in_blocks(cse_assignments(b.assignments, outputs), b)
    return AssignmentList(name=f"collide_{operator.replace('-', '_')}{'_special' if specialised else ''}", inputs=f,
                          parameters=params,
                          defaults=((WALL_TAU, WALL_TAU_DEFAULT),),
                          assignments=assignments, outputs=outputs, description=description, blocks=blocks)


def inv_rho_T(rho, T):
    return 1 / (rho * T)


def half_step_shift(vs: VelocitySet, a):
    """The one definition of the physical (half-step) fields, as what they add to the stored moments.

    The stored populations are post-collision: their moments (``macroscopic``) are
    (rho, u, T) with u = u_pre + a, where a = (ax, ay) (``FORCE_ARGUMENTS``, the kernels'
    force arguments) is the force per unit mass per step, in the units of u: a = g / r for
    gravity g in model units (d2q37.md: F = rho g Delta t, Delta t = 1/r).  The physical
    fields are those of the half step, the mean of the pre- and post-collision moments:

    * rho_H = rho (the collision keeps the mass);
    * u_H = (u_pre + u_post) / 2 = u - a/2;
    * T_H: the mean total energy rho (D T/2 + |u|^2/2) of the two states less rho |u_H|^2 / 2,
      over rho D/2.  Both operators keep the temperature (T_post = T_pre: the shifted
      equilibrium's T* = T + tau (1 - tau) |a|^2 / D adds exactly rho (u.a + |a|^2/2) of energy,
      with tau = tau1 for the regularized operator and tau = 1 on wall rows, for any state),
      so T_H = T + |a|^2 / (4 D): T + |a|^2/8 in D = 2, the "physical temperature
      T + |F|^2/(8 rho^2)" of d2q37.md.  Isothermal sets report T = 1 (no shift).

    ``a``: the D force components (sympy symbols or numbers).  Returns (du, dT), du a tuple of
    D components, with physical = stored + shift.
    """
    du = tuple(-ak / 2 for ak in a)
    dT = sp.Integer(0) if vs.isothermal else sp.Add(*(ak ** 2 for ak in a)) / (4 * len(a))
    return du, dT


def physical(vs: VelocitySet) -> AssignmentList:
    """Physical (half-step) fields from the stored moments: inputs rho_out, ux_out, uy_out[,
    uz_out], T_out (the outputs of ``macroscopic``), parameters ax, ay[, az] -> rho_phys,
    ux_phys, uy_phys[, uz_phys], T_phys (``half_step_shift``)."""
    D = vs.D
    rho, T = sp.Symbol("rho_out", real=True), sp.Symbol("T_out", real=True)
    u = tuple(sp.Symbol(f"u{axis}_out", real=True) for axis in AXES[:D])
    a = tuple(sp.Symbol(n, real=True) for n in force_arguments(D))
    du, dT = half_step_shift(vs, a)
    b = Builder()
    outputs = (b.let("rho_phys", rho), *(b.let(f"u{AXES[k]}_phys", u[k] + du[k]) for k in range(D)),
               b.let("T_phys", T + dT))
    return AssignmentList(name="physical", inputs=(rho, *u, T), parameters=a,
                          assignments=tuple(b.assignments), outputs=outputs,
                          description="rho, u - a/2, " + ("T = 1 (isothermal)" if vs.isothermal
                                                          else f"T + |a|^2/{4 * D}"))


def equilibrium(vs: VelocitySet) -> AssignmentList:
    """Populations whose physical fields are the inputs: inputs rho, ux, uy[, uz], T (physical,
    half-step), parameters ax, ay[, az] -> fout_i, the Maxwellian at the stored moments
    (rho, u - du, T - dT) of ``half_step_shift``: the exact inverse of ``macroscopic`` followed
    by ``physical`` (to round-off), so a fluid given at rest starts at rest."""
    D = vs.D
    rho, T = sp.symbols("rho T", real=True)
    u = tuple(sp.Symbol(f"u{axis}", real=True) for axis in AXES[:D])
    a = tuple(sp.Symbol(n, real=True) for n in force_arguments(D))
    order = vs.hermite_order
    H = hermite_values(vs, order)
    b = Builder()
    du, dT = half_step_shift(vs, a)
    us = tuple(b.let(f"us{AXES[k]}", u[k] - du[k]) for k in range(D))
    # isothermal sets ignore the T input
    theta = sp.Integer(1) if vs.isothermal else b.let("Ts", T - dT)
    B = {}
    for n in range(order + 1):
        for c in components(n, D):
            B[c] = b.let(f"B{component_tag(c)}", sp.expand(maxwellian_coefficient(c, rho, us, theta)))
    outputs = reconstruct(b, vs, H, B)
    assignments = cse_assignments(b.assignments, outputs)
    return AssignmentList(name="equilibrium", inputs=(rho, *u, T), parameters=a,
                          assignments=assignments, outputs=outputs,
                          description=f"order-{order} Hermite expansion of the Maxwellian at the stored "
                                      f"moments of the physical fields (u + a/2"
                                      + (", T = 1: isothermal)" if vs.isothermal else f", T - |a|^2/{4 * D})"))


def macroscopic(vs: VelocitySet) -> AssignmentList:
    """The stored (post-collision) moments of populations: inputs f_i -> rho, ux, uy[, uz], T
    (u = sum xi f / rho).  What the walls' algebra works on; what lbgen reports is
    ``physical`` of these."""
    f = population_symbols(vs.Q)
    H = hermite_values(vs, 2)
    b = Builder()
    pairs, rest = opposite_pairs(vs)
    A = {}
    s = {i: f[i] + f[o] for i, o in pairs}
    d = {i: f[i] - f[o] for i, o in pairs}
    D = vs.D
    for c in [(0,) * D] + [unit_component(D, k) for k in range(D)] + [unit_component(D, k, 2) for k in range(D)]:
        if sum(c) % 2 == 0:
            terms = [(H[c][i], s[i]) for i, _ in pairs] + [(H[c][i], f[i]) for i in rest]
        else:
            terms = [(H[c][i], d[i]) for i, _ in pairs]
        A[c] = b.let(f"A{component_tag(c)}", grouped_sum(terms, b))
    rho, u, T = fields_of_moments(b, A, vs)
    outputs = tuple(b.let(n, v) for n, v in (("rho_out", rho), *((f"u{AXES[k]}_out", u[k]) for k in range(D)),
                                             ("T_out", T)))
    assignments = cse_assignments(b.assignments, outputs)
    return AssignmentList(name="macroscopic", inputs=f, parameters=(), assignments=assignments,
                          outputs=outputs, description=f"stored moments: rho, u = sum xi f / rho, "
                                                       f"T = sum |xi-u|^2 f / ({D} rho)")
