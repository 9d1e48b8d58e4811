"""`lbgen run --geometry` with bodies: a .npy mask (2D) and an STL mesh (3D, --stl-*, --body-bc
bouzidi) give the force on the body in series.csv, the manifest and the summary; the force of
the run equals the lattice's (lbgen.Simulation with the same body); bad bodies are refused in
words before any work."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import lbgen
from tests.helpers import cli, refused


def _mask(tmp_path, shape=(32, 24), empty=False):
    m = np.zeros(shape, np.uint8)
    if not empty:
        m[12:18, 9:15] = 1
    path = tmp_path / "block.npy"
    np.save(path, m)
    return path, m


def _series(folder):
    with open(folder / "series.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_a_mask_run_reports_the_force_on_the_body(tmp_path):
    path, m = _mask(tmp_path)
    out = tmp_path / "run"
    r = cli("run", "--lx", 32, "--ly", 24, "--velocity-set", "d2q9", "--geometry", path, "--gravity", "1e-5,0",
            "--steps", 40, "--series-every", 10, "--out", out, "--pictures", "none")
    assert r.exit_code == 0, r.output
    rows = _series(out)
    assert [int(row["step"]) for row in rows] == [0, 10, 20, 30, 40]
    manifest = json.loads((out / "manifest.json").read_text())
    force = manifest["bodies"]["forces"]["block"]
    assert manifest["bodies"]["body_bc"] == "halfway" and manifest["bodies"]["links"]["block"] > 20
    assert float(rows[-1]["force_x"]) == force[0] and float(rows[-1]["force_y"]) == force[1]
    assert "force on the body 'block'" in r.output and f"{force[0]:.6g}" in r.output
    # the lattice with the same body and start gives the same force, bit for bit
    from lbgen.run.config import RunConfig
    from lbgen.run.construct import initial_fields
    cfg = RunConfig.from_json(manifest["config"])
    sim = lbgen.Simulation(32, 24, velocity_set="d2q9", bodies=m.astype(np.int32), gravity=(1e-5, 0), tau=cfg.parameters["tau"],
                           layout=cfg.layout, vl=cfg.vl)
    f = initial_fields(cfg)
    sim.set_fields(f["rho"], f["ux"], f["uy"])
    sim.step(40)
    assert list(sim.forces()["body1"]) == force


@pytest.mark.parametrize("scheme", ["halfway", "bouzidi", "quadratic"])
def test_an_stl_body_runs_in_3d(tmp_path, scheme):
    trimesh = pytest.importorskip("trimesh")
    pytest.importorskip("rtree")
    stl = tmp_path / "ball.stl"
    trimesh.creation.icosphere(subdivisions=3, radius=1.0).export(stl)
    out = tmp_path / "run"
    r = cli("run", "--velocity-set", "d3q19", "--lx", 24, "--ly", 16, "--lz", 16, "--wall-axes", "y",
            "--geometry", stl, "--stl-scale", 4, "--stl-offset", "11.5,7.5,7.5", "--stl-rotate", "0,0,30",
            "--body-bc", scheme, "--gravity", "1e-5,0,0", "--steps", 20, "--out", out, "--pictures", "none")
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["bodies"]["body_bc"] == scheme
    assert f"{scheme} bounce-back" in r.output
    fx, fy, fz = manifest["bodies"]["forces"]["ball"]
    assert fx != 0 and abs(fz) < 1e-6 * abs(fx) + 1e-12             # symmetric about z = 7.5
    assert float(_series(out)[-1]["force_z"]) == fz


@pytest.mark.parametrize("args, words", [
    (["--body-bc", "bouzidi"], ["--body-bc has no effect", "give --geometry FILE"]),
    (["--geometry", "{mask}", "--stl-scale", "2"], ["--stl-scale has no effect", "--geometry MESH"]),
    (["--geometry", "{empty}"], ["holds no solid site"]),
    (["--geometry", "{stl}"], ["a triangle mesh is a 3D body", "this run is 2D"]),
    (["--geometry", "{mask}", "--body-bc", "cubic"], ["unknown body bc 'cubic'", "halfway, bouzidi, quadratic"]),
])
def test_bad_bodies_are_refused_before_any_work(tmp_path, args, words):
    mask, _ = _mask(tmp_path)
    empty = tmp_path / "empty.npy"
    np.save(empty, np.zeros((32, 24), np.uint8))
    stl = tmp_path / "x.stl"
    stl.write_text("solid x\nendsolid x\n")
    args = [a.format(mask=mask, empty=empty, stl=stl) for a in args]
    out = tmp_path / "run"
    r = cli("run", "--lx", 32, "--ly", 24, "--velocity-set", "d2q9", "--steps", 5, "--out", out, *args)
    refused(r, *words)
    assert not out.exists()


def test_an_stl_outside_the_box_is_refused(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    pytest.importorskip("rtree")
    stl = tmp_path / "ball.stl"
    trimesh.creation.icosphere(subdivisions=2, radius=1.0).export(stl)
    out = tmp_path / "run"
    r = cli("run", "--velocity-set", "d3q19", "--lx", 16, "--ly", 16, "--lz", 16, "--geometry", stl,
            "--stl-scale", 3, "--stl-offset", "40,8,8", "--steps", 5, "--out", out)
    refused(r, "lies outside the box", "x 37..43")
    assert not out.exists()
