"""The rayleigh-benard set-up's run description: gravity, the periodic lengths and the heat
diffusivity from --ra, --pr and --aspect (2D and 3D; the vertical axis is the last one, or in 3D
the thermal walls' --wall-axis).

The depth is the lattice's length across the walls (--ly in 2D, --lz in 3D, or --lx / --ly with
--wall-axis x / y); the effective depth H is the distance
between the measured isothermal planes (``lbgen.model.wall_planes``), so Ra, Pr and the
aspect ratio are those of the layer the bulk sees.  The viscosity is the operator's (--tau,
--c1); Pr sets the diffusivity: C2 = C1 / Pr (regularized; a single-relaxation operator has
Pr = 1 and refuses another).  Gravity g = Ra nu kappa / (beta Delta T H^3)
(``lbgen.model.convection.gravity_for``); the periodic lengths round(aspect H).  Refused, in
words, before any work: gravity, C2 or the periodic lengths given beside the options that set
them, an isothermal or third-order-unsafe set, and a layer too thin for its Rayleigh number
(the adiabatic gradient g / c_p at or above ADIABATIC_MAX of the imposed one: the
compressible gas would barely convect)."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

from lbgen.model.catalog import set_entry
from lbgen.model.convection import ADIABATIC_MAX, adiabatic_ratio, gravity_for
from lbgen.run.options import ConfigError

#: the name of the set-up (one home: setups.py's entry, options' rules)
NAME = "rayleigh-benard"


def _wall_axis(values: Mapping[str, Any], D: int) -> str:
    """The letter of the walls' axis of a run description (the last, y in 2D and z in 3D, or --wall-axis)."""
    return values.get("wall_axis") or "xyz"[D - 1]


def resolve(values: Dict[str, Any], parameters: Dict[str, float], given: Mapping[str, str]
            ) -> Tuple[Dict[str, Any], Dict[str, float]]:
    """``values`` (the flat run description, defaults filled in) and the operator's
    ``parameters`` with gravity, the periodic lengths and C2 set from Ra, Pr and the aspect
    ratio; refuses what cannot give the layer asked for."""
    from lbgen.model import physics
    from lbgen.model.operators import operator
    vs = values["velocity_set"]
    entry = set_entry(vs)
    D = entry.D
    if entry.isothermal:
        raise ConfigError(f"{NAME} is a thermal flow; {vs} is isothermal (T = 1): use d2q37 (2D) or d3q39 (3D)")
    for key, what in (("gravity", "--ra"), ("C2", "--pr")):
        if key in given:
            raise ConfigError(f"{NAME}: {key.lower()} is set from {what} (and the layer's nu, kappa and depth); "
                              f"give {what} instead")
    up = _wall_axis(values, D)
    horizontal = tuple(f"l{a}" for a in "xyz"[:D] if a != up)
    for key in horizontal:
        if key in given and "aspect" in given:
            raise ConfigError(f"{NAME}: give either --aspect or --{key}, not both (--aspect sets the periodic "
                              f"lengths to aspect x the effective depth)")
    Ra, Pr, aspect = float(values["ra"]), float(values["pr"]), float(values["aspect"])
    T_b, T_t = float(values["t_bottom"]), float(values["t_top"])
    if not T_b > T_t:
        raise ConfigError(f"{NAME}: the bottom wall must be the hotter one (t_bottom = {T_b:g}, t_top = {T_t:g}); "
                          f"allowed: t_bottom > t_top")
    params = dict(parameters)
    base = operator(values["collision"]).base or values["collision"]
    if base == "regularized":
        params["C2"] = params["C1"] / Pr
        params = operator(values["collision"]).check(params)
    elif Pr != 1.0:
        if "pr" in given:
            raise ConfigError(f"{NAME}: --pr {Pr:g} needs a diffusivity apart from the viscosity: the "
                              f"{values['collision']} operator has Pr = 1; allowed: --pr 1, or --collision regularized")
        values["pr"] = Pr = 1.0
    depth = int(values[f"l{up}"])
    r = physics.scale_factor(vs)
    T_mean = 0.5 * (T_b + T_t)
    nu = physics.kinematic_viscosity(values["collision"], params, r=r, T=T_mean)
    kappa = physics.thermal_diffusivity(values["collision"], params, r=r, order=physics.hermite_order(vs), T=T_mean)
    H = effective_depth(vs, values["wall_scheme"], values["collision"], params, depth, T_b, T_t)
    if H <= 2:
        raise ConfigError(f"{NAME}: the layer of {depth} planes has an effective depth of {H:.3g} planes; "
                          f"allowed: a depth whose isothermal planes lie more than 2 planes apart")
    g = gravity_for(Ra, T_b, T_t, H, nu, kappa)
    ratio = adiabatic_ratio(g, T_b, T_t, H, r, D)
    if ratio >= ADIABATIC_MAX:
        raise ConfigError(f"{NAME}: Ra = {Ra:g} in a layer of H = {H:.4g} planes with Delta T = {T_b - T_t:g} and "
                          f"nu = {nu:.3g} needs g = {g:.3g}, whose adiabatic gradient g/c_p is {ratio:.2f} of the "
                          f"imposed one (allowed: below {ADIABATIC_MAX:g}; the compressible gas would barely "
                          f"convect): deepen the layer, widen Delta T or lower the viscosity (--c1, --tau)")
    down = -physics.gravity_to_model(g, r)
    values["gravity"] = tuple(down if a == up else 0.0 for a in "xyz"[:D])
    for key in horizontal:
        if key not in given:
            values[key] = max(1, int(round(aspect * H)))
    return values, params


