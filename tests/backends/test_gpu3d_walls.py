"""The 3D thermal walls across Z in the GPU dialects (issue 39): OpenCL (through pyopencl, on
the CPU here) and CUDA (the host shim, "cuda-shim", compiled by g++; nvcc compiles the .cu;
"cuda" on a GPU, skipped without one) -- templates/gpu/kernels.j2's bc, one text for both
dialects, and the wall planes' tau_wall in collide and fused.  propagate, bc, collide of a D3Q39
lattice between a hot and a cold plate equal the independent NumPy oracle
(``lbgen.reference.walls3d``) to 1e-12 per held side, adiabatic or fixed, and strict builds
give the C backend's bits (tests/backends/test_c3d_walls.py checks C against the same oracle).
One or two layouts per runtime in the fast suite: the layout code (the site index, the pull)
is the periodic kernels' own, swept in test_gpu3d.py; the bc reads and writes through the one
site macro of every layout.  D3Q103 (a slow derivation and compile): the oracle on one layout."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import require, require_runtime
from lbgen.simulation.parameters import Walls
from programs import PROGRAMS
from walls3d_support import AXIS_SHAPES, SHAPE, kernel_params, oracle, run, state

#: the wall cases: both walls fixed; fixed below, adiabatic above with tau_wall = 0.9; the bottom
#: wall only (a lattice split in Z holds the top wall on another part)
CASES = [(Walls(T_bottom=1.1, T_top=0.9), (True, True)),
         (Walls(T_bottom=1.05, adiabatic_top=True, tau_wall=0.9), (True, True)),
         (Walls(T_bottom=1.1, T_top=0.9), (True, False))]


def _program(runtime, layout, vl, precision="double", name="d3q39", strict=True):
    require_runtime(runtime)
    return PROGRAMS.of(runtime, SHAPE, strict, layout=layout, vl=vl, velocity_set=name, precision=precision,
                       walls=True)


def _c_program(precision="double"):
    """test_c3d_walls.py's C program (the same key: one compile for both files)."""
    return PROGRAMS.of("c", SHAPE, True, layout="soa", vl=None, velocity_set="d3q39", precision=precision, walls=True)


@pytest.mark.parametrize("runtime,layout,vl", [("opencl", "soa", None), ("cuda-shim", "caosoa", 4),
                                               ("cuda", "caosoa", 4)])
def test_walls_equal_the_oracle_and_the_c_bits(runtime, layout, vl):
    gpu, c = _program(runtime, layout, vl), _c_program()
    f0 = state()
    for walls, sides in CASES:
        out = run(gpu, f0, 3, walls, sides)
        assert np.abs(out - oracle(f0, 3, walls, sides)).max() < 1e-12
        assert np.array_equal(out, run(c, f0, 3, walls, sides))
        if sides == (True, True):      # no mass crosses a wall
            assert abs(out.sum() - f0.sum()) < 1e-12 * f0.sum()
    assert gpu.calls["bc"] == 3 * len(CASES) and gpu.calls["collide"] == 3 * len(CASES)
    # fused relaxes the wall planes with tau_wall too (no bc): the C kernel's bits, and not the bulk's
    params = kernel_params()
    outs = []
    for program, tau_wall in ((gpu, 0.9), (c, 0.9), (gpu, 1.0)):
        f, g = program.pack(f0), program.allocate()
        program.step_halo(f)
        program.fused(f, g, sides=(True, False), tau_wall=tau_wall, **params)
        outs.append(program.unpack(g))
    assert np.array_equal(outs[0], outs[1])
    low, high = outs[0][..., :3] - outs[2][..., :3], outs[0][..., 3:] - outs[2][..., 3:]
    assert np.abs(low).max() > 1e-8 and np.abs(high).max() == 0.0   # only the held wall's planes


@pytest.mark.slow
@pytest.mark.parametrize("runtime,layout,vl,precision", [("opencl", "caosoa", 4, "double"),
                                                         ("opencl", "csoa", 4, "single"),
                                                         ("opencl", "aos", None, "mixed"),
                                                         ("cuda-shim", "aos", None, "double"),
                                                         ("cuda-shim", "soa", None, "single"),
                                                         ("cuda-shim", "csoa", 4, "double")])
