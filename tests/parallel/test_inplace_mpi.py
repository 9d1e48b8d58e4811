"""In-place streaming under MPI (issue 38): ``DistributedSimulation(streaming='inplace')`` on 2
ranks, 2D and 3D, periodic and with bounce-back walls (a lid, a voxel mask), split along each axis,
in clustered and plain layouts, with open faces (inlet, outlet, outflow, slip): after 1..5 steps its
state is the bits of one process in place and of one process pulling (strict builds).  Each rank's block carries 2 H ghost planes traded before
the AA pattern's even steps only (Bailey et al., ICPP 2009: the odd step reads only slots the even
step wrote), so t steps send ceil(t/2) halo trades.  ``mpiexec lbgen run --streaming inplace``
checkpoints at an odd step, resumes on 2 ranks and on one process, and ends with the pull bits.
Bodies cut by the blocks' edges (half-way, Bouzidi): each step's force on each body is pull's."""
import json
import math

import numpy as np
import pytest

from test_mpi import mpirun
from helpers import cli

pytestmark = pytest.mark.slow       # subprocess launches: CI=true or --slow

SCRIPT = """
import json, sys
import numpy as np
from mpi4py import MPI
from lbgen.parallel.simulation import DistributedSimulation
comm = MPI.COMM_WORLD
out, report = {}, {"cases": []}
for i, c in enumerate(json.loads(sys.argv[1])):
    kw = dict(c["kw"], mask=np.load("mask%d.npy" % i) if c["mask"] else None)
    sim = DistributedSimulation(comm, *c["shape"], ranks_grid=c["grid"], streaming="inplace", **kw)
    init = dict(np.load("initial%d.npz" % i)) if comm.rank == 0 else None
    sent = []
    for t in range(1, 6):
        sim.messages.clear()
        sim.set_fields(init["rho"], *init["u"]) if comm.rank == 0 else sim.set_fields()
        sim.step(t)
        rows = sim.diagnostic_rows() if t == 5 else None      # an odd count: the buffers are made natural first
        state = sim.state()
        sent.append(sum(v for k, v in sim.messages.items() if k.endswith("messages")))
        if comm.rank == 0:
            out["%d-%d" % (i, t)] = state
            if rows is not None:
                out["rows%d" % i] = rows
    report["cases"].append({"dims": list(sim.dims), "ghosts": [sim.ghost_low, sim.ghost_high],
                            "streaming": sim.streaming, "sent": sent})
try:                       # blocks of 2 sites along X: too thin for the 2 H = 6 ghosts of D2Q37
    DistributedSimulation(comm, 4, 12, ranks_grid="2x1", streaming="inplace", velocity_set="d2q37")
    report["thin"] = None
except Exception as e:
    report["thin"] = str(e)
if comm.rank == 0:
    np.savez("states.npz", **out)
    print(json.dumps(report))
"""

LID2 = {"y-high": [0.05, 0.0]}
LID3 = {"z-high": [0.05, 0.0, 0.0]}
#: (shape, grid, Simulation keywords, solid box or None): each axis split; periodic and walled axes
CASES = [
    ((16, 12), "2x1", dict(velocity_set="d2q9", layout="caosoa", vl=4), None),
    ((12, 16), "1x2", dict(velocity_set="d2q9", layout="soa", walls="y", lid=LID2), ((3, 5), (4, 6))),
    ((12, 12), "2x1", dict(velocity_set="d2q9", layout="soa", walls="x"), ((5, 7), (4, 6))),
    ((8, 6, 12), "1x1x2", dict(velocity_set="d3q19", layout="caosoa", vl=2), None),
    ((8, 6, 10), "2x1x1", dict(velocity_set="d3q19", layout="soa", walls="z", lid=LID3), ((2, 4), (2, 4), (3, 5))),
    ((8, 8, 6), "1x2x1", dict(velocity_set="d3q19", layout="soa", walls="y"), ((2, 4), (3, 5), (1, 3))),
    # open faces (the snapshot of their planes), split across the flow and along it
    ((14, 8), "2x1", dict(velocity_set="d2q9", layout="soa", walls="y-low", slip="y-high",
                          inlet={"x-low": ["uniform", 0.04]}, outflow="x-high"), None),
    ((12, 12), "1x2", dict(velocity_set="d2q9", layout="caosoa", vl=4, walls="y", lid=LID2,
                           inlet={"x-low": ["parabolic", 0.04]}, outlet={"x-high": 0.99}), None),
    ((10, 6, 8), "2x1x1", dict(velocity_set="d3q19", layout="soa", walls="yz", inlet={"x-low": ["parabolic", 0.05]},
                               outlet={"x-high": 0.99}), None),
    # the thermal sets' open faces (hops of 3: the snapshot's 3 planes a face), split along the flow
    ((16, 8), "2x1", dict(velocity_set="d2q37", collision="bgk", layout="soa", walls="y-low", slip="y-high",
                          inlet={"x-low": ["uniform", 0.05]}, outflow="x-high", inlet_temperature=1.02), None),
]


