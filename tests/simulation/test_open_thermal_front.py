"""A temperature front through a thermal velocity inlet (lbgen.simulation.open_faces: the
equilibrium inlet at T_in on the thermal sets) against the exact solution, and the mass balance of
the inlet and the outflow at steady state.

A uniform stream U (lattice units) enters a channel, periodic across, at x-low at the temperature
T_in = T0 (1 + eps) into a fluid at T0, and leaves through the zero-gradient outflow at x-high.
The temperature obeys the advection-diffusion equation T_t + U T_x = kappa T_xx with T = T_in at
the inlet: Ogata & Banks, "A solution of the differential equation of longitudinal dispersion in
porous media", USGS Professional Paper 411-A (1961), eq. (A-10) (semi-infinite, continuous
injection):

    T(x, t) = T0 + (T_in - T0)/2 [erfc((x - U t) / (2 sqrt(kappa t)))
                                  + exp(U x / kappa) erfc((x + U t) / (2 sqrt(kappa t)))],

kappa the set's thermal diffusivity (docs/physics.md: (tau - 1/2) T / r^2 on D2Q37, (tau - 1/2) /
(r^2 T) on D3Q39; at T ~ T0 = 1 both (tau - 1/2) / r^2).  The equilibrium inlet imposes T_in at the
first virtual site beyond the face, x = -1: x is measured from there.  Measured (tau = 0.8,
U = 0.05, eps = 1e-2, 400 steps, LX = 64): the largest error 1.05 % of T_in - T0 on D2Q37 (1.30 %
with x from the half-way face x = -1/2, 2.97 % there), 1.02 % on D3Q39; 1.05 % at 800 steps on
LX = 96 (D2Q37).  The bound, 3 %, is what an inlet that imposed no temperature (100 %), a wrong
one, or its equilibrium one site off (about 4.7 %) exceeds."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lbgen.model.velocity_set import velocity_set
from lbgen.simulation.open_faces import face_fluxes
from lbgen.simulation.runner import Simulation

U, TAU, EPS, STEPS, LX = 0.05, 0.8, 1e-2, 400, 64
SHAPES = {"d2q37": (LX, 4), "d3q39": (LX, 3, 3)}


def ogata_banks(x, t, u, kappa):
    erfc = np.vectorize(math.erfc)
    s = 2 * np.sqrt(kappa * t)
    return 0.5 * (erfc((x - u * t) / s) + np.exp(u * x / kappa) * erfc((x + u * t) / s))


def channel(name, T_in, shape=None):
    vs = velocity_set(name)
    r, shape = float(vs.r), shape or SHAPES[name]
    sim = Simulation(*shape, velocity_set=name, collision="bgk", tau=TAU, inlet={"x-low": U * r},
                     outflow="x-high", inlet_temperature=T_in)
    zeros = [np.zeros(shape)] * (vs.D - 1)
    sim.set_fields(np.ones(shape), U * r * np.ones(shape), *zeros, 1.0)
    return sim, r


@pytest.mark.parametrize("name", ["d2q37", "d3q39"])
def test_the_temperature_front_follows_ogata_banks(name):
    sim, r = channel(name, 1 + EPS)
    sim.run(STEPS)
    f = sim.fields()
    T = f["T"].mean(axis=tuple(range(1, f["T"].ndim)))
    assert np.ptp(f["T"] - T.reshape((-1,) + (1,) * (f["T"].ndim - 1))) < 1e-12     # uniform across
    kappa = (TAU - 0.5) / r ** 2
    want = ogata_banks(np.arange(LX) + 1.0, STEPS, U, kappa)
    err = np.abs((T - 1) / EPS - want)
    assert err.max() < 0.03, f"{name}: the front is off by {err.max():.3g} of T_in - T0 at x = {err.argmax()}"
    assert (T[0] - 1) / EPS > 0.95 and abs(T[-1] - 1) < 0.01 * EPS     # heated at the inlet, cold ahead (the expansion's sound: 0.5 %)


@pytest.mark.parametrize("name,shape", [("d2q37", (32, 4)), ("d3q39", (32, 3, 3))])
def test_mass_flux_in_equals_out_at_steady_state(name, shape):
    """Uniform inflow at T_in = T0 (1 + eps) and the outflow on a channel of 32 sites: once the
    front and the sound of the start have left (10000 steps; D2Q37's imbalance is 5e-4 at 1000
    steps, 1e-4 at 2000, 2e-8 at 5000; D3Q39's 1.8e-5 at 2000, 1.1e-9 at 5000), the mass flux
    through the inlet's layer equals the outflow's to round-off (measured at 10000 steps: 1.1e-14
    relative on D2Q37, 4.3e-14 on D3Q39; 3e-14 at 20000) and the mass stays put (< 3e-16 per step)."""
    sim, r = channel(name, 1 + EPS, shape)
    sim.run(10000)
    f = sim.fields()
    fluxes = face_fluxes(f, {("x", "low"): "inlet", ("x", "high"): "outflow"}, r)
    inflow, outflow = -fluxes["x-low"], fluxes["x-high"]
    m0 = float(f["rho"].sum())
    sim.run(1)
    dm = abs(float(sim.fields()["rho"].sum()) - m0)
    assert inflow > 0 and abs(inflow - outflow) < 1e-12 * inflow, f"in {inflow!r}, out {outflow!r}"
    assert dm < 1e-13 * m0
    assert abs(f["T"].mean() - 1 - EPS) < 1e-6 * EPS         # the channel holds the inlet's fluid


def test_thermal_open_faces_refused_where_they_do_not_run():
    """Refused in words before any kernel is built: a time block, a pressure outlet (anti-bounce-back
    is the second-order equilibrium's)."""
    from lbgen.simulation.parameters import SimulationError
    kw = dict(velocity_set="d2q37", inlet={"x-low": 0.05}, outflow="x-high", inlet_temperature=1.1)
    for extra, words in (({"time_block": 2}, "time_block=2"),):
        with pytest.raises(SimulationError, match=words):
            Simulation(32, 8, **{**kw, **extra})
    with pytest.raises(SimulationError, match="pressure outlet .x-high. needs a velocity set whose hops are 1"):
        Simulation(32, 8, velocity_set="d2q37", inlet={"x-low": 0.05}, outlet="x-high")
    from lbgen.simulation.parameters import Walls
    with pytest.raises(SimulationError, match="do not run beside the thermal walls.*walls='y'"):
        Simulation(16, 32, walls=Walls(), **kw)


@pytest.mark.slow
@pytest.mark.parametrize("name,shape", [("d2q37", (32, 8)), ("d3q39", (16, 4, 12))])
def test_strict_runs_are_bit_identical_on_c_and_opencl(name, shape):
    """The thermal inlet, outflow and slip walls in strict builds: the C and OpenCL runs end with the
    same bits (measured: 60 steps, both sets)."""
    from lbgen.backends import available
    ok, why = available("opencl")
    if not ok:
        pytest.skip(why)

    def run(backend):
        vs = velocity_set(name)
        r, D = float(vs.r), vs.D
        sim = Simulation(*shape, velocity_set=name, collision="bgk", tau=TAU, inlet={"x-low": U * r},
                         outflow="x-high", slip="y", inlet_temperature=1 + EPS, backend=backend, strict=True)
        sim.set_fields(np.ones(shape), U * r * np.ones(shape), *[np.zeros(shape)] * (D - 1), 1.0)
        sim.run(60)
        return sim.populations()
    c, cl = run("c"), run("opencl")
    assert np.array_equal(c, cl), f"{name}: C and OpenCL differ by {np.abs(c - cl).max():.3g}"
