"""Shared fixtures for the layout and C-backend tests.

Compiled programs are cached twice: on disk by the C backend itself (the default user
cache, so repeated runs are fast) and in memory for the session by ``program``.
"""
from __future__ import annotations

import os

# pytest -n 2 already uses both cores: one OpenMP thread per worker, sleeping (not spinning)
# when idle, or every parallel region waits for a descheduled thread.  Tests that need
# several threads ask for them explicitly (Program threads=2).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
# layouts chosen by `lbgen tune` on this machine must not change what the tests run
os.environ["LBGEN_TUNED"] = "off"

import numpy as np  # noqa: E402
import pytest

from lbgen.reference import bulk as ref
from lbgen.model.velocity_set import d2q37

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


@pytest.fixture(scope="session")
def vs():
    return d2q37()


@pytest.fixture(scope="session")
def lattice():
    return LX, LY


def random_fields(seed: int, shape=(LX, LY)):
    """rho, T ~ 1 +- 0.05 and |u| ~ 0.05 (smooth enough for stable short runs)."""
    rng = np.random.default_rng(seed)
    rho = 1.0 + 0.05 * rng.uniform(-1, 1, shape)
    ux = 0.05 * rng.uniform(-1, 1, shape)
    uy = 0.05 * rng.uniform(-1, 1, shape)
    T = 1.0 + 0.05 * rng.uniform(-1, 1, shape)
    return rho, ux, uy, T


@pytest.fixture(scope="session")
def initial_state():
    """A near-equilibrium (Q, LX, LY) state with a tiny random non-equilibrium part."""
    rng = np.random.default_rng(12345)
    feq = ref.equilibrium(*random_fields(7))
    return feq * (1.0 + 1e-3 * rng.standard_normal(feq.shape))


@pytest.fixture(scope="session")
def reference_run(initial_state):
    """reference_run(operator, steps, force=FORCE) -> f after `steps` reference steps (memoised)."""
    memo = {}

    def run(operator: str, steps: int, force=FORCE):
        key = (operator, steps, tuple(force))
        if key not in memo:
            f = initial_state.copy()
            for _ in range(steps):
                f = ref.collide(ref.propagate(f), operator, force=force, **OPERATOR_PARAMS[operator])
            memo[key] = f
        return memo[key]

    return run


@pytest.fixture(scope="session")
def program():
    """program(layout, vl, precision='double', collision='bgk', strict=False, flags=None) -> CProgram.

    Run-time sizes (one library per spec, any lattice), compiled for LX x LY.
    """
    from lbgen.backends import c as cbackend
    from lbgen.codegen.render import KernelSpec, generate

    memo = {}

    def get(layout, vl, precision="double", collision="bgk", strict=False, flags=None, lx=LX, ly=LY):
        key = (layout, vl, precision, collision, strict, tuple(flags) if flags is not None else None, lx, ly)
        if key not in memo:
            src = generate(KernelSpec(backend="c", layout=layout, vl=vl, precision=precision, collision=collision))
            memo[key] = cbackend.compile(src, lx, ly, flags=flags, strict=strict)
        return memo[key]

    return get


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


@pytest.fixture(scope="session")
def run_program():
    """run_program(prog, f0, steps, path, operator, force=FORCE) -> (Q, LX, LY) float64 after `steps`."""

    def run(prog, f0, steps, path, operator, force=FORCE):
        params = dict(OPERATOR_PARAMS[operator], ax=force[0], ay=force[1])
        a = prog.upload_fields(f0)
        b = prog.allocate()
        stepper = {"unfused": step_unfused, "fused": step_fused}[path]
        for _ in range(steps):
            a, b = stepper(prog, a, b, **params)
        return prog.download_fields(a)

    return run


def example_reference(lx, ly, steps, collision):
    """The fields (rho, ux, uy, T) the emitted examples (example.c, example.py, example.cu)
    must print: a shear wave, `steps` propagate + collide steps with the force (0, -1e-5)."""
    x = np.arange(lx)[:, None] * np.ones((1, ly))
    y = np.ones((lx, 1)) * np.arange(ly)[None, :]
    rho = 1 + 0.01 * np.cos(2 * np.pi * y / ly)
    ux = np.zeros((lx, ly))
    uy = 0.05 * np.sin(2 * np.pi * x / lx)
    T = 1 + 0.02 * np.sin(2 * np.pi * (x + y) / lx)
    f = ref.equilibrium(rho, ux, uy, T)
    params = {"tau": 0.8} if collision == "bgk" else {"C1": 1e-3, "C2": 1e-3, "C3": 0.5}
    for _ in range(steps):
        f = ref.collide(ref.propagate(f), collision, force=(0.0, -1e-5), **params)
    return ref.fields(f)
