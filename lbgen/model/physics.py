"""The physical numbers of a run: transport coefficients, sound speed, dimensionless groups.

The one home of these formulas.  Light: nothing here imports sympy at import time (the
scale factor r of a velocity set is looked up inside :func:`scale_factor`).

**Unit system: lattice units** -- lengths in lattice sites, times in time steps.  Every
number this module returns is in these units (or dimensionless).  The kernels take and the
fields report *model* quantities, whose velocity unit is r sites per step (xi_i = r e_i: one
hop per step is a speed r) and whose time unit is Delta t = 1/r of a step; the conversions
are the functions below (:func:`velocity_to_lattice`, :func:`gravity_to_lattice`,
:func:`steps_to_model_time`, ...).  Temperatures stay the model's (T = 1 is the lattice's
reference temperature; in lattice units it is theta = T / r^2 sites^2/step^2).

Formulas (D = 2 or 3; measured in ``tests/model/test_physics.py`` and, in 3D,
``tests/model/test_physics3d.py`` on decaying waves):

* kinematic viscosity nu = (tau_1 - 1/2) theta, theta = T / r^2, with tau_1 the relaxation time
  (in steps) of the second-order Hermite moments (Chapman-Enskog; the -1/2 is the
  discrete-time correction).  BGK: nu = (tau - 1/2) T / r^2.  Regularized: tau_1 = 1/2 +
  C1/(rho T), so nu = C1 / (rho r^2) -- independent of T (constant dynamic viscosity
  rho nu = C1 / r^2).  In model time units (Delta t = 1/r) the same viscosity reads r times
  larger: (tau - 1/2) T / r.
* thermal diffusivity kappa (the rate kappa k^2 of a temperature wave at constant pressure)
  = (tau_2 - 1/2) theta, tau_2 the relaxation time of the third-order moments, which carry
  the heat flux.  BGK: kappa = nu (Prandtl 1).  Regularized: tau_2 = 1/2 + C2/(rho T), so
  kappa = C2 / (rho r^2).  Isothermal sets (D2Q9, D3Q19, D3Q27) have none.
  **Third-order sets (D2V17, D3Q39): kappa / T^2.**  The heat flux of Chapman-Enskog is set
  by the contracted fourth moment sum_i f_eq xi_a xi_b xi^2, which the Maxwellian has as
  rho (D + 2) T^2 delta_ab (at u = 0) and a third-order equilibrium as rho (D + 2) (2T - 1)
  delta_ab: the same at T = 1, and in a temperature wave at constant pressure a heat flux
  1/T^2 times the Maxwellian's (its d/dT at constant p is p/T^2 against p).  Measured to
  1 % at T = 0.9 and 1.1, BGK and regularized, D2V17 and D3Q39; the fourth-order D2Q37 has
  the Maxwellian's moment and kappa as above.  So a third-order set conducts heat as the
  formula only near T = 1 (2 % off at T = 0.99 or 1.01, 9 % at 1.05): use D2Q37 for large contrasts.
* adiabatic sound speed c_s = sqrt(gamma theta) = sqrt(gamma T) / r, gamma = (D + 2)/D for the
  thermal sets (ideal gas p = rho T, c_v = D/2: 2 in 2D, 5/3 in 3D); isothermal sets: gamma = 1
  (D2Q9, D3Q19, D3Q27: 1/sqrt(3)).
* Prandtl Pr = nu / kappa.
* Rayleigh-Taylor: Atwood A = (T_hot - T_cold)/(T_hot + T_cold) (densities ~ 1/T at equal
  pressure); length L = LX, the box width (the largest wavelength of the interface, and the
  length of Scagliarini et al.'s time unit); time unit t_RT = sqrt(L / (A g)); free-fall speed
  U = sqrt(A g L) = L / t_RT; Reynolds Re = U L / nu; Mach Ma = U / c_s.  g = |g_y| / r^2, the
  gravity across the interface.
* thermal convection between fixed-temperature walls: Ra = g beta (T_bottom - T_top) H^3 /
  (nu kappa), beta = 1 / T_mean (ideal gas), g = -g_y / r^2 (positive downwards, so Ra > 0
  means heated from below), H the *effective* depth: the distance between the isothermal
  planes measured in ``lbgen.model.wall_planes`` (where the steady conduction profile reaches
  the wall temperatures), not between the rows where the bc imposes them (the last wall row
  at each side: LY - 2 h + 1 for h wall rows, D2Q37: LY - 5).  D2Q37 BGK tau = 0.8: LY - 5.6;
  regularized C1 = C2 = 1e-3: LY - 9.6 (docs/physics.md, "Where the walls are").
* walled runs: the effective planes themselves (``y_no_slip``, ``y_isothermal``: bottom and
  top, in row coordinates 0 .. LY - 1) from the same table.

The Navier-Stokes values above are the long-wave limit.  Measured departures (regularized,
D2Q37): a shear wave of k = 2 pi / 16 decays 16 % faster than nu k^2 at C1 = 2e-3 (1.5 % at
k = 2 pi / 32, 0.2 % at 2 pi / 64); a temperature wave at T = 1.1 (C2 = 5e-3) 15 % faster
than kappa k^2 at k = 2 pi / 32, 4 % at 2 pi / 64, 1 % at 2 pi / 128 (at T = 1: 2 %, 0.4 %).
With tau close to 1/2 a wave started at equilibrium also carries a stress oscillation
~ (1 - 1/tau_1)^n that lives ~ 1 / (4 (tau_1 - 1/2)) steps (125 at C1 = 2e-3).
"""
from __future__ import annotations

