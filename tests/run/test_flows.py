"""The flows around bodies of ``lbgen run`` (lbgen.run.flows): ``cylinder`` (2D) and ``cylinder3d``
(3D), the DFG benchmark of M. Schaefer & S. Turek, "Benchmark computations of laminar flow around a
cylinder", Notes on Numerical Fluid Mechanics 52, 547-566 (Vieweg 1996), and ``sphere``.

Case 2D-1 (Re = 20, steady): C_D in [5.57, 5.59], C_L in [0.0104, 0.0110], dp in [0.1172, 0.1176]
(their Table 4).  `lbgen run cylinder` runs TRT (Lambda = 3/16), Bouzidi walls, Mach 0.17 at the
inflow's centre, and takes the free stream at the body as the coefficients' reference (the weakly
compressible lattice's O(Ma^2) offset): at 20 cells per diameter C_D is 0.8 % above the interval,
dp 0.1 % above it, C_L 13 % below it (docs/physics.md has the figures); the slow bounds below are
these errors with a margin, stated."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from lbgen.run.flows import FLOWS, INFLOW_SPEED, PUBLISHED, measure
from tests.helpers import cli, refused


def _series(folder):
    with open(folder / "series.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _number(output: str, key: str) -> float:
    line = next(line for line in output.splitlines() if line.strip().startswith(key + " "))
    return float(line.split()[1])


def test_the_cylinder_runs_end_to_end(tmp_path):
    """`lbgen run cylinder`: the DFG lattice from --cells-per-diameter, tau from --re, the body's force
    and C_D, C_L in the series, the solid sites in the .vti and grey in the pictures, the summary
    beside the published intervals."""
    out = tmp_path / "run"
    r = cli("run", "cylinder", "--cells-per-diameter", 10, "--steps", 60, "--series-every", 20, "--output-every", 60,
            "--out", out, "--threads", 1)
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "manifest.json").read_text())
    config = manifest["config"]
    assert (config["lx"], config["ly"]) == (220, 41) and config["re"] == 20 and config["cells_per_diameter"] == 10
    # tau = 1/2 + 3 U_mean D / Re with the inflow's centre at 0.1 sites/step (mean 2/3 of it)
    assert config["parameters"]["tau"] == pytest.approx(0.5 + 3 * (0.2 / 3) * 10 / 20)
    assert config["body_bc"] == "bouzidi" and manifest["bodies"]["body_bc"] == "bouzidi"
    rows = _series(out)
    assert [int(row["step"]) for row in rows] == [0, 20, 40, 60]
    # the start carries the expected steady pressure: the channel's Poiseuille drop and the body's
    # (12 nu U L / H^2 and C_D U^2 D / 2 H, lattice units), rho = 1 + 3 p, 2 % at the inlet
    p = FLOWS["cylinder"].start_pressure(10, 0.1, 20.0)
    nu, U = 0.1 / 3, 0.2 / 3
    assert p[0] == pytest.approx(12 * nu * U / 41 ** 2 * 219.5 + 5.58 * U * U * 10 / (2 * 41), rel=2e-3)
    assert float(rows[0]["mass"]) == pytest.approx(41 * (1 + 3 * p).sum() - 80 * (1 + 3 * p[15:25]).mean(), rel=1e-3)
    assert "the free stream at the body, rho 1.0" in r.output
    assert float(rows[-1]["force_x"]) > 0
    for row in rows[1:]:      # C = 2 F / (rho U^2 D): lattice force F_model / r^2, U the mean inflow 0.2/3
        assert float(row["c_d"]) == pytest.approx(2 * float(row["force_x"]) / 3 / ((0.2 / 3) ** 2 * 10), rel=1e-12)
        assert float(row["c_l"]) == pytest.approx(2 * float(row["force_y"]) / 3 / ((0.2 / 3) ** 2 * 10), rel=1e-12)
    assert "Schaefer & Turek 1996, case 2D-1" in r.output
    for key, (lo, hi) in PUBLISHED["2D-1"].items():
        assert f"published [{lo:g}, {hi:g}]" in r.output
        assert np.isfinite(_number(r.output, key))
    from lbgen.output.fields import read_vti
    vti = read_vti(out / "vtk" / "step-000000060.vti")
    solid = vti["solid"].reshape(220, 41) if vti["solid"].ndim != 2 else vti["solid"]
    expected = FLOWS["cylinder"].bodies(10).labels > 0
    assert np.array_equal(solid != 0, expected) and expected.sum() == 80
    from PIL import Image
    png = np.asarray(Image.open(out / "pictures" / "vorticity-000000060.png").convert("RGB"))
    grey = np.all(png == png[..., :1], axis=-1) & (np.abs(png[..., 0].astype(int) - 153) <= 1)
    assert grey.sum() > 50                                    # the body, drawn grey (NaN)


@pytest.mark.parametrize("name, shape, words", [
    ("cylinder3d", (100, 16, 16), ["case 3D-1Z", "published [6.05, 6.25]", "published [0.165, 0.175]"]),
    ("sphere", (48, 20, 20), ["sphere at Re = 50", "Schiller & Naumann correlation 1.538"]),
])
def test_the_3d_flows_run_end_to_end(tmp_path, name, shape, words):
    """`lbgen run cylinder3d` (the DFG 3D-1Z duct) and `sphere` (free-slip box) at 4 cells per
    diameter: their lattices, the body grey in the mid-plane slices, the summary's reference values."""
    out = tmp_path / "run"
    extra = ["--re", 50] if name == "sphere" else []
    r = cli("run", name, "--cells-per-diameter", 4, *extra, "--steps", 10, "--out", out, "--threads", 1)
    assert r.exit_code == 0, r.output
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert (config["lx"], config["ly"], config["lz"]) == shape
    for w in words:
        assert w in r.output
    from PIL import Image
    png = np.asarray(Image.open(out / "pictures" / "speed-xy-000000010.png").convert("RGB"))
    grey = np.all(png == png[..., :1], axis=-1) & (np.abs(png[..., 0].astype(int) - 153) <= 1)
    assert grey.sum() > 50


