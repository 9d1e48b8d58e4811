"""Trust (issue 11): a run does what it was asked or refuses before it starts, and nothing is
lost -- health before persistence, one run per folder, interrupts, full disks, bad inputs."""
import json
import os
import signal

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.run import driver
from lbgen.system import limits
from lbgen.run.checkpoint import checkpoint_path, latest_checkpoint, list_checkpoints, read_checkpoint
from lbgen.cli.main import main
from lbgen.run.driver import Run, RunConfig
from lbgen.run.folder import OWNER_NAME, RunFolderError
from lbgen.run.stopping import RunInterrupted
from lbgen.simulation.parameters import SimulationError

quiet = dict(echo=lambda m: None)
SMALL = dict(lx=8, ly=32, pictures=())


def _cli(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def _manifest(folder):
    return json.loads((folder / "manifest.json").read_text())


def _must_not_build(monkeypatch):
    """Refusals come first: building the simulation (compiling, allocating) fails the test."""
    def boom(*a, **k):
        raise AssertionError("the simulation was built before the refusal")
    monkeypatch.setattr(driver, "make_simulation", boom)


def _healthy(populations):
    rho = populations.sum(axis=0)
    return bool(np.isfinite(populations).all() and (rho > 0).all())


# --------------------------------------------------------------------------- health before persistence
def test_diverging_run_keeps_only_healthy_checkpoints_and_names_one(tmp_path):
    """Broken item 1: checkpoints every 5 steps, the guard every 100: the kept ones were ~1e86."""
    out = tmp_path / "un1"
    result = _cli("run", "--lx", 32, "--ly", 64, "--steps", 300, "--tau", 0.501, "--amplitude", 0.9, "--out", out,
                  "--checkpoint-every", 5, "--pictures", "none", "--no-progress")
    assert result.exit_code == 2 and "diverged" in result.output
    kept = list_checkpoints(out)
    assert kept, "the healthy checkpoints must survive pruning"
    for _step, path in kept:
        populations, _, meta = read_checkpoint(path)
        assert _healthy(populations), f"{path.name} holds a diverged state"
        assert meta["healthy"] is True
    named = latest_checkpoint(out, verify=True)
    assert f"last healthy checkpoint is kept: {named}" in result.output.replace("\n", "")
    assert _manifest(out)["status"] == "diverged"


# --------------------------------------------------------------------------- one run per folder
def test_second_run_into_a_folder_in_use_is_refused_before_building(tmp_path, monkeypatch):
    out = tmp_path / "run"
    first = Run(RunConfig(**SMALL, steps=5, out=str(out)), **quiet)
    _must_not_build(monkeypatch)
    with pytest.raises(RunFolderError, match=rf"run folder {out} is in use by another run \(pid {os.getpid()}"):
        Run(RunConfig(**SMALL, steps=5, out=str(out)), **quiet)
    first.close()


def test_new_run_into_a_finished_run_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "run"
    assert _cli("run", "--lx", 8, "--ly", 32, "--steps", 10, "--out", out, "--checkpoint-every", 10,
                "--no-progress").exit_code == 0
    before = checkpoint_path(out, 10).read_bytes()
    result = _cli("run", "--lx", 8, "--ly", 32, "--steps", 4, "--out", out, "--no-progress")
    assert result.exit_code == 2
    assert "already holds a run (status 'finished' at step 10)" in result.output
    assert f"--resume {out}" in result.output and "--overwrite" in result.output
    assert checkpoint_path(out, 10).read_bytes() == before and _manifest(out)["step"] == 10
    result = _cli("run", "--lx", 8, "--ly", 32, "--steps", 4, "--out", out, "--overwrite", "--no-progress")
    assert result.exit_code == 0, result.output
    assert not list_checkpoints(out) and _manifest(out)["step"] == 4


def test_kill_9_leftovers_are_reported_and_cleaned_on_resume(tmp_path):
    """A killed run leaves its owner record (stale lock), 'running' and temporary files."""
    out = tmp_path / "run"
    Run(RunConfig(**SMALL, steps=10, out=str(out), checkpoint_every=5), **quiet).execute()
    manifest = _manifest(out)
    manifest["status"] = "running"
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / OWNER_NAME).write_text(json.dumps({"pid": 999999, "host": "elsewhere", "started": "yesterday"}))
    orphan = out / "checkpoints" / ".step-000000015.lbchk.x1y2.tmp"
    orphan.write_bytes(b"\0" * 1000)
    messages = []
    run = Run.resume(out, steps=15, echo=messages.append)
    text = "\n".join(messages)
    assert "left locked by pid 999999 on elsewhere" in text and "stale lock" in text
    assert "still says 'running' at step 10" in text
    assert "removed 1 temporary file(s)" in text and not orphan.exists()
    run.execute()
    assert _manifest(out)["status"] == "finished" and not (out / OWNER_NAME).exists()