import math
from typing import Dict, Mapping, Optional, Tuple

#: the unit system of every number here
UNITS = "lattice sites and time steps"
#: the unit of each entry of :func:`run_numbers`
UNIT_OF: Dict[str, str] = {
    "nu": "sites^2/step", "kappa": "sites^2/step", "Pr": "1", "c_s": "sites/step", "g": "sites/step^2",
    "Atwood": "1", "L": "sites", "U_ff": "sites/step", "t_unit": "steps", "Re": "1", "Ma": "1",
    "H": "sites", "Ra": "1", "r": "model velocity / (sites/step)", "rho_ref": "model density",
    "U": "sites/step", "t_unit_name": "text",
    "T_ref": "model temperature", "y_no_slip": "row", "y_isothermal": "row", "wall_planes_note": "text",
    "z_no_slip": "plane", "z_isothermal": "plane", "x_no_slip": "plane", "x_isothermal": "plane",
    "adiabatic_ratio": "1", "Ra_c": "1", "Nu_published": "1", "Nu_source": "text",
}
#: spatial dimension of the 2D velocity sets (the default of :func:`sound_speed`)
D = 2
#: below this Hermite order the heat flux is not the Maxwellian's away from T = 1
#: (:func:`thermal_diffusivity`)
FULL_HEAT_FLUX_ORDER = 4


# --------------------------------------------------------------------------- the velocity set
def scale_factor(velocity_set: str = "d2q37") -> float:
    """r of a velocity set (xi_i = r e_i): one hop per step is a model speed r."""
    from lbgen.model.velocity_set import velocity_set as solved
    return float(solved(velocity_set).r)


def is_thermal(velocity_set: str = "d2q37") -> bool:
    from lbgen.model.catalog import set_entry
    return not set_entry(velocity_set).isothermal


def wall_rows(velocity_set: str = "d2q37") -> int:
    """Rows next to each wall (the largest hop); the bc imposes fixed temperatures at the last
    one (the effective planes lie elsewhere: :func:`wall_planes`)."""
    from lbgen.model.catalog import set_entry
    return set_entry(velocity_set).max_hop


# --------------------------------------------------------------------------- conversions
def velocity_to_lattice(u: float, r: float) -> float:
    """A model velocity (as the fields report it) in sites/step."""
    return u / r


def velocity_to_model(u: float, r: float) -> float:
    return u * r


def gravity_to_lattice(g: float, r: float) -> float:
    """A model acceleration (``--gravity``) in sites/step^2: the force per unit mass per
    step is g / r model velocity, i.e. g / r^2 sites/step each step."""
    return g / r ** 2


