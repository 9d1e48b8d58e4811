"""The 2D thermal walls across x under MPI (issue 39): a D2Q37 lattice between a hot plate at x = 0
and a cold (or adiabatic) one at x = LX-1 (``Walls(axis='x')``), split along x (each rank holds
the wall its block touches: the per-side switches ``wall_sides``; the middle rank of three none)
and along both axes, gives the bits of one process in strict mode."""
import json

import numpy as np
import pytest

from test_mpi import mpirun
from test_walls3d_mpi import SCRIPT


@pytest.mark.parametrize("n,grid,shape,adiabatic", [
    (2, "2x1", (24, 16), False),
    pytest.param(3, "3x1", (37, 16), True, marks=pytest.mark.slow),      # uneven X: 13, 12, 12; the middle rank no wall
    pytest.param(4, "2x2", (30, 16), False, marks=pytest.mark.slow)])
def test_walls_across_x_on_a_split_x_are_bit_identical_to_one_process(tmp_path, n, grid, shape, adiabatic):
    from lbgen.simulation.parameters import Walls
    from lbgen.simulation.runner import Simulation
    walls = dict(T_bottom=1.02, T_top=0.98, axis="x", adiabatic_top=adiabatic)
    kw = dict(velocity_set="d2q37", strict=True, collision="regularized", gravity=[-1e-4, 0.0], layout="soa")
    rng = np.random.default_rng(11)
    f = dict(rho=1 + 0.01 * rng.random(shape), ux=0.01 * rng.random(shape), uy=0.01 * rng.random(shape),
             T=1 + 0.01 * rng.random(shape))
    np.savez(tmp_path / "initial.npz", **f)
    (tmp_path / "walls2d.py").write_text(SCRIPT)
    steps = 6
    ref = Simulation(*shape, walls=Walls(**walls), **kw)
    ref.set_fields(f["rho"], f["ux"], f["uy"], f["T"])
    ref.step(steps)
    proc = mpirun(n, [json.dumps({"shape": shape, "grid": grid, "kw": kw, "walls": walls, "steps": steps})],
                  tmp_path, script=tmp_path / "walls2d.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "x".join(map(str, report["dims"])) == grid and report["calls"]["fused_walls"] == steps
    px = report["dims"][0]
    assert [s for s in report["sides"]] == [[c == 0, c == px - 1] for c in
                                            (r // report["dims"][1] for r in range(n))]      # ranks in C order
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    for key in want:
        assert np.array_equal(got[key], want[key]), key
    assert np.abs(want["T"][2] - 1.02).max() < np.abs(want["T"][:, 2] - 1.02).max()   # the walls stand across x
