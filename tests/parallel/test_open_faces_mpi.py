"""Open faces (lbgen.simulation.open_faces) under MPI: a lattice split along the axis of its
inlet and outlet (the inlet on the first block, the outlet on the last; no halo across either),
and across it (each block holds a cut of the inlet's profile), gives the bits of one
``Simulation`` in strict mode: a 2D channel (parabolic inlet, outflow, slip walls) and a 3D
duct (parabolic inlet, pressure outlet).  Each case launches the venv's mpiexec on a small
script (oversubscribed, one OpenMP thread per rank)."""
import json

import numpy as np
import pytest

from test_mpi import mpirun

SCRIPT = """
import json, sys
import numpy as np
from mpi4py import MPI
from lbgen.parallel.simulation import DistributedSimulation
a = json.loads(sys.argv[1])
comm = MPI.COMM_WORLD
sim = DistributedSimulation(comm, *a["shape"], ranks_grid=a["grid"], **a["kw"])
D = len(a["shape"])
if comm.rank == 0:
    f = dict(np.load("initial.npz"))
    sim.set_fields(f["rho"], *[f["u" + c] for c in "xyz"[:D]], 1.0)
else:
    sim.set_fields()
sim.step(a["steps"])
out = sim.fields()
sent = comm.gather(dict(sim.messages), root=0)
if comm.rank == 0:
    np.savez("fields.npz", **out)
    print(json.dumps({"dims": list(sim.dims), "sent": sent}))
"""

CHANNEL = {"velocity_set": "d2q9", "walls": "y-low", "slip": "y-high",
           "inlet": {"x-low": ["uniform", 0.04]}, "outflow": "x-high"}
DUCT = {"velocity_set": "d3q19", "walls": "yz", "inlet": {"x-low": ["parabolic", 0.05]}, "outlet": {"x-high": 0.99}}
#: the thermal sets (hops of 3): the equilibrium inlet at an inflow temperature, an outflow, slip walls
THERMAL = {"velocity_set": "d2q37", "slip": "y", "inlet": {"x-low": ["uniform", 0.05]}, "outflow": "x-high",
           "inlet_temperature": 1.02}
THERMAL3D = {"velocity_set": "d3q39", "collision": "bgk", "walls": "z-low", "slip": "z-high",
             "inlet": {"x-low": ["uniform", 0.04]}, "outflow": "x-high", "inlet_temperature": 0.98}


@pytest.mark.parametrize("n, grid, shape, bounds", [
    pytest.param(2, "2x1", (14, 8), CHANNEL),
    pytest.param(2, "1x1x2", (10, 6, 16), DUCT),
    pytest.param(2, "2x1x1", (12, 6, 8), DUCT, marks=pytest.mark.slow),
    pytest.param(2, "1x2", (12, 12), CHANNEL, marks=pytest.mark.slow),
    pytest.param(2, "2x1", (16, 8), THERMAL),
    pytest.param(2, "1x2", (12, 16), THERMAL, marks=pytest.mark.slow),
    pytest.param(2, "2x1x1", (14, 4, 12), THERMAL3D, marks=pytest.mark.slow),
    pytest.param(2, "1x1x2", (10, 4, 24), THERMAL3D, marks=pytest.mark.slow),
    # time blocks of 2 on each rank (fused_tb takes the hop-1 sets' open faces; halos 2 H wide every 2 steps)
    pytest.param(2, "2x1x1", (12, 6, 8), dict(DUCT, time_block=2), marks=pytest.mark.slow),
], ids=["channel-2x1", "duct-1x1x2", "duct-2x1x1", "channel-1x2", "thermal-2x1", "thermal-1x2", "thermal3d-2x1x1",
        "thermal3d-1x1x2", "duct-2x1x1-blocked"])
def test_open_faces_on_split_axes_are_bit_identical_to_one_process(tmp_path, n, grid, shape, bounds):
    from lbgen.simulation.runner import Simulation
    D = len(shape)
    kw = dict(strict=True, tau=0.8, **bounds)
    rng = np.random.default_rng(5)
    f = {"rho": 1 + 0.02 * rng.random(shape), **{"u" + c: 0.02 * rng.random(shape) for c in "xyz"[:D]}}
    np.savez(tmp_path / "initial.npz", **f)
    (tmp_path / "run.py").write_text(SCRIPT)
    steps = 7
    proc = mpirun(n, [json.dumps({"shape": shape, "grid": grid, "kw": kw, "steps": steps})], tmp_path,
                  script=tmp_path / "run.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "x".join(map(str, report["dims"])) == grid
    ref = Simulation(*shape, **kw)
    ref.set_fields(f["rho"], *[f["u" + c] for c in "xyz"[:D]], 1.0)
    ref.step(steps)
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    for key in want:
        assert np.array_equal(got[key], want[key]), key
    split = "xyz"[[int(p) for p in grid.split("x")].index(2)]
    k = bounds.get("time_block", 1)      # a trade a sweep: steps // k blocks, then single steps
    if split == "x":      # the inlet and the outlet ends trade nothing across the lattice's ends
        assert all(sent.get("x messages", 0) == steps // k + steps % k for sent in report["sent"])
