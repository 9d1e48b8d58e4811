"""Pictures, movies and time series of a run folder (issue 13): fixed colour limits, a field
at rest drawn as zero, a dense series independent of field outputs, lbgen movie / plot."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.output import RunOutput, colour_limits, drawn_data, parse_clim, read_series
from lbgen.output.folder import RunResults
from lbgen.output.pictures import field_figure, figure_rgb

LX, LY, STEPS = 16, 64, 24
RT = ("run", "rayleigh-taylor", "--lx", LX, "--ly", LY, "--gravity", "0,-1e-3", "--no-progress")
DPI = 30        # small pictures keep the tests quick (slide size is checked by test_plot_honours_its_options)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def rt_run(tmp_path_factory):
    """A small Rayleigh-Taylor run folder with fields every 8 steps (steps 0, 8, 16, 24)."""
    out = tmp_path_factory.mktemp("rt") / "run"
    result = invoke(*RT, "--steps", STEPS, "--out", out, "--output-every", 8, "--pictures", "T,vorticity",
                    "--dpi", DPI)
    assert result.exit_code == 0, result.output
    return out


def _image_box(fig):
    """(rows, cols) slices of the lattice image inside a rendered figure."""
    bbox = fig.axes[0].get_window_extent()
    h = int(round(fig.bbox.height))
    return (slice(h - int(bbox.y1) + 2, h - int(bbox.y0) - 2), slice(int(bbox.x0) + 2, int(bbox.x1) - 2))


# --------------------------------------------------------------------------- colour limits
def test_manifest_records_physical_colour_limits(rt_run):
    limits = json.loads((rt_run / "manifest.json").read_text())["colour_limits"]
    assert limits["T"] == [0.95, 1.05]                       # the wall temperatures bound the initial state
    lo, hi = limits["vorticity"]
    assert lo == -hi and hi > 0
    # velocity scale: the free-fall speed sqrt(A g LY), A = 0.1 / 2.0
    assert limits["speed"][1] == pytest.approx(np.sqrt(0.05 * 1e-3 * LY))
    assert limits["vorticity"][1] == pytest.approx(limits["speed"][1] / (LX / 16))


def test_every_frame_uses_the_manifest_colour_limits(rt_run):
    run = RunResults(rt_run)
    assert run.steps == [0, 8, 16, 24]
    from PIL import Image
    for quantity in ("T", "vorticity"):
        for step in run.steps:
            saved = np.asarray(Image.open(rt_run / "pictures" / f"{quantity}-{step:09d}.png").convert("RGB"))
            again = figure_rgb(run.figure(quantity, step))          # drawn with manifest["colour_limits"]
            assert np.array_equal(saved, again), (quantity, step)
    # the check can fail: other limits give other pixels
    lo, hi = run.limits("T")
    other = figure_rgb(run.figure("T", 24, clim=(lo + 0.01, hi - 0.01)))
    saved = np.asarray(Image.open(rt_run / "pictures" / f"T-{24:09d}.png").convert("RGB"))
    assert not np.array_equal(saved, other)


def test_clim_option_overrides_and_is_recorded(tmp_path):
    out = tmp_path / "run"
    result = invoke(*RT, "--steps", 2, "--out", out, "--clim", "T=0.9,1.1", "--clim", "vorticity=-0.5,0.5",
                    "--pictures", "none")
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    limits, r = manifest["colour_limits"], manifest["physics"]["r"]
    # --clim is in the pictures' units (vorticity per step); the manifest keeps the fields' model values
    assert limits["T"] == [0.9, 1.1] and limits["vorticity"] == [pytest.approx(-0.5 * r), pytest.approx(0.5 * r)]
    config = tmp_path / "c.toml"
    config.write_text('[run]\nclim = ["T=0.8,1.2"]\n')
    result = invoke(*RT, "--steps", 2, "--out", tmp_path / "toml", "--config", config, "--pictures", "none")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "toml" / "manifest.json").read_text())["colour_limits"]["T"] == [0.8, 1.2]


@pytest.mark.parametrize("value, message", [
    ("T=1.1,0.9", "LO < HI"), ("pressure=0,1", "unknown field"), ("T=0.9", "two numbers"), ("T0.9,1", "FIELD=LO,HI")])
def test_bad_clim_is_refused_with_a_clear_message(value, message):
    result = invoke(*RT, "--steps", 1, "--clim", value)
    assert result.exit_code == 2 and message in result.output, result.output
    with pytest.raises(ValueError, match=message.split()[0]):
        parse_clim([value])


# --------------------------------------------------------------------------- at rest
def test_a_state_at_rest_draws_vorticity_as_exactly_zero(rt_run):
    run = RunResults(rt_run)
    rest = run.fields(0)                      # hydrostatic, u = round-off of the populations' moments
    limits = run.limits("vorticity")
    assert np.array_equal(drawn_data("vorticity", rest, limits), np.zeros((LX, LY)))
    fig = run.figure("vorticity", 0)
    rows, cols = _image_box(fig)
    pixels = figure_rgb(fig)[rows, cols].reshape(-1, 3)
    assert len(np.unique(pixels, axis=0)) == 1                # one colour: the colour of zero
    # a flow keeps its vorticity
    assert np.abs(drawn_data("vorticity", run.fields(24), limits)).max() > 0


def test_uniform_run_at_rest_draws_zero_velocity_fields(tmp_path):
    out = tmp_path / "rest"
    result = invoke("run", "shear-wave", "--amplitude", 0, "--lx", 8, "--ly", 32, "--steps", 3, "--out", out,
                    "--pictures", "vorticity,speed,ux", "--dpi", DPI, "--no-progress")
    assert result.exit_code == 0, result.output
    run = RunResults(out)
    for q in ("vorticity", "speed", "ux", "uy"):
        assert not np.any(drawn_data(q, run.fields(3), run.limits(q))), q


# --------------------------------------------------------------------------- series
def _series_steps(path):
    with open(path / "series.csv", newline="") as fh:
        return [int(r["step"]) for r in csv.DictReader(fh)]


def test_series_rows_do_not_depend_on_output_every(tmp_path, rt_run):
    assert _series_steps(rt_run) == [0, 12, STEPS]       # short run: every 10 steps, rounded up to the time block (3)
    other = tmp_path / "other"
    assert invoke(*RT, "--steps", STEPS, "--out", other, "--pictures", "none").exit_code == 0
    assert _series_steps(other) == [0, 12, STEPS]
    a, b = read_series(rt_run / "series.csv"), read_series(other / "series.csv")
    np.testing.assert_allclose(a["mass"], b["mass"], rtol=1e-14)
    every = tmp_path / "every7"
    assert invoke(*RT, "--steps", STEPS, "--out", every, "--series-every", 7, "--output-every", 5,
                  "--pictures", "none").exit_code == 0
    assert _series_steps(every) == [0, 7, 14, 21, 24]


def test_series_has_every_quantity_and_matches_the_saved_fields(rt_run):
    from lbgen.output import diagnostics
    s = read_series(rt_run / "series.csv")
    for column in ("mass", "momentum_x", "momentum_y", "energy", "kinetic_energy", "mixing_width", "max_speed",
                   "min_T", "max_T"):
        assert np.isfinite(s[column]).all(), column
    run = RunResults(rt_run)
    host = diagnostics(run.fields(STEPS), 1.05, 0.95)                   # from the saved fields, on the host
    row = list(s["step"]).index(STEPS)
    for key in ("mass", "momentum_y", "energy", "kinetic_energy", "mixing_width", "max_speed", "min_T"):
        assert s[key][row] == pytest.approx(host[key], rel=1e-12, abs=1e-15), key
    assert s["time"][row] == pytest.approx(run.fields(STEPS)["time"])
    assert (rt_run / "series.png").read_bytes()[:4] == b"\x89PNG"


def test_default_series_every_gives_about_200_samples_at_most_one_every_10_steps():
    from lbgen.output import default_series_every
    assert default_series_every(8000) == 40 and default_series_every(2000) == 10
    assert default_series_every(150) == 10 and default_series_every(3) == 10
    # a multiple of the time block, so that the rows do not break the blocked sweeps
    assert default_series_every(150, 3) == 12 and default_series_every(8000, 4) == 40


# --------------------------------------------------------------------------- movie
@pytest.mark.parametrize("suffix", [".gif", ".mp4"])
def test_movie_has_one_frame_per_saved_step(rt_run, tmp_path, suffix):
    """--from fields: one frame per saved field step (the default draws the run's frames)."""
    path = tmp_path / f"T{suffix}"
    result = invoke("movie", rt_run, "--field", "T", "-o", path, "--dpi", 40, "--from", "fields")
    assert result.exit_code == 0, result.output
    if suffix == ".gif":
        from PIL import Image
        with Image.open(path) as im:
            assert im.n_frames == 4
    else:
        import imageio.v2 as imageio
        with imageio.get_reader(path) as reader:
            assert reader.count_frames() == 4
    # never overwrite without --overwrite
    again = invoke("movie", rt_run, "--field", "T", "-o", path, "--dpi", 40, "--from", "fields")
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert invoke("movie", rt_run, "--field", "T", "-o", path, "--dpi", 40, "--overwrite", "--from", "fields").exit_code == 0


def test_movie_refuses_bad_input(rt_run, tmp_path):
    result = invoke("movie", tmp_path / "nowhere", "--field", "T", "-o", tmp_path / "a.mp4")
    assert result.exit_code == 2 and "does not exist" in result.output
    result = invoke("movie", tmp_path, "-o", tmp_path / "a.mp4")
    assert result.exit_code == 2 and "no manifest.json" in result.output
    result = invoke("movie", rt_run, "--field", "pressure", "-o", tmp_path / "a.mp4")
    assert result.exit_code == 2 and "pressure" in result.output
    result = invoke("movie", rt_run, "--field", "T", "-o", tmp_path / "a.avi")
    assert result.exit_code == 2 and ".mp4 or .gif" in result.output


# --------------------------------------------------------------------------- plot
def test_plot_honours_its_options(rt_run, tmp_path):
    from PIL import Image
    default = tmp_path / "default.png"
    assert invoke("plot", rt_run, "--field", "T", "--step", 16, "-o", default).exit_code == 0
    with Image.open(default) as im:                                 # the run's --dpi by default
        base, base_size = np.asarray(im.convert("RGB")), im.size
    big = tmp_path / "big.png"
    assert invoke("plot", rt_run, "--field", "T", "--step", 16, "-o", big, "--dpi", 4 * DPI).exit_code == 0
    with Image.open(big) as im:
        assert im.size[1] == pytest.approx(4 * base_size[1], abs=4) and im.size[0] == pytest.approx(4 * base_size[0], abs=4)
    for option, value in (("--clim", "0.99,1.01"), ("--cmap", "cividis")):
        path = tmp_path / f"{option[2:]}.png"
        assert invoke("plot", rt_run, "--field", "T", "--step", 16, "-o", path, option, value).exit_code == 0
        with Image.open(path) as im:
            changed = np.asarray(im.convert("RGB"))
        assert changed.shape == base.shape and not np.array_equal(changed, base), option
    folder = tmp_path / "all"
    result = invoke("plot", rt_run, "--field", "vorticity", "--step", "all", "-o", folder, "--dpi", 30)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in folder.iterdir()) == [f"vorticity-{s:09d}.png" for s in (0, 8, 16, 24)]
    bad = invoke("plot", rt_run, "--step", 5, "-o", tmp_path / "x.png")
    assert bad.exit_code == 2 and "saved steps: 0, 8, 16, 24" in bad.output
    bad = invoke("plot", rt_run, "--cmap", "nope", "-o", tmp_path / "y.png")
    assert bad.exit_code == 2 and "colour map" in bad.output
    bad = invoke("plot", rt_run, "-o", default)
    assert bad.exit_code == 2 and "--overwrite" in bad.output


