"""The Python API refuses what it cannot honour, before anything runs: stepping without a
state, wall flags read by truthiness, assignments to ``params`` that would be ignored,
populations that are NaN or have no mass, fields of the wrong shape; and it prints itself."""
import numpy as np
import pytest

from helpers import random_fields
from lbgen.simulation.parameters import Parameters, SimulationError, Walls
from lbgen.simulation.interface import no_state
from lbgen.simulation.runner import Simulation

NO_STATE = no_state(2)

LX, LY = 8, 32


@pytest.fixture(scope="module")
def sim():
    """One small periodic simulation (kernels compiled once); each test sets its own state."""
    return Simulation(LX, LY, layout="soa", tau=0.8, check_every=0)


def _fields(seed=3):
    return dict(zip(("rho", "ux", "uy", "T"), random_fields(seed, (LX, LY))))


# --- (1) no state: step refuses like run, with the same message ----------------------------------

def test_step_before_any_state_refuses_with_the_message_of_run():
    sim = Simulation(LX, LY, layout="soa", tau=0.8, check_every=0)
    with pytest.raises(SimulationError) as stepped:
        sim.step(3)
    with pytest.raises(SimulationError) as ran:
        sim.run(3)
    assert str(stepped.value) == str(ran.value) == NO_STATE
    assert "set_fields" in NO_STATE and "set_populations" in NO_STATE
    assert sim.time_step == 0                          # nothing ran
    sim.set_fields(**_fields())
    sim.step(3)
    assert sim.time_step == 3 and np.isfinite(sim.populations()).all()


@pytest.mark.parametrize("n", [-1, 2.5, True, "3"])
def test_step_refuses_a_bad_count_before_stepping(sim, n):
    sim.set_fields(**_fields())
    before = sim.time_step
    with pytest.raises(SimulationError, match=r"steps=.* must be an integer >= 0"):
        sim.step(n)
    assert sim.time_step == before


# --- (2) Walls: booleans are booleans, temperatures positive and finite ---------------------------

@pytest.mark.parametrize("value, expected", [(True, True), (False, False), (np.bool_(True), True),
                                             ("yes", True), ("no", False), ("False", False), (" ON ", True),
                                             ("off", False), ("1", True), ("0", False)])
def test_walls_adiabatic_flags_are_read_as_booleans_never_by_truthiness(value, expected):
    walls = Walls(adiabatic_bottom=value, adiabatic_top=value)
    assert walls.adiabatic_bottom is expected and walls.adiabatic_top is expected
    assert walls == Walls(adiabatic_bottom=expected, adiabatic_top=expected)


@pytest.mark.parametrize("field, value, message", [
    ("adiabatic_bottom", "maybe", r"adiabatic_bottom='maybe' must be True or False"),
    ("adiabatic_top", 2, r"adiabatic_top=2 must be True or False"),
    ("adiabatic_top", 1, r"adiabatic_top=1 must be True or False"),
    ("adiabatic_bottom", None, r"adiabatic_bottom=None must be True or False"),
    ("adiabatic_bottom", "", r"adiabatic_bottom='' must be True or False"),
    ("T_bottom", float("nan"), r"T_bottom=nan must be a positive finite temperature"),
    ("T_top", float("inf"), r"T_top=inf must be a positive finite temperature"),
    ("T_top", 0.0, r"T_top=0.0 must be a positive finite temperature"),
    ("T_bottom", -1, r"T_bottom=-1 must be a positive finite temperature"),
    ("T_bottom", "1.05", r"T_bottom='1.05' must be a number"),
    ("T_top", True, r"T_top=True must be a number"),
    ("scheme", "production", r"wall scheme 'production' is not one of lbgen, reference"),
    ("scheme", None, r"wall scheme None is not one of lbgen, reference"),
])
def test_walls_refuse_bad_fields_naming_them(field, value, message):
    with pytest.raises(SimulationError, match=message):
        Walls(**{field: value})


def test_walls_store_plain_floats():
    walls = Walls(np.float32(1.25), 1)
    assert type(walls.T_bottom) is float and type(walls.T_top) is float
    assert (walls.T_bottom, walls.T_top) == (1.25, 1.0)


# --- (3) params is read-only; set_parameters is the one way --------------------------------------

def test_assigning_params_raises_and_changes_nothing(sim):
    before, kernel = sim.params, dict(sim.kernel_parameters)
    with pytest.raises(AttributeError, match=r"read-only.*set_parameters"):
        sim.params = Parameters("bgk", {"tau": 0.55})
    assert sim.params is before and sim.kernel_parameters == kernel


def test_set_parameters_updates_the_kernels_or_changes_nothing():
    sim = Simulation(LX, LY, layout="soa", tau=0.8, check_every=0)
    with pytest.raises(SimulationError, match="tau=0.4"):
        sim.set_parameters(tau=0.4)
    assert sim.params.tau == 0.8 and sim.kernel_parameters["tau"] == 0.8
    sim.set_parameters(tau=0.6, gravity=(0.0, -1e-5))
    assert sim.params.tau == 0.6 and sim.kernel_parameters["tau"] == 0.6
    assert sim.kernel_parameters["ay"] == pytest.approx(-1e-5 / sim.vs.r)
    # the kernels take it: the same start, a different tau gives different bits
    other = Simulation(LX, LY, layout="soa", tau=0.8, gravity=(0.0, -1e-5), check_every=0)
    for s in (sim, other):
        s.set_fields(**_fields())
        s.step(2)
    assert not np.array_equal(sim.populations(), other.populations())


