"""Where the walls effectively are (lbgen.model.wall_planes): the table against fresh
measurements, the lookup, and the Rayleigh number that uses it.

Offsets are rows from a wall's edge row (row 0 at the bottom, LY - 1 at the top); the
effective depth of a layer is LY - (1 + 2 offset).  The table was measured at LY = 128
(benchmarks/wall_planes.py); a fresh LY = 64 measurement differs from it by the resolution
change the table's docs print (< 0.005 rows for BGK tau >= 0.7).
"""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from lbgen.model import physics
from lbgen.model.catalog import SCHEMES
from lbgen.model.wall_planes import MEASURED_AT, MEASURED_DT, TABLE, OutsideTable, effective_planes, isothermal_offsets, table_point
from lbgen.run.config import RunConfig
from lbgen.simulation.runner import Simulation, Walls
from lbgen.simulation.wall_measure import DT_LARGE, conduction_planes, measure


def row(velocity_set, scheme, collision, x):
    return next(r for r in TABLE[(velocity_set, scheme, collision)] if r[0] == x)


def numbers(setup=None, **values):
    return physics.run_numbers(RunConfig.build(setup, ("test", values)))


# --------------------------------------------------------------------------- the module
def test_the_table_module_is_light():
    code = ("import sys, lbgen.model.wall_planes; bad = {'sympy', 'numpy', 'lbgen.simulation'} & set(sys.modules); "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_table_covers_every_walled_set_scheme_and_operator():
    """Both schemes, BGK and regularized, for D2Q37 and D2Q9; isothermal planes for the thermal
    sets.  D2V17 with its lbgen walls only: its reference walls do not keep a gas at rest."""
    for vs in ("d2q37", "d2v17", "d2q9"):
        for scheme in SCHEMES:
            for collision in ("bgk", "regularized"):
                if (vs, scheme) == ("d2v17", "reference"):
                    assert (vs, scheme, collision) not in TABLE
                    continue
                rows = TABLE[(vs, scheme, collision)]
                assert len(rows) >= 4
                assert all(len(r) == 6 and all((v is None) == (vs == "d2q9") for v in r[2:]) for r in rows)
                xs = [r[0] for r in rows]
                assert xs == sorted(xs)


def test_the_table_is_what_the_stored_measurements_give():
    """lbgen.model.wall_planes.TABLE is benchmarks/wall_planes.py's literal of benchmarks/wall_planes.jsonl."""
    import io
    import runpy
    from pathlib import Path
    bench = runpy.run_path(str(Path(__file__).parents[2] / "benchmarks" / "wall_planes.py"))
    results = bench["load"](Path(__file__).parents[2] / "benchmarks" / "wall_planes.jsonl")
    out = io.StringIO()
    bench["print_literal"](results, bench["LYS"], out)
    namespace = {}
    exec(out.getvalue(), namespace)
    assert namespace["TABLE"] == TABLE and namespace["MEASURED_AT"] == MEASURED_AT


# --------------------------------------------------------------------------- fresh measurements
@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_fresh_measurement_reproduces_the_table_bgk(scheme):
    """D2Q37, BGK tau = 0.8, LY = 64 (the table: LY = 128): the planes within 0.005 rows, the
    hot/cold shifts within 0.01 rows per unit T, at both wall temperature differences.  ~1 s."""
    m = measure("d2q37", scheme, "bgk", {"tau": 0.8}, 64)
    _, ns, iso, shift, iso_large, shift_large = row("d2q37", scheme, "bgk", 0.8)
    assert m["no_slip"] == pytest.approx(ns, abs=0.005)
    assert m["isothermal"] == pytest.approx(iso, abs=0.005)
    assert m["isothermal_large"] == pytest.approx(iso_large, abs=0.005)
    assert (m["shift"], m["shift_large"]) == pytest.approx((shift, shift_large), abs=0.01)
    assert abs(m["no_slip_asymmetry"]) < 1e-6


@pytest.mark.slow
def test_a_fresh_measurement_reproduces_the_table_regularized():
    """D2Q37, regularized C1 = C2 = 0.03, reference walls, LY = 64 (the table: LY = 128): the
    planes within 0.005 rows as for BGK, the hot/cold shifts, which still move with the
    resolution (LY = 64 measured 1.172 against the table's 1.129), within 0.06 rows (~30 s)."""
    m = measure("d2q37", "reference", "regularized", {"C1": 0.03, "C2": 0.03, "C3": 0.5}, 64)
    _, ns, iso, shift, iso_large, shift_large = row("d2q37", "reference", "regularized", 0.03)
    assert m["no_slip"] == pytest.approx(ns, abs=0.005)
    assert (m["isothermal"], m["isothermal_large"]) == pytest.approx((iso, iso_large), abs=0.005)
    assert (m["shift"], m["shift_large"]) == pytest.approx((shift, shift_large), abs=0.06)
    assert abs(m["no_slip_asymmetry"]) < 1e-6


def test_between_the_measured_points_the_interpolation_matches_a_measurement():
    """BGK tau = 0.9 and 0.65 (between table points), LY = 64: the interpolated offsets within 0.01 rows."""
    for tau in (0.9, 0.65):
        m = measure("d2q37", "lbgen", "bgk", {"tau": tau}, 64, parts=("no_slip", "isothermal"))
        (ns, iso, *_), note = table_point("d2q37", "lbgen", "bgk", {"tau": tau})
        assert not note
        assert m["no_slip"] == pytest.approx(ns, abs=0.01), tau
        assert m["isothermal"] == pytest.approx(iso, abs=0.01), tau


# --------------------------------------------------------------------------- the lookup
def test_the_lookup_is_exact_at_the_nodes_and_linear_between_in_tau_or_log_c():
    for (vs, scheme, collision), rows in TABLE.items():
        name_flow, name_heat = ("tau", "tau") if collision == "bgk" else ("C1", "C2")
        for x, *columns in rows:
            got, note = table_point(vs, scheme, collision, {name_flow: x, name_heat: x})
            assert not note
            assert [g is None for g in got] == [c is None for c in columns]
            assert [g for g in got if g is not None] == pytest.approx([c for c in columns if c is not None])
        for (x0, *a), (x1, *b) in zip(rows, rows[1:]):
            mid = 0.5 * (x0 + x1) if collision == "bgk" else math.sqrt(x0 * x1)
            got, _ = table_point(vs, scheme, collision, {name_flow: mid, name_heat: mid})
            for g, u, v in zip(got, a, b):
                assert g is None if u is None else g == pytest.approx(0.5 * (u + v), abs=1e-12)


def test_the_regularized_planes_follow_c1_for_no_slip_and_c2_for_the_isothermal_one():
    rows = TABLE[("d2q37", "lbgen", "regularized")]
    lo, hi = rows[0], rows[-1]
    got, _ = table_point("d2q37", "lbgen", "regularized", {"C1": lo[0], "C2": hi[0], "C3": 0.5})
    assert got == pytest.approx((lo[1],) + tuple(hi[2:]))


def test_the_wall_temperature_difference_is_interpolated_in_its_square_and_mirrors():
    """At the measured differences the stored planes; swapping the walls mirrors them; in
    between, the mean and the shift are linear in d^2."""
    columns = row("d2q37", "lbgen", "regularized", 1e-3)[1:]
    _, iso, shift, iso_large, shift_large = columns
    (da, db) = MEASURED_DT
    assert db == DT_LARGE
    for d, mean, s in ((da, iso, shift), (db, iso_large, shift_large)):
        b, t = isothermal_offsets(columns, 1 + d / 2, 1 - d / 2)[0]
        assert (0.5 * (b + t), (b - t) / d) == pytest.approx((mean, s))
        assert isothermal_offsets(columns, 1 - d / 2, 1 + d / 2)[0] == pytest.approx((t, b))
    d = 0.06
    w = (d * d - da * da) / (db * db - da * da)
    b, t = isothermal_offsets(columns, 1 + d / 2, 1 - d / 2)[0]
    assert 0.5 * (b + t) == pytest.approx(iso + w * (iso_large - iso))
    assert (b - t) / d == pytest.approx(shift + w * (shift_large - shift))
    with pytest.raises(OutsideTable, match="measured for differences up to 0.1"):
        isothermal_offsets(columns, 1.1, 0.9)
    beyond, note = isothermal_offsets(columns, 1.1, 0.9, extrapolate=True)
    assert beyond == pytest.approx(isothermal_offsets(columns, 1.05, 0.95)[0]) and "beyond the measured 0.1" in note


def test_third_order_sets_scale_the_temperature_dependent_parts_with_the_depth():
    """D2V17 and D3Q39 conduct as 1/T^2 (kappa / T^2): the steady profile is curved in the bulk
    and the planes' shift (and the mean's change with d) grows with the depth -- the stored
    LY = 64 measurements have 0.47 of the LY = 128 shifts.  The table (LY = 128) scaled by the
    depth ratio (``bulk_scale``) gives every stored LY = 64 plane of those sets, both d, within
    0.03 rows (measured: 0.022); unscaled, the LY = 128 shifts put them up to 1.4 rows off.  The
    fourth-order sets are not scaled (their conductivity rho kappa does not depend on T)."""
    import json
    from pathlib import Path
    from lbgen.model.wall_planes import bulk_scale
    path = Path(__file__).parents[2] / "benchmarks" / "wall_planes.jsonl"
    checked, worst, unscaled = 0, 0.0, 0.0
    for line in path.read_text().splitlines():
        m = json.loads(line)
        if m["ly"] != 64 or "error" in m or m["velocity_set"] not in ("d2v17", "d3q39") or \
                (m["velocity_set"], m["scheme"], m["collision"]) in MEASURED_AT:
            continue
        params = {"tau": m["x"]} if m["collision"] == "bgk" else {"C1": m["x"], "C2": m["x"], "C3": 0.5}
        try:
            columns, _ = table_point(m["velocity_set"], m["scheme"], m["collision"], params)
        except OutsideTable:              # D2V17 C = 1e-3: measured at LY = 64 only
            continue
        assert 0.46 < bulk_scale(m["velocity_set"], m["scheme"], m["collision"], columns, 64) < 0.49
        for d, iso, shift in ((MEASURED_DT[0], "isothermal", "shift"), (MEASURED_DT[1], "isothermal_large",
                                                                         "shift_large")):
            want = (m[iso] + m[shift] * d / 2, m[iso] - m[shift] * d / 2)
            p = effective_planes(m["velocity_set"], m["scheme"], m["collision"], params, 64, 1 + d / 2, 1 - d / 2)
            got = (p.isothermal[0], 63 - p.isothermal[1])
            worst = max(worst, *(abs(a - b) for a, b in zip(got, want)))
            plain = isothermal_offsets(columns, 1 + d / 2, 1 - d / 2)[0]
            unscaled = max(unscaled, *(abs(a - b) for a, b in zip(plain, want)))
            checked += 1
    assert checked >= 20 and worst < 0.03 and unscaled > 0.5
    assert bulk_scale("d2q37", "lbgen", "bgk", row("d2q37", "lbgen", "bgk", 0.8)[1:], 64) == 1.0


@pytest.mark.parametrize("collision, params, message", [
    ("bgk", {"tau": 0.52}, r"tau = 0.52 is outside the range .* \(tau = 0.55 \.\. 1.2"),
    ("bgk", {"tau": 1.5}, r"tau = 1.5 is outside the range"),
    ("regularized", {"C1": 1e-3, "C2": 0.5, "C3": 0.5}, r"C2 = 0.5 is outside the range .* \(C2 = 0.001 \.\. 0.1"),
    ("regularized", {"C1": 1e-4, "C2": 1e-3, "C3": 0.5}, r"C1 = 0.0001 is outside"),
    ("regularized", {"C1": 1e-3, "C2": 1e-3, "C3": 0.1}, r"C3 = 0.1: the wall planes were measured with C3 = 0.5 only"),
])
def test_outside_the_measured_range_is_refused_naming_it(collision, params, message):
    with pytest.raises(OutsideTable, match=message):
        effective_planes("d2q37", "lbgen", collision, params, 64)
    assert issubclass(OutsideTable, ValueError)


def test_extrapolation_takes_the_nearest_measured_point_and_says_so():
    p = effective_planes("d2q37", "lbgen", "bgk", {"tau": 1.5}, 64, extrapolate=True)
    q = effective_planes("d2q37", "lbgen", "bgk", {"tau": 1.2}, 64)
    assert (p.no_slip, p.isothermal) == (q.no_slip, q.isothermal) and not q.note
    assert p.note == "tau = 1.5 outside the measured 0.55 .. 1.2: planes of tau = 1.2 (the nearest measured)"


def test_unmeasured_sets_and_schemes_are_refused():
    with pytest.raises(OutsideTable, match="no measured wall planes for d2q99"):
        table_point("d2q99", "lbgen", "bgk", {"tau": 0.8})


def test_planes_in_row_coordinates():
    _, ns, iso, shift, *_ = row("d2q37", "lbgen", "bgk", 0.8)
    p = effective_planes("d2q37", "lbgen", "bgk", {"tau": 0.8}, 100, T_bottom=1.01, T_top=0.99)
    assert p.no_slip == pytest.approx((ns, 99 - ns))
    assert p.isothermal == pytest.approx((iso + 0.01 * shift, 99 - iso + 0.01 * shift))
    assert p.depth_no_slip == pytest.approx(100 - (1 + 2 * ns))
    assert p.depth_isothermal == pytest.approx(100 - (1 + 2 * iso))
    assert effective_planes("d2q9", "lbgen", "bgk", {"tau": 0.8}, 100).isothermal is None


@pytest.mark.parametrize("collision, params, guess", [
    ("bgk", {"tau": 0.6}, 2.66),
    pytest.param("regularized", {"C1": 0.01, "C2": 0.01}, 3.15, marks=pytest.mark.slow),     # ~7 s
])
def test_between_the_measured_temperature_differences_the_planes_match_a_measurement(collision, params, guess):
    """Walls at 1.03 / 0.97 (between the measured 0.02 and 0.1), LY = 64: the planes where the
    lookup puts them, to 0.01 rows."""
    heat = conduction_planes("d2q37", collision, params, "lbgen", 64, dT=0.06, guess=guess)
    p = effective_planes("d2q37", "lbgen", collision, {**params, "C3": 0.5} if "C1" in params else params, 64,
                         T_bottom=1.03, T_top=0.97)
    assert (heat.y0, heat.y1) == pytest.approx(p.isothermal, abs=0.01)


# --------------------------------------------------------------------------- Ra
def test_the_rayleigh_number_uses_the_effective_depth_not_ly_minus_5():
    """Regularized C1 = C2 = 1e-3 (the README's main job), walls 1.1 / 1.0, LY = 256: H = 256 - (1 +
    bottom + top isothermal offset), ~3 sites less than LY - 5, and Ra smaller by (H / 251)^3."""
    n = numbers(walls=True, t_bottom=1.1, t_top=1.0, gravity=(0, -1e-4), collision="regularized", c1=1e-3,
                c2=1e-3, lx=64, ly=256)
    (b, t), _ = isothermal_offsets(row("d2q37", "lbgen", "regularized", 1e-3)[1:], 1.1, 1.0)
    assert n["H"] == pytest.approx(256 - (1 + b + t))
    assert n["H"] < 251 - 2
    nominal = physics.rayleigh(1e-4 / physics.scale_factor() ** 2, 1.1, 1.0, 251, n["nu"], n["kappa"])
    assert n["Ra"] == pytest.approx(nominal * (n["H"] / 251) ** 3)
    assert n["Ra"] < 0.975 * nominal
    assert n["y_isothermal"] == pytest.approx([b, 255 - t])


def test_the_steady_conduction_gradient_is_the_temperature_difference_over_the_reported_depth():
    """BGK tau = 0.6, walls at 1.05 / 0.95, LY = 64: the bulk gradient measured on a run is
    (T_bottom - T_top) / H with the H run_numbers reports (to 0.2 %); LY - 5 is 2 % off."""
    ly, lx = 64, 1
    n = numbers(walls=True, t_bottom=1.05, t_top=0.95, gravity=(0, -1e-6), tau=0.6, lx=4, ly=ly)
    sim = Simulation(lx, ly, collision="bgk", tau=0.6, walls=Walls(1.05, 0.95), check_every=0)
    y = np.arange(ly)
    T0 = 1.05 - 0.1 * (y - 2.6) / (ly - 6.2)
    sim.set_fields(1.0 / T0[None, :], 0.0, 0.0, T0[None, :])
    sim.run(20000)                                  # ~ 4 decay times of the slowest mode (started near it)
    T = sim.fields()["T"].mean(axis=0)
    slope = np.polyfit(y[16:48], T[16:48], 1)[0]
    assert -0.1 / slope == pytest.approx(n["H"], rel=2e-3)
    assert abs(-0.1 / slope / (ly - 5) - 1) > 0.015


def test_the_header_shows_the_planes():
    n = numbers(walls=True, t_bottom=1.1, t_top=1.0, gravity=(0, -1e-4), tau=0.8, lx=4, ly=64)
    line = physics.summary(n)
    ns, iso = n["y_no_slip"], n["y_isothermal"]
    assert f"walls: no-slip planes at rows {ns[0]:.2f}, {ns[1]:.2f}, isothermal at {iso[0]:.2f}, {iso[1]:.2f}" in line
    assert f"(H = {n['H']:.4g} sites, between the isothermal planes)" in line
    assert "wall_planes_note" not in n
    outside = numbers(walls=True, tau=1.5, lx=4, ly=64)          # equal wall temperatures
    assert "planes of tau = 1.2" in outside["wall_planes_note"] and "planes of tau = 1.2" in physics.summary(outside)
