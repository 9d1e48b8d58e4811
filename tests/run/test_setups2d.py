"""The set-ups and masks of 2D runs with bounce-back walls (issue 34: every set-up of one
dimension works in the other or is refused in words): ``lbgen run channel --velocity-set
d2q9`` against the exact plane Poiseuille profile, ``--geometry`` in a 2D run (its solid cells
read 0, the flow goes round them), and what 2D bounce-back does not run beside (--hetero,
--time-block, the thermal walls of --walls) refused before any file is written."""
from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.output import read_field_file
from lbgen.run.config import RunConfig
from lbgen.run.driver import Run
from lbgen.run.options import ConfigError

R = math.sqrt(3.0)          # D2Q9's scale factor: u_lattice = u / r, force per unit mass per step g / r^2
NAMES = ("rho", "ux", "uy", "T")


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _channel(steps: int, **options) -> Run:
    cfg = RunConfig.build("channel", ("test", {"velocity_set": "d2q9", "steps": steps, **options}))
    run = Run(cfg, echo=lambda m: None)
    run.execute()
    return run


def test_the_2d_channel_is_plane_poiseuille_flow():
    """Steady plane Poiseuille flow between no-slip walls a distance H apart, driven by a body
    force a per unit mass: u(s) = a / (2 nu) s (H - s), s the distance from a wall (Landau &
    Lifshitz, Fluid Mechanics, section 17; Batchelor 1967, eq. 4.2.4).  Half-way bounce-back
    puts the walls half a site outside the first and last rows: s = y + 1/2, H = LY."""
    H, g, tau = 16, 3e-5, 1.0
    run = _channel(1000, lx=4, ly=H, tau=tau, gravity=f"{g},0")
    assert run.cfg.wall_axes == "y" and run.cfg.dimension == 2
    f = run.sim.fields()
    u = f["ux"].mean(axis=0) / R                         # lattice units
    nu, a = (tau - 0.5) / 3, g / R ** 2
    s = np.arange(H) + 0.5
    exact = a / (2 * nu) * s * (H - s)
    assert np.max(np.abs(u - exact)) < 1e-2 * exact.max()
    assert np.abs(f["uy"]).max() < 1e-12 * np.abs(f["ux"]).max()
    assert run.physics["H"] == H and run.physics["U"] == pytest.approx(a * H * H / (8 * nu))


def test_the_2d_channel_defaults_are_its_force_along_x_and_walls_on_y():
    cfg = RunConfig.build("channel", ("test", {"velocity_set": "d2q9"}))
    assert cfg.gravity == (2.5e-5, 0.0) and cfg.wall_axes == "y" and cfg.lid is None
    three = RunConfig.build("channel", ("test", {}))
    assert three.dimension == 3 and three.gravity == (2.5e-5, 0.0, 0.0)


def test_a_channel_s_numbers_need_walls_parallel_to_its_force():
    """Poiseuille's centre speed and H (the header, the manifest's physics) where the force runs
    along the walls; a force into a wall drives no channel flow: no channel numbers."""
    from lbgen.model.physics import channel_width, run_numbers
    assert channel_width((4, 16), "y", (1e-5, 0.0)) == 16 and channel_width((4, 16, 8), "yz", (1e-5, 0, 0)) == 8
    assert channel_width((4, 16), "x", (1e-5, 0.0)) is None and channel_width((4, 16), None, (1e-5, 0.0)) is None
    along = RunConfig.build("channel", ("test", {"velocity_set": "d2q9", "lx": 4, "ly": 16}))
    into = RunConfig.build("channel", ("test", {"velocity_set": "d2q9", "lx": 4, "ly": 16, "wall_axes": "x"}))
    assert run_numbers(along)["H"] == 16 and "H" not in run_numbers(into) and "U" not in run_numbers(into)


def test_a_2d_geometry_mask_is_used_and_a_bad_one_is_refused_before_any_file(tmp_path):
    shape = (16, 12)
    mask = np.zeros(shape, bool)
    mask[6:9, 4:7] = True                                 # a square post in the channel
    good = tmp_path / "post.npy"
    np.save(good, mask)
    common = ["run", "channel", "--velocity-set", "d2q9", "--lx", 16, "--ly", 12, "--steps", 30, "--gravity",
              "1e-4,0", "--pictures", "none", "--no-progress"]
    r = _cli(*common, "--geometry", good, "--out", tmp_path / "post")
    assert r.exit_code == 0, r.output
    r = _cli(*common, "--out", tmp_path / "plain")
    assert r.exit_code == 0, r.output
    f, plain = (read_field_file(tmp_path / d / "fields" / "step-000000030.h5") for d in ("post", "plain"))
    assert all(np.all(f[k][mask] == 0) for k in NAMES)     # solid cells read 0
    assert np.all(f["rho"][~mask] > 0)
    assert not np.allclose(f["ux"][~mask], plain["ux"][~mask])    # the flow goes round the post
    for name, bad in (("shape", np.zeros((16, 13), bool)), ("dtype", np.zeros(shape, np.float64))):
        path = tmp_path / f"{name}.npy"
        np.save(path, bad)
        target = tmp_path / f"bad-{name}"
        r = _cli(*common, "--geometry", path, "--out", target)
        assert r.exit_code != 0 and "Traceback" not in r.output
        assert not target.exists(), "nothing may be written"
        words = " ".join(r.output.split())
        assert str(path) in words
        assert ("(16, 13)" in words and "(LX, LY) = (16, 12)" in words) if name == "shape" else "float64" in words


@pytest.mark.parametrize("options, words", [
    ({"hetero": "opencl", "lx": 16}, ("--hetero opencl", "--wall-axes y")),
    ({"time_block": 2}, ("--time-block 2", "--wall-axes y")),
    ({"vl": "auto"}, ("--vl auto times the periodic step", "d2q9")),     # lbgen tune times no bounce-back
])
def test_what_2d_bounce_back_does_not_run_beside_is_refused_in_words(options, words, tmp_path):
    out = tmp_path / "never"
    with pytest.raises(ConfigError) as e:
        RunConfig.build("channel", ("command line", {"velocity_set": "d2q9", "out": str(out), **options}))
    assert all(w in str(e.value) for w in words) and "bounce-back" in str(e.value)
    assert not out.exists()


def test_a_2d_geometry_beside_the_thermal_walls_is_refused(tmp_path):
    path = tmp_path / "post.npy"
    np.save(path, np.zeros((8, 32), bool))
    with pytest.raises(ConfigError) as e:
        RunConfig.build("shear-wave", ("command line", {"lx": 8, "ly": 32, "walls": True, "geometry": str(path)}))
    assert "--geometry has no effect in this run" in str(e.value) and "--walls" in str(e.value)
