"""The 3D kernels of the GPU dialects: OpenCL (through pyopencl, here on the CPU with Intel's
runtime) and CUDA (through the host shim, "cuda-shim"; nvcc compiles it; and on a GPU through
CuPy, "cuda", skipped without one, CI included) -- one text for both dialects and both
dimensions, templates/gpu/kernels.j2.
Every layout x operator x set = the oracle (lbgen.reference.bulk3d) to 1e-12 with a force,
periodic and with walls, a lid and a random voxel mask (fast subset, the rest slow); strict
builds bit-identical to the C backend's 3D kernels (populations, boundaries, fields,
init_equilibrium); the GPU default VL 32 on an LZ = 96 lattice; pack/unpack/halo = Layout's
formulas; nvcc compiles the 3D .cu (sm_80, sm_90).  With CI=true nothing skips."""
from __future__ import annotations


import numpy as np
import pytest

from helpers import require

from lbgen.backends import compile as compile_program, spec_backend
from lbgen.backends.build import BackendUnavailable
from lbgen.codegen.layouts import make_layout
from lbgen.codegen.render import generate
from lbgen.codegen.kernel_api import BODY_ENTRY_POINTS, GPU_ENTRY_POINTS_3D
from lbgen.codegen.spec import KernelSpec
from lbgen.reference import bulk3d as oracle
from programs import PROGRAMS
from support3d import (bounds, FORCE, LAYOUTS3D, NEW_OPERATORS, R, SHAPE, defined, kernel_run, swept, oracle_run, program3d, random_state)

STEPS = 3
#: the runtimes under test (lbgen.backends.RUNTIMES names); "cuda" needs a GPU and CuPy
BACKENDS = ("opencl", "cuda-shim", "cuda")
#: the fast suite's combinations (backend, layout, vl, set, operator); the rest is slow, except
#: on a GPU, where the whole sweep is quick (and skipped without one)
FAST = {("opencl", "caosoa", 8, "d3q19", "bgk"), ("opencl", "soa", None, "d3q27", "regularized"),
        ("cuda-shim", "csoa", 4, "d3q19", "regularized"), ("cuda-shim", "aos", None, "d3q19", "bgk"),
        ("opencl", "csoa", 4, "d3q27", "trt"), ("cuda-shim", "caosoa", 8, "d3q19", "trt-les"),
        ("opencl", "soa", None, "d3q19", "regularized-les"), ("cuda-shim", "soa", None, "d3q27", "cumulant"),
        ("opencl", "caosoa", 4, "d3q19", "mrt-les"), ("cuda-shim", "caosoa", 8, "d3q27", "central"),
        ("cuda-shim", "caosoa", 8, "d3q27", "kbc")}


def _need(what, fn):
    try:
        return fn()
    except (BackendUnavailable, ImportError) as e:
        require(False, str(e), what)


def _opencl():
    from lbgen.backends import opencl as ob
    ob.available()
    ob.select_device()


def _gpu():
    """A GPU runtime is never required (CI has no GPU): without one the test skips."""
    from lbgen.backends import available
    ok, why = available("cuda")
    if not ok:
        pytest.skip(f"no CUDA GPU here: {why}")


def _shim():
    from lbgen.backends.cuda import shim
    ok, why = shim.available()
    if not ok:
        raise BackendUnavailable(why)


def gpu3d(backend, layout, vl, name="d3q19", collision="bgk", strict=False, shape=SHAPE):
    """A compiled 3D program of a GPU dialect (the session's cache, tests/programs.py)."""
    if backend == "opencl":
        _need("OpenCL", _opencl)
    elif backend == "cuda":
        _gpu()
    else:
        _need("g++ for the CUDA host shim", _shim)
    return PROGRAMS.of(backend, shape, strict, layout=layout, vl=vl, velocity_set=name, collision=collision)


def rel_err(got, want) -> float:
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def mask(seed=1, fraction=0.15, shape=SHAPE) -> np.ndarray:
    return np.random.default_rng(seed).random(shape) < fraction