def gravity_to_model(g: float, r: float) -> float:
    return g * r ** 2


def temperature_to_lattice(T: float, r: float) -> float:
    """theta = T / r^2 (sites^2/step^2), the temperature as a squared lattice speed."""
    return T / r ** 2


def steps_to_model_time(steps: float, r: float) -> float:
    """The model time of a number of steps (t = steps / r; pictures and series.csv use it)."""
    return steps / r


def model_time_to_steps(t: float, r: float) -> float:
    return t * r


def diffusivity_to_model(nu: float, r: float) -> float:
    """A diffusivity in sites^2/step as sites^2 per model time unit (r times larger)."""
    return nu * r


# --------------------------------------------------------------------------- the flow's own units
#: the flow's own time unit of each kind of set-up (``t_unit_name`` of :func:`run_numbers`):
#: how the header writes it, and its mathtext label in picture titles and series.png
TIME_UNIT_LABELS: Dict[str, str] = {
    "t_RT": r"$t_{RT}$",            # Rayleigh-Taylor: sqrt(L / (A g))
    "L/U_lid": r"$L/U_{lid}$",      # a cavity: one lid transit
    "H^2/nu": r"$H^2/\nu$",         # a channel: the viscous time across it (steady after ~0.2 of it)
    "t_nu": r"$t_\nu$",             # a decaying wave or vortex: 1 / (nu k^2), k = 2 pi / L
    "t_c": r"$t_c$",                # the Taylor-Green vortex: the convective time L / U, L = N / (2 pi)
}


def time_unit(numbers: Mapping[str, object]) -> Optional[Tuple[float, str]]:
    """(steps per unit, mathtext label) of the flow's own time unit of a run's numbers
    (:func:`run_numbers`, ``lbgen.run.numbers.physics3d``), or None when the flow has none:
    the one definition that titles, series.png, the .vti field data and the header share."""
    steps, name = numbers.get("t_unit"), numbers.get("t_unit_name")
    if not steps or name not in TIME_UNIT_LABELS:
        return None
    return float(steps), TIME_UNIT_LABELS[name]


def lid_numbers(U: float, L: float, nu: float, c_s: float) -> Dict[str, float]:
    """A lid-driven cavity of size L (sites) whose lid moves at U (sites/step): U, L, Re = U L / nu,
    Ma = U / c_s and the time unit of one lid transit L / U (steps)."""
    return {"U": U, "L": L, "Re": reynolds(U, L, nu), "Ma": U / c_s, "t_unit": L / U, "t_unit_name": "L/U_lid"}


def channel_numbers(g: float, H: float, nu: float, c_s: float) -> Dict[str, float]:
    """A channel of width H (sites) between no-slip walls driven by g (sites/step^2): the
    centre speed of its steady plane Poiseuille flow U = g H^2 / (8 nu) (a square duct's is
    0.59 of it), H, Re = U H / nu, Ma = U / c_s and the viscous time H^2 / nu (steps)."""
    U = g * H * H / (8.0 * nu)
    return {"U": U, "H": H, "Re": reynolds(U, H, nu), "Ma": U / c_s, "t_unit": H * H / nu, "t_unit_name": "H^2/nu"}


def channel_width(shape, wall_axes, gravity) -> Optional[int]:
    """H of a channel (2D or 3D): the narrowest extent between its walls (half-way bounce-back:
    the lattice's width along the axis), when the force is parallel to every wall; None where
    it has no walls or pushes the fluid into one (no Poiseuille flow, no channel numbers)."""
    axes = "xyz"[:len(shape)]
    if not wall_axes or any(gravity[axes.index(a)] for a in wall_axes):
        return None
    return min(shape[axes.index(a)] for a in wall_axes)


def wave_numbers(U: float, L: float, nu: float, c_s: float) -> Dict[str, float]:
    """A decaying wave or vortex of amplitude U (sites/step) and wavelength L (sites): U, L,
    Re = U L / nu, Ma = U / c_s and the viscous decay time 1 / (nu k^2), k = 2 pi / L (steps)."""
    k = 2.0 * math.pi / L
    return {"U": U, "L": L, "Re": reynolds(U, L, nu), "Ma": U / c_s, "t_unit": 1.0 / (nu * k * k),
            "t_unit_name": "t_nu"}


