"""The wall rows' relaxation time as a parameter (`<P>_params.tau_wall` in C, the scalar
`tau_wall` of the OpenCL and CUDA collide, fused and fused_walls, `Walls(tau_wall=...)` and
the sweeps' `tau_wall=` keyword in Python).

Default 1: the bits of the fixed 1 of earlier releases (the record's 0 means 1 too); another
value changes the wall rows -- and only them in one step -- to what the NumPy oracle computes
with the same relaxation (lbgen.reference: `tau_wall` of collide_bgk / collide_regularized),
on C, OpenCL and the CUDA host shim.
"""
from __future__ import annotations

import numpy as np
import pytest

from programs import PROGRAMS
from wall_support import FORCE, T_BOTTOM, T_TOP, runtime_of, wall_state  # noqa: F401
from lbgen.reference import bulk as ref
from lbgen.reference import walls as refw

LX, LY, H = 4, 24, 3
ADIABATIC = (False, True)
STEPS = 3
PARAMS = {"bgk": dict(tau=0.8), "regularized": dict(C1=0.2, C2=0.1, C3=0.5)}
TAU_WALL = 0.7
CASES = [("c", "aos", None, "bgk"), ("c", "caosoa", 8, "regularized"), ("c", "csoa", 4, "bgk"),
         ("opencl", "soa", None, "regularized"), ("cuda", "caosoa", 8, "bgk")]


@pytest.fixture(scope="module")
def programs():
    """programs(backend, layout, vl, operator): the strict walled program (the session's cache)."""

    def get(backend, layout, vl, operator):
        return PROGRAMS.of(runtime_of(backend), (LX, LY), True, layout=layout, vl=vl, collision=operator,
                           walls=True)

    return get


def _fused_walls(prog, f0, operator, steps=STEPS, **kw):
    params = dict(PARAMS[operator], ax=FORCE[0], ay=FORCE[1])
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(steps):
        prog.halo(a)
        prog.fused_walls(a, b, T_BOTTOM, T_TOP, ADIABATIC, **kw, **params)
        a, b = b, a
    prog.synchronize()
    return prog.unpack(a)


def _oracle(f0, operator, tau_wall, steps=STEPS):
    f = f0.copy()
    for _ in range(steps):
        f = refw.step_walls(f, operator, T_BOTTOM, T_TOP, ADIABATIC, force=FORCE, tau_wall=tau_wall,
                            **PARAMS[operator])
    return f


@pytest.mark.parametrize("case", CASES, ids=["-".join(str(v) for v in c) for c in CASES])
def test_tau_wall_default_keeps_the_bits_and_another_value_matches_the_oracle(case, programs, wall_state):  # noqa: F811
    backend, layout, vl, operator = case
    prog = programs(*case)
    default = _fused_walls(prog, wall_state, operator)
    assert np.array_equal(_fused_walls(prog, wall_state, operator, tau_wall=1.0), default)
    want1 = _oracle(wall_state, operator, 1.0)
    assert np.abs(default - want1).max() <= 1e-12 * np.abs(want1).max()

    got = _fused_walls(prog, wall_state, operator, tau_wall=TAU_WALL)
    want = _oracle(wall_state, operator, TAU_WALL)
    assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max(), case
    # the wall rows relax differently (by far more than the tolerance) ...
    wall_rows = np.r_[0:H, LY - H:LY]
    assert np.abs(got[:, :, wall_rows] - default[:, :, wall_rows]).max() > 1e-6 * np.abs(want).max()
    # ... and after one step only they differ: the bulk's bits are the default's
    one = _fused_walls(prog, wall_state, operator, steps=1, tau_wall=TAU_WALL)
    one_default = _fused_walls(prog, wall_state, operator, steps=1)
    assert np.array_equal(one[:, :, H:LY - H], one_default[:, :, H:LY - H])
    assert not np.array_equal(one[:, :, :H], one_default[:, :, :H])


