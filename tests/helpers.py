"""What several test modules share: lattice sizes, layout configurations, operator
parameters, random states, stepping helpers and the emitted examples' expected output.
(Fixtures live in conftest.py; plain values and functions here, imported by name.)"""
from __future__ import annotations

import os

import numpy as np
import pytest

from lbgen.reference import bulk as ref

#: CI=true (as .ci/run sets it): the full suite runs, and a missing optional runtime fails
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(ok, why: str, what: str = "") -> None:
    """The one rule for what a test needs beyond the package (OpenCL, nvcc, g++ for the CUDA
    shim, MPI, make): without it the test skips with the reason here and fails under CI,
    where it must be installed."""
    if not ok:
        if CI:
            pytest.fail(f"{what + ' is ' if what else ''}required under CI=true: {why}", pytrace=False)
        pytest.skip(f"{what}: {why}" if what else why)


def require_runtime(runtime: str) -> None:
    """The one rule for a GPU-dialect runtime: OpenCL and the CUDA host shim ("cuda-shim") run here
    (required under CI, ``require``); a GPU ("cuda") never is (CI has none): without one the
    test skips."""
    from lbgen.backends import BackendUnavailable, available
    if runtime == "cuda":
        ok, why = available("cuda")
        if not ok:
            pytest.skip(f"no CUDA GPU here: {why}")
        return
    try:
        if runtime == "opencl":
            from lbgen.backends import opencl as ob
            ob.available()
            ob.select_device()
        else:
            from lbgen.backends.cuda import shim
            ok, why = shim.available()
            if not ok:
                raise BackendUnavailable(why)
    except (BackendUnavailable, ImportError) as e:
        require(False, str(e), runtime)


#: a lattice small enough for the reference, big enough for VL = 32 (LY/VL = 3)
LX, LY = 6, 96
#: the clustered VLs under test; every one divides LY with LY/VL >= 3
VLS = (4, 8, 16, 32)
#: every (layout, VL) combination under test; aos/soa take no VL
LAYOUT_CONFIGS = [("aos", None), ("soa", None)] + [(name, vl) for name in ("csoa", "caosoa") for vl in VLS]
#: collision parameters per operator (a nonzero force is added by the tests)
OPERATOR_PARAMS = {"bgk": dict(tau=0.8), "regularized": dict(C1=0.2, C2=0.1, C3=0.5)}
FORCE = (1e-4, -2e-4)


def config_id(cfg) -> str:
    name, vl = cfg
    return name if vl is None else f"{name}-vl{vl}"


#: the fast subset's representative of each layout family (CAoSoA VL 8: the C default; CSoA VL
#: 32: the GPUs' cluster length); every other VL runs in the slow set (CI=true, --slow)
FAST_LAYOUT_CONFIGS = [("aos", None), ("soa", None), ("csoa", 32), ("caosoa", 8)]


def layout_params(configs=LAYOUT_CONFIGS, as_pair: bool = True):
    """pytest params of (layout, VL) configs, those outside FAST_LAYOUT_CONFIGS marked slow:
    ``(name, vl)`` arguments, or one ``cfg`` tuple with ``as_pair=False``."""
    return [pytest.param(*(cfg if as_pair else (cfg,)), id=config_id(cfg),
                         marks=() if cfg in FAST_LAYOUT_CONFIGS else (pytest.mark.slow,)) for cfg in configs]

def random_fields(seed: int, shape=(LX, LY)):
    """rho, T ~ 1 +- 0.05 and |u| ~ 0.05 (smooth enough for stable short runs)."""
    rng = np.random.default_rng(seed)
    rho = 1.0 + 0.05 * rng.uniform(-1, 1, shape)
    ux = 0.05 * rng.uniform(-1, 1, shape)
    uy = 0.05 * rng.uniform(-1, 1, shape)
    T = 1.0 + 0.05 * rng.uniform(-1, 1, shape)
    return rho, ux, uy, T


def step_unfused(prog, a, b, **params):
    """halo, propagate a -> b, collide b -> a in place: the state stays in a."""
    prog.halo(a)
    prog.propagate(a, b)
    prog.collide(b, a, **params)
    return a, b


def step_fused(prog, a, b, **params):
    """halo, fused a -> b, swap: the state is in the first returned buffer."""
    prog.halo(a)
    prog.fused(a, b, **params)
    return b, a