def taylor_green_length(N: int) -> float:
    """The length scale L of the 3D Taylor-Green vortex on N sites per period: the box is 2 pi L
    (Brachet et al., J. Fluid Mech. 130 (1983) 411; DeBonis, AIAA 2013-0382), L = N / (2 pi)."""
    return N / (2.0 * math.pi)


def taylor_green_numbers(U: float, N: int, nu: float, c_s: float) -> Dict[str, float]:
    """The 3D Taylor-Green vortex of amplitude U (sites/step) on N sites per period: U, L =
    N / (2 pi), Re = U L / nu, Ma = U / c_s and the convective time t_c = L / U (steps)."""
    L = taylor_green_length(N)
    return {"U": U, "L": L, "Re": reynolds(U, L, nu), "Ma": U / c_s, "t_unit": L / U, "t_unit_name": "t_c"}


def viscosity_parameters(collision: str, nu: float, *, r: float, T: float = 1.0, rho: float = 1.0) -> Dict[str, float]:
    """The operator parameter that gives the kinematic viscosity nu (sites^2/step): the inverse of
    :func:`kinematic_viscosity` (tau = 1/2 + nu r^2 / T; regularized C1 = nu rho r^2)."""
    from lbgen.model.operators import operator
    base = operator(collision).base or collision
    excess = nu / temperature_to_lattice(T, r)
    if base in ("bgk", "trt", "cumulant", "mrt", "central", "kbc"):
        return {"tau": 0.5 + excess}
    if base == "regularized":
        return {"C1": excess * rho * T}
    raise ValueError(f"no transport coefficients known for collision operator {collision!r}")


# --------------------------------------------------------------------------- transport
def _relaxation_excess(collision: str, parameters: Mapping[str, float], name: str, rho: float, T: float) -> float:
    """tau_n - 1/2 of the moments whose relaxation sets a transport coefficient, in steps."""
    from lbgen.model.operators import operator
    collision = operator(collision).base or collision       # the subgrid model adds nu_t on top (flow-dependent)
    if collision in ("bgk", "trt", "cumulant", "mrt", "central", "kbc"):              # trt: tau relaxes the symmetric (even) part
        return parameters["tau"] - 0.5
    if collision == "regularized":
        return parameters[name] / (rho * T)          # tau_n = 1/2 + C_n / (rho T)
    raise ValueError(f"no transport coefficients known for collision operator {collision!r}")


def kinematic_viscosity(collision: str, parameters: Mapping[str, float], *, r: float, T: float = 1.0,
                        rho: float = 1.0) -> float:
    """nu (sites^2/step) = (tau_1 - 1/2) T / r^2: BGK (tau - 1/2) T / r^2, regularized C1 / (rho r^2)."""
    return _relaxation_excess(collision, parameters, "C1", rho, T) * temperature_to_lattice(T, r)


def thermal_diffusivity(collision: str, parameters: Mapping[str, float], *, r: float, order: int,
                        T: float = 1.0, rho: float = 1.0) -> float:
    """kappa (sites^2/step) = (tau_2 - 1/2) T / r^2: BGK (tau - 1/2) T / r^2, regularized
    C2 / (rho r^2); divided by T^2 for a set of Hermite ``order`` 3 (D2V17, D3Q39: the
    module's docstring).  Thermal sets only (the caller checks :func:`is_thermal`)."""
    kappa = _relaxation_excess(collision, parameters, "C2", rho, T) * temperature_to_lattice(T, r)
    return kappa * T ** conductivity_exponent(order)


def conductivity_exponent(order: int) -> int:
    """n of the conductivity's law rho kappa ~ T^n at a given pressure (or density, regularized):
    0 for the sets of Hermite order 4 and more, -2 for the third-order ones (D2V17, D3Q39: the
    module's docstring), whose steady conduction has 1/T, not T, linear in the height."""
    return 0 if order >= FULL_HEAT_FLUX_ORDER else -2


