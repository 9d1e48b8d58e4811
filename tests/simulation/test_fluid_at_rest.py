"""What a run reports is physical (half-step): a fluid at rest under gravity reads u = 0, the
Rayleigh-Taylor set-up starts balanced (no sloshing mode in momentum_y), set_fields and
fields are inverses (docs/physics.md).

Before: fields, diagnostics and the series reported the stored (post-collision) velocity,
u_H + a/2 (uy = -g/(2r) at rest), and set_fields stored the given velocity, so the RT
set-up started a vertical sloshing mode of amplitude ~ g/(2r) in momentum_y.
"""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.reference import bulk as ref
from lbgen.run.config import RunConfig
from lbgen.run.driver import Run
from lbgen.run.setups import rayleigh_taylor
from lbgen.simulation.runner import Simulation, SimulationError, Walls

G = (0.0, -4e-4)


@pytest.mark.parametrize("velocity_set", ["d2q37", "d2q9"])
@pytest.mark.parametrize("collision", ["bgk", "regularized"])
def test_a_fluid_at_rest_under_gravity_reads_zero_velocity(collision, velocity_set):
    """Uniform T = 1 between walls at T = 1, the set-up's hydrostatic density: after 300 steps
    max |u| < 1e-8 (measured 4e-10 .. 2e-9), where the stored moments read uy = a/2 = g/(2r)
    (1.7e-4 for D2Q37: what fields() reported before)."""
    lx, ly = 4, 64
    sim = Simulation(lx, ly, collision=collision, gravity=G, walls=Walls(), velocity_set=velocity_set,
                     check_every=0)
    sim.set_fields(**rayleigh_taylor(lx, ly, gravity=G, T_hot=1.0, T_cold=1.0, amplitude=0.0))
    a = G[1] / sim.vs.r
    assert np.abs(sim.fields()["uy"]).max() < 1e-15               # starts at rest
    sim.run(300)
    F = sim.fields()
    assert np.hypot(F["ux"], F["uy"]).max() < 1e-8
    d = sim.diagnostics()
    assert d["max_speed"] < 1e-8 and abs(d["momentum_y"]) < 1e-8 * d["mass"]
    # the stored (post-collision) moments carry the whole force of the last step: +a/2
    stored_uy = ref.fields(sim.populations(), sim.vs)[2]
    assert np.allclose(stored_uy, a / 2, rtol=0, atol=1e-8) and abs(a / 2) > 1e-4


def test_set_fields_and_fields_are_inverse_under_gravity():
    lx, ly = 8, 32
    rng = np.random.default_rng(2)
    x = {"rho": 1 + 0.05 * rng.uniform(-1, 1, (lx, ly)), "ux": 0.03 * rng.uniform(-1, 1, (lx, ly)),
         "uy": 0.03 * rng.uniform(-1, 1, (lx, ly)), "T": 1 + 0.05 * rng.uniform(-1, 1, (lx, ly))}
    for collision in ("bgk", "regularized"):
        sim = Simulation(lx, ly, collision=collision, gravity=(1e-3, -2e-3), check_every=0)
        sim.set_fields(**x)
        F = sim.fields()
        for k in x:
            assert np.abs(F[k] - x[k]).max() < 1e-14, k
        # the host path (DistributedSimulation's) gives the same
        for k, v in sim._fields_of(sim.populations()).items():
            assert np.abs(v - x[k]).max() < 1e-14, k
        np.testing.assert_allclose(sim._equilibrium(*x.values()), sim.populations(), rtol=1e-14, atol=1e-16)
        assert sim.force == (1e-3 / sim.vs.r, -2e-3 / sim.vs.r)


def test_a_temperature_the_force_would_make_non_positive_is_refused():
    sim = Simulation(4, 32, gravity=(0.0, -0.3), check_every=0)         # |a|^2/8 = 7.9e-3
    with pytest.raises(SimulationError, match=r"must exceed \|a\|\^2/8 = 0.00785"):
        sim.set_fields(1.0, 0.0, 0.0, 0.005)


def test_rayleigh_taylor_series_has_no_sloshing_mode(tmp_path):
    """The set-up's series (32 x 128, g = -4e-4, 1000 steps): max |momentum_y| stays below 10 %
    of M |a| / 2 (measured 3.4 %: the interface's own dynamics); before, the reported momentum
    sat at -M a/2 with a sloshing mode of the same amplitude on top (max 1.31 = 1.9 M |a|/2,
    19 times this bound)."""
    cfg = RunConfig(setup="rayleigh-taylor", lx=32, ly=128, collision="regularized", gravity=G, steps=1000,
                    walls={"T_bottom": 1.05, "T_top": 0.95, "adiabatic_bottom": False, "adiabatic_top": False},
                    series_every=10, out=str(tmp_path / "rt"), pictures="none", threads=1)
    run = Run(cfg, echo=lambda m: None)
    run.execute()
    series = run.output.read_series()
    a = abs(G[1]) / run.sim.vs.r
    M = series["mass"][0]
    assert len(series["momentum_y"]) == 101
    assert np.abs(series["momentum_y"]).max() < 0.1 * M * a / 2, np.abs(series["momentum_y"]).max() / (M * a / 2)
    # at step 0 the fluid is at rest
    assert series["max_speed"][0] < 1e-15 and abs(series["momentum_y"][0]) < 1e-10