def test_picture_keeps_the_lattice_aspect_and_titles_step_and_time():
    x, y = np.meshgrid(np.arange(32), np.arange(128), indexing="ij")
    fields = {"rho": np.ones((32, 128)), "ux": np.zeros((32, 128)), "uy": np.zeros((32, 128)),
              "T": 1 + 0.01 * np.sin(x / 5.0) * np.cos(y / 7.0)}
    fig = field_figure("T", fields, step=400, time=400 / 1.19697977)
    bbox = fig.axes[0].get_window_extent()
    assert bbox.height / bbox.width == pytest.approx(128 / 32, rel=0.01)      # aspect kept, no empty margin
    assert fig.axes[0].get_title() == "temperature $T$\nstep 400"
    assert max(figure_rgb(fig).shape[:2]) == 1200


def test_python_api_returns_figures(rt_run):
    from matplotlib.figure import Figure

    from lbgen.output import plot
    assert isinstance(plot.run(rt_run, "vorticity", 8), Figure)
    assert isinstance(plot.series(rt_run), Figure)
    assert isinstance(plot.field(RunResults(rt_run).fields(24), "speed"), Figure)
    out = RunOutput(rt_run / "extra", colour_limits=colour_limits(["T"], RunResults(rt_run).fields(0)))
    assert out.colour_limits["T"][0] < out.colour_limits["T"][1]
