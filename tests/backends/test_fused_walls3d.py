"""The 3D thermal walls in one sweep (issue 39): ``<prefix>_fused_walls`` (propagate + bc + collide)
of D3Q39 between a hot and a cold plate, on the C kernels, OpenCL and the CUDA host shim, walls
across z, y and x, gives the bits of the separate propagate, bc, collide in strict builds and the
independent NumPy oracle's walls (``lbgen.reference.walls3d``, typed from the scheme's
description) to 1e-12; C's temporal blocking (``fused_tb``) takes the walls across z with the same
bits and refuses x and y in words; ``lbgen run`` steps a 3D Rayleigh-Benard layer through them,
as the manifest's kernel calls show.  The programs are the 3D wall tests' own (one compile each,
tests/backends/test_gpu3d_walls.py and test_c3d_walls.py); D3Q103: test_gpu3d_walls.py's slow check."""
from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import require_runtime
from lbgen.simulation.parameters import SimulationError, Walls
from programs import PROGRAMS
from walls3d_support import AXIS_SHAPES, SHAPE, kernel_params, oracle, state

#: both walls fixed; fixed below, adiabatic above with tau_wall = 0.9; the top wall only (a
#: lattice split across the walls holds the bottom one on another part)
CASES = [(Walls(T_bottom=1.1, T_top=0.9), (True, True)),
         (Walls(T_bottom=1.05, adiabatic_top=True, tau_wall=0.9), (True, True)),
         (Walls(T_bottom=1.1, T_top=0.9), (False, True))]
STEPS = 3


def _steps(program, f0, walls, sides, fused, steps=STEPS):
    """`steps` kernel steps (Program.step: fused_walls, or propagate, bc, collide); unpacked."""
    params = kernel_params()
    f, g = program.pack(f0), program.allocate()
    for _ in range(steps):
        program.step_halo(f)
        f, g = program.step(f, g, params, walls=walls, fused=fused, sides=sides)
    return program.unpack(f)


def _check(program, axis="z"):
    """fused_walls = propagate, bc, collide bit for bit, = the oracle to 1e-12, mass kept between
    two held walls; one fused_walls call a step."""
    f0 = state(shape=program.shape)
    for walls, sides in CASES:
        program.calls.clear()
        fused = _steps(program, f0, walls, sides, True)
        assert program.calls["fused_walls"] == STEPS and not program.calls["propagate"] + program.calls["bc"]
        assert np.array_equal(fused, _steps(program, f0, walls, sides, False)), (axis, sides)
        assert np.abs(fused - oracle(f0, STEPS, walls, sides, axis=axis)).max() < 1e-12
        if sides == (True, True):
            assert abs(fused.sum() - f0.sum()) < 1e-12 * f0.sum()


def _gpu(runtime, shape, **kw):
    require_runtime(runtime)
    return PROGRAMS.of(runtime, shape, True, velocity_set="d3q39", walls=True, **kw)


def _c():
    """test_c3d_walls.py's C program (the same key: one compile)."""
    return PROGRAMS.of("c", SHAPE, True, layout="soa", vl=None, velocity_set="d3q39", precision="double", walls=True)


def test_c_fused_walls_across_z():
    _check(_c())


@pytest.mark.parametrize("runtime,layout,vl", [("opencl", "soa", None), ("cuda-shim", "caosoa", 4)])
def test_gpu_fused_walls_across_z_and_the_c_bits(runtime, layout, vl):
    """One launch a step; the C kernels' bits (the GPU pulls of the wall planes wrap Z within the line)."""
    gpu = _gpu(runtime, SHAPE, layout=layout, vl=vl)
    _check(gpu)
    f0 = state()
    walls, sides = CASES[1]
    assert np.array_equal(_steps(gpu, f0, walls, sides, True), _steps(_c(), f0, walls, sides, True))


@pytest.mark.parametrize("runtime,axis", [("opencl", "y"), ("cuda-shim", "x")])
def test_gpu_fused_walls_across_x_and_y(runtime, axis):
    _check(_gpu(runtime, AXIS_SHAPES[axis], layout="soa", vl=None, wall_axis=axis), axis)


