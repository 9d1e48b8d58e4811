"""The control-volume momentum balance of a channel (2D) or duct (3D) with a body: a velocity inlet,
a pressure outlet, half-way no-slip walls and a Bouzidi body (lbgen.simulation.open_faces,
lbgen.simulation.bodies).  Momentum conservation of the lattice Boltzmann scheme (Ladd, J. Fluid
Mech. 271, 285 (1994); Mei, Yu, Shyy & Luo, Phys. Rev. E 65, 041203 (2002) for interpolated
walls): over one step, the momentum of the fluid in the columns a..b changes by what the
populations carry across its two planes (the lattice's momentum flux, pressure and viscous
stress together: the post-collision Pi = sum c c f*) minus what the walls take (2 c f* on each
half-way link) minus what the body takes (sim.forces()):

    P_cv(t+1) - P_cv(t) = Pi_in - Pi_out - F_walls - F_body,

exactly (to round-off) at every step; at steady state P_cv stands still and the force on the
body balances the flux and pressure difference between the planes and the walls' shear,
F_body = Pi_in - Pi_out - F_walls, to the flow's own unsteadiness (measured after 6000 steps: 8e-13
of F in 2D, 2e-15 in 3D)."""
from __future__ import annotations

import numpy as np
import pytest

import lbgen
from lbgen.geometry import Bodies, Cylinder, Sphere


def _channel(D: int):
    """A 2D channel 40 x 14 with a disc of radius 3 off the axis (so it also takes a lift), or a
    3D duct 24 x 10 x 10 with a sphere of radius 2.4; tau 0.8, inlet centre speed 0.03 (lattice)."""
    if D == 2:
        shape, body, walls, vs = (40, 14), Cylinder((12.3, 6.1), 3.0, axis=None), "y", "d2q9"
    else:
        shape, body, walls, vs = (24, 10, 10), Sphere((8.3, 4.6, 4.4), 2.4), "yz", "d3q19"
    bodies = Bodies(shape, [body], names=["body"])
    r = 3 ** 0.5
    sim = lbgen.Simulation(*shape, velocity_set=vs, tau=0.8, walls=walls, bodies=bodies, body_bc="bouzidi",
                           inlet={"x-low": ("parabolic", 0.03 * r)}, outlet={"x-high": 1.0}, threads=1)
    sim.set_fields(1.0, *(0.0,) * D)
    return sim, bodies


def _budget(sim, bodies, a: int, b: int):
    """The terms of the balance of the columns a..b over the coming step, from the post-collision
    populations f* (the stored state), lattice units: (P_cv, Pi_in - Pi_out, F_walls)."""
    f = sim.state().astype(np.float64)
    e = sim.vs.e.astype(int)
    shape = np.array(f.shape[1:])
    solid = bodies.labels > 0
    sites = np.indices(shape).reshape(len(shape), -1).T
    fluid = ~solid.reshape(-1)
    inside = (sites[:, 0] >= a) & (sites[:, 0] <= b) & fluid
    flux, walls = np.zeros(len(shape)), np.zeros(len(shape))
    for i, c in enumerate(e):
        fi = f[i].reshape(-1)
        dest = sites + c
        across = np.any((dest[:, 1:] < 0) | (dest[:, 1:] >= shape[1:]), axis=1)    # into a no-slip wall
        in_cv = (dest[:, 0] >= a) & (dest[:, 0] <= b)
        # from a site of the volume into a wall: the link bounces half-way, the wall takes 2 c f*
        walls += 2.0 * c * fi[inside & across].sum()
        # across a plane (a fluid site on the other side; a link into the body is the body's)
        ok = ~across & (dest[:, 0] >= 0) & (dest[:, 0] < shape[0])
        end = np.zeros(len(sites), bool)
        end[ok] = fluid[np.ravel_multi_index(dest[ok].T, shape)]
        flux -= c * fi[inside & ok & end & ~in_cv].sum()
        source_out = fluid & ~inside & ((sites[:, 0] < a) | (sites[:, 0] > b))
        flux += c * fi[source_out & ok & end & in_cv].sum()
    momentum = (e.T.astype(float) @ f.reshape(len(e), -1)[:, inside].sum(axis=1))
    return momentum, flux, walls


@pytest.mark.parametrize("D", [2, 3])
def test_momentum_balance_of_a_channel_with_a_body(D):
    """Every step: P_cv(t+1) - P_cv(t) = Pi_in - Pi_out - F_walls - F_body to 1e-12 of the terms;
    at steady state (after 6000 steps, tau 0.8) F_body = Pi_in - Pi_out - F_walls to 1e-9 of F_body,
    each term of the order of F_body (the walls take about as much as the body)."""
    sim, bodies = _channel(D)
    r = sim.vs.r
    a, b = 3, sim.shape[0] - 4
    for steady in (False, True):
        sim.step(6000 if steady else 30)                     # the start's waves, then the steady flow
        p0, flux, walls = _budget(sim, bodies, a, b)
        sim.step(1)
        p1, _, _ = _budget(sim, bodies, a, b)
        body = sim.forces()["body"] / r ** 2                 # lattice momentum per step
        scale = np.abs(np.concatenate([flux, walls, body])).max()
        assert np.abs(p1 - p0 - (flux - walls - body)).max() < 1e-12 * scale
        if steady:
            assert np.abs(body - (flux - walls)).max() < 1e-9 * abs(body[0])
            assert abs(walls[0]) > 0.1 * abs(body[0]) and abs(flux[0]) > abs(body[0])
            assert body[0] > 0 and abs(body[1]) > 1e-6 * body[0]          # drag downstream, a lift off the axis
