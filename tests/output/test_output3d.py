"""3D field files and pictures: the .vti of (LX, LY, LZ) fields read back exactly (point
(x, y, z) is site (x, y, z), the velocity vector interleaved), an npz/h5 field file of a 3D
state, 2D files unchanged, and the mid-plane slices: |u| of all three components and the
vorticity component normal to each slice with the right-handed sign (a rigid rotation
about each axis gives +2 Omega on the slice normal to it)."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.output import RunOutput, read_field_file, read_vti, write_vti
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
    out = RunOutput(tmp_path / fmt, pictures=(), fields_format=fmt, dimension=3)
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


def test_slices_carry_the_in_plane_velocity_and_speed_pictures_draw_its_arrows(tmp_path):
    """ua, ub of a slice are the velocity's components along its two axes (xz: ux and uz), what
    a speed picture's arrows show: a flow along +z draws arrows along +z on the xz and yz slices
    and none (zero length) on the xy slice; a run's speed slices are written with them."""
    from lbgen.output.pictures import field_figure, in_plane_velocity
    fields = {k: np.zeros(SHAPE) for k in ("ux", "uy")} | {"uz": np.full(SHAPE, 0.03)} | {
        k: np.ones(SHAPE) for k in ("rho", "T")}
    planes = mid_planes(fields, periodic=(True, True, False))
    for name, along in (("xz", (0.0, 0.03)), ("yz", (0.0, 0.03)), ("xy", (0.0, 0.0))):
        _axes, _index, sl = planes[name]
        ua, ub = in_plane_velocity(sl)
        assert np.allclose(ua, along[0]) and np.allclose(ub, along[1]), name
        fig = field_figure("speed", sl, limits=(0.0, 0.05), dpi=30)
        quiver = next(c for c in fig.axes[0].collections if c.__class__.__name__ == "Quiver")
        assert np.allclose(quiver.U, along[0]) and np.allclose(quiver.V, along[1]), name
    out = RunOutput(tmp_path / "run", dimension=3, pictures=("speed",), fields_format=None, vtk=False,
                    physics={"r": 3 ** 0.5}, colour_limits={"speed": (0.0, 0.05)})
    written = out.write_pictures(0, fields)
    assert sorted(p.name for p in written) == [f"speed-{n}-000000000.png" for n in ("xy", "xz", "yz")]


def test_cavities_and_channels_draw_the_speed_by_default():
    from lbgen.output import default_pictures
    from lbgen.run.config import RunConfig
    assert default_pictures("d3q19", "lid-driven-cavity") == ("speed",) == default_pictures("d3q19", "channel")
    assert default_pictures("d3q19", "taylor-green") == ("vorticity",) and default_pictures("d2q37") == ("T",)
    assert RunConfig.build("lid-driven-cavity", ("test", {})).pictures == ("speed",)
