"""Trust, round three (output side): lbgen movie / plot refuse bad options and output paths
before any work, an encoder failure is an error that leaves no file, damaged run files are
named, --overwrite removes only what lbgen wrote, --save writes exactly the path given."""
from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.output import folder as folder_mod
from lbgen.output import RunOutput
from lbgen.output.folder import RunResults
from lbgen.output.pictures import (MAX_LONG_SIDE_PX, MIN_DPI, check_dpi, dpi_range, field_figure, figure_rgb,
                                   long_side_in, parse_clim, picture_name)
from lbgen.output.records import FILES_KEY, recorded_files
from lbgen.run.fieldfile import FieldFileError, check_save_path, save_fields
from lbgen.run.folder import RunFolder as LockedRunFolder

SMALL = ("--lx", 8, "--ly", 32, "--no-progress")
DPI = 20


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def refused(result, *words):
    """Exit status 2, 'Error: ...' with every word, no traceback."""
    assert result.exit_code == 2, result.output
    assert "Error:" in result.output and "Traceback" not in result.output, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    for word in words:
        assert word in result.output, (word, result.output)


def snapshot(path):
    """{relative path: bytes} of every file under path."""
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A tiny run folder with fields and pictures of steps 0 and 4."""
    out = tmp_path_factory.mktemp("trust") / "run"
    result = cli("run", *SMALL, "--steps", 4, "--out", out, "--pictures", "T", "--dpi", DPI)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def no_work(monkeypatch):
    """Drawing a frame fails the test: refusals must come before any work."""
    def boom(*a, **k):
        raise AssertionError("a picture was drawn before the refusal")
    monkeypatch.setattr(folder_mod, "field_figure", boom)
    monkeypatch.setattr(folder_mod, "frame_picture", boom)
    monkeypatch.setattr(RunResults, "figure", boom)


def _copy_run(run_dir, tmp_path):
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    return copy


# --------------------------------------------------------------------------- movie: fps and encoder
@pytest.mark.parametrize("fps", ["1e-6", "0", "-5", "1000", "nan", "inf"])
def test_movie_refuses_fps_outside_the_range_before_work(run_dir, tmp_path, no_work, fps):
    target = tmp_path / "m.mp4"
    refused(cli("movie", run_dir, "--fps", fps, "-o", target), "--fps", "allowed 0.1 to 100 frames per second")
    assert list(tmp_path.iterdir()) == []


def _failing_ffmpeg(tmp_path, code=1):
    """A stand-in ffmpeg that reads its input, writes a 261-byte stub to its output and fails."""
    script = tmp_path / "ffmpeg-fails"
    script.write_text(f"#!/bin/sh\ncat > /dev/null\nfor last; do :; done\nhead -c 261 /dev/zero > \"$last\"\n"
                      f"echo 'Error muxing a packet: Invalid argument' >&2\nexit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_encoder_failure_is_an_error_and_leaves_no_file(run_dir, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setattr(folder_mod, "ffmpeg_executable", lambda: _failing_ffmpeg(bin_dir))
    movies = tmp_path / "movies"
    movies.mkdir()
    result = cli("movie", run_dir, "-o", movies / "m.mp4", "--dpi", DPI)
    refused(result, f"{movies / 'm.mp4'}: the encoder (ffmpeg) failed with exit status 1",
            "Invalid argument", "no file made")
    assert "wrote" not in result.output
    assert list(movies.iterdir()) == []                                  # no file, no temporary
    # an existing movie replaced with --overwrite is kept byte for byte when the encoder fails
    (movies / "m.mp4").write_bytes(b"the user's movie")
    refused(cli("movie", run_dir, "-o", movies / "m.mp4", "--dpi", DPI, "--overwrite"), "exit status 1")
    assert snapshot(movies) == {"m.mp4": b"the user's movie"}


def test_movie_at_the_range_ends_is_readable(run_dir, tmp_path):
    import imageio.v2 as imageio
    for fps in (0.1, 100):
        target = tmp_path / f"m{fps}.mp4"
        result = cli("movie", run_dir, "--fps", fps, "-o", target, "--dpi", DPI, "--from", "fields")
        assert result.exit_code == 0, result.output
        with imageio.get_reader(target) as reader:
            assert reader.count_frames() == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m0.1.mp4", "m100.mp4"]      # no temporaries


# --------------------------------------------------------------------------- output paths before work
@pytest.mark.parametrize("command", ["movie", "plot"])
def test_output_paths_are_checked_before_any_work(run_dir, tmp_path, no_work, command):
    suffix = ".mp4" if command == "movie" else ".png"
    refused(cli(command, run_dir, "-o", tmp_path / "x.avi"), "x.avi", "unknown file type", suffix)
    mine = tmp_path / f"mine{suffix}"
    mine.write_bytes(b"user data")
    refused(cli(command, run_dir, "-o", mine), str(mine), "exists", "--overwrite")
    assert mine.read_bytes() == b"user data"
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    refused(cli(command, run_dir, "-o", blocker / f"x{suffix}"), "its folder")
    (tmp_path / f"dir{suffix}").mkdir()
    refused(cli(command, run_dir, "-o", tmp_path / f"dir{suffix}"), "is a folder")
    if os.geteuid() != 0:                       # root writes anywhere: no read-only folder to test
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        refused(cli(command, run_dir, "-o", ro / f"x{suffix}"), "not writable")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["a-file", f"dir{suffix}", f"mine{suffix}"] + (["ro"] if os.geteuid() != 0 else []))


def test_plot_several_steps_checks_every_target_first(run_dir, tmp_path, no_work):
    out = tmp_path / "pics"
    out.mkdir()
    (out / picture_name("T", 4)).write_bytes(b"keep")
    refused(cli("plot", run_dir, "--step", "all", "-o", out), "exists", "--overwrite")
    assert snapshot(out) == {picture_name("T", 4): b"keep"}              # step 0 was not drawn either


# --------------------------------------------------------------------------- damaged run files
@pytest.mark.parametrize("command", ["movie", "plot"])
@pytest.mark.parametrize("text, words", [
    ('{"lbgen": "0.1", "status"', ["damaged manifest", "not valid JSON"]),
    ("", ["damaged manifest", "empty"]),
    ("[1, 2]", ["damaged manifest", "list"]),
])
def test_damaged_manifest_is_named(run_dir, tmp_path, command, text, words):
    copy = _copy_run(run_dir, tmp_path)
    (copy / "manifest.json").write_text(text)
    target = tmp_path / ("m.gif" if command == "movie" else "p.png")
    refused(cli(command, copy, "-o", target), str(copy / "manifest.json"), *words)
    assert not target.exists()


@pytest.mark.parametrize("command", ["movie", "plot"])
def test_truncated_field_file_is_named(run_dir, tmp_path, command):
    copy = _copy_run(run_dir, tmp_path)
    h5 = copy / "fields" / "step-000000004.h5"
    h5.write_bytes(h5.read_bytes()[:3000])
    target = tmp_path / ("m.gif" if command == "movie" else "p.png")
    source = ("--from", "fields") if command == "movie" else ()      # a movie draws the run's frames by default
    refused(cli(command, copy, "-o", target, *source), str(h5), "truncated or damaged")
    assert not target.exists() and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_field_file_without_its_arrays_is_named(run_dir, tmp_path):
    import h5py
    copy = _copy_run(run_dir, tmp_path)
    h5 = copy / "fields" / "step-000000004.h5"
    with h5py.File(h5, "a") as f:
        del f["T"]
    refused(cli("plot", copy, "-o", tmp_path / "p.png"), str(h5), "no T")


# --------------------------------------------------------------------------- dpi
@pytest.mark.parametrize("command", ["movie", "plot"])
@pytest.mark.parametrize("dpi", ["100000", "1e-3", "nan"])
def test_dpi_outside_the_range_is_refused_before_work(run_dir, tmp_path, no_work, command, dpi):
    lo, hi = dpi_range((8, 32))
    refused(cli(command, run_dir, "--dpi", dpi, "-o", tmp_path / ("m.gif" if command == "movie" else "p.png")),
            "--dpi", f"allowed {lo:g} to {hi:g}", "16384 px")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("shape", [None, (8, 32), (64, 16), (4, 4096), (4096, 4), (1, 100000)])
def test_dpi_range_gives_pictures_of_at_most_16384_pixels(shape):
    lo, hi = dpi_range(shape)
    assert lo == MIN_DPI <= hi
    shapes = [shape] if shape else [(1, 1), (1, 7), (2, 1), (100, 1), (10, 75)]
    for s in shapes:
        assert hi * long_side_in(s) <= MAX_LONG_SIDE_PX and lo * long_side_in(s) >= 80, s
    assert check_dpi(lo, shape) == lo and check_dpi(hi, shape) == hi and check_dpi(None) is None
    for bad in (lo * 0.99, hi * 1.01, 0, -1, float("inf"), float("nan"), "x"):
        with pytest.raises(ValueError, match="--dpi"):
            check_dpi(bad, shape)


@pytest.mark.parametrize("shape", [(8, 32), (64, 16), (16, 4096)])
def test_every_lattice_draws_at_the_lowest_dpi_and_by_default(shape):
    fields = {n: np.ones(shape) for n in ("rho", "T")} | {n: np.zeros(shape) for n in ("ux", "uy")}
    with pytest.raises(ValueError, match="--dpi 100000"):
        field_figure("T", fields, dpi=100000)
    for dpi in (MIN_DPI, None):        # 16 x 4096 failed in FreeType by default before (1.95 dpi)
        pixels = figure_rgb(field_figure("vorticity", fields, dpi=dpi, step=4, time=1.0))
        assert 80 <= max(pixels.shape[:2]) <= MAX_LONG_SIDE_PX


# --------------------------------------------------------------------------- clim and names
def test_plot_takes_the_run_clim_syntax_and_the_run_naming(run_dir, tmp_path, monkeypatch):
    import shutil
    run_dir = shutil.copytree(run_dir, tmp_path / "run")     # plot writes into the run's pictures/
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in (run_dir / "pictures").iterdir())
    result = cli("plot", run_dir, "--clim", "T=0.93,1.06", "--dpi", DPI)
    assert result.exit_code == 0, result.output
    named = run_dir / "pictures" / ("plot-" + picture_name("T", 4))
    assert named.name == "plot-T-000000004.png" and named.is_file()
    assert f"wrote 1 picture: {named}" in result.output                # the path it wrote, in full
    assert sorted(p.name for p in (run_dir / "pictures").iterdir()) == sorted(before + [named.name])
    assert not list(tmp_path.glob("*.png"))                              # nothing in the current folder
    assert cli("plot", run_dir, "--clim", "0.93,1.06", "--dpi", DPI, "-o", "bare.png").exit_code == 0
    assert (tmp_path / "bare.png").read_bytes() == named.read_bytes()
    refused(cli("plot", run_dir, "--clim", "vorticity=-1,1", "-o", "v.png"), "draws T", "not vorticity")
    refused(cli("movie", run_dir, "--clim", "T=1.1,0.9", "-o", "m.gif"), "LO < HI")
    assert not (tmp_path / "v.png").exists() and not (tmp_path / "m.gif").exists()
    assert parse_clim(["0.9,1.1"], default_field="rho") == {"rho": [0.9, 1.1]}
    with pytest.raises(ValueError, match="FIELD=LO,HI"):
        parse_clim(["0.9,1.1"])                                          # lbgen run: FIELD is required


def test_the_run_and_plot_name_pictures_alike(run_dir, tmp_path):
    out = tmp_path / "all"
    assert cli("plot", run_dir, "--step", "all", "-o", out, "--dpi", DPI).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (run_dir / "pictures").iterdir())


# --------------------------------------------------------------------------- --save
def test_save_writes_exactly_the_npz_path_and_refuses_other_suffixes(tmp_path):
    fields = {n: np.ones((2, 3)) for n in ("rho", "ux", "uy", "T")}
    assert save_fields(tmp_path / "x.npz", fields, steps=3) == tmp_path / "x.npz"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npz"]
    with np.load(tmp_path / "x.npz") as data:
        assert int(data["steps"]) == 3 and data["T"].shape == (2, 3)
    for name in ("x.json", "x", "x.npz.txt"):
        with pytest.raises(FieldFileError, match=r"ending in \.npz"):
            check_save_path(tmp_path / name)
        with pytest.raises(FieldFileError, match=r"ending in \.npz"):
            save_fields(tmp_path / name, fields)
    assert check_save_path(tmp_path / "new" / "y.npz") == tmp_path / "new" / "y.npz"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "x.npz"]


def test_run_save_with_another_suffix_writes_nothing(tmp_path):
    result = cli("run", *SMALL, "--steps", 1, "--save", tmp_path / "x.json")
    refused(result, "x.json", ".npz")
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_while_writing_the_save_file_fails_the_run_with_the_command_that_saves_again(tmp_path,
                                                                                                monkeypatch):
    """--save follows the rule of every other write (one process here; under mpiexec:
    tests/parallel/test_mpi_failures.py): exit 2, status "failed", nothing saved, and the
    resume command names --save again."""
    import errno
    from lbgen.run import fieldfile

    def full(path, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr(fieldfile, "save_fields", full)
    out, saved = tmp_path / "run", tmp_path / "end.npz"
    result = cli("run", *SMALL, "--steps", 2, "--checkpoint-every", 2, "--out", out, "--pictures", "none",
                 "--save", saved)
    refused(result, "the disk is full", f"the --save file {saved}", f"--resume {out} --steps 2 --save {saved}")
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"
    assert not saved.exists()
    monkeypatch.undo()
    again = cli("run", "--resume", out, "--steps", 2, "--save", saved, "--no-progress")
    assert again.exit_code == 0, again.output
    with np.load(saved) as data:
        assert int(data["steps"]) == 2 and data["rho"].shape == (8, 32)


# --------------------------------------------------------------------------- --overwrite keeps user files
def _user_files(out):
    mine = {"fields/mine.txt": b"my notes", "pictures/notes.png": b"\x89PNG my own picture",
            "vtk/extra/mine.vti": b"<mine/>", "checkpoints/keep.txt": b"keep me", "README": b"about this run"}
    for rel, data in mine.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    return mine


def _lbgen_files(out, mine):
    return {rel for rel in snapshot(out) if rel not in mine and not rel.startswith(".lbgen")}


def test_overwrite_removes_only_what_the_run_wrote(tmp_path):
    out = tmp_path / "run"
    first = cli("run", *SMALL, "--steps", 4, "--out", out, "--pictures", "T,vorticity", "--dpi", DPI,
                "--checkpoint-every", 2)
    assert first.exit_code == 0, first.output
    manifest = json.loads((out / "manifest.json").read_text())
    written = set(manifest[FILES_KEY])
    assert written == {rel for rel in snapshot(out) if not rel.startswith(("checkpoints/", ".lbgen"))}
    assert {"fields/step-000000004.h5", "pictures/vorticity-000000004.png", "vtk/fields.pvd", "series.csv",
            "series.png", "manifest.json"} <= written
    mine = _user_files(out)
    result = cli("run", *SMALL, "--steps", 2, "--out", out, "--pictures", "T", "--dpi", DPI, "--overwrite")
    assert result.exit_code == 0, result.output
    after = snapshot(out)
    assert {rel: after.get(rel) for rel in mine} == mine                 # every user file, byte for byte
    for gone in ("fields/step-000000004.h5", "pictures/T-000000004.png", "pictures/vorticity-000000000.png",
                 "vtk/step-000000004.vti", "checkpoints/step-000000004.lbchk"):
        assert gone not in after, gone
    assert set(json.loads((out / "manifest.json").read_text())[FILES_KEY]) == _lbgen_files(out, mine)


def test_overwrite_of_an_older_run_without_a_file_list_removes_only_lbgen_names(tmp_path):
    out = tmp_path / "run"
    assert cli("run", *SMALL, "--steps", 4, "--out", out, "--pictures", "T", "--dpi", DPI).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest[FILES_KEY]                                              # as an older lbgen wrote it
    (out / "manifest.json").write_text(json.dumps(manifest))
    mine = _user_files(out)
    mine["pictures/T-final.png"] = b"not lbgen's name"
    (out / "pictures" / "T-final.png").write_bytes(mine["pictures/T-final.png"])
    assert set(recorded_files(out)) == {rel for rel in snapshot(out) if rel not in mine and not rel.startswith(".")}
    assert cli("run", *SMALL, "--steps", 2, "--out", out, "--pictures", "none", "--overwrite").exit_code == 0
    after = snapshot(out)
    assert {rel: after.get(rel) for rel in mine} == mine
    assert "fields/step-000000004.h5" not in after and "pictures/T-000000004.png" not in after


def test_clear_never_leaves_the_folder_and_removes_only_empty_folders(tmp_path):
    out = tmp_path / "run"
    (out / "fields").mkdir(parents=True)
    (out / "vtk").mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("not in the run folder")
    (out / "fields" / "step-000000001.h5").write_bytes(b"lbgen")
    (out / "fields" / "sub").mkdir()
    (out / "fields" / "sub" / "x").write_text("user")
    (out / "manifest.json").write_text(json.dumps({FILES_KEY: ["../outside.txt", str(outside), "fields/sub",
                                                                "fields/step-000000001.h5", "vtk/fields.pvd"]}))
    folder = LockedRunFolder(out)
    folder.acquire(echo=lambda m: None)
    try:
        removed = folder.clear()
    finally:
        folder.release()
    assert outside.read_text() == "not in the run folder"
    assert sorted(p.relative_to(out).as_posix() for p in removed) == ["fields/step-000000001.h5", "manifest.json"]
    assert (out / "fields" / "sub" / "x").read_text() == "user" and not (out / "vtk").exists()


def test_run_output_lists_a_file_in_the_manifest_before_writing_it(tmp_path, monkeypatch):
    out = RunOutput(tmp_path, pictures=(), vtk=False)
    out.write_manifest({"status": "running"})
    fields = {n: np.ones((4, 8)) for n in ("rho", "T")} | {n: np.zeros((4, 8)) for n in ("ux", "uy")}
    from lbgen.output import run as run_mod

    def killed(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(run_mod, "write_h5", killed)
    with pytest.raises(KeyboardInterrupt):
        out.write_fields(3, fields)
    listed = json.loads((tmp_path / "manifest.json").read_text())
    assert listed["status"] == "running" and listed[FILES_KEY] == ["fields/step-000000003.h5", "manifest.json"]
    again = RunOutput(tmp_path)                                           # a resumed run starts from the list
    assert again.files == listed[FILES_KEY]


def test_the_output_reader_is_run_results():
    assert not hasattr(folder_mod, "RunFolder") and not hasattr(folder_mod, "RunFolderError")


def test_run_results_of_a_file_says_it_is_a_file_and_touches_nothing(tmp_path):
    """Broken in round four: RunResults(a file) said the folder 'does not exist' (the CLI said
    'is a file'); one home now (RunResults), the same refusal from Python and the CLI."""
    from lbgen.output.folder import RunResultsError
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hello")
    with pytest.raises(RunResultsError) as e:
        RunResults(path)
    assert "is a file, not a run folder" in str(e.value) and "does not exist" not in str(e.value)
    assert path.read_bytes() == b"hello" and sorted(tmp_path.iterdir()) == [path]
    with pytest.raises(RunResultsError, match="does not exist"):
        RunResults(tmp_path / "missing")
    assert sorted(tmp_path.iterdir()) == [path]
