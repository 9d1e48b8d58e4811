"""3D Cartesian decomposition (``lbgen.parallel.lattice3d.DistributedSimulation3D``): every
grid, with and without walls and time blocks, gives the bits of one ``Simulation3D`` in
strict mode; a split along a walled axis is refused naming it.  Each case launches the
venv's mpiexec on a small script (oversubscribed, one OpenMP thread per rank)."""
import json

import numpy as np
import pytest

from test_mpi import mpirun

pytestmark = pytest.mark.slow

SCRIPT = """
import json, sys
import numpy as np
from mpi4py import MPI
from lbgen.parallel.lattice3d import DistributedSimulation3D
a = json.loads(sys.argv[1])
comm = MPI.COMM_WORLD
sim = DistributedSimulation3D(comm, *a["shape"], ranks_grid=a["grid"], time_block=a["k"],
                              through_pack=a.get("through_pack", False), **a["kw"])
if comm.rank == 0:
    f = dict(np.load("initial.npz"))
    sim.set_fields(f["rho"], f["ux"], f["uy"], f["uz"])
else:
    sim.set_fields()
sim.step(a["steps"])
out = sim.fields()
sent = comm.gather(dict(sim.messages), root=0)
if comm.rank == 0:
    np.savez("fields.npz", **out)
    print(json.dumps({"dims": list(sim.dims), "sent": sent}))
"""


def initial(shape, seed=3):
    rng = np.random.default_rng(seed)
    return dict(rho=1 + 0.02 * rng.random(shape), ux=0.02 * rng.random(shape), uy=0.01 * rng.random(shape),
                uz=0.01 * rng.random(shape))


@pytest.mark.parametrize("n, grid, shape, k, walls, through_pack", [
    (2, "2x1x1", (12, 10, 16), 1, None, False),
    (4, "2x1x2", (13, 10, 16), 1, None, False),       # uneven X: 7, 6
    (3, "1x3x1", (10, 20, 16), 2, None, False),       # uneven Y (7, 7, 6), a time block
    (4, "2x2x1", (14, 12, 16), 3, "z", False),        # walls on the unsplit axis, k = 3
    (4, "1x2x2", (10, 12, 18), 2, "x", True),         # the unpack/pack path of device buffers
], ids=["2x1x1", "2x1x2-uneven", "1x3x1-k2", "2x2x1-walls-k3", "1x2x2-through-pack"])
def test_every_3d_grid_is_bit_identical_to_one_process(tmp_path, n, grid, shape, k, walls, through_pack):
    from lbgen.simulation.lattice3d import Simulation3D
    kw = dict(strict=True, tau=0.8, gravity=[1e-5, 0, -1e-5], **({"walls": walls} if walls else {}))
    f = initial(shape)
    np.savez(tmp_path / "initial.npz", **f)
    (tmp_path / "run3d.py").write_text(SCRIPT)
    steps = 7
    args = {"shape": shape, "grid": grid, "k": k, "kw": kw, "steps": steps, "through_pack": through_pack}
    proc = mpirun(n, [json.dumps(args)], tmp_path, script=tmp_path / "run3d.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "x".join(map(str, report["dims"])) == grid
    ref = Simulation3D(*shape, **kw)
    ref.set_fields(f["rho"], f["ux"], f["uy"], f["uz"])
    ref.step(steps)
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    for key in want:
        assert np.array_equal(got[key], want[key]), key
    # every split axis: 2 messages per exchange, ceil(steps / k) exchanges, on every rank
    exchanges = -(-steps // k)
    for sent in report["sent"]:
        for axis, p in zip("xyz", report["dims"]):
            assert sent.get(f"{axis} messages", 0) == (2 * exchanges if p > 1 else 0)


def test_a_3d_split_along_a_walled_axis_is_refused(tmp_path):
    (tmp_path / "run3d.py").write_text(SCRIPT)
    np.savez(tmp_path / "initial.npz", **initial((12, 10, 16)))
    args = {"shape": [12, 10, 16], "grid": "1x1x2", "k": 1, "kw": {"walls": "z"}, "steps": 1}
    proc = mpirun(2, [json.dumps(args)], tmp_path, script=tmp_path / "run3d.py")
    assert proc.returncode != 0
    assert "--ranks-grid 1x1x2 on 12 x 10 x 16: it splits Z, a walled axis" in proc.stderr


def test_the_3d_model_counts_the_messages_the_exchange_sends(tmp_path):
    proc = mpirun(4, ["model", "--ranks-grid", "2x1x2", "--lx", 32, "--ly", 16, "--lz", 32, "--time-block", 2,
                      "--steps", 2, "--memory-bandwidth", 1e10, "--max-ranks", 8, "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert out["velocity_set"] == "D3Q19" and out["measured"]["counts_agree"]
    # by hand: 16^3 owned + 2 ghost planes per split side (k H, H = 1) = 20 x 16 x 20 computed; an X slab
    # is 2 planes of 16 x 20 sites of 19 doubles
    assert out["exchange"]["computed"] == 20 * 16 * 20 and out["exchange"]["owned"] == 16 ** 3
    slab = 2 * 16 * 20 * 19 * 8
    for r in out["measured"]["ranks"]:
        assert r["counted"] == {"x messages": 2 * 2, "x bytes": 2 * 2 * slab, "z messages": 2 * 2,
                                "z bytes": 2 * 2 * slab}
    assert [row["grid"] for row in out["scaling"]["weak"]] == ["1x1x1", "2x1x1", "2x2x1", "2x2x2"]
