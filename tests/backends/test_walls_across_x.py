"""The 2D thermal walls across x (issue 39): ``KernelSpec(walls=True, wall_axis='x')``,
``Walls(axis='x')``.  The wall rows are the columns x = 0..H-1 and LX-1..LX-H (H = 3 on D2Q37);
the algebra is lbgen.model.walls' across axis 0 (the same sympy), the kernels take the lines
across the walls as rows y.

(1) halo -> propagate -> bc -> collide on C, OpenCL and the CUDA host shim, every layout family,
    with a force along both axes, a fixed bottom (x = 0) and an adiabatic top (x = LX-1) wall,
    matches the NumPy oracle's walls across x (``reference.walls.step_walls(axis=0)``, typed from
    the scheme's description, not from the sympy) to 1e-12 after 20 steps; D2V17 and D2Q9 too (C);
(2) fused_walls gives the three sweeps' bits in strict builds, and C, OpenCL and the CUDA host
    shim give the same bits;
(3) a region split (the bc's rows, fused_walls' columns) gives the whole lattice's bits;
(4) the layer across x is the layer across y turned: a Simulation with walls across x on
    (LX, LY) equals the one across y on (LY, LX) with x and y swapped (fields and mass to 1e-12),
    for D2Q37 and D2V17 (lbgen's scheme: its derivation takes any axis) and the isothermal D2Q9;
(5) the refusals: a time block across x, the production code's scheme across x, host + device
    regions (they split X); (6) nvcc compiles the CUDA source.
"""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.model.wall_frame import upright
from lbgen.reference import bulk as ref
from lbgen.reference import walls as refw
from lbgen.simulation.parameters import SimulationError, Walls
from lbgen.simulation.runner import Simulation
from programs import PROGRAMS
from wall_support import (ADIABATIC, FORCE, OPERATOR_PARAMS, T_BOTTOM, T_TOP, TOLERANCE, case_id,
                          near_equilibrium_state, rel_err, runtime_of)

LX, LY = 16, 24                 # walls across x need LX >= 8; LY/VL >= 3 for VL = 8
STEPS = 20
CASES = [("c", "aos", None), ("c", "soa", None), ("c", "csoa", 4), ("c", "caosoa", 8),
         ("opencl", "soa", None), ("opencl", "csoa", 4), ("opencl", "aos", None), ("opencl", "caosoa", 8),
         ("cuda", "caosoa", 8), ("cuda", "aos", None)]
FAST = [("c", "aos", None), ("c", "caosoa", 8), ("opencl", "soa", None), ("opencl", "csoa", 4), ("cuda", "caosoa", 8)]


def _params(cases):
    return [pytest.param(c, id=case_id(c), marks=() if c in FAST else (pytest.mark.slow,)) for c in cases]


@pytest.fixture(scope="module")
def state():
    """Near-equilibrium (Q, LX, LY) state (wall_support.near_equilibrium_state)."""
    return near_equilibrium_state((LX, LY), 39)


@pytest.fixture(scope="module")
def oracle(state):
    memo = {}

    def get(operator):
        if operator not in memo:
            f = state.copy()
            for _ in range(STEPS):
                f = refw.step_walls(f, operator, T_BOTTOM, T_TOP, ADIABATIC, axis=0, force=FORCE,
                                    **OPERATOR_PARAMS[operator])
            memo[operator] = f
        return memo[operator]

    return get


def program(backend, layout, vl, operator="bgk", strict=False):
    options = dict(threads=2) if backend == "c" else {}
    return PROGRAMS.of(runtime_of(backend), (LX, LY), strict, options, layout=layout, vl=vl, collision=operator,
                       walls=True, wall_axis="x")


def three_sweeps(prog, f0, steps, operator, region=None):
    params = dict(OPERATOR_PARAMS[operator], ax=FORCE[0], ay=FORCE[1])
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(steps):
        prog.halo(a)
        prog.propagate(a, b)
        for r in region or [None]:
            prog.bc(a, b, T_BOTTOM, T_TOP, ADIABATIC, *FORCE, region=r)
        prog.collide(b, a, **params)
    prog.synchronize()
    return prog.unpack(a)


def fused_walls(prog, f0, steps, operator, regions=None):
    params = dict(OPERATOR_PARAMS[operator], ax=FORCE[0], ay=FORCE[1])
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(steps):
        prog.halo(a)
        for r in regions or [None]:
            prog.fused_walls(a, b, T_BOTTOM, T_TOP, ADIABATIC, region=r, **params)
        a, b = b, a
    prog.synchronize()
    return prog.unpack(a)


