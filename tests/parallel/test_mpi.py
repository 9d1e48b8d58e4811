"""Several MPI ranks: `mpiexec -n N lbgen run` equals one process; outputs, resume, failures.

Each test starts mpiexec from the venv as a subprocess (OMP_NUM_THREADS=1: two ranks on
two cores) with a timeout, so a hang fails instead of blocking the suite.
"""
import subprocess
import sys

import numpy as np
import pytest

from helpers import require
from click.testing import CliRunner

from lbgen.parallel import decomposition
from mpi_support import launch_env as _env, mpiexec_path as _mpiexec
from lbgen.parallel import model as mpi_model
from lbgen.cli.main import main

pytestmark = pytest.mark.slow       # subprocess builds and launches: CI=true or --slow

TIMEOUT = 90
FIELDS = ("rho", "ux", "uy", "T")






def mpirun(n, args, cwd, script=None, **env):
    cmd = [_mpiexec(), "-n", str(n), sys.executable] + ([str(script)] if script else ["-m", "lbgen"]) + \
        [str(a) for a in args]
    try:
        return subprocess.run(cmd, cwd=cwd, env=_env(**env), capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} hung (> {TIMEOUT} s): {e.stdout} {e.stderr}")


def single(args, path):
    result = CliRunner().invoke(main, ["run"] + [str(a) for a in args] + ["--save", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    return np.load(path)


def load(path):
    return np.load(path)


RT = ["rayleigh-taylor", "--lx", 24, "--ly", 32, "--steps", 12, "--gravity", "0,-1e-4"]
PERIODIC = ["uniform-noise", "--collision", "regularized", "--c1", 0.05, "--c2", 0.05, "--gravity", "0,-1e-4",
            "--amplitude", 0.02, "--lx", 24, "--ly", 32, "--steps", 12]


@pytest.mark.parametrize("setup", [PERIODIC, RT], ids=["periodic", "rayleigh-taylor-walls"])
def test_two_ranks_are_bit_identical_to_one_process_in_strict_mode(tmp_path, setup):
    ref = single(setup + ["--strict"], tmp_path / "one.npz")
    proc = mpirun(2, ["run"] + setup + ["--strict", "--save", "two.npz"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("saved rho") == 1            # rank 0 prints, once
    assert "2 MPI ranks" in proc.stderr
    two = load(tmp_path / "two.npz")
    for k in FIELDS:
        assert np.array_equal(two[k], ref[k]), k


def test_two_ranks_match_within_tolerance_without_strict(tmp_path):
    ref = single(PERIODIC, tmp_path / "one.npz")
    proc = mpirun(2, ["run"] + PERIODIC + ["--save", "two.npz"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    two = load(tmp_path / "two.npz")
    for k in FIELDS:
        assert np.abs(two[k] - ref[k]).max() <= 1e-12 * max(1.0, np.abs(ref[k]).max()), k


def test_three_ranks_with_lx_not_divisible(tmp_path):
    args = ["uniform-noise", "--lx", 20, "--ly", 32, "--steps", 8, "--strict", "--walls"]
    ref = single(args, tmp_path / "one.npz")
    proc = mpirun(3, ["run"] + args + ["--save", "three.npz"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "x=0..+7" in proc.stderr and "x=14..+6" in proc.stderr    # widths 7, 7, 6
    three = load(tmp_path / "three.npz")
    for k in FIELDS:
        assert np.array_equal(three[k], ref[k]), k


def test_a_lattice_too_narrow_for_the_ranks_is_refused(tmp_path):
    proc = mpirun(3, ["run", "--lx", 8, "--ly", 32, "--steps", 2, "--no-progress", "--ranks-grid", "3x1"], tmp_path)
    assert proc.returncode != 0
    assert "--ranks-grid 3x1 on 8 x 32: LX=8 split over 3 ranks leaves sub-domains of 2 sites" in proc.stderr
    assert proc.stderr.count("fewer than the 3 the halo needs") == 1      # printed once, by rank 0


def test_outputs_checkpoints_and_resume_with_two_ranks(tmp_path):
    common = ["rayleigh-taylor", "--lx", 24, "--ly", 32, "--gravity", "0,-1e-4", "--strict", "--pictures", "none",
              "--checkpoint-every", 6, "--output-every", 4, "--series-every", 1]
    full = mpirun(2, ["run"] + common + ["--steps", 12, "--out", "full", "--save", "full.npz"], tmp_path)
    assert full.returncode == 0, full.stderr
    part = mpirun(2, ["run"] + common + ["--steps", 6, "--out", "r"], tmp_path)
    assert part.returncode == 0, part.stderr
    run_dir = tmp_path / "r"
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["step-000000006.lbpieces"]   # a piece per rank
    resumed = mpirun(2, ["run", "--resume", "r", "--steps", 12, "--save", "resumed.npz", "--no-progress"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("resuming") == 1
    a, b = load(tmp_path / "full.npz"), load(tmp_path / "resumed.npz")
    for k in FIELDS:
        assert np.array_equal(a[k], b[k]), k
    # written once, by rank 0 from the ranks' gathered diagnostics rows: a row every step of
    # this short run (the resume continues after the checkpoint's step), the manifest of a 2-rank run
    steps = [line.split(",")[0] for line in (run_dir / "series.csv").read_text().splitlines()[1:]]
    assert steps == [str(s) for s in range(13)]
    import json
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "finished" and manifest["device"]["ranks"] == 2
    assert sorted(p.name for p in (run_dir / "fields").iterdir()) == [
        f"step-{s:09d}.h5" for s in (0, 4, 6, 8, 12)]
    # the folder is the same as a single-process one: one process can resume it too
    result = CliRunner().invoke(main, ["run", "--resume", str(run_dir), "--steps", 12, "--save",
                                       str(tmp_path / "again.npz"), "--no-progress"])
    assert result.exit_code == 0, result.output
    c = load(tmp_path / "again.npz")
    assert all(np.array_equal(a[k], c[k]) for k in FIELDS)


def test_a_failing_rank_ends_every_rank(tmp_path):
    script = tmp_path / "fail.py"      # rank 1 fails in its 3rd step (the failure is injected here, not in lbgen)
    script.write_text(
        "import sys\n"
        "from lbgen.cli.main import main\n"
        "from lbgen.parallel.simulation import DistributedSimulation\n"
        "real_step = DistributedSimulation.step\n"
        "def step(self, n=1):\n"
        "    if self.rank == 1 and self.time_step >= 3:\n"
        "        raise RuntimeError(f'injected failure on rank {self.rank} at step {self.time_step}')\n"
        "    return real_step(self, n)\n"
        "DistributedSimulation.step = step\n"
        "sys.argv = ['lbgen', 'run', '--lx', '24', '--ly', '32', '--steps', '40', '--check-every', '1', "
        "'--no-progress']\n"
        "main()\n")
    proc = mpirun(2, [], tmp_path, script=script)
    assert proc.returncode != 0
    assert "rank 1 of 2 failed" in proc.stderr and "injected failure" in proc.stderr
    assert "aborting all 2 ranks" in proc.stderr


def test_ranks_with_different_configurations_stop_together(tmp_path):
    script = tmp_path / "mismatch.py"
    script.write_text(
        "import os, sys\n"
        "from lbgen.cli.main import main\n"
        "rank = int(os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', '0')))\n"
        "sys.argv = ['lbgen', 'run', '--lx', '24', '--ly', '32', '--steps', str(4 + rank), '--no-progress']\n"
        "main()\n")
    proc = mpirun(2, [], tmp_path, script=script)
    assert proc.returncode == 2
    # the command lines differ: refused at start-up (lbgen.parallel.mpi.check_same_command), once, by rank 0;
    # a difference the command lines do not show is the configuration check's (test_mpi_signals.py)
    assert proc.stderr.count("were started with different commands") == 1, proc.stderr
    assert "rank 0 runs `lbgen run --lx 24 --ly 32 --steps 4 --no-progress`" in proc.stderr
    assert "rank 1 runs `lbgen run --lx 24 --ly 32 --steps 5 --no-progress`" in proc.stderr


def test_divergence_stops_every_rank_with_one_message(tmp_path):
    proc = mpirun(2, ["run", "--lx", 24, "--ly", 32, "--steps", 60, "--amplitude", 3.0, "--tau", 0.5001,
                      "--check-every", 10, "--no-progress"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("the run diverged by step") == 1 and "first bad site" in proc.stderr


# --- the communication model ---------------------------------------------------------------
def test_ring_shift_fit_recovers_latency_and_bandwidth():
    rng = np.random.default_rng(0)
    sizes = np.array([8, 1024, 16384, 131072, 1048576], dtype=float)
    L, B = 3e-6, 8e9
    times = (L + sizes / B) * (1 + 0.01 * rng.standard_normal(sizes.size))
    fit = mpi_model.fit_latency_bandwidth(sizes, times)
    assert fit.latency > 0 and fit.bandwidth > 0
    assert fit.bandwidth == pytest.approx(B, rel=0.05) and fit.latency == pytest.approx(L, rel=0.5)
    flat = mpi_model.fit_latency_bandwidth([8, 16, 32], [1e-6, 0.9e-6, 1e-6])   # noise: clamped, still positive
    assert flat.latency > 0 and flat.bandwidth > 0
    with pytest.raises(ValueError):
        mpi_model.fit_latency_bandwidth([8], [1e-6])


def test_rank_model_and_decomposition():
    assert decomposition.slab_widths(20, 3) == [7, 7, 6] and decomposition.slab_starts(20, 3) == [0, 7, 14]
    cm = mpi_model.CommModel(latency=1e-5, bandwidth=1e9)
    assert mpi_model.halo_bytes(32) == 3 * 38 * 37 * 8
    one = mpi_model.predict(1e-8, 256, 1024, 1, cm)
    assert one["t_comm"] == 0 and one["t_step"] == pytest.approx(256 * 1024 * 1e-8)
    two = mpi_model.predict(1e-8, 256, 1024, 2, cm)
    assert two["t_comm"] == pytest.approx(2 * (1e-5 + mpi_model.halo_bytes(1024) / 1e9))
    assert two["t_step"] <= mpi_model.predict(1e-8, 256, 1024, 2, cm)["t_step"]
    with pytest.raises(Exception, match="LX=8 is too narrow for N=3"):
        decomposition.check_decomposition(8, 3, 3)


def test_model_ranks_prints_a_table(tmp_path):
    result = CliRunner().invoke(main, ["model", "--ranks", 2, "--lx", 24, "--ly", 32, "--steps", 2])
    assert result.exit_code == 0, result.output
    assert "model MLUPS" in result.output and "assumed" in result.output
    rows = [line.split() for line in result.output.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["1", "2"]
    proc = mpirun(2, ["model", "--ranks", 2, "--lx", 24, "--ly", 32, "--steps", 2], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("model MLUPS") == 1 and "ring shift over 2 ranks" in proc.stdout
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) == 2 and all(len(r) == 8 for r in rows)          # measured column filled


def test_each_rank_can_run_host_plus_device(tmp_path):
    from lbgen.backends import available
    require(*available("opencl"), "OpenCL")
    args = ["--lx", 24, "--ly", 64, "--steps", 8, "--strict"]
    ref = single(args, tmp_path / "one.npz")
    proc = mpirun(2, ["run"] + args + ["--hetero", "opencl", "--split", "0.5", "--save", "two.npz",
                                       "--no-progress"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("opencl") == 2 and "rank 1 c" in proc.stderr   # a device bulk per rank
    two = load(tmp_path / "two.npz")
    assert all(np.array_equal(two[k], ref[k]) for k in FIELDS)
