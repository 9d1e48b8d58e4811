"""Checkpoints written in pieces (``lbgen.run.checkpoint.write_pieces`` / ``CheckpointPieces``):
every rank writes its own block, rank 0 the manifest; a checkpoint of P ranks resumes on P'
ranks, each reading only the pieces over its block, bit-identical to an uninterrupted run; a
damaged piece is refused naming the file, before any step; a non-finite block on any rank
means no rank writes.  The format tests run in one process (several pieces per call); the
resume tests launch the venv's mpiexec (oversubscribed, one OpenMP thread per rank)."""
import json

import numpy as np
import pytest

from lbgen.parallel.decomposition import slab_starts, slab_widths
from lbgen.run.checkpoint import (CheckpointError, CheckpointPieces, latest_checkpoint, list_checkpoints, pieces_path,
                                  prune_checkpoints, read_checkpoint, write_checkpoint, write_pieces)
from test_mpi import FIELDS, load, mpirun, single


def blocks(a, grid):
    """The (offset, block) pieces of the array `a` (C, *L) cut as the ranks grid cuts it."""
    import itertools
    axes = [list(zip(slab_starts(n, p), slab_widths(n, p))) for n, p in zip(a.shape[1:], grid)]
    return [(tuple(o for o, _ in box), a[(slice(None),) + tuple(slice(o, o + w) for o, w in box)])
            for box in itertools.product(*axes)]


def populations(shape, seed=1):
    return np.random.default_rng(seed).random(shape)


def write(run_dir, a, grid, step=6, metadata=None):
    return write_pieces(pieces_path(run_dir, step), blocks(a, grid), step, grid=grid, lattice=a.shape[1:],
                        velocity_set="d2q9", metadata=metadata)


# --- the format (one process) -------------------------------------------------------------------
def test_pieces_of_a_2x2_grid_assemble_to_the_same_bits(tmp_path):
    a = populations((9, 13, 10))
    path = write(tmp_path, a, (2, 2), metadata={"physics": {"tau": 0.8}})
    assert sorted(p.name for p in path.iterdir()) == ["manifest.json", "piece-000000-000000.lbchk",
                                                      "piece-000000-000005.lbchk", "piece-000007-000000.lbchk",
                                                      "piece-000007-000005.lbchk"]
    whole, step, meta = read_checkpoint(path)
    assert np.array_equal(whole, a) and whole.dtype == a.dtype and step == 6 and meta == {"physics": {"tau": 0.8}}
    assert [p.name for p in path.parent.iterdir()] == [path.name]     # no temporary folder left


def test_a_box_is_read_from_the_pieces_that_overlap_it_only(tmp_path):
    a = populations((9, 13, 10))
    saved = CheckpointPieces(write(tmp_path, a, (2, 2)))
    assert np.array_equal(saved.read((7, 0), (6, 5)), a[:, 7:13, 0:5])
    assert saved.files_read == ["piece-000007-000000.lbchk"]
    assert np.array_equal(saved.read((5, 3), (4, 4)), a[:, 5:9, 3:7])      # a 3-rank block over four pieces
    assert len(saved.files_read) == 5


def test_pieces_in_3d_assemble_to_the_same_bits(tmp_path):
    a = populations((19, 7, 6, 9)).astype(np.float32)
    path = write_pieces(pieces_path(tmp_path, 3), blocks(a, (2, 1, 3)), 3, grid=(2, 1, 3), lattice=a.shape[1:],
                        velocity_set="d3q19")
    saved = CheckpointPieces(path)
    assert (saved.shape, saved.grid, saved.velocity_set, saved.dtype) == (a.shape, (2, 1, 3), "d3q19", np.float32)
    assert np.array_equal(saved.read((0, 0, 0), a.shape[1:]), a)
    assert len(saved.files_read) == 6


