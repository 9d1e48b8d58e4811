"""Plane Poiseuille flow between flat body walls that cut the links at fractional q: the steady
profile of the interpolated bounce-back of Bouzidi, Firdaouss & Lallemand, Phys. Fluids 13, 3452
(2001) (their own first test is this channel) against the analytic parabola
u(y) = g/(2 nu) (y - y_low)(y_high - y), D2Q9 BGK.  The quadratic scheme converges at second order
with a smaller error than the linear one; half-way bounce-back, which puts the walls half-way
whatever q, at first order.

Measured (tau = 0.8, q = 0.3 below and 0.8 above, N = 8, 16, 32 fluid rows, relative L2 error):
half-way 1.03e-1, 5.19e-2, 2.61e-2; linear 1.33e-2, 3.48e-3, 8.91e-4; quadratic 7.25e-3, 1.88e-3,
4.77e-4 (tau = 0.6: linear 2.67e-2 .. 1.77e-3, quadratic 1.04e-2 .. 6.57e-4)."""
from __future__ import annotations

import numpy as np
import pytest

import lbgen


class Slab:
    """Solid rows y = 0 and y = N + 1 of an (lx, N + 2) lattice, their surfaces at y = 1 - q_low and
    y = N + q_high: every link into them is cut at q_low (below) or q_high (above)."""

    def __init__(self, lx: int, n: int, q_low: float, q_high: float):
        self.shape = (lx, n + 2)
        self.labels = np.zeros(self.shape, np.int32)
        self.labels[:, 0] = self.labels[:, -1] = 1
        self.names = ("walls",)
        self.y_low, self.y_high = 1 - q_low, n + q_high

    def distance(self, sites, dirs):
        y, cy = np.asarray(sites)[:, 1].astype(float), np.asarray(dirs)[:, 1].astype(float)
        return (np.where(cy < 0, self.y_low, self.y_high) - y) / cy


def profile_error(n: int, scheme: str, q_low: float, q_high: float, tau: float) -> float:
    """The relative L2 error of the steady profile (changes < 1e-10 of u_max between samples)."""
    slab = Slab(4, n, q_low, q_high)
    h, nu, umax = slab.y_high - slab.y_low, (tau - 0.5) / 3, 0.01
    g = 8 * nu * umax / h ** 2                                          # lattice units
    r = lbgen.Simulation(4, 4, velocity_set="d2q9").vs.r
    sim = lbgen.Simulation(*slab.shape, velocity_set="d2q9", bodies=slab, body_bc=scheme, tau=tau,
                           gravity=(g * r * r, 0.0), layout="soa", vl=None, threads=1)
    sim.set_fields(1.0, 0.0, 0.0)
    previous = None
    for _ in range(200):
        sim.step(int(h * h / nu / 4) + 1)
        u = sim.fields()["ux"][0, 1:-1] / r
        if previous is not None and np.abs(u - previous).max() < 1e-10 * umax:
            break
        previous = u
    y = np.arange(1, n + 1)
    exact = g / (2 * nu) * (y - slab.y_low) * (slab.y_high - y)
    return float(np.sqrt(np.mean((u - exact) ** 2) / np.mean(exact ** 2)))


@pytest.mark.parametrize("q_low, q_high, tau", [(0.3, 0.8, 0.8),
                                                pytest.param(0.2, 0.65, 0.6, marks=pytest.mark.slow)])
def test_quadratic_walls_converge_at_second_order_below_the_linear_error(q_low, q_high, tau):
    sizes = (8, 16, 32)
    err = {s: [profile_error(n, s, q_low, q_high, tau) for n in sizes] for s in ("bouzidi", "quadratic")}
    order = np.log2(np.array(err["quadratic"][:-1]) / np.array(err["quadratic"][1:]))
    assert np.all((order > 1.8) & (order < 2.3)), (order, err)
    assert all(a < 0.7 * b for a, b in zip(err["quadratic"], err["bouzidi"])), err


def test_half_way_walls_converge_at_first_order_on_the_same_channel():
    err = [profile_error(n, "halfway", 0.3, 0.8, 0.8) for n in (8, 16)]
    assert 0.8 < np.log2(err[0] / err[1]) < 1.2, err