@pytest.mark.slow
def test_dfg_2d1_at_the_default_resolution(tmp_path):
    """Schaefer & Turek 1996, 2D-1 (Re = 20), `lbgen run cylinder --re 20` at its default 20 cells per
    diameter, 16000 steps (4 minutes on a loaded core): dp within 0.5 % of the published [0.1172,
    0.1176], C_D within 1.5 % above [5.57, 5.59], C_L within 20 % below [0.0104, 0.0110] (measured:
    0.1177, 5.634, 0.0090; the lattice's resolution error, 2.2 % on C_D at 10 cells, 1.0 % at 20)."""
    out = tmp_path / "run"
    r = cli("run", "cylinder", "--re", 20, "--steps", 16000, "--out", out, "--pictures", "none",
            "--output-every", 16000, "--threads", 1)
    assert r.exit_code == 0, r.output
    published = PUBLISHED["2D-1"]
    lo, hi = published["dp"]
    assert lo * 0.995 <= _number(r.output, "dp") <= hi * 1.005
    lo, hi = published["C_D"]
    assert lo <= _number(r.output, "C_D") <= hi * 1.015
    lo, hi = published["C_L"]
    assert lo * 0.8 <= _number(r.output, "C_L") <= hi


@pytest.mark.slow
def test_the_free_stream_takes_out_the_mach_number():
    """2D-1 at 10 cells per diameter, TRT, Mach 0.17 and 0.087 at the inflow's centre (8000 and 16000
    steps): with rho = 1 and the mean inflow as reference C_D falls by 2.7 % between them (the
    lattice's compressibility, O(Ma^2)); with the free stream at the body by less than 0.3 %
    (measured 0.13 %), and dp with it (Schaefer & Turek 1996, 2D-1: the incompressible C_D 5.58)."""
    nominal, free = [], []
    for u, steps in ((0.1, 8000), (0.05, 16000)):
        history, fields, flow, cfg = _dfg_run(10, "bouzidi", steps, u, "trt")
        nominal.append(measure(flow, cfg, history, fields["rho"]))
        free.append(measure(flow, cfg, history, fields["rho"], fields["ux"]))
    assert nominal[0]["C_D"] / nominal[1]["C_D"] - 1 > 0.02
    assert abs(free[0]["C_D"] / free[1]["C_D"] - 1) < 0.003
    assert abs(free[0]["dp"] / free[1]["dp"] - 1) < 0.006 < nominal[0]["dp"] / nominal[1]["dp"] - 1
    assert free[0]["rho_inf"] > 1.01 > free[1]["rho_inf"] > 1.0


