"""Set-ups resolve what they decide: amplitudes, per-set defaults, the recorded run description."""
from __future__ import annotations

import json

import pytest

from lbgen.run.config import RunConfig
from lbgen.run.driver import Run
from lbgen.run.options import ConfigError
from lbgen.run.setups import SETUPS


def test_rayleigh_taylor_takes_stable_defaults_for_d2v17_and_the_user_still_wins():
    d2q37 = RunConfig.build("rayleigh-taylor", ("test", {}))
    d2v17 = RunConfig.build("rayleigh-taylor", ("test", {"velocity_set": "d2v17"}))
    assert d2q37.parameters["C1"] == 1e-3 and d2v17.parameters["C1"] == 3e-3 and d2v17.parameters["C2"] == 3e-3
    mine = RunConfig.build("rayleigh-taylor", ("test", {"velocity_set": "d2v17", "c1": 2e-3}))
    assert mine.parameters["C1"] == 2e-3 and mine.parameters["C2"] == 3e-3


def test_the_manifest_records_what_the_run_decided(tmp_path):
    out = tmp_path / "run"
    run = Run(RunConfig.build("rayleigh-taylor", ("test", {"lx": 16, "ly": 32, "steps": 6, "out": str(out),
                                                          "pictures": "none"})), echo=lambda m: None)
    run.execute()
    manifest = json.loads((out / "manifest.json").read_text())
    config = manifest["config"]
    assert config["layout"] == "caosoa" and config["vl"] == 8 and config["time_block"] == 3
    assert config["amplitude"] == pytest.approx(16 / 100)
    assert config["series_every"] == manifest["series_every"] == 12
    assert manifest["sweeps"] == {"blocked": 2, "single": 0}
    assert manifest["command"] and manifest["started"] and manifest["versions"]["lbgen"]
    from lbgen.model.velocity_set import velocity_set
    r = velocity_set("d2q37").r
    assert manifest["physics"]["nu"] == pytest.approx(1e-3 / r ** 2)      # regularized: C1 / (rho r^2)
    assert manifest["physics"]["Atwood"] == pytest.approx(0.1 / 2.0)
    # the recorded description rebuilds the same run (resume reads it back)
    assert RunConfig.from_json(config) == run.cfg


def test_a_set_up_option_with_an_init_file_is_refused(tmp_path):
    import numpy as np
    path = tmp_path / "f.npz"
    np.savez(path, rho=np.ones((8, 32)), ux=np.zeros((8, 32)), uy=np.zeros((8, 32)), T=np.ones((8, 32)))
    for key, value in (("seed", 7), ("amplitude", 0.5)):
        with pytest.raises(ConfigError, match=f"--{key} has no effect in this run: the initial state"):
            RunConfig.build(None, ("command line", {"init": str(path), key: value}))


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_a_set_up_of_one_dimension_is_refused_in_the_other_naming_why(name):
    """Every set-up runs in both dimensions or says, in the refusal, why it has no state in the other."""
    setup = SETUPS[name]
    for d, velocity_set, size in ((2, "d2q9", {}), (3, "d3q19", {"lz": 8})):
        if d in setup.dimensions:
            continue
        assert setup.missing_why
        with pytest.raises(ConfigError) as e:
            RunConfig.build(name, ("command line", {"velocity_set": velocity_set, **size}))
        assert setup.missing_why in str(e.value) and f"{5 - d}D flow" in str(e.value)
