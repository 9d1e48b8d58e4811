"""The reference wall scheme where its conditions cannot be imposed (D2V17): refused for runs,
and the reason observed with the NumPy oracle (a gas at rest between its walls does not stay at rest)."""
import numpy as np
import pytest
from click.testing import CliRunner

from lbgen import Simulation
from lbgen.cli.main import main
from lbgen.model.catalog import MODEL_SETS, wall_scheme_refusal
from lbgen.model.velocity_set import velocity_set
from lbgen.reference import bulk as ref
from lbgen.reference import walls as refw
from lbgen.run import driver
from lbgen.simulation.parameters import SimulationError, Walls


def test_only_d2v17_lacks_the_reference_schemes_farthest_row():
    refused = {k for k, e in MODEL_SETS.items() if e.D == 2 and wall_scheme_refusal(e, "reference")}
    assert refused == {"d2v17"}
    assert all(wall_scheme_refusal(e, "lbgen") is None for e in MODEL_SETS.values())


def test_a_simulation_refuses_it_before_building(monkeypatch):
    with pytest.raises(SimulationError, match=r"D2V17.*1 unknown population \(\(0, 3\)\)"):
        Simulation(4, 32, velocity_set="d2v17", walls=Walls(scheme="reference"))
    Simulation(4, 32, velocity_set="d2q37", walls=Walls(scheme="reference"))     # D2Q37: its own scheme


def test_the_run_command_refuses_it_before_any_work(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the simulation was built before the refusal")
    monkeypatch.setattr(driver, "make_simulation", boom)
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", "rayleigh-taylor", "--velocity-set", "d2v17", "--walls", "--wall-scheme",
                                  "reference", "--lx", "8", "--ly", "32", "--steps", "2", "--out", str(out)])
    assert r.exit_code != 0 and "does not hold on D2V17" in r.output
    assert not out.exists()


def _departure_from_rest(scheme, steps):
    """Largest change of a population from a gas at rest between walls at T = 1 (no force),
    seeded with a relative 1e-10 noise, after `steps` BGK (tau = 0.8) steps of the oracle."""
    vs = velocity_set("d2v17")
    ones = np.ones((1, 48))
    f0 = ref.equilibrium(ones, 0 * ones, 0 * ones, ones, vs)
    f0 = f0 * (1 + 1e-10 * np.random.default_rng(1).standard_normal(f0.shape))
    f = f0.copy()
    for _ in range(steps):
        f = refw.step_walls(f, "bgk", scheme=scheme, vs=vs, tau=0.8)
    return np.abs(f - f0).max()


@pytest.mark.slow
def test_why_a_gas_at_rest_leaves_rest_between_d2v17_reference_walls():
    """The oracle's own walls, 1 x 48: the noise grows by three orders of magnitude in 3000 steps
    with the reference scheme (the kernels do the same: they equal the oracle), and stays at
    its size with lbgen's."""
    assert _departure_from_rest("lbgen", 3000) < 1e-9
    assert _departure_from_rest("reference", 3000) > 1e-8