def test_read_only_or_impossible_run_folder_is_a_clear_refusal(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    _must_not_build(monkeypatch)
    result = _cli("run", "--lx", 8, "--ly", 32, "--steps", 2, "--out", blocker / "run", "--no-progress")
    assert result.exit_code == 2 and f"--out {blocker / 'run'}: cannot create the folder" in result.output
    assert "Traceback" not in result.output
    if os.geteuid() != 0:                       # root writes anywhere: no read-only folder to test
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        result = _cli("run", "--lx", 8, "--ly", 32, "--steps", 2, "--out", ro, "--no-progress")
        assert result.exit_code == 2 and "not writable (permission denied)" in result.output


def test_save_path_is_checked_and_created_before_the_run(tmp_path, monkeypatch):
    target = tmp_path / "nodir" / "sub" / "x.npz"
    result = _cli("run", "--lx", 8, "--ly", 32, "--steps", 2, "--save", target, "--no-progress")
    assert result.exit_code == 0, result.output
    with np.load(target) as data:
        assert data["rho"].shape == (8, 32)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    _must_not_build(monkeypatch)
    result = _cli("run", "--lx", 8, "--ly", 32, "--steps", 2, "--save", blocker / "x.npz", "--no-progress")
    assert result.exit_code == 2 and f"--save {blocker / 'x.npz'}: its folder" in result.output


# --------------------------------------------------------------------------- interrupts and full disks
def _signal_config(d: int, **kw) -> RunConfig:
    """A small noisy 2D run, or a small 3D Taylor-Green vortex: the same Run drives both."""
    if d == 3:
        return RunConfig.build("taylor-green", ("test", {"velocity_set": "d3q19", "lx": 8, "ly": 8, "lz": 8,
                                                         "steps": 12, "time_block": 1, **kw}))
    return RunConfig(**SMALL, steps=12, seed=1, setup="uniform-noise", time_block=1, **kw)


@pytest.mark.parametrize("signum, d", [(signal.SIGINT, 2), (signal.SIGTERM, 2), (signal.SIGTERM, 3)])
def test_signal_ends_the_step_checkpoints_and_resume_is_bit_identical(tmp_path, signum, d):
    full = Run(_signal_config(d), **quiet)
    full.execute()
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}   # SIG_IGN under nohup
    out = tmp_path / "run"
    run = Run(_signal_config(d, out=str(out), **({"pictures": "none"} if d == 3 else {})), **quiet)
    step = run.sim.step

    def step_and_signal(n=1):
        step(n)
        if run.sim.time_step == 7:
            os.kill(os.getpid(), signum)         # arrives during the run, like Ctrl-C or kill
    run.sim.step = step_and_signal
    with pytest.raises(RunInterrupted) as err:
        run.execute()
    name = signal.Signals(signum).name
    assert f"interrupted by {name} at step 7 of 12" in str(err.value)
    assert f"lbgen run --resume {out} --steps 12" in str(err.value)
    assert err.value.exit_code == 128 + signum
    manifest = _manifest(out)
    assert manifest["status"] == "interrupted" and manifest["step"] == 7
    _, saved_step, _ = read_checkpoint(checkpoint_path(out, 7))
    assert saved_step == 7
    assert {s: signal.getsignal(s) for s in before} == before       # the handlers found are restored
    resumed = Run.resume(out, steps=12, **quiet)
    resumed.execute()
    assert resumed.sim.state().ndim == d + 1 and np.array_equal(resumed.sim.state(), full.sim.state())


def test_signal_without_run_folder_says_nothing_was_saved(tmp_path):
    run = Run(RunConfig(**SMALL, steps=10), **quiet)
    step = run.sim.step

    def step_and_signal(n=1):
        step(n)
        if run.sim.time_step == 3:
            os.kill(os.getpid(), signal.SIGINT)
    run.sim.step = step_and_signal
    with pytest.raises(RunInterrupted, match=r"SIGINT at step 3 of 10; nothing was saved \(no run folder"):
        run.execute()


def test_disk_full_during_a_checkpoint_keeps_the_older_ones(tmp_path, monkeypatch):
    import errno

    from lbgen.run import checkpoint_file as ckpt
    out = tmp_path / "run"
    Run(RunConfig(**SMALL, steps=10, out=str(out), checkpoint_every=5), **quiet).execute()
    good = checkpoint_path(out, 10).read_bytes()
    real = ckpt._write_payload

    def disk_full(fh, array, header):
        real(fh, array, header)
        raise OSError(errno.ENOSPC, "No space left on device", fh.name)
    monkeypatch.setattr(ckpt, "_write_payload", disk_full)
    run = Run.resume(out, steps=20, **quiet)
    with pytest.raises(RunFolderError) as err:
        run.execute()
    message = str(err.value)
    assert "the disk is full" in message and "at step 15" in message and "no space left on the device" in message
    assert f"The last good checkpoint is kept: {checkpoint_path(out, 10)}" in message
    assert f"lbgen run --resume {out} --steps 20" in message
    assert checkpoint_path(out, 10).read_bytes() == good
    assert not list((out / "checkpoints").glob(".*.tmp")), "a temporary file was left"
    assert _manifest(out)["status"] == "failed" and "disk is full" in _manifest(out)["error"]


