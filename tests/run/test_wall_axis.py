"""``lbgen run --wall-axis`` (issue 39): the thermal walls of rayleigh-benard and rayleigh-taylor
across x or y in 3D, across x in 2D.  The layer across another axis is the z layer turned: the exact claim checked
here is that a run with walls across x on the (LZ, LY, LX) lattice is the z run on (LX, LY, LZ)
with x and z swapped (and across y on (LX, LZ, LY) with y and z swapped) -- gravity, the depth,
Ra and the measured wall planes, the start, the fields after some steps, the Nusselt numbers and
the temperature profile -- to round-off (1e-12: not the bits, the populations are stored in
another order).  The z run is itself validated against Chandrasekhar's onset and Clever &
Busse's Nusselt number (tests/run/test_rayleigh_benard.py); a turned run inherits that.  The
refusals: --wall-axis without --walls, on an isothermal set, across an axis shorter than the
walls need, z in 2D, and with a time block on C across x or y (2D: x).  In 2D the same claim:
walls across x on (LY, LX) are the y run on (LX, LY) with x and y swapped."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.model.wall_frame import upright, upright_shape, upright_vector
from lbgen.run.config import RunConfig
from lbgen.run.options import ConfigError

#: the z layer and its turns: walls across x on (LZ, LY, LX), across y on (LX, LZ, LY)
SHAPES = {"z": (16, 4, 12), "x": (12, 4, 16), "y": (16, 12, 4)}
#: a shallow D3Q39 layer (BGK, tau 0.55, Ra 10: the fused_walls test's own numbers)
LAYER = {"velocity_set": "d3q39", "collision": "bgk", "tau": 0.55, "ra": 10.0}


def _config(axis, setup="rayleigh-benard", **extra):
    lx, ly, lz = SHAPES[axis]
    values = {**LAYER, "lx": lx, "ly": ly, "lz": lz, **extra}
    if axis != "z":
        values["wall_axis"] = axis
    if setup != "rayleigh-benard":
        values = {k: v for k, v in values.items() if k != "ra"}
    return RunConfig.build(setup, ("test", values))


def _turned(fields, axis):
    """The z run's fields as the run across ``axis`` holds them."""
    return upright(fields, axis)


def test_the_frame_swaps_two_axes_and_their_velocity_components():
    rng = np.random.default_rng(2)
    f = {k: rng.random((5, 3, 7)) for k in ("rho", "ux", "uy", "uz", "T")}
    turned = upright(f, "x")
    assert turned["rho"].shape == (7, 3, 5) and np.array_equal(turned["uz"], f["ux"].transpose(2, 1, 0))
    assert np.array_equal(turned["ux"], f["uz"].transpose(2, 1, 0)) and np.array_equal(turned["uy"], f["uy"].T)
    back = upright(turned, "x")
    assert all(np.array_equal(back[k], f[k]) for k in f)
    assert upright(f, "z") == f and upright(f, None) == f
    assert upright_shape((5, 3, 7), "y") == (5, 7, 3) and upright_vector((1.0, 2.0, 3.0), "y") == (1.0, 3.0, 2.0)


@pytest.mark.parametrize("axis", ["x", "y"])
def test_gravity_the_depth_ra_the_planes_and_the_start_turn_with_the_walls(axis):
    """No compile: the run description, its numbers and its start, across ``axis`` against z."""
    from lbgen.run.construct import initial_fields
    from lbgen.run.numbers import run_physics
    z, turned = _config("z"), _config(axis)
    assert turned.wall_axis == axis and turned.thermal_axis == axis and z.wall_axis is None
    assert turned.gravity == upright_vector(z.gravity, axis) and turned.gravity["xyz".index(axis)] < 0
    nz, nt = run_physics(z), run_physics(turned)
    for key in ("Ra", "H", "g", "adiabatic_ratio"):
        assert nt[key] == pytest.approx(nz[key], rel=1e-14), key
    assert nt[f"{axis}_isothermal"] == nz["z_isothermal"] and nt[f"{axis}_no_slip"] == nz["z_no_slip"]
    assert "z_isothermal" not in nt
    start_z, start = initial_fields(z), initial_fields(turned)
    want = _turned(start_z, axis)
    assert all(np.array_equal(start[k], want[k]) for k in want)
    # the default spelled out is the default: one run description, one identity
    assert RunConfig.build("rayleigh-benard", ("t", {**LAYER, "lx": 16, "ly": 4, "lz": 12, "wall_axis": "z"})) == z


