"""3D Cartesian decomposition (``lbgen.parallel.simulation.DistributedSimulation``): every
grid, with and without walls and time blocks, gives the bits of one ``Simulation3D`` in
strict mode -- walls and lids on split axes too (a closed cavity with a moving lid on 2 and 4
ranks: each rank holds the wall faces its block touches).  Each case launches the venv's
mpiexec on a small script (oversubscribed, one OpenMP thread per rank)."""
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
sim = DistributedSimulation(comm, *a["shape"], ranks_grid=a["grid"], time_block=a["k"], **a["kw"])
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


LID = {"z-high": [0.05, 0.02, 0.0], "x-low": [0.0, 0.0, 0.03]}     # the cavity's moving walls
SLOW = pytest.mark.slow


@pytest.mark.parametrize("n, grid, shape, k, walls, backend", [
    (2, "2x1x1", (12, 10, 16), 1, "xyz", "c"),      # the closed cavity split along x (fast subset)
    pytest.param(2, "2x1x1", (12, 10, 16), 1, None, "c", marks=SLOW),
    pytest.param(4, "2x1x2", (13, 10, 16), 1, None, "c", marks=SLOW),       # uneven X: 7, 6
    pytest.param(3, "1x3x1", (10, 20, 16), 2, None, "c", marks=SLOW),       # uneven Y (7, 7, 6), a time block
    pytest.param(4, "2x2x1", (14, 12, 16), 3, "z", "c", marks=SLOW),        # walls on the unsplit axis, k = 3
    pytest.param(4, "1x2x2", (10, 12, 18), 2, "x", "cuda-shim", marks=SLOW),   # device slabs 2 H deep
    pytest.param(4, "1x2x2", (10, 13, 18), 1, "xyz", "c", marks=SLOW),      # the cavity, walled Y and Z split
    pytest.param(4, "2x2x1", (13, 12, 16), 2, "xyz", "c", marks=SLOW),      # the cavity, walled X and Y split, k = 2
    pytest.param(4, "1x2x2", (10, 12, 16), 2, "xyz", "cuda-shim", marks=SLOW),  # the cavity on device ranks, k = 2
], ids=["2x1x1-cavity", "2x1x1", "2x1x2-uneven", "1x3x1-k2", "2x2x1-walls-k3", "1x2x2-device-k2",
        "1x2x2-cavity", "2x2x1-cavity-k2", "1x2x2-cavity-device-k2"])
