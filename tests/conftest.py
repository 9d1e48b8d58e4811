"""Shared fixtures for the layout and C-backend tests.

Compiled programs are cached twice: on disk by the backends themselves (the default user
cache, so repeated runs are fast) and in memory for the session by one cache,
tests/programs.py's ``PROGRAMS`` (the ``programs`` fixture; ``program`` is its C shorthand).
"""
from __future__ import annotations

import os

# pytest -n 2 already uses both cores: one OpenMP thread per worker, sleeping (not spinning)
# when idle, or every parallel region waits for a descheduled thread.  Tests that need
# several threads ask for them explicitly (Program threads=2).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
# correctness builds at -O1: gcc takes a fifth of the -O3 time on the generated kernels, and a
# strict build's bits are the same at every level (tests/backends/test_opt_level.py holds them
# against -O3); LBGEN_OPT_LEVEL=-O3 pytest ... tests what runs use.  The folders of QUICK_BUILDS
# and every test not marked slow build at -O0 (below)
if not os.environ.get("LBGEN_OPT_LEVEL", "").strip():
    os.environ["LBGEN_OPT_LEVEL"] = "-O1"
    os.environ["LBGEN_SUITE_LEVEL"] = "-O1"       # the suite's own choice (xdist workers inherit both)
#: a level the user set (LBGEN_OPT_LEVEL before this file ran): it holds everywhere
USER_OPT_LEVEL = os.environ["LBGEN_OPT_LEVEL"] != os.environ.get("LBGEN_SUITE_LEVEL")
# layouts chosen by `lbgen tune` on this machine must not change what the tests run
os.environ["LBGEN_TUNED"] = "off"

import numpy as np  # noqa: E402
import pytest

from lbgen.reference import bulk as ref
from helpers import CI, FORCE, LX, LY, OPERATOR_PARAMS, random_fields, step_fused, step_unfused
from lbgen.model.velocity_set import d2q37
from programs import PROGRAMS

#: the test folders whose kernels run a few steps on small lattices: their builds at -O0, which
#: gcc compiles about 4x faster than -O1 on the generated kernels (D2Q37 regularized: 0.7 against
#: 3.0 s), while the steps they take cost little (tests/backends' C, 3D, time-block, TRT and wall
#: modules from an empty cache: 121 s at -O0, 343 s at -O1, 2026-11-28).  Elsewhere the tests not
#: marked slow build at -O0 too (tests/simulation and tests/model's fast subset from an empty cache,
#: one process: 238 s at -O0, 512 s at -O1, 2026-11-28); the slow physics runs there (flows,
#: cavities, convection) keep -O1.  An LBGEN_OPT_LEVEL you set holds everywhere.
QUICK_BUILDS = ("backends", "codegen", "reference", "parallel")


def quick_build(item) -> bool:
    """Whether a test builds at -O0 (its folder is one of QUICK_BUILDS, or it is not marked slow)."""
    return item.path.parent.name in QUICK_BUILDS or item.get_closest_marker("slow") is None


@pytest.fixture(autouse=True)
def _build_level(request, monkeypatch):
    if not USER_OPT_LEVEL and quick_build(request.node):
        monkeypatch.setenv("LBGEN_OPT_LEVEL", "-O0")


@pytest.fixture(scope="session")
def vs():
    return d2q37()


@pytest.fixture(scope="session")
def lattice():
    return LX, LY


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
def programs():
    """The session's one program cache: programs(spec, shape, runtime=None, *, strict=False, **options)
    and programs.of(runtime, shape, strict=False, options=None, **spec_fields) (tests/programs.py)."""
    return PROGRAMS


@pytest.fixture(scope="session")
def program(programs):
    """program(layout, vl, precision='double', collision='bgk', strict=False, flags=None) -> CProgram
    for LX x LY (run-time sizes: one library per spec, any lattice), from the session's cache."""

    def get(layout, vl, precision="double", collision="bgk", strict=False, flags=None, lx=LX, ly=LY):
        options = {} if flags is None else {"flags": tuple(flags)}
        return programs.of("c", (lx, ly), strict, options, layout=layout, vl=vl, precision=precision,
                           collision=collision)

    return get


@pytest.fixture(scope="session")
def run_program():
    """run_program(prog, f0, steps, path, operator, force=FORCE) -> (Q, LX, LY) float64 after `steps`."""

    def run(prog, f0, steps, path, operator, force=FORCE):
        params = dict(OPERATOR_PARAMS[operator], ax=force[0], ay=force[1])
        a = prog.pack(f0)
        b = prog.allocate()
        stepper = {"unfused": step_unfused, "fused": step_fused}[path]
        for _ in range(steps):
            a, b = stepper(prog, a, b, **params)
        return prog.unpack(a)

    return run



# --- the fast subset and the full suite ---------------------------------------------------------
# One rule for what runs: tests marked `slow` run in CI (CI=true, as .ci/run sets it) or with
# --slow; a newcomer's plain `pytest` leaves them out (and says how many).  What skips is only
# what cannot run here (an optional runtime: CuPy without a GPU), each with its reason.
def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False, help="also run the tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow") or CI or "slow" in (config.getoption("-m") or ""):
        # the full suite: the modules that hold slow tests first (whole modules, their own order
        # kept, so module fixtures are built once), so the long runs start while the fast tests
        # can still fill the other worker; xdist's work stealing (below) evens the end
        heavy = {item.module for item in items if item.get_closest_marker("slow")}
        items.sort(key=lambda item: item.module not in heavy)
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    _LEFT_OUT["slow"] = len(slow)
    if hasattr(config, "workeroutput"):            # an xdist worker: the controller prints the count
        config.workeroutput["lbgen_slow_left_out"] = len(slow)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under -n (the README's command), an idle worker takes tests queued for another, so the
    workers end together (a plain `-n 2` queues tests per worker up front)."""
    from xdist.scheduler import WorkStealingScheduling
    return WorkStealingScheduling(config, log)


#: how many slow tests this session left out (every xdist worker collects the same items)
_LEFT_OUT = {"slow": 0}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _LEFT_OUT["slow"] = max(_LEFT_OUT["slow"], getattr(node, "workeroutput", {}).get("lbgen_slow_left_out", 0))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _LEFT_OUT["slow"]:
        terminalreporter.write_line(
            f"lbgen: {_LEFT_OUT['slow']} slow tests left out (whole-run audits, MPI launches, example builds); "
            f"run them too with: .venv/bin/python -m pytest -n 2 -q --slow   (CI=true does the same)")


def pytest_report_header(config):
    full = config.getoption("--slow") or CI
    return "lbgen: full suite (slow tests included)" if full else \
        "lbgen: fast subset (slow tests left out: --slow or CI=true runs them)"
