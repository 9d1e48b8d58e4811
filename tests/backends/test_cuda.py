"""CUDA backend without a GPU: nvcc compiles every emitted .cu, the host shim runs it.

(a) nvcc compiles every layout x operator x precision (sm_90; one case also for sm_80); ptxas' report parsed;
(b) the same .cu text, compiled as C++ with the host shim and launched with the GPU
    launch geometry, matches the NumPy reference after tens of steps;
(c) strict builds (no FMA contraction) of the shim and of the C backend agree bit for bit;
(d) the GPU runtime (CuPy) runs only where a GPU is present (skipped with the reason otherwise).

With CI=true the nvcc and shim tests must run: a missing nvcc or g++ fails instead of skipping.
"""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from lbgen.reference import bulk as ref
from lbgen.backends import BackendUnavailable
from lbgen.backends.build import CompileError
from lbgen.codegen.spec import KernelSpec
from lbgen.codegen.render import generate

from helpers import FORCE, LX, LY, OPERATOR_PARAMS, config_id, random_fields, require, step_fused, step_unfused

OPERATORS = ("bgk", "regularized")
PRECISIONS = ("double", "single")
TOLERANCE = {"double": 1e-12, "single": 1e-5}
STEPS = 20

#: nvcc matrix: every layout, clustered ones with VL 8 and 32
NVCC_CONFIGS = [("aos", None), ("soa", None)] + [(n, vl) for n in ("csoa", "caosoa") for vl in (8, 32)]
#: shim matrix: every layout, clustered ones with VL 4, 8 and 32
SHIM_CONFIGS = [("aos", None), ("soa", None)] + [(n, vl) for n in ("csoa", "caosoa") for vl in (4, 8, 32)]
ARCHS = ("sm_80", "sm_90")


def _require(available_fn, what):
    require(*available_fn(), what)


@pytest.fixture(scope="module")
def nvcc():
    from lbgen.backends.cuda import nvcc as mod
    _require(mod.available, "nvcc")
    return mod


@pytest.fixture(scope="module")
def shim():
    from lbgen.backends.cuda import shim as mod
    _require(mod.available, "g++ for the CUDA host shim")
    return mod


def cuda_source(layout, vl, precision="double", collision="bgk", **kw):
    return generate(KernelSpec(backend="cuda", layout=layout, vl=vl, precision=precision, collision=collision, **kw))


@pytest.fixture(scope="module")
def shim_program(shim, programs):
    """shim_program(layout, vl, precision, collision, strict, lx, ly, **spec_fields) from the session's cache."""

    def get(layout, vl, precision="double", collision="bgk", strict=False, lx=LX, ly=LY, **kw):
        return programs.of("cuda-shim", (lx, ly), strict, layout=layout, vl=vl, precision=precision,
                           collision=collision, **kw)

    return get