def test_walls_every_layout_and_precision(runtime, layout, vl, precision):
    walls, sides = CASES[0]
    f0 = state()
    program = _program(runtime, layout, vl, precision, strict=False)
    for fused in (False, True):             # propagate, bc, collide; the one fused_walls launch
        out = run(program, f0, 2, walls, sides, fused=fused)
        assert np.abs(out - oracle(f0, 2, walls, sides)).max() < (1e-12 if precision == "double" else 2e-6)
    assert program.calls["fused_walls"] == 2


@pytest.mark.slow
def test_d3q103_walls_equal_the_oracle():
    """D3Q103 (hops up to 3 along z as D3Q39): OpenCL SoA, the two kinds of wall, stepped by the one
    fused_walls launch and by propagate, bc, collide."""
    shape = (2, 2, 12)
    require_runtime("opencl")
    program = PROGRAMS.of("opencl", shape, False, layout="soa", velocity_set="d3q103", walls=True)
    f0 = state("d3q103", shape=shape)
    for walls, sides in CASES[:2]:
        params = kernel_params("d3q103")
        outs = []
        for fused in (True, False):         # fused_walls, then propagate, bc, collide
            f, g = program.pack(f0), program.allocate()
            for _ in range(2):
                program.step_halo(f)
                f, g = program.step(f, g, params, walls=walls, sides=sides, fused=fused)
            outs.append(program.unpack(f))
        assert np.abs(outs[0] - oracle(f0, 2, walls, sides, "d3q103")).max() < 1e-12
        assert np.abs(outs[0] - outs[1]).max() < 1e-14      # not a strict build: round-off apart at most
    assert program.calls["fused_walls"] == 4


def test_nvcc_compiles_the_3d_walls_cu():
    """The .cu of the 3D walls builds for a GPU (strict, sm_90) with the bc and fused_walls kernels beside the sweeps."""
    from lbgen.backends.cuda import nvcc
    from lbgen.codegen.kernel_api import BODY_ENTRY_POINTS, GPU_ENTRY_POINTS_3D
    from lbgen.codegen.render import generate
    from lbgen.codegen.spec import KernelSpec
    require(*nvcc.available(), "nvcc")
    src = generate(KernelSpec(backend="cuda", velocity_set="d3q39", walls=True, layout="caosoa", vl=32))
    res = nvcc.compile_cu(src, "sm_90", strict=True)
    assert res.binary
    assert set(res.kernels) == {f"lbgen_{k}" for k in GPU_ENTRY_POINTS_3D + BODY_ENTRY_POINTS + ("bc", "fused_walls")}, \
        res.log


@pytest.mark.parametrize("runtime", ["opencl", "cuda"])
def test_simulation_on_a_gpu_runtime_is_bit_identical_to_the_c_backend(runtime):
    """lbgen.Simulation with Walls on a GPU runtime: the C backend's populations and fields, and
    the bottom wall's temperature where the oracle puts it (the walls imposed something)."""
    import lbgen
    require_runtime(runtime)
    kw = dict(velocity_set="d3q39", tau=0.8, gravity=(1e-5, 0.0, -2e-5), walls=Walls(T_bottom=1.02, T_top=0.98),
              layout="soa", strict=True)
    sims = [lbgen.Simulation(*SHAPE, backend=b, **kw) for b in ("c", runtime)]
    rho = 1.0 + 1e-2 * np.random.default_rng(3).standard_normal(SHAPE)
    for sim in sims:
        sim.set_fields(rho=rho, ux=0.01, uy=0.0, uz=0.0, T=1.0)
        sim.run(4)
    c, gpu = (s.populations() for s in sims)
    assert np.array_equal(c, gpu)
    T = sims[1].fields()["T"]
    assert T[..., 0].mean() > 1.0 > T[..., -1].mean()


