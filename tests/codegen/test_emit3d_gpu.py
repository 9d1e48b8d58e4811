"""`lbgen emit --velocity-set d3q19 --backend opencl / cuda`: the files (kernels, .cuh, example,
Makefile, README); the OpenCL example.py (pyopencl, on the CPU runtime) and the CUDA example.cu
(g++ through the host shim; nvcc compiles it under CI=true) print and write what the oracle
(lbgen.reference.bulk3d) computes for the same run, periodic and under a lid."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from helpers import require
from click.testing import CliRunner

from lbgen.backends.build import BackendUnavailable
from lbgen.cli.main import main
from lbgen.codegen.emit import emit
from lbgen.codegen.spec import KernelSpec
from lbgen.reference import bulk3d as oracle

R = np.sqrt(3.0)
STEPS = 6
#: a 16-bit storage's bound on the fields (eps 2^-10 of deviations f - w ~ 0.05, over 6 steps: 8e-6 seen)
STORAGE_TOL = {"fp16s": 3e-5}


def _reference(lx, ly, lz, steps, collision, lid):
    """What the examples compute, by the oracle (as test_emit3d's reference of example.c)."""
    x, y, z = np.meshgrid(np.arange(lx), np.arange(ly), np.arange(lz), indexing="ij")
    rho = 1.0 + 0.01 * np.cos(2 * np.pi * z / lz)
    u = np.stack([0.05 * np.sin(2 * np.pi * z / lz), 0.02 * np.sin(2 * np.pi * x / lx),
                  0.01 * np.cos(2 * np.pi * y / ly)]) / R
    a = np.array([1e-5, 0.0, -2e-5]) / R
    lat = oracle.lattice("d3q19")
    f = oracle.physical_equilibrium(rho, u, a, lat)
    b = oracle.Boundaries((lx, ly, lz), lat, walls=("z",), lids={("z", "high"): (0.05 / R, 0, 0)}) if lid else None
    params = {"tau": 0.8} if collision == "bgk" else {"C1": 0.05}
    f = oracle.run(f, steps, collision, lat, b, force=a, **params)
    rho, u = oracle.physical_fields(f, a, lat)
    return rho, *(R * u)


def _check_output(folder, out, size, lid, collision, tol=1e-12):
    assert f"{STEPS} steps on {size[0]} x {size[1]} x {size[2]}{' under a lid' if lid else ''}: mass" in out
    data = np.loadtxt(folder / "example_fields.txt")
    assert data.shape == (np.prod(size), 8)
    want = _reference(*size, STEPS, collision, lid)
    worst = 0.0
    for column, field in zip(range(3, 7), want):
        got = data[:, column].reshape(size)
        worst = max(worst, np.abs(got - field).max() / max(1.0, np.abs(field).max()))
        assert worst <= tol, (lid, column)
    if tol > 1e-12:         # a narrow storage is what ran: far from the oracle's double rounding
        assert worst > tol / 100
    assert np.all(data[:, 7] == 1.0)


@pytest.mark.parametrize("backend, files", [
    ("opencl", ["README.md", "example.py", "lbgen_kernels.cl"]),
    ("cuda", ["Makefile", "README.md", "example.cu", "lbgen_kernels.cu", "lbgen_kernels.cuh"])])
def test_emit_3d_gpu_writes_its_files(tmp_path, backend, files):
    result = CliRunner().invoke(main, ["emit", "--velocity-set", "d3q19", "--backend", backend, "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    readme = (tmp_path / "README.md").read_text()
    assert "walls" in readme and "solid" in readme and "lbgen emit --backend " + backend in readme
    if backend == "cuda":
        cuh = (tmp_path / "lbgen_kernels.cuh").read_text()
        assert "#define LBGEN_BUFFER_SIZE(LX, LY, LZ)" in cuh and "lbgen_check3d" in cuh


@pytest.mark.parametrize("spec, size", [
    pytest.param(KernelSpec(backend="opencl", velocity_set="d3q19", layout="caosoa", vl=8), (4, 3, 16), id="caosoa-vl8"),
    pytest.param(KernelSpec(backend="opencl", velocity_set="d3q19", layout="soa", collision="regularized"), (3, 4, 6),
                 id="soa-regularized", marks=pytest.mark.slow),
])
def test_emitted_opencl_3d_example_reproduces_the_oracle(tmp_path, spec, size):
    try:
        from lbgen.backends import opencl
        device = opencl.select_device()
        entry = next(e for e in opencl.devices() if e[3].int_ptr == device.int_ptr)
    except (BackendUnavailable, ImportError) as e:
        require(False, f"OpenCL unavailable: {e}")
    env = dict(os.environ, PYOPENCL_CTX=f"{entry[0]}:{entry[1]}", PYTHONWARNINGS="ignore")
    emit(spec, tmp_path)
    for lid in (False, True):
        args = [sys.executable, "example.py", str(STEPS), *map(str, size)] + (["lid"] if lid else [])
        proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        _check_output(tmp_path, proc.stdout, size, lid, spec.collision)
    bad = subprocess.run([sys.executable, "example.py", "1", "4", "3", "12"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    if spec.layout == "caosoa":
        assert bad.returncode != 0 and "lz=12 is not a multiple of VL=8" in bad.stderr


@pytest.mark.parametrize("spec, size", [
    pytest.param(KernelSpec(backend="cuda", velocity_set="d3q19", layout="csoa", vl=4), (3, 4, 8), id="csoa-vl4"),
    pytest.param(KernelSpec(backend="cuda", velocity_set="d3q19", layout="aos", collision="regularized"), (3, 3, 5),
                 id="aos-regularized", marks=pytest.mark.slow),
    pytest.param(KernelSpec(backend="cuda", velocity_set="d3q19", layout="soa", storage="fp16s"), (3, 4, 8),
                 id="soa-fp16s"),
])
def test_emitted_cuda_3d_example_runs_through_the_shim_and_reproduces_the_oracle(tmp_path, spec, size):
    from lbgen.backends.cuda import shim
    require(*shim.available())
    emit(spec, tmp_path)
    exe = shim.build_host_program(tmp_path, ["example.cu"])
    for lid in (False, True):
        args = [str(exe), str(STEPS), *map(str, size)] + (["lid"] if lid else [])
        proc = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        _check_output(tmp_path, proc.stdout, size, lid, spec.collision, STORAGE_TOL.get(spec.storage, 1e-12))
    if spec.layout == "csoa":
        bad = subprocess.run([str(exe), "1", "3", "4", "6"], cwd=tmp_path, capture_output=True, text=True)
        assert bad.returncode == 2 and "refused" in bad.stderr


def test_emitted_cuda_3d_example_compiles_with_nvcc(tmp_path):
    from lbgen.backends.cuda import nvcc
    ok, why = nvcc.available()
    require(ok, why)
    emit(KernelSpec(backend="cuda", velocity_set="d3q19"), tmp_path)
    proc = subprocess.run(["make", "-s", "ARCH=sm_90", f"NVCC={nvcc.find_nvcc()}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "example").exists()
