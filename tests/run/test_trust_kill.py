"""Real processes killed, interrupted and starved of disk during a run: kill -9 in a loop
(mostly while a checkpoint is written: one every step), SIGINT/SIGTERM through the command
line, and a size-limited file system (RLIMIT_FSIZE: writes beyond it fail with EFBIG).
Nothing is lost: every start finds a good checkpoint, and the run resumed after all the
kills ends bit-identical to an uninterrupted one."""
import json
import os
import random
import resource
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from lbgen.run.checkpoint import checkpoint_path, latest_checkpoint, read_checkpoint
from lbgen.run.driver import Run, RunConfig

ARGS = ["--lx", "8", "--ly", "32", "--pictures", "none", "--no-progress"]


def _lbgen(*args, **kw):
    env = dict(os.environ, OMP_NUM_THREADS="1", LBGEN_TUNED="off")
    return subprocess.Popen([sys.executable, "-m", "lbgen", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


def _newest_step(out):
    newest = latest_checkpoint(out)
    return -1 if newest is None else int(newest.stem.split("-")[1])


def _wait_for_checkpoint(out, proc, after=-1, timeout=120):
    """Until the process writes checkpoints beyond step `after` (it is past its start-up)."""
    t0 = time.time()
    while _newest_step(out) <= after:
        assert proc.poll() is None, proc.communicate()
        assert time.time() - t0 < timeout
        time.sleep(0.05)


@pytest.mark.slow
def test_kill_9_loop_while_checkpointing_loses_nothing(tmp_path):
    steps = 150
    Run(RunConfig(lx=8, ly=32, steps=1), echo=lambda m: None)      # the kernels compiled once, cached
    out = tmp_path / "run"
    rng = random.Random(11)
    kills = 0
    proc = _lbgen("run", *ARGS, "--steps", steps, "--out", out, "--checkpoint-every", 1)
    started_at = -1
    for _ in range(3):
        _wait_for_checkpoint(out, proc, after=started_at)
        time.sleep(rng.uniform(0.0, 0.2))
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        kills += 1
        assert json.loads((out / "manifest.json").read_text())["status"] == "running"
        assert latest_checkpoint(out, verify=True) is not None, "a kill lost every checkpoint"
        started_at = _newest_step(out)
        proc = _lbgen("run", "--resume", out, "--steps", steps, "--no-progress")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert kills >= 2
    assert "did not end cleanly" in err and "stale lock" in err      # the last start followed a kill
    assert not list(out.rglob(".*.tmp")), "orphan temporary files were left"
    final, step, _ = read_checkpoint(checkpoint_path(out, steps))
    straight = Run(RunConfig(lx=8, ly=32, steps=steps, pictures=()), echo=lambda m: None)
    straight.execute()
    assert step == steps and np.array_equal(final, straight.sim.state())


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_cli_signal_writes_a_checkpoint_and_prints_the_resume_command(tmp_path, signum):
    out = tmp_path / "run"
    proc = _lbgen("run", *ARGS, "--steps", 100000, "--out", out, "--checkpoint-every", 50000)
    t0 = time.time()
    while not (out / "manifest.json").exists():
        assert proc.poll() is None and time.time() - t0 < 60
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    manifest = json.loads((out / "manifest.json").read_text())
    step = manifest["step"]
    assert manifest["status"] == "interrupted" and 0 <= step < 100000    # step 0: stopped before the first step
    assert f"checkpoint written: {checkpoint_path(out, step)}" in err
    assert f"lbgen run --resume {out} --steps 100000" in err and "Traceback" not in err
    assert read_checkpoint(checkpoint_path(out, step))[1] == step      # resumed: test_trust_run


def _limit_file_size(limit):
    def setup():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)     # EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return setup


def test_size_limited_disk_during_a_checkpoint_keeps_the_older_ones(tmp_path):
    out = tmp_path / "run"
    Run(RunConfig(lx=8, ly=32, steps=20, out=str(out), checkpoint_every=10, pictures=()),
        echo=lambda m: None).execute()
    good = checkpoint_path(out, 20).read_bytes()
    # a checkpoint of 8 x 32 is ~76 kB; the manifest and fields are far smaller
    proc = _lbgen("run", "--resume", out, "--steps", 40, "--no-progress", preexec_fn=_limit_file_size(40_000))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert "at step 30" in err and f"The last good checkpoint is kept: {checkpoint_path(out, 20)}" in err
    assert "Traceback" not in err
    assert checkpoint_path(out, 20).read_bytes() == good
    assert not checkpoint_path(out, 30).exists() and not list(out.rglob(".*.tmp"))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "step 30" in manifest["error"]