@pytest.mark.slow
def test_dfg_3d1z_at_four_cells_per_diameter_to_steady_state(tmp_path):
    """Schaefer & Turek 1996, 3D-1Z (Re = 20; their Table 3D-1Z: C_D in [6.05, 6.25], dp in [0.165,
    0.175]), `lbgen run cylinder3d --cells-per-diameter 4 --steady 2e-4` (TRT Lambda = 3/16, Bouzidi
    walls, the free stream as reference; the program of test_the_3d_flows_run_end_to_end): the run
    stops at steady state (after three periods of the duct's sound, 2078 steps; measured: about
    3600, before its 6000).  Measured C_D (docs/physics.md, the 3D-1Z table): 6.343 at 4 cells, 6.279
    at 6, 6.294 at 8, 6.262 at 10 (1.5, 0.5, 0.7, 0.2 % above the interval); the duct's H = 4.1 D
    rounds to 16, 25, 33 sites at 4, 6, 8 cells (-2.4, +1.6, +0.6 %), so the ladder is no clean
    convergence (no Richardson extrapolation).  So the bound here is 3 % above the interval; dp
    (measured 0.1690) inside within 1 %.  At 4 cells the cylinder's centre (0.2 / h - 1/2 = 7.5 sites)
    is the duct's mid-line (LY = 16): the lift vanishes by symmetry, to round-off."""
    out = tmp_path / "run"
    r = cli("run", "cylinder3d", "--cells-per-diameter", 4, "--steps", 6000, "--steady", 2e-4, "--series-every", 25,
            "--out", out, "--pictures", "none", "--output-every", 6000, "--threads", 1)
    assert r.exit_code == 0, r.output
    steps = [int(row["step"]) for row in _series(out)]
    assert 3 * 4 * 100 * 3 ** 0.5 < steps[-1] < 6000 and "steady at step" in r.output
    published = PUBLISHED["3D-1Z"]
    lo, hi = published["C_D"]
    assert lo <= _number(r.output, "C_D") <= hi * 1.03
    lo, hi = published["dp"]
    assert lo * 0.99 <= _number(r.output, "dp") <= hi * 1.01
    assert abs(_number(r.output, "C_L")) < 1e-9


@pytest.mark.parametrize("args, words", [
    (["cylinder", "--re", 2000, "--cells-per-diameter", 10], ["--re 2000", "below the stable 0.505",
                                                             "allowed here Re <="]),
    (["cylinder", "--tau", 0.7], ["--tau 0.7", "--re sets tau"]),
    (["cylinder", "--lx", 100], ["--lx 100", "--cells-per-diameter sets the lattice"]),
    (["shear-wave", "--re", 20], ["--re has no effect", "flows around bodies"]),
    (["cylinder", "--inlet-speed", 1.2], ["Mach"]),
    (["shear-wave", "--steady", 0.001], ["--steady", "flows around bodies"]),
    (["cylinder", "--steady", 0], ["steady=0", "must be > 0"]),
])
def test_bad_flow_options_are_refused_before_any_work(tmp_path, args, words):
    out = tmp_path / "run"
    r = cli("run", *args, "--steps", 5, "--out", out)
    refused(r, *words)
    assert not out.exists()


def test_a_blocked_channel_is_refused_before_any_work(tmp_path):
    """A wall of solid sites across the channel: the flood fill from the inlet never reaches the outlet."""
    mask = np.zeros((32, 16), np.uint8)
    mask[12, :] = 1
    path = tmp_path / "wall.npy"
    np.save(path, mask)
    out = tmp_path / "run"
    args = ["run", "--velocity-set", "d2q9", "--lx", 32, "--ly", 16, "--wall-axes", "y", "--inlet", "x-low",
            "--outlet", "x-high", "--steps", 5, "--out", out]
    refused(cli(*args, "--geometry", path), "block the inlet x-low from the outlet x-high", "no fluid path",
            "reaches 192 of the 496 fluid sites")
    assert not out.exists()
    mask[12, 7] = 0                                           # one gap: a path
    np.save(path, mask)
    r = cli(*args, "--geometry", path, "--pictures", "none")
    assert r.exit_code == 0, r.output


