"""`lbgen run` in 3D (Run, RunOutput with dimension 3): every 3D set-up from the command line, its files
read back and compared with a Simulation3D built by hand (the .vti and .h5 fields bit for
bit, the PNG slices' sizes, the series against sums of the saved fields), a bit-identical
resume, the voxel mask of --geometry (used, and a bad one refused before any file is
written), a channel's steady profile against the Poiseuille parabola, and the 2D-only
options refused before any work."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

import lbgen
from lbgen.cli.main import main
from lbgen.output import read_field_file, read_series, read_vti
from lbgen.output.pictures import MID_PLANES, default_dpi, figure_layout
from lbgen.run.config import RunConfig
from lbgen.run.setups import rayleigh_taylor3d

R = math.sqrt(3.0)
SHAPE = (16, 12, 10)
NAMES = ("rho", "ux", "uy", "uz", "T")


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _config(out) -> RunConfig:
    return RunConfig.from_json(json.loads((out / "manifest.json").read_text())["config"])


def _by_hand(cfg: RunConfig, fields: dict, steps: int, mask=None) -> dict:
    """The same run on a Simulation3D built here from the recorded description."""
    sim = lbgen.Simulation(cfg.lx, cfg.ly, cfg.lz, velocity_set=cfg.velocity_set, collision=cfg.collision,
                             gravity=cfg.gravity, walls=cfg.wall_axes, lid=cfg.lid, mask=mask, layout=cfg.layout,
                             vl=cfg.vl, **cfg.parameters)
    sim.set_fields(fields["rho"], fields["ux"], fields["uy"], fields["uz"], fields.get("T", 1.0))
    sim.run(steps)
    return sim.fields()


def _shear_wave(A=0.05):
    x = np.arange(SHAPE[0])[:, None, None] * np.ones(SHAPE)
    return {"rho": np.ones(SHAPE), "ux": np.zeros(SHAPE), "uy": A * np.sin(2 * np.pi * x / SHAPE[0]),
            "uz": np.zeros(SHAPE)}


def _at_rest(shape=SHAPE):
    return {"rho": np.ones(shape), "ux": np.zeros(shape), "uy": np.zeros(shape), "uz": np.zeros(shape)}


def _check_series_against_fields(out, step, mask=None):
    """The series row of ``step`` equals the sums of that step's saved fields (fluid sites)."""
    s = read_series(out / "series.csv")
    row = {k: v[list(s["step"]).index(step)] for k, v in s.items()}
    f = read_field_file(out / "fields" / f"step-{step:09d}.h5")
    fluid = np.ones(f["rho"].shape, bool) if mask is None else ~mask
    rho, u = f["rho"][fluid], np.stack([f[c][fluid] for c in ("ux", "uy", "uz")])
    assert row["mass"] == pytest.approx(rho.sum(), rel=1e-13)
    for k, c in enumerate("xyz"):
        p = rho * u[k]                                      # summed in another order: round-off of sum |p|
        assert row[f"momentum_{c}"] == pytest.approx(p.sum(), rel=1e-12, abs=1e-13 * np.abs(p).sum() + 1e-300)
    assert row["kinetic_energy"] == pytest.approx(0.5 * (rho * (u * u).sum(0)).sum(), rel=1e-12, abs=1e-300)
    assert row["max_speed"] == pytest.approx(np.sqrt((u * u).sum(0).max()), rel=1e-12, abs=1e-300)
    assert row["min_rho"] == pytest.approx(rho.min(), rel=1e-14) and row["nonfinite"] == 0