def isothermal_planes(vs: str, scheme: str, collision: str, parameters: Mapping[str, float], depth: int,
                      T_bottom: float, T_top: float) -> Tuple[float, float]:
    """The (bottom, top) planes where the conduction profile reaches the wall temperatures: the
    measured ones (``lbgen.model.wall_planes``; the nearest measured point outside the table),
    else the rows where the bc imposes them."""
    from lbgen.model import physics
    from lbgen.model.wall_planes import OutsideTable, effective_planes
    try:
        planes = effective_planes(vs, scheme, collision, parameters, depth, T_bottom, T_top, extrapolate=True)
    except OutsideTable:
        planes = None
    if planes is not None and planes.isothermal is not None:
        return tuple(planes.isothermal)
    rows = physics.wall_rows(vs)
    return float(rows - 1), float(depth - rows)


def effective_depth(vs: str, scheme: str, collision: str, parameters: Mapping[str, float], depth: int,
                    T_bottom: float, T_top: float) -> float:
    """H: the distance between the :func:`isothermal_planes`."""
    z0, z1 = isothermal_planes(vs, scheme, collision, parameters, depth, T_bottom, T_top)
    return z1 - z0


def run_planes(cfg) -> Tuple[float, float]:
    """The :func:`isothermal_planes` of a rayleigh-benard run (its set-up's start is the conduction
    profile through them)."""
    walls = cfg.walls
    return isothermal_planes(cfg.velocity_set, walls["scheme"], cfg.collision, cfg.parameters, wall_depth(cfg),
                             walls["T_bottom"], walls["T_top"])


def wall_depth(cfg) -> int:
    """The lattice's length across the thermal walls of a run (its last axis without them)."""
    return cfg.shape["xyz".index(cfg.vertical_axis)]


def layer(cfg, numbers: Mapping[str, Any]):
    """The ``lbgen.model.convection.Layer`` of a rayleigh-benard run (its numbers: kappa at rho_ref, r and the
    isothermal planes, ``y_isothermal`` in 2D, ``z_isothermal`` in 3D, ``x_isothermal`` across x;
    without measured planes the rows where the bc imposes the wall temperatures; its ``axis`` the
    walls'), or None without thermal walls."""
    from lbgen.model import physics
    from lbgen.model.convection import Layer
    walls = cfg.walls
    if not walls or "kappa" not in numbers:
        return None
    rows = physics.wall_rows(cfg.velocity_set)
    depth = wall_depth(cfg)
    planes = numbers.get(f"{cfg.thermal_axis}_isothermal") or (rows - 1, depth - rows)
    return Layer(isothermal=(float(planes[0]), float(planes[1])), T_bottom=walls["T_bottom"], T_top=walls["T_top"],
                 kappa=float(numbers["kappa"]), r=float(numbers["r"]), wall_rows=rows,
                 rho_ref=float(numbers.get("rho_ref", 1.0)),
                 conductivity_exponent=physics.conductivity_exponent(physics.hermite_order(cfg.velocity_set)),
                 axis=cfg.wall_axis)


def summary(cfg, numbers: Mapping[str, Any], fields) -> List[str]:
    """The closing lines of a rayleigh-benard run (none for other set-ups): the Nusselt numbers of
    the final ``fields`` (``lbgen.model.convection.nusselt``) beside the published value near its
    (Ra, Pr), and what the compressible gas's adiabatic gradient makes of them: with q the
    adiabatic ratio, the superadiabatic Nu_sa = (Nu - q) / (1 - q) at Ra_sa = (1 - q) Ra
    (docs/physics.md, "Rayleigh-Benard")."""
    from lbgen.model.convection import nusselt
    where = layer(cfg, numbers) if cfg.setup == NAME else None
    if where is None:
        return []
    nu = nusselt(fields, where)
    bulk = nu["Nu_bulk"]
    line = (f"Nusselt number: {bulk:.4f} in the bulk, {nu['Nu_bottom']:.4f} / {nu['Nu_top']:.4f} next to the "
            f"bottom / top wall (Ra = {numbers['Ra']:.4g}, Pr = {numbers['Pr']:.3g}, H = {where.depth:.4g}"
            f"{f', across {cfg.wall_axis}' if cfg.wall_axis else ''})")
    if "Nu_published" in numbers:
        line += f"; published {numbers['Nu_published']:g}, {numbers['Nu_source']}: {bulk / numbers['Nu_published'] - 1:+.1%}"
    q = float(numbers.get("adiabatic_ratio", 0.0))
    return [line, f"  adiabatic ratio q = {q:.3g}: superadiabatic Nu_sa = (Nu - q)/(1 - q) = {(bulk - q) / (1 - q):.4f} "
                  f"at Ra_sa = (1 - q) Ra = {(1 - q) * numbers['Ra']:.4g}"]
