"""Trust, round four (issue 35, items 3-5) for the commands around `lbgen run`: bounded work
(`lbgen model --max-ranks`), options that would be dropped silently (`lbgen tune --vls`),
`lbgen info | head`, and post-processing commands started by an MPI launcher (they render on
one process: refused once, from rank 0, before any work).  Each refusal: exit status 2, one
message line, no traceback, nothing done."""
import subprocess
import sys
import time

import pytest

from helpers import cli, refused
from lbgen.perf import tune as tune_module
from lbgen.system.limits import MAX_MODEL_RANKS





@pytest.mark.parametrize("args, words", [
    (["--ranks-grid", "2x2x2", "--lz", 32, "--max-ranks", 10 ** 12], ["--max-ranks: 1000000000000 ranks",
                                                                      f"at most {MAX_MODEL_RANKS}"]),
    (["--ranks-grid", "2x2", "--max-ranks", 10 ** 8], ["--max-ranks: 100000000 ranks"]),
    (["--ranks-grid", "256x256"], ["--ranks-grid 256x256: 65536 ranks"]),
])
def test_model_bounds_its_ranks_up_front(monkeypatch, args, words):
    """Broken in round four: `--max-ranks 1e12` ran past 200 s printing nothing."""
    import lbgen.perf.machine as machine
    monkeypatch.setattr(machine, "measure_bandwidth", lambda *a, **k: pytest.fail("measured before the refusal"))
    t0 = time.perf_counter()
    refused(cli("model", "--lx", 32, "--ly", 32, *args, "--memory-bandwidth", 1e10), *words)
    assert time.perf_counter() - t0 < 10


def test_model_max_ranks_help_names_the_bound():
    assert f"at most {MAX_MODEL_RANKS}" in " ".join(cli("model", "--help").output.split())


@pytest.mark.parametrize("vls, words", [
    ("3,5", ["VL=3 is not a power of two", "VL=5 is not a power of two", "take VL 1, 2, 4, 8, 16"]),
    ("8,64", ["VL=64 leaves 1 clusters, fewer than the halo width 3"]),
    ("4,24", ["VL=24 is not a power of two"]),
])
def test_tune_refuses_the_vls_it_would_drop(monkeypatch, vls, words):
    """Broken in round four: `tune --vls 3,5` dropped both silently."""
    monkeypatch.setattr(tune_module, "tune", lambda *a, **k: pytest.fail("timed before the refusal"))
    refused(cli("tune", "--lx", 16, "--ly", 64, "--vls", vls, "--no-progress"), f"--vls {vls}", *words)


def test_tune_vls_are_not_checked_for_unclustered_layouts(monkeypatch):
    monkeypatch.setattr(tune_module, "tune", lambda *a, **k: {"ranking": []})
    monkeypatch.setattr(tune_module, "format_ranking", lambda entry: "ranked")
    r = cli("tune", "--lx", 16, "--ly", 64, "--vls", "3", "--layouts", "soa", "--no-progress")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("args", [["info"], ["info", "--velocity-set", "d3q19"], ["info", "--json"]])
def test_info_into_a_closed_pipe_ends_quietly(args):
    """Broken in round four: `lbgen info | head -1` ended in a BrokenPipe error."""
    p = subprocess.Popen([sys.executable, "-m", "lbgen", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()                  # the reader leaves after one line, as head -1 does
    stderr = p.stderr.read().decode()
    p.wait(timeout=60)
    assert "Traceback" not in stderr and "Broken pipe" not in stderr and "BrokenPipe" not in stderr, stderr
    assert p.returncode in (0, 1)


@pytest.mark.parametrize("command", ["movie", "plot"])
def test_post_processing_under_mpiexec_is_refused_once(tmp_path, command):
    """Broken in round four: `mpiexec -n 2 lbgen movie` rendered twice and exited 2.  Rank 0
    says why, once; the other ranks say nothing; all exit 2; nothing is read or written."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    before = sorted(tmp_path.rglob("*"))
    first = cli(command, run_dir, env={"PMI_SIZE": "2", "PMI_RANK": "0"})
    refused(first, f"lbgen {command} renders on one process", "without mpiexec")
    other = cli(command, run_dir, env={"PMI_SIZE": "2", "PMI_RANK": "1"})
    assert other.exit_code == 2 and other.output == ""
    assert sorted(tmp_path.rglob("*")) == before