# --- walls across x and y (KernelSpec(wall_axis=...)): the model's rows for that axis ------------------
def _axis_program(runtime, axis, layout="soa", vl=None):
    if runtime != "c":
        require_runtime(runtime)
    return PROGRAMS.of(runtime, AXIS_SHAPES[axis], True, layout=layout, vl=vl, velocity_set="d3q39", walls=True,
                       wall_axis=axis)


def _axis_check(program, axis):
    """The program's propagate, bc, collide = the oracle's walls across `axis`; mass kept between
    two held walls; the populations after the steps (per case)."""
    f0 = state(shape=AXIS_SHAPES[axis])
    outs = []
    for walls, sides in (CASES[0], CASES[1], (CASES[2][0], (False, True))):
        out = run(program, f0, 2, walls, sides)
        assert np.abs(out - oracle(f0, 2, walls, sides, axis=axis)).max() < 1e-12, (axis, sides)
        if sides == (True, True):
            assert abs(out.sum() - f0.sum()) < 1e-12 * f0.sum()
        outs.append(out)
    return outs


@pytest.mark.parametrize("runtime,axis", [("opencl", "y"), ("cuda-shim", "x")])
def test_walls_across_x_and_y_equal_the_oracle(runtime, axis):
    _axis_check(_axis_program(runtime, axis), axis)


@pytest.mark.slow
@pytest.mark.parametrize("axis,layout,vl", [("x", "soa", None), ("y", "caosoa", 4)])
def test_c_walls_across_x_and_y_equal_the_oracle_and_the_gpu_bits(axis, layout, vl):
    """Slow: gcc builds each D3Q39 walls program (~50 s).  The C kernels (a clustered layout for y:
    its wall planes cut the cluster rows' lines, not the rows) and the GPU dialects' bits."""
    program = _axis_program("c", axis, layout, vl)
    c = _axis_check(program, axis)
    with pytest.raises(ValueError, match=rf"fused_tb: the 3D thermal walls across {axis} are not time-blocked"):
        program.fused_tb(program.allocate(), program.allocate(), 2, walls=CASES[0][0], **kernel_params())
    for runtime in ("opencl", "cuda-shim"):
        assert all(np.array_equal(a, b) for a, b in zip(c, _axis_check(_axis_program(runtime, axis), axis)))


def test_wall_axis_refusals_in_words():
    from lbgen.codegen.kernel_api import check_sizes3d
    from lbgen.codegen.spec import KernelSpec, SpecError
    from lbgen.model.velocity_set import velocity_set
    assert KernelSpec(velocity_set="d3q39", walls=True, wall_axis="z").validate().wall_axis is None   # the default
    for kw, message in ((dict(velocity_set="d3q39", wall_axis="x"), r"wall_axis='x' places the thermal walls"),
                        (dict(velocity_set="d3q39", walls=True, wall_axis="w"), r"stand across one of x, y, z"),
                        (dict(velocity_set="d3q39", walls=True, wall_axis=0), r"stand across one of x, y, z"),
                        (dict(walls=True, wall_axis="z"), r"the thermal walls of a 2D set stand across one of x, y$")):
        with pytest.raises(SpecError, match=message):
            KernelSpec(**kw).validate()
    from lbgen.simulation.parameters import SimulationError
    from lbgen.simulation.runner import Simulation
    with pytest.raises(SimulationError, match=r"Walls: axis='w' is not one of x, y, z"):
        Walls(axis="w")
    with pytest.raises(SimulationError, match=r"the 2D thermal walls stand across x or y"):
        Simulation(6, 16, walls=Walls(axis="z"))
    assert Walls(axis="x").axis_of(3) == "x" and Walls().axis_of(3) == "z" and Walls().axis_of(2) == "y"
    spec = KernelSpec(velocity_set="d3q39", layout="soa", walls=True, wall_axis="x").validate()
    assert check_sizes3d(spec, velocity_set("d3q39"), 6, 4, 12) == "lx=6 is too small for walls: they need lx >= 8"
    assert check_sizes3d(spec, velocity_set("d3q39"), 8, 4, 4) is None
