"""The emitted C example with --walls runs the walled step (fused_walls, both walls held) and
reproduces lbgen's own runner on the same case; the Makefile's run target sets the OpenMP
wait policy the header recommends."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from helpers import make_example
from lbgen.codegen.emit import emit
from lbgen.codegen.spec import KernelSpec

LX, LY, STEPS = 16, 64, 20


@pytest.fixture(scope="module")
def walled_example(tmp_path_factory):
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("make and gcc are needed to build the emitted example")
    folder = tmp_path_factory.mktemp("walls_example")
    spec = KernelSpec(layout="caosoa", vl=8, walls=True)
    emit(spec, folder)
    make_example(folder, spec)
    return folder


def _example_case(lx, ly, **kw):
    """lbgen's runner on the emitted example's case (its start and STEPS steps of BGK tau 0.8 with
    gravity along -y; ``kw``: the walls and the layout): the fields."""
    from lbgen.model.velocity_set import d2q37
    from lbgen.simulation.runner import Simulation
    x, y = np.meshgrid(np.arange(lx), np.arange(ly), indexing="ij")
    sim = Simulation(lx, ly, collision="bgk", tau=0.8, gravity=(0.0, -1e-5 * d2q37().r), threads=1, check_every=0,
                     **kw)
    sim.set_fields(1 + 0.01 * np.cos(2 * np.pi * y / ly), 0.0, 0.05 * np.sin(2 * np.pi * x / lx),
                   1 + 0.02 * np.sin(2 * np.pi * (x + y) / lx))
    sim.step(STEPS)
    return sim.fields()


def test_the_walls_example_reproduces_the_walled_simulation(walled_example):
    from lbgen.simulation.runner import Walls
    subprocess.run(["./example", str(STEPS), str(LX), str(LY)], cwd=walled_example, check=True, capture_output=True)
    data = np.loadtxt(walled_example / "example_fields.txt")
    want = _example_case(LX, LY, walls=Walls(T_bottom=1.02, T_top=0.98), layout="caosoa", vl=8)
    for column, name in zip(range(2, 6), ("rho", "ux", "uy", "T")):
        assert np.abs(data[:, column].reshape(LX, LY) - want[name]).max() <= 1e-12, name
    # and not the periodic step: the same example without walls ends elsewhere
    periodic = _example_case(LX, LY, layout="caosoa", vl=8)
    assert np.abs(data[:, 5].reshape(LX, LY) - periodic["T"]).max() > 1e-6


def test_the_run_target_sets_the_passive_wait_policy(walled_example):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    dry = subprocess.run(["make", "-n", "run"], cwd=walled_example, check=True, capture_output=True, text=True,
                         env=env).stdout
    assert "OMP_WAIT_POLICY=passive ./example" in dry
    dry = subprocess.run(["make", "-n", "run", "OMP_WAIT_POLICY=active"], cwd=walled_example, check=True,
                         capture_output=True, text=True, env=env).stdout
    assert "OMP_WAIT_POLICY=active ./example" in dry


@pytest.mark.slow
def test_the_walls_example_across_x_reproduces_the_walled_simulation(tmp_path):
    """`lbgen emit --walls --wall-axis x` (2D): the example's fused_walls steps hold the walls at x = 0
    and LX-1 and give lbgen's runner with Walls(axis='x') on the same case to 1e-12."""
    from lbgen.simulation.runner import Walls
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("make and gcc are needed to build the emitted example")
    spec = KernelSpec(layout="soa", walls=True, wall_axis="x")
    emit(spec, tmp_path)
    make_example(tmp_path, spec)
    lx, ly = 24, 16
    subprocess.run(["./example", str(STEPS), str(lx), str(ly)], cwd=tmp_path, check=True, capture_output=True)
    data = np.loadtxt(tmp_path / "example_fields.txt")
    want = _example_case(lx, ly, walls=Walls(T_bottom=1.02, T_top=0.98, axis="x"), layout="soa")
    for column, name in zip(range(2, 6), ("rho", "ux", "uy", "T")):
        assert np.abs(data[:, column].reshape(lx, ly) - want[name]).max() <= 1e-12, name
    assert np.abs(want["T"][2] - 1.02).max() < 1e-3 < np.abs(want["T"][:, 2] - 1.02).max()   # T imposed across x
