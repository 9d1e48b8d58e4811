"""Checkpoints (atomic, verified, bit-identical) and run output (fields, VTK, pictures, series, manifest)."""
from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from lbgen.run import checkpoint_file as ckpt
from lbgen.run.checkpoint import (CheckpointError, checkpoint_path, latest_checkpoint, prune_checkpoints,
                              read_checkpoint, write_checkpoint)
from lbgen.output import (SERIES_COLUMNS, RunOutput, diagnostics, environment_versions, read_manifest, read_vti,
                          vorticity)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
LX, LY = 12, 40


def _populations(dtype, seed=0):
    return np.random.default_rng(seed).random((37, 5, 9)).astype(dtype)


def _fields(lx=LX, ly=LY):
    x, y = np.meshgrid(np.arange(lx), np.arange(ly), indexing="ij")
    return {
        "rho": 1.0 + 0.01 * np.sin(2 * np.pi * x / lx),
        "ux": 0.01 * np.sin(2 * np.pi * y / ly) + 0 * x,
        "uy": 0.02 * np.cos(2 * np.pi * x / lx) + 0 * y,
        "T": np.where(y < ly // 2, 1.1, 0.9).astype(np.float64),
    }


# =========================================================================== checkpoints
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_checkpoint_round_trip_is_bit_identical(tmp_path, dtype):
    pops = _populations(dtype)
    pops.flat[3] = np.nextafter(pops.flat[3], 2)  # a value that is only exact bit-for-bit
    meta = {"tau": 0.8, "layout": "caosoa", "vl": 32, "lattice": [5, 9], "nested": {"x": None}}
    path = write_checkpoint(checkpoint_path(tmp_path, 1000), pops, 1000, meta)
    assert path == tmp_path / "checkpoints" / "step-000001000.lbchk"
    back, step, meta_back = read_checkpoint(path)
    assert back.dtype == pops.dtype and back.shape == pops.shape
    assert back.tobytes() == pops.tobytes()
    assert step == 1000 and meta_back == meta
    # readable without pickle by plain numpy too
    with np.load(path, allow_pickle=False) as z:
        assert np.array_equal(z["populations"], pops)


def test_failed_write_keeps_previous_checkpoint(tmp_path, monkeypatch):
    path = checkpoint_path(tmp_path, 10)
    old = _populations(np.float64, seed=1)
    write_checkpoint(path, old, 10, {"which": "old"})

    real = ckpt._write_payload

    def dies_midway(fh, array, header):
        real(fh, array, header)  # write most of the file, then "get killed"
        fh.truncate(fh.tell() // 2)
        raise KeyboardInterrupt("killed while writing")

    monkeypatch.setattr(ckpt, "_write_payload", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        write_checkpoint(path, _populations(np.float64, seed=2), 10, {"which": "new"})
    back, step, meta = read_checkpoint(path)
    assert back.tobytes() == old.tobytes() and meta == {"which": "old"}
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name], "temporary files left behind"


def test_truncated_checkpoint_is_reported(tmp_path):
    path = write_checkpoint(tmp_path / "c.lbchk", _populations(np.float64), 5, {})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated or not a checkpoint") as err:
        read_checkpoint(path)
    assert str(path) in str(err.value)


def test_not_a_checkpoint_and_missing_file(tmp_path):
    bogus = tmp_path / "bogus.lbchk"
    bogus.write_text("hello")
    with pytest.raises(CheckpointError, match="truncated or not a checkpoint"):
        read_checkpoint(bogus)
    np.savez(tmp_path / "plain.npz", a=np.zeros(3))
    with pytest.raises(CheckpointError, match="not a checkpoint"):
        read_checkpoint(tmp_path / "plain.npz")
    with pytest.raises(CheckpointError, match="does not exist"):
        read_checkpoint(tmp_path / "missing.lbchk")


def test_flipped_byte_gives_checksum_mismatch(tmp_path):
    pops = _populations(np.float64)
    path = write_checkpoint(tmp_path / "c.lbchk", pops, 5, {"a": 1})
    raw = bytearray(path.read_bytes())
    target = pops[20, 2, 4].tobytes()
    at = bytes(raw).find(target)
    assert at > 0
    raw[at + 3] ^= 0x10
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=r"checksum mismatch: expected [0-9a-f]{64} got [0-9a-f]{64}") as err:
        read_checkpoint(path)
    assert str(path) in str(err.value)


def test_latest_and_prune(tmp_path):
    assert latest_checkpoint(tmp_path) is None
    for step in (100, 2000, 300):
        write_checkpoint(checkpoint_path(tmp_path, step), _populations(np.float32), step, {})
    (tmp_path / "checkpoints" / "notes.txt").write_text("ignored")
    assert latest_checkpoint(tmp_path) == checkpoint_path(tmp_path, 2000)
    # corrupt the newest: only verify=True skips it
    newest = checkpoint_path(tmp_path, 2000)
    newest.write_bytes(newest.read_bytes()[:100])
    assert latest_checkpoint(tmp_path) == newest
    assert latest_checkpoint(tmp_path, verify=True) == checkpoint_path(tmp_path, 300)
    removed = prune_checkpoints(tmp_path, keep=2)
    assert removed == [checkpoint_path(tmp_path, 100)]
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("*.lbchk")) == [
        "step-000000300.lbchk", "step-000002000.lbchk"]


