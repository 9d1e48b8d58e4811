"""Device ranks keep their lattice on the device (issue 40): OpenCL (the CPU runtime) and
CUDA-host-shim ranks pack their halo slabs on the device and move them by the ``staged`` path
(a device -> host and a host -> device copy per slab) or the ``device`` path (the packed
device buffers handed to MPI, no copy); 2D and 3D, 2 and 4 ranks, walls on a split axis.
Each run is bit-identical to one process of the same backend in strict mode, and the bytes
and copies its programs moved while stepping are exactly the data-movement model's count
(``lbgen.parallel.gpu_model.halo_traffic``): no whole buffer moves, health checks included.  The staged path's steps
sweep the interior while the slabs are copied and traded (more than one fused launch a step)."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from helpers import require

SCRIPT = """
import json, sys
import numpy as np
from mpi4py import MPI
from lbgen.parallel.simulation import DistributedSimulation
a = json.loads(sys.argv[1])
comm = MPI.COMM_WORLD
sim = DistributedSimulation(comm, *a["shape"], ranks_grid=a["grid"], halo_path=a["path"], **a["kw"])
if comm.rank == 0:
    f = dict(np.load("initial.npz"))
    sim.set_fields(*(f[k] for k in a["fields"]))
else:
    sim.set_fields()
before, sweeps = dict(sim.transfers), sim.program.calls["fused"]
sim.step(1)
sim.check_finite()         # the owned sites only: the ghosts of a staged overlapped step are not swept
sim.step(a["steps"] - 1)
moved = {k: v - before.get(k, 0) for k, v in sim.transfers.items()}
sweeps = (sim.program.calls["fused"] - sweeps) / a["steps"]
sim.check_finite()
out = sim.fields()
report = comm.gather({"coords": list(sim.coords), "moved": moved, "sent": dict(sim.messages),
                      "path": sim.halo_path, "sweeps": sweeps}, root=0)
if comm.rank == 0:
    np.savez("fields.npz", **out)
    print(json.dumps({"dims": list(sim.dims), "ranks": report}))
