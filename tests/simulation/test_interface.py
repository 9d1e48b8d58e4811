"""One public interface for the 2D and 3D lattices (lbgen.simulation.interface): the same
``set_fields`` forms give the same populations bit for bit, ``run(steps, progress, callback)``,
``fields()`` a dict of the D + 2 fields, the populations' precision-range check, the
no-state refusal, and ``isinstance(lbgen.Simulation(lx, ly, lz), lbgen.Simulation)``."""
from __future__ import annotations

import numpy as np
import pytest

import lbgen
from lbgen.simulation.interface import field_names, no_state
from lbgen.simulation.parameters import SimulationError

#: a small lattice of each dimension (default layouts)
SHAPES = {2: (8, 16), 3: (6, 5, 8)}


def _sim(d, **kw):
    return lbgen.Simulation(*SHAPES[d], tau=0.8, **kw)


def _velocity(d, shape):
    rng = np.random.default_rng(d)
    return [0.01 * rng.standard_normal(shape) for _ in range(d)]


@pytest.mark.parametrize("d", [2, 3])
def test_every_lattice_is_a_simulation_and_every_set_fields_form_gives_the_same_bits(d):
    sim = _sim(d)
    assert isinstance(sim, lbgen.Simulation) and sim.dimension == d and sim.shape == SHAPES[d]
    shape = SHAPES[d]
    rho, u = 1.0 + 0.01 * np.random.default_rng(9).standard_normal(shape), _velocity(d, shape)
    names = field_names(d)[1:-1]
    forms = [lambda: sim.set_fields(rho, *u), lambda: sim.set_fields(rho, *u, 1.0),
             lambda: sim.set_fields(rho, u=tuple(u), T=1.0), lambda: sim.set_fields(rho=rho, **dict(zip(names, u))),
             lambda: sim.set_fields(rho, u=np.stack(u))]
    states = []
    for form in forms:
        form()
        states.append(sim.state().tobytes())
    assert len(set(states)) == 1
    fields = sim.fields()
    assert isinstance(fields, dict) and tuple(fields) == field_names(d)
    assert all(v.shape == shape for v in fields.values())


@pytest.mark.parametrize("d", [2, 3])
def test_set_fields_refuses_a_velocity_of_another_dimension_naming_the_forms(d):
    sim = _sim(d)
    with pytest.raises(SimulationError, match="velocity components"):
        sim.set_fields(1.0, *([0.0] * (d - 1)))
    with pytest.raises(SimulationError, match=f"takes {d}"):
        sim.set_fields(1.0, u=(0.0,) * (5 - d))
    with pytest.raises(SimulationError, match="T given twice"):
        sim.set_fields(1.0, *([0.0] * d), 1.0, T=1.0)
    assert not sim.has_state                           # nothing was set


@pytest.mark.parametrize("d", [2, 3])
def test_run_takes_progress_and_callback_and_refuses_without_a_state(d):
    sim = _sim(d, check_every=4)
    with pytest.raises(SimulationError) as e:
        sim.run(3)
    assert str(e.value) == no_state(d) and "set_fields" in str(e.value)
    sim.set_fields(1.0, *([0.0] * d))
    seen = []
    stats = sim.run(6, progress=False, callback=seen.append)
    assert seen and seen[-1] == 6 == sim.time_step and stats.sites == np.prod(SHAPES[d])


@pytest.mark.parametrize("d", [2, 3])
def test_set_populations_refuses_values_beyond_the_working_precision(d):
    sim = _sim(d, precision="single")
    sim.set_fields(1.0, *([0.0] * d))
    f = sim.populations()
    f[(1,) + (2,) * d] = 1e300                         # finite in double, Inf in single
    with pytest.raises(SimulationError, match="beyond the range of this run's float32"):
        sim.set_populations(f)
    f[(1,) + (2,) * d] = np.nan
    with pytest.raises(SimulationError, match="not finite"):
        sim.set_populations(f)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("change, message", [
    ({"lx": 0}, "lx=0 must be a positive integer (lattice sites)"),
    ({"threads": -1}, "threads=-1 must be an integer >= 0"),
    ({"check_every": 2.5}, "check_every=2.5 must be an integer >= 0"),
    ({"time_block": 2, "fused": False}, "time_block=2 blocks the fused step"),
    ({"time_block": 2, "backend": "opencl"}, "time_block=2 (temporal blocking) runs on the C backend alone"),
    ({"time_block": "auto"}, "time_block='auto' is decided by timing kernels"),
])
def test_the_parameter_checks_are_one_in_every_dimension(d, change, message):
    axes = ("lx", "ly", "lz")[:d]
    kw = {**dict(zip(axes, SHAPES[d])), **change}
    sizes = [kw.pop(a) for a in axes]
    with pytest.raises(SimulationError) as e:
        lbgen.Simulation(*sizes, **kw)
    assert message in str(e.value)
