"""One kernel API on every backend (issue 12, part 2).

The emitted C, OpenCL and CUDA sources offer the same entry points with the same arguments
in the same order, carry the model tables under the prefix and state (and check) the
lattice-size rules; the three emitted examples -- C built with gcc, OpenCL through
pyopencl on the CPU, CUDA through the host shim -- start from the same state and print
the same numbers, which are the NumPy reference's.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from helpers import FORCE, LX, LY, OPERATOR_PARAMS, example_make_args, example_reference, require
from lbgen.backends import BackendUnavailable
from lbgen.codegen.spec import KernelSpec
from lbgen.codegen.render import ENTRY_POINTS, generate
from lbgen.codegen.kernel_api import BODY_ENTRY_POINTS, WALL_ENTRY_POINTS
from lbgen.codegen.emit import emit
from lbgen.model.velocity_set import velocity_set



@pytest.fixture(scope="module")
def opencl_env():
    """Environment for a standalone pyopencl script: the device lbgen's backend would use."""
    try:
        from lbgen.backends import opencl
        device = opencl.select_device()
        entry = next(e for e in opencl.devices() if e[3].int_ptr == device.int_ptr)
    except (BackendUnavailable, ImportError) as e:
        require(False, f"OpenCL unavailable: {e}")
    # select_device() has pointed the ICD loader at the pip-installed runtimes (OCL_ICD_VENDORS)
    return dict(os.environ, PYOPENCL_CTX=f"{entry[0]}:{entry[1]}", PYTHONWARNINGS="ignore")


@pytest.fixture(scope="module")
def shim():
    from lbgen.backends.cuda import shim as mod
    ok, why = mod.available()
    require(ok, why)
    return mod


def _run(cmd, folder, env=None):
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def _examples(tmp_path, spec_kw, opencl_env, shim):
    """{backend: (folder, argv prefix, env)} with each emitted example built."""
    require(shutil.which("make") and shutil.which("gcc"), "make and gcc build the emitted C example")
    built = {}
    for backend in ("c", "opencl", "cuda"):
        folder = tmp_path / backend
        emit(KernelSpec(backend=backend, **spec_kw), folder)
        if backend == "c":
            proc = _run(example_make_args(KernelSpec(backend=backend, **spec_kw)), folder)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            built[backend] = (folder, ["./example"], None)
        elif backend == "opencl":
            built[backend] = (folder, [sys.executable, "example.py"], opencl_env)
        else:
            exe = shim.build_host_program(folder, ["example.cu", f"{spec_kw.get('prefix', 'lbgen')}_kernels.cu"])
            built[backend] = (folder, [str(exe)], None)
    return built


@pytest.mark.parametrize("spec_kw", [dict(layout="caosoa", vl=8), dict(layout="soa", collision="regularized")],
                         ids=["caosoa-vl8-bgk", "soa-regularized"])
@pytest.mark.slow
def test_the_three_emitted_examples_give_the_same_numbers(tmp_path, spec_kw, opencl_env, shim):
    steps, lx, ly = 10, 12, 48
    examples = _examples(tmp_path, spec_kw, opencl_env, shim)
    expected = example_reference(lx, ly, steps, spec_kw.get("collision", "bgk"))
    assert not np.allclose(expected[2], example_reference(lx, ly, 0, "bgk")[2])   # the state evolved
    results = {}
    for backend, (folder, argv, env) in examples.items():
        proc = _run(argv + [str(steps), str(lx), str(ly)], folder, env)
        assert proc.returncode == 0, f"{backend}: {proc.stdout}{proc.stderr}"
        assert f"{steps} steps on {lx} x {ly}: mass " in proc.stdout, proc.stdout
        data = np.loadtxt(folder / "example_fields.txt")
        assert data.shape == (lx * ly, 6)
        for column, field in zip(range(2, 6), expected):
            err = np.abs(data[:, column].reshape(lx, ly) - field).max()
            assert err <= 1e-12 * max(1.0, np.abs(field).max()), (backend, column, err)
        results[backend] = data
    for backend, data in results.items():
        assert np.array_equal(data[:, :2], results["c"][:, :2])
        assert np.abs(data - results["c"]).max() <= 1e-13, backend
    # bad sizes are refused, naming the value and the rule, before anything is allocated
    for backend, (folder, argv, env) in examples.items():
        proc = _run(argv + ["1", str(lx), "20" if spec_kw.get("vl") else "0"], folder, env)
        assert proc.returncode != 0, backend
        rule = "ly=20 is not a multiple of VL=8" if spec_kw.get("vl") else "lattice 12 x 0: lx and ly must be >= 1"
        assert rule in proc.stderr, (backend, proc.stderr)


