"""Results a scientist shows: pictures with a fixed colour bar, mathtext labels, units and the
flow's time, a crop window; movies from frames recorded at their own cadence, GIFs with one
palette, a warning for a slide show; series.png with one quantity per panel and log axes."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.output import RunOutput, default_pictures, default_pictures_every, parse_window, window_option
from lbgen.output.fields import OutputFileError
from lbgen.output.folder import MIN_MOVIE_FRAMES, RunResults, movie_fps
from lbgen.output.pictures import (AUTO_TOLERANCE, FRAMES_DIR, FieldPicture, TimeUnit, active_rows, auto_window,
                                   check_time_unit, check_window, colour_limits, drawn_data, field_figure, figure_rgb,
                                   read_frame_file, write_frame_file)
from lbgen.output.records import recorded_files
from lbgen.output.series import PANELS, series_figure, series_panels

LX, LY = 32, 128
DPI = 40
LIMITS = {"T": [0.95, 1.05], "vorticity": [-0.01, 0.01]}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def rt_fields(amplitude: float, lx: int = LX, ly: int = LY) -> dict:
    """A Rayleigh-Taylor-like state: hot (1.05) below, cold (0.95) above an interface at
    ly/2 displaced by *amplitude* sites, a row of vortices of strength ~ amplitude there."""
    x, y = np.meshgrid(np.arange(lx), np.arange(ly), indexing="ij")
    eta = ly / 2 + amplitude * np.sin(2 * np.pi * x / lx)
    T = 1.0 - 0.05 * np.tanh((y - eta) / 2.0)
    bump = np.exp(-((y - ly / 2) / (3.0 + amplitude)) ** 2)
    ux = 1e-3 * amplitude * bump * np.cos(2 * np.pi * x / lx)
    uy = 1e-3 * amplitude * bump * np.sin(2 * np.pi * x / lx)
    return {"rho": 1.0 / T, "ux": ux, "uy": uy, "T": T}


def _bar_block(fig):
    """The pixels of the colour bar: its axes' rows (a few pixels more), every column from its
    left edge to the right edge of the picture (ticks, tick labels, label)."""
    rgb = figure_rgb(fig)
    bbox = fig.axes[1].get_window_extent()
    h = rgb.shape[0]
    top, bottom = int(h - bbox.y1) - 4, int(h - bbox.y0) + 4
    return rgb[max(top, 0):bottom, int(bbox.x0) - 2:]


# --------------------------------------------------------------------------- colour bar
@pytest.mark.parametrize("quantity", ["T", "vorticity", "speed"])
def test_the_colour_bar_is_the_same_in_every_frame(quantity):
    rest = rt_fields(0.0)
    rest["T"] = np.clip(rest["T"], 0.95, 1.05)
    rest["T"][:, 0] = 1.05 + 1e-13                    # round-off beyond the limit at step 0
    wild = rt_fields(12.0)
    wild["T"][3, 60], wild["T"][4, 70] = 1.2, 0.8       # far beyond both limits at a later frame
    wild["ux"] *= 50                                    # vorticity and speed beyond theirs too
    limits = colour_limits([quantity], rest, gravity=(0, -1e-4), T_range=(0.95, 1.05))[quantity]
    assert np.abs(drawn_data(quantity, wild, limits)).max() > max(abs(v) for v in limits)
    blocks = [_bar_block(field_figure(quantity, f, limits=limits, step=s, time=s / 1.2, dpi=DPI))
              for s, f in ((0, rest), (8000, wild))]
    assert blocks[0].shape == blocks[1].shape
    assert np.array_equal(blocks[0], blocks[1])         # bar, arrows, ticks and label: identical
    assert len(np.unique(blocks[0].reshape(-1, 3), axis=0)) > 50      # and it is a colour bar
    # through a movie's FieldPicture too, in a window
    picture = FieldPicture(quantity, (LX, LY), limits=limits, window=((0, LX), (40, 90)), dpi=DPI)
    first = _bar_block(picture.draw(drawn_data(quantity, rest, limits), 0, 0.0))
    again = _bar_block(picture.draw(drawn_data(quantity, wild, limits), 8000, 6683.0))
    assert np.array_equal(first, again)


def test_round_off_beyond_a_colour_limit_is_drawn_at_the_limit():
    fields = rt_fields(0.0)
    fields["T"][:, 0] = 1.05 + 1e-13
    fields["T"][:, 1] = 1.05 + 1e-3                     # a real excess stays
    drawn = drawn_data("T", fields, (0.95, 1.05))
    assert (drawn[:, 0] == 1.05).all() and (drawn[:, 1] > 1.05).all()


# --------------------------------------------------------------------------- labels, units, time
def test_labels_are_mathtext_with_units():
    fields = rt_fields(4.0)
    expected = {"vorticity": (r"$\omega = \partial_x u_y - \partial_y u_x$", "model units"),
                "T": (r"$T$", "units of the reference $T = 1$"), "rho": (r"$\rho$", r"units of the reference $\rho = 1$")}
    for quantity, (symbol, unit) in expected.items():
        fig = field_figure(quantity, fields, dpi=DPI)
        ax, cax = fig.axes
        assert symbol in cax.get_ylabel() and f"({unit}" in cax.get_ylabel(), quantity
        assert "lattice units" not in cax.get_ylabel()
        assert ax.get_xlabel() == "$x$ (sites)" and ax.get_ylabel() == "$y$ (sites)"
        assert figure_rgb(fig).shape[0] > 100              # mathtext parses and renders


def test_velocities_are_drawn_in_sites_per_step_when_r_is_known():
    """The fields hold model velocities (u/r sites per step); with the velocity set's r a picture
    draws u / r against limits / r and says "sites per step" -- without r it says model units."""
    fields = rt_fields(4.0)
    fields["ux"], fields["uy"] = np.full_like(fields["T"], 0.06), np.zeros_like(fields["T"])
    r = 1.19697977
    fig = field_figure("speed", fields, limits=(0.0, 0.12), dpi=DPI, r=r, arrows=False)
    image = fig.axes[0].get_images()[0]
    assert image.get_clim() == pytest.approx((0.0, 0.12 / r))
    assert np.asarray(image.get_array()).max() == pytest.approx(0.06 / r)
    assert fig.axes[1].get_ylabel().endswith("(sites per step)")
    w = field_figure("vorticity", fields, dpi=DPI, r=r).axes[1].get_ylabel()
    assert w.endswith("(per step)")
    # --clim is given as drawn (sites per step) and kept as model values: the bar shows what was typed
    from lbgen.output.limits import model_limits
    limits = colour_limits(["speed", "T"], fields, overrides={"speed": (0.0, 0.05), "T": (0.9, 1.1)}, r=r)
    assert limits["speed"] == [0.0, pytest.approx(0.05 * r)] and limits["T"] == [0.9, 1.1]
    assert model_limits("vorticity", (-0.01, 0.01), r) == pytest.approx((-0.01 * r, 0.01 * r))
    typed = field_figure("speed", fields, limits=limits["speed"], dpi=DPI, r=r, arrows=False)
    assert typed.axes[0].get_images()[0].get_clim() == pytest.approx((0.0, 0.05))
    plain = field_figure("speed", fields, limits=(0.0, 0.12), dpi=DPI, arrows=False)
    assert plain.axes[0].get_images()[0].get_clim() == pytest.approx((0.0, 0.12))
    assert "model units: $u/r$ sites per step" in plain.axes[1].get_ylabel()


def test_speed_pictures_carry_arrows_of_the_velocitys_direction():
    """A speed picture draws arrows of (ux, uy) over it: a flow along +x gives arrows along +x
    only, a flow along -y arrows along -y; other quantities draw none unless asked."""
    fields = rt_fields(4.0)
    lx, ly = fields["T"].shape
    fields["ux"], fields["uy"] = np.full((lx, ly), 0.02), np.zeros((lx, ly))
    fig = field_figure("speed", fields, limits=(0.0, 0.04), dpi=DPI)
    quiver = next(c for c in fig.axes[0].collections if c.__class__.__name__ == "Quiver")
    assert len(quiver.U) >= 10 and np.allclose(quiver.U, 0.02) and np.allclose(quiver.V, 0.0)
    fields["ux"], fields["uy"] = np.zeros((lx, ly)), np.full((lx, ly), -0.01)
    quiver = next(c for c in field_figure("speed", fields, dpi=DPI).axes[0].collections
                  if c.__class__.__name__ == "Quiver")
    assert np.allclose(quiver.U, 0.0) and np.allclose(quiver.V, -0.01)
    assert not [c for c in field_figure("T", fields, dpi=DPI).axes[0].collections if c.__class__.__name__ == "Quiver"]


def test_title_gives_the_step_and_the_flows_time():
    fields = rt_fields(4.0)
    fig = field_figure("T", fields, step=3000, time=3000 / 1.19697977, dpi=DPI, time_unit=(2000.0, r"$\tau$"))
    title = fig.axes[0].get_title()
    # the time in steps and in the flow's unit -- never the model time t = step / r without its unit
    assert title.splitlines() == ["temperature $T$", r"step 3000 = 1.5 $\tau$"]
    assert figure_rgb(fig).shape[0] > 100
    start = field_figure("T", fields, step=0, time=0.0, dpi=DPI, time_unit=(2000.0, r"$\tau$")).axes[0].get_title()
    assert start.splitlines()[1] == r"step 0 = 0 $\tau$"
    plain = field_figure("T", fields, step=3000, time=2506.3, dpi=DPI).axes[0].get_title()
    assert plain.splitlines()[1] == "step 3000"
    stepless = field_figure("T", fields, time=2506.3, dpi=DPI).axes[0].get_title()
    assert stepless.splitlines()[1] == "$t$ = 2506 model time units (steps / r)"
    assert check_time_unit({"steps": 2000, "label": "τ"}) == TimeUnit(2000.0, "τ")
    for bad in ((0, "τ"), (-1, "τ"), (100, ""), (100, "$\\tau"), ("x", "τ")):
        with pytest.raises(ValueError, match="time unit"):
            check_time_unit(bad)


# --------------------------------------------------------------------------- windows
def test_a_window_crops_the_picture_to_its_sites():
    fields = rt_fields(0.0)
    fields["T"][:] = 1.05                                 # outside the window: the top colour
    fields["T"][8:24, 40:80] = 0.95                       # the window: the bottom colour only
    fig = field_figure("T", fields, limits=(0.95, 1.05), window=((8, 24), (40, 80)), dpi=DPI)
    ax = fig.axes[0]
    assert ax.get_xlim() == (7.5, 23.5) and ax.get_ylim() == (39.5, 79.5)
    bbox = ax.get_window_extent()
    assert bbox.height / bbox.width == pytest.approx(40 / 16, rel=0.02)     # the window's aspect
    rgb = figure_rgb(fig)
    h = rgb.shape[0]
    inside = rgb[int(h - bbox.y1) + 3:int(h - bbox.y0) - 3, int(bbox.x0) + 3:int(bbox.x1) - 3].reshape(-1, 3)
    assert len(np.unique(inside, axis=0)) == 1             # every pixel a site of the window
    whole = field_figure("T", fields, limits=(0.95, 1.05), dpi=DPI)
    wb = whole.axes[0].get_window_extent()
    wrgb = figure_rgb(whole)
    box = wrgb[int(wrgb.shape[0] - wb.y1) + 3:int(wrgb.shape[0] - wb.y0) - 3, int(wb.x0) + 3:int(wb.x1) - 3]
    assert len(np.unique(box.reshape(-1, 3), axis=0)) == 2  # the lattice: both colours


def test_auto_window_crops_to_the_flow_ignoring_invisible_waves():
    fields = rt_fields(6.0)
    rng = np.random.default_rng(1)
    fields["T"] = fields["T"] + 1e-5 * rng.standard_normal(fields["T"].shape)   # acoustic stir: invisible
    rows = active_rows(fields["T"], (0.95, 1.05))
    assert rows is not None and 40 < rows[0] < 64 < rows[1] < 88
    (x0, x1), (y0, y1) = auto_window(rows, (LX, LY))
    assert (x0, x1) == (0, LX) and y0 < rows[0] and y1 > rows[1] and y1 - y0 < LY / 2
    fig = field_figure("T", fields, limits=(0.95, 1.05), window="auto", dpi=DPI)
    assert fig.axes[0].get_ylim() == (y0 - 0.5, y1 - 0.5)
    # a visible difference anywhere is kept; a uniform field keeps the whole lattice
    fields["T"][:, 5] += 3 * AUTO_TOLERANCE * 0.1
    assert active_rows(fields["T"], (0.95, 1.05))[0] <= 5
    assert active_rows(np.ones((LX, LY)), (0.95, 1.05)) is None
    assert auto_window(None, (LX, LY)) == ((0, LX), (0, LY))
    assert auto_window((2, LY - 2), (LX, LY)) == ((0, LX), (0, LY))      # almost everything: the lattice


@pytest.mark.parametrize("text, value", [
    ("0:64,100:300", ((0, 64), (100, 300))), (":,100:", ((None, None), (100, None))), ("auto", "auto"),
    ("full", ((None, None), (None, None))), ([[0, 8], [None, 20]], ((0, 8), (None, 20))), (None, None)])
def test_parse_window(text, value):
    assert parse_window(text) == value
    assert parse_window(window_option(text)) == value            # the run description's spelling


@pytest.mark.parametrize("text, words", [
    ("1:2:3", "x0:x1,y0:y1"), ("a:b,0:10", "whole number"), ("5:3,0:10", "at least 2 sites"),
    ("-1:4,0:10", ">= 0"), ("0:10", "x0:x1,y0:y1")])
def test_parse_window_refuses_bad_text(text, words):
    with pytest.raises(ValueError, match=words):
        parse_window(text)


def test_a_window_beyond_the_lattice_is_refused():
    assert check_window(parse_window(":,10:"), (LX, LY)) == ((0, LX), (10, LY))
    with pytest.raises(ValueError, match="outside the lattice"):
        check_window(parse_window("0:64,0:10"), (LX, LY))


# --------------------------------------------------------------------------- defaults
def test_default_pictures_and_movie_cadence():
    assert default_pictures("d2q9") == ("vorticity",)            # an isothermal set's T is the constant 1
    assert default_pictures("d2q37") == ("T",) and default_pictures("D2V17") == ("T",)
    k = default_pictures_every(8000, 3)                          # the README's main job
    frames = len(range(0, 8001, k)) + (8000 % k != 0)
    assert k % 3 == 0 and frames >= 100 and frames / movie_fps(frames) >= 5.0
    assert default_pictures_every(50) == 1 and movie_fps(5) == 1.0 and movie_fps(400) == 20.0


# --------------------------------------------------------------------------- frames
def test_a_frame_keeps_the_drawn_values_to_a_fraction_of_a_colour_level(tmp_path):
    fields = rt_fields(5.0)
    drawn = {q: drawn_data(q, fields, LIMITS[q]) for q in LIMITS}
    drawn["T"][3, 7] = math.nan
    path = write_frame_file(tmp_path / "f.npz", 40, 33.4, drawn, LIMITS)
    frame = read_frame_file(path)
    assert frame.step == 40 and frame.time == pytest.approx(33.4) and frame.shape == (LX, LY)
    for q, (lo, hi) in LIMITS.items():
        ok = np.isfinite(drawn[q])
        assert np.abs(frame.data[q][ok] - drawn[q][ok]).max() <= 3 * (hi - lo) / 65534 / 2 * 1.001
        assert frame.rows[q] == active_rows(drawn[q], (lo, hi))
    assert math.isnan(frame.data["T"][3, 7])
    at_rest = write_frame_file(tmp_path / "r.npz", 0, 0.0, {"vorticity": np.zeros((LX, LY))}, LIMITS)
    assert not read_frame_file(at_rest).data["vorticity"].any()     # zero is exactly zero
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(OutputFileError, match="f.npz.*truncated or damaged"):
        read_frame_file(path)


def _frames_run(path, count, window="auto", pictures_at=(0,), fields_every=None):
    """A run folder written through RunOutput as the driver does: a frame every 10 steps, the
    pictures (and field files) at *pictures_at*, finish() at the end."""
    out = RunOutput(path, pictures=("T", "vorticity"), vtk=False, colour_limits=LIMITS, dpi=DPI, window=window,
                    time_unit=(100.0, r"$\tau$"))
    out.write_manifest({"config": {"lx": LX, "ly": LY, "pictures": ["T", "vorticity"], "dpi": DPI},
                        "colour_limits": LIMITS})
    for n in range(count):
        step = 10 * n
        fields = rt_fields(12.0 * n / max(count - 1, 1))
        if step in pictures_at:
            out.write_fields(step, fields, time=step / 1.2)
            out.write_pictures(step, fields, time=step / 1.2)
        else:
            out.write_frame(step, fields, time=step / 1.2)
    out.finish()
    out.write_manifest({"status": "finished"}, update=True)
    return out


def test_frames_make_the_movie_and_pictures_share_the_final_window(tmp_path):
    from PIL import Image
    out = _frames_run(tmp_path / "run", 24, pictures_at=(0, 230))
    run = RunResults(out.run_dir)
    assert list(run.frame_files) == [10 * n for n in range(24)]
    assert all(f"{FRAMES_DIR}/step-{10 * n:09d}.npz" in out.files for n in range(24))
    manifest = json.loads((out.run_dir / "manifest.json").read_text())
    window = manifest["picture_window"]
    (y0, y1) = (int(v) for v in window.split(",")[1].split(":"))
    assert 0 < y0 < LY / 2 < y1 < LY                                   # auto: cropped to the interface
    # the picture of step 0 was drawn when only its flat interface was known; finish() drew it
    # again in the final window, the same pixels as lbgen plot draws now
    pictures = {}
    for step in (0, 230):
        png = out.run_dir / "pictures" / f"T-{step:09d}.png"
        with Image.open(png) as im:
            assert im.text["Window"] == window
            saved = np.asarray(im.convert("RGB"))
        pictures[step] = figure_rgb(run.figure("T", step))
        assert np.array_equal(saved, pictures[step])
    # lbgen movie: one frame per recorded frame, not per saved step
    movie = tmp_path / "T.mp4"
    result = invoke("movie", out.run_dir, "--field", "T", "-o", movie, "--dpi", DPI)
    assert result.exit_code == 0, result.output
    assert "24 frames" in result.output and "run's frames" in result.output and "warning" not in result.stderr
    import imageio.v2 as imageio
    with imageio.get_reader(movie) as reader:
        assert reader.count_frames() == 24
        first = reader.get_data(0)
    assert first.shape[0] / first.shape[1] == pytest.approx(pictures[0].shape[0] / pictures[0].shape[1], rel=0.01)
    # --from fields: one frame per saved step (2 here), with a warning on stderr
    few = tmp_path / "few.mp4"
    result = invoke("movie", out.run_dir, "--field", "T", "-o", few, "--dpi", DPI, "--from", "fields")
    assert result.exit_code == 0, result.output
    assert "warning" in result.stderr and "only 2 frames" in result.stderr and "--pictures-every" in result.stderr
    with imageio.get_reader(few) as reader:
        assert reader.count_frames() == 2


def test_a_gif_has_one_palette_for_every_frame(tmp_path):
    out = _frames_run(tmp_path / "run", MIN_MOVIE_FRAMES)
    gif = tmp_path / "w.gif"
    result = invoke("movie", out.run_dir, "--field", "vorticity", "-o", gif, "--dpi", 30)
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    frames, local_tables, global_table = _gif_blocks(gif.read_bytes())
    assert global_table and frames == MIN_MOVIE_FRAMES and local_tables == 0
    from PIL import Image
    with Image.open(gif) as im:
        assert im.n_frames == MIN_MOVIE_FRAMES
        first = im.getpalette()
        for k in range(im.n_frames):
            im.seek(k)
            assert im.getpalette() in (None, first)          # None: the global table


def _gif_blocks(data: bytes):
    """(image descriptors, how many carry a local colour table, whether there is a global one)."""
    flags = data[10]
    has_global = bool(flags & 0x80)
    i = 13 + (3 * (2 << (flags & 7)) if has_global else 0)
    frames = local = 0
    while i < len(data):
        block = data[i]
        if block == 0x21:                        # extension: label, sub-blocks
            i += 2
            while data[i]:
                i += data[i] + 1
            i += 1
        elif block == 0x2C:                      # image descriptor
            packed = data[i + 9]
            frames += 1
            i += 10
            if packed & 0x80:
                local += 1
                i += 3 * (2 << (packed & 7))
            i += 1                               # LZW minimum code size
            while data[i]:
                i += data[i] + 1
            i += 1
        elif block == 0x3B:
            break
        else:
            raise AssertionError(f"not a GIF block at byte {i}: {block:#x}")
    return frames, local, has_global


def test_a_damaged_frame_is_named_and_leaves_no_movie(tmp_path):
    out = _frames_run(tmp_path / "run", 4)
    bad = out.run_dir / FRAMES_DIR / "step-000000020.npz"
    bad.write_bytes(bad.read_bytes()[:300])
    target = tmp_path / "m.mp4"
    result = invoke("movie", out.run_dir, "--field", "T", "-o", target, "--dpi", DPI)
    assert result.exit_code == 2 and str(bad) in result.output and "truncated or damaged" in result.output
    assert not target.exists() and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_frames_are_lbgen_files_and_a_resume_drops_the_later_ones(tmp_path):
    out = _frames_run(tmp_path / "run", 5, window=None)
    manifest = json.loads((out.run_dir / "manifest.json").read_text())
    assert "picture_window" not in manifest                    # no window given: the whole lattice
    del manifest["files"]                                      # as an older lbgen wrote it
    (out.run_dir / "manifest.json").write_text(json.dumps(manifest))
    assert {f"{FRAMES_DIR}/step-{10 * n:09d}.npz" for n in range(5)} <= set(recorded_files(out.run_dir))
    again = RunOutput(out.run_dir, pictures=("T",), vtk=False, colour_limits=LIMITS, window="auto")
    before = again.flow_rows()                                 # amplitudes up to 12 sites
    again.truncate(20)
    assert sorted(RunResults(out.run_dir).frame_files) == [0, 10, 20]
    after = again.flow_rows()                                  # amplitudes up to 6: a narrower flow
    assert before[0] < after[0] < after[1] < before[1]


def test_plot_takes_a_window(tmp_path):
    from PIL import Image
    out = _frames_run(tmp_path / "run", 3, pictures_at=(0, 20))
    png = tmp_path / "full.png"
    result = invoke("plot", out.run_dir, "--field", "T", "--step", 20, "--window", "full", "-o", png, "--dpi", DPI)
    assert result.exit_code == 0, result.output
    cropped = tmp_path / "run.png"
    assert invoke("plot", out.run_dir, "--field", "T", "--step", 20, "-o", cropped, "--dpi", DPI).exit_code == 0
    with Image.open(png) as a, Image.open(cropped) as b:
        assert a.size[1] == b.size[1] and a.size[0] < b.size[0]         # full: tall and narrow; the run's: wider
    bad = invoke("plot", out.run_dir, "--window", "0:10,0:999", "-o", tmp_path / "x.png")
    assert bad.exit_code == 2 and "outside the lattice" in bad.output and not (tmp_path / "x.png").exists()


# --------------------------------------------------------------------------- series.png
def _series(n=60, mass_drift=True):
    step = np.arange(n) * 40.0
    t = step / 1.19697977
    growth = 1e-8 * 10.0 ** (8 * step / step[-1])            # 8 decades of exponential growth
    return {"step": step, "time": t,
            "mass": 1000.0 * (1 + (1e-15 * np.arange(n) if mass_drift else 0 * t)),
            "energy": 2000.0 * (1 + 1e-5 * np.sin(t / 100)), "momentum_x": 0 * t, "momentum_y": -np.sin(t / 50),
            "kinetic_energy": growth, "mixing_width": 30 + growth * 1e7, "max_speed": np.sqrt(growth),
            "min_rho": 0.9 + 0 * t, "min_T": 0.95 + 0 * t, "max_T": 1.05 + 0 * t, "nonfinite": 0 * t}


def test_series_png_has_one_quantity_per_panel_and_log_axes_for_drift_and_growth():
    fig = series_figure(_series(), T_walls=(1.05, 0.95))
    panels = {ax.get_title(): ax for ax in fig.axes}
    mass, energy, kinetic = panels["mass drift"], panels["total energy"], panels["kinetic energy"]
    assert mass.get_yscale() == "log" and kinetic.get_yscale() == "log" and energy.get_yscale() == "linear"
    assert [line.get_label() for line in mass.get_lines()] == [r"$|M - M_0| / M_0$,  $M = \sum\rho$"]
    assert len(energy.get_lines()) == 1 and "E =" in energy.get_lines()[0].get_label()
    drift = mass.get_lines()[0].get_ydata()
    assert np.nanmax(drift) == pytest.approx(59e-15, rel=1e-3)                       # |ΔM| / M₀
    # the kinetic energy's 8 decades of exponential growth show: the axis spans several decades
    lo, hi = kinetic.get_ylim()
    assert hi / lo >= 1e5 and max(kinetic.get_lines()[0].get_ydata()) <= hi
    for ax in fig.axes:                                         # no panel mixes a drift with a value
        labels = " ".join(line.get_label() for line in ax.get_lines())
        assert not ("M_0" in labels and "E =" in labels)
    exact = {ax.get_title(): ax for ax in series_figure(_series(mass_drift=False)).axes}["mass drift"]
    assert any("exactly conserved" in text.get_text() for text in exact.texts)
    flow = series_figure(_series(), time_unit=(1000.0, r"$\tau$"))
    ax = flow.axes[0]
    assert ax.get_xlabel() == "step" and max(ax.get_lines()[0].get_xdata()) == 59 * 40
    top = ax.child_axes[0]                               # the flow's time on the top axis: step / 1000
    assert top.get_xlabel() == r"time / $\tau$"
    flow.canvas.draw()
    assert top.get_xlim() == pytest.approx(tuple(x / 1000.0 for x in ax.get_xlim()))
    assert not series_figure(_series()).axes[0].child_axes       # no unit, no top axis
    speed = {ax.get_title(): ax for ax in series_figure(_series(), r=2.0).axes}["max |u|"]
    assert speed.get_ylabel() == "speed (sites per step)"          # the header's unit: model values / r
    assert np.nanmax(speed.get_lines()[0].get_ydata()) == pytest.approx(np.sqrt(_series()["kinetic_energy"][-1]) / 2)


def _isothermal_3d_series(n=20):
    step = np.arange(n) * 10.0
    return {"step": step, "time": step / 3 ** 0.5, "mass": 4096.0 * (1 + 1e-15 * step), "momentum_x": np.sin(step),
            "momentum_y": 0 * step, "momentum_z": 0 * step, "kinetic_energy": 1 - np.exp(-step / 50),
            "max_speed": 0.08 * (1 - np.exp(-step / 20)), "min_rho": 0.95 + 0 * step, "min_T": 1.0 + 0 * step,
            "nonfinite": 0 * step}


def test_series_png_draws_only_the_panels_the_run_has():
    """An isothermal cavity's series (3D columns: no energy, no mixing width, T = 1 throughout)
    gets no total-energy, mixing-width or temperature panel; a thermal run with a contrast gets
    all eight; a mixing width that is NaN throughout (no contrast) gets no panel."""
    cavity = series_figure(_isothermal_3d_series())
    titles = [ax.get_title() for ax in cavity.axes]
    assert titles == ["mass drift", "momentum", "kinetic energy", "max |u|", "minimum density"]
    for ax in cavity.axes:                                  # every panel drawn has a curve
        assert any(np.isfinite(line.get_ydata()).any() for line in ax.get_lines()), ax.get_title()
    assert [p[0] for p in series_panels(_series())] == [p[0] for p in PANELS
                                                        if p[0] not in ("force on the body", "force coefficients", "Nusselt number")]
    assert len(series_figure(_series()).axes) == 8
    with_body = dict(_series(), force_x=np.linspace(0, 1, 60), force_y=np.zeros(60))    # a run with a body
    assert "force on the body" in [p[0] for p in series_panels(with_body)]
    assert len(series_figure(with_body).axes) == 9
    no_contrast = dict(_series(), mixing_width=np.full(60, np.nan), min_T=np.ones(60), max_T=np.ones(60))
    assert "mixing width" not in [p[0] for p in series_panels(no_contrast)]
    assert "temperature range" not in [p[0] for p in series_panels(no_contrast)]


def test_movie_refuses_a_bad_window_before_any_work(tmp_path, monkeypatch):
    from lbgen.output import folder as folder_mod
    out = _frames_run(tmp_path / "run", 2)

    def boom(*a, **k):
        raise AssertionError("a frame was drawn before the refusal")
    monkeypatch.setattr(folder_mod, "frame_picture", boom)
    target = tmp_path / "m.mp4"
    for window, words in (("0:10,0:999", "outside the lattice"), ("0:10", "x0:x1,y0:y1")):
        result = invoke("movie", out.run_dir, "-o", target, "--window", window)
        assert result.exit_code == 2 and words in result.output, result.output
    result = invoke("movie", out.run_dir, "--field", "speed", "-o", target, "--from", "frames")
    assert result.exit_code == 2 and "no movie frames of speed" in result.output
    assert not target.exists()


def test_frames_of_a_wide_lattice_keep_every_other_site_and_still_draw_in_a_window(tmp_path):
    x = np.arange(4200, dtype=np.float64)[:, None] + np.zeros((1, 16))
    T = 0.95 + 0.1 * x / 4199                                      # a ramp along x
    frame = read_frame_file(write_frame_file(tmp_path / "w.npz", 7, None, {"T": T}, {"T": (0.95, 1.05)}))
    assert frame.stride == (2, 1) and frame.data["T"].shape == (2100, 16) and frame.time is None
    assert np.allclose(frame.data["T"][:, 0], T[1::2, 0], atol=1e-5)
    picture = FieldPicture("T", frame.shape, limits=(0.95, 1.05), window=((1000, 1100), (0, 16)),
                           stride=frame.stride, dpi=DPI)
    fig = picture.draw(frame.data["T"], frame.step, frame.time)
    assert fig.axes[0].get_xlim() == (999.5, 1099.5)
    drawn = picture.image.get_array()
    assert drawn.shape == (16, 50) and np.all(np.diff(drawn[0]) > 0)           # the window's 50 samples, in order
    assert drawn[0, 0] == pytest.approx(0.95 + 0.1 * 1001 / 4199, abs=1e-5)
