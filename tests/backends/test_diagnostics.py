"""The generated per-row diagnostics kernel on every backend against the NumPy reference.

Each backend's ``Program.diagnostics`` reduces the physical (half-step) fields of a state in
its own layout under a force; the oracle is ``lbgen.codegen.diagnostics.rows_of_fields`` of
``lbgen.reference.bulk.physical_fields`` of the same state and force.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

from helpers import LAYOUT_CONFIGS, config_id
from programs import PROGRAMS
from lbgen.reference import bulk as ref
from lbgen.codegen.diagnostics import ND, ROW_INDEX, combine_rows, rows_of_fields, scalars
from lbgen.simulation.runner import Simulation
from lbgen.run.setups import rayleigh_taylor

CI = os.environ.get("CI", "").lower() == "true"
LX, LY = 6, 96
#: the force per unit mass per step of the state's last collision (what the physical fields correct)
FORCE = (1e-4, -2e-4)


def _backend(name):
    """(compile function, why not) of a backend that can run here."""
    from lbgen import backends
    try:
        if name == "cuda-shim":
            from lbgen.backends.cuda import shim
            ok, why = shim.available()
            return (shim.compile if ok else None), why
        ok, why = backends.available(name)
        return (backends.load(name).compile if ok else None), why
    except Exception as e:  # noqa: BLE001 - any reason a backend cannot run here
        return None, str(e)


BACKENDS = ("c", "opencl", "cuda-shim", "cuda")
#: backends that must run under CI=true (the CUDA runtime, CuPy, needs a GPU)
REQUIRED = ("c", "opencl", "cuda-shim")


@pytest.fixture(scope="module")
def state():
    """A state after a few reference steps with a force (rho, u, T vary from row to row)."""
    rng = np.random.default_rng(3)
    shape = (LX, LY)
    feq = ref.equilibrium(1 + 0.05 * rng.uniform(-1, 1, shape), 0.05 * rng.uniform(-1, 1, shape),
                          0.05 * rng.uniform(-1, 1, shape), 1 + 0.05 * rng.uniform(-1, 1, shape))
    f = feq * (1 + 1e-3 * rng.standard_normal(feq.shape))
    for _ in range(3):
        f = ref.collide(ref.propagate(f), "bgk", tau=0.8, force=FORCE)
    return f


def _expected(state):
    return rows_of_fields(dict(zip(("rho", "ux", "uy", "T"), ref.physical_fields(state, FORCE))))


def _program(backend, layout, vl, precision="double", collision="bgk"):
    compile_fn, why = _backend(backend)
    if compile_fn is None:
        if CI and backend in REQUIRED:
            pytest.fail(f"{backend} must run under CI=true: {why}")
        pytest.skip(f"{backend}: {why}")
    return PROGRAMS.of(backend, (LX, LY), layout=layout, vl=vl, precision=precision, collision=collision)


@pytest.mark.parametrize("cfg", [c for c in LAYOUT_CONFIGS if c[1] in (None, 8)] + [("caosoa", 32)], ids=config_id)
@pytest.mark.parametrize("backend", BACKENDS)
def test_diagnostics_kernel_matches_reference_fields(backend, cfg, state):
    prog = _program(backend, *cfg)
    rows = prog.diagnostics(prog.pack(state), force=FORCE)
    expected = _expected(state)
    assert rows.shape == (LY, ND)
    scale = np.abs(expected).max(axis=0)
    err = np.abs(rows - expected)
    assert np.all(err <= 1e-12 * scale), err.max(axis=0) / scale
    # the stored moments (force 0) differ: momentum by rho a / 2 per site
    stored = prog.diagnostics(prog.pack(state))
    j = ROW_INDEX["momentum_y"]
    np.testing.assert_allclose(stored[:, j] - rows[:, j], stored[:, ROW_INDEX["mass"]] * FORCE[1] / 2, rtol=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fields_kernel_reports_the_physical_fields_of_the_reference(backend, state):
    """fields(f, ax, ay) = the oracle's half-step fields: rho, u - a/2, T + |a|^2/8 (bgk and regularized kernels)."""
    for collision in ("bgk", "regularized"):
        prog = _program(backend, "caosoa", 8, collision=collision)
        got = prog.fields(prog.pack(state), force=FORCE)
        for name, g, w in zip(("rho", "ux", "uy", "T"), got.values(), ref.physical_fields(state, FORCE)):
            assert np.abs(g - w).max() <= 1e-13 * max(1.0, np.abs(w).max()), (collision, name)
        # with no force: the stored moments
        for g, w in zip(prog.fields(prog.pack(state)).values(), ref.fields(state)):
            assert np.abs(g - w).max() <= 1e-13 * max(1.0, np.abs(w).max())


