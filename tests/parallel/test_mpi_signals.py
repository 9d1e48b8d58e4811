"""Signals and mismatched launches under MPI: nothing hangs, nothing is lost.

What MPICH's hydra (mpiexec 5.0) does here, measured: the first SIGINT to mpiexec is
forwarded to every rank ("Sending Ctrl-C to processes as requested"), a second one makes
hydra itself kill every rank (exit status 1); every SIGTERM is forwarded to every rank.
mpiexec exits with the ranks' exit status (130, 143), or with the code a rank gave
MPI_Abort.  So: one signal -> every rank stops after the same step (the ranks agree at
sweep boundaries), one checkpoint, manifest "interrupted", exit 128 + signum, and the
resumed run is bit-identical to an uninterrupted one; a second SIGTERM aborts every rank
(exit 143); a launch whose ranks run different commands is refused within seconds.

Each launch runs in its own session with a timeout; whatever is left of it is killed at
the end, and the tests check that no process of the run is left (pgrep on its unique
folder).
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mpi_support import launch_env as _env, mpiexec_path as _mpiexec
from lbgen.run.stopping import StopSignals

FIELDS = ("rho", "ux", "uy", "T")
STOP_TIMEOUT = 30          # seconds from the signal to mpiexec's exit
ARGS = ["--lx", 12, "--ly", 32, "--no-progress", "--strict", "--time-block", 1]
FOLDER = ["--pictures", "none", "--series-every", 5]      # what a run folder takes
END = 1500                 # the resumed and the uninterrupted runs end here






def _lbgen(*args):
    return [sys.executable, "-m", "lbgen", *map(str, args)]


def launch(cmd, cwd, **env):
    """mpiexec ... in its own session (so that a leftover can be killed as a group)."""
    return subprocess.Popen([_mpiexec(), *map(str, cmd)], cwd=cwd, env=_env(**env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(proc, timeout):
    """(returncode, stdout, stderr, seconds) once proc ends; fails (after killing its session)
    if it runs past `timeout` seconds."""
    t0 = time.monotonic()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"mpiexec hung (> {timeout} s after it was told to stop): {out} {err}")
    return proc.returncode, out, err, time.monotonic() - t0


def mpirun(cmd, cwd, timeout=120, **env):
    proc = launch(cmd, cwd, **env)
    try:
        return finish(proc, timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def leftovers(marker: str, wait: float = 5.0):
    """Processes whose command line holds `marker` (a unique folder), after up to `wait` s."""
    t0 = time.monotonic()
    while True:
        found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
        found = [p for p in found if int(p) != os.getpid()]
        if not found or time.monotonic() - t0 > wait:
            return [(p, Path(f"/proc/{p}/cmdline").read_text().replace("\0", " ") if Path(f"/proc/{p}").exists()
                     else "?") for p in found]
        time.sleep(0.2)


def wait_for_steps(out: Path, proc, rows: int = 3, timeout: float = 120):
    """Until series.csv has `rows` rows (the loop runs: past set-up and compilation)."""
    t0 = time.monotonic()
    series = out / "series.csv"
    while not (series.exists() and len(series.read_text().splitlines()) > rows):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < timeout, "the run did not start stepping"
        time.sleep(0.05)


def rank_pids(marker: str):
    """{rank: pid} of the lbgen processes of a launch (PMI_RANK in their environment)."""
    ranks = {}
    for p in subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split():
        try:
            environ = Path(f"/proc/{p}/environ").read_bytes().split(b"\0")
            cmdline = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            continue
        if b"lbgen" not in cmdline or b"mpiexec" in cmdline:
            continue
        for entry in environ:
            if entry.startswith(b"PMI_RANK="):
                ranks[int(entry.split(b"=")[1])] = int(p)
    return ranks


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The fields of an uninterrupted 2-rank run to step END."""
    where = tmp_path_factory.mktemp("straight")
    rc, out, err, _ = mpirun(["-n", 2] + _lbgen("run", *ARGS, "--steps", END, "--save", "straight.npz"), where)
    assert rc == 0, err
    return np.load(where / "straight.npz")


