"""`lbgen emit --velocity-set d3q39 --walls` for C, OpenCL and CUDA (issue 39): the example
drivers step halo, fused_walls (propagate, bc, collide in one sweep) between the thermal walls on the Z faces (T =
EXAMPLE_WALLS below and above) and write the fields the independent NumPy oracle
(``lbgen.reference.walls3d``) gives for the same run: the example's initial fields through
the kernels' init_equilibrium, the oracle's steps, the fields through the kernels' fields
(both checked against the oracle elsewhere: tests/backends/test_c3d_walls.py).  The C example
built with gcc (its Makefile), the OpenCL one with pyopencl (CPU runtime), the CUDA one through
the host shim (g++); nvcc builds the CUDA one.  "lid" is refused beside the walls."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from helpers import make_example, require
from lbgen.codegen.emit import emit
from lbgen.codegen.render import EXAMPLE_WALLS
from lbgen.codegen.spec import KernelSpec
from lbgen.reference import bulk3d, walls3d
from programs import PROGRAMS
from walls3d_support import AXIS_SHAPES, SHAPE

STEPS = 5
#: the examples' force (model units) and BGK tau
FORCE = np.array([1e-5, 0.0, -2e-5])
TAU = 0.8


def _expected(thermal_wave: bool, axis: str = "z") -> np.ndarray:
    """(rho, ux, uy, uz, T) of the examples' run on AXIS_SHAPES[axis] (walls across `axis`), by the
    oracle; T starts at 1 + 0.02 sin(2 pi (x + y) / lx) in the C example (thermal_wave), 1 in the GPU ones."""
    shape = AXIS_SHAPES[axis]
    # the init and fields kernels of a program the backend tests compile too: C's across z, the shim's across x
    program = PROGRAMS.of("c" if axis == "z" else "cuda-shim", shape, True, layout="soa", vl=None,
                          velocity_set="d3q39", walls=True, wall_axis=None if axis == "z" else axis)
    lx, ly, lz = shape
    x, y, z = np.meshgrid(np.arange(lx), np.arange(ly), np.arange(lz), indexing="ij")
    fields = [1 + 0.01 * np.cos(2 * np.pi * z / lz), 0.05 * np.sin(2 * np.pi * z / lz),
              0.02 * np.sin(2 * np.pi * x / lx), 0.01 * np.cos(2 * np.pi * y / ly),
              1 + 0.02 * np.sin(2 * np.pi * (x + y) / lx) if thermal_wave else np.ones(shape)]
    f = program.allocate()
    program.init_equilibrium(f, *fields, force=FORCE)
    r = np.sqrt(1.0 / bulk3d.lattice("d3q39").cs2)
    g = program.unpack(f)
    for _ in range(STEPS):
        g = walls3d.step_walls(g, TAU, "xyz".index(axis), *EXAMPLE_WALLS, (False, False), FORCE / r, "d3q39", 1.0)
    out = program.fields(program.pack(g), force=FORCE)
    return np.stack([out[k] for k in ("rho", "ux", "uy", "uz", "T")])


def _check(folder, stdout, thermal_wave, axis="z"):
    shape = AXIS_SHAPES[axis]
    assert f"{STEPS} steps on {shape[0]} x {shape[1]} x {shape[2]}: mass" in stdout
    data = np.loadtxt(folder / "example_fields.txt")
    got = data[:, 3:].T.reshape((5,) + shape)
    want = _expected(thermal_wave, axis)
    assert np.abs(got - want).max() < 1e-12
    # the walls did something: the planes next to the hot wall warmed above the mid-plane
    a = "xyz".index(axis)
    assert np.take(got[4], 0, axis=a).mean() > np.take(want[4], shape[a] // 2, axis=a).mean()


def _refuses_lid(cmd, folder, env=None):
    proc = subprocess.run(cmd + ["1", *map(str, SHAPE), "lid"], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0 and "lid: these kernels have the thermal walls on the Z faces" in proc.stderr
    assert not (folder / "example_fields.txt").exists()


@pytest.mark.slow
def test_emitted_c_example_steps_the_walls(tmp_path):
    """Slow: gcc builds the D3Q39 kernels (at the suite's level, the site's collision once: seconds)."""
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("make and gcc are needed to build the emitted example")
    spec = KernelSpec(velocity_set="d3q39", walls=True, layout="soa")
    emit(spec, tmp_path)
    make_example(tmp_path, spec)
    _refuses_lid(["./example"], tmp_path)
    out = subprocess.run(["./example", str(STEPS), *map(str, SHAPE)], cwd=tmp_path, check=True, capture_output=True,
                         text=True).stdout
    _check(tmp_path, out, True)


def test_emitted_opencl_example_steps_the_walls(tmp_path):
    try:
        from lbgen.backends import opencl
        device = opencl.select_device()
        entry = next(e for e in opencl.devices() if e[3].int_ptr == device.int_ptr)
    except Exception as e:      # noqa: BLE001 - any reason OpenCL cannot run here
        require(False, f"OpenCL unavailable: {e}")
    env = dict(os.environ, PYOPENCL_CTX=f"{entry[0]}:{entry[1]}", PYTHONWARNINGS="ignore")
    emit(KernelSpec(backend="opencl", velocity_set="d3q39", walls=True, layout="soa"), tmp_path)
    _refuses_lid([sys.executable, "example.py"], tmp_path, env)
    proc = subprocess.run([sys.executable, "example.py", str(STEPS), *map(str, SHAPE)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    _check(tmp_path, proc.stdout, False)


def test_emitted_cuda_example_steps_the_walls_through_the_shim(tmp_path):
    from lbgen.backends.cuda import shim
    require(*shim.available())
    emit(KernelSpec(backend="cuda", velocity_set="d3q39", walls=True, layout="soa"), tmp_path)
    exe = shim.build_host_program(tmp_path, ["example.cu"])
    _refuses_lid([str(exe)], tmp_path)
    proc = subprocess.run([str(exe), str(STEPS), *map(str, SHAPE)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    _check(tmp_path, proc.stdout, False)


@pytest.mark.slow
def test_emitted_cuda_walls_example_compiles_with_nvcc(tmp_path):
    from lbgen.backends.cuda import nvcc
    require(*nvcc.available(), "nvcc")
    emit(KernelSpec(backend="cuda", velocity_set="d3q39", walls=True), tmp_path)
    proc = subprocess.run(["make", "-s", "ARCH=sm_90", f"NVCC={nvcc.find_nvcc()}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "example").exists()


def test_emitted_opencl_example_with_walls_across_x(tmp_path):
    """`lbgen emit --wall-axis x`: the command line in the files, the example's bc over the lines
    across X (ly lz work-items), the oracle's walls across x."""
    from click.testing import CliRunner
    from lbgen.cli.main import main
    try:
        from lbgen.backends import opencl
        device = opencl.select_device()
        entry = next(e for e in opencl.devices() if e[3].int_ptr == device.int_ptr)
    except Exception as e:      # noqa: BLE001 - any reason OpenCL cannot run here
        require(False, f"OpenCL unavailable: {e}")
    result = CliRunner().invoke(main, ["emit", "--backend", "opencl", "--velocity-set", "d3q39", "--walls",
                                       "--wall-axis", "x", "--layout", "soa", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "--walls --wall-axis x" in (tmp_path / "example.py").read_text()
    env = dict(os.environ, PYOPENCL_CTX=f"{entry[0]}:{entry[1]}", PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, "example.py", str(STEPS), *map(str, AXIS_SHAPES["x"])], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    _check(tmp_path, proc.stdout, False, "x")