def test_an_stl_wind_tunnel_runs_end_to_end(tmp_path):
    """`lbgen run --geometry model.stl --inlet x-low --outlet x-high`: a user's own shape (a box
    written by trimesh) in a 3D duct; the drag pushes it downstream; the default start (the shear
    wave u_y = A sin(2 pi x / LX)) is symmetric in z, and so is the force: nil across z."""
    trimesh = pytest.importorskip("trimesh")
    pytest.importorskip("rtree")
    stl = tmp_path / "model.stl"
    trimesh.creation.box(extents=(1.0, 1.0, 1.0)).export(stl)
    out = tmp_path / "run"
    r = cli("run", "--velocity-set", "d3q19", "--lx", 24, "--ly", 12, "--lz", 12, "--wall-axes", "yz",
            "--inlet", "x-low", "--inlet-profile", "parabolic", "--inlet-speed", 0.1, "--outlet", "x-high",
            "--geometry", stl, "--stl-scale", 4, "--stl-offset", "8.3,5.5,5.5", "--body-bc", "bouzidi",
            "--steps", 40, "--out", out, "--pictures", "none")
    assert r.exit_code == 0, r.output
    fx, fy, fz = json.loads((out / "manifest.json").read_text())["bodies"]["forces"]["model"]
    assert fx > 0 and abs(fz) < 1e-9 * fx and abs(fy) > 1e-3 * fx
    assert "mass flux out through the open faces" in r.output


def test_measure_reports_a_strouhal_number_only_for_an_oscillating_lift():
    """C_L = 0.01 + 0.5 sin(2 pi St U t / D) with St = 0.3 gives St back; a lift ringing at 1e-3 none."""
    from types import SimpleNamespace
    flow = FLOWS["cylinder"]
    cfg = SimpleNamespace(velocity_set="d2q9", cells_per_diameter=10, inlet_speed=0.1 * 3 ** 0.5, re=100.0)
    D, A, U = flow.reference(10, 0.1)
    t = np.arange(0, 20000, 10)
    for amplitude, expect in ((0.5, 0.3), (1e-3, None)):
        lift = 0.01 + amplitude * np.sin(2 * np.pi * 0.3 * U * t / D)
        force = [np.array([3.0, c]) * 0.5 * U * U * A * 3 for c in lift]      # model units: r^2 x lattice
        numbers = measure(flow, cfg, list(zip(t, force)), None)
        if expect is None:
            assert "St" not in numbers
        else:
            assert numbers["St"] == pytest.approx(expect, rel=2e-3)
            assert numbers["C_L_max"] == pytest.approx(0.51, rel=5e-3) and numbers["C_D"] == pytest.approx(3.0)


def test_the_steady_measure_sees_drift_not_the_channels_sound():
    """--steady's measure (lbgen.run.flows.drag_change) on 3D-1Z's lattice at 4 cells per diameter
    (window 4 LX / c_s = 692.8 steps): a drag ringing by 1 % at the channel's quarter-wave period
    changes by nothing between two windows' means; a drift of 1 % per window by 1 %; a history
    shorter than three windows gives None (a pair of windows ending anywhere in the last one must agree)."""
    from types import SimpleNamespace

    from lbgen.run.flows import drag_change, steady_window
    flow, cfg = FLOWS["cylinder3d"], SimpleNamespace(lx=100)
    window = steady_window(flow, cfg)
    assert window == pytest.approx(400 * 3 ** 0.5)
    t = np.arange(0, 3000, 10)
    ringing = 1.0 + 0.01 * np.sin(2 * np.pi * t / window + 0.3)
    drift = 1.0 + 0.01 * t / window

    def history(drag, upto=None):
        return [(int(s), np.array([d, 0.0, 0.0])) for s, d in zip(t, drag) if upto is None or s <= upto]

    assert drag_change(flow, cfg, history(ringing)) < 1e-5
    # the largest change: the pair ending a window before the last sample, the lowest mean
    assert drag_change(flow, cfg, history(drift)) == pytest.approx(0.01 / (1 + 0.01 * (t[-1] - 1.5 * window) / window),
                                                                   rel=1e-3)
    assert drag_change(flow, cfg, history(ringing, upto=2070)) is None
    assert drag_change(flow, cfg, history(ringing, upto=2090)) < 1e-5


#: a developed 2D-2 vortex street (float32 rho, ux, uy, T of 440 x 82): the fields of `lbgen run cylinder --re 100
#: --cells-per-diameter 20 --steps 34000 --save` (about 30 shedding periods from the set-up's start; that run
#: read St 0.3006, C_L,max 1.061, C_D,max 3.516)
DFG_2D2_DEVELOPED = Path(__file__).parent / "data" / "dfg_2d2_developed.npz"


