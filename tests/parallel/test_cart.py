"""Cartesian decomposition and multi-halo time blocks: `mpiexec -n P lbgen run --ranks-grid
PXxPY [--time-block k]` gives the bits of one process (strict builds); refusals before any
work; a checkpoint of P ranks resumes on P' ranks; the exchange sends what the model counts.

Each test launches the venv's mpiexec (oversubscribed: OMP_NUM_THREADS=1 per rank)."""
import json

import numpy as np
import pytest

from helpers import require
from click.testing import CliRunner

from lbgen.cli.main import main
from test_mpi import FIELDS, load, mpirun, single

pytestmark = pytest.mark.slow

NOISE = ["uniform-noise", "--collision", "regularized", "--gravity", "0,-1e-4", "--amplitude", 0.02, "--strict"]


def lattice(lx, ly, steps):
    return NOISE + ["--lx", lx, "--ly", ly, "--steps", steps]


def same_bits(tmp_path, n, args, grid, tag):
    """The fields of `mpiexec -n n` with the grid equal those of one process, bit for bit."""
    ref = single(args + ["--time-block", 1], tmp_path / f"one-{tag}.npz")
    proc = mpirun(n, ["run"] + args + ["--ranks-grid", grid, "--save", f"{tag}.npz", "--no-progress"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = load(tmp_path / f"{tag}.npz")
    for k in FIELDS:
        assert np.array_equal(got[k], ref[k]), (grid, k)
    return proc


@pytest.mark.parametrize("n, grid, lx, ly", [
    (2, "1x2", 24, 32),       # split along Y only
    (3, "3x1", 37, 24),       # uneven X: 13, 12, 12
    (3, "1x3", 20, 37),       # uneven Y: 13, 12, 12
    (4, "2x2", 37, 30),       # uneven X, corners through the two exchanges
], ids=["1x2", "3x1-uneven", "1x3-uneven", "2x2-uneven"])
def test_every_grid_is_bit_identical_to_one_process(tmp_path, n, grid, lx, ly):
    proc = same_bits(tmp_path, n, lattice(lx, ly, 9), grid, grid)
    assert f"{n} MPI ranks" in proc.stderr
    if grid == "2x2":          # rank 3 owns x = 19..36 (18 columns), y = 15..29
        assert "rank 3 c" in proc.stderr and "x=19..+18 y=15..+15" in proc.stderr


@pytest.mark.parametrize("n, grid, k", [(2, "2x1", 2), (2, "2x1", 3), (4, "2x2", 2), (4, "2x2", 3)])
def test_time_blocks_across_ranks_are_bit_identical_to_single_steps(tmp_path, n, grid, k):
    # 11 steps: whole blocks and a shorter last one
    same_bits(tmp_path, n, lattice(30, 36, 11) + ["--time-block", k], grid, f"{grid}-k{k}")


def test_auto_picks_a_grid_that_fits(tmp_path):
    # MPI_Dims_create gives 3x1, too narrow for LX=8 (sub-domains of 2 < 3 columns): auto takes 1x3
    proc = same_bits(tmp_path, 3, lattice(8, 36, 5), "auto", "auto")
    assert "y=24..+12" in proc.stderr


def walled(lx, ly, extra=()):
    temperatures = (["--t-bottom", 1.02] if "bottom" not in extra else []) + (["--t-top", 0.98] if "top" not in extra
                                                                               else [])
    return ["uniform-noise", "--walls", "--collision", "regularized", "--gravity", "0,-1e-4", "--amplitude", 0.02,
            "--strict", "--lx", lx, "--ly", ly, "--steps", 9] + temperatures + list(extra)


@pytest.mark.parametrize("n, grid, lx, ly, extra", [
    (2, "1x2", 24, 32, []),                                   # each rank one wall
    (3, "1x3", 16, 26, ["--adiabatic", "bottom"]),            # 9, 9, 8 rows; the middle rank none
    (4, "2x2", 37, 30, ["--adiabatic", "top"]),
    (2, "2x1", 30, 32, ["--time-block", 3]),              # walls with a time block: X split (ghost columns)
], ids=["1x2", "1x3-adiabatic", "2x2-adiabatic-top", "2x1-k3"])
def test_a_split_along_the_walled_axis_is_bit_identical(tmp_path, n, grid, lx, ly, extra):
    same_bits(tmp_path, n, walled(lx, ly, extra), grid, f"walls-{grid}")


@pytest.mark.parametrize("extra, message", [
    (["--ranks-grid", "1x2", "--time-block", 2], "--ranks-grid 1x2 splits Y, the walled axis: a time block runs on "
                                                 "ghost rows, which would lie beyond the wall"),
    (["--ranks-grid", "1x2", "--ly", 14], "LY=14 split over 2 ranks leaves sub-domains of 7 sites, fewer than the 8 "
                                          "a walled part needs"),
])
def test_a_split_along_the_walled_axis_is_refused_where_it_cannot_run(tmp_path, extra, message):
    proc = mpirun(2, ["run", "rayleigh-taylor", "--lx", 24, "--ly", 32, "--steps", 2, "--out", "rt"] + extra, tmp_path)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert proc.stderr.count(message) == 1                  # rank 0 prints it
    assert not (tmp_path / "rt" / "fields").exists()


@pytest.mark.parametrize("grid, lx, ly, k, message", [
    ("2x1", 16, 32, 3, "--ranks-grid 2x1 on 16 x 32: LX=16 split over 2 ranks leaves sub-domains of 8 sites, "
                       "fewer than the 9 the halo needs (3 x 3: time block x largest hop)"),
    ("1x2", 16, 32, 6, "--ranks-grid 1x2 on 16 x 32: LY=32 split over 2 ranks leaves sub-domains of 16 sites, "
                       "fewer than the 18 the halo needs (6 x 3: time block x largest hop)"),
    ("3x1", 16, 32, 1, "--ranks-grid 3x1 has 3 ranks but mpiexec started 2"),
])
def test_a_sub_domain_too_thin_for_the_halo_is_refused_before_any_work(tmp_path, grid, lx, ly, k, message):
    proc = mpirun(2, ["run", "--lx", lx, "--ly", ly, "--steps", 2, "--time-block", k, "--ranks-grid", grid,
                      "--out", "o"], tmp_path)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert not (tmp_path / "o" / "fields").exists()


def test_a_grid_needs_mpiexec():
    result = CliRunner().invoke(main, ["run", "--lx", 8, "--ly", 32, "--steps", 1, "--ranks-grid", "2x1"])
    assert result.exit_code != 0
    assert "--ranks-grid 2x1: a grid of 2 ranks needs mpiexec -n 2" in result.output
    result = CliRunner().invoke(main, ["run", "--lx", 8, "--ly", 32, "--steps", 1, "--ranks-grid", "2y1"])
    assert result.exit_code != 0 and "--ranks-grid '2y1': give 'auto' or PXxPY" in result.output


def test_a_checkpoint_of_two_ranks_resumes_on_three(tmp_path):
    full = single(lattice(24, 36, 12), tmp_path / "full.npz")
    part = mpirun(2, ["run"] + lattice(24, 36, 6) + ["--out", "r", "--pictures", "none", "--checkpoint-every", 6,
                                                     "--no-progress"], tmp_path)
    assert part.returncode == 0, part.stderr
    resumed = mpirun(3, ["run", "--resume", "r", "--steps", 12, "--save", "resumed.npz", "--no-progress"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("resuming") == 1
    got = load(tmp_path / "resumed.npz")
    for k in FIELDS:
        assert np.array_equal(got[k], full[k]), k
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["device"]["ranks"] == 3


def _json(text):
    return json.loads(text[text.index("{"):])


@pytest.mark.parametrize("n, grid, k", [(2, "2x1", 1), (4, "2x2", 2)])
def test_the_model_counts_the_messages_the_exchange_sends(tmp_path, n, grid, k):
    proc = mpirun(n, ["model", "--ranks-grid", grid, "--lx", 40, "--ly", 40, "--time-block", k, "--steps", 2,
                      "--memory-bandwidth", 1e10, "--max-ranks", 8, "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = _json(proc.stdout)
    m = out["measured"]
    assert m["exchanges"] == 2 and m["counts_agree"]
    assert len(m["ranks"]) == n
    # by hand, rank 0: 20 x 20 (2x2) or 20 x 40 (2x1) owned, ghosts 3 k per split side (one design for
    # any D), D = 3 k thick slabs of 37 doubles: an X message is D columns of (rows + ghosts) sites
    rows = 40 if grid == "2x1" else 20 + 2 * 3 * k
    x_bytes = 2 * 3 * k * rows * 37 * 8
    counted = m["ranks"][0]["counted"]
    assert counted["x messages"] == 2 * 2 and counted["x bytes"] == 2 * x_bytes
    if grid == "2x2":
        assert counted["y messages"] == 4 and counted["y bytes"] == 2 * x_bytes     # a square block
    assert out["predicted"]["messages_per_step"] == (2 if grid == "2x1" else 4) / k
    assert m["t_step"] > 0 and out["sources"]["communication"] == f"ring shift over {n} ranks"


def test_the_model_predicts_t_step_from_l_b_m_and_plots_scaling(tmp_path):
    png = tmp_path / "scaling.png"
    result = CliRunner().invoke(main, ["model", "--ranks-grid", "2x2", "--lx", 64, "--ly", 64, "--latency", 2e-6,
                                       "--bandwidth", 4e9, "--memory-bandwidth", 1e10, "--ranks-per-node", 4,
                                       "--time-block", 3, "--scaling-plot", str(png), "--json"])
    assert result.exit_code == 0, result.output
    out = _json(result.output[:result.output.rindex("}") + 1])
    p = out["predicted"]
    # rank 0: 32 x 32 owned + 9 ghosts per side (k H) = 50 x 50 computed; D = 9: messages of 9 x 50 sites
    assert out["exchange"]["computed"] == 50 * 50 and out["exchange"]["owned"] == 32 * 32
    assert p["extra_work"] == pytest.approx(50 * 50 / 1024 - 1)
    assert p["t_calc"] == pytest.approx(3 * 37 * 8 * 50 * 50 * 4 / 1e10 / 3)     # one sweep per 3 steps
    face = 9 * 50 * 37 * 8
    # one node: per exchange 2 axes x L + the node's 16 messages / (B/2), every 3 steps
    assert p["t_comm"] == pytest.approx((2 * 2e-6 + 16 * face / 2e9) / 3)
    assert p["mlups"] == pytest.approx(64 * 64 / (p["t_comm"] + p["t_calc"]) / 1e6)
    weak = out["scaling"]["weak"]
    assert [r["ranks"] for r in weak] == [2 ** i for i in range(13)]          # up to 4096 ranks
    assert weak[-1]["grid"] == "64x64"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_model_options_of_the_grid_model_need_it():
    result = CliRunner().invoke(main, ["model", "--time-block", 2, "--lx", 16, "--ly", 16])
    assert result.exit_code != 0 and "--time-block: option(s) of the Cartesian model" in result.output
    result = CliRunner().invoke(main, ["model", "--ranks-grid", "2x1", "--lx", 16, "--ly", 16, "--time-block", 3,
                                       "--memory-bandwidth", 1e10])
    assert result.exit_code != 0 and "LX=16 split over 2 ranks leaves sub-domains of 8 sites" in result.output


def need_opencl():
    from lbgen.backends import available
    require(*available("opencl"), "OpenCL")


def test_a_y_split_on_opencl_ranks_is_bit_identical(tmp_path):
    # device buffers: the rows go through a download and an upload of the rank's buffer
    need_opencl()
    proc = same_bits(tmp_path, 2, lattice(24, 32, 6) + ["--backend", "opencl"], "1x2", "opencl-1x2")
    assert "rank 1 opencl" in proc.stderr and "y=16..+16" in proc.stderr


@pytest.mark.parametrize("n, grid, lx, ly, extra", [
    (2, "1x2", 24, 32, []),                                   # each rank one wall (wall_bottom, wall_top)
    (3, "1x3", 16, 26, ["--adiabatic", "bottom"]),            # the middle rank holds none
], ids=["1x2", "1x3-adiabatic"])
def test_a_walled_y_split_on_opencl_ranks_is_bit_identical(tmp_path, n, grid, lx, ly, extra):
    need_opencl()
    proc = same_bits(tmp_path, n, walled(lx, ly, extra) + ["--backend", "opencl"], grid, f"opencl-walls-{grid}")
    assert f"rank {n - 1} opencl" in proc.stderr


SCRIPT_2D = """
import json, sys
import numpy as np
from mpi4py import MPI
from lbgen.parallel.simulation import DistributedSimulation
a = json.loads(sys.argv[1])
comm = MPI.COMM_WORLD
sim = DistributedSimulation(comm, a["lx"], a["ly"], ranks_grid=a["grid"], time_block=a["k"], **a["kw"])
f = dict(np.load("initial.npz")) if comm.rank == 0 else {}
sim.set_fields(**f)
sim.step(a["steps"])
out = sim.fields()
if comm.rank == 0:
    np.savez("fields.npz", **out)
    print(json.dumps({"ghost": list(sim.ghost_low), "sweeps": sim.sweeps, "messages": dict(sim.messages)}))
"""


def test_time_blocks_without_the_sweep_kernel_are_bit_identical(tmp_path):
    # --no-fused: no fused_tb, so k single steps of the block (its k H ghosts) per exchange
    from lbgen.simulation.runner import Simulation
    lx, ly, k, steps = 30, 36, 3, 8
    kw = dict(collision="regularized", strict=True, fused=False, gravity=[0, -1e-4])
    rng = np.random.default_rng(5)
    f = dict(rho=1 + 0.02 * rng.random((lx, ly)), ux=0.02 * rng.random((lx, ly)), uy=0.01 * rng.random((lx, ly)),
             T=1 + 0.02 * rng.random((lx, ly)))
    np.savez(tmp_path / "initial.npz", **f)
    (tmp_path / "run2d.py").write_text(SCRIPT_2D)
    args = {"lx": lx, "ly": ly, "grid": "2x2", "k": k, "kw": kw, "steps": steps}
    proc = mpirun(4, [json.dumps(args)], tmp_path, script=tmp_path / "run2d.py")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["ghost"] == [9, 9]
    assert report["sweeps"] == {"blocked": 0, "single": 8}         # no fused_tb: single steps
    assert report["messages"]["x messages"] == report["messages"]["y messages"] == 2 * 3   # 3 + 3 + 2 steps
    ref = Simulation(lx, ly, **kw)
    ref.set_fields(**f)
    ref.step(steps)
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    for key in want:
        assert np.array_equal(got[key], want[key]), key
