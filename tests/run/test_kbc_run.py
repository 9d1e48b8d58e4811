"""`lbgen run --collision kbc` (the entropic KBC operator, Karlin, Boesch & Chikatamarla 2014) in 3D (D3Q27) and
2D (D2Q9): tau comes from the operator's record (CLI option, manifest), a checkpoint records the operator, a
resumed run continues bit for bit; D3Q19 and the thermal sets are refused before any work."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.run.checkpoint import checkpoint_path, read_checkpoint

RUN = ("--pictures", "none", "--no-progress", "--collision", "kbc", "--tau", 0.505, "--time-block", 1)
SETUPS = {"d3q27": ("taylor-green", "--velocity-set", "d3q27", "--lx", 8, "--ly", 8, "--lz", 8),
          "d2q9": ("shear-wave", "--velocity-set", "d2q9", "--lx", 16, "--ly", 8)}


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("velocity_set", list(SETUPS))
def test_the_operator_is_in_the_manifest_and_the_checkpoint_and_a_resume_continues_bit_for_bit(tmp_path,
                                                                                                 velocity_set):
    out = tmp_path / "a"
    r = cli("run", *SETUPS[velocity_set], *RUN, "--steps", 8, "--checkpoint-every", 4, "--out", out)
    assert r.exit_code == 0, r.output
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert config["collision"] == "kbc" and config["parameters"] == {"tau": 0.505}
    _, step, meta = read_checkpoint(checkpoint_path(out, 4))
    assert step == 4 and '"kbc"' in json.dumps(meta) and "0.505" in json.dumps(meta)
    straight, _, _ = read_checkpoint(checkpoint_path(out, 8))
    resumed = tmp_path / "b"
    shutil.copytree(out, resumed)
    checkpoint_path(resumed, 8).unlink()
    r = cli("run", "--resume", resumed, "--steps", 8, "--no-progress")
    assert r.exit_code == 0, r.output
    again, _, _ = read_checkpoint(checkpoint_path(resumed, 8))
    assert np.array_equal(again, straight) and np.all(np.isfinite(again))


@pytest.mark.parametrize("velocity_set, words", [("d3q39", "the kbc operator is defined on the isothermal sets "
                                                            "(D2Q9, D3Q27), not on D3Q39"),
                                                 ("d3q19", "the kbc operator is defined on D2Q9, D3Q27 only, not on "
                                                           "D3Q19")])
def test_the_sets_it_is_not_defined_on_are_refused_before_any_work(tmp_path, velocity_set, words):
    r = cli("run", "taylor-green", "--velocity-set", velocity_set, "--collision", "kbc", "--out", tmp_path / "d")
    assert r.exit_code == 2
    assert words in r.output
    assert not (tmp_path / "d").exists()
