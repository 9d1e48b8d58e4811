"""Poiseuille flow with a velocity inlet (parabolic profile, velocity bounce-back) and a pressure
outlet (anti-bounce-back at rho = 1), lbgen.simulation.open_faces, against the exact solutions:

* 2D channel between half-way walls H apart: u(y) = 4 U s (H - s) / H^2 (s the distance from
  the wall) and the pressure gradient dp/dx = -8 mu U / H^2 (the pressure drop 8 mu U L / H^2
  over a length L) -- e.g. White, Viscous Fluid Flow, 3rd ed., section 3-3.2;
* 3D rectangular duct: White's series, eq. 3-48, for the profile and for the pressure gradient
  at the centre speed U.

Diffusive scaling (tau fixed, Re = U H / nu fixed, so U ~ 1/H): the profile in the middle of
the channel and the pressure gradient along it converge at second order (the half-way walls'
and the compressibility errors are both O(1/H^2)); at steady state the mass flux through the
inlet column equals that through the outlet column to round-off.  Units: lattice (u_model = r u,
r = sqrt(3); p = c_s^2 rho, c_s^2 = 1/3)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lbgen.simulation.open_faces import duct_profile, duct_series
from lbgen.simulation.runner import Simulation

TAU = 0.8
NU = (TAU - 0.5) / 3
RE = 5.0
R = math.sqrt(3.0)


def channel(H: int, D: int, steps_per_diffusion: float = 4.0) -> dict:
    """A channel (2D) or square duct (3D) of width H, length 2H, driven by a parabolic inlet at
    x-low and a pressure outlet at x-high: the profile error, the pressure gradient against the
    exact one, the inlet and outlet mass fluxes."""
    L, U = 2 * H, RE * NU / H
    shape = (L, H) if D == 2 else (L, H, H)
    sim = Simulation(*shape, velocity_set="d2q9" if D == 2 else "d3q19", tau=TAU, walls="y" if D == 2 else "yz",
                     inlet={"x-low": ("parabolic", U * R)}, outlet={"x-high": 1.0})
    sim.set_fields(1.0, *(0.0,) * D)
    sim.run(int(steps_per_diffusion * H * H / NU))
    fields = sim.fields()
    ux, rho = fields["ux"] / R, fields["rho"]
    if D == 2:
        s = np.arange(H) + 0.5
        exact = 4 * U * s * (H - s) / H ** 2
        gradient = -8 * NU * U / H ** 2
    else:
        exact = U * duct_profile(H, H)
        a = H / 2
        gradient = -U * NU * math.pi ** 3 / (16 * a * a * duct_series([0], [0], a, a)[0, 0])
    mid = ux[L // 2]
    error = np.sqrt(np.mean((mid - exact) ** 2) / np.mean(exact ** 2))
    xs = np.arange(L // 4, 3 * L // 4)
    pressure = rho[xs].reshape(len(xs), -1).mean(axis=1) / 3
    measured = np.polyfit(xs, pressure, 1)[0]
    return {"error": error, "gradient": measured / gradient - 1,
            "flux_in": float((rho[0] * ux[0]).sum()), "flux_out": float((rho[-1] * ux[-1]).sum())}


def _check(coarse, fine, bounds):
    order = math.log2(coarse["error"] / fine["error"])
    order_p = math.log2(abs(coarse["gradient"]) / abs(fine["gradient"]))
    assert coarse["error"] < bounds[0] and fine["error"] < bounds[1], (coarse, fine)
    assert abs(coarse["gradient"]) < bounds[2] and abs(fine["gradient"]) < bounds[3], (coarse, fine)
    assert order > 1.8, f"profile converges at order {order:.2f}"
    assert order_p > 1.7, f"pressure gradient converges at order {order_p:.2f}"
    for r in (coarse, fine):       # mass in = mass out at steady state
        assert abs(r["flux_in"] - r["flux_out"]) < 1e-9 * r["flux_in"], r


def test_channel_2d_profile_pressure_drop_and_second_order():
    # measured: H = 8: error 2.2e-2, gradient 5.8e-2; H = 16: 5.4e-3, 1.3e-2 (orders 2.03, 2.16)
    _check(channel(8, 2), channel(16, 2), (0.03, 0.007, 0.07, 0.016))


def test_duct_3d_profile_pressure_drop_and_second_order():
    # measured: H = 6: error 7.8e-2, gradient 0.17; H = 12: 1.9e-2, 3.7e-2 (orders 2.08, 2.2)
    _check(channel(6, 3), channel(12, 3), (0.09, 0.022, 0.2, 0.045))


@pytest.mark.slow
def test_channel_and_duct_finer():
    _check(channel(16, 2), channel(32, 2), (0.007, 0.0016, 0.016, 0.004))
    _check(channel(12, 3), channel(24, 3), (0.022, 0.0055, 0.045, 0.011))
