"""`mpiexec -n P lbgen run` in 3D (Run on ``DistributedSimulation``, ``--ranks-grid PXxPYxPZ``
or auto): the run folder of P ranks holds the files of one process -- fields (.h5 datasets,
.vti bytes), pictures, checkpoint populations, series.csv (bytes where X is not split; to
round-off where the X lines are summed in parts) -- for 2 and 4 ranks, uneven splits, walls on
unsplit and split axes (the closed lid-driven cavity on 1x2x2 and 2x2x1), a lid, a voxel mask and
a time block; a checkpoint of 2 ranks resumes on 4
ranks and on one process; grids that cannot run are refused before any work, naming the values.

Each case launches the venv's mpiexec (oversubscribed, one OpenMP thread per rank); the
one-process runs are in this process."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.output import read_field_file, read_series
from lbgen.run.checkpoint import read_checkpoint
from test_mpi import mpirun

pytestmark = pytest.mark.slow

NAMES = ("rho", "ux", "uy", "uz", "T")
EVENTS = ["--strict", "--output-every", 4, "--checkpoint-every", 6, "--keep-checkpoints", 5, "--series-every", 2,
          "--pictures", "speed", "--no-progress"]


def one_process(args, out):
    r = CliRunner().invoke(main, ["run"] + [str(a) for a in args] + ["--out", str(out), "--time-block", 1])
    assert r.exit_code == 0, r.output


def files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
                  and p.name != ".lbgen.lock")


def checkpoints(folder):
    """The checkpoint steps of a run folder: {stem: path} of one-file checkpoints (one process)
    or pieces folders (several ranks: lbgen.run.checkpoint.write_pieces)."""
    return {p.name.split(".")[0]: p for p in (folder / "checkpoints").iterdir()
            if p.suffix in (".lbchk", ".lbpieces")} if (folder / "checkpoints").exists() else {}


def assert_same_folder(a, b, x_split):
    """Run folder b (P ranks) holds the files of run folder a (one process); its checkpoints are
    in pieces and hold the same populations."""
    def others(folder):
        return [f for f in files(folder) if not f.startswith("checkpoints/")]
    assert others(a) == others(b)
    for name in others(a):
        if name.startswith(("vtk/", "pictures/")):
            assert (a / name).read_bytes() == (b / name).read_bytes(), name
        elif name.startswith("fields/"):
            fa, fb = read_field_file(a / name), read_field_file(b / name)
            assert all(np.array_equal(fa[k], fb[k]) for k in NAMES), name
    ca, cb = checkpoints(a), checkpoints(b)
    assert sorted(ca) == sorted(cb) and all(p.suffix == ".lbpieces" for p in cb.values())
    for stem in ca:
        pa, sa, _ = read_checkpoint(ca[stem])
        pb, sb, _ = read_checkpoint(cb[stem])
        assert sa == sb and np.array_equal(pa, pb), stem
    if not x_split:
        assert (a / "series.csv").read_bytes() == (b / "series.csv").read_bytes()
    sa, sb = read_series(a / "series.csv"), read_series(b / "series.csv")
    nusselt = tuple(k for k in ("Nu_bottom", "Nu_top", "Nu_bulk") if k in sa)     # of the gathered fields: exact
    for k in ("step", "time", "max_speed", "min_rho", "min_T", "nonfinite") + nusselt:     # no sums: exact
        assert np.array_equal(sa[k], sb[k]), k
    for k in ("mass", "momentum_x", "momentum_y", "momentum_z", "kinetic_energy"):
        # sums over the sites in another order: round-off of a sum of |terms| <= mass (rho |u| < 1)
        assert np.allclose(sa[k], sb[k], rtol=0, atol=1e-14 * sa["mass"].max()), k


CASES = {
    # walls on the unsplit y and z axes, a lid on z-high, X split over 2 ranks
    "2x1x1-walls-lid": (2, "2x1x1", ["lid-driven-cavity", "--lx", 12, "--ly", 10, "--lz", 8, "--wall-axes", "yz",
                                     "--lid", "z-high=0.1,0,0", "--steps", 12]),
    # periodic, uneven Y (7, 6) and Z (9, 9: blocks of 11 planes with the ghosts, so SoA) split, X whole:
    # the series bytes too
    "1x2x2-uneven": (4, "1x2x2", ["taylor-green", "--lx", 8, "--ly", 13, "--lz", 18, "--steps", 12]),
    # walls on z (unsplit), X uneven (7, 6) and Y split, a time block of 2 (2-wide ghosts every 2 steps)
    "2x2x1-walls-k2": (4, "2x2x1", ["channel", "--lx", 13, "--ly", 12, "--lz", 8, "--wall-axes", "z",
                                    "--gravity", "1e-4,0,0", "--steps", 12, "--time-block", 2]),
    # the closed cavity (walls on x, y, z; the z-high lid), its walled Y and Z split
    "1x2x2-cavity": (4, "1x2x2", ["lid-driven-cavity", "--velocity-set", "d3q19", "--lx", 8, "--ly", 11,
                                  "--lz", 16, "--steps", 12]),
    # TRT with the Smagorinsky model (issue 37: nothing special on ranks), X split
    "2x1x1-trt-les": (2, "2x1x1", ["taylor-green", "--collision", "trt-les", "--tau", 0.55, "--magic", 0.25,
                                   "--smagorinsky", 0.15, "--lx", 12, "--ly", 8, "--lz", 8, "--steps", 12]),
    # the cumulant operator on D3Q27 (issue 37: nothing special on ranks), Y split
    "1x2x1-cumulant": (2, "1x2x1", ["taylor-green", "--velocity-set", "d3q27", "--collision", "cumulant",
                                    "--tau", 0.52, "--omega3", 1.3, "--lx", 8, "--ly", 12, "--lz", 8, "--steps", 12]),
    # MRT with the Smagorinsky model on D3Q19, Z split
    "1x1x2-mrt-les": (2, "1x1x2", ["taylor-green", "--collision", "mrt-les", "--tau", 0.52, "--omega3", 1.2,
                                   "--smagorinsky", 0.15, "--lx", 8, "--ly", 8, "--lz", 12, "--steps", 12]),
    # the central-moment MRT on D3Q27 (nothing special on ranks), X split
    "2x1x1-central": (2, "2x1x1", ["taylor-green", "--velocity-set", "d3q27", "--collision", "central", "--tau", 0.52, "--omega4", 1.3,
                                   "--lx", 12, "--ly", 8, "--lz", 8, "--steps", 12]),
    # the entropic KBC operator on D3Q27 (local: nothing special on ranks), Y split, a time block of 2 (fused_tb)
    "1x2x1-kbc-k2": (2, "1x2x1", ["taylor-green", "--velocity-set", "d3q27", "--collision", "kbc", "--tau", 0.505,
                                  "--lx", 8, "--ly", 12, "--lz", 8, "--steps", 12, "--time-block", 2]),
    # the closed cavity, its walled X (uneven: 7, 6) and Y split, a time block of 2
    "2x2x1-cavity-k2": (4, "2x2x1", ["lid-driven-cavity", "--lx", 13, "--ly", 12, "--lz", 8, "--steps", 12,
                                     "--time-block", 2]),
    # a D3Q39 Rayleigh-Benard layer between thermal walls across x (--wall-axis x; issue 39), split along the
    # wall axis (each rank holds one wall) and across it (both walls on each rank): Nu in the series too
    **{f"{grid}-rb-wall-x": (2, grid, ["rayleigh-benard", "--velocity-set", "d3q39", "--wall-axis", "x", "--collision",
                                       "bgk", "--tau", 0.55, "--ra", 10, "--amplitude", 0.2, "--lx", 16, "--ly", 4,
                                       "--lz", 16, "--layout", "soa", "--steps", 12]) for grid in ("2x1x1", "1x1x2")},
}


@pytest.mark.parametrize("case", list(CASES))
def test_p_ranks_write_the_run_folder_of_one_process(tmp_path, case):
    n, grid, args = CASES[case]
    single = args[:args.index("--time-block")] + args[args.index("--time-block") + 2:] if "--time-block" in args \
        else args
    one_process(single + EVENTS, tmp_path / "one")
    proc = mpirun(n, ["run"] + args + EVENTS + ["--ranks-grid", grid, "--out", "many"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("done:") == 1                 # rank 0 reports, once
    many = tmp_path / "many"
    manifest = json.loads((many / "manifest.json").read_text())
    assert manifest["status"] == "finished" and manifest["device"]["ranks"] == n
    assert manifest["device"]["ranks_grid"] == grid
    if "--time-block" in args:                 # the blocked sweeps ran on each rank (fused_tb)
        assert manifest["sweeps"]["blocked"] > 0 and manifest["config"]["time_block"] == 2
    assert_same_folder(tmp_path / "one", many, x_split=grid[0] != "1")
    assert np.abs(read_field_file(many / "fields" / "step-000000012.h5")["ux"]).max() > 0
    if "--wall-axis" in args:                  # the walls across x on every rank: the layer's numbers along x
        assert manifest["config"]["wall_axis"] == "x" and "x_isothermal" in manifest["physics"]
        assert "Nu_bulk" in read_series(many / "series.csv")


def test_a_voxel_mask_on_two_ranks(tmp_path):
    rng = np.random.default_rng(5)
    mask = rng.random((10, 8, 8)) < 0.15
    np.save(tmp_path / "body.npy", mask)
    args = ["channel", "--lx", 10, "--ly", 8, "--lz", 8, "--wall-axes", "z", "--gravity", "1e-4,0,0",
            "--geometry", tmp_path / "body.npy", "--steps", 8]
    one_process(args + EVENTS, tmp_path / "one")
    proc = mpirun(2, ["run"] + args + EVENTS + ["--ranks-grid", "1x2x1", "--out", "two"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_same_folder(tmp_path / "one", tmp_path / "two", x_split=False)
    f = read_field_file(tmp_path / "two" / "fields" / "step-000000008.h5")
    assert np.all(f["rho"][mask] == 0) and np.all(f["rho"][~mask] > 0)


def test_a_checkpoint_of_two_ranks_resumes_on_four_and_on_one(tmp_path):
    # LZ 12: VL 4 (the default layout of the first run) fits the 1x2x2 blocks too (6 + 2 ghost planes)
    args = ["taylor-green", "--lx", 12, "--ly", 8, "--lz", 12, "--strict", "--checkpoint-every", 6,
            "--series-every", 2, "--pictures", "none", "--no-progress"]
    one_process(args + ["--steps", 12], tmp_path / "whole")
    part = mpirun(2, ["run"] + args + ["--steps", 6, "--ranks-grid", "2x1x1", "--out", "r"], tmp_path)
    assert part.returncode == 0, part.stderr
    import shutil
    shutil.copytree(tmp_path / "r", tmp_path / "r1")
    resumed = mpirun(4, ["run", "--resume", "r", "--steps", 12, "--ranks-grid", "1x2x2", "--no-progress"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("resuming") == 1
    r = CliRunner().invoke(main, ["run", "--resume", str(tmp_path / "r1"), "--steps", 12, "--no-progress"])
    assert r.exit_code == 0, r.output
    want = read_field_file(tmp_path / "whole" / "fields" / "step-000000012.h5")
    for folder in ("r", "r1"):
        got = read_field_file(tmp_path / folder / "fields" / "step-000000012.h5")
        assert all(np.array_equal(got[k], want[k]) for k in NAMES), folder
    assert json.loads((tmp_path / "r" / "manifest.json").read_text())["device"]["ranks_grid"] == "1x2x2"


@pytest.mark.parametrize("n, args, message", [
    (2, ["taylor-green", "--lx", 16, "--ly", 16, "--lz", 8, "--ranks-grid", "1x1x2", "--time-block", 6],
     "--ranks-grid 1x1x2 on 16 x 16 x 8: LZ=8 split over 2 ranks leaves sub-domains of 4 sites, fewer than the "
     "6 the halo needs (6 x 1: time block x largest hop)"),
    (2, ["taylor-green", "--ranks-grid", "2x2x1"], "--ranks-grid 2x2x1 has 4 ranks but mpiexec started 2"),
    (2, ["taylor-green", "--ranks-grid", "2x1"], "--ranks-grid '2x1': give 'auto' or PXxPYxPZ"),
], ids=["too-thin", "rank-count", "2d-grid"])
def test_a_3d_grid_that_cannot_run_is_refused_before_any_work(tmp_path, n, args, message):
    proc = mpirun(n, ["run"] + args + ["--steps", 2, "--out", "o", "--no-progress"], tmp_path)
    assert proc.returncode != 0
    assert message in proc.stderr and proc.stderr.count(message) == 1     # printed once, by rank 0
    assert not (tmp_path / "o").exists()


def test_auto_splits_the_unwalled_axes_only(tmp_path):
    proc = mpirun(2, ["run", "channel", "--lx", 8, "--ly", 8, "--lz", 8, "--wall-axes", "xy", "--steps", 2,
                      "--out", "o", "--pictures", "none", "--no-progress"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "o" / "manifest.json").read_text())["device"]["ranks_grid"] == "1x1x2"


def test_a_diverging_3d_run_stops_every_rank_and_keeps_its_last_healthy_checkpoint(tmp_path):
    proc = mpirun(2, ["run", "taylor-green", "--lx", 8, "--ly", 8, "--lz", 8, "--amplitude", 1.5, "--tau", 0.5001,
                      "--steps", 60, "--check-every", 5, "--checkpoint-every", 5, "--ranks-grid", "2x1x1",
                      "--out", "dv", "--pictures", "none", "--no-progress"], tmp_path)
    assert proc.returncode == 2                        # every rank stopped together (no abort)
    manifest = json.loads((tmp_path / "dv" / "manifest.json").read_text())
    assert manifest["status"] == "diverged" and 0 < manifest["step"] < 60
    kept = sorted((tmp_path / "dv" / "checkpoints").iterdir())
    populations, step, _ = read_checkpoint(kept[-1])
    assert step < manifest["step"] and np.isfinite(populations).all()
