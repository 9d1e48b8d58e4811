"""Bodies under MPI (``DistributedSimulation(bodies=...)``): each rank lists the links of its block
(closed across its split axes), the Bouzidi bounce-back reads the ghost planes, and the force on
each body sums the chunks of each rank's own sites in the order of their global sites: a disc cut
by the blocks' edges gives the populations and the forces of one ``Simulation`` bit for bit
(strict).  Each case launches the venv's mpiexec on a small script."""
import json

import numpy as np
import pytest

from test_mpi import mpirun

SCRIPT = """
import json, sys
import numpy as np
from mpi4py import MPI
from lbgen.geometry import Bodies, Sphere
from lbgen.parallel.simulation import DistributedSimulation
a = json.loads(sys.argv[1])
comm = MPI.COMM_WORLD
bodies = Bodies(a["shape"], [Sphere(c, r) for c, r in a["spheres"]], names=a["names"])
sim = DistributedSimulation(comm, *a["shape"], ranks_grid=a["grid"], bodies=bodies, **a["kw"])
if comm.rank == 0:
    f = dict(np.load("initial.npz"))
    sim.set_fields(*f.values())
else:
    sim.set_fields()
sim.step(a["steps"])
out = sim.fields()
forces = sim.forces()
if comm.rank == 0:
    np.savez("fields.npz", **out)
    print(json.dumps({"dims": list(sim.dims), "forces": {k: [float(c).hex() for c in v] for k, v in forces.items()}}))
"""

SPHERES = [((7.6, 6.3), 3.4), ((12.2, 12.1), 1.6)]      # the first cut by every grid's block edges


