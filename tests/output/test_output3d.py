"""3D field files and pictures: the .vti of (LX, LY, LZ) fields read back exactly (point
(x, y, z) is site (x, y, z), the velocity vector interleaved), an npz/h5 field file of a 3D
state, 2D files unchanged, and the mid-plane slices: |u| of all three components and the
vorticity component normal to each slice with the right-handed sign (a rigid rotation
about each axis gives +2 Omega on the slice normal to it)."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.output import RunOutput3D, read_field_file, read_vti, write_vti
from lbgen.output.pictures import mid_planes

SHAPE = (6, 5, 4)


def _fields(seed=0):
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(SHAPE) for k in ("rho", "ux", "uy", "uz", "T")}


def test_vti_of_a_3d_state_reads_back_exactly(tmp_path):
    f = _fields()
    got = read_vti(write_vti(tmp_path / "a.vti", f))
    assert all(got[k].shape == SHAPE and np.array_equal(got[k], f[k]) for k in f)
    assert np.array_equal(got["velocity"], np.stack([f["ux"], f["uy"], f["uz"]], axis=-1))
    assert b'WholeExtent="0 5 0 4 0 3"' in (tmp_path / "a.vti").read_bytes()
    two = {k: v[:, :, 0] for k, v in f.items() if k != "uz"}            # a 2D state: unchanged
    back = read_vti(write_vti(tmp_path / "b.vti", two))
    assert back["rho"].shape == SHAPE[:2] and np.array_equal(back["uy"], two["uy"])
    assert np.all(back["velocity"][..., 2] == 0)


@pytest.mark.parametrize("fmt", ["h5", "npz"])
def test_a_3d_field_file_holds_the_five_fields(fmt, tmp_path):
    f = _fields(1)
    out = RunOutput3D(tmp_path / fmt, pictures=(), fields_format=fmt)
    written = out.write_fields(7, f, time=7 / np.sqrt(3))
    back = read_field_file(written[0])
    assert back["step"] == 7 and all(np.array_equal(back[k], f[k]) for k in f)
    assert sorted(out.files) == sorted([f"fields/step-000000007.{fmt}", "vtk/step-000000007.vti", "vtk/fields.pvd"])


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_slice_vorticity_is_the_normal_component_right_handed(axis):
    omega = 0.01
    n = (8, 8, 8)
    x = np.meshgrid(*(np.arange(k, dtype=float) for k in n), indexing="ij")
    p, q = (axis + 1) % 3, (axis + 2) % 3           # rotation about the axis: u_p = -W x_q, u_q = W x_p
    u = [np.zeros(n) for _ in range(3)]
    u[p], u[q] = -omega * x[q], omega * x[p]
    u[axis] = np.full(n, 0.3 * omega)   # along the axis: adds to |u|, not to the normal vorticity
    fields = {"rho": np.ones(n), "T": np.ones(n), "ux": u[0], "uy": u[1], "uz": u[2]}
    planes = mid_planes(fields, periodic=(False, False, False))
    name = {0: "yz", 1: "xz", 2: "xy"}[axis]
    axes, index, sl = planes[name]
    assert index == 4 and axes == tuple(c for c in "xyz" if c != "xyz"[axis])
    assert np.allclose(sl["vorticity"], 2 * omega, rtol=0, atol=1e-15)
    cut = [np.take(c, 4, axis=axis) for c in u]
    assert np.allclose(sl["speed"], np.sqrt(sum(c * c for c in cut)), rtol=0, atol=0)
    assert np.array_equal(sl["ux"], np.take(u[0], 4, axis=axis))