# --------------------------------------------------------------------------- bad inputs refused first
def test_lattice_larger_than_memory_is_refused_with_the_estimate(tmp_path, monkeypatch):
    _must_not_build(monkeypatch)
    result = _cli("run", "--lx", 200000, "--ly", 200000, "--steps", 1, "--no-progress")
    assert result.exit_code == 2 and "the lattice 200000 x 200000 (double) needs about" in result.output
    assert "GiB are available" in result.output and "Traceback" not in result.output
    monkeypatch.setattr(limits, "available_memory", lambda: 2**20)
    with pytest.raises(ValueError, match=r"64 x 256 \(single\) needs about 0\.0\d+ GiB .* only 0\.000977 GiB"):
        Run(RunConfig(lx=64, ly=256, precision="single"), **quiet)


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_bytes(b"\x80\x04garbage" * 10) and p, "not an .npz archive"),
    (lambda p: _npz(p, rho=np.ones((4, 8)), ux=np.zeros((4, 8)), uy=np.zeros((4, 8))), "missing arrays ['T']"),
    (lambda p: _npz(p, rho=np.ones((4, 8)), ux=np.zeros((4, 8)), uy=np.zeros((4, 8)), T=np.ones((4, 9))),
     "must share one 2-D shape"),
    (lambda p: _npz(p, rho=np.ones((4, 8)), ux=np.zeros((4, 8)), uy=np.zeros((4, 8)),
                    T=np.array([[{"a": 1}] * 8] * 4, dtype=object)), "array 'T' has dtype object"),
    (lambda p: _npz(p, rho=np.ones((4, 8)), ux=np.zeros((4, 8)), uy=np.full((4, 8), np.nan), T=np.ones((4, 8))),
     "array 'uy' has 32 NaN/Inf values (first at x=0, y=0)"),
    (lambda p: _npz(p, rho=np.ones((4, 8)), ux=np.zeros((4, 8)), uy=np.zeros((4, 8)), T=-np.ones((4, 8))),
     "array 'T' must be positive everywhere"),
])
def test_bad_init_files_are_refused_naming_file_and_key(tmp_path, monkeypatch, make, message):
    path = tmp_path / "init.npz"
    make(path)
    if message != "array 'T' must be positive everywhere" and "NaN" not in message:
        _must_not_build(monkeypatch)
    result = _cli("run", "--init", path, "--steps", 1, "--no-progress")
    assert result.exit_code == 2, result.output
    assert f"--init {path}" in result.output and message in result.output
    assert "allow_pickle" not in result.output and "Traceback" not in result.output


def test_resume_with_steps_at_or_below_the_checkpoint_says_so(tmp_path):
    out = tmp_path / "run"
    assert _cli("run", "--lx", 8, "--ly", 32, "--steps", 20, "--out", out, "--checkpoint-every", 10,
                "--no-progress").exit_code == 0
    result = _cli("run", "--resume", out, "--steps", 10, "--no-progress")
    assert result.exit_code == 2
    assert "--steps 10 is below the step of the newest good checkpoint" in result.output and "(20)" in result.output
    result = _cli("run", "--resume", out, "--steps", 20, "--no-progress")
    assert result.exit_code == 0, result.output
    assert "already at step 20: nothing to run" in result.output and "nan" not in result.output.lower()


def test_zero_steps_is_a_valid_run_without_nan(tmp_path):
    out = tmp_path / "run"
    result = _cli("run", "--lx", 8, "--ly", 32, "--steps", 0, "--out", out, "--no-progress")
    assert result.exit_code == 0, result.output
    assert "done: 0 steps" in result.output and "nan" not in result.output.lower()
    manifest = _manifest(out)
    assert manifest["status"] == "finished" and manifest["mlups"] is None
    assert (out / "fields" / "step-000000000.h5").exists()


def test_thread_counts_beyond_the_cap(monkeypatch):
    _must_not_build(monkeypatch)
    result = _cli("run", "--threads", 100000, "--no-progress")
    assert result.exit_code == 2
    assert f"--threads 100000: allowed 0 (OMP_NUM_THREADS or all cores) to {limits.max_threads()}" in result.output
    result = _cli("run", "--threads", -3, "--no-progress")
    assert result.exit_code == 2 and "threads=-3 must be >= 0" in result.output     # the run description
    with pytest.raises(ValueError, match="--threads 100000"):
        Run(RunConfig(lx=8, ly=32, threads=100000), **quiet)