@pytest.mark.parametrize("setup, extra, fields", [
    ("shear-wave", ["--velocity-set", "d3q27"], _shear_wave),
    ("taylor-green", [], None),
    ("channel", ["--wall-axes", "yz", "--gravity", "1e-4,0,0"], _at_rest),
    ("rayleigh-taylor", ["--velocity-set", "d3q39", "--gravity", "0,0,-1e-3", "--amplitude", "1"],
     lambda: rayleigh_taylor3d(*SHAPE, gravity=(0, 0, -1e-3), amplitude=1.0)),
])
def test_each_setup_runs_from_the_cli_and_its_fields_are_simulation3d_s(setup, extra, fields, tmp_path):
    out = tmp_path / setup
    steps = 12
    r = _cli("run", setup, "--lx", SHAPE[0], "--ly", SHAPE[1], "--lz", SHAPE[2], "--steps", steps, "--out", out,
             "--pictures", "none", "--no-progress", *extra)
    assert r.exit_code == 0, r.output
    cfg = _config(out)
    assert cfg.shape == SHAPE and cfg.setup == setup
    start = read_field_file(out / "fields" / "step-000000000.h5")
    if fields is None:                                   # the 3D Taylor-Green vortex, U = 0.05
        x, y, z = np.meshgrid(*(2 * np.pi * (np.arange(n) + 0.5) / n for n in SHAPE), indexing="ij")
        assert np.max(np.abs(start["ux"] - 0.05 * np.sin(x) * np.cos(y) * np.cos(z))) < 1e-15
        assert np.max(np.abs(start["uy"] + 0.05 * np.cos(x) * np.sin(y) * np.cos(z))) < 1e-15
        from lbgen.run.setups import taylor_green3d
        fields = taylor_green3d(*SHAPE, amplitude=0.05)
    else:
        fields = fields()
        assert all(np.max(np.abs(start[k] - fields[k])) < 1e-14 for k in fields)
    want = _by_hand(cfg, fields, steps)
    h5 = read_field_file(out / "fields" / f"step-{steps:09d}.h5")
    vti = read_vti(out / "vtk" / f"step-{steps:09d}.vti")
    for k in NAMES:
        assert h5[k].shape == SHAPE and np.array_equal(h5[k], want[k]), k
        assert vti[k].shape == SHAPE and np.array_equal(vti[k], want[k]), k
    assert np.array_equal(vti["velocity"], np.stack([want["ux"], want["uy"], want["uz"]], axis=-1))
    assert np.max(np.abs(want["ux"] - fields["ux"]) + np.abs(want["uy"] - fields["uy"])) > 1e-7   # it moved
    _check_series_against_fields(out, steps)


def test_cavity_writes_three_mid_plane_pictures_per_quantity_and_h5_attributes(tmp_path):
    out = tmp_path / "cavity"
    r = _cli("run", "lid-driven-cavity", "--lx", SHAPE[0], "--ly", SHAPE[1], "--lz", SHAPE[2], "--steps", 10,
             "--out", out, "--pictures", "speed", "--lid", "z-high=0.08,0.02,0", "--no-progress")
    assert r.exit_code == 0, r.output
    cfg = _config(out)
    assert cfg.wall_axes == "xyz" and cfg.lid == {"z-high": (0.08, 0.02, 0.0)}
    # the header: the lid's speed in sites/step, Re = U L / nu with L = LZ (the lid's axis), Ma = U / c_s
    U, nu = math.hypot(0.08, 0.02) / R, (cfg.tau - 0.5) / 3
    assert f"lid speed U = {U:.4g} sites/step" in r.output and f"L = {SHAPE[2]} sites" in r.output
    assert f"Re = {U * SHAPE[2] / nu:.4g} (= U L/nu)" in r.output and f"Ma = {U * math.sqrt(3):.4g}" in r.output
    transit = SHAPE[2] / U
    assert f"lid transit L/U = {transit:.4g} steps" in r.output
    vti = read_vti(out / "vtk" / "step-000000010.vti")           # the time in lid transits beside the step
    assert vti["step"].tolist() == [10] and vti["time/L/U_lid"][0] == pytest.approx(10 / transit)
    want = _by_hand(cfg, _at_rest(), 10)
    h5 = read_field_file(out / "fields" / "step-000000010.h5")
    assert all(np.array_equal(h5[k], want[k]) for k in NAMES)
    import h5py
    with h5py.File(out / "fields" / "step-000000010.h5") as f:
        assert list(f.attrs["shape"]) == list(SHAPE) and f.attrs["step"] == 10
        assert f.attrs["physics_nu"] == pytest.approx((cfg.tau - 0.5) / 3)
        assert f.attrs["physics_Re"] == pytest.approx(math.hypot(0.08, 0.02) / R * SHAPE[2] / f.attrs["physics_nu"])
    for name, normal, (a, b) in MID_PLANES:
        plane = (SHAPE[a], SHAPE[b])
        w, h, _, _ = figure_layout(plane)
        dpi = default_dpi(plane)
        for step in (0, 10):
            size = Image.open(out / "pictures" / f"speed-{name}-{step:09d}.png").size
            assert abs(size[0] - w * dpi) <= 1 and abs(size[1] - h * dpi) <= 1, (name, size)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["colour_limits"]["speed"] == [0.0, pytest.approx(math.hypot(0.08, 0.02))]   # the lid's speed
    assert manifest["status"] == "finished" and manifest["samples"] >= 2
    _check_series_against_fields(out, 10)
    r = _cli("plot", out, "-o", tmp_path / "p.png")       # 2D drawing tools refuse a 3D folder
    assert r.exit_code != 0 and "Traceback" not in r.output and not (tmp_path / "p.png").exists()