# =========================================================================== diagnostics
def test_diagnostics_uniform_state():
    f = {"rho": np.full((LX, LY), 1.2), "ux": np.zeros((LX, LY)), "uy": np.zeros((LX, LY)),
         "T": np.full((LX, LY), 1.0)}
    d = diagnostics(f, T_hot=1.1, T_cold=0.9)
    assert d["mass"] == pytest.approx(1.2 * LX * LY)
    assert d["kinetic_energy"] == 0.0 and d["max_speed"] == 0.0
    assert d["momentum_x"] == 0.0 and d["momentum_y"] == 0.0
    assert d["energy"] == pytest.approx(1.2 * LX * LY)
    # c = 0.5 everywhere: each row counts 6 * 0.25 = 1.5
    assert d["mixing_width"] == pytest.approx(1.5 * LY)


def test_diagnostics_moving_state():
    f = {"rho": np.full((LX, LY), 2.0), "ux": np.full((LX, LY), 0.03), "uy": np.full((LX, LY), -0.04),
         "T": np.full((LX, LY), 1.0)}
    d = diagnostics(f, 1.1, 0.9)
    n = LX * LY
    assert d["momentum_x"] == pytest.approx(2.0 * 0.03 * n)
    assert d["momentum_y"] == pytest.approx(-2.0 * 0.04 * n)
    assert d["kinetic_energy"] == pytest.approx(0.5 * 2.0 * 0.0025 * n)
    assert d["energy"] == pytest.approx(2.0 * (1.0 + 0.5 * 0.0025) * n)
    assert d["max_speed"] == pytest.approx(0.05)