def test_in_place_ranks_give_the_bits_of_one_process_in_place_and_pulling(tmp_path):
    from lbgen.simulation.runner import Simulation
    cases, refs = [], {}
    for i, (shape, grid, kw, box) in enumerate(CASES):
        kw = dict(kw, strict=True, tau=0.7)
        rng = np.random.default_rng(11 + i)
        init = {"rho": 1 + 0.02 * rng.random(shape), "u": np.stack([0.03 * rng.standard_normal(shape) for _ in shape])}
        np.savez(tmp_path / f"initial{i}.npz", **init)
        mask = None
        if box is not None:
            mask = np.zeros(shape, np.uint8)
            mask[tuple(slice(a, b) for a, b in box)] = 1
            np.save(tmp_path / f"mask{i}.npy", mask)
        cases.append({"shape": shape, "grid": grid, "kw": kw, "mask": box is not None})
        # one process first (pull, then in place): it compiles the kernels the ranks load from the cache
        for streaming in ("pull", "inplace"):
            one = Simulation(*shape, mask=mask, streaming=streaming, **kw)
            for t in range(1, 6):
                one.set_fields(init["rho"], *init["u"])
                one.step(t)
                refs[streaming, i, t] = one.state()
            refs[streaming, i, "rows"] = one.diagnostic_rows()
    (tmp_path / "inplace_mpi.py").write_text(SCRIPT)
    proc = mpirun(2, [json.dumps(cases)], tmp_path, script=tmp_path / "inplace_mpi.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    got = np.load(tmp_path / "states.npz")
    # a block needs 2 H sites along a split axis in place (D2Q37: H = 3), refused naming that need
    assert "fewer than the 6 in-place streaming's ghosts need (2 x 3" in report["thin"], report["thin"]
    for i, (shape, grid, kw, box) in enumerate(CASES):
        case = report["cases"][i]
        assert "x".join(map(str, case["dims"])) == grid and case["streaming"] == "inplace"
        split = [a for a, p in enumerate(case["dims"]) if p > 1]
        assert all(case["ghosts"][0][a] + case["ghosts"][1][a] > 0 for a in split)
        H = 3 if kw["velocity_set"] == "d2q37" else 1
        assert all(g in (0, 2 * H) for side in case["ghosts"] for g in side)      # 2 H ghosts where any
        # a trade before every even step: t steps send ceil(t/2) trades' messages
        assert case["sent"] == [case["sent"][0] * math.ceil(t / 2) for t in range(1, 6)], case["sent"]
        assert case["sent"][0] > 0
        for t in range(1, 6):
            state = got[f"{i}-{t}"]
            assert np.array_equal(state, refs["inplace", i, t]), (grid, kw, t)
            assert np.array_equal(state, refs["pull", i, t]), (grid, kw, t)
        assert not np.array_equal(refs["pull", i, 1], refs["pull", i, 2])       # the state moves
        if case["dims"][0] == 1:        # X unsplit: every row is one rank's, the bits of one process
            assert np.array_equal(got[f"rows{i}"], refs["pull", i, "rows"]), grid
            assert np.array_equal(got[f"rows{i}"], refs["inplace", i, "rows"]), grid
        else:
            np.testing.assert_allclose(got[f"rows{i}"], refs["pull", i, "rows"], rtol=1e-12, atol=1e-15)


#: the GPU kernels' ranks in place (OpenCL, the CUDA kernels through the host shim): open faces split
#: along the flow, a 3D block split along the clustered Z lines, a lid across a split X
GPU_CASES = [((14, 8), "2x1", dict(velocity_set="d2q9", layout="soa", walls="y-low", slip="y-high",
                                   inlet={"x-low": ["uniform", 0.04]}, outflow="x-high")),
             ((8, 6, 12), "1x1x2", dict(velocity_set="d3q19", layout="caosoa", vl=2)),
             ((8, 6, 10), "2x1x1", dict(velocity_set="d3q19", layout="soa", walls="z", lid=LID3))]


@pytest.mark.parametrize("backend", ["opencl", "cuda-shim"])
def test_gpu_ranks_in_place_give_the_bits_of_the_c_pull_run(tmp_path, backend):
    """The GPU kernels' ranks step in place too: the 2 H ghost planes of the natural state travel
    by the ranks' halo path (device slabs) before each even step, and after 1..5 steps the state
    is the one C process's pulling (strict builds)."""
    from lbgen.backends import available
    from lbgen.simulation.runner import Simulation
    ok, why = available(backend)
    if not ok:
        pytest.skip(why)
    cases, refs = [], {}
    for i, (shape, grid, kw) in enumerate(GPU_CASES):
        rng = np.random.default_rng(11 + i)
        init = {"rho": 1 + 0.02 * rng.random(shape), "u": np.stack([0.03 * rng.standard_normal(shape) for _ in shape])}
        np.savez(tmp_path / f"initial{i}.npz", **init)
        cases.append({"shape": shape, "grid": grid, "kw": dict(kw, strict=True, tau=0.7, backend=backend),
                      "mask": False})
        one = Simulation(*shape, strict=True, tau=0.7, **kw)
        for t in range(1, 6):
            one.set_fields(init["rho"], *init["u"])
            one.step(t)
            refs[i, t] = one.state()
        Simulation(*shape, strict=True, tau=0.7, backend=backend, streaming="inplace", **kw)   # compiled once, here
    (tmp_path / "inplace_mpi.py").write_text(SCRIPT)
    proc = mpirun(2, [json.dumps(cases)], tmp_path, script=tmp_path / "inplace_mpi.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    got = np.load(tmp_path / "states.npz")
    for i, (shape, grid, kw) in enumerate(GPU_CASES):
        case = report["cases"][i]
        assert "x".join(map(str, case["dims"])) == grid and case["streaming"] == "inplace"
        assert case["sent"] == [case["sent"][0] * math.ceil(t / 2) for t in range(1, 6)] and case["sent"][0] > 0
        for t in range(1, 6):
            assert np.array_equal(got[f"{i}-{t}"], refs[i, t]), (backend, grid, t)


def test_an_in_place_run_on_two_ranks_resumes_at_an_odd_step_on_two_ranks_and_on_one(tmp_path):
    run = ["shear-wave", "--velocity-set", "d2q9", "--lx", 8, "--ly", 32, "--pictures", "none", "--no-progress",
           "--checkpoint-every", 3, "--strict"]
    result = cli("run", *run, "--steps", 9, "--out", tmp_path / "whole", "--save", tmp_path / "whole.npz")
    assert result.exit_code == 0, result.output
    part = mpirun(2, ["run"] + run + ["--steps", 3, "--streaming", "inplace", "--ranks-grid", "1x2", "--out", "part"],
                  tmp_path)
    assert part.returncode == 0, part.stderr
    assert "2 MPI ranks" in part.stderr and "in place (one population buffer)" in part.stderr
    manifest = json.loads((tmp_path / "part" / "manifest.json").read_text())
    assert manifest["device"]["streaming"] == "inplace" and manifest["device"]["ranks"] == 2
    assert [p.name for p in (tmp_path / "part" / "checkpoints").iterdir()] == ["step-000000003.lbpieces"]
    import shutil
    shutil.copytree(tmp_path / "part", tmp_path / "part1")
    resumed = mpirun(2, ["run", "--resume", "part", "--steps", 9, "--save", "two.npz", "--no-progress"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    result = cli("run", "--resume", tmp_path / "part1", "--steps", 9, "--save", tmp_path / "one.npz", "--no-progress")
    assert result.exit_code == 0, result.output
    whole = np.load(tmp_path / "whole.npz")
    for name in ("two.npz", "one.npz"):
        got = np.load(tmp_path / name)
        for k in ("rho", "ux", "uy"):
            assert np.array_equal(got[k], whole[k]), (name, k)
    assert not np.array_equal(whole["ux"], 0 * whole["ux"])


BODY_SCRIPT = """
import json, sys
import numpy as np
from mpi4py import MPI
from lbgen.geometry import Bodies, Sphere
from lbgen.parallel.simulation import DistributedSimulation
comm = MPI.COMM_WORLD
out = {}
for i, c in enumerate(json.loads(sys.argv[1])):
    bodies = Bodies(c["shape"], [Sphere(x, r) for x, r in c["spheres"]], names=["b%d" % k for k in range(len(c["spheres"]))])
    sim = DistributedSimulation(comm, *c["shape"], ranks_grid=c["grid"], streaming="inplace", bodies=bodies,
                                body_bc=c["scheme"], **c["kw"])
    init = dict(np.load("initial%d.npz" % i)) if comm.rank == 0 else None
    sim.set_fields(init["rho"], *init["u"]) if comm.rank == 0 else sim.set_fields()
    for t in range(1, 7):
        sim.step(1)
        forces = sim.forces()
        if comm.rank == 0:
            out.update({"%d-%d-%s" % (i, t, k): v for k, v in forces.items()})
    state = sim.state()
    if comm.rank == 0:
        out["%d-state" % i] = state
if comm.rank == 0:
    np.savez("bodies.npz", **out)
"""

#: (shape, grid, spheres, scheme, keywords): a body cut by the ranks' block edges, Bouzidi and half-way
BODY_CASES = [
    ((24, 16), "2x1", [((11.6, 6.3), 3.4), ((15.2, 11.1), 1.6)], "bouzidi", dict(velocity_set="d2q9", layout="soa",
                                                                                 walls="y")),
    ((14, 10, 12), "1x1x2", [((5.5, 4.6, 5.2), 2.6)], "bouzidi", dict(velocity_set="d3q19", layout="caosoa", vl=2)),
    ((14, 10, 12), "2x1x1", [((6.5, 4.6, 5.2), 2.6)], "halfway", dict(velocity_set="d3q19", layout="caosoa", vl=2)),
]


def test_bodies_in_place_on_two_ranks_give_the_forces_and_state_of_one_pulling_process(tmp_path):
    """The momentum-exchange force on each body after every one of 6 single steps (both parities) and
    the state: the bits of one process pulling (lbgen.simulation.bodies; the chunks of each rank's
    owned sites summed in the order of their global sites)."""
    from lbgen.geometry import Bodies, Sphere
    from lbgen.simulation.runner import Simulation
    cases, want = [], {}
    for i, (shape, grid, spheres, scheme, kw) in enumerate(BODY_CASES):
        kw = dict(kw, strict=True, tau=0.7)
        rng = np.random.default_rng(2 + i)
        init = {"rho": 1 + 0.01 * rng.random(shape), "u": np.stack([0.02 * rng.standard_normal(shape) for _ in shape])}
        np.savez(tmp_path / f"initial{i}.npz", **init)
        cases.append({"shape": shape, "grid": grid, "spheres": spheres, "scheme": scheme, "kw": kw})
        bodies = Bodies(shape, [Sphere(c, r) for c, r in spheres], names=[f"b{k}" for k in range(len(spheres))])
        for streaming in ("inplace", "pull"):     # compiles what the ranks load from the cache
            one = Simulation(*shape, streaming=streaming, bodies=bodies, body_bc=scheme, **kw)
            one.set_fields(init["rho"], *init["u"])
            for t in range(1, 7):
                one.step(1)
                want.update({(streaming, i, t, k): v for k, v in one.forces().items()})
            want[streaming, i] = one.state()
    (tmp_path / "bodies_mpi.py").write_text(BODY_SCRIPT)
    proc = mpirun(2, [json.dumps(cases)], tmp_path, script=tmp_path / "bodies_mpi.py")
    assert proc.returncode == 0, proc.stderr
    got = np.load(tmp_path / "bodies.npz")
    for i, (shape, grid, spheres, scheme, kw) in enumerate(BODY_CASES):
        for t in range(1, 7):
            for k in range(len(spheres)):
                force = got[f"{i}-{t}-b{k}"]
                assert np.array_equal(force, want["pull", i, t, f"b{k}"]), (grid, scheme, t, k)
                assert np.array_equal(force, want["inplace", i, t, f"b{k}"]), (grid, scheme, t, k)
                assert np.abs(force).max() > 0
        assert np.array_equal(got[f"{i}-state"], want["pull", i]), grid


def test_the_dfg_cylinder_in_place_on_two_ranks_is_the_pull_run_of_one_process(tmp_path):
    """`lbgen run cylinder` (the DFG benchmark of Schaefer & Turek 1996, validated in pull by
    tests/run/test_flows.py: parabolic velocity inlet, pressure outlet, no-slip walls, a Bouzidi
    cylinder) with --streaming inplace under mpiexec: its fields and its drag and lift series are the
    bits of one pulling process."""
    run = ["cylinder", "--cells-per-diameter", 10, "--steps", 41, "--series-every", 10, "--output-every", 41,
           "--pictures", "none", "--no-progress", "--strict"]
    result = cli("run", *run, "--out", tmp_path / "pull", "--save", tmp_path / "pull.npz")
    assert result.exit_code == 0, result.output
    proc = mpirun(2, ["run"] + run + ["--streaming", "inplace", "--out", "aa", "--save", "aa.npz"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "2 MPI ranks" in proc.stderr and "in place (one population buffer)" in proc.stderr
    want, got = np.load(tmp_path / "pull.npz"), np.load(tmp_path / "aa.npz")
    for k in ("rho", "ux", "uy"):
        assert np.array_equal(got[k], want[k]), k
    series = [(tmp_path / d / "series.csv").read_text().splitlines() for d in ("pull", "aa")]
    header = series[0][0].split(",")
    assert "c_d" in header and "c_l" in header and len(series[0]) == 7       # header, steps 0, 10, .., 40, 41
    cols = [header.index(c) for c in ("step", "force_x", "force_y", "c_d", "c_l")]
    rows = [[[line.split(",")[c] for c in cols] for line in s[1:]] for s in series]
    assert rows[0] == rows[1]
    assert float(rows[0][-1][3]) > 0                                           # a drag