def test_a_ranks_piece_streams_its_owned_cells_from_the_slabs_of_its_extended_block(tmp_path):
    """``state_pieces`` (issue 38 item 4): the owned cells of each population cut from the slabs of
    x planes ``state_chunks`` gives over the rank's block with its ghosts (slabs that start and end
    inside the ghosts, and a population's last slab), in C order: the array ``_owned(state())``
    was, without a copy of the block; the piece file is that array's, byte for byte."""
    from types import SimpleNamespace

    from lbgen.parallel.checkpoint_state import DistributedState
    from lbgen.run.checkpoint_file import ChunkedArray
    full = populations((5, 9, 7, 4)).astype(np.float32)      # Q = 5 over an extended block 9 x 7 x 4
    ghost_low, size = (2, 1, 0), (5, 5, 4)
    owned = full[:, 2:7, 1:6, 0:4]
    for widths in ((9,), (1, 3, 5), (2, 2, 2, 3), (4, 4, 1)):
        def chunks():
            for p in range(full.shape[0]):
                x = 0
                for w in widths:
                    yield full[p, x:x + w].copy()
                    x += w
        rank = DistributedState()            # a rank's block: its Simulation's slabs, ghosts and owned size
        rank.sim = SimpleNamespace(shape=full.shape[1:], state_chunks=chunks, dtype=full.dtype, vs=SimpleNamespace(Q=5))
        rank.ghost_low, rank.size, rank.origin = ghost_low, size, (3, 0, 0)
        got = list(rank._owned_chunks())
        assert all(c.flags.c_contiguous for c in got)
        assert np.array_equal(np.concatenate([c.ravel() for c in got]), owned.ravel()), widths
        (origin, piece), = rank.state_pieces()
        assert isinstance(piece, ChunkedArray) and origin == (3, 0, 0) and piece.shape == owned.shape
    path = write_pieces(pieces_path(tmp_path, 2), [((0, 0, 0), piece)], 2, grid=(1, 1, 1), lattice=size,
                        velocity_set="d3q19")
    whole, step, _ = read_checkpoint(path)
    assert np.array_equal(whole, owned) and whole.dtype == np.float32 and step == 2
    ref = write_pieces(pieces_path(tmp_path / "ref", 2), [((0, 0, 0), owned)], 2, grid=(1, 1, 1), lattice=size,
                       velocity_set="d3q19")
    assert (path / "piece-000000-000000-000000.lbchk").read_bytes() == \
        (ref / "piece-000000-000000-000000.lbchk").read_bytes()


def test_a_damaged_piece_is_refused_naming_the_file(tmp_path):
    a = populations((9, 13, 10))
    path = write(tmp_path, a, (2, 2))
    piece = path / "piece-000007-000005.lbchk"
    data = bytearray(piece.read_bytes())
    data[len(data) // 2] ^= 0x10            # one bit of the populations
    piece.write_bytes(bytes(data))
    saved = CheckpointPieces(path)
    assert np.array_equal(saved.read((0, 0), (7, 10)), a[:, :7])          # the other pieces still read
    with pytest.raises(CheckpointError, match="piece-000007-000005.lbchk: checksum mismatch"):
        saved.read((0, 0), (13, 10))


def test_a_piece_of_another_checkpoint_is_refused_by_the_manifests_digest(tmp_path):
    a = populations((9, 13, 10))
    path = write(tmp_path, a, (2, 2))
    other = write(tmp_path / "other", populations((9, 13, 10), seed=2), (2, 2))
    name = "piece-000000-000000.lbchk"
    (path / name).write_bytes((other / name).read_bytes())      # a valid piece, but not this one
    with pytest.raises(CheckpointError, match=f"{name}: does not belong to this checkpoint"):
        CheckpointPieces(path).read((0, 0), (2, 2))


def test_a_damaged_manifest_is_refused_naming_it(tmp_path):
    path = write(tmp_path, populations((9, 13, 10)), (2, 2))
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["step"] = 7
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="manifest.json: checksum mismatch"):
        CheckpointPieces(path)


def test_pieces_that_do_not_tile_the_lattice_are_not_written(tmp_path):
    a = populations((9, 13, 10))
    with pytest.raises(CheckpointError, match="do not tile the 13x10 lattice as the grid 2x2"):
        write_pieces(pieces_path(tmp_path, 6), blocks(a, (2, 2))[:3], 6, grid=(2, 2), lattice=(13, 10),
                     velocity_set="d2q9")
    assert list((tmp_path / "checkpoints").iterdir()) == []


def test_a_non_finite_block_means_no_piece_is_written(tmp_path):
    a = populations((9, 13, 10))
    a[3, 11, 8] = np.nan
    with pytest.raises(CheckpointError, match="not written: the populations of rank 0 are not finite"):
        write(tmp_path, a, (2, 2))
    assert not (tmp_path / "checkpoints").exists()


def test_a_step_written_again_replaces_the_folder_and_a_user_file_is_never_replaced(tmp_path):
    write(tmp_path, populations((9, 13, 10)), (2, 2))
    b = populations((9, 13, 10), seed=5)
    path = write(tmp_path, b, (1, 2))
    assert np.array_equal(read_checkpoint(path)[0], b) and len(list(path.iterdir())) == 3
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    user = pieces_path(tmp_path, 9)
    user.write_text("mine")
    with pytest.raises(Exception, match="exists and is not a pieces checkpoint; not replaced"):
        write(tmp_path, b, (2, 2), step=9)
    assert user.read_text() == "mine"