def test_resume_is_bit_identical_to_an_uninterrupted_run(tmp_path):
    common = ["channel", "--lx", 8, "--ly", 10, "--lz", 4, "--out"]
    opts = ["--checkpoint-every", 30, "--output-every", 30, "--series-every", 10, "--pictures", "none",
            "--no-progress"]
    assert _cli("run", *common, tmp_path / "a", "--steps", 60, *opts).exit_code == 0
    assert _cli("run", *common, tmp_path / "b", "--steps", 30, *opts).exit_code == 0
    r = _cli("run", "--resume", tmp_path / "b", "--steps", 60, "--no-progress")
    assert r.exit_code == 0, r.output
    a, b = (read_field_file(tmp_path / d / "fields" / "step-000000060.h5") for d in "ab")
    assert all(np.array_equal(a[k], b[k]) for k in NAMES) and np.abs(a["ux"]).max() > 0
    assert (tmp_path / "a" / "series.csv").read_bytes() == (tmp_path / "b" / "series.csv").read_bytes()
    assert (tmp_path / "a" / "vtk" / "fields.pvd").read_bytes() == (tmp_path / "b" / "vtk" / "fields.pvd").read_bytes()


def test_geometry_mask_is_used_and_a_bad_one_is_refused_before_any_file(tmp_path):
    shape = (8, 10, 4)
    mask = np.zeros(shape, bool)
    mask[3:5, 4:6, :] = True                              # a square post across the channel
    good = tmp_path / "post.npy"
    np.save(good, mask)
    out = tmp_path / "post"
    r = _cli("run", "channel", "--lx", 8, "--ly", 10, "--lz", 4, "--steps", 20, "--geometry", good, "--out", out,
             "--pictures", "none", "--gravity", "1e-4,0,0", "--checkpoint-every", 20, "--no-progress")
    assert r.exit_code == 0, r.output
    f = read_field_file(out / "fields" / "step-000000020.h5")
    assert all(np.all(f[k][mask] == 0) for k in NAMES)     # solid voxels read 0
    want = _by_hand(_config(out), _at_rest(shape), 20, mask=mask)
    assert all(np.array_equal(f[k], want[k]) for k in NAMES)
    _check_series_against_fields(out, 20, mask)
    moved = mask.copy()
    moved[0, 0, 0] = True
    np.save(good, moved)                                  # the file changed under the run: its resume is refused
    r = _cli("run", "--resume", out, "--steps", 30, "--no-progress")
    assert r.exit_code != 0 and "Traceback" not in r.output and "another voxel mask" in " ".join(r.output.split())
    assert not (out / "fields" / "step-000000030.h5").exists()
    for name, bad in (("shape", np.zeros((8, 10, 5), bool)), ("dtype", np.zeros(shape, np.float64))):
        path = tmp_path / f"{name}.npy"
        np.save(path, bad)
        target = tmp_path / f"bad-{name}"
        r = _cli("run", "channel", "--lx", 8, "--ly", 10, "--lz", 4, "--steps", 5, "--geometry", path,
                 "--out", target, "--no-progress")
        assert r.exit_code != 0 and "Traceback" not in r.output
        assert not target.exists(), "nothing may be written"
        words = " ".join(r.output.split())
        assert str(path) in words
        assert ("(8, 10, 5)" in words and "(8, 10, 4)" in words) if name == "shape" else "float64" in words