def rel_err(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


# --- (a) nvcc ------------------------------------------------------------------------------

#: the fast subset's nvcc case (nvcc takes 5-20 s a kernel and architecture); the whole matrix is slow
NVCC_FAST = (("caosoa", 32), "regularized", "double")


@pytest.mark.parametrize("cfg, collision, precision", [
    pytest.param(cfg, collision, precision, id=f"{config_id(cfg)}-{collision}-{precision}",
                 marks=() if (cfg, collision, precision) == NVCC_FAST else (pytest.mark.slow,))
    for cfg in NVCC_CONFIGS for collision in OPERATORS for precision in PRECISIONS])
def test_nvcc_compiles(nvcc, cfg, collision, precision):
    src = cuda_source(*cfg, precision=precision, collision=collision)
    archs = ARCHS if (cfg, collision, precision) == NVCC_FAST else ARCHS[-1:]   # both archs once; the matrix on sm_90
    results = nvcc.compile_many([(src, a) for a in archs])
    for arch, res in zip(archs, results):
        assert res.arch == arch and res.binary
        names = {f"lbgen_{k}" for k in ("halo", "propagate", "collide", "fused",
                                        "init_equilibrium", "fields", "pack", "unpack", "diagnostics",
                                        "body_links", "body_put")}
        assert set(res.kernels) == names, res.log
        for name, r in res.kernels.items():
            assert r.registers > 0, f"{arch} {name}: no register count parsed\n{res.log}"
            assert r.registers <= 255
            assert r.spill_stores >= 0 and r.spill_loads >= 0


def test_nvcc_strict_and_ptx(nvcc):
    src = cuda_source("caosoa", 32)
    strict = nvcc.compile_cu(src, "sm_90", strict=True)
    assert "--fmad=false" in strict.log
    assert strict.kernels["lbgen_fused"].registers > 0
    ptx = nvcc.compile_cu(src, "sm_80", output="ptx")
    assert b".entry lbgen_fused" in ptx.binary and not ptx.kernels


def test_ptxas_report_shape(nvcc):
    report = nvcc.ptxas_report(cuda_source("csoa", 32, collision="regularized"))
    assert list(report) == list(ARCHS)
    for arch, kernels in report.items():
        assert list(kernels)[:4] == ["lbgen_halo", "lbgen_propagate", "lbgen_collide", "lbgen_fused"]
        for r in kernels.values():
            assert set(r) == {"registers", "stack", "spill_stores", "spill_loads", "shared"}
            assert r["registers"] > 0
    text = nvcc.format_report(report)
    assert "lbgen_fused" in text and "sm_80" in text


def test_parse_ptxas_log():
    from lbgen.backends.cuda.nvcc import parse_ptxas
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k1' for 'sm_90'
ptxas info    : Function properties for k1
    24 bytes stack frame, 16 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]
