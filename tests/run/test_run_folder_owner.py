"""Trust, round four (issue 35, item 1): a run folder owns only what it wrote.  A new run (2D
and 3D) refuses, before writing anything, a folder in which files it did not write bear the
names it writes; the manifest records the SHA-256 of every file lbgen writes, and --overwrite
removes only files whose content still has it (the others are kept and named); --save onto an
existing file follows the -o rule of lbgen plot and movie."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.output.records import DIGESTS_KEY, FILES_KEY

RUN_2D = ("--lx", 8, "--ly", 32, "--no-progress")
RUN_3D = ("taylor-green", "--velocity-set", "d3q19", "--lx", 8, "--ly", 8, "--lz", 8, "--no-progress")


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def refused(result, *words):
    """Exit status 2, one 'Error: ...' line with every word, no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output, result.output
    line = next(ln for ln in result.output.splitlines() if ln.startswith("Error:"))
    for word in words:
        assert word in line, (word, result.output)


def snapshot(path):
    """{relative path: bytes} of every file under path (hidden ones too: a lock file left behind counts)."""
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def manifest(out):
    return json.loads((out / "manifest.json").read_text())


def user_outputs(out):
    """A user's own series.csv and fields/step-000000000.h5 (no lbgen manifest)."""
    (out / "fields").mkdir(parents=True)
    (out / "series.csv").write_bytes(b"t,my own column\n0,1\n")
    (out / "fields" / "step-000000000.h5").write_bytes(b"my own h5, not lbgen's")
    return snapshot(out)


# --------------------------------------------------------------------------- a new run
@pytest.mark.parametrize("run", [RUN_2D, RUN_3D], ids=["2d", "3d"])
@pytest.mark.parametrize("overwrite", [(), ("--overwrite",)], ids=["new", "overwrite"])
def test_a_new_run_refuses_a_folder_holding_its_output_names_it_did_not_write_before_writing_anything(
        tmp_path, run, overwrite):
    out = tmp_path / "run"
    before = user_outputs(out)
    result = cli("run", *run, "--steps", 2, "--pictures", "none", "--out", out, *overwrite)
    refused(result, "series.csv", "fields/step-000000000.h5", "did not write", "another --out", "move them")
    assert snapshot(out) == before                        # byte for byte, and no lock or manifest left


def test_a_new_run_leaves_other_files_alone_and_never_records_them(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_bytes(b"my notes")
    result = cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out)
    assert result.exit_code == 0, result.output
    assert (out / "notes.txt").read_bytes() == b"my notes"
    assert "notes.txt" not in manifest(out)[FILES_KEY]


@pytest.mark.parametrize("run", [RUN_2D, RUN_3D], ids=["2d", "3d"])
def test_the_manifest_records_the_digest_of_every_file_the_run_wrote(tmp_path, run):
    out = tmp_path / "run"
    assert cli("run", *run, "--steps", 4, "--output-every", 2, "--pictures", "T", "--dpi", 20, "--out", out,
               "--checkpoint-every", 2).exit_code == 0
    m = manifest(out)
    written = [rel for rel in m[FILES_KEY] if rel != "manifest.json"]
    assert written and set(m[DIGESTS_KEY]) == set(written)
    for rel in written:
        assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == m[DIGESTS_KEY][rel], rel


# --------------------------------------------------------------------------- --overwrite
def test_overwrite_removes_only_unchanged_files_and_names_the_kept_ones(tmp_path):
    out = tmp_path / "run"
    assert cli("run", *RUN_2D, "--steps", 4, "--pictures", "T", "--dpi", 20, "--out", out,
               "--checkpoint-every", 2).exit_code == 0
    changed = out / "pictures" / "T-000000004.png"
    changed.write_bytes(changed.read_bytes() + b"my annotation")
    (out / "README").write_bytes(b"about this run")
    before = snapshot(out)
    # a changed file under a name a run writes: nothing is removed, nothing written, the file named
    result = cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out, "--overwrite")
    refused(result, "pictures/T-000000004.png (changed since lbgen wrote it)", "move them")
    assert snapshot(out) == before
    # moved away: the run's own files go, the user's stay byte for byte and are named
    mine = changed.read_bytes()
    changed.rename(tmp_path / "annotated.png")
    result = cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out, "--overwrite")
    assert result.exit_code == 0, result.output
    assert "kept 1 file(s) lbgen did not write or that changed since: README" in result.output
    after = snapshot(out)
    assert after["README"] == b"about this run" and (tmp_path / "annotated.png").read_bytes() == mine
    assert "fields/step-000000004.h5" not in after and "checkpoints/step-000000004.lbchk" not in after


