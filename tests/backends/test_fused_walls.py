"""The fused walls kernel: propagate + bc + collide in one sweep.

In strict builds it must give the bits of the three-sweep sequence halo -> propagate -> bc
-> collide, on every backend (C, OpenCL, the CUDA host shim), layout and operator, with a
force, a fixed bottom and an adiabatic top wall (and the other way round); and a
``Simulation`` with walls uses it by default.
"""
from __future__ import annotations

import numpy as np
import pytest

from wall_support import CASES, case_params, FORCE, OPERATOR_PARAMS, OPERATORS, T_BOTTOM, T_TOP, case_id, run_walls  # noqa: F401

STEPS = 6


def run_fused_walls(prog, f0, steps, operator, adiabatic, force=FORCE):
    params = dict(OPERATOR_PARAMS[operator], ax=force[0], ay=force[1])
    a = prog.pack(f0)
    b = prog.allocate()
    for _ in range(steps):
        prog.halo(a)
        prog.fused_walls(a, b, T_BOTTOM, T_TOP, adiabatic, **params)
        a, b = b, a
    prog.synchronize()
    return prog.unpack(a)


@pytest.mark.parametrize("adiabatic", [(False, True), (True, False)], ids=["fixed-adiabatic", "adiabatic-fixed"])
@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("case", case_params())
def test_fused_walls_is_bit_identical_to_three_sweeps_in_strict_mode(case, operator, adiabatic, wall_program,
                                                                      wall_state):
    prog = wall_program(*case, collision=operator, strict=True)
    want = run_walls(prog, wall_state, STEPS, operator, adiabatic)
    got = run_fused_walls(prog, wall_state, STEPS, operator, adiabatic)
    assert np.all(np.isfinite(want))
    diff = np.argwhere(got != want)
    assert diff.size == 0, f"{case_id(case)} {operator}: {len(diff)} values differ, first (p, x, y) {diff[0]}"


def test_fused_walls_needs_a_walls_spec():
    from lbgen.backends import c
    from lbgen.codegen.spec import KernelSpec
    from lbgen.codegen.render import generate
    prog = c.compile(generate(KernelSpec(layout="soa")), 4, 24)
    with pytest.raises(ValueError, match="without walls"):
        prog.fused_walls(prog.allocate(), prog.allocate(), tau=0.8, ax=0.0, ay=0.0)


def test_simulation_with_walls_steps_with_the_fused_kernel(monkeypatch):
    """The default step with walls is one fused_walls call; fused=False keeps the three sweeps,
    and both give the same bits in strict mode."""
    from lbgen.simulation.runner import Simulation, Walls
    from lbgen.run.setups import uniform_noise
    walls = Walls(T_bottom=1.02, T_top=0.98, adiabatic_top=True)
    kw = dict(backend="c", layout="caosoa", vl=4, collision="regularized", gravity=(0.0, -1e-4), walls=walls,
              strict=True, check_every=0)
    fused, split = Simulation(8, 32, **kw), Simulation(8, 32, fused=False, **kw)
    calls = []
    real = type(fused.program).fused_walls
    monkeypatch.setattr(type(fused.program), "fused_walls",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    for sim in (fused, split):
        sim.set_fields(**uniform_noise(8, 32))
        sim.run(5)
    assert len(calls) == 5
    assert np.array_equal(fused.populations(), split.populations())


@pytest.mark.parametrize("case", [("c", "caosoa", 8), ("opencl", "soa", None), ("cuda", "aos", None)], ids=case_id)
def test_fused_walls_with_the_reference_wall_scheme_is_bit_identical_too(case, wall_state):
    from programs import PROGRAMS
    from wall_support import LX, LY, runtime_of
    backend, layout, vl = case
    prog = PROGRAMS.of(runtime_of(backend), (LX, LY), True, layout=layout, vl=vl, collision="regularized", walls=True,
                       wall_scheme="reference")
    want = run_walls(prog, wall_state, STEPS, "regularized", (False, True))
    got = run_fused_walls(prog, wall_state, STEPS, "regularized", (False, True))
    assert np.array_equal(got, want)