def hermite_order(velocity_set: str = "d2q37") -> int:
    """The Hermite order of a set's equilibrium (D2Q37: 4; D2V17, D3Q39: 3; isothermal: 2)."""
    from lbgen.model.catalog import set_entry
    return set_entry(velocity_set).order


def sound_speed(T: float = 1.0, *, r: float, thermal: bool = True, dimension: int = D) -> float:
    """Adiabatic c_s = sqrt(gamma T) / r (sites/step); gamma = (D + 2)/D (2 in 2D, 5/3 in 3D),
    or 1 when isothermal."""
    gamma = (dimension + 2) / dimension if thermal else 1.0
    return math.sqrt(gamma * temperature_to_lattice(T, r))


#: the fastest moving wall (lid) a run takes, as a Mach number |u| / c_s (c_s at the reference
#: temperature T = 1, :func:`sound_speed`): beyond it the weakly compressible lattice Boltzmann
#: equations do not hold (compressibility errors ~ Ma^2 = 25 %) and a D3Q19 cavity diverges at
#: every relaxation time measured (tau = 0.51 from Ma 0.2; tau = 0.8 runs, far off the
#: incompressible flow, to Ma 1).  Refused above it (:func:`lid_mach_check`); a Rayleigh-Taylor
#: free fall above it is refused too (``lbgen.run.setups.rt_gravity_refusal``).
LID_MACH_MAX = 0.5
#: above this Mach number (and up to LID_MACH_MAX) a lid is taken with a warning: errors
#: ~ Ma^2 > 9 %, and runs with a relaxation time near 1/2 go unstable (tau = 0.51 from Ma 0.2)
LID_MACH_WARN = 0.3


def lid_mach(u, velocity_set: str) -> float:
    """Mach number |u| / c_s of a moving wall of model velocity ``u`` (three components) on a
    set's lattice: |u| / r against c_s = :func:`sound_speed` at T = 1."""
    from lbgen.model.catalog import set_entry
    r = scale_factor(velocity_set)
    c_s = sound_speed(1.0, r=r, thermal=is_thermal(velocity_set), dimension=set_entry(velocity_set).D)
    return velocity_to_lattice(math.sqrt(sum(float(c) ** 2 for c in u)), r) / c_s


class LidMachWarning(UserWarning):
    """A lid in the unstable band LID_MACH_WARN < Ma <= LID_MACH_MAX: taken, with this warning
    (``lbgen.Simulation`` warns with it; ``lbgen run`` prints it as a ``warning:`` line)."""


def lid_mach_check(face: str, u, velocity_set: str, what: str = "lid") -> Optional[str]:
    """The one rule of lid and inlet speeds (``what``: 'lid' or 'inlet', its fastest site):
    ValueError (naming the face, its Mach number and the limit)
    above LID_MACH_MAX; the text of a LidMachWarning in the band above LID_MACH_WARN; else None."""
    ma = lid_mach(u, velocity_set)
    if ma > LID_MACH_MAX:
        speed = LID_MACH_MAX * math.sqrt(sum(float(c) ** 2 for c in u)) / ma
        raise ValueError(f"{what} {face}: velocity ({', '.join(f'{float(c):g}' for c in u)}) is Mach {ma:.3g} on "
                         f"{velocity_set}; a{'n' if what[0] in 'aeiou' else ''} {what} may move at most at Mach "
                         f"{LID_MACH_MAX:g} (|u| <= {speed:.4g} in model units)")
    if ma > LID_MACH_WARN:
        return (f"{what} {face} moves at Mach {ma:.3g} ({LID_MACH_WARN:g} < Ma <= {LID_MACH_MAX:g}): "
                f"compressibility errors ~ Ma^2, and runs with a relaxation time near 1/2 go unstable")
    return None


def prandtl(nu: float, kappa: float) -> float:
    return nu / kappa


# --------------------------------------------------------------------------- set-ups
def atwood(T_hot: float, T_cold: float) -> float:
    """(rho_heavy - rho_light)/(rho_heavy + rho_light) at equal pressure, rho ~ 1/T."""
    return (T_hot - T_cold) / (T_hot + T_cold)