@pytest.mark.parametrize("backend", ("c", "opencl", "cuda-shim"))
def test_diagnostics_kernel_single_precision(backend, state):
    prog = _program(backend, "caosoa", 8, precision="single")
    rows = prog.diagnostics(prog.pack(state), force=FORCE)
    expected = _expected(state)
    i = ROW_INDEX
    np.testing.assert_allclose(rows[:, i["mass"]], expected[:, i["mass"]], rtol=1e-5)
    np.testing.assert_allclose(rows[:, i["min_T"]], expected[:, i["min_T"]], rtol=1e-5)


@pytest.mark.parametrize("backend", ("c", "opencl", "cuda-shim"))
def test_native_fields_are_the_float64_fields_bits(backend, state):
    """fields(native=True) (issue 38 item 4: what `lbgen run` holds): the kernels' own arrays, float32
    where they compute in single (C's <prefix>_fields_real, OpenCL's fields kernel), widened the bits
    of fields()."""
    prog = _program(backend, "caosoa", 8, precision="single")
    f = prog.pack(state)
    wide, native = prog.fields(f, force=FORCE), prog.fields(f, force=FORCE, native=True)
    assert {v.dtype for v in wide.values()} == {np.dtype(np.float64)}
    if backend != "cuda-shim":                 # the CUDA runtimes' fields arrays are double
        assert {v.dtype for v in native.values()} == {np.dtype(np.float32)}
    for k in wide:
        assert np.array_equal(native[k].astype(np.float64), wide[k]), k


@pytest.mark.parametrize("backend", ("c", "opencl", "cuda-shim"))
def test_non_finite_sites_are_counted_and_skipped_by_min_max(backend, state):
    prog = _program(backend, "soa", None)
    bad = state.copy()
    bad[5, 2, 40] = np.nan
    bad[7, 4, 41] = np.inf
    rows = prog.diagnostics(prog.pack(bad))
    i = ROW_INDEX
    assert rows[40, i["nonfinite"]] == 1 and rows[41, i["nonfinite"]] == 1 and rows[:, i["nonfinite"]].sum() == 2
    assert np.isfinite(rows[:, i["min_rho"]]).all() and np.isfinite(rows[:, i["max_u2"]]).all()
    good = rows_of_fields(dict(zip(("rho", "ux", "uy", "T"), ref.fields(state))))
    assert rows[40, i["min_rho"]] >= good[40, i["min_rho"]] - 1e-15
    assert scalars(rows, LX)["nonfinite"] == 2


def test_simulation_diagnostics_scalars_equal_host_fields():
    fields = rayleigh_taylor(8, 48, gravity=(0, -1e-3), T_hot=1.05, T_cold=0.95, width=4)
    from lbgen.simulation.runner import Walls
    sim = Simulation(8, 48, layout="caosoa", vl=8, collision="regularized", gravity=(0, -1e-3),
                     walls=Walls(T_bottom=1.05, T_top=0.95))
    sim.set_fields(**fields)
    sim.run(20)
    d = sim.diagnostics()                    # mixing width from the wall temperatures
    host = scalars(rows_of_fields(sim.fields()), 8, 1.05, 0.95)
    assert set(d) == set(host)
    for k in d:
        assert math.isclose(d[k], host[k], rel_tol=1e-12, abs_tol=1e-15), k
    assert 0 < d["mixing_width"] < 48 and d["max_speed"] > 0 and d["nonfinite"] == 0
    # several regions (host + host band): rows combine to the same result
    split = combine_rows([rows_of_fields({k: v[:3] for k, v in sim.fields().items()}),
                          rows_of_fields({k: v[3:] for k, v in sim.fields().items()})])
    np.testing.assert_allclose(split, rows_of_fields(sim.fields()), rtol=1e-13, atol=1e-16)


def test_host_plus_device_regions_combine_to_the_whole_lattice():
    """A host + device run: each region's kernel reduces its own columns; the rows combine."""
    if _backend("opencl")[0] is None:
        if CI:
            pytest.fail("opencl must run under CI=true")
        pytest.skip("no OpenCL here")
    from lbgen.run.setups import uniform_noise
    sim = Simulation(12, 32, device_backend="opencl", host_columns=3, gravity=(0, -1e-3))
    assert len(sim.regions) == 2
    sim.set_fields(**uniform_noise(12, 32, amplitude=0.02, seed=5))
    sim.run(4)
    expected = rows_of_fields(sim.fields())
    err = np.abs(sim.diagnostic_rows() - expected)
    assert np.all(err <= 1e-12 * np.abs(expected).max(axis=0)), err.max(axis=0)