def _c_api(header):
    block = re.search(r"BEGIN API.*?\*/(.*)/\* END API", header, re.S).group(1)
    block = re.sub(r"/\*.*?\*/", "", block, flags=re.S)
    return {m.group(1): m.group(2) for m in re.finditer(r"\blbgen_(\w+)\(([^)]*)\);", block)}


def _names(params):
    """Parameter names of a C parameter list, in order ('void' -> [])."""
    out = []
    for p in params.split(","):
        p = p.strip()
        if p and p != "void":
            out.append(re.search(r"(\w+)$", p).group(1))
    return out


@pytest.mark.parametrize("walls", [False, True], ids=["periodic", "walls"])
def test_every_backend_emits_the_same_entry_points_with_the_same_arguments(walls, shim):
    spec = dict(layout="csoa", vl=8, collision="regularized", walls=walls)
    c = generate(KernelSpec(backend="c", **spec))
    ocl = generate(KernelSpec(backend="opencl", **spec))
    cuda = generate(KernelSpec(backend="cuda", **spec))
    expected = [n for n in ENTRY_POINTS if walls or n not in WALL_ENTRY_POINTS]
    assert [e.replace("lbgen_", "") for e in c.entry_points] == expected
    assert c.entry_points == ocl.entry_points == cuda.entry_points

    c_api = _c_api(c.files["lbgen_kernels.h"])
    cl_kernels = {m.group(1): m.group(2) for m in
                  re.finditer(r"__kernel void lbgen_(\w+)\(([^)]*)\)", ocl.text)}
    cu_kernels = {name[len("lbgen_"):]: ", ".join(f"{t} {n}" for t, n in params)
                  for name, params in shim.kernels_of(cuda.text)}
    wrappers = {m.group(1): m.group(2) for m in
                re.finditer(r"cudaError_t lbgen_launch_(\w+)\(([^)]*)\);", cuda.files["lbgen_kernels.cuh"])}
    # the body kernels (lbgen.simulation.bodies): the same names and arguments in C, OpenCL and CUDA;
    # the runtimes launch them (no 2D CUDA host wrapper)
    assert sorted(cl_kernels) == sorted(cu_kernels) == sorted(expected + list(BODY_ENTRY_POINTS))
    assert sorted(wrappers) == sorted(expected)
    for name in BODY_ENTRY_POINTS:
        assert _names(c_api[name]) == _names(cl_kernels[name]) == _names(cu_kernels[name]), name
    # one difference: the C sweep kernels take a `const lbgen_region *region` (propagate) and a
    # `const lbgen_params *par` (collide, fused, bc, fused_walls) after the sizes, where the GPU
    # kernels take the region's fields as four ints and the parameters as scalars: each of those
    # scalars is a field of lbgen_params
    header = c.files["lbgen_kernels.h"]
    struct = re.search(r"typedef struct \{(.*?)\} lbgen_params;", header, re.S).group(1)
    fields = re.findall(r"(\w+)(?=(?:\[\d+\])*[,;])", re.sub(r"/\*.*?\*/", "", struct, flags=re.S))
    region = re.search(r"typedef struct \{(.*?)\} lbgen_region;", header, re.S).group(1)
    region_fields = re.findall(r"(\w+)(?=[,;])", re.sub(r"/\*.*?\*/", "", region, flags=re.S))
    assert region_fields == ["x0", "x1", "y0", "y1"]
    sweeps = {"propagate": ["region", "par"], "collide": ["region", "par"], "fused": ["region", "par"],
              "bc": ["region", "par"], "fused_walls": ["region", "par"]}
    # C's propagate reads only the record's boundaries: the GPU propagate kernels take those
    # (walls, lids, lid, solid; the open faces' inlets, outlets, outflows, slips packed in the bits opens
    # and rho_out, inflow in the array openv), collide and fused the parameters too, bc and fused_walls
    # no boundaries
    bounds = ["walls", "lids", "lid", "solid", "opens", "openv"]
    packed = {"opens": {"inlets", "outlets", "outflows", "slips"}, "openv": {"rho_out", "inflow"}}
    assert set().union(*packed.values()) <= set(fields)
    for name in expected:
        c_names = _names(c_api[name])
        for gpu_names in (_names(cl_kernels[name]), _names(cu_kernels[name]), _names(wrappers[name])[:-1]):
            if name in sweeps:
                assert c_names[:4] == gpu_names[:4] and c_names[4:] == sweeps[name], name
                assert gpu_names[4:8] == region_fields, (name, gpu_names[4:8])
                assert set(gpu_names[8:]) - set(packed) <= set(fields), (name, gpu_names[8:], fields)
                assert (gpu_names[-6:] == bounds) == (name in ("propagate", "collide", "fused")), name
            else:
                assert gpu_names == c_names, name
        assert _names(wrappers[name])[-1] == "stream", name
    for text in (c.files["lbgen_kernels.h"], cuda.files["lbgen_kernels.cuh"]):
        assert "int lbgen_check(int lx, int ly, char *message, size_t size);" in text
    assert "lbgen_halo_rows" not in cuda.text and "phase" not in ocl.text