def free_fall_speed(A: float, g: float, L: float) -> float:
    """sqrt(A g L) (sites/step for g in sites/step^2 and L in sites)."""
    return math.sqrt(A * g * L)


def rt_time_unit(A: float, g: float, L: float) -> float:
    """sqrt(L / (A g)) (steps): the Rayleigh-Taylor time unit."""
    return math.sqrt(L / (A * g))


def rayleigh_taylor_numbers(T_hot: float, T_cold: float, g: float, L: float, nu: float, c_s: float) -> Dict[str, float]:
    """The Rayleigh-Taylor entries of a run's numbers: Atwood, and with gravity g (lattice
    units, across the interface) L, t_unit, U_ff, Re and Ma."""
    A = atwood(T_hot, T_cold)
    out = {"Atwood": A}
    if g:
        U = free_fall_speed(A, abs(g), L)
        out.update({"L": L, "t_unit": rt_time_unit(A, abs(g), L), "t_unit_name": "t_RT", "U_ff": U,
                    "Re": reynolds(U, L, nu), "Ma": U / c_s})
    return out


def reynolds(U: float, L: float, nu: float) -> float:
    return U * L / nu


def conduction_depth(ly: int, rows: int) -> int:
    """Distance (sites) between the rows y = rows - 1 and y = LY - rows where the bc imposes the
    wall temperatures: *not* the layer's depth (the effective one: :func:`wall_planes`)."""
    return ly - 2 * rows + 1



def wall_plane_entries(cfg, planes, axis: str) -> dict:
    """The run numbers of the measured wall planes (``wall_planes``' value, or None): the no-slip
    planes across ``axis`` and the table's note, or the note that none is measured."""
    if planes is None:
        return {"wall_planes_note": f"no measured wall planes for {cfg.velocity_set} with {cfg.walls['scheme']} "
                                    f"walls and {cfg.collision}: depths between the planes where the bc imposes "
                                    f"the wall temperatures"}
    out = {f"{axis}_no_slip": list(planes.no_slip)}
    if planes.note:
        out["wall_planes_note"] = planes.note
    return out

def wall_planes(cfg, T_bottom: float = 1.0, T_top: float = 1.0):
    """The effective planes of a walled run (``lbgen.model.wall_planes.WallPlanes``), or None
    where nothing was measured for its set, scheme and operator.  Outside the measured
    parameter range: the nearest measured point, said in the planes' ``note``."""
    from lbgen.model.wall_planes import OutsideTable, effective_planes
    try:
        depth = cfg.shape["xyz".index(cfg.thermal_axis)]       # across the walls: the last axis, or --wall-axis
        return effective_planes(cfg.velocity_set, cfg.walls["scheme"], cfg.collision, cfg.parameters, depth,
                                T_bottom, T_top, extrapolate=True)
    except OutsideTable:
        return None


def rayleigh(g: float, T_bottom: float, T_top: float, H: float, nu: float, kappa: float) -> float:
    """g beta (T_bottom - T_top) H^3 / (nu kappa), beta = 1 / T_mean; g > 0 pointing down (-y)."""
    beta = 2.0 / (T_bottom + T_top)
    return g * beta * (T_bottom - T_top) * H ** 3 / (nu * kappa)


