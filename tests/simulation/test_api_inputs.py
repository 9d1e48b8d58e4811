"""Trust, round four (issue 35, item 5): the Python API refuses what it cannot answer.
Results asked for before any state raise as ``run()`` does (they were NaN and 1e300
sentinels); wrong-typed ``walls`` name the parameter and what it takes (they were raw
TypeErrors); ``restore`` refuses NaN populations and keeps no state; lid mappings with a face
twice, a non-finite component or a speed above the Mach limit are refused; a divergence with
a lid names the lid and its Mach number."""
import warnings

import numpy as np
import pytest

from lbgen import Simulation
from lbgen.model.physics import LID_MACH_MAX, LID_MACH_WARN, LidMachWarning, lid_mach
from lbgen.simulation.parameters import SimulationError, Walls


@pytest.fixture(scope="module")
def sim2():
    return Simulation(8, 16, threads=1)


@pytest.fixture(scope="module")
def sim3():
    return Simulation(8, 8, 8, threads=1)


@pytest.mark.parametrize("call", ["fields", "diagnostics", "populations", "state"])
def test_results_before_any_state_raise_in_2d_and_3d(sim2, sim3, call):
    for sim in (sim2, sim3):
        assert not sim.has_state
        with pytest.raises(SimulationError, match=rf"{call}\(\): the simulation has no state yet"):
            getattr(sim, call)()


@pytest.mark.parametrize("walls, words", [
    (True, "walls=True"),
    (Walls(), "lbgen.Walls are thermal walls; D3Q19 is an isothermal 3D set"),
    (3, "walls=3"),
])
def test_simulation3d_refuses_walls_of_another_type_naming_them(walls, words):
    with pytest.raises(SimulationError) as e:
        Simulation(8, 8, 8, walls=walls)
    assert words in str(e.value) and "a string or a sequence of 'x', 'y', 'z'" in str(e.value)


def test_restore_refuses_nan_populations_and_keeps_no_state(sim2, sim3):
    for sim, shape in ((sim2, (sim2.vs.Q, 8, 16)), (sim3, (sim3.vs.Q, 8, 8, 8))):
        bad = np.full(shape, 0.05, dtype=sim.dtype)
        bad[(2, 1, 3) + ((4,) if len(shape) == 4 else ())] = np.nan
        with pytest.raises(SimulationError, match="restore: population 2 at \\(x=1, y=3.*\\) is nan"):
            sim.restore(bad, 7)
        assert not sim.has_state and sim.time_step == 0
    good = np.full((sim3.vs.Q, 8, 8, 8), 0.05)
    fresh = Simulation(8, 8, 8, threads=1)
    fresh.restore(good, 3)
    assert fresh.has_state and fresh.time_step == 3


@pytest.mark.parametrize("lid, words", [
    ({"z-high": (0.1, 0, 0), "Z-HIGH": (0.1, 0, 0)}, "the z-high face is given twice ('z-high' and 'Z-HIGH')"),
    ({"z-high": (float("inf"), 0, 0)}, "component ux = inf is not finite"),
    ({"z-high": (0, 0, 0.1)}, "normal to the face"),
    ({"z-high": (LID_MACH_MAX * 1.01, 0, 0)}, f"a lid may move at most at Mach {LID_MACH_MAX:g}"),
])
def test_simulation3d_refuses_bad_lids(lid, words):
    with pytest.raises(SimulationError) as e:
        Simulation(8, 8, 8, walls="z", lid=lid)
    assert words in str(e.value)


def test_a_divergence_with_a_lid_names_the_lid_and_its_mach_number():
    """Broken in round four: Mach 5 diverged with a hint that blamed tau alone.  A cavity at
    tau = 0.51 and Mach 0.45 (allowed, in the warned band) diverges within 400 steps."""
    with pytest.warns(LidMachWarning):                 # the band below the limit: taken, with a warning
        sim = Simulation(12, 12, 12, tau=0.51, walls="xyz", lid={"z-high": (0.45, 0, 0)}, threads=1,
                           check_every=50)
    sim.set_fields(1.0, 0.0, 0.0, 0.0)
    with pytest.raises(SimulationError) as e:
        sim.run(400)
    text = str(e.value)
    assert "the run diverged" in text and "z-high at Mach 0.45" in text and f"up to Mach {LID_MACH_MAX:g}" in text


def test_simulation3d_warns_in_the_unstable_lid_band_and_still_runs():
    """Broken in round four: Simulation3D refused lids above the Mach limit but took the
    unstable band (LID_MACH_WARN < Ma <= LID_MACH_MAX) silently; the CLI warned.  Now a
    LidMachWarning (the rule of lbgen.model.physics.lid_mach_check), and the run proceeds."""
    band = 0.5 * (LID_MACH_WARN + LID_MACH_MAX) / lid_mach((1.0, 0.0, 0.0), "d3q19")
    with pytest.warns(LidMachWarning) as caught:
        sim = Simulation(12, 12, 12, tau=0.8, walls="xyz", lid={"z-high": (band, 0, 0)}, threads=1)
    lid = [w for w in caught if issubclass(w.category, LidMachWarning)]
    assert len(lid) == 1 and "z-high" in str(lid[0].message)
    assert lid[0].filename == __file__                 # it points at the caller's line
    sim.set_fields(1.0, 0.0, 0.0, 0.0)
    sim.run(20)
    assert sim.time_step == 20
    u = sim.fields()["ux"]
    assert np.all(np.isfinite(u)) and np.abs(u).max() > 0       # the lid moved the fluid
    calm = 0.9 * LID_MACH_WARN / lid_mach((1.0, 0.0, 0.0), "d3q19")
    with warnings.catch_warnings(record=True) as quiet:
        warnings.simplefilter("always")
        Simulation(12, 12, 12, tau=0.8, walls="xyz", lid={"z-high": (calm, 0, 0)}, threads=1)
    assert not [w for w in quiet if issubclass(w.category, LidMachWarning)]