def _table(text, name):
    m = re.search(rf"\blbgen_{name}\[(\d+)\] = \{{([^}}]*)\}}", text)
    return int(m.group(1)), [float(v.strip().rstrip("f")) for v in m.group(2).split(",")]


@pytest.mark.parametrize("precision", ["double", "single"])
def test_every_source_carries_the_model_tables(precision):
    vs = velocity_set("d2q37")
    e = np.asarray(vs.velocities)
    for backend in ("c", "opencl", "cuda"):
        src = generate(KernelSpec(backend=backend, layout="aos", precision=precision))
        text = src.text
        header = "".join(src.files.values())
        for name, want in (("cx", e[:, 0]), ("cy", e[:, 1]), ("opposite", vs.opposite)):
            q, values = _table(text, name)
            assert q == vs.Q and values == [float(v) for v in want], (backend, name)
        q, w = _table(text, "w")
        assert q == vs.Q
        np.testing.assert_allclose(w, [float(x) for x in vs.weights], rtol=1e-16, atol=0)
        assert f"#define LBGEN_Q    {vs.Q}" in header
        r = float(re.search(r"#define LBGEN_R\s+(\S+)", header).group(1))
        assert r == float(vs.r), backend


def test_c_tables_and_size_checks_through_the_library(program):
    prog = program("caosoa", 8)
    lib, ffi = prog.lib, prog.ffi
    vs = velocity_set("d2q37")
    assert [(lib.lbgen_cx[i], lib.lbgen_cy[i]) for i in range(vs.Q)] == [tuple(v) for v in vs.velocities]
    assert list(lib.lbgen_opposite) == list(vs.opposite)
    assert list(lib.lbgen_w) == [float(w) for w in vs.weights]
    message = ffi.new("char[200]")
    assert lib.lbgen_check(LX, LY, message, 200) == 0 and ffi.string(message) == b""
    cases = {(12, 20): (2, "ly=20 is not a multiple of VL=8"),
             (12, 16): (3, "ly=16 gives LY/VL = 2 cluster rows; the 3-row halo needs LY/VL >= 3 (ly >= 24)"),
             (0, 48): (1, "lattice 0 x 48: lx and ly must be >= 1")}
    for (lx, ly), (code, text) in cases.items():
        assert lib.lbgen_check(lx, ly, message, 200) == code
        assert ffi.string(message).decode() == text
        assert lib.lbgen_alloc(lx, ly) == ffi.NULL
    assert lib.lbgen_check(12, 20, ffi.NULL, 0) == 2          # no message wanted
    assert lib.lbgen_check(12, 20, message, 8) == 2 and len(ffi.string(message)) == 7   # truncated


