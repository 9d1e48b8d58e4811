"""The open faces' description (lbgen.simulation.open_faces through BounceBack.of, as a
Simulation takes it): the forms an inlet takes (speed, profile name, velocity, arrays) become
the face sites' velocities; every bad input is refused before any work, naming the value and
what is allowed (a face of two kinds, an open face across from a periodic one, a set whose hops
are longer than 1, an inlet above the Mach limit, a bad outlet density, a body on an open face,
an array of the wrong shape)."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.model.physics import LID_MACH_MAX, lid_mach
from lbgen.simulation.boundaries import BounceBack
from lbgen.simulation.open_faces import channel_profile, duct_profile, inflow_array, inflow_size
from lbgen.simulation.parameters import SimulationError


def of(shape=(8, 6), vs="d2q9", walls="y", mask=None, **kw):
    return BounceBack.of(walls, None, mask, shape, vs, **kw)


def test_inlet_forms_become_face_velocities():
    b = of(inlet={"x-low": 0.05}, outlet={"x-high": 1.01})
    assert np.array_equal(b.open.inlets[("x", "low")], np.tile([0.05, 0.0], (6, 1)))
    assert b.open.outlets == {("x", "high"): 1.01}
    b = of(inlet={"x-high": ("parabolic", 0.1)}, outflow="x-low")          # into the lattice: -x
    np.testing.assert_allclose(b.open.inlets[("x", "high")][:, 0], -0.1 * channel_profile(6))
    b = of((8, 6, 4), "d3q19", walls="yz", inlet={"x-low": ("parabolic", 0.1)}, outlet="x-high")
    np.testing.assert_allclose(b.open.inlets[("x", "low")][..., 0], 0.1 * duct_profile(6, 4))
    assert abs(duct_profile(6, 4).max() - duct_profile(6, 4)[2:4, 1:3].max()) < 1e-15
    # the DFG 3D inflow (Schaefer & Turek 1996): 16 U y z (H - y)(W - z) / (H W)^2 at the sites' centres
    b = of((8, 6, 4), "d3q19", walls="yz", inlet={"x-low": ("biparabolic", 0.1)}, outlet="x-high")
    y, z = np.arange(6)[:, None] + 0.5, np.arange(4)[None, :] + 0.5
    np.testing.assert_allclose(b.open.inlets[("x", "low")][..., 0], 1.6 * y * z * (6 - y) * (4 - z) / 24 ** 2,
                               rtol=1e-14)
    b = of(inlet={"x-low": ("biparabolic", 0.1)}, outlet="x-high")          # one walled axis: the parabola
    np.testing.assert_allclose(b.open.inlets[("x", "low")][:, 0], 0.1 * channel_profile(6), rtol=1e-14)
    b = of((8, 6, 4), "d3q19", walls="y", slip="z", inlet={"x-low": ("parabolic", 0.1)}, outlet="x-high")
    u = b.open.inlets[("x", "low")][..., 0]                    # walls on y only: the channel parabola, flat in z
    np.testing.assert_allclose(u, 0.1 * channel_profile(6)[:, None] * np.ones(4))
    profile = np.random.default_rng(0).random((6,)) * 0.05
    b = of(inlet={"x-low": profile}, outlet="x-high")
    np.testing.assert_allclose(b.open.inlets[("x", "low")][:, 0], profile)
    fields = b.kernel_fields()
    assert (fields["inlets"], fields["outlets"]) == (1, 2) and fields["inflow"].size == inflow_size((8, 6))
    assert np.array_equal(fields["inflow"], inflow_array(b.open.inlets, (8, 6)))


def test_channel_and_duct_profiles():
    # the biparabolic profile's mean is (2/3)^2 = 4/9 of its centre (the DFG 3D-1Z mean speed) to the midpoint
    # rule's 1/(3 n^2); the duct's series carries 7 % more (0.477): the flux White's profile would impose
    from lbgen.simulation.open_faces import profile_across
    assert abs(profile_across("biparabolic", (41, 41)).mean() - 4 / 9 * (1 + 1 / (2 * 41 ** 2)) ** 2) < 1e-12
    assert abs(duct_profile(41, 41).mean() - 0.4774) < 2e-4
    # the duct's series at a wide aspect ratio tends to the channel's parabola in the middle
    wide = duct_profile(8, 400)[:, 200]
    np.testing.assert_allclose(wide, channel_profile(8), atol=1e-6)
    assert duct_profile(5, 5).shape == (5, 5) and np.allclose(duct_profile(5, 5), duct_profile(5, 5).T)


@pytest.mark.parametrize("kw, words", [
    (dict(inlet={"y-low": 0.05}), ["y-low", "wall", "inlet", "one kind"]),
    (dict(inlet={"x-low": 0.05}), ["x-high", "periodic"]),
    (dict(inlet={"x-low": 0.05}, outlet="x-high", slip="x-high"), ["x-high", "outlet", "slip"]),
    (dict(inlet={"x-low": 0.05}, outlet={"x-high": -1}), ["density -1", "> 0"]),
    (dict(inlet={"x-low": ("swirl", 0.1)}, outlet="x-high"), ["'swirl'", "uniform, parabolic"]),
    (dict(inlet={"x-low": np.zeros(5)}, outlet="x-high"), ["shape (5,)", "(6,)"]),
    (dict(inlet={"x-low": [np.nan, 0]}, outlet="x-high"), ["not finite"]),
    (dict(inlet={"q-low": 0.05}), ["'q-low'", "'x-low'"]),
    (dict(walls=None, inlet={"x-low": ("parabolic", 0.05)}, outlet="x-high"), ["parabolic", "walls"]),
])
def test_bad_open_faces_refused_in_words(kw, words):
    with pytest.raises(SimulationError) as e:
        of(**kw)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_inlet_above_the_mach_limit_refused_with_the_lids_rule():
    limit = LID_MACH_MAX * 1.0 / lid_mach((1.0, 0.0), "d2q9")
    from lbgen.model.physics import LidMachWarning
    with pytest.warns(LidMachWarning, match="inlet x-low moves at Mach 0.495"):
        assert of(inlet={"x-low": 0.99 * limit}, outlet="x-high", walls="y") is not None
    with pytest.warns(LidMachWarning):       # the fastest site decides: 0.972 U on 6 sites
        of(inlet={"x-low": ("parabolic", 1.02 * limit)}, outlet="x-high")
    with pytest.raises(SimulationError, match=r"inlet x-low: .*Mach .* at most at Mach 0.5"):
        of(inlet={"x-low": ("parabolic", 1.05 * limit)}, outlet="x-high")


def test_thermal_sets_and_bodies_on_open_faces_refused():
    with pytest.raises(SimulationError, match="pressure outlet .x-high. needs a velocity set whose hops are 1.*"
                                              "use an outflow"):
        of((8, 12), "d2q37", inlet={"x-low": 0.05}, outlet="x-high")
    mask = np.zeros((8, 6), bool)
    mask[7, 2] = True
    with pytest.raises(SimulationError, match="solid voxel on the outlet face x-high .*y=2"):
        of(mask=mask, inlet={"x-low": 0.05}, outlet="x-high")
    mask[7, 2], mask[4, 2] = False, True
    assert of(mask=mask, inlet={"x-low": 0.05}, outlet="x-high").mask.sum() == 1


def test_inlet_temperature_reaches_the_inflow_and_bad_ones_are_refused():
    """Thermal sets: T_in per inlet (default 1) sets the inlet's equilibrium (the kernels' inflow:
    Q values per face site, unit density: they sum to 1 and carry the energy of T_in)."""
    from lbgen.model.derived import macroscopic_assignments
    kw = dict(inlet={"x-low": 0.05}, outflow="x-high")
    hot = of((8, 12), "d2q37", inlet_temperature=1.02, **kw)
    assert hot.open.temperatures == {("x", "low"): 1.02}
    inflow = hot.open.kernel_fields((8, 12))["inflow"]
    assert inflow.size == inflow_size((8, 12), 37)
    site = inflow[:37]                                  # x-low, y = 0
    rho, ux, uy, T = macroscopic_assignments("d2q37").evaluate(site[:, None])[:, 0]
    assert abs(rho - 1) < 1e-13 and abs(ux - 0.05) < 1e-13 and abs(uy) < 1e-13 and abs(T - 1.02) < 1e-13
    default = of((8, 12), "d2q37", **kw).open.kernel_fields((8, 12))["inflow"]
    T1 = macroscopic_assignments("d2q37").evaluate(default[:37, None])[3, 0]
    assert abs(T1 - 1) < 1e-13
    assert of((8, 12), "d2q37", inlet_temperature={"x-low": 0.9}, **kw).open.temperatures == {("x", "low"): 0.9}
    for bad, words in ((0, "temperature 0; an inlet temperature must be > 0"),
                       (-1.0, "temperature -1; an inlet temperature must be > 0"),
                       (float("nan"), "temperature nan: need a finite number"),
                       (float("inf"), "temperature inf: need a finite number"),
                       ("hot", "temperature 'hot': need a finite number"),
                       ({"x-high": 1.1}, "the x-high face is not a velocity inlet")):
        with pytest.raises(SimulationError, match=words):
            of((8, 12), "d2q37", inlet_temperature=bad, **kw)
    with pytest.raises(SimulationError, match="d2q9 is isothermal.*needs a thermal set"):
        of(inlet={"x-low": 0.05}, outflow="x-high", inlet_temperature=1.1)
    with pytest.raises(SimulationError, match="needs a velocity inlet"):
        of((8, 12), "d2q37", outflow="x-high x-low", inlet_temperature=1.1)
    with pytest.raises(SimulationError, match="needs a velocity inlet"):
        of((8, 12), "d2q37", inlet_temperature=1.1)
