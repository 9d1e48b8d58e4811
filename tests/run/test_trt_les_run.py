"""`lbgen run --collision trt|...-les`: the operator's options come from its record (CLI, TOML keys,
manifest), a checkpoint records the operator and its parameters and a resume refuses another value
of one, a resumed run continues bit for bit."""
from __future__ import annotations

import json
import shutil

import numpy as np
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.run.checkpoint import checkpoint_path, read_checkpoint

RUN = ("taylor-green", "--velocity-set", "d3q19", "--lx", 8, "--ly", 8, "--lz", 8, "--pictures", "none",
       "--no-progress", "--collision", "trt-les", "--tau", 0.55, "--smagorinsky", 0.2, "--time-block", 1)


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_the_operator_and_its_parameters_are_in_the_manifest_and_the_checkpoint(tmp_path):
    out = tmp_path / "a"
    r = cli("run", *RUN, "--magic", 0.25, "--steps", 8, "--checkpoint-every", 4, "--out", out)
    assert r.exit_code == 0, r.output
    config = json.loads((out / "manifest.json").read_text())["config"]
    assert config["collision"] == "trt-les"
    assert config["parameters"] == {"tau": 0.55, "magic": 0.25, "smagorinsky": 0.2}
    _, step, meta = read_checkpoint(checkpoint_path(out, 4))
    assert step == 4 and "trt-les" in json.dumps(meta) and "0.25" in json.dumps(meta)
    # a resume from step 4 ends on the populations of the straight run
    straight, _, _ = read_checkpoint(checkpoint_path(out, 8))
    resumed = tmp_path / "b"
    shutil.copytree(out, resumed)
    checkpoint_path(resumed, 8).unlink()
    r = cli("run", "--resume", resumed, "--steps", 8, "--no-progress")
    assert r.exit_code == 0, r.output
    again, _, _ = read_checkpoint(checkpoint_path(resumed, 8))
    assert np.array_equal(again, straight)


def test_a_resume_refuses_the_checkpoint_of_another_magic(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for out, magic in ((a, 0.25), (b, 0.3)):
        r = cli("run", *RUN, "--magic", magic, "--steps", 4, "--checkpoint-every", 4, "--out", out)
        assert r.exit_code == 0, r.output
    shutil.copyfile(checkpoint_path(b, 4), checkpoint_path(a, 4))
    r = cli("run", "--resume", a, "--steps", 8, "--no-progress")
    assert r.exit_code == 2 and "--magic 0.3 in the checkpoint, 0.25 in this run" in r.output, r.output
    assert not checkpoint_path(a, 8).exists()


def test_an_option_of_another_operator_is_refused_naming_its_owners(tmp_path):
    r = cli("run", "taylor-green", "--velocity-set", "d3q19", "--magic", 0.25, "--out", tmp_path / "c")
    assert r.exit_code == 2
    assert "--magic has no effect in this run: it is a parameter of trt, trt-les, not of the bgk operator" in r.output
    assert not (tmp_path / "c").exists()