# --------------------------------------------------------------------------- a run
def run_numbers(cfg, *, rho: float = 1.0, T: Optional[float] = None,
                temperatures: Optional[Tuple[float, float]] = None) -> Dict[str, object]:
    """The physical numbers of a run (a ``lbgen.run.config.RunConfig``, read by its fields
    collision, parameters, gravity, walls, lx, ly, velocity_set, setup), in lattice units.

    The reference state: density ``rho`` (1: the set-ups' density), temperature ``T``
    (default: the mean of the wall temperatures, else 1; always 1 on isothermal sets).
    ``temperatures`` (T_hot, T_cold) gives the contrast of a Rayleigh-Taylor run without
    walls (with walls it is theirs: T_bottom, T_top).  Entries that do not apply are left out:
    kappa and Pr on isothermal sets, the Atwood group without a Rayleigh-Taylor contrast,
    t_unit, U_ff, Re, Ma without gravity across the walls' direction, Ra without two
    fixed-temperature walls and gravity.  The flow's own time unit and reference speed
    (``t_unit``, ``t_unit_name``; ``U_ff`` or ``U``; :func:`time_unit`): Rayleigh-Taylor's
    t_RT, a periodic shear wave's decay time (:func:`wave_numbers`).  Units: ``UNIT_OF``.
    """
    vs = cfg.velocity_set
    r = scale_factor(vs)
    thermal = is_thermal(vs)
    walls = cfg.walls
    if not thermal:
        T = 1.0
    elif T is None:
        T = 0.5 * (walls["T_bottom"] + walls["T_top"]) if walls else 1.0
    params = dict(cfg.parameters)
    out: Dict[str, object] = {"units": UNITS, "r": r, "rho_ref": float(rho), "T_ref": float(T)}
    nu = kinematic_viscosity(cfg.collision, params, r=r, T=T, rho=rho)
    out["nu"] = nu
    kappa = None
    if thermal:
        kappa = thermal_diffusivity(cfg.collision, params, r=r, order=hermite_order(vs), T=T, rho=rho)
        out["kappa"] = kappa
        out["Pr"] = prandtl(nu, kappa)
    c_s = sound_speed(T, r=r, thermal=thermal)
    out["c_s"] = c_s
    gx, gy = (float(v) for v in cfg.gravity)
    if gx or gy:
        out["g"] = gravity_to_lattice(math.hypot(gx, gy), r)
    up = (getattr(cfg, "thermal_axis", None) if walls else None) or "y"     # across the walls: y, or --wall-axis x
    k = "xy".index(up)
    g_down = gravity_to_lattice(-(gx, gy)[k], r)      # across the walls / the interface, > 0 downwards
    if thermal and cfg.setup == "rayleigh-taylor":
        contrast = (walls["T_bottom"], walls["T_top"]) if walls else temperatures
        if contrast is not None and contrast[0] != contrast[1]:
            out.update(rayleigh_taylor_numbers(max(contrast), min(contrast), g_down, (cfg.lx, cfg.ly)[1 - k], nu,
                                               c_s))
    if cfg.setup == "shear-wave" and not getattr(cfg, "init", None) and not walls and not (gx or gy):
        A = cfg.amplitude               # resolved by the run (the set-up's default where not given)
        if A:
            out.update(wave_numbers(velocity_to_lattice(abs(A), r), cfg.lx, nu, c_s))
    lid = getattr(cfg, "lid", None)
    if lid and getattr(cfg, "wall_axes", None) and not walls:     # 2D bounce-back lids: the cavity
        face, u = max(lid.items(), key=lambda kv: math.hypot(*kv[1]))
        if any(u):
            L = (cfg.lx, cfg.ly)["xy".index(face[0])]               # the cavity across the lid's face
            out.update(lid_numbers(velocity_to_lattice(math.hypot(*u), r), L, nu, c_s))
    elif cfg.setup == "channel" and (gx or gy) and not getattr(cfg, "init", None):
        H = channel_width((cfg.lx, cfg.ly), getattr(cfg, "wall_axes", None), (gx, gy))
        if H is not None:
            out.update(channel_numbers(gravity_to_lattice(math.hypot(gx, gy), r), H, nu, c_s))
    planes = None
    if walls:
        planes = wall_planes(cfg, walls["T_bottom"], walls["T_top"])
        out.update(wall_plane_entries(cfg, planes, up))
        if planes is not None and planes.isothermal is not None \
                and not (walls.get("adiabatic_bottom") or walls.get("adiabatic_top")):
            out[f"{up}_isothermal"] = list(planes.isothermal)
    if (thermal and walls and g_down and not walls.get("adiabatic_bottom") and not walls.get("adiabatic_top")
            and walls["T_bottom"] != walls["T_top"]):
        H = planes.depth_isothermal if planes is not None else conduction_depth((cfg.lx, cfg.ly)[k], wall_rows(vs))
        out["H"] = H
        out["Ra"] = rayleigh(g_down, walls["T_bottom"], walls["T_top"], H, nu, kappa)
        if cfg.setup == "rayleigh-benard":
            from lbgen.model.convection import convection_numbers
            out.update(convection_numbers(out["Ra"], out["Pr"], H, g_down, walls["T_bottom"], walls["T_top"], r, D))
    return out