"""

SLOW = pytest.mark.slow
CASES = [
    ("opencl", (12, 10, 16), "2x1x1", "x", "staged"),                      # fast subset: 3D, walls on the split axis
    pytest.param("cuda-shim", (12, 10, 16), "2x1x1", "x", "device", marks=SLOW),
    pytest.param("opencl", (12, 10, 16), "2x1x1", "x", "device", marks=SLOW),
    pytest.param("cuda-shim", (12, 10, 16), "2x1x1", "x", "staged", marks=SLOW),
    pytest.param("opencl", (12, 12, 16), "2x2x1", "y", "staged", marks=SLOW),     # 4 ranks, Y walled and split
    pytest.param("cuda-shim", (12, 12, 16), "1x2x2", None, "device", marks=SLOW),
    pytest.param("opencl", (24, 16), "2x1", "x", "device", marks=SLOW),           # 2D
    pytest.param("cuda-shim", (24, 16), "2x1", "x", "staged", marks=SLOW),
    pytest.param("opencl", (24, 20), "2x2", "y", "staged", marks=SLOW),
    pytest.param("cuda-shim", (24, 20), "2x2", None, "device", marks=SLOW),
]


def _runtime(backend):
    from lbgen.backends import available
    require(*available(backend), backend)


@pytest.mark.parametrize("backend, shape, grid, walls, path", CASES)
def test_device_ranks_equal_one_process_and_move_the_models_bytes(tmp_path, backend, shape, grid, walls, path):
    from test_mpi import mpirun

    from lbgen.parallel.gpu_model import halo_traffic
    from lbgen.simulation.boundaries import wall_faces
    from lbgen.simulation.runner import Simulation
    _runtime(backend)
    D = len(shape)
    kw = dict(strict=True, tau=0.8, backend=backend, check_every=0, velocity_set="d3q19" if D == 3 else "d2q9")
    if walls:
        kw["walls"] = walls
        kw["lid"] = {f"{walls}-low": [0.0, 0.02, 0.01][:D] if walls != "y" else [0.02, 0.0, 0.01][:D]}
    kw["gravity"] = [1e-5, 0, -1e-5][:D] if D == 3 else [1e-5, 0]
    fields = ["rho", "ux", "uy", "uz"][:D + 1]
    rng = np.random.default_rng(5)
    f = {k: (1.0 if k == "rho" else 0.0) + 0.02 * rng.random(shape) for k in fields}
    np.savez(tmp_path / "initial.npz", **f)
    (tmp_path / "halo.py").write_text(SCRIPT)
    steps = 5
    args = {"shape": shape, "grid": grid, "path": path, "kw": kw, "fields": fields, "steps": steps}
    n = int(np.prod([int(c) for c in grid.split("x")]))
    proc = mpirun(n, [json.dumps(args)], tmp_path, script=tmp_path / "halo.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    ref = Simulation(*shape, **kw)
    ref.set_fields(*(f[k] for k in fields))
    ref.step(steps)
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    for key in want:
        assert np.array_equal(got[key], want[key]), key
    itemsize = 8
    for rank in report["ranks"]:
        assert rank["path"] == path
        model = halo_traffic(shape, report["dims"], rank["coords"], depth=1, Q=ref.vs.Q, halo=ref.vs.max_hop,
                             itemsize=itemsize, path=path, wall_faces=wall_faces(walls))
        for key in ("to host bytes", "to host copies", "to device bytes", "to device copies"):
            assert rank["moved"].get(key, 0) == steps * model[key], (key, rank)
        assert sum(v for k, v in rank["sent"].items() if k.endswith("bytes")) == steps * model["mpi bytes"]
        if path == "device":
            assert not rank["moved"] or not any(rank["moved"].values())
        # the staged path sweeps the interior while the slabs travel, then the edges (X and/or Y
        # split); one sweep a step on the device path and where Z is split
        overlapped = path == "staged" and report["dims"][2:] in ([], [1])
        assert (rank["sweeps"] > 1) == overlapped, rank


def test_a_path_the_ranks_cannot_take_is_refused_before_any_work(tmp_path):
    """C ranks keep host buffers (no halo path to choose); an unknown path; a path without mpiexec."""
    from test_mpi import mpirun

    from lbgen.cli.main import main
    from lbgen.parallel.halo import set_launch_halo_path
    from lbgen.parallel.simulation import DistributedSimulation
    from lbgen.simulation.parameters import SimulationError
    result = CliRunner().invoke(main, ["run", "--lx", 16, "--ly", 16, "--steps", 2, "--halo-path", "device",
                                       "--out", str(tmp_path / "one")])
    assert result.exit_code != 0 and not (tmp_path / "one").exists()
    assert "--halo-path device" in result.output and "single process" in result.output
    set_launch_halo_path("auto", None)

    class Comm:      # one rank: the values are checked before the communicator is used
        rank, size = 0, 1
    with pytest.raises(SimulationError, match="halo_path='sideways': one of auto, staged, device"):
        DistributedSimulation(Comm(), 16, 16, halo_path="sideways")
    (tmp_path / "c.py").write_text(
        "from mpi4py import MPI\nfrom lbgen.parallel.simulation import DistributedSimulation\n"
        "DistributedSimulation(MPI.COMM_WORLD, 16, 16, halo_path='staged')\nopen('made', 'w').close()\n")
    proc = mpirun(2, [], tmp_path, script=tmp_path / "c.py")
    assert proc.returncode != 0 and not (tmp_path / "made").exists()
    assert "halo_path='staged': the c ranks' buffers are host memory" in proc.stderr


def test_packed_slabs_round_trip_on_every_runtime(programs):
    """gather then scatter through a device slab puts every value back where it was, and a slab's
    copies to and from the host are counted once each with their bytes."""
    from lbgen.backends import available
    for name in ("opencl", "cuda-shim", "c"):
        if not available(name)[0]:
            continue
        prog = programs.of(name, (6, 5, 8), velocity_set="d3q19", layout="soa")
        rng = np.random.default_rng(2)
        host = rng.random(prog.layout.size).astype(prog.dtype)
        f = prog.upload(host)
        index = rng.choice(prog.layout.size, 300, replace=False)
        dev_index, slab, back = prog.slab_index(index), prog.slab_buffer(300), prog.slab_host(300)
        before = dict(prog.transfers)
        prog.gather(f, dev_index, slab)
        prog.slab_to_host(slab, back)
        prog.synchronize()
        assert np.array_equal(back, host[index]), name
        back[...] = -back
        prog.slab_to_device(back, slab)
        prog.scatter(f, dev_index, slab)
        prog.synchronize()
        moved = {k: v - before.get(k, 0) for k, v in prog.transfers.items()}
        assert moved == {"to host bytes": back.nbytes, "to host copies": 1, "to device bytes": back.nbytes,
                         "to device copies": 1}, name
        want = host.copy()
        want[index] = -host[index]
        assert np.array_equal(prog.download(f), want), name


@pytest.mark.parametrize("path", ["staged", "device"])
def test_cuda_ranks_on_a_gpu(tmp_path, path):
    """On a GPU (skips without one: CI has none): two CUDA ranks on the lent device, each path the
    MPI library allows, equal one process; the device path on an MPI that is not CUDA-aware is
    refused before any work, naming why."""
    from lbgen.backends import available
    ok, why = available("cuda")
    if not ok:
        pytest.skip(f"no GPU: {why}")
    from test_mpi import mpirun

    from lbgen.backends.cuda import mpi_cuda_aware
    shape, kw = (16, 12, 16), dict(strict=True, tau=0.8, backend="cuda", check_every=0, velocity_set="d3q19",
                                   walls="x", lid={"x-low": [0.0, 0.02, 0.01]})
    fields = ["rho", "ux", "uy", "uz"]
    rng = np.random.default_rng(6)
    f = {k: (1.0 if k == "rho" else 0.0) + 0.02 * rng.random(shape) for k in fields}
    np.savez(tmp_path / "initial.npz", **f)
    (tmp_path / "halo.py").write_text(SCRIPT)
    args = {"shape": shape, "grid": "2x1x1", "path": path, "kw": kw, "fields": fields, "steps": 5}
    proc = mpirun(2, [json.dumps(args)], tmp_path, script=tmp_path / "halo.py")
    if path == "device" and not mpi_cuda_aware():
        assert proc.returncode != 0 and not (tmp_path / "fields.npz").exists()
        assert "not CUDA-aware" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    from lbgen.simulation.runner import Simulation
    ref = Simulation(*shape, **kw)
    ref.set_fields(*(f[k] for k in fields))
    ref.step(5)
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    assert all(np.array_equal(got[k], want[k]) for k in want)
