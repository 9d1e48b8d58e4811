"""Force coefficients and the Strouhal number of a body (pure NumPy).

C_D = 2 F_x / (rho U^2 A), C_L = 2 F_y / (rho U^2 A) with the reference area A: the diameter D in
2D (per unit depth), D H for the DFG 3D-1Z cylinder spanning the duct height H, pi D^2 / 4 for a
sphere; U the reference speed (DFG: the mean inflow speed, 2/3 of the parabola's maximum in 2D,
4/9 in 3D; Schaefer & Turek 1996)."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from lbgen.simulation.parameters import SimulationError


def coefficients(force, rho: float, speed: float, area: float) -> np.ndarray:
    """2 F / (rho U^2 A), per component of ``force`` (drag along the flow, lift across it)."""
    if not (rho > 0 and speed > 0 and area > 0):
        raise SimulationError(f"force coefficients: rho={rho!r}, speed={speed!r}, area={area!r} must be > 0")
    return 2.0 * np.asarray(force, dtype=np.float64) / (rho * speed * speed * area)


def dfg_mean_speed(u_max: float, dimension: int = 2) -> float:
    """The DFG reference speed: the mean of the parabolic inflow, 2/3 U_max (2D), 4/9 U_max (3D duct)."""
    return u_max * (2.0 / 3.0 if dimension == 2 else 4.0 / 9.0)


def strouhal(lift, dt: float, diameter: float, speed: float, min_periods: int = 3) -> Optional[float]:
    """St = f D / U of the lift signal ``lift`` sampled every ``dt`` (the frequency from the mean
    spacing of its upward zero crossings about the mean, after dropping the first half as the
    transient, refined by linear interpolation); None when it does not oscillate (fewer than
    ``min_periods`` periods, or an amplitude below 1e-9 of its scale)."""
    s = np.asarray(lift, dtype=np.float64)
    s = s[len(s) // 2:]
    if s.size < 4 or not np.all(np.isfinite(s)):
        return None
    s = s - s.mean()
    if np.ptp(s) <= 1e-9 * max(1.0, float(np.abs(s).max())):
        return None
    i = np.nonzero((s[:-1] < 0) & (s[1:] >= 0))[0]
    if len(i) < min_periods + 1:
        return None
    t = i + s[i] / (s[i] - s[i + 1])                   # interpolated crossings (in samples)
    period = (t[-1] - t[0]) / (len(t) - 1) * dt
    return diameter / (period * speed) if period > 0 and math.isfinite(period) else None
