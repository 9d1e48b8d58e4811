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
from lbgen.model.wall_planes import TABLE, OutsideTable, effective_planes, offsets
from lbgen.run.config import RunConfig
from lbgen.simulation.runner import Simulation, Walls
from lbgen.simulation.wall_measure import conduction_planes, measure


def row(velocity_set, scheme, collision, x):
    return next(r for r in TABLE[(velocity_set, scheme, collision)] if r[0] == x)


def numbers(setup=None, **values):
    return physics.run_numbers(RunConfig.build(setup, ("test", values)))


# --------------------------------------------------------------------------- the module
def test_the_table_module_is_light():
    code = ("import sys, lbgen.model.wall_planes; bad = {'sympy', 'numpy', 'lbgen.simulation'} & set(sys.modules); "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_table_covers_every_scheme_and_operator_of_d2q37():
    """Both schemes, BGK and regularized, for D2Q37 (D2V17 and D2Q9 are not measured yet: their
    runs report no planes, ``physics.wall_planes`` gives None); isothermal planes included."""
    for vs in ("d2q37",):
        for scheme in SCHEMES:
            for collision in ("bgk", "regularized"):
                rows = TABLE[(vs, scheme, collision)]
                assert len(rows) >= 5
                assert all((r[2] is None) == (vs == "d2q9") for r in rows)
                xs = [r[0] for r in rows]
                assert xs == sorted(xs)


# --------------------------------------------------------------------------- fresh measurements
@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_fresh_measurement_reproduces_the_table_bgk(scheme):
    """D2Q37, BGK tau = 0.8, LY = 64 (the table: LY = 128): both planes within 0.005 rows, the
    hot/cold shift within 0.01 rows per unit T.  Under a second."""
    m = measure("d2q37", scheme, "bgk", {"tau": 0.8}, 64)
    _, ns, iso, shift = row("d2q37", scheme, "bgk", 0.8)
    assert m["no_slip"] == pytest.approx(ns, abs=0.005)
    assert m["isothermal"] == pytest.approx(iso, abs=0.005)
    assert m["shift"] == pytest.approx(shift, abs=0.01)
    assert abs(m["no_slip_asymmetry"]) < 1e-6


@pytest.mark.slow
def test_a_fresh_measurement_reproduces_the_table_regularized():
    """D2Q37, regularized C1 = C2 = 0.03, reference walls, at the table's own LY = 128: to 2e-3 rows (~40 s)."""
    m = measure("d2q37", "reference", "regularized", {"C1": 0.03, "C2": 0.03, "C3": 0.5}, 128)
    _, ns, iso, shift = row("d2q37", "reference", "regularized", 0.03)
    assert m["no_slip"] == pytest.approx(ns, abs=2e-3)
    assert m["isothermal"] == pytest.approx(iso, abs=2e-3)


def test_between_the_measured_points_the_interpolation_matches_a_measurement():
    """BGK tau = 0.9 and 0.65 (between table points), LY = 64: the interpolated offsets within 0.01 rows."""
    for tau in (0.9, 0.65):
        m = measure("d2q37", "lbgen", "bgk", {"tau": tau}, 64)
        ns, iso, _, note = offsets("d2q37", "lbgen", "bgk", {"tau": tau})
        assert not note
        assert m["no_slip"] == pytest.approx(ns, abs=0.01), tau
        assert m["isothermal"] == pytest.approx(iso, abs=0.01), tau


# --------------------------------------------------------------------------- the lookup
def test_the_lookup_is_exact_at_the_nodes_and_linear_between_in_tau_or_log_c():
    for (vs, scheme, collision), rows in TABLE.items():
        name_flow, name_heat = ("tau", "tau") if collision == "bgk" else ("C1", "C2")
        for x, ns, iso, shift in rows:
            got = offsets(vs, scheme, collision, {name_flow: x, name_heat: x})
            assert got[:3] == pytest.approx((ns, iso, shift)) if iso is not None else got[0] == pytest.approx(ns)
        for (x0, ns0, iso0, _), (x1, ns1, iso1, _) in zip(rows, rows[1:]):
            mid = 0.5 * (x0 + x1) if collision == "bgk" else math.sqrt(x0 * x1)
            ns, iso, _, _ = offsets(vs, scheme, collision, {name_flow: mid, name_heat: mid})
            assert ns == pytest.approx(0.5 * (ns0 + ns1), abs=1e-12)
            if iso0 is not None:
                assert iso == pytest.approx(0.5 * (iso0 + iso1), abs=1e-12)


def test_the_regularized_planes_follow_c1_for_no_slip_and_c2_for_the_isothermal_one():
    rows = TABLE[("d2q37", "lbgen", "regularized")]
    (lo, ns_lo, _, _), (hi, _, iso_hi, _) = rows[0], rows[-1]
    ns, iso, _, _ = offsets("d2q37", "lbgen", "regularized", {"C1": lo, "C2": hi, "C3": 0.5})
    assert (ns, iso) == pytest.approx((ns_lo, iso_hi))


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
        offsets("d2q99", "lbgen", "bgk", {"tau": 0.8})


def test_planes_in_row_coordinates_and_the_hot_wall_shift():
    _, ns, iso, shift = row("d2q37", "lbgen", "bgk", 0.8)
    p = effective_planes("d2q37", "lbgen", "bgk", {"tau": 0.8}, 100)
    assert p.no_slip == pytest.approx((ns, 99 - ns))
    assert p.isothermal == pytest.approx((iso, 99 - iso))
    assert p.depth_no_slip == pytest.approx(100 - (1 + 2 * ns))
    hot = effective_planes("d2q37", "lbgen", "bgk", {"tau": 0.8}, 100, T_bottom=1.05, T_top=0.95)
    assert hot.isothermal == pytest.approx((iso + 0.05 * shift, 99 - iso + 0.05 * shift))
    assert hot.depth_isothermal == pytest.approx(p.depth_isothermal)      # the shift moves both planes alike


def test_the_measured_hot_wall_shift_is_what_the_lookup_applies():
    """Conduction between 1.05 and 0.95 (five times the table's difference), BGK tau = 0.6, LY = 64:
    the planes where the lookup puts them, to 0.01 rows."""
    heat = conduction_planes("d2q37", "bgk", {"tau": 0.6}, "lbgen", 64, dT=0.1)
    p = effective_planes("d2q37", "lbgen", "bgk", {"tau": 0.6}, 64, T_bottom=1.05, T_top=0.95)
    assert (heat.y0, heat.y1) == pytest.approx(p.isothermal, abs=0.01)


# --------------------------------------------------------------------------- Ra
def test_the_rayleigh_number_uses_the_effective_depth_not_ly_minus_5():
    """Regularized C1 = C2 = 1e-3 (the README's main job), LY = 256: H = 256 - (1 + 2 offset),
    about 4 sites less than LY - 5, and Ra smaller by (H / 251)^3."""
    n = numbers(walls=True, t_bottom=1.1, t_top=1.0, gravity=(0, -1e-4), collision="regularized", c1=1e-3,
                c2=1e-3, lx=64, ly=256)
    _, _, iso, shift = row("d2q37", "lbgen", "regularized", 1e-3)
    assert n["H"] == pytest.approx(256 - (1 + 2 * iso))
    assert n["H"] < 251 - 3
    nominal = physics.rayleigh(1e-4 / physics.scale_factor() ** 2, 1.1, 1.0, 251, n["nu"], n["kappa"])
    assert n["Ra"] == pytest.approx(nominal * (n["H"] / 251) ** 3)
    assert n["Ra"] < 0.96 * nominal
    assert n["y_isothermal"] == pytest.approx([iso + 0.05 * shift, 255 - iso + 0.05 * shift])


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
    outside = numbers(walls=True, tau=1.5, lx=4, ly=64)
    assert "planes of tau = 1.2" in outside["wall_planes_note"] and "planes of tau = 1.2" in physics.summary(outside)