def test_channel_profile_is_the_poiseuille_parabola(tmp_path):
    out = tmp_path / "channel"
    H, g, tau = 12, 3e-5, 1.0
    r = _cli("run", "channel", "--lx", 2, "--ly", H, "--lz", 4, "--steps", 1500, "--tau", tau, "--gravity",
             f"{g},0,0", "--out", out, "--pictures", "none", "--no-progress")
    assert r.exit_code == 0, r.output
    f = read_field_file(out / "fields" / "step-000001500.h5")
    u = f["ux"].mean(axis=(0, 2)) / R                     # lattice units
    nu, a = (tau - 0.5) / 3, g / R ** 2                    # the force per unit mass per step, lattice units
    s = np.arange(H) + 0.5 - H / 2                          # walls half a site outside the first and last rows
    exact = a / (2 * nu) * (H * H / 4 - s * s)
    assert np.sqrt(np.mean((u - exact) ** 2)) / np.sqrt(np.mean(exact ** 2)) < 1e-2
    assert np.abs(f["uy"]).max() < 1e-12 * np.abs(f["ux"]).max() and np.abs(f["uz"]).max() < 1e-12 * u.max()


@pytest.mark.parametrize("args, option", [
    (["rayleigh-taylor", "--velocity-set", "d3q19"], "rayleigh-taylor"),
    (["channel", "--hetero", "opencl"], "--hetero"),
    (["channel", "--walls"], "--walls"),
    (["channel", "--time-block", "4", "--backend", "opencl"], "--time-block"),
    (["channel", "--time-block", "2", "--no-fused"], "--time-block"),
    (["channel", "--gravity", "1e-5,0"], "gravity"),
    (["shear-wave", "--velocity-set", "d2q9", "--lz", "8"], "--lz"),
    (["taylor-green", "--velocity-set", "d2q9"], "taylor-green"),        # the 2D channel runs: test_setups2d.py
    (["lid-driven-cavity", "--wall-axes", "y"], "z-high"),
    (["channel", "--lx", 4000, "--ly", 4000, "--lz", 4000], "--lz"),     # the memory estimate: D = 3, Q = 19
    (["uniform-noise", "--velocity-set", "d3q19"], "uniform-noise"),
    (["rayleigh-taylor", "--velocity-set", "d3q39", "--t-bottom", 1.1], "--t-bottom"),   # without --walls
    (["taylor-green", "--walls"], "--walls"),          # 3D thermal walls: the thermal sets only (d3q19 here)
    (["lid-driven-cavity", "--amplitude", "0.1"], "--amplitude"),
    (["channel", "--window", "full"], "--window"),
    (["channel", "--pictures-every", 5], "--pictures-every"),
    (["channel", "--vl", "auto"], "--vl auto"),
    (["channel", "--t-bottom", 1.1], "--t-bottom"),
    (["channel", "--wall-scheme", "reference"], "--wall-scheme"),
    (["channel", "--device", "0:0"], "--device"),
    (["shear-wave", "--walls", "--wall-axes", "y"], "--wall-axes"),      # 2D takes --wall-axes, not beside --walls
    (["shear-wave", "--walls", "--geometry", "body.npy"], "--geometry"),   # 2D masks: not beside --walls
    (["shear-wave", "--lid", "z-high=0.1,0,0"], "--lid"),
])
def test_options_that_do_not_apply_in_3d_are_refused_before_any_work(args, option, tmp_path):
    out = tmp_path / "refused"
    r = _cli("run", *args, "--out", out, "--no-progress")
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert option in r.output and not out.exists()


@pytest.mark.parametrize("args, message", [
    (["channel", "--ranks-grid", "2x1x1"], "--ranks-grid 2x1x1: a grid of 2 ranks needs mpiexec -n 2"),
    (["channel", "--ranks-grid", "1x1"], "--ranks-grid '1x1': give 'auto' or PXxPYxPZ"),
    (["shear-wave", "--lx", 8, "--ly", 8, "--ranks-grid", "1x1x2"], "--ranks-grid 1x1x2: a 2D run takes PXxPY"),
])
def test_a_ranks_grid_of_the_wrong_form_is_refused_before_any_work(args, message, tmp_path):
    """A 3D grid needs mpiexec and three counts; a 2D run refuses three (tests/parallel/test_cli3d.py
    launches the 3D grids)."""
    out = tmp_path / "refused"
    r = _cli("run", *args, "--steps", 2, "--out", out, "--no-progress")
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert message in r.output and not out.exists()


