"""Temporal blocking of the 3D C kernels (<prefix>_fused_tb, Simulation(lx, ly, lz, time_block=N)):
one sweep of depth N gives the bits of N single fused steps (halo, fused) in strict builds,
for every layout, in a periodic box and with walls, lids and a voxel mask, with Y cut into
bands and X split between threads; Simulation3D runs n // N sweeps and n % N single steps;
what temporal blocking cannot run is refused before any kernel is built."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.simulation.parameters import SimulationError
from support3d import bounds, LAYOUTS3D, R, SHAPE, kernel_params, program3d, random_state

#: name -> (walls, lids {(axis, side): lattice velocity}, mask seed or None)
CASES = {
    "periodic": ((), {}, None),
    "walls-xyz-lids": (("x", "y", "z"), {("z", "high"): (0.05, -0.02, 0.0), ("x", "low"): (0.0, 0.03, 0.02)}, None),
    "mask-walls-y-lid": (("y",), {("y", "low"): (0.04, 0.0, 0.01)}, 3),
}


def solid_mask(seed, shape=SHAPE) -> np.ndarray:
    return (np.random.default_rng(seed).random(shape) < 0.15).astype(np.uint8)


def boundaries(prog, case, shape=SHAPE):
    walls, lids, seed = CASES[case]
    solid = None if seed is None else solid_mask(seed, shape)
    return bounds(walls, {face: R * np.asarray(u) for face, u in lids.items()}, solid), solid


def initial(shape, solid, collision="bgk"):
    f0 = random_state("d3q19", shape, seed=5)
    if solid is not None:
        f0[:, solid == 1] = 0.0
    return f0


def single_steps(prog, f0, steps, bc, params):
    prog.set_boundaries(**(bc or {}))
    f, g = prog.pack(f0), prog.allocate()
    for _ in range(steps):
        prog.step_halo(f)
        f, g = prog.step(f, g, params)
    return prog.unpack(f)


def one_sweep(prog, f0, depth, bc, params):
    prog.set_boundaries(**(bc or {}))
    f, g = prog.pack(f0), prog.allocate()
    prog.halo(f)
    prog.fused_tb(f, g, depth, **params)
    return prog.unpack(g)


def _layouts():
    for layout, vl in LAYOUTS3D:
        fast = (layout, vl) in (("aos", None), ("caosoa", 8))
        yield pytest.param(layout, vl, marks=() if fast else (pytest.mark.slow,),
                           id=f"{layout}{'-vl' + str(vl) if vl else ''}")


@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("layout, vl", list(_layouts()))
def test_one_sweep_of_depth_n_is_bit_identical_to_n_fused_steps(layout, vl, case, depth):
    prog = program3d(layout, vl, strict=True)
    bc, solid = boundaries(prog, case)
    f0, params = initial(SHAPE, solid), kernel_params("bgk")
    expected = single_steps(prog, f0, depth, bc, params)
    assert np.array_equal(one_sweep(prog, f0, depth, bc, params), expected)


@pytest.mark.parametrize("depth", [2, 3])
def test_the_regularized_operator_blocks_bit_identically(depth):
    prog = program3d("caosoa", 4, collision="regularized", strict=True)
    bc, solid = boundaries(prog, "mask-walls-y-lid")
    f0, params = initial(SHAPE, solid), kernel_params("regularized")
    assert np.array_equal(one_sweep(prog, f0, depth, bc, params), single_steps(prog, f0, depth, bc, params))


BANDED = (7, 13, 16)


@pytest.fixture(scope="module")
def banded_program():
    """Kernels whose cache budget is 1 KiB: Y is cut into bands of max(2 HALO (depth-1), 4)
    rows (13 rows: 4 bands at depth 2 and 3), X split between 2 threads."""
    from lbgen.backends.c import default_flags
    from lbgen.codegen.spec import KernelSpec
    from programs import PROGRAMS
    spec = KernelSpec(backend="c", layout="csoa", vl=4, velocity_set="d3q19")
    flags = default_flags() + (f"-D{spec.prefix.upper()}_TB_KB=1",)
    return PROGRAMS(spec, BANDED, strict=True, flags=flags, threads=2)


@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("case", list(CASES))
def test_y_bands_and_thread_blocks_give_the_bits_of_single_steps(banded_program, case, depth):
    prog = banded_program
    bc, solid = boundaries(prog, case, BANDED)
    f0, params = initial(BANDED, solid), kernel_params("bgk")
    assert np.array_equal(one_sweep(prog, f0, depth, bc, params), single_steps(prog, f0, depth, bc, params))


def _simulation(time_block, steps, **kw):
    from lbgen import Simulation
    walls, lids, seed = CASES["mask-walls-y-lid"]
    sim = Simulation(*SHAPE, layout="caosoa", vl=4, strict=True, walls=walls, lid=lids, mask=solid_mask(seed),
                     tau=0.8, gravity=(1e-5, 0.0, -2e-5), time_block=time_block, check_every=0, **kw)
    rng = np.random.default_rng(2)
    sim.set_fields(1.0 + 0.02 * rng.standard_normal(SHAPE), *(0.03 * rng.standard_normal((3,) + SHAPE)))
    sim.run(steps)
    return sim


@pytest.mark.parametrize("time_block, steps", [(2, 7), (3, 7), (3, 9)])
def test_simulation3d_with_a_time_block_equals_single_steps(time_block, steps):
    blocked, single = _simulation(time_block, steps), _simulation(1, steps)
    assert np.array_equal(blocked.populations(), single.populations())
    assert blocked.time_step == single.time_step == steps
    assert blocked.sweeps == {"blocked": steps // time_block, "single": steps % time_block}
    assert blocked.program.calls["fused_tb"] == steps // time_block
    assert single.program.calls["fused_tb"] == 0


@pytest.mark.parametrize("kw", [dict(time_block=2, fused=False), dict(time_block=2, backend="opencl"),
                                dict(time_block=0), dict(time_block=9), dict(time_block="auto"),
                                dict(time_block=2.0)])
def test_time_blocks_that_cannot_run_are_refused_before_any_kernel_is_built(kw, monkeypatch):
    from lbgen import Simulation
    from lbgen.simulation import programs
    built = []
    monkeypatch.setattr(programs, "compile_program", lambda *a, **k: built.append(a))
    with pytest.raises(SimulationError):
        Simulation(*SHAPE, **kw)
    assert built == []


@pytest.mark.parametrize("depth", [0, 9, "2"])
def test_the_kernel_refuses_a_depth_outside_1_to_8(depth):
    prog = program3d("caosoa", 8, strict=True)
    f, g = prog.allocate(), prog.allocate()
    with pytest.raises(ValueError):
        prog.fused_tb(f, g, depth, None, **kernel_params("bgk"))
    assert not g.any()


@pytest.mark.parametrize("layout, vl", [("caosoa", 8), ("caosoa", 4), ("csoa", 8)])
@pytest.mark.parametrize("case", ["periodic", "mask-walls-y-lid"])
def test_streaming_stores_of_the_last_step_change_no_bit(layout, vl, case):
    """The last step of a sweep stores its clusters to nxt with non-temporal stores when they
    are on (lattices beyond the cache); forced on and off here, both give the bits of single steps."""
    prog = program3d(layout, vl, strict=True)
    bc, solid = boundaries(prog, case)
    f0, params = initial(SHAPE, solid), kernel_params("bgk")
    expected = single_steps(prog, f0, 3, bc, params)
    was = prog.lib.lbgen_set_streaming_stores(-1)
    try:
        for on in (1, 0):
            assert prog.lib.lbgen_set_streaming_stores(on) == on
            assert np.array_equal(one_sweep(prog, f0, 3, bc, params), expected)
    finally:
        prog.lib.lbgen_set_streaming_stores(was)



#: the fast subset's cases (D3Q39's three-site hops in a clustered layout, D3Q27 in SoA); the rest slow
LONGER_HOPS_FAST = [("caosoa", 4, "d3q39", "regularized"), ("soa", None, "d3q27", "bgk")]


@pytest.mark.parametrize("layout, vl, name, collision", [
    pytest.param(layout, vl, name, collision, id=f"{layout}-{vl}-{name}-{collision}",
                 marks=() if (layout, vl, name, collision) in LONGER_HOPS_FAST else (pytest.mark.slow,))
    for layout, vl in [("caosoa", 4), ("soa", None)]
    for name, collision in [("d3q39", "bgk"), ("d3q39", "regularized"), ("d3q27", "bgk")]])
def test_sets_with_longer_hops_block_bit_identically(name, collision, layout, vl):
    """D3Q39 hops 3 sites: 3 halo rows in Z, each a lane-shifted copy of a row of the other end
    (clustered layouts), with a wall, a lid and a voxel mask; D3Q27 pulls from all 9 rows."""
    shape = (7, 6, 24)
    prog = program3d(layout, vl, name=name, collision=collision, strict=True, shape=shape)
    solid = solid_mask(4, shape)
    bc = bounds(("y",), {("y", "low"): R * np.asarray((0.02, 0.0, 0.01))}, solid)
    f0 = random_state(name, shape, seed=3)
    f0[:, solid == 1] = 0.0
    values = {"tau": 0.8, "C1": 0.3, "C2": 0.3, "C3": 0.8, "ax": 1e-5, "ay": -2e-5, "az": 3e-5}
    params = {n: values[n] for n in prog.parameter_names}
    for depth in (2, 3):
        assert np.array_equal(one_sweep(prog, f0, depth, bc, params), single_steps(prog, f0, depth, bc, params))
