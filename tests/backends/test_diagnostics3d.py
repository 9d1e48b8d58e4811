"""The 3D diagnostics kernel (C, OpenCL, the CUDA .cu through the host shim): per-line
reductions over x (lbgen.codegen.diagnostics.ROW_QUANTITIES3D) of the physical fields of an
oracle state with a force and a voxel mask, equal to the same reductions computed from the
oracle's own fields; a NaN site is counted and skipped by min/max; Simulation3D's diagnostics
and guard read the kernel, not the populations."""
from __future__ import annotations

import numpy as np
import pytest

import lbgen
from lbgen.codegen.diagnostics import ROW_INDEX3D, ROW_QUANTITIES3D, rows_of_fields3d, scalars3d
from lbgen.reference import bulk3d as oracle
from lbgen.simulation.parameters import SimulationError

SHAPE = (6, 5, 8)
R = np.sqrt(3.0)
A = np.array([2e-5, -1e-5, 3e-5])          # lattice units


def _state(solid, seed=3):
    rng = np.random.default_rng(seed)
    lat = oracle.lattice("d3q19")
    rho = 1.0 + 0.05 * rng.standard_normal(SHAPE)
    u = 0.03 * rng.standard_normal((3,) + SHAPE)
    f = oracle.equilibrium(rho, u, lat) * (1 + 1e-2 * rng.standard_normal((lat.Q,) + SHAPE))
    f[:, solid] = 0.0
    return f


def _oracle_rows(f, solid):
    with np.errstate(invalid="ignore", divide="ignore"):
        rho, u = oracle.physical_fields(f, A, "d3q19")
    fields = {"rho": rho, "ux": R * u[0], "uy": R * u[1], "uz": R * u[2], "T": np.ones(SHAPE)}
    return rows_of_fields3d(fields, solid)


def _sim(backend, layout, vl, solid):
    try:
        return lbgen.Simulation(*SHAPE, backend=backend, layout=layout, vl=vl, tau=0.8, gravity=tuple(R * R * A),
                                  walls="y", mask=solid)
    except Exception as e:  # noqa: BLE001 - an unavailable runtime skips
        if "unavailable" in str(e).lower() or isinstance(e, ImportError):
            pytest.skip(f"{backend}: {e}")
        raise


@pytest.mark.parametrize("backend, layout, vl", [("c", "caosoa", 4), ("c", "aos", None), ("opencl", "csoa", 2),
                                                 ("cuda-shim", "soa", None)])
def test_rows_equal_the_oracle_fields_reduced(backend, layout, vl):
    solid = np.random.default_rng(8).random(SHAPE) < 0.15
    sim = _sim(backend, layout, vl, solid)
    f = _state(solid)
    sim.set_populations(f)
    rows = sim.diagnostic_rows()
    want = _oracle_rows(f, solid)
    assert rows.shape == (SHAPE[1] * SHAPE[2], len(ROW_QUANTITIES3D))
    scale = np.maximum(np.abs(want), 1.0)
    assert np.max(np.abs(rows - want) / scale) < 1e-13
    # line y*LZ + z: its mass is the fluid sum over x of that (y, z)
    y, z = 3, 5
    assert rows[y * SHAPE[2] + z, ROW_INDEX3D["mass"]] == pytest.approx(f[:, :, y, z].sum(), rel=1e-14)
    d = sim.diagnostics()
    assert d == scalars3d(rows)
    assert d["nonfinite"] == 0 and d["min_rho"] > 0.8


def test_a_nan_site_is_counted_skipped_by_min_max_and_stops_the_guard():
    sim = _sim("c", "caosoa", 4, None)               # the kernels of the other tests (one compile)
    f = _state(np.zeros(SHAPE, bool))
    sim.set_populations(f)
    good = sim.diagnostics()
    buf = sim.populations()
    buf[3, 2, 1, 4] = np.nan
    sim.program.pack(buf, sim.f)       # past set_populations' checks, as a diverged run would be
    d = sim.diagnostics()
    assert d["nonfinite"] == 1
    assert d["min_rho"] >= good["min_rho"] and np.isfinite(d["max_speed"]) and d["max_speed"] <= good["max_speed"]
    with pytest.raises(SimulationError) as e:
        sim.check_finite()
    assert "(x=2, y=1, z=4)" in str(e.value)


def test_the_guard_and_diagnostics_do_not_pull_populations():
    sim = _sim("c", "caosoa", 4, None)
    sim.set_fields(1.0, 0.01, 0.0, 0.0)
    sim.run(4)
    sim.diagnostics()
    calls = sim.program.calls
    assert calls["diagnostics"] >= 2 and calls["unpack"] == 0 and calls["fields"] == 0


def test_rows_do_not_depend_on_the_thread_count():
    f = _state(np.zeros(SHAPE, bool), seed=5)
    rows = []
    for threads in (1, 2):
        sim = lbgen.Simulation(*SHAPE, layout="caosoa", vl=4, tau=0.8, threads=threads)
        sim.set_populations(f)
        rows.append(sim.diagnostic_rows())
    assert np.array_equal(rows[0], rows[1])