@pytest.mark.parametrize("backend", ["c", "opencl", "cuda"])
def test_tau_wall_in_collide_fused_and_the_three_sweeps(backend, programs, wall_state):  # noqa: F811
    """collide and fused relax the held walls' rows with tau_wall (fused: no bc, as the
    oracle's collide of the propagated state with that wall mask); the three-sweep step
    gives the bits of fused_walls with it (strict builds)."""
    from lbgen.simulation.parameters import Walls
    operator = "regularized"
    prog = programs(backend, "soa" if backend != "cuda" else "aos", None, operator)
    params = dict(PARAMS[operator], ax=FORCE[0], ay=FORCE[1])
    a, b = prog.pack(wall_state), prog.allocate()
    prog.halo(a)
    prog.fused(a, b, tau_wall=TAU_WALL, **params)
    mask = refw.wall_mask(LX, LY)
    want = ref.collide(ref.propagate(wall_state), operator, force=FORCE, wall=mask, tau_wall=TAU_WALL,
                       **PARAMS[operator])
    got = prog.unpack(b)
    assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()
    c = prog.pack(wall_state)
    prog.collide(c, c, tau_wall=TAU_WALL, **params)
    want = ref.collide(wall_state, operator, force=FORCE, wall=mask, tau_wall=TAU_WALL, **PARAMS[operator])
    assert np.abs(prog.unpack(c) - want).max() <= 1e-12 * np.abs(want).max()

    walls = Walls(T_bottom=T_BOTTOM, T_top=T_TOP, adiabatic_bottom=ADIABATIC[0], adiabatic_top=ADIABATIC[1],
                  tau_wall=TAU_WALL)
    out = {}
    for fused in (True, False):
        f, g = prog.pack(wall_state), prog.allocate()
        for _ in range(STEPS):
            prog.halo(f)
            f, g = prog.step(f, g, params, walls, fused=fused)
        prog.synchronize()
        out[fused] = prog.unpack(f)
    assert np.array_equal(out[True], out[False])
    want = _oracle(wall_state, operator, TAU_WALL)
    assert np.abs(out[True] - want).max() <= 1e-12 * np.abs(want).max()


def test_c_record_tau_wall_zero_means_one(programs, wall_state):  # noqa: F811
    """A record zeroed with {0} (drivers written before the field) keeps the default's bits."""
    prog = programs("c", "caosoa", 8, "regularized")
    params = dict(PARAMS["regularized"], ax=FORCE[0], ay=FORCE[1])
    a = prog.pack(wall_state)
    prog.halo(a)
    out = []
    for tau_wall in (1.0, 0.0):
        b = prog.allocate()
        par = prog.ffi.new("lbgen_params *", dict(params, wall_bottom=1, wall_top=1, T_bottom=T_BOTTOM, T_top=T_TOP,
                                                  adiabatic_top=1, tau_wall=tau_wall))
        prog.lib.lbgen_fused_walls(prog._ptr(a), prog._ptr(b), LX, LY, prog._region(None), par)
        out.append(prog.unpack(b))
    assert np.array_equal(out[0], out[1])


@pytest.mark.parametrize("bad", [0.5, 0.2, float("nan"), float("inf"), "1", True, None])
def test_bad_tau_wall_is_refused_naming_it(bad, programs):
    from lbgen.simulation.parameters import SimulationError, Walls
    with pytest.raises(SimulationError, match="tau_wall"):
        Walls(tau_wall=bad)
    prog = programs("c", "aos", None, "bgk")
    with pytest.raises(ValueError, match="tau_wall"):
        prog.fused(prog.allocate(), prog.allocate(), tau_wall=bad, tau=0.8, ax=0.0, ay=0.0)


def test_isothermal_walls_take_a_wall_relaxation_time():
    from lbgen.model.velocity_set import velocity_set
    from lbgen.simulation.parameters import Walls
    Walls(tau_wall=0.8).check(velocity_set("d2q9"))     # not a temperature: allowed
