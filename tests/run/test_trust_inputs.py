"""Trust, round four (issue 35, item 5): inputs are checked before any work.  Each bad input
is refused with exit status 2, exactly one message line naming the value and what is
allowed, no traceback, nothing built and nothing written; the start line names the lattice
actually run; a resume of a finished run writes nothing; a run folder that is a file or an
empty manifest is named as such."""
import hashlib
import math

import numpy as np
import pytest

from helpers import cli, refused
from lbgen.model.physics import LID_MACH_MAX, LID_MACH_WARN, lid_mach
from lbgen.run import construct

CAVITY = ["lid-driven-cavity", "--lx", 8, "--ly", 8, "--lz", 8, "--steps", 2, "--pictures", "none", "--no-progress"]
CHANNEL = ["channel", "--velocity-set", "d3q19", "--lx", 8, "--ly", 8, "--lz", 8, "--steps", 2, "--pictures", "none",
           "--no-progress"]





@pytest.fixture
def must_not_build(monkeypatch):
    """Refusals come first: building the 3D simulation (compiling, allocating) fails the test."""
    def boom(*a, **k):
        raise AssertionError("the simulation was built before the refusal")
    monkeypatch.setattr(construct, "_make_simulation3d", boom)


def _digests(folder):
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lbgen.lock"}


# --------------------------------------------------------------------------- --geometry .npy
def _header_only(path, shape, descr="|u1"):
    """A .npy whose header claims ``shape`` and which holds no data."""
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": descr, "fortran_order": False, "shape": shape})


GEOMETRIES = {
    "empty": (lambda p: p.write_bytes(b""), "empty (0 bytes)"),
    "text": (lambda p: p.write_text("0 1 0\n1 0 1\n"), "not a .npy file"),
    "pickled": (lambda p: np.save(p, np.array([1, "a", None], dtype=object), allow_pickle=True), "Python objects"),
    "float": (lambda p: np.save(p, np.zeros((8, 8, 8))), "float64"),
    "shape": (lambda p: np.save(p, np.zeros((8, 8, 4), bool)), "shape (8, 8, 4)"),
    "huge": (lambda p: _header_only(p, (10 ** 5,) * 3), "shape (100000, 100000, 100000)"),
    "truncated": (lambda p: p.write_bytes(_npy_bytes(p)[:-100]), "truncated"),
    "folder": (lambda p: p.mkdir(), "is a folder"),
}


def _npy_bytes(p):
    np.save(p, np.zeros((8, 8, 8), bool))
    return p.read_bytes()


@pytest.mark.parametrize("kind", list(GEOMETRIES))
def test_bad_geometry_files_are_refused_from_their_header(tmp_path, monkeypatch, must_not_build, kind):
    """Broken in round four: a header claiming 10^15 voxels ended in a MemoryError traceback, a
    0-byte file in 'Aborted!', a text file in numpy's 'pickled data'.  Now each is one line naming
    the file and the reason, and numpy.load is never reached."""
    make, reason = GEOMETRIES[kind]
    path = tmp_path / "mask.npy"
    make(path)
    monkeypatch.setattr(np, "load", lambda *a, **k: pytest.fail("the mask was read before its header was checked"))
    out = tmp_path / "run"
    line = refused(cli("run", *CHANNEL, "--geometry", path, "--out", out), f"--geometry {path}", reason)
    assert "Aborted" not in line
    assert not out.exists()


def test_geometry_larger_than_memory_is_refused_before_reading(tmp_path, monkeypatch, must_not_build):
    path = tmp_path / "mask.npy"
    np.save(path, np.zeros((8, 8, 8), np.uint8))
    monkeypatch.setattr("lbgen.system.limits.available_memory", lambda: 100)
    monkeypatch.setattr(np, "load", lambda *a, **k: pytest.fail("the mask was read before its size was checked"))
    refused(cli("run", *CHANNEL, "--geometry", path), f"--geometry {path}", "do not fit", "GiB")


def test_a_good_geometry_still_runs(tmp_path):
    path = tmp_path / "mask.npy"
    mask = np.zeros((8, 8, 8), bool)
    mask[2:4, 2:4, 2:4] = True
    np.save(path, mask)
    r = cli("run", *CHANNEL, "--geometry", path)
    assert r.exit_code == 0, r.output
    assert f"geometry {path} (1.56% solid, halfway bounce-back)" in r.stderr


