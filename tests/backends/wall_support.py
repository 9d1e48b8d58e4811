"""The wall tests' shared cases: a small walled lattice, its near-equilibrium state and
reference run, the programs with the bc kernel per backend, and the three-sweep step."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import config_id
from programs import PROGRAMS
from lbgen.backends import BackendUnavailable
from lbgen.model.velocity_set import d2q37
from lbgen.reference import bulk as ref
from lbgen.reference import walls as refw

LX, LY = 4, 24                      # walls need LY >= 8; LY/VL >= 3 for VL = 8
STEPS = 20
FORCE = (1e-4, -2e-4)
T_BOTTOM, T_TOP, ADIABATIC = 1.02, 0.98, (False, True)
TOLERANCE = {"double": 1e-12, "single": 1e-5}
OPERATORS = ("bgk", "regularized")
R = d2q37().r
OPERATOR_PARAMS = {"bgk": dict(tau=0.8), "regularized": dict(C1=0.2, C2=0.1, C3=0.5)}


def rel_err(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


def near_equilibrium_state(shape, seed: int) -> np.ndarray:
    """Near-equilibrium (Q, *shape) D2Q37 state: rho, T ~ 1 +- 0.05, |u| ~ 0.05, 1e-3 noise."""
    rng = np.random.default_rng(seed)
    feq = ref.equilibrium(1 + 0.05 * rng.uniform(-1, 1, shape), 0.05 * rng.uniform(-1, 1, shape),
                          0.05 * rng.uniform(-1, 1, shape), 1 + 0.05 * rng.uniform(-1, 1, shape))
    return feq * (1.0 + 1e-3 * rng.standard_normal(feq.shape))


@pytest.fixture(scope="module")
def wall_state():
    """Near-equilibrium (Q, LX, LY) state (near_equilibrium_state)."""
    return near_equilibrium_state((LX, LY), 2024)


@pytest.fixture(scope="module")
def wall_reference(wall_state):
    memo = {}

    def get(operator):
        if operator not in memo:
            f = wall_state.copy()
            for _ in range(STEPS):
                f = refw.step_walls(f, operator, T_BOTTOM, T_TOP, ADIABATIC, force=FORCE, **OPERATOR_PARAMS[operator])
            memo[operator] = f
        return memo[operator]

    return get


def _backend(name):
    """The module whose compile() runs `name` here: C, OpenCL, or the CUDA host shim."""
    import importlib
    try:
        mod = importlib.import_module("lbgen.backends.cuda.shim" if name == "cuda" else f"lbgen.backends.{name}")
        ok, why = mod.available()
    except (BackendUnavailable, ImportError) as e:
        ok, why = False, str(e)
    if not ok:
        pytest.skip(f"{name}: {why}")
    return mod


def runtime_of(name):
    """The runtime that runs a wall test's backend `name` here (the CUDA source: the host shim),
    skipping the test where it cannot run."""
    _backend(name)
    return "cuda-shim" if name == "cuda" else name


def strict_walled_programs(backend, layout, vl, lx, *lys):
    """The strict regularized kernels with walls of one backend and layout, compiled for
    lx x ly for each ly given (C with 2 threads): the programs of the region and wall-side tests
    (the session's cache, tests/programs.py)."""
    runtime = runtime_of(backend)
    options = dict(threads=2) if backend == "c" else {}
    return tuple(PROGRAMS.of(runtime, (lx, ly), True, options, layout=layout, vl=vl, collision="regularized",
                             walls=True) for ly in lys)


@pytest.fixture(scope="module")
def wall_program():
    """wall_program(backend, layout, vl, collision, precision) -> Program with the bc kernel
    (the session's cache, tests/programs.py)."""

    def get(backend, layout, vl, collision="bgk", precision="double", strict=False, lx=LX, ly=LY):
        return PROGRAMS.of(runtime_of(backend), (lx, ly), strict, layout=layout, vl=vl, collision=collision,
                           precision=precision, walls=True)

    return get


def run_walls(prog, f0, steps, operator, adiabatic=ADIABATIC, force=FORCE):
    """`steps` of halo, propagate, bc, collide (the three-sweep step with walls)."""
    params = dict(OPERATOR_PARAMS[operator], ax=force[0], ay=force[1])
    a = prog.pack(f0)
    b = prog.allocate()
    for _ in range(steps):
        prog.halo(a)
        prog.propagate(a, b)
        prog.bc(a, b, T_BOTTOM, T_TOP, adiabatic, *force)
        prog.collide(b, a, **params)
    prog.synchronize()
    return prog.unpack(a)



CPU_CONFIGS = [("aos", None), ("soa", None), ("csoa", 4), ("caosoa", 8)]
CASES = ([("c", *cfg) for cfg in CPU_CONFIGS] + [("opencl", *cfg) for cfg in CPU_CONFIGS]
         + [("cuda", "aos", None), ("cuda", "caosoa", 8)])
SINGLE_CASES = [("c", "caosoa", 8), ("opencl", "soa", None), ("cuda", "aos", None)]
#: the fast subset's wall cases: each layout family once over the two CPU backends, and the CUDA
#: source once; the other CASES run in the slow set
FAST_CASES = [("c", "aos", None), ("c", "caosoa", 8), ("opencl", "soa", None), ("opencl", "csoa", 4),
              ("cuda", "caosoa", 8)]


def case_params(cases=None):
    """pytest params of wall cases (default CASES), those outside FAST_CASES marked slow."""
    return [pytest.param(case, id=case_id(case), marks=() if case in FAST_CASES else (pytest.mark.slow,))
            for case in (CASES if cases is None else cases)]


def case_id(case):
    return f"{case[0]}-{config_id(case[1:])}"