def time_blocks_and_single_steps(prog, f0, params, steps: int = 4, depth: int = 2):
    """The populations after ``steps`` single fused steps and after steps/depth time blocks of
    ``depth`` (``fused_tb``) from f0: equal bit for bit in a strict build."""
    out = []
    for k in (1, depth):
        a, b = prog.pack(f0), prog.allocate()
        for _ in range(steps // k):
            prog.halo(a)
            if k == 1:
                prog.fused(a, b, **params)
            else:
                prog.fused_tb(a, b, k, **params)
            a, b = b, a
        out.append(prog.unpack(a))
    return out


def benchmark_module(name: str):
    """benchmarks/<name>.py loaded as a module (the benchmarks are scripts, not a package)."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example_make_args(spec) -> list:
    """`make -s` for the emitted C example of ``spec`` at the suite's level ($LBGEN_OPT_LEVEL,
    -O1 by default: CFLAGS with it, and what lbgen's own build of those kernels adds at that
    level, backends/c.level_flags), so its kernels compile in a fraction of the Makefile's -O3
    time; the Makefile's own -O3 build is tested once (tests/codegen/test_emit.py)."""
    import os
    from lbgen.backends import c as cbackend
    from lbgen.codegen.render import generate
    level = os.environ.get("LBGEN_OPT_LEVEL", "-O1")
    extra = cbackend.level_flags((level,), generate(spec))
    return ["make", "-s", "CFLAGS=" + " ".join([level, "-march=native", "-fopenmp", *extra])]


def make_example(folder, spec, **run):
    """Build the emitted C example of ``spec`` in ``folder`` (example_make_args); raises on failure."""
    import subprocess
    return subprocess.run(example_make_args(spec), cwd=folder, check=True, capture_output=True, **run)


def emitted_d2q9_example(tmp_path, spec, r: float, lx: int = 16, ly: int = 64, steps: int = 20):
    """Emit ``spec`` (a D2Q9 kernel set) into tmp_path, build its example with make and run it
    ``steps`` steps on lx x ly (skips without make and gcc).  Returns the header's text, the
    example's fields (lx*ly rows: x, y, rho, ux, uy) and its start in lattice units (rho,
    u (2, lx, ly), the force a): a shear wave u_y = 0.05 sin(2 pi x / lx) with rho = 1 +
    0.01 cos(2 pi y / ly), under the force (0, -1e-5) (model units; ``r`` the set's scale)."""
    import shutil
    import subprocess
    from lbgen.codegen.emit import emit
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("make and gcc are needed to build the emitted example")
    emit(spec, tmp_path)
    header = (tmp_path / "lbgen_kernels.h").read_text()
    make_example(tmp_path, spec)
    subprocess.run(["./example", str(steps), str(lx), str(ly)], cwd=tmp_path, check=True, capture_output=True)
    data = np.loadtxt(tmp_path / "example_fields.txt")
    x = np.arange(lx)[:, None] * np.ones((1, ly))
    y = np.ones((lx, 1)) * np.arange(ly)[None, :]
    rho = 1 + 0.01 * np.cos(2 * np.pi * y / ly)
    a = np.array([0.0, -1e-5]) / r                                    # lattice units
    u = np.array([0 * x, 0.05 * np.sin(2 * np.pi * x / lx) / r])      # physical, lattice units
    return header, data, (rho, u, a)


def example_reference(lx, ly, steps, collision):
    """The physical fields (rho, ux, uy, T) the emitted examples (example.c, example.py, example.cu)
    must print: a shear wave given as physical fields, `steps` propagate + collide steps with
    the force (0, -1e-5)."""
    x = np.arange(lx)[:, None] * np.ones((1, ly))
    y = np.ones((lx, 1)) * np.arange(ly)[None, :]
    rho = 1 + 0.01 * np.cos(2 * np.pi * y / ly)
    ux = np.zeros((lx, ly))
    uy = 0.05 * np.sin(2 * np.pi * x / lx)
    T = 1 + 0.02 * np.sin(2 * np.pi * (x + y) / lx)
    force = (0.0, -1e-5)
    f = ref.physical_equilibrium(rho, ux, uy, T, force)
    params = {"tau": 0.8} if collision == "bgk" else {"C1": 1e-3, "C2": 1e-3, "C3": 0.5}
    for _ in range(steps):
        f = ref.collide(ref.propagate(f), collision, force=force, **params)
    return ref.physical_fields(f, force)


def cli(*args, env=None):
    """`lbgen ARGS` in this process (click's runner), every argument as text."""
    from click.testing import CliRunner
    from lbgen.cli.main import main
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def refused(result, *words) -> str:
    """Exit 2, one 'Error:' line on stderr holding every word, no traceback; returns the line."""
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output
    for w in words:
        assert w in errors[0], (w, errors[0])
    return errors[0]


def bounce_boundaries(shape):
    """A program's bounce-back boundaries (``set_boundaries``) for a box of any D: walls on both faces
    of the last axis, the high one a lid moving along x, and a solid block (face bits 2a + s)."""
    D = len(shape)
    lid = np.zeros((2 * D, D))
    lid[2 * D - 1, 0] = 0.04
    solid = np.zeros(shape, np.uint8)
    solid[(slice(2, 4),) * D] = 1
    return {"walls": 3 << 2 * (D - 1), "lids": 1 << 2 * D - 1, "lid": lid, "solid": solid}