@pytest.mark.parametrize("case", _params(CASES))
def test_walls_across_x_match_the_oracle_after_20_steps(case, state, oracle):
    got = three_sweeps(program(*case), state, STEPS, "bgk")
    want = oracle("bgk")
    assert rel_err(got, want) <= TOLERANCE["double"], case_id(case)
    # the walls are across x: the periodic run differs next to x = 0, and the oracle across y elsewhere
    periodic = state.copy()
    for _ in range(STEPS):
        periodic = ref.step(periodic, "bgk", force=FORCE, **OPERATOR_PARAMS["bgk"])
    assert rel_err(got[:, :3], periodic[:, :3]) > 1e-4


def test_regularized_walls_across_x_match_the_oracle(state, oracle):
    got = three_sweeps(program("c", "caosoa", 8, "regularized"), state, STEPS, "regularized")
    assert rel_err(got, oracle("regularized")) <= TOLERANCE["double"]


def test_the_oracle_across_x_is_the_oracle_across_y_turned(state):
    """The oracle's two axes agree with each other: the state transposed (x and y swapped, with the
    populations of the swapped velocities) stepped with walls across y is the x run transposed."""
    vs = refw.set_of(None)
    swap = [vs.velocities.index((ey, ex)) for ex, ey in vs.velocities]      # population of (ey, ex)
    turned = state[swap].transpose(0, 2, 1)
    f, g = state.copy(), turned.copy()
    for _ in range(3):
        f = refw.step_walls(f, "bgk", T_BOTTOM, T_TOP, ADIABATIC, axis=0, force=FORCE, tau=0.8)
        g = refw.step_walls(g, "bgk", T_BOTTOM, T_TOP, ADIABATIC, axis=1, force=FORCE[::-1], tau=0.8)
    assert rel_err(g, f[swap].transpose(0, 2, 1)) < 1e-13


@pytest.mark.parametrize("case", _params([c for c in CASES if c[0] == "c"] + [("opencl", "soa", None),
                                                                              ("cuda", "caosoa", 8)]))
def test_fused_walls_across_x_is_the_three_sweeps_bit_for_bit(case, state):
    prog = program(*case, strict=True)
    want = three_sweeps(prog, state, 6, "bgk")
    assert np.array_equal(fused_walls(prog, state, 6, "bgk"), want), case_id(case)


def test_c_opencl_and_cuda_give_the_same_bits_across_x(state):
    results = [fused_walls(program(b, "soa", None, "regularized", strict=True), state, 6, "regularized")
               for b in ("c", "opencl", "cuda")]
    assert all(np.array_equal(results[0], r) for r in results[1:])


@pytest.mark.parametrize("backend", ["c", "opencl"])
def test_regions_across_x_give_the_whole_lattice(backend, state):
    """bc over two bands of rows, fused_walls over two bands of columns (the low one holding the
    bottom wall, the high one the top): the bits of the whole-lattice sweeps."""
    prog = program(backend, "soa", None, strict=True)
    assert np.array_equal(three_sweeps(prog, state, 4, "bgk", region=[(0, LX, 0, 10), (0, LX, 10, LY)]),
                          three_sweeps(prog, state, 4, "bgk"))
    assert np.array_equal(fused_walls(prog, state, 4, "bgk", regions=[(0, 5, 0, LY), (5, LX, 0, LY)]),
                          fused_walls(prog, state, 4, "bgk"))


def _layer(vs_name, shape, axis, gravity, **kw):
    """A lattice with walls across ``axis`` (None: y) and the start of a seeded stratified layer across y."""
    thermal = vs_name != "d2q9"                   # the isothermal set's walls impose no temperature
    walls = Walls(T_bottom=1.02, T_top=0.98, axis=axis) if thermal else Walls(axis=axis)
    sim = Simulation(*shape, velocity_set=vs_name, collision="bgk", tau=0.7, gravity=gravity, walls=walls,
                     layout="soa", threads=1, **kw)
    rng = np.random.default_rng(7)
    ramp = np.linspace(1.02, 0.98, shape[1])
    T = np.broadcast_to(ramp[None, :], shape) + 1e-3 * rng.standard_normal(shape) if thermal else np.ones(shape)
    u = 1e-3 * rng.standard_normal((2,) + shape)
    return sim, T, u