def test_walls_and_compile_time_sizes_are_checked_too(tmp_path):
    require(shutil.which("make") and shutil.which("gcc"), "make and gcc build the emitted C example")
    from lbgen.backends import c as cbackend
    emit(KernelSpec(layout="aos", walls=True), tmp_path)
    assert "LBGEN_ERR_WALLS (4): walls: LY >= 8" in (tmp_path / "lbgen_kernels.h").read_text()
    proc = _run(["make", "-s"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = _run(["./example", "1", "4", "6"], tmp_path)
    assert proc.returncode == 2 and "ly=6 is too small for walls: they need ly >= 8" in proc.stderr
    fixed = generate(KernelSpec(layout="aos", lx=LX, ly=LY))
    assert f"LBGEN_ERR_COMPILED (5): LX = {LX}, LY = {LY}" in fixed.files["lbgen_kernels.h"]
    prog = cbackend.compile(fixed, LX, LY)
    message = prog.ffi.new("char[100]")
    assert prog.lib.lbgen_check(LX, LY, message, 100) == 0
    assert prog.lib.lbgen_check(LX, 2 * LY, message, 100) == 5
    assert prog.ffi.string(message).decode() == f"lattice {LX} x {2 * LY}: these kernels were generated for {LX} x {LY}"


def test_gpu_pack_unpack_and_one_launch_halo(shim, opencl_env):
    """The OpenCL and CUDA pack/unpack kernels against the NumPy layout (halo via <prefix>_halo)."""
    import pyopencl as cl

    from lbgen.backends import opencl
    plain = np.random.default_rng(8).standard_normal((velocity_set("d2q37").Q, LX, LY))
    back = np.empty_like(plain)
    # CUDA through the shim
    prog = shim.compile(generate(KernelSpec(backend="cuda", layout="csoa", vl=8)), LX, LY)
    f = prog.allocate()
    blocks, threads = prog.geometry("pack")
    p_f, p_plain, p_back = (prog.ffi.cast("double *", a.ctypes.data) for a in (f, plain, back))
    prog.lib.lbgen_pack__launch(blocks, threads, p_f, p_plain, LX, LY)
    prog.halo(f)
    assert np.array_equal(prog.download(f), prog.layout.pack(plain))
    prog.lib.lbgen_unpack__launch(blocks, threads, p_f, p_back, LX, LY)
    assert np.array_equal(back, plain)
    # OpenCL
    ocl = opencl.compile(generate(KernelSpec(backend="opencl", layout="caosoa", vl=32)), LX, LY)
    f = ocl.allocate()
    mf = cl.mem_flags
    d_plain = cl.Buffer(ocl.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=plain)
    sites = ((LX * LY + 63) // 64 * 64,)
    cl.Kernel(ocl.program, "lbgen_pack")(ocl.queue, sites, (64,), f, d_plain, np.int32(LX), np.int32(LY))
    ocl.halo(f)
    assert np.array_equal(ocl.download(f), ocl.layout.pack(plain))
    d_back = cl.Buffer(ocl.context, mf.READ_WRITE, size=plain.nbytes)
    cl.Kernel(ocl.program, "lbgen_unpack")(ocl.queue, sites, (64,), f, d_back, np.int32(LX), np.int32(LY))
    cl.enqueue_copy(ocl.queue, back, d_back, is_blocking=True)
    assert np.array_equal(back, plain)


def test_cuda_launch_wrappers_run_an_unfused_step_through_the_shim(shim, initial_state, reference_run):
    """pack, halo, propagate, collide and unpack through the host wrappers of the emitted .cu."""
    from cffi import FFI
    prog = shim.compile(generate(KernelSpec(backend="cuda", layout="caosoa", vl=8)), LX, LY)
    ffi = FFI()
    ffi.cdef("""
        int lbgen_launch_halo(double *f, int lx, int ly, void *stream);
        int lbgen_launch_propagate(const double *prv, double *nxt, int lx, int ly, int x0, int x1, int y0, int y1,
                                   int walls, int lids, const double *lid, const unsigned char *solid,
                                   int opens, const double *openv, void *stream);
        int lbgen_launch_collide(const double *in, double *out_f, int lx, int ly, int x0, int x1, int y0, int y1,
                                 double tau, double ax, double ay, int walls, int lids, const double *lid,
                                 const unsigned char *solid, int opens, const double *openv, void *stream);
        int lbgen_launch_pack(double *f, const double *plain, int lx, int ly, void *stream);
        int lbgen_launch_unpack(const double *f, double *plain, int lx, int ly, void *stream);
    """)
    lib = ffi.dlopen(str(prog.library_path))
    ptr = lambda a: ffi.cast("double *", a.ctypes.data)   # noqa: E731
    a, b = prog.allocate(), prog.allocate()
    plain = np.ascontiguousarray(initial_state)
    assert lib.lbgen_launch_pack(ptr(a), ptr(plain), LX, LY, ffi.NULL) == 0
    assert np.array_equal(prog.download(a), prog.layout.pack(plain))          # halo refreshed too
    whole = (0, LX, 0, LY)
    periodic = (0, 0, ffi.NULL, ffi.NULL, 0, ffi.NULL)     # walls, lids, lid, solid, opens, openv: none
    for _ in range(5):
        assert lib.lbgen_launch_halo(ptr(a), LX, LY, ffi.NULL) == 0
        assert lib.lbgen_launch_propagate(ptr(a), ptr(b), LX, LY, *whole, *periodic, ffi.NULL) == 0
        assert lib.lbgen_launch_collide(ptr(b), ptr(a), LX, LY, *whole, OPERATOR_PARAMS["bgk"]["tau"], *FORCE,
                                        *periodic, ffi.NULL) == 0
    out = np.empty_like(plain)
    assert lib.lbgen_launch_unpack(ptr(a), ptr(out), LX, LY, ffi.NULL) == 0
    want = reference_run("bgk", 5)
    assert np.abs(out - want).max() <= 1e-12 * np.abs(want).max()
    # sizes the kernels cannot run: cudaErrorInvalidValue (1), nothing launched
    before = prog.download(a)
    assert lib.lbgen_launch_halo(ptr(a), LX, LY - 4, ffi.NULL) == 1
    assert np.array_equal(prog.download(a), before)
    # and a region outside the lattice (y1 = LY + 1): cudaErrorInvalidValue, nothing launched
    assert lib.lbgen_launch_propagate(ptr(b), ptr(a), LX, LY, 0, LX, 0, LY + 1, *periodic, ffi.NULL) == 1
    assert np.array_equal(prog.download(a), before)


def test_c_makefile_defaults_to_gcc_but_takes_cc(tmp_path):
    require(shutil.which("make"), "make reads the emitted Makefile")
    emit(KernelSpec(layout="soa"), tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "CC"}
    dry = _run(["make", "-n", "example"], tmp_path, env).stdout
    assert dry.startswith("gcc "), dry
    assert _run(["make", "-n", "example", "CC=clang"], tmp_path, env).stdout.startswith("clang ")
    assert _run(["make", "-n", "example"], tmp_path, dict(env, CC="icx")).stdout.startswith("icx ")


def test_header_comment_names_no_wall_argument():
    periodic = generate(KernelSpec(layout="soa")).files["lbgen_kernels.h"]
    walls = generate(KernelSpec(layout="soa", walls=True)).files["lbgen_kernels.h"]
    fixed = "; fixed when generated, not an argument"
    assert "wall rows here: none (periodic box: generated without walls)" + fixed in periodic
    assert "wall rows here: the 3 rows next to each wall" + fixed in walls
    collide = re.search(r"void lbgen_collide\(([^)]*)\)", periodic).group(1)
    assert "wall" not in collide