def summary(numbers: Mapping[str, object]) -> str:
    """One line for a run's header: the numbers of :func:`run_numbers` with their units."""
    def fmt(key, label=None, unit=True):
        u = UNIT_OF.get(key, "1")
        return f"{label or key} = {numbers[key]:.4g}" + (f" {u}" if unit and u != "1" else "")
    parts = [fmt("nu")]
    parts += [fmt(k) for k in ("kappa", "Pr") if k in numbers]
    parts.append(fmt("c_s"))
    if "Atwood" in numbers:
        parts.append(fmt("Atwood"))
    name = numbers.get("t_unit_name")
    if name == "t_RT":
        parts += [f"t_RT = sqrt(LX/(A g)) = {numbers['t_unit']:.4g} steps", fmt("U_ff")]
    elif "U" in numbers:
        speed = {"L/U_lid": "lid speed U", "H^2/nu": "Poiseuille centre speed U = g H^2/(8 nu)",
                 "t_nu": "amplitude U", "t_c": "amplitude U"}.get(name, "U")
        parts.append(f"{speed} = {numbers['U']:.4g} sites/step")
        length = "L" if "L" in numbers else "H"
        parts.append(fmt(length))
        if name == "L/U_lid":
            parts.append(f"lid transit L/U = {numbers['t_unit']:.4g} steps")
        elif name == "H^2/nu":
            parts.append(f"viscous time H^2/nu = {numbers['t_unit']:.4g} steps")
        elif name == "t_nu":
            parts.append(f"decay time t_nu = 1/(nu k^2) = {numbers['t_unit']:.4g} steps (k = 2 pi/L)")
        elif name == "t_c":
            parts.append(f"convective time t_c = L/U = {numbers['t_unit']:.4g} steps (L = N/(2 pi))")
    if "Re" in numbers:
        parts.append(fmt("Re") + (f" (= U {('L' if 'L' in numbers else 'H')}/nu)" if "U" in numbers else ""))
    if "Ma" in numbers:
        parts.append(fmt("Ma"))
    axis = next((a for a in "xzy" if f"{a}_isothermal" in numbers or f"{a}_no_slip" in numbers), "y")
    if f"{axis}_no_slip" in numbers:
        walls = "walls: no-slip planes at {} {:.2f}, {:.2f}".format({"y": "rows", "z": "planes"}.get(axis, "x planes"),
                                                                     *numbers[f"{axis}_no_slip"])
        if f"{axis}_isothermal" in numbers:
            walls += ", isothermal at {:.2f}, {:.2f}".format(*numbers[f"{axis}_isothermal"])
        parts.append(walls)
    if "wall_planes_note" in numbers:
        parts.append(f"({numbers['wall_planes_note']})")
    if "Ra" in numbers:
        iso = any(f"{a}_isothermal" in numbers for a in "xyz")
        depth = "between the isothermal planes" if iso else "between the imposing rows"
        parts.append(f"Ra = {numbers['Ra']:.3g} (H = {numbers['H']:.4g} sites, {depth})")
    if "adiabatic_ratio" in numbers:
        parts.append(f"Ra_c = {numbers['Ra_c']:g} (Chandrasekhar 1961), adiabatic gradient g/c_p = "
                     f"{numbers['adiabatic_ratio']:.3g} of the imposed one")
    if "Nu_published" in numbers:
        parts.append(f"published Nu = {numbers['Nu_published']:g} ({numbers['Nu_source']})")
    return (f"physics in {numbers['units']} (r = {numbers['r']:.6g}: a model velocity u is u/r sites/step, "
            f"model time = steps/r): " + ", ".join(parts))