def _sweep(fast=FAST):
    for backend in BACKENDS:
        for layout, vl in LAYOUTS3D:
            for name in ("d3q19", "d3q27"):
                for collision in ("bgk", "regularized") + NEW_OPERATORS:
                    if not defined(name, collision) or not (swept(layout, vl, collision)
                                                            or (backend, layout, vl, name, collision) in fast):
                        continue
                    marks = () if (backend, layout, vl, name, collision) in fast or backend == "cuda" \
                        else (pytest.mark.slow,)
                    yield pytest.param(backend, layout, vl, name, collision, marks=marks,
                                       id=f"{backend}-{layout}{'-vl' + str(vl) if vl else ''}-{name}-{collision}")


def boundaries_case(prog, name, solid=None, walls=("y", "z"), lids=None):
    lids = {("z", "high"): (0.05, -0.02, 0.0)} if lids is None else lids
    solid = mask() if solid is None else solid
    bc = bounds(walls, {f: R * np.asarray(u) for f, u in lids.items()}, solid.astype(np.uint8))
    return bc, oracle.Boundaries(SHAPE, oracle.lattice(name), walls=walls, lids=lids, solid=solid)


@pytest.mark.parametrize("backend, layout, vl, name, collision", list(_sweep()))
def test_periodic_box_with_force_equals_the_oracle(backend, layout, vl, name, collision):
    f0 = random_state(name)
    prog = gpu3d(backend, layout, vl, name, collision)
    got = prog.unpack(kernel_run(prog, f0, STEPS, collision))
    assert rel_err(got, oracle_run(f0, STEPS, name, collision)) < 1e-12


@pytest.mark.parametrize("backend, layout, vl, name, collision", list(_sweep()))
def test_walls_lid_and_mask_equal_the_oracle(backend, layout, vl, name, collision):
    f0 = random_state(name)
    prog = gpu3d(backend, layout, vl, name, collision)
    bc, obc = boundaries_case(prog, name)
    got = prog.unpack(kernel_run(prog, f0, STEPS, collision, bc))
    want = oracle_run(f0, STEPS, name, collision, obc)
    assert rel_err(got, want) < 1e-12
    assert np.all(got[:, mask()] == 0.0)                   # solid voxels hold 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("walls, lids", [(("x",), {("x", "low"): (0.0, 0.03, 0.01)}),
                                         (("x", "y", "z"), {("y", "high"): (0.04, 0.0, -0.02)})],
                         ids=["x-walls-lid", "box-lid"])
