"""Trust, round four (issue 35, item 3): under mpiexec lbgen fails like one process.  A refused
option prints one message, from rank 0, with the exit status of one process and no
traceback or MPI_Abort noise; a full disk during a 3D checkpoint in pieces gives status
"failed" and the resume command; a 3D `--resume ... --save` finishes; a divergence names
the bad site in global lattice coordinates.

Each case launches the venv's mpiexec (oversubscribed, one OpenMP thread per rank)."""
import json
import textwrap

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from test_mpi import mpirun

pytestmark = pytest.mark.slow

CUBE = ["--velocity-set", "d3q19", "--lx", 8, "--ly", 8, "--lz", 8, "--pictures", "none", "--no-progress"]


def _one_message(result):
    """stderr holds one line 'Error: ...' (after click's usage lines, as one process prints
    them for a malformed command line) and nothing of a traceback or an abort."""
    lines = [line for line in result.stderr.splitlines() if line.strip()
             and not line.startswith(("lbgen run: ", "physics in ", "time block ", "resuming "))]   # the start
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and all(line.startswith(("Error: ", "Usage: ", "Try ")) for line in lines), result.stderr
    for noise in ("Traceback", "MPI_Abort", "aborting", "failed:"):
        assert noise not in result.stderr, result.stderr
    return errors[0]


@pytest.mark.parametrize("args, word", [
    (["--lx", -5], "lx=-5 must be >= 1"),
    (["--tau", "abc"], "'abc' is not a valid float"),
    (["--bogus", 3], "No such option '--bogus'"),
    (["--velocity-set", "d3q19", "--wall-axes", "z", "--lid", "z-high=nan,0,0"], "UX=nan is not finite"),
    (["--velocity-set", "d3q19", "--wall-axes", "z", "--lid", "z-high=0.1,0,0;Z-HIGH=0,0.1,0"], "twice"),
    (["--velocity-set", "d3q19", "--init", "missing.npz"], "--init missing.npz: no such file"),
    (["--init", "missing.npz"], "--init missing.npz: no such file"),
    (["--velocity-set", "d3q19", "--lx", 8, "--ly", 8, "--lz", 8, "--geometry", "missing.npy"], "no such file"),
])
def test_a_refused_option_under_mpiexec_is_one_message_from_rank_0(tmp_path, args, word):
    """Broken in round four: a traceback per rank plus MPI_Abort noise around the one line."""
    single = CliRunner().invoke(main, ["run", "--steps", 2, "--no-progress", *[str(a) for a in args]])
    r = mpirun(2, ["run", "--steps", 2, "--no-progress", "--out", tmp_path / "run", *args], tmp_path)
    assert r.returncode == single.exit_code == 2, r.stderr
    assert word in _one_message(r)
    assert not (tmp_path / "run").exists()


DISK_FULL = textwrap.dedent("""
    import errno, sys
    from lbgen.run import checkpoint_file as ckpt
    real = ckpt._write_payload
    def full(fh, array, header):
        real(fh, array, header)
        if b'"step": 6' in header:
            raise OSError(errno.ENOSPC, "No space left on device", fh.name)
    ckpt._write_payload = full
    from lbgen.cli.main import main
    sys.argv[0] = "lbgen"
    main()
""")


def test_a_full_disk_during_a_3d_checkpoint_in_pieces_fails_like_one_process(tmp_path):
    """Broken in round four: the manifest said "diverged", a raw OSError [Errno 28] was printed
    and no resume command."""
    script = tmp_path / "full.py"
    script.write_text(DISK_FULL)
    out = tmp_path / "run"
    r = mpirun(2, ["run", "taylor-green", *CUBE, "--steps", 9, "--checkpoint-every", 3, "--out", out], tmp_path,
               script=script)
    assert r.returncode == 2, r.stderr
    line = _one_message(r)
    assert "the disk is full" in line and "at step 6" in line, line
    assert f"lbgen run --resume {out} --steps 9" in line
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "disk is full" in manifest["error"]
    assert sorted(p.name for p in (out / "checkpoints").iterdir() if not p.name.startswith(".")) == \
        ["step-000000003.lbpieces"]
    resumed = mpirun(2, ["run", "--resume", out, "--steps", 9], tmp_path)       # the command it names works
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "finished"