def _interrupt(tmp_path, send):
    """Start a long 2-rank run into a unique folder, let it step, call send(proc, out), and
    return (returncode, stderr, seconds to exit, out)."""
    out = tmp_path / "interrupted-run"
    proc = launch(["-n", 2] + _lbgen("run", *ARGS, *FOLDER, "--steps", 200000, "--out", out), tmp_path)
    try:
        wait_for_steps(out, proc)
        send(proc, out)
        rc, _, err, seconds = finish(proc, STOP_TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert not leftovers(str(out)), "a process of the run was left behind"
    return rc, err, seconds, out


def _check_stopped_cleanly(rc, err, out, signum, tmp_path, uninterrupted):
    name = signal.Signals(signum).name
    assert rc == 128 + signum, err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted", manifest
    step = manifest["step"]
    assert 0 < step < END, step
    assert f"interrupted by {name} at step {step} of 200000" in manifest["error"]
    # every rank left the loop after that step: one checkpoint, at it (a piece from each rank)
    assert [p.name for p in (out / "checkpoints").iterdir()] == [f"step-{step:09d}.lbpieces"]
    assert err.count(f"interrupted by {name} at step {step}") == 1, err        # rank 0 tells, once
    assert f"mpiexec -n 2 lbgen run --resume {out} --steps 200000" in err
    rc, _, err, _ = mpirun(["-n", 2] + _lbgen("run", "--resume", out, "--steps", END, "--save", "resumed.npz",
                                               "--no-progress"), tmp_path)
    assert rc == 0, err
    assert json.loads((out / "manifest.json").read_text())["status"] == "finished"
    resumed = np.load(tmp_path / "resumed.npz")
    for k in FIELDS:
        assert np.array_equal(resumed[k], uninterrupted[k]), k


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_mpiexec_stops_every_rank_at_one_step_and_the_resume_is_bit_identical(tmp_path, signum,
                                                                                           uninterrupted):
    rc, err, seconds, out = _interrupt(tmp_path, lambda proc, out: proc.send_signal(signum))
    assert seconds < STOP_TIMEOUT
    _check_stopped_cleanly(rc, err, out, signum, tmp_path, uninterrupted)


@pytest.mark.slow
def test_a_signal_to_one_rank_only_stops_every_rank(tmp_path, uninterrupted):
    """kill -TERM to rank 1 alone (not through mpiexec): the ranks still agree on the stop."""
    if not Path("/proc/self/environ").exists():
        pytest.skip("needs /proc to find the rank processes")

    def to_rank_one(proc, out):
        pids = rank_pids(str(out))
        assert set(pids) == {0, 1}, pids
        os.kill(pids[1], signal.SIGTERM)
    rc, err, _, out = _interrupt(tmp_path, to_rank_one)
    _check_stopped_cleanly(rc, err, out, signal.SIGTERM, tmp_path, uninterrupted)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_second_signal_ends_every_rank_at_once(tmp_path, signum):
    """Two signals in a row.  SIGTERM: every rank gets both; the first rank to see its second
    one calls MPI_Abort(143) (rank 0 first marks the manifest, when it can), which ends every
    rank: status 143 -- or 15 in the rare case that the second signal lands while a rank is
    already inside MPI_Finalize after a clean stop (Python's handlers are gone then).
    SIGINT: hydra does not forward the second one, it kills every rank itself (status 1, or
    0 when its own proxy trips an assertion while the ranks die: hydra's status is not lbgen's
    to set).  Either way the run ends at once, unfinished, and nothing is left running."""
    def twice(proc, out):
        proc.send_signal(signum)
        time.sleep(0.02)
        proc.send_signal(signum)
    rc, err, seconds, out = _interrupt(tmp_path, twice)
    assert seconds < STOP_TIMEOUT, err
    assert json.loads((out / "manifest.json").read_text())["status"] != "finished"
    if signum == signal.SIGTERM:
        assert rc in (143, 15), err


def test_a_signal_during_set_up_ends_every_rank(tmp_path):
    """Before the run loop (start-up, compilation) a signal ends every rank at once."""
    out = tmp_path / "setup-run"
    proc = launch(["-n", 2] + _lbgen("run", *ARGS, *FOLDER, "--steps", 200000, "--out", out), tmp_path)
    try:
        t0 = time.monotonic()
        while len(rank_pids(str(out))) < 2 and time.monotonic() - t0 < 30:
            time.sleep(0.02)
        time.sleep(0.5)            # python started; MPI, the set-up or the compilation under way
        proc.send_signal(signal.SIGTERM)
        rc, _, err, seconds = finish(proc, STOP_TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert rc != 0 and seconds < STOP_TIMEOUT, err
    assert not leftovers(str(out)), "a process of the run was left behind"


# --- mismatched launches ----------------------------------------------------------------------
@pytest.mark.slow
def test_a_rank_running_a_command_without_mpi_is_refused_within_seconds(tmp_path):
    """mpiexec -n 1 lbgen run : -n 1 lbgen info -- info never starts MPI, so run's MPI_Init
    would wait for ever; it gives up after LBGEN_MPI_TIMEOUT (default 10 s) with status 2."""
    marker = str(tmp_path / "mpmd-info")
    t0 = time.monotonic()
    rc, out, err, _ = mpirun(["-n", 1] + _lbgen("run", "--lx", 12, "--ly", 32, "--steps", 10, "--out", marker,
                                               "--no-progress") + [":", "-n", 1] + _lbgen("info"), tmp_path,
                             timeout=60)
    seconds = time.monotonic() - t0
    assert rc == 2, err
    assert seconds < 30, seconds
    assert "MPI did not start within 10 s" in err and "this one runs `lbgen run --lx 12" in err
    assert "lbgen" in out and "backend" in out          # info itself ran
    assert not leftovers(marker)


def test_ranks_running_different_commands_are_refused_by_every_rank(tmp_path):
    marker = str(tmp_path / "mpmd-model")
    rc, _, err, seconds = mpirun(["-n", 1] + _lbgen("run", "--lx", 24, "--ly", 32, "--steps", 10, "--out", marker,
                                                    "--no-progress") +
                                 [":", "-n", 1] + _lbgen("model", "--ranks", 2, "--lx", 24, "--ly", 32), tmp_path)
    assert rc == 2, err
    assert err.count("were started with different commands") == 1, err      # rank 0, once
    assert f"rank 0 runs `lbgen run --lx 24 --ly 32 --steps 10 --out {marker} --no-progress`" in err
    assert "rank 1 runs `lbgen model --ranks 2 --lx 24 --ly 32`" in err
    assert not leftovers(marker)


def test_the_same_command_with_different_configurations_is_refused(tmp_path):
    """Equal command lines, different --config files (each rank in its own folder): the
    configuration check (a hash of the resolved RunConfig) still names the difference."""
    for folder, steps in (("a", 4), ("b", 5)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "run.toml").write_text(f"steps = {steps}\n")
    command = _lbgen("run", "--config", "run.toml", "--lx", 24, "--ly", 32, "--no-progress")
    rc, _, err, _ = mpirun(["-n", 1, "-wdir", tmp_path / "a"] + command + [":", "-n", 1, "-wdir", tmp_path / "b"] +
                           command, tmp_path)
    assert rc == 2, err
    assert err.count("configuration mismatch") == 1 and "steps: 4 on rank 0 but 5" in err, err


def test_a_rank_that_starts_mpi_but_not_lbgen_is_aborted(tmp_path):
    """Another MPI program beside lbgen: MPI starts, the command check never completes; the
    lbgen rank aborts the job after LBGEN_MPI_TIMEOUT."""
    marker = str(tmp_path / "mpmd-other")
    other = [sys.executable, "-c", f"from mpi4py import MPI; import time; marker = {marker + '-other'!r}; "
                                   f"time.sleep(120)"]
    t0 = time.monotonic()
    rc, _, err, _ = mpirun(["-n", 1] + _lbgen("run", "--lx", 12, "--ly", 32, "--steps", 10, "--out", marker,
                                             "--no-progress") + [":", "-n", 1] + other, tmp_path, timeout=60,
                           LBGEN_MPI_TIMEOUT="3")
    assert rc == 2, err
    assert time.monotonic() - t0 < 30
    assert "not every MPI rank reached lbgen's start-up check within 3 s" in err
    assert not leftovers(marker)          # both ranks: the marker is in the other's command line too


# --- the agreement, without MPI ----------------------------------------------------------------
class FakeComm:
    """Two ranks in one process: rank 1's contribution to the Allreduce is scripted."""
    rank, size = 0, 2

    def __init__(self, other):
        self.other = other        # other(call) -> (pending signal, proposed K) of rank 1
        self.calls = 0

    def Allreduce(self, local, agreed, op=None):
        theirs = self.other(self.calls)
        self.calls += 1
        agreed[0] = max(local[0], theirs[0])
        agreed[1] = max(local[1], theirs[1])

    def Abort(self, code):
        self.aborted = code        # returns, as MPI_Abort can inside an MPI wait: os._exit follows


def test_the_ranks_agree_on_the_signal_and_on_k(monkeypatch):
    pytest.importorskip("mpi4py")
    from lbgen.run import stopping

    def exit_now(code):
        raise SystemExit(code)
    monkeypatch.setattr(stopping.os, "_exit", exit_now)
    # rank 1 got SIGTERM before the 3rd agreement; this rank got nothing: it stops there too
    comm = FakeComm(lambda call: (signal.SIGTERM if call >= 2 else 0, 1))
    stop = StopSignals(comm=comm, every=1)
    assert [stop.requested() for _ in range(2)] == [False, False]
    assert stop.requested() and stop.signal == signal.SIGTERM and stop.name == "SIGTERM"
    assert stop.pending is None and comm.calls == 3
    # K: the largest proposal wins, on every rank from the same call on
    comm = FakeComm(lambda call: (0, 4))
    stop = StopSignals(comm=comm)
    assert not stop.requested() and stop.every == 4          # agreed at the 1st call
    assert [stop.requested() for _ in range(4)] == [False] * 4
    assert comm.calls == 2 and stop.agreements == 2 and stop.calls == 5
    # a signal on this rank alone is only acted on when the ranks agree
    comm = FakeComm(lambda call: (0, 3))
    stop = StopSignals(comm=comm)
    stop.requested()
    stop._handle(signal.SIGINT, None)
    assert stop.pending == signal.SIGINT and stop.signal is None
    assert [stop.requested() for _ in range(3)] == [False, False, True] and stop.signal == signal.SIGINT
    # a second signal on a rank aborts every rank (MPI_Abort with 128 + signum)
    with pytest.raises(SystemExit) as end:
        stop._handle(signal.SIGINT, None)
    assert comm.aborted == 130 and end.value.code == 130


def test_the_adaptive_k_keeps_the_agreement_below_one_percent():
    stop = StopSignals(comm=FakeComm(lambda call: (0, 1)))
    stop._allreduce = 35e-6                     # measured here: 4 us median, 15-50 us mean (2 ranks, 2 cores)
    assert stop._propose(1e-3) == 4             # 1 ms sweeps: agree every 4th (35 us / 4 ms < 1 %)
    assert stop._propose(0.2) == 1              # big lattices: every sweep
    stop._allreduce = 5e-3
    assert stop._propose(1e-3) == 100           # capped: 100 sweeps of 1 ms, a signal answered within 0.1 s
    assert StopSignals(comm=FakeComm(lambda call: (0, 1)), every=7)._propose(1e-3) == 7