# --------------------------------------------------------------------------- lids
def _speed(mach):
    """The model speed of a D3Q19 lid at ``mach``."""
    return mach / lid_mach((1.0, 0.0, 0.0), "d3q19")


@pytest.mark.parametrize("lid, words", [
    ("z-high=nan,0,0", ["UX=nan is not finite"]),
    ("z-high=0,inf,0", ["UY=inf is not finite"]),
    ("z-high=1e400,0,0", ["UX=1e400 is not finite"]),
    ("z-high=0.1,0,0;Z-HIGH=0.1,0,0", ["z-high face twice"]),
    ("z-high=0.1,0,0;z-high=0.05,0,0", ["z-high face twice"]),
    ("z-high=0.1,0,0.02", ["normal to the face", "uz = 0.02"]),
    ("z-high=0.1,0", ["three velocity components", "got 2"]),
    ("top=0.1,0,0", ["unknown face", "'top'"]),
    (f"z-high={_speed(LID_MACH_MAX * 1.05):.6f},0,0", [f"at most at Mach {LID_MACH_MAX:g}", "lid z-high"]),
    (f"z-high=0,0,0;x-low=0,{_speed(1.2):.6f},0", ["lid x-low", "Mach 1.2"]),
])
def test_bad_lids_are_refused_before_work(tmp_path, must_not_build, lid, words):
    """Broken in round four: nan/inf lids were 'expected three velocity components', the same
    face twice kept the last silently, Mach 1.2 ran and Mach 5 diverged blaming tau."""
    out = tmp_path / "run"
    refused(cli("run", *CAVITY, "--lid", lid, "--out", out), *words)
    assert not out.exists()


def test_a_lid_in_the_unstable_band_runs_with_a_warning():
    mach = 0.5 * (LID_MACH_WARN + LID_MACH_MAX)
    r = cli("run", *CAVITY, "--lid", f"z-high={_speed(mach):.6f},0,0")
    assert r.exit_code == 0, r.output
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning: lid z-high")]
    assert len(warnings) == 1 and f"Mach {mach:.3g}" in warnings[0]
    assert "LidMachWarning" not in r.stderr        # Simulation3D's warning: said once, by the run's line
    calm = cli("run", *CAVITY, "--lid", f"z-high={_speed(LID_MACH_WARN * 0.9):.6f},0,0")
    assert calm.exit_code == 0 and "warning: lid" not in calm.stderr


def test_the_mach_limit_has_one_home():
    """The run description and Simulation3D refuse the same speeds (lbgen.model.physics)."""
    from lbgen.simulation.boundaries import lid_faces
    from lbgen.simulation.parameters import SimulationError
    fast = (_speed(LID_MACH_MAX) * 1.001, 0.0, 0.0)
    with pytest.raises(SimulationError, match=f"at most at Mach {LID_MACH_MAX:g}"):
        lid_faces({"z-high": fast}, ("z",), "d3q19")
    assert lid_faces({"z-high": (_speed(LID_MACH_MAX) * 0.999, 0, 0)}, ("z",), "d3q19")
    assert math.isclose(lid_mach((0.3, 0.4, 0.0), "d3q19"), 0.5)      # c_s = 1 in D3Q19's model units


# --------------------------------------------------------------------------- Rayleigh-Taylor gravity
RT3D = ["rayleigh-taylor", "--velocity-set", "d3q39", "--lx", 8, "--ly", 8, "--lz", 16, "--steps", 2,
        "--pictures", "none", "--no-progress"]
RT2D = ["rayleigh-taylor", "--lx", 8, "--ly", 32, "--steps", 2, "--no-progress"]


@pytest.fixture
def must_not_build_2d(monkeypatch):
    from lbgen.run import driver

    def boom(*a, **k):
        raise AssertionError("the simulation was built before the refusal")
    monkeypatch.setattr(driver, "make_simulation", boom)


