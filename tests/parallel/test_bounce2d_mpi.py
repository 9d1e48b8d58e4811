"""2D bounce-back walls, lids and masks under MPI (``DistributedSimulation``): each rank holds
the wall faces its block touches (per-face switches), trades no halo across a wall face, and
cuts the mask per block (ghosts included); the D2Q9 cavity split in X, in Y and 2 x 2, and a
masked channel, give the bits of one ``Simulation`` in strict mode.  Each case launches the
venv's mpiexec on a small script (oversubscribed, one OpenMP thread per rank)."""
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
kw = dict(a["kw"])
if a.get("mask"):
    kw["mask"] = np.load("mask.npy")
sim = DistributedSimulation(comm, *a["shape"], ranks_grid=a["grid"], **kw)
if comm.rank == 0:
    f = dict(np.load("initial.npz"))
    sim.set_fields(f["rho"], f["ux"], f["uy"], 1.0)
else:
    sim.set_fields()
sim.step(a["steps"])
out = sim.fields()
rows = sim.diagnostic_rows()
sent = comm.gather(dict(sim.messages), root=0)
if comm.rank == 0:
    np.savez("fields.npz", **out)
    print(json.dumps({"dims": list(sim.dims), "sent": sent}))
"""

SLOW = pytest.mark.slow
CAVITY = {"walls": "xy", "lid": {"y-high": [0.05, 0.0]}}


def initial(shape, seed=5):
    rng = np.random.default_rng(seed)
    return dict(rho=1 + 0.02 * rng.random(shape), ux=0.02 * rng.random(shape), uy=0.01 * rng.random(shape))


def channel_mask(shape):
    """A cylinder in a channel, cut by the blocks' edges of every grid below."""
    x, y = np.indices(shape)
    return ((x - shape[0] // 2) ** 2 + (y - shape[1] // 2) ** 2 < 9).astype(np.uint8)


@pytest.mark.parametrize("n, grid, shape, bounds, mask", [
    pytest.param(2, "1x2", (12, 14), CAVITY, False),                            # the cavity split in Y
    pytest.param(2, "2x1", (13, 12), CAVITY, False, marks=SLOW),                 # ... in X
    pytest.param(4, "2x2", (13, 14), CAVITY, False, marks=SLOW),                 # ... 2 x 2
    pytest.param(4, "2x2", (14, 13), {"walls": "y"}, True, marks=SLOW),          # a masked channel, walls y
    pytest.param(2, "2x1", (12, 12), {}, True, marks=SLOW),                      # a mask in a periodic box
], ids=["cavity-1x2", "cavity-2x1", "cavity-2x2", "channel-mask-2x2", "periodic-mask-2x1"])
def test_bounce_back_on_split_axes_is_bit_identical_to_one_process(tmp_path, n, grid, shape, bounds, mask):
    from lbgen.parallel.decomposition import ghost_sides
    from lbgen.simulation.boundaries import wall_faces
    from lbgen.simulation.runner import Simulation
    kw = dict(strict=True, tau=0.8, velocity_set="d2q9", gravity=[1e-5, -1e-5], **bounds)
    f = initial(shape)
    np.savez(tmp_path / "initial.npz", **f)
    m = channel_mask(shape) if mask else None
    if mask:
        np.save(tmp_path / "mask.npy", m)
    (tmp_path / "run2d.py").write_text(SCRIPT)
    steps = 7
    args = {"shape": shape, "grid": grid, "kw": kw, "steps": steps, "mask": mask}
    proc = mpirun(n, [json.dumps(args)], tmp_path, script=tmp_path / "run2d.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "x".join(map(str, report["dims"])) == grid
    ref = Simulation(*shape, mask=m, **kw)
    ref.set_fields(f["rho"], f["ux"], f["uy"], 1.0)
    ref.step(steps)
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    for key in want:
        assert np.array_equal(got[key], want[key]), key
    # every split axis: a message per side and step, but none across a wall face
    faces = wall_faces(bounds.get("walls"), 2)
    for rank, sent in enumerate(report["sent"]):
        coords = divmod(rank, report["dims"][1])         # MPI_Cart: row-major (cx, cy)
        for axis, c, p in zip("xy", coords, report["dims"]):
            sides = ghost_sides(axis, int(c), p, faces)
            assert sent.get(f"{axis} messages", 0) == steps * (sides[2] + sides[3])


def test_a_time_block_with_bounce_back_walls_is_refused_on_every_rank(tmp_path):
    (tmp_path / "run2d.py").write_text(SCRIPT)
    args = {"shape": [12, 14], "grid": "1x2", "kw": dict(CAVITY, velocity_set="d2q9", time_block=2), "steps": 1}
    proc = mpirun(2, [json.dumps(args)], tmp_path, script=tmp_path / "run2d.py")
    assert proc.returncode != 0
    assert "time_block=2: the time-blocked sweep (fused_tb) does not take bounce-back walls" in proc.stderr
    assert not (tmp_path / "fields.npz").exists()


@SLOW
def test_the_cavity_run_on_two_ranks_writes_the_run_folder_of_one_process(tmp_path):
    """`mpiexec -n 2 lbgen run lid-driven-cavity --velocity-set d2q9 --ranks-grid 1x2`: its
    fields files (every saved step) and series hold the bits of one process's."""
    import h5py
    from click.testing import CliRunner
    from lbgen.cli.main import main
    args = ["run", "lid-driven-cavity", "--velocity-set", "d2q9", "--lx", 24, "--ly", 20, "--steps", 30,
            "--output-every", 15, "--strict", "--pictures", "none", "--no-progress"]
    one = CliRunner().invoke(main, [str(a) for a in args] + ["--out", str(tmp_path / "one")])
    assert one.exit_code == 0, one.output
    proc = mpirun(2, args + ["--ranks-grid", "1x2", "--out", "two"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "2 MPI ranks" in proc.stderr
    files = sorted(p.name for p in (tmp_path / "one" / "fields").iterdir())
    assert len(files) == 3 and files == sorted(p.name for p in (tmp_path / "two" / "fields").iterdir())
    for name in files:
        with h5py.File(tmp_path / "one" / "fields" / name) as a, h5py.File(tmp_path / "two" / "fields" / name) as b:
            keys = []
            a.visit(lambda k: keys.append(k) if isinstance(a[k], h5py.Dataset) else None)
            assert keys and sorted(keys) == sorted(k for k in keys if k in b)
            for k in keys:
                assert np.array_equal(a[k][()], b[k][()]), (name, k)
    assert (tmp_path / "one" / "series.csv").read_text() == (tmp_path / "two" / "series.csv").read_text()


def test_a_block_holds_the_faces_it_touches_and_its_cut_of_the_mask():
    """The rules each rank applies (no MPI): ``block_indices`` gives a block's global indices
    with ghosts on its internal sides only; ``kernel_fields`` of the faces it holds gives their
    bits 2a + s and only their lids."""
    from lbgen.parallel.decomposition import block_indices
    from lbgen.simulation.boundaries import BounceBack
    walls = (("y", "low"), ("y", "high"))
    assert [list(i) for i in block_indices((6, 9), (2, 3), (0, 0), 2, walls)] == [[4, 5, 0, 1, 2, 3, 4], [0, 1, 2, 3, 4]]
    assert list(block_indices((6, 9), (2, 3), (1, 1), 2, walls)[1]) == [1, 2, 3, 4, 5, 6, 7]
    assert list(block_indices((6, 9), (2, 3), (1, 2), 2, walls)[1]) == [4, 5, 6, 7, 8]
    mask = np.zeros((6, 9), bool)
    mask[2, 3] = True
    b = BounceBack.of("xy", {"y-high": (0.05, 0)}, mask, (6, 9), "d2q9")
    assert b.kernel_fields()["walls"] == 15 and b.kernel_fields()["lids"] == 8
    top = b.kernel_fields((("x", "low"), ("x", "high"), ("y", "high")), mask[:, 5:])
    assert top["walls"] == 0b1011 and top["lids"] == 8 and top["lid"][3, 0] == 0.05 and top["solid"].shape == (6, 4)
    bottom = b.kernel_fields((("x", "low"), ("x", "high"), ("y", "low")), mask[:, :5])
    assert bottom["walls"] == 0b0111 and bottom["lids"] == 0 and not bottom["lid"].any()