def test_omp_num_threads_beyond_the_cap_is_lowered_with_a_message(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "100000")
    messages = []
    try:
        run = Run(RunConfig(**SMALL, steps=2), echo=messages.append)
        run.execute()
        cap = limits.max_threads()
        assert f"OMP_NUM_THREADS=100000 is beyond the cap of {cap} threads" in "\n".join(messages)
        assert run.sim.program.threads == cap
    finally:    # the OpenMP thread count is per process: back to one for the other tests here
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        Run(RunConfig(**SMALL, steps=0, threads=1), **quiet)


def test_resume_refuses_a_hand_edited_manifest(tmp_path):
    """A manifest whose non-resumable options were edited (strict flipped) no longer describes
    the run that wrote the checkpoint: resuming it is refused, naming the option."""
    out = tmp_path / "run"
    Run(RunConfig(**SMALL, steps=6, out=str(out), checkpoint_every=3), **quiet).execute()
    manifest = out / "manifest.json"
    data = json.loads(manifest.read_text())
    data["config"]["strict"] = not data["config"]["strict"]
    manifest.write_text(json.dumps(data))
    with pytest.raises(SimulationError, match=r"manifest.json differs from the run that wrote the checkpoint.*strict"):
        Run.resume(out, steps=9, **quiet)


def test_resume_into_another_out_folder_is_refused(tmp_path):
    out = tmp_path / "run"
    Run(RunConfig(**SMALL, steps=6, out=str(out), checkpoint_every=3), **quiet).execute()
    other = tmp_path / "other"
    with pytest.raises(SimulationError, match="names another folder"):
        Run.resume(out, steps=9, overrides={"out": str(other)}, **quiet)
    assert not other.exists()


def test_divergence_with_extreme_wall_temperatures_names_them_first():
    cfg = RunConfig.build("rayleigh-taylor", ("test", {"lx": 16, "ly": 64, "steps": 50, "check_every": 1,
                                                       "t_bottom": 5.0, "t_top": 0.1}))
    with pytest.raises(SimulationError) as err:
        Run(cfg, **quiet).execute()
    message = str(err.value)
    assert "Hint: the wall temperatures (T_bottom = 5, T_top = 0.1)" in message


@pytest.mark.parametrize("args", [
    ["--lx", 64, "--ly", 60, "--layout", "caosoa", "--vl", 8],                       # 2D: VL does not divide LY
    ["taylor-green", "--velocity-set", "d3q19", "--lx", 8, "--ly", 8, "--lz", 7, "--layout", "caosoa",
     "--vl", 8],                                                                    # 3D: nor LZ
])
def test_a_run_refused_at_its_build_leaves_no_trace(tmp_path, args):
    """The kernels a run asks for cannot be built: the run folder it created (with its missing
    parents) is gone again, and an existing folder keeps exactly what the user had in it."""
    new = tmp_path / "new" / "nested" / "run"
    r = _cli("run", *args, "--steps", 2, "--out", new, "--no-progress")
    assert r.exit_code == 2 and ("multiple of VL=8" in r.output or "does not divide" in r.output), r.output
    assert not (tmp_path / "new").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    r = _cli("run", *args, "--steps", 2, "--out", mine, "--no-progress")
    assert r.exit_code == 2
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"] and (mine / "notes.txt").read_text() == "keep"


def test_a_run_from_a_relative_init_file_resumes_from_anywhere_and_names_a_lost_file(tmp_path, monkeypatch):
    """The manifest records the --init file's absolute path (a resume from another folder finds
    it); a resume whose --init file is gone says so, and what the file is needed for."""
    work = tmp_path / "work"
    work.mkdir()
    shape = (8, 32)
    np.savez(work / "start.npz", rho=np.ones(shape), ux=np.full(shape, 0.01), uy=np.zeros(shape), T=np.ones(shape))
    monkeypatch.chdir(work)
    r = _cli("run", "--init", "start.npz", "--steps", 4, "--checkpoint-every", 2, "--out", "run", "--no-progress")
    assert r.exit_code == 0, r.output
    assert _manifest(work / "run")["config"]["init"] == str(work / "start.npz")
    monkeypatch.chdir(tmp_path)
    r = _cli("run", "--resume", work / "run", "--steps", 6, "--no-progress")
    assert r.exit_code == 0, r.output
    assert _manifest(work / "run")["step"] == 6
    (work / "start.npz").rename(work / "moved.npz")
    r = _cli("run", "--resume", work / "run", "--steps", 8, "--no-progress")
    assert r.exit_code == 2 and f"started from --init {work / 'start.npz'}" in r.output and "put it back" in r.output
