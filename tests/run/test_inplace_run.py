"""`lbgen run --streaming inplace` (one population buffer, the AA pattern): the memory estimate
before any work counts one buffer, the run line and manifest say so, and a run checkpointed at an
odd step and resumed ends with the bits of the uninterrupted pull run (a checkpoint holds the
natural state: docs/architecture.md, "In-place streaming")."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.helpers import cli


def test_the_memory_estimate_follows_the_streaming():
    """One buffer of Q padded sites fewer: 19 x 42 x 42 x (40 + 2 x 8) doubles for D3Q19 at 40^3 (the
    last axis's halo rows as clusters of 8 cells, ``run_memory_estimate``)."""
    from lbgen.run.config import RunConfig
    from lbgen.run.driver import check_run_memory
    est = {s: check_run_memory(RunConfig.build("shear-wave", ("test", dict(lx=40, ly=40, lz=40, velocity_set="d3q19",
                                                                           streaming=s))))
           for s in ("pull", "inplace")}
    assert est["pull"] - est["inplace"] == 19 * 42 * 42 * 56 * 8


@pytest.mark.slow
def test_an_in_place_run_resumed_at_an_odd_step_ends_with_the_pull_bits(tmp_path):
    from lbgen.run.checkpoint import checkpoint_path, read_checkpoint
    run = ("run", "shear-wave", "--velocity-set", "d2q9", "--lx", 8, "--ly", 32, "--pictures", "none", "--no-progress",
           "--checkpoint-every", 3, "--keep-checkpoints", 5, "--strict")
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert cli(*run, "--steps", 9, "--out", whole).exit_code == 0
    result = cli(*run, "--steps", 3, "--streaming", "inplace", "--out", part)
    assert result.exit_code == 0, result.output
    assert "in place (one population buffer)" in result.output
    assert json.loads((part / "manifest.json").read_text())["device"]["streaming"] == "inplace"
    np.testing.assert_array_equal(read_checkpoint(checkpoint_path(part, 3))[0],
                                  read_checkpoint(checkpoint_path(whole, 3))[0])
    result = cli("run", "--resume", part, "--steps", 9, "--no-progress")
    assert result.exit_code == 0, result.output
    np.testing.assert_array_equal(read_checkpoint(checkpoint_path(part, 9))[0],
                                  read_checkpoint(checkpoint_path(whole, 9))[0])


def test_in_place_streaming_is_refused_where_it_cannot_run(tmp_path):
    from tests.helpers import refused
    refused(cli("run", "--velocity-set", "d3q19", "--streaming", "inplace", "--time-block", 2, "--steps", 2),
            "--time-block", "--streaming inplace")
    refused(cli("run", "rayleigh-taylor", "--walls", "--streaming", "inplace", "--steps", 2), "--streaming",
            "thermal --walls")
    refused(cli("run", "--velocity-set", "d2q9", "--backend", "opencl", "--streaming", "inplace", "--no-fused",
                "--steps", 2), "--streaming", "--no-fused")


@pytest.mark.slow
@pytest.mark.parametrize("setup", [("shear-wave", "--velocity-set", "d2q9", "--lx", 8, "--ly", 32),
                                   ("cylinder", "--cells-per-diameter", 10)], ids=["shear-wave", "cylinder"])
def test_an_opencl_run_in_place_ends_with_the_c_pull_bits(tmp_path, setup):
    """`lbgen run --backend opencl --streaming inplace`: one buffer on the device (the run line says
    so, the manifest records it) and, at an odd step, the strict C pull run's checkpointed bits; the
    DFG cylinder too (its inlet, outlet, walls and Bouzidi body in place on the GPU kernels)."""
    pytest.importorskip("pyopencl")
    from lbgen.run.checkpoint import checkpoint_path, read_checkpoint
    run = ("run", *setup, "--pictures", "none", "--no-progress", "--checkpoint-every", 5, "--steps", 5, "--strict")
    c, cl = tmp_path / "c", tmp_path / "opencl"
    assert cli(*run, "--out", c).exit_code == 0
    result = cli(*run, "--backend", "opencl", "--streaming", "inplace", "--out", cl)
    assert result.exit_code == 0, result.output
    assert "in place (one population buffer)" in result.output
    assert json.loads((cl / "manifest.json").read_text())["device"]["streaming"] == "inplace"
    np.testing.assert_array_equal(read_checkpoint(checkpoint_path(cl, 5))[0], read_checkpoint(checkpoint_path(c, 5))[0])
