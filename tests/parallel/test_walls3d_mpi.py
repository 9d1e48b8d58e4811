"""The 3D thermal walls under MPI (issue 39): a D3Q39 lattice between a hot and a cold plate
across z split along z (each rank holds the wall its block touches: ``wall_sides``) and along
x (one step a sweep, or time-blocked: fused_tb), and plates across x (``Walls(axis='x')``) split
along x (across y: split along y), give the bits of one process in strict mode."""
import json

import numpy as np
import pytest

from test_mpi import mpirun

#: the ranks' script, 2D or 3D (tests/parallel/test_walls2d_mpi.py takes it too): argv[1] is a JSON of shape,
#: grid, kw, walls and steps; rank 0 reads initial.npz and writes fields.npz, and prints the grid, each
#: rank's wall switches and its kernel calls
SCRIPT = """
import json, sys
import numpy as np
from mpi4py import MPI
from lbgen.parallel.simulation import DistributedSimulation
from lbgen.simulation.parameters import Walls
a = json.loads(sys.argv[1])
comm = MPI.COMM_WORLD
sim = DistributedSimulation(comm, *a["shape"], ranks_grid=a["grid"], walls=Walls(**a["walls"]), **a["kw"])
if comm.rank == 0:
    f = dict(np.load("initial.npz"))
    sim.set_fields(*[f[k] for k in ("rho", "ux", "uy", "uz", "T") if k in f])
else:
    sim.set_fields()
sim.step(a["steps"])
out = sim.fields()
sides = comm.gather(list(sim.sim.wall_sides))
if comm.rank == 0:
    np.savez("fields.npz", **out)
    print(json.dumps({"dims": list(sim.dims), "sides": sides, "calls": dict(sim.sim.program.calls)}))
"""


@pytest.mark.parametrize("grid,axis,shape,depth", [("1x1x2", None, (6, 3, 24), 1),
                                                    pytest.param("2x1x1", None, (6, 3, 24), 1, marks=pytest.mark.slow),
                                                    ("2x1x1", "x", (16, 3, 12), 1),
                                                    pytest.param("1x2x1", "y", (3, 16, 12), 1, marks=pytest.mark.slow),
                                                    pytest.param("2x1x1", None, (12, 3, 24), 2, marks=pytest.mark.slow)])
def test_thermal_walls_on_a_split_axis_are_bit_identical_to_one_process(tmp_path, grid, axis, shape, depth):
    """depth 2: the ranks' time-blocked sweeps (fused_tb, walls across z) against one process's
    fused_walls steps; 5 steps: two blocks of 2, then one single step."""
    from lbgen.simulation.parameters import Walls
    from lbgen.simulation.runner import Simulation
    walls = dict(T_bottom=1.02, T_top=0.98, axis=axis)
    kw = dict(velocity_set="d3q39", strict=True, tau=0.8, gravity=[0.0, 0.0, -1e-5], layout="soa")
    rng = np.random.default_rng(5)
    f = dict(rho=1 + 0.01 * rng.random(shape), ux=0.01 * rng.random(shape), uy=0.01 * rng.random(shape),
             uz=0.01 * rng.random(shape), T=1 + 0.01 * rng.random(shape))
    np.savez(tmp_path / "initial.npz", **f)
    (tmp_path / "walls3d.py").write_text(SCRIPT)
    steps = 5
    # one process first: it compiles the D3Q39 walls kernel (minutes from an empty cache) that the
    # ranks then load from the cache, within mpirun's timeout
    ref = Simulation(*shape, walls=Walls(**walls), **kw)
    ref.set_fields(f["rho"], f["ux"], f["uy"], f["uz"], f["T"])
    ref.step(steps)
    proc = mpirun(2, [json.dumps({"shape": shape, "grid": grid, "kw": {**kw, "time_block": depth}, "walls": walls,
                                  "steps": steps})],
                  tmp_path, script=tmp_path / "walls3d.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "x".join(map(str, report["dims"])) == grid
    assert report["calls"].get("fused_tb", 0) == (2 if depth == 2 else 0)      # rank 0's sweeps
    assert report["calls"]["fused_walls"] == (1 if depth == 2 else steps)
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    for key in want:
        assert np.array_equal(got[key], want[key]), key
    a = "xyz".index(axis or "z")
    assert np.abs(np.take(want["T"], 2, axis=a) - 1.02).max() < 0.02   # the walls acted (T imposed at the last wall plane)
    assert np.abs(np.take(want["T"], 2, axis=a) - 1.02).max() < np.abs(np.take(want["T"], 2, axis=(a + 1) % 3)
                                                                       - 1.02).max()   # across `axis`, not another