def test_c_fused_tb_takes_the_walls_across_z():
    """Temporal blocking, depths 2 and 3: the bits of 6 single steps (propagate, bc, collide), each
    blocked Z line's wall planes redone after its bulk; a lattice of 3 x 4 sites per plane wraps
    the wavefront and the bands through the periodic images."""
    program = _c()
    f0 = state()
    params = kernel_params()
    for walls, sides in CASES:
        want = _steps(program, f0, walls, sides, False, steps=6)
        for depth in (2, 3):
            program.calls.clear()
            f, g = program.pack(f0), program.allocate()
            for _ in range(6 // depth):
                program.step_halo(f)
                program.fused_tb(f, g, depth, walls=walls, sides=sides, **params)
                f, g = g, f
            assert program.calls["fused_tb"] == 6 // depth
            assert np.array_equal(program.unpack(f), want), (sides, depth)


def test_time_blocked_walls_across_x_and_y_are_refused_in_words():
    """The blocked sweep's unit is a Z line (walked along x, banded along y): walls across x or y are
    refused before any work, naming the axis and what runs instead; across z they are taken."""
    from lbgen.codegen.spec import time_block_walls_refusal
    from lbgen.simulation.runner import Simulation
    assert time_block_walls_refusal(3, None) is None and time_block_walls_refusal(3, "z") is None
    assert time_block_walls_refusal(2, None) is None
    for axis, why in (("x", "the wavefront walks along x"), ("y", "y is cut into bands")):
        with pytest.raises(SimulationError, match=rf"time_block=2: the 3D thermal walls across {axis} are not "
                                                  rf"time-blocked.*{why}.*time block 1 \(fused_walls\)"):
            Simulation(8, 8, 12, velocity_set="d3q39", walls=Walls(axis=axis), time_block=2)


@pytest.mark.slow
def test_lbgen_run_steps_3d_rayleigh_benard_through_the_fused_walls(tmp_path):
    """lbgen run rayleigh-benard (D3Q39, walls across z; the C program above: soa, bgk, strict):
    4 steps are 4 fused_walls calls at time block 1 and 2 fused_tb calls at 2 (the manifest's
    kernel calls: no propagate, bc or collide), and the two runs end with the same bits.  Slow (two
    runs, ~12 s loaded); tests/run/test_rayleigh_taylor3d.py observes fused_walls through a run in
    the fast suite."""
    from click.testing import CliRunner

    from lbgen.cli.main import main
    ends = {}
    for depth in (1, 2):
        out = tmp_path / f"tb{depth}"
        result = CliRunner().invoke(main, ["run", "rayleigh-benard", "--velocity-set", "d3q39", "--lz", "12",
                                           "--ra", "10", "--tau", "0.55", "--steps", "4", "--layout", "soa",
                                           "--strict", "--collision", "bgk", "--time-block", str(depth),
                                           "--threads", "1", "--pictures", "none", "--save", str(out / "end.npz"),
                                           "--out", str(out)])
        assert result.exit_code == 0, result.output
        calls = json.loads((out / "manifest.json").read_text())["kernel_calls"]
        assert not {"propagate", "bc", "collide"} & set(calls)
        assert calls.get("fused_walls", 0) == (4 if depth == 1 else 0)
        assert calls.get("fused_tb", 0) == (0 if depth == 1 else 2)
        with np.load(out / "end.npz") as saved:
            ends[depth] = {k: saved[k] for k in saved.files}
    assert ends[1].keys() == ends[2].keys() and all(np.array_equal(ends[1][k], ends[2][k]) for k in ends[1])


@pytest.mark.slow
@pytest.mark.parametrize("layout,vl,precision", [("caosoa", 4, "double"), ("csoa", 4, "double"), ("aos", None, "double"),
                                                 ("soa", None, "single"), ("soa", None, "mixed")])
def test_c_fused_walls_and_fused_tb_every_layout_and_precision(layout, vl, precision):
    """test_c3d_walls.py's slow programs: fused_walls and fused_tb (depth 2, non-temporal stores on:
    the clustered layouts' blocked lines stream before their wall planes are redone) give the bits
    of propagate, bc, collide (mixed: the bc's values round-trip through the float store as the
    separate steps' do)."""
    program = PROGRAMS.of("c", SHAPE, True, layout=layout, vl=vl, velocity_set="d3q39", precision=precision,
                          walls=True)
    program._fn("set_streaming_stores")(1)
    f0 = state()
    params = kernel_params()
    walls, sides = CASES[1]
    want = _steps(program, f0, walls, sides, False, steps=4)
    assert np.array_equal(_steps(program, f0, walls, sides, True, steps=4), want)
    f, g = program.pack(f0), program.allocate()
    for _ in range(2):
        program.step_halo(f)
        program.fused_tb(f, g, 2, walls=walls, sides=sides, **params)
        f, g = g, f
    assert np.array_equal(program.unpack(f), want)