ptxas info    : Compiling entry function 'k2' for 'sm_80'
ptxas info    : Function properties for k2
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, 380 bytes cmem[0]
"""
    out = parse_ptxas(log)
    k1 = out["sm_90"]["k1"]
    assert (k1.registers, k1.stack, k1.spill_stores, k1.spill_loads, k1.shared) == (255, 24, 16, 8, 1024)
    assert out["sm_80"]["k2"].registers == 40 and out["sm_80"]["k2"].spill_loads == 0


def test_nvcc_error_names_file_and_log(nvcc):
    with pytest.raises(CompileError) as info:
        nvcc.compile_cu('extern "C" __global__ void broken(double *f) { f[0] = undeclared_name; }', "sm_90")
    msg = str(info.value)
    assert "undeclared_name" in msg and "kernels.cu" in msg


def test_nvcc_missing_is_clean(monkeypatch):
    from lbgen.backends.cuda import nvcc as mod
    monkeypatch.setenv("NVCC", "/nonexistent/nvcc")
    ok, why = mod.available()
    assert not ok and "nvcc" in why.lower()
    with pytest.raises(BackendUnavailable):
        mod.compile_cu("", "sm_90")


# --- (b) host shim vs the reference ------------------------------------------------------------

#: the host-shim builds of the fast subset (each g++ build of a .cu kernel takes seconds): every
#: layout in BGK double (the halo tests build those anyway), and regularized single on two
#: layouts; the whole matrix runs in the slow set
def _shim_fast(cfg, collision, precision) -> bool:
    return (collision, precision) == ("bgk", "double") or \
        ((collision, precision) == ("regularized", "single") and cfg in (("soa", None), ("caosoa", 32)))


def _shim_cases(configs):
    return [pytest.param(cfg, collision, precision, id=f"{config_id(cfg)}-{collision}-{precision}",
                         marks=() if _shim_fast(cfg, collision, precision) else (pytest.mark.slow,))
            for cfg in configs for collision in OPERATORS for precision in PRECISIONS]


@pytest.mark.parametrize("path", ("unfused", "fused"))
@pytest.mark.parametrize("cfg, collision, precision", _shim_cases(SHIM_CONFIGS))
def test_shim_matches_reference(shim_program, run_program, initial_state, reference_run, cfg, collision,
                                precision, path):
    prog = shim_program(*cfg, precision=precision, collision=collision)
    got = run_program(prog, initial_state, STEPS, path, collision)
    want = reference_run(collision, STEPS)
    assert rel_err(got, want) <= TOLERANCE[precision]
    assert not np.array_equal(want, initial_state)


@pytest.mark.parametrize("cfg", SHIM_CONFIGS, ids=config_id)
def test_shim_halo_equals_fill_halo(shim_program, cfg):
    prog = shim_program(*cfg)
    buf = np.random.default_rng(3).standard_normal(prog.layout.size)
    a = prog.upload(buf)
    prog.halo(a)
    assert np.array_equal(prog.download(a), prog.layout.fill_halo(buf.copy()))


@pytest.mark.parametrize("cfg", [("aos", None), ("csoa", 8), ("caosoa", 32)], ids=config_id)
def test_shim_equilibrium_and_fields(shim_program, cfg):
    prog = shim_program(*cfg)
    rho, ux, uy, T = random_fields(11)
    f = prog.allocate()
    prog.init_equilibrium(f, rho, ux, uy, T)
    feq = ref.equilibrium(rho, ux, uy, T)
    assert rel_err(prog.unpack(f), feq) <= 1e-13
    assert rel_err(prog.download(f), prog.layout.pack(feq)) <= 1e-13   # halo refreshed too
    got = prog.fields(f)
    for g, w in zip(got.values(), ref.fields(feq)):
        assert np.abs(g - w).max() <= 1e-12 * max(1.0, np.abs(w).max())


def test_shim_compile_time_sizes_and_block(shim_program, initial_state, reference_run):
    """Compile-time sizes and a non-default block (grid not a multiple of the block)."""
    from lbgen.backends.cuda import shim as mod
    src = generate(KernelSpec(backend="cuda", layout="caosoa", vl=8, lx=LX, ly=LY, block_size=96))
    assert all("lx" not in [n for _, n in params] for _, params in mod.kernels_of(src.text))
    assert "__launch_bounds__(BLOCK)" in src.text and "BLOCK = 96" in src.text
    prog = mod.compile(src, LX, LY)
    assert prog.geometry("fused") == (6, 96)
    a = prog.pack(initial_state)
    b = prog.allocate()
    params = dict(OPERATOR_PARAMS["bgk"], ax=FORCE[0], ay=FORCE[1])
    for _ in range(5):
        a, b = step_fused(prog, a, b, **params)
    assert rel_err(prog.unpack(a), reference_run("bgk", 5)) <= 1e-12
    # smaller blocks than the launch bound run too; larger ones are refused
    small = mod.compile(src, LX, LY, block_size=32)
    assert small.geometry("propagate") == (18, 32)
    with pytest.raises(ValueError, match="launch_bounds"):
        mod.compile(src, LX, LY, block_size=128)


def test_cuda_source_structure():
    src = cuda_source("caosoa", 32, precision="single", collision="regularized")
    text = src.text
    assert src.main_file == "lbgen_kernels.cu"
    for k in ("halo", "propagate", "collide", "fused", "init_equilibrium", "fields", "pack", "unpack"):
        assert f"__global__ void __launch_bounds__(BLOCK) lbgen_{k}(" in text
    assert 'extern "C"' in text and "__restrict__" in text
    header = src.files["lbgen_kernels.cuh"]     # the buffers' type (the storage) and the arithmetic's
    assert "typedef float lbgen_real;" in header and "typedef float lbgen_arith;" in header
    assert "typedef lbgen_arith real;" in text and "typedef float store;" in text
    fp16 = cuda_source("soa", None, precision="single", storage="fp16s").files["lbgen_kernels.cuh"]
    assert "typedef unsigned short lbgen_real;" in fp16 and "typedef float lbgen_arith;" in fp16
    assert "real C1, real C2, real C3, real ax, real ay" in text
    assert "const ptrdiff_t k = g % VL;" in text


# --- (c) strict: shim == C backend bit for bit -------------------------------------------------

@pytest.mark.parametrize("cfg, collision, precision", _shim_cases([("aos", None), ("csoa", 8), ("caosoa", 32)]))
def test_strict_shim_bit_identical_to_c(shim_program, program, initial_state, cfg, collision, precision):
    cuda = shim_program(*cfg, precision=precision, collision=collision, strict=True)
    c = program(*cfg, precision=precision, collision=collision, strict=True)
    params = dict(OPERATOR_PARAMS[collision], ax=FORCE[0], ay=FORCE[1])
    outs = []
    for prog in (cuda, c):
        a = prog.pack(initial_state)
        b = prog.allocate()
        for _ in range(3):
            a, b = step_unfused(prog, a, b, **params)
        for _ in range(3):
            a, b = step_fused(prog, a, b, **params)
        outs.append(prog.download(a))
    assert np.array_equal(outs[0], outs[1])


# --- thermal walls: the bc kernel -----------------------------------------------------------

@pytest.mark.parametrize("cfg, collision", [
    pytest.param(cfg, collision, id=f"{config_id(cfg)}-{collision}",
                 marks=() if (cfg, collision) in ((("aos", None), "bgk"), (("caosoa", 8), "regularized"))
                 else (pytest.mark.slow,))
    for cfg in [("aos", None), ("caosoa", 8), ("csoa", 32)] for collision in OPERATORS])
def test_shim_walls_match_c(shim_program, initial_state, cfg, collision):
    """propagate -> bc -> collide through the shim is bit-identical to the strict C backend."""
    from programs import PROGRAMS
    params = dict(OPERATOR_PARAMS[collision], ax=FORCE[0], ay=FORCE[1])
    c = PROGRAMS.of("c", (LX, LY), True, layout=cfg[0], vl=cfg[1], collision=collision, walls=True)
    cuda = shim_program(*cfg, collision=collision, strict=True, walls=True)
    assert cuda.geometry("bc") == (1, 128)
    outs = []
    for prog in (cuda, c):
        a = prog.pack(initial_state)
        b = prog.allocate()
        for _ in range(10):
            prog.halo(a)
            prog.propagate(a, b)
            prog.bc(a, b, 1.02, 0.98, (False, True), *FORCE)
            prog.collide(b, a, **params)
        outs.append(prog.unpack(a))
    assert np.array_equal(outs[0], outs[1])
    assert not np.allclose(outs[0], initial_state, rtol=1e-6)


def test_nvcc_walls(nvcc):
    res = nvcc.compile_cu(cuda_source("caosoa", 32, collision="regularized", walls=True), "sm_90")
    assert res.kernels["lbgen_bc"].registers > 0 and res.kernels["lbgen_collide"].registers > 0


def test_bc_needs_walls(shim_program):
    with pytest.raises(ValueError, match="walls"):
        prog = shim_program("aos", None)
        prog.bc(prog.allocate(), prog.allocate())


# --- (d) the GPU runtime, CuPy (GPU only) ----------------------------------------------------------------

def test_cuda_available_is_honest():
    from lbgen.backends import available
    ok, why = available("cuda")
    assert isinstance(why, str) and why
    if not ok:
        assert "CUDA" in why


@pytest.fixture(scope="module")
def gpu():
    from lbgen.backends import available
    ok, why = available("cuda")
    if not ok:
        pytest.skip(f"no CUDA runtime here: {why}")
    from lbgen.backends import cuda
    return cuda


@pytest.mark.parametrize("path", ("unfused", "fused"))
@pytest.mark.parametrize("collision", OPERATORS)
@pytest.mark.parametrize("cfg", [("aos", None), ("soa", None), ("csoa", 32), ("caosoa", 32), ("caosoa", 8)],
                         ids=config_id)
def test_gpu_matches_reference(gpu, run_program, initial_state, reference_run, cfg, collision, path):
    prog = gpu.compile(cuda_source(*cfg, collision=collision), LX, LY, strict=True)
    got = run_program(prog, initial_state, STEPS, path, collision)
    assert rel_err(got, reference_run(collision, STEPS)) <= 1e-12


@pytest.mark.parametrize("cfg", [("aos", None), ("caosoa", 32)], ids=config_id)
def test_gpu_strict_matches_shim(gpu, shim_program, initial_state, cfg):
    """--fmad=false on the GPU: bit-identical to the strict host shim (same .cu text)."""
    params = dict(OPERATOR_PARAMS["bgk"], ax=FORCE[0], ay=FORCE[1])
    outs = []
    for prog in (gpu.compile(cuda_source(*cfg), LX, LY, strict=True), shim_program(*cfg, strict=True)):
        a = prog.pack(initial_state)
        b = prog.allocate()
        for _ in range(4):
            a, b = step_fused(prog, a, b, **params)
        prog.synchronize()
        outs.append(prog.download(a))
    assert np.array_equal(outs[0], outs[1])


def test_gpu_halo_and_fields(gpu):
    prog = gpu.compile(cuda_source("csoa", 8), LX, LY)
    buf = np.random.default_rng(5).standard_normal(prog.layout.size)
    a = prog.upload(buf)
    prog.halo(a)
    assert np.array_equal(prog.download(a), prog.layout.fill_halo(buf.copy()))
    rho, ux, uy, T = random_fields(2)
    prog.init_equilibrium(a, rho, ux, uy, T)
    assert rel_err(prog.unpack(a), ref.equilibrium(rho, ux, uy, T)) <= 1e-12


@pytest.mark.parametrize("spec", [KernelSpec(backend="cuda", layout="caosoa", vl=32),
                                  KernelSpec(backend="cuda", layout="aos", precision="single",
                                             collision="regularized", walls=True)],
                         ids=["caosoa-vl32", "aos-single-regularized-walls"])
@pytest.mark.slow
def test_emitted_cuda_example_builds_with_its_makefile(nvcc, spec, tmp_path):
    """`make ARCH=sm_90` in an emitted folder links the host example (it runs only on a GPU)."""
    import shutil
    from lbgen.codegen.emit import emit
    if shutil.which("make") is None:
        pytest.skip("make is needed for the emitted Makefile")
    emit(spec, tmp_path)
    proc = subprocess.run(["make", "-s", "ARCH=sm_90", f"NVCC={nvcc.find_nvcc()}"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "example").exists()


@pytest.mark.parametrize("walls", [False, True], ids=["periodic", "walls"])
@pytest.mark.parametrize("precision", ["double", "single", "mixed"])
def test_launch_arguments_follow_the_kernel_parameters(walls, precision):
    """The argument kinds of the GPU runtime's launches (no GPU needed to build them) name one
    letter per kernel parameter of the emitted source: pointers P, ints i, reals d / f, as the
    header's arithmetic type says (mixed: float storage, double scalars; a float passed where the
    kernel reads a double made NaN on an H200)."""
    from lbgen.backends.cuda import kernel_arguments
    from lbgen.backends.cuda.shim import kernels_of
    spec = KernelSpec(backend="cuda", layout="caosoa", vl=8, collision="regularized", precision=precision,
                      walls=walls)
    src = generate(spec)
    arith = re.search(r"typedef (\w+) lbgen_arith;", src.files["lbgen_kernels.cuh"]).group(1)
    real = {"double": "d", "float": "f"}[arith]
    want = {name[len("lbgen_"):]: "".join("P" if "*" in t else "i" if t == "int" else real if t == "real"
                                          else "?" + t for t, _ in params)
            for name, params in kernels_of(src.text)}
    assert kernel_arguments(spec) == want


def test_fp16s_converts_with_the_gpus_half_instructions(nvcc):
    """On a GPU (nvcc, __CUDACC__) the fp16s loads and stores convert with the hardware's half
    instructions (PTX cvt ... f16: the integer code made the 16-bit sweeps compute-bound on an
    H200); the host shim keeps the integer code that gives the C kernels' bits."""
    ptx = nvcc.compile_cu(cuda_source("caosoa", 32, precision="single", storage="fp16s"), "sm_90",
                          output="ptx").binary.decode()
    assert "cvt.rn.f16.f32" in ptx and "cvt.f32.f16" in ptx
    assert str(0x477FF000) not in ptx                  # the integer encoder's overflow bound is gone
    plain = nvcc.compile_cu(cuda_source("caosoa", 32, precision="single"), "sm_90", output="ptx").binary.decode()
    assert "cvt.rn.f16.f32" not in plain