# --- (4) set_populations and set_fields check what they are given ---------------------------------

@pytest.fixture()
def good_state(sim):
    sim.set_fields(**_fields())
    return sim.populations()


@pytest.mark.parametrize("value, message", [
    (np.nan, r"population 3 at site \(x=2, y=5\) is nan, not finite"),
    (np.inf, r"population 3 at site \(x=2, y=5\) is inf, not finite"),
    (-np.inf, r"population 3 at site \(x=2, y=5\) is -inf, not finite"),
])
def test_set_populations_refuses_non_finite_values_naming_the_site(sim, good_state, value, message):
    bad = good_state.copy()
    bad[3, 2, 5] = value
    with pytest.raises(SimulationError, match=message):
        sim.set_populations(bad)
    np.testing.assert_array_equal(sim.populations(), good_state)      # state unchanged


def test_set_populations_refuses_a_site_without_mass_but_takes_negative_populations(sim, good_state):
    bad = good_state.copy()
    bad[:, 4, 6] *= -1.0
    with pytest.raises(SimulationError, match=r"density at site \(x=4, y=6\).* is -\d.*must be positive"):
        sim.set_populations(bad)
    np.testing.assert_array_equal(sim.populations(), good_state)
    zero = good_state.copy()
    zero[:, 1, 1] = 0.0
    with pytest.raises(SimulationError, match=r"density at site \(x=1, y=1\).* is 0"):
        sim.set_populations(zero)
    # out of equilibrium a population may be negative while the site keeps its mass
    skewed = good_state.copy()
    skewed[1, 2, 4] -= 0.3 * skewed[1, 2, 4] + 1e-3
    assert skewed[1, 2, 4] < 0 < skewed[:, 2, 4].sum()
    sim.set_populations(skewed)
    np.testing.assert_array_equal(sim.populations(), skewed)


@pytest.mark.parametrize("bad, message", [
    (np.zeros((37, LX, LY + 1)), r"shape \(Q, LX, LY\) = \(37, 8, 32\), got \(37, 8, 33\)"),
    (np.full((37, LX, LY), 1 + 1j), "must be real numbers, got complex128"),
])
def test_set_populations_refuses_shapes_and_types(sim, good_state, bad, message):
    with pytest.raises(SimulationError, match=message):
        sim.set_populations(bad)
    np.testing.assert_array_equal(sim.populations(), good_state)


@pytest.mark.parametrize("rho, message", [
    (np.ones(LY), r"rho must be a real number or an array of shape \(LX, LY\) = \(8, 32\); got an array of shape \(32,\)"),
    (np.ones((LX, 1)), r"got an array of shape \(8, 1\)"),
    (np.ones((LY, LX)), r"got an array of shape \(32, 8\)"),
    (np.ones((1, LX, LY)), r"got an array of shape \(1, 8, 32\)"),
    ("1.0", r"rho must be a real number .* got '1.0'"),
    (True, r"rho must be a real number .* got True"),
    (None, r"rho must be a real number .* got None"),
])
def test_set_fields_takes_scalars_or_exact_arrays_only(sim, good_state, rho, message):
    with pytest.raises(SimulationError, match=message):
        sim.set_fields(rho, 0.0, 0.0, 1.0)
    np.testing.assert_array_equal(sim.populations(), good_state)


def test_set_fields_names_the_first_bad_site(sim, good_state):
    fields = _fields()
    fields["T"][5, 7] = np.nan
    with pytest.raises(SimulationError, match=r"T is nan at site \(x=5, y=7\)"):
        sim.set_fields(**fields)
    fields = _fields()
    fields["rho"][1, 2] = -0.5
    with pytest.raises(SimulationError, match=r"rho is -0.5 at site \(x=1, y=2\); the initial density must be positive"):
        sim.set_fields(**fields)
    np.testing.assert_array_equal(sim.populations(), good_state)


def test_set_fields_scalars_are_uniform_fields(sim):
    sim.set_fields(1.0, 0.0, 0.0, 1.0)
    rho = sim.fields()["rho"]
    assert rho.shape == (LX, LY) and np.allclose(rho, 1.0, rtol=0, atol=1e-13)


def test_restore_refuses_a_bad_time_step(sim, good_state):
    with pytest.raises(SimulationError, match=r"time_step=-1 must be an integer >= 0"):
        sim.restore(good_state, -1)


# --- (5) repr -------------------------------------------------------------------------------------

def test_repr_names_lattice_physics_backend_box_and_step(sim):
    fresh = Simulation(LX, LY, layout="soa", tau=0.8, check_every=0)
    assert repr(fresh) == "Simulation(8x32 D2Q37 bgk tau=0.8, c soa, periodic, step 0, no state yet)"
    fresh.set_fields(**_fields())
    fresh.step(2)
    assert repr(fresh) == "Simulation(8x32 D2Q37 bgk tau=0.8, c soa, periodic, step 2)"


def test_repr_with_walls_gravity_and_clustered_layout():
    sim = Simulation(LX, LY, layout="caosoa", vl=8, collision="regularized", gravity=(0.0, -1e-5),
                     walls=Walls(1.05, 0.95, adiabatic_top=True), check_every=0)
    text = repr(sim)
    assert text.startswith("Simulation(8x32 D2Q37 regularized C1=")
    assert "g=(0, -1e-05)" in text and "c caosoa-vl8" in text
    assert "walls T=1.05/0.95 (adiabatic top)" in text and text.endswith("step 0, no state yet)")