def test_files_and_pieces_folders_are_listed_verified_and_pruned_together(tmp_path):
    a = populations((9, 13, 10))
    write_checkpoint(tmp_path / "checkpoints" / "step-000000002.lbchk", a, 2)
    write(tmp_path, a, (2, 1), step=4)
    newest = write(tmp_path, a, (1, 2), step=6)
    assert [s for s, _ in list_checkpoints(tmp_path)] == [2, 4, 6]
    piece = newest / "piece-000000-000000.lbchk"
    piece.write_bytes(piece.read_bytes()[:-5])
    assert latest_checkpoint(tmp_path, verify=True).name == "step-000000004.lbpieces"
    prune_checkpoints(tmp_path, keep=1)
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == [newest.name]


# --- resume across rank counts (mpiexec) -----------------------------------------------------------
NOISE = ["uniform-noise", "--collision", "regularized", "--gravity", "0,-1e-4", "--amplitude", 0.02, "--strict"]
RT = ["rayleigh-taylor", "--gravity", "0,-1e-4", "--strict", "--time-block", 1]   # walls at the bottom, top


def lattice(setup, lx, ly, steps):
    return setup + ["--lx", lx, "--ly", ly, "--steps", steps]


def stop_and_resume(tmp_path, setup, lx, ly, n, grid, n2, grid2):
    """Run 6 steps on n ranks (checkpoint at 6), resume to 12 on n2 ranks: the bits of 12 steps in one go."""
    full = single(lattice(setup, lx, ly, 12), tmp_path / "full.npz")
    run_dir = tmp_path / "r"
    first = ["run"] + lattice(setup, lx, ly, 6) + ["--out", run_dir, "--pictures", "none", "--checkpoint-every", 6,
                                                   "--no-progress"]
    part = mpirun(n, first + ["--ranks-grid", grid], tmp_path) if n > 1 else single(first[1:-1], tmp_path / "p.npz")
    assert getattr(part, "returncode", 0) == 0, part.stderr
    again = ["run", "--resume", run_dir, "--steps", 12, "--save", "resumed.npz", "--no-progress"]
    if n2 > 1:
        resumed = mpirun(n2, again + ["--ranks-grid", grid2], tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        got = load(tmp_path / "resumed.npz")
    else:
        got = single(again[1:-3], tmp_path / "resumed.npz")
    for k in FIELDS:
        assert np.array_equal(got[k], full[k]), k
    return run_dir / "checkpoints"


@pytest.mark.slow
def test_two_ranks_write_pieces_and_three_resume_them_with_walls(tmp_path):
    folder = stop_and_resume(tmp_path, RT, 24, 36, 2, "2x1", 3, "3x1")
    assert sorted(p.name for p in folder.iterdir()) == ["step-000000006.lbpieces", "step-000000012.lbpieces"]
    assert sorted(p.name for p in (folder / "step-000000006.lbpieces").iterdir()) == [
        "manifest.json", "piece-000000-000000.lbchk", "piece-000012-000000.lbchk"]
    assert len(list((folder / "step-000000012.lbpieces").glob("piece-*"))) == 3      # the resumed run's ranks


@pytest.mark.slow
def test_four_ranks_2x2_resume_on_one_process(tmp_path):
    folder = stop_and_resume(tmp_path, NOISE, 25, 22, 4, "2x2", 1, None)
    assert len(list((folder / "step-000000006.lbpieces").glob("piece-*"))) == 4


@pytest.mark.slow
def test_one_process_checkpoint_resumes_on_two_ranks_split_along_the_walls(tmp_path):
    folder = stop_and_resume(tmp_path, RT, 20, 32, 1, None, 2, "1x2")
    assert sorted(p.name for p in folder.iterdir()) == ["step-000000006.lbchk",      # one process: one file
                                                         "step-000000012.lbpieces"]  # two ranks: pieces


READ_SCRIPT = """
import json, sys
from mpi4py import MPI
from lbgen.run.checkpoint import CheckpointPieces
comm = MPI.COMM_WORLD
path, grid = sys.argv[1], sys.argv[2]
saved = CheckpointPieces(path)
from lbgen.parallel.simulation import DistributedSimulation
sim = DistributedSimulation(comm, saved.lattice[0], saved.lattice[1], ranks_grid=grid, collision="regularized",
                            strict=True)
try:
    sim.restore_pieces(saved)
    error = None
except Exception as e:
    error = str(e)
read = comm.gather(saved.files_read, root=0)
if comm.rank == 0:
    print(json.dumps({"read": read, "error": error, "step": sim.time_step}))
"""


@pytest.mark.slow
def test_each_rank_reads_only_the_pieces_over_its_block_and_a_damaged_one_stops_every_rank(tmp_path):
    part = mpirun(4, ["run"] + lattice(NOISE, 24, 20, 6) + ["--out", "r", "--pictures", "none", "--checkpoint-every",
                                                             6, "--ranks-grid", "2x2", "--no-progress"], tmp_path)
    assert part.returncode == 0, part.stderr
    path = tmp_path / "r" / "checkpoints" / "step-000000006.lbpieces"
    (tmp_path / "read.py").write_text(READ_SCRIPT)
    proc = mpirun(3, [path, "1x3"], tmp_path, script=tmp_path / "read.py")     # rows 0-6, 7-13, 14-19
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["error"] is None and report["step"] == 6
    assert [sorted(r) for r in report["read"]] == [
        ["piece-000000-000000.lbchk", "piece-000012-000000.lbchk"],
        ["piece-000000-000000.lbchk", "piece-000000-000010.lbchk", "piece-000012-000000.lbchk",
         "piece-000012-000010.lbchk"],
        ["piece-000000-000010.lbchk", "piece-000012-000010.lbchk"]]
    piece = path / "piece-000012-000010.lbchk"
    data = bytearray(piece.read_bytes())
    data[len(data) // 2] ^= 0x01
    piece.write_bytes(bytes(data))
    proc = mpirun(3, [path, "1x3"], tmp_path, script=tmp_path / "read.py")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert f"{piece}: checksum mismatch" in report["error"] and report["step"] == 0     # no rank restored
    resumed = mpirun(2, ["run", "--resume", "r", "--steps", 8, "--no-progress"], tmp_path)
    assert resumed.returncode != 0 and f"{piece.relative_to(tmp_path)}: checksum mismatch" in resumed.stderr
    assert "resuming" not in resumed.stderr


# --- 3D: DistributedSimulation.state_pieces / restore_pieces ----------------------------------
SCRIPT3D = """
import json, sys
import numpy as np
from mpi4py import MPI
from lbgen.parallel.simulation import DistributedSimulation
from lbgen.run.checkpoint import CheckpointPieces, write_pieces
a = json.loads(sys.argv[1])
comm = MPI.COMM_WORLD
sim = DistributedSimulation(comm, *a["shape"], ranks_grid=a["grid"], time_block=a["k"], **a["kw"])
if a["write"]:
    if comm.rank == 0:
        f = dict(np.load("initial.npz"))
        sim.set_fields(f["rho"], f["ux"], f["uy"], f["uz"])
    else:
        sim.set_fields()
    sim.step(a["steps"])
    write_pieces("ck.lbpieces", sim.state_pieces(), sim.time_step, grid=sim.dims, lattice=sim.lattice,
                 velocity_set="d3q19", comm=comm)
else:
    saved = CheckpointPieces("ck.lbpieces")
    sim.restore_pieces(saved)
    sim.step(a["steps"])
    out = sim.fields()
    read = comm.gather(saved.files_read, root=0)
    if comm.rank == 0:
        np.savez("fields.npz", **out)
        print(json.dumps({"read": read, "step": sim.time_step}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("n, grid, k, n2, grid2, k2, walls, read", [
    # 2 -> 3 ranks (X: 6 + 6 -> 4 + 4 + 4), a time block after the resume: the middle rank reads both pieces
    (2, "2x1x1", 1, 3, "3x1x1", 2, None, [[0], [0, 6], [6]]),
    (4, "2x2x1", 1, 1, "1x1x1", 1, "z", [[0, 0, 6, 6]]),        # 2x2 -> 1, walls on the unsplit axis
    (1, "1x1x1", 2, 2, "1x2x1", 1, "x", [[0], [0]]),            # 1 -> 2, walls, a time block before
], ids=["2-to-3", "2x2-to-1-walls", "1-to-2-walls"])
def test_3d_pieces_resume_on_another_grid_bit_identical(tmp_path, n, grid, k, n2, grid2, k2, walls, read):
    from lbgen.simulation.runner import Simulation
    from test_cart3d import initial
    shape = (12, 13, 10)
    kw = dict(strict=True, tau=0.8, gravity=[1e-5, 0, -1e-5], **({"walls": walls} if walls else {}))
    f = initial(shape)
    np.savez(tmp_path / "initial.npz", **f)
    (tmp_path / "run3d.py").write_text(SCRIPT3D)
    for ranks, g, depth, write, steps in ((n, grid, k, True, 4), (n2, grid2, k2, False, 3)):
        args = {"shape": shape, "grid": g, "k": depth, "kw": kw, "write": write, "steps": steps}
        proc = mpirun(ranks, [json.dumps(args)], tmp_path, script=tmp_path / "run3d.py")
        assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["step"] == 7
    assert len(list((tmp_path / "ck.lbpieces").glob("piece-*"))) == n
    assert [sorted(int(name.split("-")[1]) for name in r) for r in report["read"]] == read    # pieces by x0
    ref = Simulation(*shape, **kw)
    ref.set_fields(f["rho"], f["ux"], f["uy"], f["uz"])
    ref.step(7)
    want, got = ref.fields(), np.load(tmp_path / "fields.npz")
    for key in want:
        assert np.array_equal(got[key], want[key]), key


NAN_SCRIPT = """
import json
import numpy as np
from mpi4py import MPI
from lbgen.parallel.simulation import DistributedSimulation
from lbgen.run.checkpoint import write_pieces
comm = MPI.COMM_WORLD
sim = DistributedSimulation(comm, 16, 12, ranks_grid="2x1")
sim.set_fields(rho=1.0, ux=0.01, uy=0.0, T=1.0)
(origin, block), = sim.state_pieces()     # streamed slabs (a ChunkedArray): made whole to inject
pieces = [(origin, np.concatenate([c.ravel() for c in block.pieces()]).reshape(block.shape))]
if comm.rank == 1:
    pieces[0][1][5, 2, 3] = np.inf      # injected here: rank 1's block went bad, rank 0's is fine
try:
    write_pieces("ck/step-000000000.lbpieces", pieces, 0, grid=sim.dims, lattice=sim.lattice, velocity_set="d2q37",
                 comm=comm)
    error = None
except Exception as e:
    error = str(e)
errors = comm.gather(error, root=0)
if comm.rank == 0:
    print(json.dumps(errors))
"""


@pytest.mark.slow
def test_a_non_finite_block_on_one_rank_means_no_rank_writes(tmp_path):
    (tmp_path / "nan.py").write_text(NAN_SCRIPT)
    proc = mpirun(2, [], tmp_path, script=tmp_path / "nan.py")
    assert proc.returncode == 0, proc.stderr
    errors = json.loads(proc.stdout.strip().splitlines()[-1])
    assert all("not written: the populations of rank 1 are not finite" in e for e in errors)   # on both ranks
    assert not (tmp_path / "ck").exists()


def test_overwrite_removes_pieces_folders_and_a_cut_off_write_is_cleaned_but_user_files_stay(tmp_path):
    from lbgen.run.folder import RunFolder
    path = write(tmp_path, populations((9, 13, 10)), (2, 2))
    leftover = tmp_path / "checkpoints" / ".step-000000012.lbpieces.k2j4.tmp"
    leftover.mkdir()
    (leftover / "piece-000000-000000.lbchk").write_bytes(b"cut off")
    mine = tmp_path / "checkpoints" / "notes.txt"
    mine.write_text("mine")
    folder = RunFolder(tmp_path)
    assert leftover in folder.remove_orphans() and not leftover.exists()
    assert folder.holds_run()
    removed = folder.clear()
    assert path / "manifest.json" in removed and len(removed) == 5
    assert not path.exists() and mine.read_text() == "mine" and not folder.holds_run()


@pytest.mark.slow
def test_a_damaged_newest_manifest_resumes_the_previous_pieces_on_every_rank(tmp_path):
    full = single(lattice(NOISE, 24, 20, 8), tmp_path / "full.npz")
    part = mpirun(2, ["run"] + lattice(NOISE, 24, 20, 6) + ["--out", "r", "--pictures", "none", "--checkpoint-every",
                                                             3, "--no-progress"], tmp_path)
    assert part.returncode == 0, part.stderr
    newest = tmp_path / "r" / "checkpoints" / "step-000000006.lbpieces" / "manifest.json"
    newest.write_text(newest.read_text().replace('"step": 6', '"step": 5'))
    resumed = mpirun(2, ["run", "--resume", "r", "--steps", 8, "--save", "resumed.npz", "--no-progress"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "manifest.json: checksum mismatch" in resumed.stderr
    assert "resuming from the previous good checkpoint step-000000003.lbpieces" in resumed.stderr
    got = load(tmp_path / "resumed.npz")
    for k in FIELDS:
        assert np.array_equal(got[k], full[k]), k