def test_separate_kernels_with_walls_on_other_axes_equal_the_oracle(backend, walls, lids):
    f0 = random_state("d3q19", seed=3)
    prog = gpu3d(backend, "caosoa", 4)
    bc, obc = boundaries_case(prog, "d3q19", solid=mask(seed=4, fraction=0.1), walls=walls, lids=lids)
    got = prog.unpack(kernel_run(prog, f0, STEPS, "bgk", bc, fused=False))
    assert rel_err(got, oracle_run(f0, STEPS, "d3q19", "bgk", obc)) < 1e-12


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", ["caosoa", "csoa"])
def test_gpu_default_vl32_on_lz96_equals_the_oracle(backend, layout):
    shape = (2, 3, 96)                                   # LZ >= 3 * 32: VL 32 with a one-row halo
    f0 = random_state("d3q19", shape=shape, seed=9)
    prog = gpu3d(backend, layout, 32, "d3q19", "bgk", shape=shape)
    sol = mask(seed=2, fraction=0.1, shape=shape)
    lids = {("z", "low"): (0.03, 0.01, 0.0)}
    bc = bounds(("z",), {f: R * np.asarray(u) for f, u in lids.items()}, sol.astype(np.uint8))
    obc = oracle.Boundaries(shape, oracle.lattice("d3q19"), walls=("z",), lids=lids, solid=sol)
    got = prog.unpack(kernel_run(prog, f0, STEPS, "bgk", bc))
    want = oracle.run(f0.copy(), STEPS, "bgk", oracle.lattice("d3q19"), obc, force=FORCE, tau=0.8)
    assert rel_err(got, want) < 1e-12


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout, vl", [("aos", None), ("caosoa", 8)])
def test_pack_unpack_and_halo_kernels_are_layout3d_formulas(backend, layout, vl):
    prog = gpu3d(backend, layout, vl)
    lay = make_layout(layout, 19, SHAPE, vl, halo=1)
    f = random_state("d3q19", seed=11)
    packed = prog.pack(f)
    assert np.array_equal(prog.download(packed), lay.pack(f))
    assert np.array_equal(prog.unpack(packed), f)
    buf = np.random.default_rng(5).standard_normal(lay.size)
    want = lay.fill_halo(buf.copy())
    dev = prog.upload(buf)
    prog.halo(dev)
    assert np.array_equal(prog.download(dev), want)
    prog.halo(buf)                                       # a host buffer: copied around the launch
    assert np.array_equal(buf, want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout, vl", [("soa", None), ("caosoa", 4)])
def test_halo_planes_refresh_the_x_and_y_planes_and_leave_the_z_rows(backend, layout, vl):
    """The step's halo refresh: the halo kernel's values on the X and Y halo planes, the
    clustered rows of Z halo untouched (propagate and fused wrap Z themselves: the oracle tests
    above step with it)."""
    prog = gpu3d(backend, layout, vl)
    lay = make_layout(layout, 19, SHAPE, vl, halo=1)
    buf = np.random.default_rng(8).standard_normal(lay.size)
    dev = prog.upload(buf)
    prog.halo_planes(dev)
    got = prog.download(dev)
    H = lay.halo
    p = np.arange(19)[:, None, None, None, None]
    x = np.arange(-H, lay.LX + H)[None, :, None, None, None]
    y = np.arange(-H, lay.LY + H)[None, None, :, None, None]
    rows = np.r_[-H:0, lay.NR:lay.NR + H][None, None, None, :, None]
    k = np.arange(lay.VL)[None, None, None, None, :]
    z_rows = np.zeros(lay.size, bool)
    z_rows[lay.index(p, x, y, rows, k).ravel()] = True
    assert np.array_equal(got[z_rows], buf[z_rows])
    assert np.array_equal(got[~z_rows], lay.fill_halo(buf.copy())[~z_rows])
    assert 0 < z_rows.sum() < lay.size


def _strict_case(backend, layout, vl, name, collision, fused):
    gpu = gpu3d(backend, layout, vl, name, collision, strict=True)
    c = program3d(layout, vl, name, collision, strict=True)
    f0 = random_state(name, seed=13)
    out = []
    for prog in (c, gpu):
        bc = bounds(("x", "z"), {("z", "low"): (0.02, 0.05, 0.0), ("x", "high"): (0.0, -0.03, 0.01)},
                             mask(seed=6, fraction=0.12).astype(np.uint8))
        out.append(prog.unpack(kernel_run(prog, f0, STEPS, collision, bc, fused=fused)))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout, vl, name, collision, fused",
                         [("caosoa", 8, "d3q19", "bgk", True), ("soa", None, "d3q27", "regularized", False),
                          ("csoa", 4, "d3q19", "trt-les", True),
                          pytest.param("aos", None, "d3q19", "regularized", True, marks=pytest.mark.slow),
                          pytest.param("csoa", 4, "d3q27", "bgk", True, marks=pytest.mark.slow)])
def test_strict_builds_are_bit_identical_to_the_c_backend(backend, layout, vl, name, collision, fused):
    c, gpu = _strict_case(backend, layout, vl, name, collision, fused)
    assert np.array_equal(gpu, c)


@pytest.mark.parametrize("backend", BACKENDS)
def test_init_and_fields_are_bit_identical_to_the_c_backend(backend):
    rng = np.random.default_rng(2)
    rho = 1.0 + 0.1 * rng.random(SHAPE)
    u = 0.05 * rng.standard_normal((3,) + SHAPE)
    a = tuple(R * FORCE)
    gpu = gpu3d(backend, "caosoa", 8, strict=True)
    c = program3d("caosoa", 8, strict=True)
    bufs = []
    for prog in (c, gpu):
        f = prog.allocate()
        prog.init_equilibrium(f, rho, *(R * u), 1.0, force=a)
        bufs.append(f)
    assert np.array_equal(c.download(bufs[0]), gpu.download(bufs[1]))
    fc, fg = c.fields(bufs[0], force=a), gpu.fields(bufs[1], force=a)
    for k in ("rho", "ux", "uy", "uz", "T"):
        assert np.array_equal(fc[k], fg[k]), k
    assert np.max(np.abs(fg["ux"] - R * u[0])) < 1e-14