@pytest.mark.slow
def test_dfg_2d2_vortex_street_at_twenty_cells_per_diameter():
    """Schaefer & Turek 1996, 2D-2 (Re = 100, periodic) at 20 cells per diameter on the lattice of `lbgen run
    cylinder --re 100` (TRT, Bouzidi walls, Mach 0.17 at the inflow's centre), 9000 steps (nine shedding
    periods) from a developed street (DFG_2D2_DEVELOPED; the 34000 steps that develop it took 4 minutes of the
    suite's time): St inside the published [0.295, 0.305], C_L,max within 8 % and C_D,max within 10 % of
    theirs (measured with the free stream: St 0.3012, C_L,max 1.055, C_D,max 3.433 -- the coarse lattice:
    tau 0.54; the whole 34000-step run read 0.3006, 1.061, 3.516).  The lift sampled every 10 steps (100 a
    period)."""
    with np.load(DFG_2D2_DEVELOPED) as start:
        history, fields, flow, cfg = _dfg_run(20, "bouzidi", 9000, INFLOW_SPEED, "trt", re=100.0, every=10,
                                              start={k: start[k].astype(float) for k in ("rho", "ux", "uy")})
    found = measure(flow, cfg, history, fields["rho"], fields["ux"])
    published = PUBLISHED["2D-2"]
    lo, hi = published["St"]
    assert lo <= found["St"] <= hi
    for key, tolerance in (("C_L_max", 0.08), ("C_D_max", 0.10)):
        lo, hi = published[key]
        assert lo * (1 - tolerance) <= found[key] <= hi * (1 + tolerance), (key, found)


def _dfg_run(cells: int, scheme: str, steps: int, u: float, collision: str = "bgk", re: float = 20.0,
             every: int = 100, start=None):
    """2D-1 (Re = 20; or ``re``) on the lattice of `lbgen run cylinder` at the inflow's centre speed u (lattice
    units), from the set-up's start or ``start``'s rho, ux, uy (model units): the force history (every
    ``every`` steps), the last fields, the flow and the run's numbers."""
    from types import SimpleNamespace

    import lbgen
    flow = FLOWS["cylinder"]
    r = 3 ** 0.5
    shape, bodies = flow.geometry(cells)
    sim = lbgen.Simulation(*shape, velocity_set="d2q9", bodies=bodies, body_bc=scheme, walls="y", collision=collision,
                           inlet={"x-low": ("parabolic", u * r)}, outlet={"x-high": 1.0},
                           tau=flow.tau(re, cells, u), threads=1)
    f = start or flow.fields(cells, u * r, re)
    sim.set_fields(f["rho"] if collision != "bgk" or start else 1.0, f["ux"], f["uy"])
    history = []
    for _ in range(steps // every):
        sim.step(every)
        history.append((sim.time_step, sim.forces()["cylinder"]))
    cfg = SimpleNamespace(velocity_set="d2q9", cells_per_diameter=cells, inlet_speed=u * r, re=re)
    return history, sim.fields(), flow, cfg


def _dfg_drag(cells: int, scheme: str, steps: int) -> float:
    """C_D of 2D-1 (Re = 20), BGK from rho = 1, with rho = 1 and the mean inflow speed as reference
    (the walls' own convergence: tau = 0.6, the inflow's centre 0.1 sites/step at 10 cells, 0.05 at
    20: diffusive scaling, Mach ~ 1/cells)."""
    history, fields, flow, cfg = _dfg_run(cells, scheme, steps, 0.1 * 10 / cells)
    return measure(flow, cfg, history, fields["rho"])["C_D"]


@pytest.mark.slow
def test_interpolated_walls_converge_faster_on_the_dfg_cylinder():
    """2D-1 (Schaefer & Turek 1996, C_D in [5.57, 5.59]) at 10 and 20 cells per diameter (6000 and
    16000 steps; 5 minutes): Bouzidi's error falls from 7.3 % to 1.9 % (order 1.9), half-way's from
    10.1 % to 3.6 % (order 1.5); Bouzidi is closer at both resolutions and converges faster."""
    exact = 5.58
    err = {s: [abs(_dfg_drag(n, s, steps) / exact - 1) for n, steps in ((10, 6000), (20, 16000))]
           for s in ("halfway", "bouzidi")}
    order = {s: np.log2(e[0] / e[1]) for s, e in err.items()}
    assert all(b < h for b, h in zip(err["bouzidi"], err["halfway"]))
    assert order["bouzidi"] > order["halfway"] > 1.0 and err["bouzidi"][1] < 0.025