def test_a_3d_opencl_run_takes_the_device_it_is_given(tmp_path):
    """--device in a 3D OpenCL run picks the device (recorded in the manifest with the config);
    a device that is not there is refused naming the devices, before any file is written."""
    pytest.importorskip("pyopencl")
    from lbgen.backends.opencl import devices
    found = devices()
    if not found:
        pytest.skip("no OpenCL device here")
    p, d, _platform, device = found[-1]
    out = tmp_path / "cl"
    r = _cli("run", "taylor-green", "--velocity-set", "d3q19", "--lx", 8, "--ly", 8, "--lz", 16, "--steps", 2,
             "--backend", "opencl", "--device", f"{p}:{d}", "--out", out, "--no-progress")
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["device"]["device"] == device.name.strip() and manifest["config"]["device"] == f"{p}:{d}"
    bad = tmp_path / "bad"
    r = _cli("run", "taylor-green", "--velocity-set", "d3q19", "--lx", 8, "--ly", 8, "--lz", 16, "--steps", 2,
             "--backend", "opencl", "--device", "99:0", "--out", bad, "--no-progress")
    assert r.exit_code != 0 and "no device 99:0" in r.output and "Traceback" not in r.output
    assert not bad.exists()


def test_a_3d_run_saves_its_final_fields_and_another_starts_from_them(tmp_path):
    """--save in 3D writes rho, ux, uy, uz, T of the final state (the final h5 output's own
    values) and the lattice size; --init with that file starts a 3D run on the file's lattice
    from those fields (the run's step-0 output equals them to round-off)."""
    import h5py
    saved = tmp_path / "final.npz"
    r = _cli("run", "taylor-green", "--velocity-set", "d3q19", "--lx", 8, "--ly", 6, "--lz", 16, "--steps", 10,
             "--save", saved, "--out", tmp_path / "a", "--no-progress")
    assert r.exit_code == 0, r.output
    with np.load(saved) as data, h5py.File(tmp_path / "a" / "fields" / "step-000000010.h5") as h5:
        assert {"rho", "ux", "uy", "uz", "T"} <= set(data) and (int(data["lz"]), int(data["steps"])) == (16, 10)
        assert all(np.array_equal(data[k], h5[k][...]) for k in ("rho", "ux", "uy", "uz", "T"))
        assert np.abs(data["ux"]).max() > 1e-3
        saved_fields = {k: data[k] for k in ("rho", "ux", "uy", "uz")}
    r = _cli("run", "--init", saved, "--velocity-set", "d3q19", "--steps", 4, "--out", tmp_path / "b",
             "--no-progress")
    assert r.exit_code == 0, r.output
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert (manifest["config"]["lx"], manifest["config"]["ly"], manifest["config"]["lz"]) == (8, 6, 16)
    with h5py.File(tmp_path / "b" / "fields" / "step-000000000.h5") as h5:
        for k, a in saved_fields.items():
            assert np.abs(h5[k][...] - a).max() < 1e-14, k


def _fields3d(path, shape=(4, 5, 8), **change):
    arrays = {"rho": np.ones(shape), "ux": np.zeros(shape), "uy": np.zeros(shape), "uz": np.zeros(shape),
              "T": np.ones(shape)}
    arrays.update(change)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("change, extra, message", [
    ({"uz": None}, [], "missing arrays ['uz']"),                                  # a 2D file for a 3D run
    ({k: np.ones((4, 5)) for k in ("rho", "ux", "uy", "uz", "T")}, [], "one 3-D shape (LX, LY, LZ)"),
    ({"rho": np.where(np.arange(8) == 5, np.nan, 1.0) * np.ones((4, 5, 8))}, [], "(first at x=0, y=0, z=5)"),
    ({"T": -np.ones((4, 5, 8))}, [], "'T' must be positive everywhere; -1 at x=0, y=0, z=0"),
    ({}, ["--lz", 8], "--lz"),                                                    # the size comes from the file
])
def test_bad_3d_init_files_are_refused_naming_the_file_and_array(tmp_path, change, extra, message):
    out = tmp_path / "run"
    r = _cli("run", "--init", _fields3d(tmp_path / "f.npz", **change), "--velocity-set", "d3q19", *extra,
             "--steps", 2, "--out", out, "--no-progress")
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output, r.output
    assert not out.exists()