@pytest.mark.parametrize("vs_name", ["d2q37", "d2v17", "d2q9"])
def test_a_layer_across_x_is_the_layer_across_y_turned(vs_name):
    """Walls across x on (LY, LX) = walls across y on (LX, LY) with x and y swapped: the fields after
    40 steps and the mass, to 1e-12 (the populations are stored in another order: not the bits)."""
    shape, turned = (12, 16), (16, 12)
    gravity = (0.0, -2e-4)
    sim_y, T, u = _layer(vs_name, shape, None, gravity)
    sim_x = _layer(vs_name, turned, "x", gravity[::-1])[0]
    rho = np.ones(shape)
    sim_y.set_fields(rho, u[0], u[1], T)
    start = upright({"rho": rho, "ux": u[0], "uy": u[1], "T": T}, "x")
    sim_x.set_fields(start["rho"], start["ux"], start["uy"], start["T"])
    mass0 = sim_x.diagnostics()["mass"]
    sim_y.step(40)
    sim_x.step(40)
    want = upright(sim_y.fields(), "x")
    got = sim_x.fields()
    for k in want:
        assert np.abs(got[k] - want[k]).max() < 1e-12, k
    assert abs(sim_x.diagnostics()["mass"] - mass0) < 1e-12 * mass0
    assert np.abs(got["ux"]).max() > 1e-6                       # the layer moves


def test_what_walls_across_x_cannot_take_is_refused_in_words():
    from lbgen.codegen.spec import KernelSpec, SpecError
    with pytest.raises(SimulationError, match=r"time_block=2: the 2D thermal walls across x are not time-blocked"):
        Simulation(16, 24, walls=Walls(axis="x"), time_block=2)
    with pytest.raises(SimulationError, match=r"the production code's scheme is the 2D walls across y only"):
        Simulation(16, 24, walls=Walls(axis="x", scheme="reference"))
    with pytest.raises(SimulationError, match=r"Walls\(axis='x'\) and device_backend='opencl': the host and device "
                                              r"regions split X, and each would hold both walls; put the walls "
                                              r"across y, or run one backend"):
        Simulation(16, 24, walls=Walls(axis="x"), device_backend="opencl", host_columns=3)
    with pytest.raises(SimulationError, match=r"Walls\(axis='z'\): the 2D thermal walls stand across x or y"):
        Simulation(16, 24, walls=Walls(axis="z"))
    with pytest.raises(SpecError, match=r"LX=6 is too small for walls: the 3 wall rows of D2Q37 at each side and "
                                        r"the bulk row next to them need LX >= 8"):
        KernelSpec(walls=True, wall_axis="x", layout="soa").validate(6, 24)
    assert KernelSpec(walls=True, wall_axis="y").validate().wall_axis is None       # the default spelled out
    prog = program("c", "soa", None, strict=True)
    with pytest.raises(ValueError, match=r"fused_tb: the 2D thermal walls across x are not time-blocked"):
        prog.fused_tb(prog.allocate(), prog.allocate(), 2, walls=Walls(axis="x"), tau=0.8, ax=0.0, ay=0.0)


def test_nvcc_compiles_the_walls_across_x():
    """nvcc builds the CUDA source of the walls across x (the host shim runs it above)."""
    from helpers import require
    from lbgen.backends.cuda import nvcc
    from lbgen.codegen.render import generate
    from lbgen.codegen.spec import KernelSpec
    require(*nvcc.available(), "nvcc")
    res = nvcc.compile_cu(generate(KernelSpec(backend="cuda", layout="caosoa", vl=32, collision="regularized",
                                              walls=True, wall_axis="x")), "sm_90")
    assert res.kernels["lbgen_bc"].registers > 0 and res.kernels["lbgen_fused_walls"].registers > 0


@pytest.mark.parametrize("vs_name", ["d2v17", "d2q9"])
def test_the_other_2d_sets_walls_across_x_match_the_oracle(vs_name):
    """D2V17 (lbgen's scheme, derived for its hops across x as across y) and the isothermal D2Q9 (one
    wall row: T = 1 walls) against the oracle's walls across x, 1e-12 after 10 steps (C, SoA)."""
    from lbgen.model.velocity_set import velocity_set
    vs = velocity_set(vs_name)
    rng = np.random.default_rng(17)
    shape = (LX, LY)
    f0 = ref.equilibrium(1 + 0.05 * rng.uniform(-1, 1, shape), 0.05 * rng.uniform(-1, 1, shape),
                         0.05 * rng.uniform(-1, 1, shape), 1 + (0.05 if not vs.isothermal else 0.0)
                         * rng.uniform(-1, 1, shape), vs)
    temperatures = (T_BOTTOM, T_TOP, ADIABATIC) if not vs.isothermal else (1.0, 1.0, (False, False))
    want = f0.copy()
    for _ in range(10):
        want = refw.step_walls(want, "bgk", *temperatures, axis=0, force=FORCE, vs=vs, tau=0.8)
    prog = PROGRAMS.of("c", (LX, LY), False, dict(threads=2), layout="soa", velocity_set=vs_name, collision="bgk",
                       walls=True, wall_axis="x")
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(10):
        prog.halo(a)
        prog.fused_walls(a, b, *temperatures, tau=0.8, ax=FORCE[0], ay=FORCE[1])
        a, b = b, a
    assert rel_err(prog.unpack(a), want) <= TOLERANCE["double"], vs_name
