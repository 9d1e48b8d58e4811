"""`lbgen run` in 3D with a time block (``--time-block N``: Simulation3D's fused_tb on C): the
sweeps that fit between events are blocked and counted as fused_tb calls, the steps before an
event at a non-multiple run singly, and a strict run writes the files of ``--time-block 1``;
``auto`` follows the 2D rule for the sets with 1-site hops and is 1 for D3Q39
(``construct.resolve_time_block``)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.output import read_field_file
from lbgen.perf.tune import DEFAULT_TIME_BLOCK
from lbgen.run.checkpoint import read_checkpoint
from lbgen.run.config import RunConfig
from lbgen.run.construct import resolve

NAMES = ("rho", "ux", "uy", "uz", "T")
# events every 3 (series), 5 (outputs) and 6 (checkpoints) steps up to 14: the segments are
# 0-3 | 3-5 | 5-6 | 6-9 | 9-10 | 10-12 | 12-14, so with N = 3 the two segments 0-3 and 6-9 are
# sweeps and the other 8 steps single ones
CASE = ["lid-driven-cavity", "--lx", 12, "--ly", 10, "--lz", 8, "--steps", 14, "--strict", "--series-every", 3,
        "--output-every", 5, "--checkpoint-every", 6, "--keep-checkpoints", 3, "--pictures", "speed",
        "--no-progress"]


def _run(out, depth, monkeypatch):
    from lbgen.backends.c import CProgram
    calls = []
    original = CProgram.fused_tb

    def counted(self, prv, nxt, depth, *args, **params):
        calls.append(depth)
        return original(self, prv, nxt, depth, *args, **params)
    monkeypatch.setattr(CProgram, "fused_tb", counted)
    r = CliRunner().invoke(main, ["run"] + [str(a) for a in CASE] + ["--time-block", str(depth), "--out", str(out)])
    assert r.exit_code == 0, r.output
    monkeypatch.setattr(CProgram, "fused_tb", original)
    return calls, json.loads((out / "manifest.json").read_text())


def test_a_3d_time_block_runs_fused_tb_and_writes_the_files_of_single_steps(tmp_path, monkeypatch):
    blocked, manifest = _run(tmp_path / "k3", 3, monkeypatch)
    single, reference = _run(tmp_path / "k1", 1, monkeypatch)
    assert blocked == [3, 3] and single == []
    assert manifest["sweeps"] == {"blocked": 2, "single": 8} and reference["sweeps"] == {"blocked": 0, "single": 14}
    assert manifest["config"]["time_block"] == 3 and manifest["step"] == 14
    a, b = tmp_path / "k3", tmp_path / "k1"
    names = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    for step in (0, 5, 10, 14):
        fa, fb = (read_field_file(d / "fields" / f"step-{step:09d}.h5") for d in (a, b))
        assert all(np.array_equal(fa[k], fb[k]) for k in NAMES), step
        vti = f"vtk/step-{step:09d}.vti"
        assert (a / vti).read_bytes() == (b / vti).read_bytes(), vti
    assert np.abs(read_field_file(a / "fields" / "step-000000014.h5")["ux"]).max() > 0
    assert (a / "series.csv").read_bytes() == (b / "series.csv").read_bytes()
    for name in names:
        if name.startswith("pictures/"):
            assert (a / name).read_bytes() == (b / name).read_bytes(), name
    for step in (6, 12):
        pa, sa, _ = read_checkpoint(a / "checkpoints" / f"step-{step:09d}.lbchk")
        pb, sb, _ = read_checkpoint(b / "checkpoints" / f"step-{step:09d}.lbchk")
        assert sa == sb == step and np.array_equal(pa, pb)


def test_a_3d_time_block_resumes_bit_identically(tmp_path, monkeypatch):
    """A blocked run stopped at its checkpoint and resumed is the uninterrupted blocked run."""
    whole = ["channel", "--lx", 8, "--ly", 10, "--lz", 4, "--strict", "--time-block", 2, "--series-every", 4,
             "--checkpoint-every", 6, "--pictures", "none", "--no-progress"]
    runner = CliRunner()
    assert runner.invoke(main, ["run"] + [str(a) for a in whole] + ["--steps", 12, "--out", str(tmp_path / "a")]
                         ).exit_code == 0
    assert runner.invoke(main, ["run"] + [str(a) for a in whole] + ["--steps", 6, "--out", str(tmp_path / "b")]
                         ).exit_code == 0
    r = runner.invoke(main, ["run", "--resume", str(tmp_path / "b"), "--steps", 12, "--no-progress"])
    assert r.exit_code == 0, r.output
    fa, fb = (read_field_file(tmp_path / d / "fields" / "step-000000012.h5") for d in "ab")
    assert all(np.array_equal(fa[k], fb[k]) for k in NAMES) and np.abs(fa["ux"]).max() > 0
    assert json.loads((tmp_path / "b" / "manifest.json").read_text())["config"]["time_block"] == 2


@pytest.mark.parametrize("given, expected", [
    ({}, DEFAULT_TIME_BLOCK),                                   # auto on C: the 2D rule's default
    ({"velocity_set": "d3q27"}, DEFAULT_TIME_BLOCK),            # 1-site hops as D3Q19
    ({"velocity_set": "d3q39"}, 1),                             # 3-site hops: blocking ran slower
    ({"velocity_set": "d3q39", "time_block": 3}, 3),            # ... but a given depth stays
    ({"time_block": 2}, 2),
    ({"backend": "opencl"}, 1),                                 # auto where blocking does not run
    ({"fused": False}, 1),
])
def test_auto_follows_the_2d_rule_for_1_site_hops(given, expected):
    """``auto`` takes the 2D default for D3Q19 and D3Q27, and 1 for D3Q39, whose blocked sweep
    ran at half the speed of fused (``tune.default_time_block3d``)."""
    cfg = RunConfig.build("channel", ("test", {"lx": 8, "ly": 6, "lz": 12, **given}))
    assert resolve(cfg, echo=lambda m: None).time_block == expected
    assert resolve(cfg, echo=lambda m: None, distributed=True).time_block == (
        expected if given.get("time_block") else 1)      # under MPI auto is 1, a given depth stays
