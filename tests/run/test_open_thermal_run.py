"""`lbgen run --inlet-temperature` (a thermal set's equilibrium inlet, lbgen.simulation.open_faces):
the run prints and records T_in, and the bad values are refused in words before any work (no run
folder): not a number > 0, without an inlet, on an isothermal set, beside a pressure outlet."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

BASE = ["--lx", "32", "--ly", "4", "--steps", "2", "--pictures", "none"]


def lbgen_run(*args):
    return subprocess.run([sys.executable, "-m", "lbgen", "run", *BASE, *[str(a) for a in args]],
                          capture_output=True, text=True)


def test_a_run_records_the_inlet_temperature(tmp_path):
    out = tmp_path / "run"
    done = lbgen_run("--velocity-set", "d2q37", "--inlet", "x-low", "--outflow", "x-high", "--inlet-temperature",
                     1.02, "--out", out)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert json.dumps(manifest).count('"inlet_temperature": 1.02') >= 1


@pytest.mark.parametrize("args, words", [
    (("--velocity-set", "d2q37", "--inlet", "x-low", "--outflow", "x-high", "--inlet-temperature", 0), "must be > 0"),
    (("--velocity-set", "d2q37", "--inlet", "x-low", "--outflow", "x-high", "--inlet-temperature", "inf"),
     "must be a finite number"),
    (("--velocity-set", "d2q37", "--outflow", "x-high", "--inlet-temperature", 1.1), "it needs --inlet"),
    (("--velocity-set", "d2q9", "--inlet", "x-low", "--outflow", "x-high", "--inlet-temperature", 1.1),
     "d2q9 is isothermal"),
    (("--velocity-set", "d2q37", "--inlet", "x-low", "--outlet", "x-high"),
     "pressure outlet .x-high. needs a velocity set whose hops are 1"),
])
def test_bad_inlet_temperatures_are_refused_before_any_work(args, words, tmp_path):
    import re
    out = tmp_path / "run"
    done = lbgen_run(*args, "--out", out)
    assert done.returncode != 0 and re.search(words, done.stderr + done.stdout), done.stderr
    assert not out.exists()