@pytest.mark.parametrize("backend", BACKENDS)
def test_sizes_and_boundaries_are_checked_before_any_work(backend):
    src = generate(KernelSpec(backend=spec_backend(backend), layout="caosoa", vl=8, velocity_set="d3q19"))
    with pytest.raises(ValueError, match="not a multiple of VL=8"):
        compile_program(backend, src, (4, 4, 12))
    prog = gpu3d(backend, "caosoa", 8)
    with pytest.raises(ValueError, match="solid: a float64 array"):
        prog.set_boundaries(solid=np.zeros(SHAPE))
    with pytest.raises(ValueError, match="lids=4 names a face without a wall"):
        prog.set_boundaries(walls=1, lids=4)


@pytest.mark.parametrize("layout, vl, collision, name", [
    pytest.param(layout, vl, collision, name, id=f"{name}-{layout}{vl or ''}-{collision}",
                 marks=() if (layout, name, collision) == ("caosoa", "d3q19", "bgk") else (pytest.mark.slow,))
    for name in ("d3q19", "d3q27")                                                   # nvcc: 5-20 s each
    for layout, vl, collision in [("caosoa", 32, "bgk"), ("soa", None, "regularized"), ("csoa", 8, "bgk"),
                                  ("caosoa", 32, "trt-les"), ("aos", None, "trt"), ("soa", None, "bgk-les"),
                                  ("csoa", 8, "regularized-les")]])
def test_nvcc_compiles_the_3d_cu(layout, vl, collision, name):
    from lbgen.backends.cuda import nvcc
    require(*nvcc.available(), "nvcc")
    src = generate(KernelSpec(backend="cuda", layout=layout, vl=vl, velocity_set=name, collision=collision))
    first = (layout, name, collision) == ("caosoa", "d3q19", "bgk")
    archs = ("sm_80", "sm_90") if first else ("sm_90",)         # both archs once; the matrix on sm_90
    jobs = [(src, a, False) for a in archs] + ([(src, "sm_90", True)] if first else [])   # strict (a flag) once
    for res in nvcc.compile_many(jobs):
        assert res.binary
        assert set(res.kernels) == {f"lbgen_{k}" for k in GPU_ENTRY_POINTS_3D + BODY_ENTRY_POINTS}, res.log


@pytest.mark.parametrize("runtime", ["opencl", "cuda-shim", "cuda"])
def test_simulation3d_on_a_gpu_runtime_is_bit_identical_to_the_c_backend(runtime):
    import lbgen
    if runtime == "opencl":
        _need("OpenCL", _opencl)
    elif runtime == "cuda":
        _gpu()
    else:
        _need("g++ for the CUDA host shim", _shim)
    solid = mask(seed=8, fraction=0.1)
    kw = dict(velocity_set="d3q19", tau=0.8, gravity=(1e-5, 0.0, -2e-5), walls="z", lid={"z-high": (0.05, 0, 0)},
              mask=solid, layout="caosoa", vl=8, strict=True)
    sims = [lbgen.Simulation(*SHAPE, backend=b, **kw) for b in ("c", runtime)]
    rho = 1.0 + 1e-2 * np.random.default_rng(3).standard_normal(SHAPE)
    for sim in sims:
        sim.set_fields(rho=rho, ux=0.02, uy=0.0, uz=0.0)
        sim.run(4)
    c, gpu = (s.populations() for s in sims)
    assert np.array_equal(c, gpu)
    assert sims[1].spec.backend == spec_backend(runtime)
    fc, fg = sims[0].fields(), sims[1].fields()
    assert all(np.array_equal(fc[k], fg[k]) for k in fc)