@pytest.mark.parametrize("command, gravity, axis", [
    (RT3D, "0,0,-10", "z"),           # issue 35: an impossible hydrostatic start (densities of both signs)
    (RT3D, "0,0,1.5", "z"),           # upwards, as strong: the free fall far beyond Mach 0.5
    (RT3D, "0,0,-1.5", "z"),          # finite, positive densities, but a free fall above the Mach limit
    (RT2D, "0,-10", "y"),             # the same rule in 2D (one home: lbgen.run.setups.rt_gravity_refusal)
])
def test_absurd_rayleigh_taylor_gravity_is_refused_before_work(tmp_path, must_not_build, must_not_build_2d,
                                                               command, gravity, axis):
    out = tmp_path / "run"
    value = gravity.split(",")[-1]
    refused(cli("run", *command, "--gravity", gravity, "--out", out), f"g_{axis} = {float(value):g}",
             "allowed here", f"|g_{axis}|")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_the_rayleigh_taylor_gravity_rule_takes_the_defaults_and_refuses_both_signs():
    """One rule in 2D and 3D: the set-ups' defaults and the README's main job pass; past the
    bound, upwards or downwards, refused; the hydrostatic start of an allowed gravity is
    finite and positive."""
    from lbgen.run.setups import RT_GRAVITY, RT_GRAVITY_3D, rayleigh_taylor3d, rt_gravity_refusal
    assert rt_gravity_refusal(RT_GRAVITY[1], velocity_set="d2q37", lx=1024, depth=4096) is None
    assert rt_gravity_refusal(-4e-4, velocity_set="d2q37", lx=128, depth=512) is None
    assert rt_gravity_refusal(RT_GRAVITY_3D[2], velocity_set="d3q39", lx=32, depth=32) is None
    for g in (-10.0, 10.0, -1.5, 1.5, float("nan"), float("-inf")):
        assert rt_gravity_refusal(g, velocity_set="d3q39", lx=8, depth=16) is not None, g
    rho = rayleigh_taylor3d(8, 8, 16, gravity=(0.0, 0.0, -0.05))["rho"]
    assert rt_gravity_refusal(-0.05, velocity_set="d3q39", lx=8, depth=16) is None
    assert np.all(np.isfinite(rho)) and rho.min() > 0
    bad = rayleigh_taylor3d(8, 8, 16, gravity=(0.0, 0.0, -10.0))["rho"]
    assert not (bad.min() > 0)                       # what the rule keeps out: negative densities


# --------------------------------------------------------------------------- the start line, resume, run folders
def test_the_start_line_names_the_lattice_of_an_init_file(tmp_path):
    """Broken in round four: `--init` runs announced the default lattice, not the file's."""
    two, three = tmp_path / "two.npz", tmp_path / "three.npz"
    assert cli("run", "--lx", 8, "--ly", 16, "--steps", 1, "--save", two, "--no-progress").exit_code == 0
    assert cli("run", "--velocity-set", "d3q19", "--lx", 6, "--ly", 4, "--lz", 10, "--steps", 1, "--save", three,
                "--no-progress").exit_code == 0
    r2 = cli("run", "--init", two, "--steps", 1, "--no-progress")
    r3 = cli("run", "--velocity-set", "d3q19", "--init", three, "--steps", 1, "--no-progress")
    assert r2.exit_code == 0 and r3.exit_code == 0, r2.output + r3.output
    start2 = r2.stderr.splitlines()[0]
    start3 = r3.stderr.splitlines()[0]
    assert f"fields from {two}" in start2 and ", 8 x 16," in start2 and "64 x 256" not in start2
    assert f"fields from {three}" in start3 and ", 6 x 4 x 10," in start3 and "32 x 32 x 32" not in start3


def test_resume_of_a_finished_run_writes_nothing(tmp_path):
    """Broken in round four: 'nothing to run', then the outputs were rewritten."""
    out = tmp_path / "done"
    r = cli("run", "--lx", 8, "--ly", 16, "--steps", 10, "--checkpoint-every", 10, "--out", out, "--no-progress")
    assert r.exit_code == 0, r.output
    before = _digests(out)
    again = cli("run", "--resume", out, "--no-progress")
    assert again.exit_code == 0, again.output
    assert "already at step 10: nothing to run" in again.stderr
    assert _digests(out) == before


@pytest.mark.parametrize("content, words", [
    ("{}", ["holds no run description", "no 'config' object"]),
    ('{"config": 3, "status": "finished"}', ["holds no run description", "keys: config, status"]),
])
def test_resume_of_a_manifest_without_a_run_is_named(tmp_path, content, words):
    out = tmp_path / "r"
    out.mkdir()
    (out / "manifest.json").write_text(content)
    refused(cli("run", "--resume", out), f"cannot resume {out}", *words)
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]


@pytest.mark.parametrize("command", [["run", "--resume"], ["movie"], ["plot"]])
def test_a_file_given_as_run_folder_is_named_a_file(tmp_path, command):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    refused(cli(*command, path), str(path), "is a file, not a run folder")
    assert path.read_text() == "hello"
