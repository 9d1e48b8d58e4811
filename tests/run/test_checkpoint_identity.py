"""Trust, round four (issue 35, item 2): a checkpoint carries its run's identity.  Every
checkpoint format (2D one-file, 3D one-file, pieces) records the inputs that determine the
trajectory; a resume refuses a checkpoint of another run, naming the first option that differs
and both values, and leaves the folder as it was; an older checkpoint without the identity is
checked through the options it recorded, and one that records nothing is refused."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.parallel.decomposition import slab_starts, slab_widths
from lbgen.run.checkpoint import (CheckpointPieces, checkpoint_path, list_checkpoints, pieces_path, read_checkpoint,
                                  write_checkpoint, write_pieces)
from lbgen.run.identity import IDENTITY_DIGEST_KEY, IDENTITY_KEY, run_identity
from lbgen.run.options import OPTIONS

RUN_2D = ("uniform-noise", "--lx", 8, "--ly", 32, "--pictures", "none", "--no-progress")
RUN_3D = ("taylor-green", "--velocity-set", "d3q19", "--lx", 8, "--ly", 8, "--lz", 8, "--pictures", "none",
          "--no-progress")


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def snapshot(path):
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def two_runs(tmp_path, run, a_opts, b_opts, steps=4):
    """Runs a and b (checkpoint at `steps`); a's checkpoint replaced by b's."""
    a, b = tmp_path / "a", tmp_path / "b"
    for out, opts in ((a, a_opts), (b, b_opts)):
        result = cli("run", *run, "--steps", steps, "--checkpoint-every", steps, "--out", out, *opts)
        assert result.exit_code == 0, result.output
    shutil.copyfile(checkpoint_path(b, steps), checkpoint_path(a, steps))
    return a, b


def refused_resume(folder, steps, *words):
    before = snapshot(folder)
    result = cli("run", "--resume", folder, "--steps", steps, "--no-progress")
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    line = next(ln for ln in result.output.splitlines() if ln.startswith("Error:"))
    for word in words:
        assert word in line, (word, result.output)
    assert snapshot(folder) == before                     # the manifest, series and fields as they were
    return line


# --------------------------------------------------------------------------- every format
@pytest.mark.parametrize("run", [RUN_2D, RUN_3D], ids=["2d", "3d"])
def test_a_resume_refuses_the_one_file_checkpoint_of_a_run_with_another_amplitude(tmp_path, run):
    a, _ = two_runs(tmp_path, run, ("--amplitude", 0.01), ("--amplitude", 0.02))
    refused_resume(a, 8, "written by another run", "--amplitude 0.02 in the checkpoint, 0.01 in this run")


def test_a_resume_refuses_another_seed_and_names_the_first_option_that_differs(tmp_path):
    a, _ = two_runs(tmp_path, RUN_2D, ("--seed", 1, "--amplitude", 0.01), ("--seed", 2, "--amplitude", 0.02))
    line = refused_resume(a, 8, "--seed 2 in the checkpoint, 1 in this run")
    assert "--amplitude" not in line                        # the first option of the schema's order only


def _pieces_from(checkpoint, run_dir, step, grid):
    """The one-file checkpoint cut into the pieces of a ranks grid (as several ranks write them)."""
    populations, saved_step, meta = read_checkpoint(checkpoint)
    assert saved_step == step
    import itertools
    axes = [list(zip(slab_starts(n, p), slab_widths(n, p))) for n, p in zip(populations.shape[1:], grid)]
    pieces = [(tuple(o for o, _ in box), populations[(slice(None),) + tuple(slice(o, o + w) for o, w in box)])
              for box in itertools.product(*axes)]
    return write_pieces(pieces_path(run_dir, step), pieces, step, grid=grid, lattice=populations.shape[1:],
                        velocity_set="d3q19", metadata=meta)


def test_pieces_carry_the_identity_and_a_resume_refuses_the_pieces_of_another_run(tmp_path):
    a, b = two_runs(tmp_path, RUN_3D, ("--amplitude", 0.01), ("--amplitude", 0.02), steps=2)
    checkpoint_path(a, 2).unlink()
    path = _pieces_from(checkpoint_path(b, 2), a, 2, (2, 1, 2))
    saved = CheckpointPieces(path)
    assert saved.metadata[IDENTITY_KEY]["amplitude"] == 0.02
    for name, *_ in saved.pieces:                         # every piece names its run
        assert read_checkpoint(path / name)[2]["identity_sha256"] == saved.metadata[IDENTITY_DIGEST_KEY]
    refused_resume(a, 4, "--amplitude 0.02 in the checkpoint, 0.01 in this run")


def test_the_pieces_of_the_run_itself_resume(tmp_path):
    a = tmp_path / "a"
    assert cli("run", *RUN_3D, "--steps", 2, "--checkpoint-every", 2, "--out", a).exit_code == 0
    one_file = checkpoint_path(a, 2)
    _pieces_from(one_file, tmp_path / "elsewhere", 2, (2, 2, 1))
    one_file.unlink()
    shutil.move(pieces_path(tmp_path / "elsewhere", 2), pieces_path(a, 2))
    result = cli("run", "--resume", a, "--steps", 4, "--no-progress")
    assert result.exit_code == 0, result.output


def test_a_piece_of_another_run_is_refused(tmp_path):
    from lbgen.run.checkpoint import CheckpointError
    a = np.random.default_rng(1).random((3, 6, 4))
    one = write_pieces(pieces_path(tmp_path / "one", 2), [((0, 0), a[:, :3]), ((3, 0), a[:, 3:])], 2, grid=(2, 1),
                       lattice=(6, 4), velocity_set="d2q9", metadata={IDENTITY_DIGEST_KEY: "1" * 64})
    piece = sorted(one.glob("piece-*"))[1]
    write_checkpoint(piece, a[:, 3:], 2, {"offset": [3, 0], "extent": [3, 4], IDENTITY_DIGEST_KEY: "2" * 64})
    with pytest.raises(CheckpointError, match="a piece of another run"):
        CheckpointPieces(one)._piece(piece.name, (3, 4), _sha(piece))     # its digest agrees: its run does not


def _sha(path):
    from lbgen.run.checkpoint_file import read_verified
    return read_verified(path)[3]


# --------------------------------------------------------------------------- content of the start
def test_a_resume_refuses_the_checkpoint_of_a_run_from_another_init_file(tmp_path):
    files = []
    for i, amplitude in enumerate((0.01, 0.02)):
        x = np.arange(8)[:, None] * np.ones((8, 32))
        path = tmp_path / f"init{i}.npz"
        np.savez(path, rho=np.ones((8, 32)), ux=np.zeros((8, 32)), uy=amplitude * np.sin(2 * np.pi * x / 8),
                 T=np.ones((8, 32)))
        files.append(path)
    a, b = tmp_path / "a", tmp_path / "b"
    for out, init in ((a, files[0]), (b, files[1])):
        assert cli("run", "--init", init, "--steps", 4, "--checkpoint-every", 4, "--out", out, "--pictures", "none",
                   "--no-progress").exit_code == 0
    shutil.copyfile(checkpoint_path(b, 4), checkpoint_path(a, 4))
    refused_resume(a, 8, "written by another run", "the --init file's content")
    # and the run's own checkpoint with its init file changed since: the file is named
    shutil.rmtree(a / "checkpoints")
    assert cli("run", "--init", files[0], "--steps", 4, "--checkpoint-every", 4, "--out", a, "--pictures", "none",
               "--overwrite", "--no-progress").exit_code == 0
    shutil.copyfile(files[1], files[0])
    refused_resume(a, 8, f"--init {files[0]}", "other fields than the ones this run started from")


# --------------------------------------------------------------------------- older checkpoints
def _strip_identity(path, drop_config=False):
    populations, step, meta = read_checkpoint(path)
    meta.pop(IDENTITY_KEY)
    meta.pop(IDENTITY_DIGEST_KEY)
    if drop_config:
        meta.pop("config")
        meta.pop("physics")
    write_checkpoint(path, populations, step, meta)


def test_an_older_checkpoint_is_checked_through_its_recorded_options(tmp_path):
    a, b = two_runs(tmp_path, RUN_2D, ("--amplitude", 0.01), ("--amplitude", 0.02))
    _strip_identity(checkpoint_path(a, 4))
    refused_resume(a, 8, "--amplitude 0.02 in the checkpoint, 0.01 in this run")
    shutil.copyfile(checkpoint_path(b, 4), checkpoint_path(a, 4))
    _strip_identity(checkpoint_path(b, 4))
    result = cli("run", "--resume", b, "--steps", 8, "--no-progress")          # its own: resumed, with a note
    assert result.exit_code == 0, result.output
    assert "older lbgen without a run identity" in result.output
    assert list_checkpoints(b)[-1][0] == 8


def test_a_checkpoint_that_records_nothing_about_its_run_is_refused(tmp_path):
    a = tmp_path / "a"
    assert cli("run", *RUN_2D, "--steps", 4, "--checkpoint-every", 4, "--out", a).exit_code == 0
    _strip_identity(checkpoint_path(a, 4), drop_config=True)
    refused_resume(a, 8, "records neither the run's identity nor its options")


# --------------------------------------------------------------------------- one home
def test_the_identity_is_the_schema_options_marked_identity_and_none_may_change_on_resume():
    from lbgen.run.config import RunConfig
    identity = run_identity(RunConfig(lx=8, ly=32))
    options = [k for k in identity if k in OPTIONS]
    assert options == [k for k in OPTIONS if OPTIONS[k].identity and k in options]
    assert not [k for k, o in OPTIONS.items() if o.identity and o.resumable]
    assert {"amplitude", "seed", "setup", "lx", "ly", "collision", "tau", "gravity", "precision",
            "velocity_set", "init_digest", "geometry_digest"} <= set(identity)
    assert not {"threads", "backend", "layout", "out", "steps", "output_every"} & set(identity)
