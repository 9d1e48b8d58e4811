"""lbgen.geometry: the analytic shapes' inside tests and exact wall distances, the DFG cylinder
geometry of Schaefer & Turek (1996), the force coefficients and the Strouhal number."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.geometry import Bodies, Cylinder, Sphere, dfg_cylinder, periodic_array
from lbgen.geometry.coefficients import coefficients, dfg_mean_speed, strouhal
from lbgen.simulation.parameters import SimulationError


def test_wall_distances_are_exact_on_a_disc_a_ball_and_a_cylinder():
    """q of the links that cut the surface: the point x + q c lies on it, and x outside, x + c inside."""
    for shape, body in [((20, 20), Sphere((9.3, 10.1), 4.4)), ((14, 14, 14), Sphere((6.2, 7.1, 6.6), 3.7)),
                        ((14, 12, 10), Cylinder((6.3, 4.2), 3.1, axis="y"))]:
        b = Bodies(shape, [body])
        D = len(shape)
        sites = np.argwhere(b.labels == 0)
        dirs = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [-1, 1, 1], [1, -1, -1]])[:, :D]
        checked = 0
        for c in dirs:
            if not c.any():
                continue
            end = sites + c
            ok = np.all((end >= 0) & (end < shape), axis=1)
            ok[ok] = b.labels[tuple(end[ok].T)] > 0
            if not ok.any():            # a link along the cylinder's axis never cuts it
                continue
            q = b.distance(sites[ok], np.broadcast_to(c, (ok.sum(), D)))
            assert np.all((q > 0) & (q <= 1))
            hit = sites[ok] + q[:, None] * c
            if isinstance(body, Sphere):
                gap = np.linalg.norm(hit - np.array(body.centre), axis=1) - body.radius
            else:
                gap = np.linalg.norm(hit[:, [0, 2]] - np.array(body.centre), axis=1) - body.radius
            assert np.abs(gap).max() < 1e-12
            checked += ok.sum()
        assert checked > 20


def test_dfg_geometry():
    """Schaefer & Turek (1996): channel 2.2 x 0.41, D = 0.1 at (0.2, 0.2) (walls half a spacing
    outside the first and last sites); 3D-1Z: 2.5 x 0.41 x 0.41, the cylinder along z."""
    shape, b = dfg_cylinder(20)
    assert shape == (440, 82)
    (body,) = b.shapes
    assert body.radius == 10 and body.centre == (39.5, 39.5)
    assert b.names == ("cylinder",)
    # the blockage: sites inside the disc ~ pi r^2
    assert abs((b.labels > 0).sum() - np.pi * 100) < 2 * np.pi * 10
    shape3, b3 = dfg_cylinder(10, dimension=3)
    assert shape3 == (250, 41, 41) and b3.shapes[0].axis == "z" and b3.shapes[0].radius == 5
    with pytest.raises(SimulationError, match="at least 4 sites across"):
        dfg_cylinder(2)


def test_force_coefficients_and_the_dfg_reference_speed():
    """C_D = 2 F_x / (rho U^2 D) (2D); 3D-1Z: 2 F_x / (rho U^2 D H); U = 2/3 U_max (2D), 4/9 U_max
    (3D) (Schaefer & Turek 1996)."""
    assert dfg_mean_speed(0.3) == pytest.approx(0.2) and dfg_mean_speed(0.45, 3) == pytest.approx(0.2)
    cd, cl = coefficients((0.5, -0.1), 1.0, 0.2, 0.1)
    assert cd == pytest.approx(2 * 0.5 / (0.04 * 0.1)) and cl == pytest.approx(-2 * 0.1 / (0.04 * 0.1))
    assert coefficients((1.0, 0, 0), 2.0, 0.5, 0.1 * 0.41)[0] == pytest.approx(2 / (2 * 0.25 * 0.041))
    with pytest.raises(SimulationError, match="must be > 0"):
        coefficients((1.0, 0.0), 1.0, 0.0, 0.1)


def test_strouhal_of_a_synthetic_lift_signal():
    """A lift sin(2 pi f t) after a transient: St = f D / U recovered to 1e-3; a steady or a
    decaying-to-constant signal has none."""
    dt, D, U, f = 0.01, 0.1, 1.0, 3.0
    t = np.arange(0, 20, dt)
    lift = np.sin(2 * np.pi * f * t + 0.3) + 0.2 * np.exp(-t) + 0.05
    assert strouhal(lift, dt, D, U) == pytest.approx(f * D / U, rel=1e-3)
    assert strouhal(np.full(500, 0.3), dt, D, U) is None
    assert strouhal(1 + np.exp(-t), dt, D, U) is None
    assert strouhal(np.sin(2 * np.pi * 0.01 * t), dt, D, U) is None      # less than 3 periods


def test_periodic_array_is_centred():
    b = periodic_array(16, 4.0, 3)
    assert b.shapes[0].centre == (7.5, 7.5, 7.5) and b.names == ("sphere",)
    lab = b.labels > 0
    assert np.array_equal(lab, lab[::-1]) and np.array_equal(lab, lab.transpose(1, 0, 2))