def test_mixing_width_linear_and_sharp_profiles():
    ly, thickness, y0 = 200, 40, 80
    y = np.arange(ly)
    c = np.clip(1.0 - (y - y0) / thickness, 0.0, 1.0)  # hot (c=1) below, cold above, linear ramp
    T = 0.9 + 0.2 * c
    f = {"rho": np.ones((4, ly)), "ux": np.zeros((4, ly)), "uy": np.zeros((4, ly)), "T": np.tile(T, (4, 1))}
    assert diagnostics(f, 1.1, 0.9)["mixing_width"] == pytest.approx(thickness, rel=0.01)
    f["T"] = np.tile(np.where(y < ly // 2, 1.1, 0.9), (4, 1))
    assert diagnostics(f, 1.1, 0.9)["mixing_width"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError):
        diagnostics(f, 1.0, 1.0)


def test_vorticity_of_solid_rotation_and_shear():
    x, y = np.meshgrid(np.arange(16.0), np.arange(16.0), indexing="ij")
    # shear ux = a*y: omega = -a everywhere (one-sided differences are exact for a linear profile)
    w = vorticity(0.01 * y, np.zeros_like(y))
    assert np.allclose(w, -0.01)
    # uy = sin(kx): omega = k cos(kx) up to the central-difference factor sin(k)/k
    k = 2 * np.pi / 16
    w = vorticity(np.zeros_like(x), np.sin(k * x))
    assert np.allclose(w, np.sin(k) * np.cos(k * x))


# =========================================================================== RunOutput
def test_fields_h5_vtk_and_pvd(tmp_path):
    h5py = pytest.importorskip("h5py")
    out = RunOutput(tmp_path / "run")
    f = _fields()
    written = out.write_fields(1000, f)
    out.write_fields(2000, f, time=2.5)
    h5 = tmp_path / "run" / "fields" / "step-000001000.h5"
    assert h5 in written
    with h5py.File(h5, "r") as g:
        for name in ("rho", "ux", "uy", "T"):
            assert g[name].shape == (LX, LY)
            assert np.array_equal(g[name][...], f[name])
        assert g.attrs["step"] == 1000
    vti = tmp_path / "run" / "vtk" / "step-000001000.vti"
    raw = vti.read_bytes()
    # pyevtk appends raw binary data; the XML header before it is well-formed once closed
    root = ET.fromstring(raw[: raw.index(b"<AppendedData")].decode("ascii") + "</VTKFile>")
    assert root.get("type") == "ImageData"
    assert root.find("ImageData").get("WholeExtent") == f"0 {LX - 1} 0 {LY - 1} 0 0"
    arrays = {da.get("Name"): da for da in root.find("ImageData/Piece/PointData").iter("DataArray")}
    assert {"rho", "ux", "uy", "T", "velocity"} <= set(arrays)
    assert arrays["velocity"].get("NumberOfComponents") == "3"
    back = read_vti(vti)
    for name in ("rho", "ux", "uy", "T"):
        assert np.array_equal(back[name], f[name])
    assert np.array_equal(back["velocity"][..., 0], f["ux"]) and np.array_equal(back["velocity"][..., 1], f["uy"])
    pvd = ET.parse(tmp_path / "run" / "vtk" / "fields.pvd").getroot()
    assert pvd.get("type") == "Collection"
    entries = [(ds.get("file"), ds.get("timestep")) for ds in pvd.iter("DataSet")]
    # the collection's times are steps (the model time 2.5 given is not one), as the .vti's own field data
    assert entries == [("step-000001000.vti", "1000"), ("step-000002000.vti", "2000")]
    assert back["step"].tolist() == [1000] and set(back) == {"rho", "ux", "uy", "T", "velocity", "step"}
    out.truncate(1500)
    pvd = ET.parse(tmp_path / "run" / "vtk" / "fields.pvd").getroot()
    assert [ds.get("file") for ds in pvd.iter("DataSet")] == ["step-000001000.vti"]


def test_vti_and_pvd_carry_the_step_and_the_time_in_the_flows_unit(tmp_path):
    """A run with a time unit (t_RT = 3028 steps): each .vti holds its step and step / 3028 as
    field data, named for the unit; the .pvd lists the steps; an older .pvd's model times
    become the steps of their files when the collection is written again."""
    out = RunOutput(tmp_path / "run", time_unit=(3028.0, r"$t_{RT}$"))
    f = _fields()
    out.write_fields(0, f, time=0.0)
    (tmp_path / "run" / "vtk" / "fields.pvd").write_text(        # as an older lbgen wrote it: model time
        '<VTKFile type="Collection"><Collection><DataSet timestep="0.0" file="step-000000000.vti"/>'
        '<DataSet timestep="1671.0" file="step-000002000.vti"/></Collection></VTKFile>')
    out.write_fields(2000, f, time=1671.0)
    back = read_vti(tmp_path / "run" / "vtk" / "step-000002000.vti")
    assert back["step"].tolist() == [2000]
    assert back["time/t_RT"].tolist() == [pytest.approx(2000 / 3028)]
    assert np.array_equal(back["rho"], f["rho"])             # the point data still read right after it
    pvd = ET.parse(tmp_path / "run" / "vtk" / "fields.pvd").getroot()
    assert [(ds.get("file"), ds.get("timestep")) for ds in pvd.iter("DataSet")] == [
        ("step-000000000.vti", "0"), ("step-000002000.vti", "2000")]
    head = (tmp_path / "run" / "vtk" / "step-000002000.vti").read_bytes()
    root = ET.fromstring(head[: head.index(b"<AppendedData")].decode("ascii") + "</VTKFile>")
    names = [da.get("Name") for da in root.find("ImageData/FieldData").iter("DataArray")]
    assert names == ["step", "time/t_RT"]
    import h5py                                              # the field file says the same
    with h5py.File(tmp_path / "run" / "fields" / "step-000002000.h5") as h5:
        assert h5.attrs["step"] == 2000 and h5.attrs["time/t_RT"] == pytest.approx(2000 / 3028)
        assert h5.attrs["time"] == 1671.0 and "model time" in h5.attrs["time_meaning"]


def test_fields_npz_and_vtk(tmp_path):
    out = RunOutput(tmp_path, fields_format="npz")
    f = _fields()
    out.write_fields(7, f)
    with np.load(tmp_path / "fields" / "step-000000007.npz", allow_pickle=False) as z:
        assert int(z["step"]) == 7 and z["T"].shape == (LX, LY)
        assert np.array_equal(z["rho"], f["rho"])
    raw = (tmp_path / "vtk" / "step-000000007.vti").read_bytes()
    # pyevtk appends raw binary; the XML before it is well-formed once closed
    head = raw[: raw.index(b"<AppendedData")].decode("ascii") + "</VTKFile>"
    root = ET.fromstring(head)
    names = {da.get("Name") for da in root.iter("DataArray")}
    assert {"rho", "ux", "uy", "T", "velocity"} <= names
    assert "step-000000007.vti" in (tmp_path / "vtk" / "fields.pvd").read_text()


def test_pictures_are_pngs(tmp_path):
    out = RunOutput(tmp_path, pictures=("T", "vorticity"))
    f = _fields()
    paths = out.write_pictures(1000, f)
    assert [p.name for p in paths] == ["T-000001000.png", "vorticity-000001000.png"]
    paths += out.write_pictures(1000, f, which=("rho", "speed"))
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 2000
    with pytest.raises(ValueError):
        out.write_pictures(1, f, which=("pressure",))
    with pytest.raises(ValueError):
        RunOutput(tmp_path, pictures=("pressure",))


def test_series_csv_truncate_and_plot(tmp_path):
    out = RunOutput(tmp_path)
    f = _fields()
    for step in (0, 100, 200, 300):
        d = diagnostics(f, 1.1, 0.9)
        d["mass"] += step * 1e-9
        out.append_series(step, step * 0.5, d)
    with open(out.series_path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == SERIES_COLUMNS
    assert [r[0] for r in rows[1:]] == ["0", "100", "200", "300"]
    assert float(rows[2][2]) == pytest.approx(diagnostics(f, 1.1, 0.9)["mass"] + 100e-9, rel=1e-15)
    assert out.truncate_series(150) == 2
    out.append_series(200, 100.0, diagnostics(f, 1.1, 0.9))
    s = out.read_series()
    assert list(s["step"]) == [0, 100, 200]
    png = out.plot_series()
    assert png == tmp_path / "series.png"
    data = png.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 5000


def test_manifest_round_trip(tmp_path):
    out = RunOutput(tmp_path)
    env = environment_versions()
    assert env["numpy"] == np.__version__ and env["python"]
    for key in ("sympy", "jinja2", "cffi", "matplotlib", "h5py", "pyevtk", "lbgen", "gcc"):
        assert key in env
    data = {"lattice": [LX, LY], "tau": np.float64(0.8), "steps": np.int64(1000), "env": env, "run_dir": tmp_path}
    path = out.write_manifest(data)
    assert path == tmp_path / "manifest.json"
    back = read_manifest(tmp_path)
    assert back["lattice"] == [LX, LY] and back["tau"] == 0.8 and back["steps"] == 1000
    assert back["run_dir"] == str(tmp_path) and back["env"] == json.loads(json.dumps(env))
    assert path.read_text().startswith("{\n  ")  # pretty
    out.write_manifest({"finished": True}, update=True)
    assert out.read_manifest()["finished"] is True and out.read_manifest()["tau"] == 0.8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]  # no temporaries left


def test_vti_is_byte_for_byte_what_pyevtk_writes(tmp_path):
    """write_vti writes the appended blocks itself (numpy, not pyevtk's per-value packing):
    the file must be exactly pyevtk's imageToVTK output for the same point data."""
    from pyevtk.hl import imageToVTK

    from lbgen.output.fields import FIELD_NAMES, write_vti
    rng = np.random.default_rng(3)
    lx, ly = 5, 11
    fields = {n: rng.standard_normal((lx, ly)) for n in FIELD_NAMES}
    write_vti(tmp_path / "ours.vti", fields)
    point = {n: np.ascontiguousarray(fields[n].reshape(lx, ly, 1)) for n in FIELD_NAMES}
    point["velocity"] = (point["ux"], point["uy"], np.zeros_like(point["ux"]))
    imageToVTK(str(tmp_path / "pyevtk"), pointData=point)
    assert (tmp_path / "ours.vti").read_bytes() == (tmp_path / "pyevtk.vti").read_bytes()