def test_every_3d_grid_is_bit_identical_to_one_process(tmp_path, n, grid, shape, k, walls, backend):
    from lbgen.parallel.decomposition import ghost_sides
    from lbgen.simulation.boundaries import wall_faces
    from lbgen.simulation.runner import Simulation
    kw = dict(strict=True, tau=0.8, gravity=[1e-5, 0, -1e-5], backend=backend, **({"walls": walls} if walls else {}))
    if walls == "xyz":
        kw["lid"] = LID
    f = initial(shape)
    np.savez(tmp_path / "initial.npz", **f)
    (tmp_path / "run3d.py").write_text(SCRIPT)
    steps = 7
    args = {"shape": shape, "grid": grid, "k": k, "kw": kw, "steps": steps}
    proc = mpirun(n, [json.dumps(args)], tmp_path, script=tmp_path / "run3d.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "x".join(map(str, report["dims"])) == grid
    ref = Simulation(*shape, **kw)
    ref.set_fields(f["rho"], f["ux"], f["uy"], f["uz"])
    ref.step(steps)
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    for key in want:
        assert np.array_equal(got[key], want[key]), key
    # every split axis: a message per side and exchange (ceil(steps / k) exchanges), on every rank,
    # but none across a wall
    exchanges = -(-steps // k)
    faces = wall_faces(walls)
    for rank, sent in enumerate(report["sent"]):
        coords = np.unravel_index(rank, report["dims"])
        for axis, c, p in zip("xyz", coords, report["dims"]):
            sides = ghost_sides(axis, int(c), p, faces)
            assert sent.get(f"{axis} messages", 0) == exchanges * (sides[2] + sides[3])
            if p > 1 and not faces:
                assert sides == (True,) * 4
    if walls == "xyz":      # the ranks at the walls send nothing across them: one message per exchange here
        assert all(sent["x messages" if grid[0] == "2" else "y messages"] == exchanges for sent in report["sent"])


@SLOW
def test_a_lone_wall_face_is_refused_on_every_rank(tmp_path):
    (tmp_path / "run3d.py").write_text(SCRIPT)
    np.savez(tmp_path / "initial.npz", **initial((12, 10, 16)))
    args = {"shape": [12, 10, 16], "grid": "1x1x2", "k": 1, "kw": {"walls": "x, z-low"}, "steps": 1}
    proc = mpirun(2, [json.dumps(args)], tmp_path, script=tmp_path / "run3d.py")
    assert proc.returncode != 0 and not (tmp_path / "fields.npz").exists()
    assert "walls: the z-low face alone is a wall of a distributed lattice" in proc.stderr


def test_ghost_sides_skip_the_wall_faces_only():
    from lbgen.parallel.decomposition import paired_walls
    from lbgen.simulation.parameters import SimulationError
    paired_walls((("x", "low"), ("x", "high")))
    with pytest.raises(SimulationError, match="the y-high face alone"):
        paired_walls((("x", "low"), ("x", "high"), ("y", "high")))
    from lbgen.parallel.decomposition import block_extents, ghost_sides
    walls = (("z", "low"), ("z", "high"))
    assert ghost_sides("z", 0, 1, walls) == (False,) * 4                      # unsplit: both faces held
    assert ghost_sides("z", 0, 3, walls) == (False, True, False, True)        # at z-low: no slab across it
    assert ghost_sides("z", 1, 3, walls) == (True,) * 4                       # interior: bulk both sides
    assert ghost_sides("z", 2, 3, walls) == (True, False, True, False)
    assert ghost_sides("z", 0, 2, (("z", "low"),)) == (False, True, True, True)   # z-high periodic: feeds rank 1
    assert ghost_sides("z", 1, 2, (("z", "low"),)) == (True, True, True, False)
    assert ghost_sides("x", 0, 2, walls) == (True,) * 4
    # 16 planes on 2 ranks with k H = 2: 8 + 2 on each side that receives
    assert block_extents((8, 8, 16), (1, 1, 2), 2, 1, walls) == [[8], [8], [10]]
    assert block_extents((8, 8, 16), (1, 1, 2), 2, 1) == [[8], [8], [12]]


@SLOW
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


def test_fp16s_storage_trades_its_halos_bit_identically(tmp_path):
    """fp16s storage (float16 deviations, lbgen.codegen.storage) on 2 ranks, the cavity split along x with a
    time block of 2 (halos 2 H deep, traded as float16): the bits of one process."""
    from lbgen.simulation.runner import Simulation
    shape = (12, 10, 16)
    kw = dict(strict=True, tau=0.8, gravity=[1e-5, 0, -1e-5], walls="xyz", lid=LID, storage="fp16s")
    f = initial(shape)
    np.savez(tmp_path / "initial.npz", **f)
    (tmp_path / "run3d.py").write_text(SCRIPT)
    proc = mpirun(2, [json.dumps({"shape": shape, "grid": "2x1x1", "k": 2, "kw": kw, "steps": 7})], tmp_path,
                  script=tmp_path / "run3d.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # each message: 2 (k H) planes of x, Q = 19 populations of 10 x 16 sites, 2 bytes each
    assert all(sent["x bytes"] == sent["x messages"] * 2 * 19 * 10 * 16 * 2 for sent in report["sent"])
    ref = Simulation(*shape, **kw)
    ref.set_fields(f["rho"], f["ux"], f["uy"], f["uz"])
    ref.step(7)
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    assert ref.dtype == np.float16
    for key in want:
        assert np.array_equal(got[key], want[key]), key