@pytest.mark.parametrize("n, grid, scheme, walls, storage", [
    pytest.param(2, "2x1", "bouzidi", None, None),
    # quadratic: the links read two sites upstream, so the blocks trade two ghost planes a step
    pytest.param(2, "2x1", "quadratic", None, None),
    pytest.param(4, "2x2", "quadratic", None, None, marks=pytest.mark.slow),
    pytest.param(2, "2x1x1", "quadratic", "z", None, marks=pytest.mark.slow),
    pytest.param(2, "1x2", "bouzidi", "y", None, marks=pytest.mark.slow),
    pytest.param(4, "2x2", "halfway", None, None, marks=pytest.mark.slow),
    pytest.param(2, "2x1x1", "bouzidi", "z", None, marks=pytest.mark.slow),
    # 16-bit storage: the ghost planes travel as doubles (get_region/put_region decode and encode
    # them exactly), the link kernels convert: still one process's bits
    pytest.param(2, "2x1", "bouzidi", "y", "fp16s", marks=pytest.mark.slow),
    pytest.param(2, "2x1x1", "bouzidi", None, "fp16c", marks=pytest.mark.slow),
    pytest.param(2, "2x1", "bouzidi", "y", "opencl:fp16s", marks=pytest.mark.slow),   # OpenCL's slabs: ushort
])
def test_bodies_on_split_axes_are_bit_identical_to_one_process(tmp_path, n, grid, scheme, walls, storage):
    import lbgen
    from lbgen.geometry import Bodies, Sphere
    D = grid.count("x") + 1
    shape = (16, 15) if D == 2 else (16, 10, 12)
    spheres = SPHERES if D == 2 else [((7.6, 4.3, 5.2), 3.1), ((12.2, 6.1, 6.0), 1.6)]
    kw = dict(strict=True, tau=0.8, velocity_set="d2q9" if D == 2 else "d3q19", body_bc=scheme, walls=walls,
              gravity=[1e-5, -1e-5] if D == 2 else [1e-5, -1e-5, 0.0])
    if storage:
        backend, _, kw["storage"] = storage.rpartition(":")
        kw.update({"backend": backend} if backend else {})
    rng = np.random.default_rng(5)
    f = dict(rho=1 + 0.02 * rng.random(shape), ux=0.02 * rng.random(shape), uy=0.01 * rng.random(shape))
    if D == 3:
        f["uz"] = 0.01 * rng.random(shape)
    np.savez(tmp_path / "initial.npz", **f)
    (tmp_path / "run.py").write_text(SCRIPT)
    steps = 6
    args = {"shape": shape, "grid": grid, "kw": kw, "steps": steps, "spheres": spheres, "names": ["a", "b"]}
    proc = mpirun(n, [json.dumps(args)], tmp_path, script=tmp_path / "run.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "x".join(map(str, report["dims"])) == grid
    bodies = Bodies(shape, [Sphere(c, r) for c, r in spheres], names=["a", "b"])
    ref = lbgen.Simulation(*shape, bodies=bodies, **kw)
    ref.set_fields(*f.values())
    ref.step(steps)
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    for k in f:
        assert np.array_equal(want[k], got[k]), k
    forces = {k: [float.fromhex(c) for c in v] for k, v in report["forces"].items()}
    assert set(forces) == {"a", "b"}
    for name, F in ref.forces().items():
        assert forces[name] == list(F), name
        assert np.abs(F).max() > 1e-4


@pytest.mark.slow
def test_lbgen_run_with_a_body_under_mpiexec_reports_the_one_process_force(tmp_path):
    """`mpiexec -n 2 lbgen run --geometry mask.npy --body-bc bouzidi`: the manifest's force equals
    the one-process run's, bit for bit (strict)."""
    from tests.helpers import cli
    m = np.zeros((24, 16), np.uint8)
    m[9:15, 5:11] = 1
    np.save(tmp_path / "block.npy", m)
    args = ["run", "--lx", 24, "--ly", 16, "--velocity-set", "d2q9", "--geometry", tmp_path / "block.npy",
            "--body-bc", "bouzidi", "--gravity", "1e-5,0", "--steps", 12, "--strict", "--pictures", "none",
            "--no-progress"]
    proc = mpirun(2, [*args, "--out", tmp_path / "mpi"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    r = cli(*args, "--out", tmp_path / "one")
    assert r.exit_code == 0, r.output
    forces = [json.loads((tmp_path / d / "manifest.json").read_text())["bodies"]["forces"]["block"]
              for d in ("mpi", "one")]
    assert forces[0] == forces[1] and abs(forces[1][0]) > 0
    assert "force on the body 'block'" in proc.stdout


@pytest.mark.slow
def test_steady_stops_every_rank_at_the_one_process_step(tmp_path):
    """`mpiexec -n 2 lbgen run cylinder --steady 2e-4` (the DFG 2D-1 channel of Schaefer & Turek 1996
    at 4 cells per diameter): rank 0 judges the drag's change (lbgen.run.flows.drag_change) and every
    rank leaves the loop at its step: the one-process run's (strict: the same forces bit for bit),
    after three periods of the channel's sound (4 LX / c_s = 610 steps) and before --steps."""
    from tests.helpers import cli
    args = ["run", "cylinder", "--cells-per-diameter", 4, "--steps", 20000, "--steady", 2e-4, "--strict",
            "--pictures", "none", "--no-progress", "--output-every", 20000]
    proc = mpirun(2, [*args, "--out", tmp_path / "mpi"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    r = cli(*args, "--out", tmp_path / "one")
    assert r.exit_code == 0, r.output
    series = [(tmp_path / d / "series.csv").read_text().splitlines() for d in ("mpi", "one")]
    header = series[0][0].split(",")
    cols = [header.index(c) for c in ("step", "force_x", "force_y", "c_d", "c_l")]   # the sums' order differs
    rows = [[[line.split(",")[c] for c in cols] for line in s[1:]] for s in series]
    assert rows[0] == rows[1] and float(rows[0][-1][3]) > 0
    last = int(rows[1][-1][0])
    assert 3 * 4 * 88 * 3 ** 0.5 < last < 20000
    assert "steady at step %d" % last in r.output and "steady at step %d" % last in proc.stdout + proc.stderr



REFUSAL = """
import sys
from mpi4py import MPI
from lbgen.geometry import Bodies, Sphere
from lbgen.parallel.simulation import DistributedSimulation
from lbgen.simulation.parameters import SimulationError
bodies = Bodies((16, 15), [Sphere((7.6, 6.3), 3.4)], names=["a"])
try:
    sim = DistributedSimulation(MPI.COMM_WORLD, 16, 15, ranks_grid=sys.argv[1], bodies=bodies, body_bc="quadratic",
                                tau=0.8, streaming="inplace")
    print("built", MPI.COMM_WORLD.rank, sim.halo_width)
except SimulationError as e:
    print("refused", MPI.COMM_WORLD.rank, e)
"""


def test_quadratic_walls_in_place_on_split_axes_are_refused_in_words(tmp_path):
    """The quadratic bounce-back reads two sites upstream; an in-place odd step holds H valid ghost
    planes: every rank refuses it, naming the split; one rank builds it."""
    (tmp_path / "run.py").write_text(REFUSAL)
    proc = mpirun(2, ["2x1"], tmp_path, script=tmp_path / "run.py")
    assert proc.returncode == 0, proc.stderr
    lines = sorted(proc.stdout.strip().splitlines())
    assert [line.split()[:2] for line in lines] == [["refused", "0"], ["refused", "1"]], proc.stdout
    assert "body_bc='quadratic' with streaming='inplace' on 2 ranks split as 2x1" in lines[0]
    assert "streaming='pull'" in lines[0]
    proc = mpirun(1, ["1x1"], tmp_path, script=tmp_path / "run.py")
    assert proc.returncode == 0 and proc.stdout.split()[:2] == ["built", "0"], (proc.stdout, proc.stderr)