def test_rayleigh_taylor_turns_its_gravity_and_its_walls():
    """The 3D rayleigh-taylor's defaults (gravity -z, bounce-back walls on z) turn with --wall-axis
    (a gravity given stays as given); its start is the z start turned, its numbers the z run's."""
    from lbgen.run.construct import initial_fields
    from lbgen.run.numbers import run_physics
    z = RunConfig.build("rayleigh-taylor", ("t", {"velocity_set": "d3q39", "lx": 16, "ly": 8, "lz": 24, "walls": True}))
    x = RunConfig.build("rayleigh-taylor", ("t", {"velocity_set": "d3q39", "lx": 24, "ly": 8, "lz": 16, "walls": True,
                                                   "wall_axis": "x"}))
    assert x.gravity == upright_vector(z.gravity, "x") and x.wall_axes == "x" and z.wall_axes == "z"
    want = _turned(initial_fields(z), "x")
    got = initial_fields(x)
    assert all(np.array_equal(got[k], want[k]) for k in want)
    assert {k: v for k, v in run_physics(x).items()} == run_physics(z)


@pytest.mark.parametrize("values, words", [
    ({"setup": "rayleigh-taylor", "velocity_set": "d3q39", "lz": 16, "wall_axis": "x"},
     "--wall-axis has no effect in this run: it needs walls"),
    ({"setup": "taylor-green", "velocity_set": "d3q19", "lz": 16, "wall_axis": "x"},
     "need a thermal 3D set (--velocity-set d3q39 or d3q103)"),
    ({"setup": "rayleigh-benard", "velocity_set": "d3q39", "lx": 6, "lz": 16, "ly": 8, "wall_axis": "x"},
     "--lx 6: the thermal walls across x need LX >= 8"),
    ({"setup": "rayleigh-taylor", "velocity_set": "d3q39", "walls": True, "lx": 8, "ly": 6, "lz": 16,
      "wall_axis": "y"}, "--ly 6: the thermal walls across y need LY >= 8"),
    ({"setup": "rayleigh-taylor", "wall_axis": "z"}, "--wall-axis z: a 2D lattice has no z axis; its thermal walls "
                                                     "stand across x or y"),
    ({"setup": "rayleigh-benard", "lx": 6, "ly": 24, "wall_axis": "x"}, "--lx 6: the thermal walls across x need LX >= 8"),
    ({"setup": "rayleigh-benard", "lx": 24, "ly": 16, "wall_axis": "x", "time_block": 2},
     "--time-block 2: the 2D thermal walls across x are not time-blocked"),
    ({"setup": "rayleigh-taylor", "lx": 24, "ly": 16, "wall_axis": "x", "hetero": "opencl"},
     "--hetero opencl splits the lattice in X between two backends; the thermal walls across x need X whole"),
    ({"setup": "rayleigh-benard", **LAYER, "lx": 12, "ly": 4, "lz": 16, "wall_axis": "x", "time_block": 2},
     "--time-block 2: the 3D thermal walls across x are not time-blocked"),
    ({"setup": "rayleigh-taylor", "velocity_set": "d3q39", "walls": True, "lx": 16, "ly": 8, "lz": 16,
      "wall_axis": "y", "time_block": 3}, "--time-block 3: the 3D thermal walls across y are not time-blocked"),
    ({"setup": "rayleigh-benard", **LAYER, "lx": 12, "ly": 4, "lz": 16, "wall_axis": "x", "hetero": "opencl"},
     "--hetero opencl splits the lattice in X between two backends; the thermal walls across x need X whole"),
])
def test_what_the_walls_cannot_take_is_refused_in_words_before_any_work(values, words, tmp_path):
    values = dict(values)
    with pytest.raises(ConfigError, match=re.escape(words)):
        RunConfig.build(values.pop("setup"), ("command line", values))
    out = tmp_path / "never"
    args = ["run", "rayleigh-benard", "--velocity-set", "d3q39", "--lx", "6", "--ly", "8", "--lz", "16",
            "--wall-axis", "x", "--out", str(out), "--no-progress"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2 and "need LX >= 8" in r.output and not out.exists(), r.output


def test_the_lattice_refuses_walls_across_x_on_host_and_device_regions():
    """Simulation's own rule (no compile: refused before any kernel is generated)."""
    from lbgen.simulation.parameters import SimulationError, Walls
    from lbgen.simulation.runner import Simulation
    with pytest.raises(SimulationError, match=r"Walls\(axis='x'\) and device_backend='opencl': the host and device "
                                              r"regions split X"):
        Simulation(12, 4, 16, velocity_set="d3q39", walls=Walls(axis="x"), device_backend="opencl", host_columns=3)


def _run(tmp_path, axis, *extra):
    out = tmp_path / axis
    lx, ly, lz = SHAPES[axis]
    args = ["run", "rayleigh-benard", "--velocity-set", "d3q39", "--collision", "bgk", "--tau", "0.55", "--ra", "10",
            "--lx", str(lx), "--ly", str(ly), "--lz", str(lz), "--steps", "30", "--series-every", "10",
            "--output-every", "30", "--pictures", "T", "--threads", "1", "--layout", "soa", "--no-progress",
            "--amplitude", "0.2", "--out", str(out), "--save", str(out / "end.npz"), *extra]
    if axis != "z":
        args += ["--wall-axis", axis]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    with np.load(out / "end.npz") as f:
        fields = {k: f[k] for k in ("rho", "ux", "uy", "uz", "T")}
    return out, r.output, fields


@pytest.mark.slow
def test_walls_across_x_and_y_are_the_z_run_turned(tmp_path):
    """30 steps of a seeded shallow layer (amplitude 0.2 Delta T, so the flow is not nil), walls
    across z, x and y (three D3Q39 compiles, about a minute each on a busy machine): the fields
    after 30 steps, the Nusselt numbers of the series and the closing line, the temperature profile
    (<T> over the planes across the walls) and the heat flux are the z run's turned, to 1e-12;
    one fused_walls call a step (time block auto is 1 across x and y); the manifest records the
    axis and its planes, the start line names it, the mid-plane pictures are drawn."""
    from lbgen.model.convection import heat_flux, profiles
    from lbgen.output.series import read_series
    from lbgen.run.convection import layer
    out_z, text_z, fields_z = _run(tmp_path, "z")
    series_z = read_series(out_z / "series.csv")
    manifest_z = json.loads((out_z / "manifest.json").read_text())
    assert np.abs(fields_z["uz"]).max() > 1e-6                              # the layer moves
    for axis in ("x", "y"):
        out, text, fields = _run(tmp_path, axis)
        want = _turned(fields_z, axis)
        for k in want:
            assert np.abs(fields[k] - want[k]).max() < 1e-12, (axis, k)
        series = read_series(out / "series.csv")
        for column in ("Nu_bottom", "Nu_top", "Nu_bulk", "mass", "kinetic_energy"):
            assert np.allclose(series[column], series_z[column], rtol=1e-12, atol=1e-14), (axis, column)
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["config"]["wall_axis"] == axis and manifest["kernel_calls"]["fused_walls"] == 30
        numbers = manifest["physics"]
        assert numbers[f"{axis}_isothermal"] == manifest_z["physics"]["z_isothermal"]
        assert f"thermal walls across {axis}" in text and f"across {axis})" in text
        closing = [line for line in text.splitlines() if line.startswith("Nusselt number: ")]
        closing_z = [line for line in text_z.splitlines() if line.startswith("Nusselt number: ")]
        assert closing[0].split(" (")[0] == closing_z[0].split(" (")[0]
        cfg = RunConfig.from_json(manifest["config"])
        where, where_z = layer(cfg, numbers), layer(RunConfig.from_json(manifest_z["config"]), manifest_z["physics"])
        T, wT = profiles(fields, axis=axis)
        T_z, wT_z = profiles(fields_z)
        assert T.shape == (SHAPES["z"][2],) and np.abs(T - T_z).max() < 1e-12 and np.abs(wT - wT_z).max() < 1e-15
        assert np.abs(heat_flux(fields, where) - heat_flux(fields_z, where_z)).max() < 1e-9
        assert sorted(p.name.split("-")[1] for p in (out / "pictures").glob("T-*-000000030.png")) == ["xy", "xz", "yz"]


def test_the_default_axis_spelled_out_is_the_default_run_in_2d_and_3d():
    """--wall-axis y in 2D, z in 3D: the same run description (one identity, old checkpoints resume)."""
    from lbgen.run.identity import run_identity
    for values, axis in (({}, "y"), ({"velocity_set": "d3q39", "lx": 16, "ly": 4, "lz": 24}, "z")):
        plain = RunConfig.build("rayleigh-taylor", ("t", {"walls": True, **values}))
        spelled = RunConfig.build("rayleigh-taylor", ("t", {"walls": True, "wall_axis": axis, **values}))
        assert spelled == plain and plain.wall_axis is None and plain.thermal_axis == axis
        assert run_identity(spelled) == run_identity(plain)


#: the 2D layer across y and its turn across x (D2Q37, BGK tau 0.55, Ra 100: a shallow layer)
SHAPES_2D = {"y": (16, 24), "x": (24, 16)}


def _run2d(tmp_path, axis):
    out = tmp_path / f"2d-{axis}"
    lx, ly = SHAPES_2D[axis]
    args = ["run", "rayleigh-benard", "--collision", "bgk", "--tau", "0.55", "--ra", "100", "--lx", str(lx),
            "--ly", str(ly), "--steps", "200", "--series-every", "50", "--output-every", "200", "--pictures", "T",
            "--threads", "1", "--layout", "soa", "--no-progress", "--amplitude", "0.2", "--out", str(out),
            "--save", str(out / "end.npz")] + (["--wall-axis", axis] if axis != "y" else [])
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    with np.load(out / "end.npz") as f:
        fields = {k: f[k] for k in ("rho", "ux", "uy", "T")}
    return out, r.output, fields


def test_2d_walls_across_x_are_the_y_run_turned(tmp_path):
    """200 steps of a seeded 2D layer (D2Q37), walls across y on 16 x 24 and across x on 24 x 16: the
    fields, the Nusselt numbers, the mass and the mixing width of the series, the closing line and the manifest's
    planes are the y run's turned (1e-12); the y run is time-blocked (auto), the x run steps with
    fused_walls (time blocks do not take walls across x)."""
    from lbgen.output.series import read_series
    out_y, text_y, fields_y = _run2d(tmp_path, "y")
    out_x, text_x, fields_x = _run2d(tmp_path, "x")
    want = _turned(fields_y, "x")
    for k in want:
        assert np.abs(fields_x[k] - want[k]).max() < 1e-12, k
    assert np.abs(fields_y["uy"]).max() > 1e-5                                # the layer moves
    series_y, series_x = read_series(out_y / "series.csv"), read_series(out_x / "series.csv")
    assert np.all(series_x["mixing_width"] > 0)              # across the walls: the profile of <T> over y
    for column in ("Nu_bottom", "Nu_top", "Nu_bulk", "mass", "kinetic_energy", "mixing_width"):
        assert np.allclose(series_x[column], series_y[column], rtol=1e-12, atol=1e-14), column
    closing = [line.split(" (")[0] for t in (text_x, text_y) for line in t.splitlines() if line.startswith("Nusselt")]
    assert closing[0] == closing[1] and "across x)" in text_x
    m_y, m_x = (json.loads((o / "manifest.json").read_text()) for o in (out_y, out_x))
    assert m_x["config"]["wall_axis"] == "x" and m_x["kernel_calls"]["fused_walls"] == 200
    assert m_x["physics"]["x_isothermal"] == m_y["physics"]["y_isothermal"] and "y_isothermal" not in m_x["physics"]
    assert m_x["physics"]["Ra"] == pytest.approx(m_y["physics"]["Ra"], rel=1e-14)


def test_2d_rayleigh_taylor_turns_its_gravity_its_start_and_its_numbers():
    from lbgen.run.construct import initial_fields
    from lbgen.run.numbers import run_physics
    y = RunConfig.build("rayleigh-taylor", ("t", {"lx": 16, "ly": 48}))
    x = RunConfig.build("rayleigh-taylor", ("t", {"lx": 48, "ly": 16, "wall_axis": "x"}))
    assert x.gravity == upright_vector(y.gravity, "x") and x.thermal_axis == "x" and y.wall_axis is None
    want, got = _turned(initial_fields(y), "x"), initial_fields(x)
    assert all(np.array_equal(got[k], want[k]) for k in want)
    ny, nx = run_physics(y), run_physics(x)
    assert {k.replace("x_", "y_", 1) if k.startswith("x_") else k: v for k, v in nx.items()} == ny
