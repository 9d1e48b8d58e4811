"""`lbgen run --collision central` (the central-moment MRT) on D3Q27: the rates come from the operator's record
(CLI options, manifest), a checkpoint records them, a resumed run continues bit for bit; the thermal sets are
refused before any work."""
from __future__ import annotations

import json
import shutil

import numpy as np
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.run.checkpoint import checkpoint_path, read_checkpoint

RUN = ("taylor-green", "--velocity-set", "d3q27", "--lx", 8, "--ly", 8, "--lz", 8, "--pictures", "none",
       "--no-progress", "--collision", "central", "--tau", 0.55, "--omega3", 1.2, "--time-block", 1)


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_the_rates_are_in_the_manifest_and_the_checkpoint_and_a_resume_continues_bit_for_bit(tmp_path):
    out = tmp_path / "a"
    r = cli("run", *RUN, "--omega4", 1.5, "--steps", 8, "--checkpoint-every", 4, "--out", out)
    assert r.exit_code == 0, r.output
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert config["collision"] == "central"
    assert config["parameters"] == {"tau": 0.55, "omega_bulk": 1.0, "omega3": 1.2, "omega4": 1.5}
    _, step, meta = read_checkpoint(checkpoint_path(out, 4))
    assert step == 4 and "central" in json.dumps(meta) and "1.5" in json.dumps(meta)
    straight, _, _ = read_checkpoint(checkpoint_path(out, 8))
    resumed = tmp_path / "b"
    shutil.copytree(out, resumed)
    checkpoint_path(resumed, 8).unlink()
    r = cli("run", "--resume", resumed, "--steps", 8, "--no-progress")
    assert r.exit_code == 0, r.output
    again, _, _ = read_checkpoint(checkpoint_path(resumed, 8))
    assert np.array_equal(again, straight) and np.all(np.isfinite(again))


def test_a_thermal_set_is_refused_before_any_work(tmp_path):
    r = cli("run", "taylor-green", "--velocity-set", "d3q39", "--collision", "central", "--out", tmp_path / "d")
    assert r.exit_code == 2
    assert "the central operator is defined on the isothermal sets (D2Q9, D3Q27), not on D3Q39" in r.output
    assert not (tmp_path / "d").exists()
