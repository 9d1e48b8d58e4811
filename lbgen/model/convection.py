"""Rayleigh-Benard convection: the published numbers, the run's parameters from Ra and Pr, and
the Nusselt number of a state (2D and 3D; the vertical axis is the last one: y in 2D, z in 3D,
or in 3D the layer's ``axis``: the state seen upright, ``lbgen.model.wall_frame``).

Published values (the validation tests cite them):

* onset between rigid, isothermal plates: Ra_c = 1707.76 at k_c = 3.117 / H (Chandrasekhar,
  *Hydrodynamic and Hydromagnetic Stability*, 1961, ch. II, table III; the 2D and 3D onset is
  the same: the rolls are two-dimensional);
* steady 2D rolls of wavelength 2 pi / k_c between rigid plates: Nu = 2.661 at Ra = 1e4,
  Pr = 0.71 (Clever & Busse 1974, J. Fluid Mech. 65, 625, table 1; the value LB studies
  compare with, e.g. Shan 1997, Phys. Rev. E 55, 2780; Wang et al. 2013).

**The gas is compressible.**  lbgen's thermal sets carry an ideal gas p = rho T (c_p = (D + 2)/2
in lattice units): a layer at rest convects only where the imposed gradient Delta T / H is
well above the adiabatic one g / c_p.  :func:`adiabatic_ratio` is (g / c_p) / (Delta T / H); the
run prints it and refuses a set-up where it reaches :data:`ADIABATIC_MAX` (the onset is then
shifted by about that fraction: Spiegel 1965's compressible onset criterion, the
superadiabatic Rayleigh number (1 - ratio) Ra reaching 1708, Ra_c ~ 1708 / (1 - ratio), the
form docs/physics.md compares with).

**The Nusselt number** (:func:`nusselt`), from the horizontal means of a state (no other
population pull than the fields a run already gathers): the heat flux across the layer in
units of the conductive flux kappa Delta T / H,

* at the walls: the flux through the first planes clear of the bc's rows and their Knudsen
  layer (KNUDSEN_ROWS, then FIT_ROWS planes), where the flow slows to the wall and the flux is
  mostly the conductive -kappa d<T>/dz (the boundary layer H / (2 Nu) is ~6 planes at
  Ra = 1e4, H = 33: the convective part is kept);
* in the bulk: (<rho w T> / rho_ref - kappa d<T>/dz) averaged over the central half of the layer
  (:func:`profiles`; velocities in lattice units: the fields' model u divided by r).
The third-order sets (D2V17, D3Q39) conduct as rho kappa ~ 1/T^2: their conductive term takes
kappa (T_mean / <T>)^2 and the unit flux the conduction flux between the plates
(``Layer.conductivity_exponent``, :func:`heat_flux`).
Both terms are the energy flux over c_p rho_ref: the conductivity rho kappa of lbgen's thermal
operators does not depend on the density (kappa = C2 / (rho r^2), ``lbgen.model.physics``), so
the conductive term is rho_ref kappa(rho_ref) d<T>/dz at any density, and the convective one is
divided by the same rho_ref (the run's reference density, 1, where its kappa is taken), not by
the plane's <rho> (5 % above rho_ref at the cold wall at Delta T = 0.1: that flux was not
conserved across the layer and read 4.6 % low in the bulk at Ra = 1e4).  Steady convection has
both equal to the discretisation's accuracy (the energy balance; measured at Ra = 1e4, H = 33:
the bulk and the wall values within 1 %); pure conduction gives 1 for both.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from lbgen.model.wall_frame import upright

#: Chandrasekhar (1961), rigid-rigid: the critical Rayleigh number and wavenumber (k_c H)
RA_CRITICAL = 1707.76
K_CRITICAL = 3.117
#: the default aspect ratio (periodic length / depth): one critical wavelength
CRITICAL_ASPECT = 2 * math.pi / K_CRITICAL
#: the default Prandtl number (air; Clever & Busse's)
DEFAULT_PRANDTL = 0.71
#: (Ra, Pr) -> Nu of 2D steady rolls at k_c between rigid plates (Clever & Busse 1974, table 1)
CLEVER_BUSSE = {(1e4, 0.71): 2.661}
#: how close (relative) Ra and Pr must be to a published point for the summary to show it
PUBLISHED_MATCH = 0.02
#: the rows next to the bc's rows where the profile leaves the Navier-Stokes one (the Knudsen
#: layer: 3 rows at D2Q37 regularized C = 0.01, 1e-2 Delta T off the line in the first, 1e-3 in the
#: fourth), skipped by the wall Nusselt numbers, which average the next FIT_ROWS planes' flux
KNUDSEN_ROWS, FIT_ROWS = 3, 5
#: refused at or above this adiabatic ratio (:func:`adiabatic_ratio`): the layer barely convects
ADIABATIC_MAX = 0.2


def published_nusselt(Ra: float, Pr: float) -> Optional[Tuple[float, str]]:
    """(Nu, source) of a published point within PUBLISHED_MATCH of (Ra, Pr), or None."""
    for (ra, pr), nu in CLEVER_BUSSE.items():
        if abs(Ra / ra - 1) <= PUBLISHED_MATCH and abs(Pr / pr - 1) <= PUBLISHED_MATCH:
            return nu, f"Clever & Busse 1974 (2D rolls, Ra = {ra:g}, Pr = {pr:g})"
    return None


def gravity_for(Ra: float, T_bottom: float, T_top: float, H: float, nu: float, kappa: float) -> float:
    """g (lattice units, pointing down) of a Rayleigh number: the inverse of
    ``lbgen.model.physics.rayleigh`` (beta = 1 / T_mean)."""
    beta = 2.0 / (T_bottom + T_top)
    return Ra * nu * kappa / (beta * (T_bottom - T_top) * H ** 3)


def adiabatic_ratio(g: float, T_bottom: float, T_top: float, H: float, r: float, dimension: int) -> float:
    """(g / c_p) / (Delta theta / H): the adiabatic gradient over the imposed one, lattice units
    (theta = T / r^2, c_p = (D + 2)/2)."""
    c_p = (dimension + 2) / 2.0
    return (g / c_p) / ((T_bottom - T_top) / (r * r) / H)


@dataclass(frozen=True)
class Layer:
    """What the Nusselt number needs of a run: the isothermal planes (rows, bottom and top),
    the wall temperatures, kappa (sites^2/step, at the density rho_ref), r (model velocity per
    site/step) and the rows the bc rebuilds at each wall."""

    isothermal: Tuple[float, float]
    T_bottom: float
    T_top: float
    kappa: float
    r: float
    wall_rows: int
    rho_ref: float = 1.0
    #: the conductivity's temperature law rho kappa ~ T^n (``lbgen.model.physics.conductivity_exponent``:
    #: 0, or -2 for the third-order sets D2V17 and D3Q39); kappa is the value at the mean wall temperature
    conductivity_exponent: int = 0
    #: the axis the walls stand across (None: the last one, y in 2D, z in 3D; 'x' or 'y' in 3D)
    axis: Optional[str] = None

    @property
    def depth(self) -> float:
        return self.isothermal[1] - self.isothermal[0]


def profiles(fields: Mapping[str, np.ndarray], rho_ref: float = 1.0,
             axis: Optional[str] = None) -> Tuple[np.ndarray, np.ndarray]:
    """(<T>(z), the convective flux (<rho w T> - <rho w><T>) / rho_ref) over the horizontal axes
    (z the last axis of the fields, 2D w = uy, 3D uz, or the wall ``axis`` and the velocity
    along it; model units): the enthalpy flux of the
    compressible gas over c_p rho_ref (the module docstring; its mass flux <rho w> vanishes in a
    steady state; a transient net flow, the gas's acoustic sloshing, carries none)."""
    fields = upright(fields, axis)
    T = np.asarray(fields["T"], dtype=np.float64)
    w = np.asarray(fields["uz" if T.ndim == 3 else "uy"], dtype=np.float64)
    rho = np.asarray(fields["rho"], dtype=np.float64)
    axes = tuple(range(T.ndim - 1))
    T_mean = T.mean(axis=axes)
    return T_mean, ((rho * w * T).mean(axis=axes) - (rho * w).mean(axis=axes) * T_mean) / rho_ref


def heat_flux(fields: Mapping[str, np.ndarray], layer: Layer) -> np.ndarray:
    """The heat flux through each plane over the conduction flux between the plates (lattice
    units: w / r): convective (:func:`profiles`) minus kappa(<T>) d<T>/dz (centred differences),
    with kappa(T) = kappa (T / T_mean)^n, n the layer's ``conductivity_exponent``; the conduction
    flux, the integral of kappa(T) dT over H, is kappa Delta T / H for n = 0 and
    kappa T_mean^2 Delta T / (T_bottom T_top H) for n = -2 (a third-order set conducts as 1/T^2:
    with kappa at T_mean alone its pure conduction read Nu 5 % high next to the hot wall and low
    next to the cold one at Delta T = 0.1)."""
    T, wT = profiles(fields, layer.rho_ref, layer.axis)
    T_b, T_t, n = layer.T_bottom, layer.T_top, layer.conductivity_exponent
    T_mean = 0.5 * (T_b + T_t)
    if n == 0:
        integral = T_b - T_t
    elif n == -1:
        integral = T_mean * math.log(T_b / T_t)
    else:
        integral = T_mean ** -n * (T_b ** (n + 1) - T_t ** (n + 1)) / (n + 1)
    scale = layer.kappa * integral / layer.depth
    return (wT / layer.r - layer.kappa * (T / T_mean) ** n * np.gradient(T)) / scale


def nusselt(fields: Mapping[str, np.ndarray], layer: Layer) -> Dict[str, float]:
    """The Nusselt numbers of a state (module docstring): ``Nu_bottom``, ``Nu_top`` (the flux
    through the FIT_ROWS planes clear of each wall's bc rows and Knudsen layer) and ``Nu_bulk``
    (over the central half), each over kappa Delta T / H."""
    flux = heat_flux(fields, layer)
    n = flux.size
    lo = layer.wall_rows + KNUDSEN_ROWS
    a, b = n // 4, n - n // 4
    return {"Nu_bottom": float(flux[lo:lo + FIT_ROWS].mean()), "Nu_top": float(flux[n - lo - FIT_ROWS:n - lo].mean()),
            "Nu_bulk": float(flux[a:b].mean())}


def roll_amplitude(fields: Mapping[str, np.ndarray], axis: Optional[str] = None) -> float:
    """The amplitude of the first Fourier mode along x of the vertical velocity at the middle
    plane, averaged over y in 3D (model units): the seeded roll's, which grows or decays as
    exp(sigma t) near onset.  Unlike the kinetic energy it does not see the wall rows' u = -a/2
    (the bc imposes the half-step-corrected velocity zero there: a floor of (g/2)^2 per wall
    site, in 3D at Ra ~ 2000, H = 16, as large as the decaying roll's energy).  ``axis``: the
    wall axis (:func:`profiles`)."""
    fields = upright(fields, axis)
    T = np.asarray(fields["T"])
    w = np.asarray(fields["uz" if T.ndim == 3 else "uy"], dtype=np.float64)[..., T.shape[-1] // 2]
    if w.ndim == 2:
        w = w.mean(axis=1)
    return float(2 * abs(np.fft.rfft(w)[1]) / w.size)


def linear_misfit(fields: Mapping[str, np.ndarray], layer: Layer) -> float:
    """max |<T> - the line through the wall temperatures at the isothermal planes| over the
    central half of the layer, over Delta T (0 for exact conduction)."""
    T, _ = profiles(fields, axis=layer.axis)
    n = T.size
    z = np.arange(n, dtype=np.float64)
    z0, z1 = layer.isothermal
    line = layer.T_bottom + (layer.T_top - layer.T_bottom) * (z - z0) / (z1 - z0)
    a, b = n // 4, n - n // 4
    return float(np.abs(T[a:b] - line[a:b]).max() / abs(layer.T_bottom - layer.T_top))


def convection_numbers(Ra: float, Pr: float, H: float, g: float, T_bottom: float, T_top: float, r: float,
                       dimension: int) -> Dict[str, object]:
    """The rayleigh-benard entries of a run's numbers: the adiabatic ratio
    (:func:`adiabatic_ratio`), the thermal diffusion time H^2 / kappa is the caller's, and the
    published Nusselt number near (Ra, Pr) with its source (:func:`published_nusselt`)."""
    out: Dict[str, object] = {"adiabatic_ratio": adiabatic_ratio(g, T_bottom, T_top, H, r, dimension),
                              "Ra_c": RA_CRITICAL}
    published = published_nusselt(Ra, Pr)
    if published is not None:
        out["Nu_published"], out["Nu_source"] = published
    return out
