"""Where the walls effectively are: the no-slip and isothermal planes measured from outside.

The bc kernel rebuilds the H rows next to each wall (``lbgen.model.walls``) and fixes the
wall temperature at the last of them (D2Q37: row 2 and LY - 3), but the flow in the bulk
behaves as if the walls were somewhere else.  Two steady states tell where, each fitted
over the bulk rows (``fit_rows``: the central half of the layer, clear of the layers next
to the walls where the profile departs from the bulk's polynomial) and extrapolated to the
walls:

* **no-slip plane** (``poiseuille_planes``): a Poiseuille flow driven by a body force along
  x (gravity (g, 0), periodic x, walls at rest); the steady physical (half-step-corrected)
  velocity is the parabola u(y) = a (y - y0)(y1 - y) / (2 nu) in the bulk: its roots y0
  (bottom) and y1 (top), in row coordinates (rows 0 .. LY - 1);
* **isothermal plane** (``conduction_planes``): pure conduction between fixed wall
  temperatures (no gravity); the steady temperature is a line in the bulk: the rows y0 and
  y1 where it reaches T_bottom and T_top.

Steady state: started from the profile with planes at the guessed rows (so little is left
to decay), the slowest mode decays like exp(-t nu pi^2 / H^2); the planes are sampled every
``sample`` steps (a fraction of that time) and the sequence is accelerated with Aitken's
delta-squared until two consecutive estimates agree within ``tol`` rows.

The tabulated values (``lbgen.model.wall_planes.TABLE``) come from ``measure`` through
``benchmarks/wall_planes.py``.  Runs on the C backend through ``Simulation``; LX = 1
(every column of these flows is the same).  3D sets (D3Q39, D3Q103): the same on a 1 x 1 x LZ
lattice, walls across z ("rows" are then planes; LY in the names below is LZ).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

import numpy as np

from lbgen.model import physics
from lbgen.model.catalog import set_entry
from lbgen.simulation.parameters import Walls
from lbgen.simulation.runner import Simulation

#: rows beyond the wall rows always left out of the fits
BULK_MARGIN = 3
#: the fastest flow of the Poiseuille runs, in sites/step (small: no compressibility, no viscous heating)
U_MAX = 1e-3
#: the temperature difference of the conduction runs (T_bottom = 1 + DT/2, T_top = 1 - DT/2)
DT = 0.02


@dataclass(frozen=True)
class Planes:
    """The effective planes of one run, in row coordinates (rows 0 .. LY - 1)."""

    kind: str            # "no-slip" or "isothermal"
    ly: int
    y0: float            # the bottom plane
    y1: float            # the top plane
    steps: int           # steps run
    residual: float      # largest misfit of the bulk fit, relative to the profile's range
    change: float        # |last estimate - the one before|, rows: the convergence left

    @property
    def depth(self) -> float:
        """y1 - y0: the effective depth of the layer (sites)."""
        return self.y1 - self.y0

    @property
    def delta(self) -> float:
        """LY - depth: the depth is LY - delta."""
        return self.ly - self.depth


def fit_rows(ly: int, wall_rows: int) -> slice:
    """The rows the fits use: the central half of the layer, rows LY/4 .. 3 LY/4 - 1, and at
    least ``BULK_MARGIN`` rows beyond the wall rows.  The profile next to a wall departs from
    the bulk's polynomial in a layer whose width grows as the relaxation time approaches 1/2
    (misfit 1e-4 of the profile's range ~4 rows from the wall rows at BGK tau = 0.8, ~20 rows
    at regularized C1 = 1e-3): the central half of LY = 128 is clear of it."""
    lo = max(ly // 4, wall_rows + BULK_MARGIN)
    if ly - 2 * lo < 6:
        raise ValueError(f"LY = {ly} leaves fewer than 6 bulk rows to fit")
    return slice(lo, ly - lo)


def _moments(sim: Simulation) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """rho, post-collision u_x (model units) and T per row (plane), from the populations (mean
    over the other axes)."""
    pops = sim.populations()
    f = pops.mean(axis=tuple(range(1, pops.ndim - 1)))    # (Q, LY)
    xi = np.asarray(sim.vs.velocities, dtype=float) * sim.vs.r
    rho = f.sum(axis=0)
    u = (xi.T @ f) / rho                                  # (D, LY)
    energy = 0.5 * ((xi ** 2).sum(axis=1) @ f)
    T = (energy - 0.5 * rho * (u ** 2).sum(axis=0)) / rho / (sim.vs.D / 2)
    return rho, u[0], T


def _simulation(velocity_set, collision, params, scheme, ly, walls_T=(1.0, 1.0), gx=0.0):
    D = set_entry(velocity_set).D
    return Simulation(*(1,) * (D - 1), ly, collision=collision, velocity_set=velocity_set,
                      gravity=(gx,) + (0.0,) * (D - 1), walls=Walls(walls_T[0], walls_T[1], scheme=scheme),
                      check_every=0, threads=1, **params)


def _set_profile(sim: Simulation, rho, ux, T) -> None:
    """A profile along the walled axis (arrays of LY values) on the whole lattice, at rest across."""
    shape = (1,) * (sim.dimension - 1) + (-1,)
    zero = 0 * np.asarray(T, dtype=float)
    sim.set_fields(*(np.reshape(v, shape) for v in (rho, ux, *([zero] * (sim.dimension - 1)), T)))


def _decay_steps(diffusivity: float, ly: int, wall_rows: int) -> float:
    """1 / rate of the slowest mode of a layer of depth ~ LY - 2 wall_rows (steps)."""
    H = ly - 2 * wall_rows
    return H * H / (math.pi ** 2 * diffusivity)


def _converge(sim: Simulation, estimate, sample: int, tol: float, max_steps: int):
    """Run ``sample`` steps at a time until the planes settle; returns (planes, change).

    Once one mode is left the estimates approach their limit geometrically, x_k = x + A q^k
    (q = exp(-sample / decay time)); Aitken's delta^2, x - (x_k - x_(k-1))^2 / (x_k - 2 x_(k-1)
    + x_(k-2)), gives the limit from three of them.  Done when two consecutive extrapolations
    (or, where nothing is left to decay, two raw estimates) agree within ``tol`` rows."""
    history = [np.asarray(estimate(), dtype=float)]
    limits = []
    change = math.inf
    while sim.time_step < max_steps:
        sim.run(sample)
        if not np.isfinite(sim.populations()).all():
            raise RuntimeError(f"diverged: non-finite populations by step {sim.time_step}")
        history.append(np.asarray(estimate(), dtype=float))
        d1 = history[-1] - history[-2]
        if np.abs(d1).max() < tol / 100:                      # nothing left to decay
            return history[-1], float(np.abs(d1).max())
        if len(history) < 3:
            continue
        d0 = history[-2] - history[-3]
        with np.errstate(divide="ignore", invalid="ignore"):
            q = d1 / d0
            limit = history[-1] - d1 * q / (1 - q)            # = x_k - d1^2 / (d1 - d0)
        if not np.all(np.isfinite(limit) & (q > 0) & (q < 0.95)):
            limits.clear()                                    # not (yet) one geometric mode
            continue
        limits.append(limit)
        if len(limits) >= 2:
            change = float(np.abs(limits[-1] - limits[-2]).max())
            if change < tol:
                return limits[-1], change
    raise RuntimeError(f"no steady state within {max_steps} steps (last change {change:.3g} rows)")


def poiseuille_planes(velocity_set: str, collision: str, params: Mapping[str, float], scheme: str, ly: int, *,
                      guess: Optional[float] = None, tol: float = 1e-5, max_steps: int = 20_000_000) -> Planes:
    """The no-slip planes: roots of the parabola fitted to a steady force-driven channel flow.

    The force per unit mass gives u_max ~ ``U_MAX`` sites/step; ``guess`` (rows from row 0 to
    the bottom plane, default the wall rows - 1/2) sets the initial parabola.
    """
    h = physics.wall_rows(velocity_set)
    r = physics.scale_factor(velocity_set)
    nu = physics.kinematic_viscosity(collision, params, r=r)           # sites^2/step at rho = T = 1
    y = np.arange(ly, dtype=float)
    g0 = h - 0.5 if guess is None else guess
    y0g, y1g = g0, ly - 1 - g0
    a_lat = 8 * nu * U_MAX / (y1g - y0g) ** 2                          # sites/step^2
    gx = physics.gravity_to_model(a_lat, r)
    sim = _simulation(velocity_set, collision, params, scheme, ly, gx=gx)
    ax = sim.kernel_parameters["ax"]                                   # model velocity per step
    u0 = r * a_lat / (2 * nu) * np.clip((y - y0g) * (y1g - y), 0, None)
    _set_profile(sim, np.ones(ly), u0 + ax / 2, np.ones(ly))
    bulk = fit_rows(ly, h)
    yb = y[bulk]
    fit = {}

    def estimate():
        _, ux, _ = _moments(sim)
        u = ux - ax / 2                                                # the physical velocity
        c = np.polyfit(yb, u[bulk], 2)
        fit["residual"] = float(np.abs(np.polyval(c, yb) - u[bulk]).max() / np.abs(u[bulk]).max())
        lo, hi = sorted(np.roots(c).real)
        return lo, hi

    sample = max(50, int(_decay_steps(nu, ly, h) / 4))
    (y0, y1), change = _converge(sim, estimate, sample, tol, max_steps)
    return Planes("no-slip", ly, float(y0), float(y1), sim.time_step, fit["residual"], change)


def conduction_planes(velocity_set: str, collision: str, params: Mapping[str, float], scheme: str, ly: int, *,
                      guess: Optional[float] = None, tol: float = 1e-5, dT: float = DT, T_mean: float = 1.0,
                      max_steps: int = 20_000_000) -> Planes:
    """The isothermal planes: where the line fitted to steady conduction reaches T_bottom and T_top.

    T_bottom = T_mean + dT/2, T_top = T_mean - dT/2, mean density 1 at uniform pressure;
    ``guess`` as for :func:`poiseuille_planes`."""
    if not physics.is_thermal(velocity_set):
        raise ValueError(f"{velocity_set} is isothermal: its walls impose no temperature")
    h = physics.wall_rows(velocity_set)
    r = physics.scale_factor(velocity_set)
    kappa = physics.thermal_diffusivity(collision, params, r=r, order=physics.hermite_order(velocity_set), T=T_mean)
    Tb, Tt = T_mean + dT / 2, T_mean - dT / 2
    y = np.arange(ly, dtype=float)
    g0 = h - 0.5 if guess is None else guess
    T0 = Tb + (Tt - Tb) * (y - g0) / (ly - 1 - 2 * g0)
    sim = _simulation(velocity_set, collision, params, scheme, ly, walls_T=(Tb, Tt))
    _set_profile(sim, T_mean / T0, np.zeros(ly), T0)                  # uniform pressure, mean density 1
    bulk = fit_rows(ly, h)
    yb = y[bulk]
    fit = {}

    def estimate():
        _, _, T = _moments(sim)
        c = np.polyfit(yb, T[bulk], 1)
        fit["residual"] = float(np.abs(np.polyval(c, yb) - T[bulk]).max() / abs(dT))
        return (Tb - c[1]) / c[0], (Tt - c[1]) / c[0]

    sample = max(50, int(_decay_steps(kappa, ly, h) / 4))
    (y0, y1), change = _converge(sim, estimate, sample, tol, max_steps)
    return Planes("isothermal", ly, float(y0), float(y1), sim.time_step, fit["residual"], change)


#: what :func:`measure` measures: the no-slip planes, and the isothermal ones at two wall
#: temperature differences (the table interpolates between them in the difference)
PARTS = ("no_slip", "isothermal", "isothermal_large")
#: the larger wall temperature difference (1.05 / 0.95: the Rayleigh-Taylor set-up's walls)
DT_LARGE = 0.1


def measure(velocity_set: str, scheme: str, collision: str, params: Mapping[str, float], ly: int, *,
            guess: Optional[Tuple[float, float]] = None, tol: float = 1e-5, parts=PARTS) -> dict:
    """The planes of one operator point as the table stores them, offsets in rows from the
    walls' edge rows (bottom: y0; top: LY - 1 - y1):

    ``no_slip``: the mean of the two no-slip offsets (``no_slip_asymmetry``, their difference,
    is < 1e-6 rows);
    ``isothermal``, ``shift``: with walls at 1 + DT/2 (bottom) and 1 - DT/2 (top), the mean of
    the two isothermal offsets and (bottom - top offset) / DT, rows per unit of temperature
    difference (a hotter wall's plane lies further from it);
    ``isothermal_large``, ``shift_large``: the same with DT_LARGE;
    (thermal sets only; None otherwise) and for each part the run's ``steps``, fit
    ``residual`` and convergence ``change``.  ``parts``: which of ``PARTS`` to measure.
    ``guess``: (no-slip, isothermal) offsets to start from (e.g. a smaller LY's result)."""
    g_ns, g_iso = guess if guess is not None else (None, None)
    out = {"velocity_set": velocity_set, "scheme": scheme, "collision": collision, "params": dict(params),
           "ly": ly, "steps": {}, "residual": {}, "change": {}}
    thermal = physics.is_thermal(velocity_set)
    if "no_slip" in parts:
        flow = poiseuille_planes(velocity_set, collision, params, scheme, ly, guess=g_ns, tol=tol)
        out.update(no_slip=0.5 * (flow.y0 + (ly - 1 - flow.y1)), no_slip_asymmetry=flow.y0 - (ly - 1 - flow.y1))
        out["steps"]["no_slip"], out["residual"]["no_slip"], out["change"]["no_slip"] = \
            flow.steps, flow.residual, flow.change
    for part, dT, suffix in (("isothermal", DT, ""), ("isothermal_large", DT_LARGE, "_large")):
        if part not in parts:
            continue
        if not thermal:
            out.update({"isothermal" + suffix: None, "shift" + suffix: None})
            continue
        heat = conduction_planes(velocity_set, collision, params, scheme, ly, guess=g_iso, tol=tol, dT=dT)
        bottom, top = heat.y0, ly - 1 - heat.y1
        out.update({"isothermal" + suffix: 0.5 * (bottom + top), "shift" + suffix: (bottom - top) / dT})
        out["steps"][part], out["residual"][part], out["change"][part] = heat.steps, heat.residual, heat.change
    return out