def test_a_3d_resume_with_save_under_mpiexec_saves_the_fields(tmp_path):
    """Broken in round four: the work was done, then AttributeError: DistributedSimulation3D
    has no attribute lx, exit 2."""
    out, saved, whole = tmp_path / "run", tmp_path / "end.npz", tmp_path / "whole.npz"
    first = mpirun(2, ["run", "taylor-green", *CUBE, "--steps", 6, "--checkpoint-every", 3, "--out", out,
                       "--strict"], tmp_path)
    assert first.returncode == 0, first.stderr
    r = mpirun(2, ["run", "--resume", out, "--steps", 9, "--save", saved], tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert f"saved rho, ux, uy, uz, T (8 x 8 x 8) to {saved}" in r.stdout
    one = CliRunner().invoke(main, ["run", "taylor-green", *[str(a) for a in CUBE], "--steps", 9, "--strict",
                                    "--time-block", 1, "--save", str(whole)])
    assert one.exit_code == 0, one.output
    with np.load(saved) as a, np.load(whole) as b:
        for k in ("rho", "ux", "uy", "uz", "T"):
            assert np.array_equal(a[k], b[k]), k


def test_a_divergence_under_mpiexec_names_the_global_site(tmp_path):
    """Broken in round four: the site was named in the block coordinates of its rank.  A NaN
    planted at global (x=6, y=2, z=5) -- in rank 1's block of a 2x1x1 grid -- is named there."""
    init = tmp_path / "nan.npz"
    fields = {k: np.zeros((8, 8, 8)) for k in ("ux", "uy", "uz")}
    fields.update(rho=np.ones((8, 8, 8)), T=np.ones((8, 8, 8)))
    fields["ux"][6, 2, 5] = 0.01
    np.savez(init, **fields)
    script = tmp_path / "plant.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        from lbgen.simulation import runner
        real = runner.Simulation.set_fields
        def planted(self, rho, ux, uy, uz, T=1.0):
            real(self, rho, ux, uy, uz, T)
            f = self.populations()
            hot = np.argwhere(np.asarray(ux) == 0.01)
            if len(hot):
                x, y, z = hot[0]
                f[3, x, y, z] = np.nan
                self.program.pack(f, self.f)
        runner.Simulation.set_fields = planted
        from lbgen.cli.main import main
        sys.argv[0] = "lbgen"
        main()
    """))
    out = tmp_path / "run"          # a run folder: the state is checked before the first step
    r = mpirun(2, ["run", "--init", init, "--velocity-set", "d3q19", "--steps", 2, "--no-progress", "--pictures",
                   "none", "--ranks-grid", "2x1x1", "--out", out], tmp_path, script=script)
    assert r.returncode == 2, r.stderr
    line = _one_message(r)
    assert line.startswith("Error: the run diverged by step 0 (NaN/Inf): first bad site (x=6, y=2, z=5, on rank 1)"), line


def test_resume_refusals_under_mpiexec_are_one_message_and_change_nothing(tmp_path):
    """Broken before: each rank refused a resume option on its own, then MPI_Abort."""
    out = tmp_path / "run"
    first = CliRunner().invoke(main, ["run", "taylor-green", *[str(a) for a in CUBE], "--steps", 6,
                                      "--checkpoint-every", 3, "--out", str(out)])
    assert first.exit_code == 0, first.output
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.name != ".lbgen.lock"}
    for args, word in ((["--amplitude", 0.3], "amplitude (0.05 in the run, 0.3 given)"),
                       (["--steps", 3], "--steps 3 is below the step of the newest good checkpoint"),
                       (["--out", tmp_path / "other"], "names another folder"),
                       (["--velocity-set", "d3q27"], "velocity_set")):
        r = mpirun(2, ["run", "--resume", out, "--no-progress", *args], tmp_path)
        assert r.returncode == 2, r.stderr
        assert word in _one_message(r)
    after = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.name != ".lbgen.lock"}
    assert after == before and not (tmp_path / "other").exists()


OUTPUT_FULL = textwrap.dedent("""
    import errno, sys
    from lbgen.output import RunOutput
    real = RunOutput.write_fields
    def full(self, step, fields, **kw):
        if step == 6:
            raise OSError(errno.ENOSPC, "No space left on device", "fields/step-000000006.h5")
        return real(self, step, fields, **kw)
    RunOutput.write_fields = full
    from lbgen.cli.main import main
    sys.argv[0] = "lbgen"
    main()
""")


def test_a_full_disk_while_rank_0_writes_outputs_fails_every_rank_alike(tmp_path):
    """Rank 0 writes the field files alone: its OSError is agreed on by every rank (no abort)."""
    script = tmp_path / "full.py"
    script.write_text(OUTPUT_FULL)
    out = tmp_path / "run"
    r = mpirun(2, ["run", "taylor-green", *CUBE, "--steps", 9, "--checkpoint-every", 3, "--output-every", 3,
                   "--out", out], tmp_path, script=script)
    assert r.returncode == 2, r.stderr
    line = _one_message(r)
    assert "the disk is full" in line and "at step 6" in line and f"lbgen run --resume {out} --steps 9" in line
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"


SAVE_FULL = textwrap.dedent("""
    import errno, sys
    from lbgen.run import fieldfile
    def full(path, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    fieldfile.save_fields = full
    from lbgen.cli.main import main
    sys.argv[0] = "lbgen"
    main()
""")


def test_a_full_disk_while_rank_0_writes_the_save_file_fails_every_rank_alike(tmp_path):
    """Broken before: a failed --save write on rank 0 aborted the job (the other ranks went on
    to the manifest's collective).  Now as every other write: one message, exit 2, status
    "failed", nothing saved, and the command it names (with --save) writes the file."""
    script = tmp_path / "full.py"
    script.write_text(SAVE_FULL)
    out, saved = tmp_path / "run", tmp_path / "end.npz"
    r = mpirun(2, ["run", "taylor-green", *CUBE, "--steps", 6, "--checkpoint-every", 3, "--out", out, "--strict",
                   "--save", saved], tmp_path, script=script)
    assert r.returncode == 2, r.stderr
    line = _one_message(r)
    assert "the disk is full" in line and f"the --save file {saved}" in line and "at step 6" in line, line
    assert f"lbgen run --resume {out} --steps 6 --save {saved}" in line, line
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"
    assert not saved.exists()
    again = mpirun(2, ["run", "--resume", out, "--steps", 6, "--save", saved], tmp_path)   # the command it names
    assert again.returncode == 0, again.stderr
    one = tmp_path / "one.npz"
    single = CliRunner().invoke(main, ["run", "taylor-green", *[str(a) for a in CUBE], "--steps", 6, "--strict",
                                       "--time-block", 1, "--save", str(one)])
    assert single.exit_code == 0, single.output
    with np.load(saved) as a, np.load(one) as b:
        for k in ("rho", "ux", "uy", "uz", "T"):
            assert np.array_equal(a[k], b[k]), k