def test_overwrite_keeps_a_file_the_manifest_lists_but_whose_content_is_not_what_lbgen_wrote(tmp_path):
    """A manifest that lists a user's file (a killed run, a hand edit): its digest does not match."""
    out = tmp_path / "run"
    assert cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out).exit_code == 0
    (out / "analysis.csv").write_bytes(b"my analysis")
    data = manifest(out)
    data[FILES_KEY].append("analysis.csv")
    data[DIGESTS_KEY]["analysis.csv"] = "0" * 64
    (out / "manifest.json").write_text(json.dumps(data))
    result = cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out, "--overwrite")
    assert result.exit_code == 0, result.output
    assert (out / "analysis.csv").read_bytes() == b"my analysis" and "analysis.csv" in result.output


# --------------------------------------------------------------------------- --save
@pytest.mark.parametrize("run", [RUN_2D, RUN_3D], ids=["2d", "3d"])
def test_save_onto_an_existing_file_is_refused_without_overwrite_and_the_file_kept(tmp_path, run):
    mine = tmp_path / "mine.npz"
    np.savez(mine, a=np.arange(3))
    before = snapshot(tmp_path)
    refused(cli("run", *run, "--steps", 2, "--save", mine, "--out", tmp_path / "run", "--pictures", "none"),
            str(mine), "exists", "--overwrite")
    assert snapshot(tmp_path) == before and not (tmp_path / "run").exists()      # nothing written, no folder
    assert cli("run", *run, "--steps", 2, "--save", mine, "--overwrite").exit_code == 0
    with np.load(mine) as z:
        assert "rho" in z.files and int(z["steps"]) == 2


def test_a_resume_saves_again_over_its_own_file_but_never_over_a_changed_one(tmp_path):
    out, save = tmp_path / "run", tmp_path / "final.npz"
    assert cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out, "--checkpoint-every", 2,
               "--save", save).exit_code == 0
    assert cli("run", "--resume", out, "--steps", 4, "--no-progress").exit_code == 0
    with np.load(save) as z:
        assert int(z["steps"]) == 4
    save.write_bytes(save.read_bytes() + b"changed")
    before = save.read_bytes()
    refused(cli("run", "--resume", out, "--steps", 6, "--no-progress"), str(save), "not the file this run saved")
    assert save.read_bytes() == before and manifest(out)["step"] == 4


def test_overwrite_never_removes_a_file_named_like_a_checkpoint_that_is_not_one(tmp_path):
    out = tmp_path / "run"
    assert cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out, "--checkpoint-every", 2).exit_code == 0
    fake = out / "checkpoints" / "step-000000001.lbchk"
    fake.write_bytes(b"my own data, not a checkpoint")
    before = snapshot(out)
    refused(cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out, "--overwrite"),
            "checkpoints/step-000000001.lbchk")
    assert snapshot(out) == before


def test_a_resume_refuses_a_file_under_an_output_name_its_manifest_does_not_list(tmp_path):
    out = tmp_path / "run"
    assert cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out, "--checkpoint-every", 2).exit_code == 0
    (out / "fields" / "step-000000004.h5").write_bytes(b"my own h5 of step 4")
    before = snapshot(out)
    refused(cli("run", "--resume", out, "--steps", 4, "--no-progress"), "fields/step-000000004.h5",
            "move them out")
    assert snapshot(out) == before


@pytest.mark.parametrize("overwrite", [(), ("--overwrite",)], ids=["new", "overwrite"])
def test_a_manifest_json_lbgen_did_not_write_is_never_replaced(tmp_path, overwrite):
    out = tmp_path / "run"
    out.mkdir()
    (out / "manifest.json").write_bytes(b'{"name": "my web app"}')
    before = snapshot(out)
    refused(cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out, *overwrite), "manifest.json",
            "did not write")
    assert snapshot(out) == before


def test_a_file_a_killed_run_was_writing_is_still_its_own_for_overwrite(tmp_path):
    """Killed between a write and its digest: the manifest lists the file as being written."""
    from lbgen.output.records import WRITING_KEY
    out = tmp_path / "run"
    assert cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out).exit_code == 0
    assert manifest(out)[WRITING_KEY] == []                 # every write ended with its digest
    data = manifest(out)
    data["status"], data[WRITING_KEY] = "running", ["series.csv"]
    (out / "manifest.json").write_text(json.dumps(data))
    with open(out / "series.csv", "ab") as fh:              # the row whose digest the kill cut off
        fh.write(b"3,0.1,1,1,1,1\n")
    result = cli("run", *RUN_2D, "--steps", 2, "--pictures", "none", "--out", out, "--overwrite")
    assert result.exit_code == 0, result.output
    assert "kept" not in result.output
