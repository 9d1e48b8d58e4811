"""The plain NumPy oracle (lbgen.reference.bulk): its own physics, and the generated kernels against it.

Lattice units in the physics tests: dx = one hop, dt = one step.  Code velocities are in
xi units (xi = r e), so a code speed v is v / r hops per step and a code temperature T is
theta0 = T / r^2 in lattice units.  Hence, per step and with k = 2 pi / LX per hop:
  shear viscosity  nu = (tau - 1/2) T / r^2   (= (tau - 1/2) T / r in code time t = steps / r)
  sound speed      c_s = sqrt(gamma T) / r = sqrt(2) / r  (gamma = 2 in 2D, T = 1).
"""
import numpy as np
import pytest

from lbgen.reference import bulk as ref
from lbgen.model.collision import collision, equilibrium as generated_equilibrium
from lbgen.model.velocity_set import d2q37

OPERATORS = ("bgk", "regularized")
#: parameters used for each operator in the local (single-collision) tests
PARAMS = {"bgk": dict(tau=0.8),
          "regularized": dict(C1=0.2, C2=0.1, C3=0.5)}


@pytest.fixture(scope="module")
def vs():
    return d2q37()


@pytest.fixture(scope="module")
def generated():
    vs = d2q37()
    return {op: collision(vs, op) for op in OPERATORS}


def random_fields(seed, shape=(6, 5)):
    rng = np.random.default_rng(seed)
    rho = 1.0 + 0.1 * rng.standard_normal(shape)
    ux = 0.1 * rng.standard_normal(shape)
    uy = 0.1 * rng.standard_normal(shape)
    T = 1.0 + 0.05 * rng.standard_normal(shape)
    return rho, ux, uy, T


def near_equilibrium(seed, shape=(6, 5), noise=1e-2):
    """f_eq of random fields plus a small random relative perturbation (non-equilibrium part)."""
    rng = np.random.default_rng(seed + 1000)
    feq = ref.equilibrium(*random_fields(seed, shape))
    return feq * (1.0 + noise * rng.standard_normal(feq.shape))


def moments(f, vs):
    """(mass, x-momentum, y-momentum, total energy) per site."""
    return (f.sum(axis=0),
            np.einsum("i,i...->...", vs.xi[:, 0], f),
            np.einsum("i,i...->...", vs.xi[:, 1], f),
            ref.energy(f, vs))


def collide(f, op, force=(0.0, 0.0), wall=False):
    if op == "bgk":
        return ref.collide_bgk(f, force=force, **PARAMS[op])
    return ref.collide_regularized(f, force=force, wall=wall, **PARAMS[op])


# --- equilibrium -------------------------------------------------------------------------------

def test_explicit_equilibrium_has_mass_momentum_and_energy_of_its_fields(vs):
    rho, ux, uy, T = random_fields(0)
    feq = ref.equilibrium(rho, ux, uy, T, vs)
    assert feq.shape == (vs.Q,) + rho.shape
    m, px, py, e = moments(feq, vs)
    np.testing.assert_allclose(m, rho, rtol=1e-13)
    np.testing.assert_allclose(px, rho * ux, rtol=0, atol=1e-13)
    np.testing.assert_allclose(py, rho * uy, rtol=0, atol=1e-13)
    np.testing.assert_allclose(e, rho * (T + (ux ** 2 + uy ** 2) / 2), rtol=1e-13)


def test_fields_of_the_equilibrium_return_its_inputs(vs):
    inputs = random_fields(1)
    for got, want in zip(ref.fields(ref.equilibrium(*inputs, vs=vs), vs), inputs):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


def test_equilibrium_broadcasts_scalars_and_fields(vs):
    feq = ref.equilibrium(1.0, np.zeros((3, 2)), 0.0, 1.0, vs)
    assert feq.shape == (vs.Q, 3, 2)
    np.testing.assert_allclose(feq[:, 1, 1], vs.weights, rtol=1e-15)


def test_explicit_equilibrium_equals_generated_equilibrium(vs):
    inputs = random_fields(2)
    want = ref.equilibrium(*inputs, vs=vs)
    got = generated_equilibrium(vs).evaluate(list(inputs), ax=0.0, ay=0.0)
    assert np.abs(got - want).max() <= 1e-14 * np.abs(want).max()
    # with a force the generated init takes physical fields: the oracle's own inverse
    force = (2e-3, -3e-3)
    got = generated_equilibrium(vs).evaluate(list(inputs), ax=force[0], ay=force[1])
    want = ref.physical_equilibrium(*inputs, force, vs=vs)
    assert np.abs(got - want).max() <= 1e-14 * np.abs(want).max()


# --- propagation -------------------------------------------------------------------------------

def test_propagate_moves_population_p_by_its_hop_periodically(vs):
    LX, LY = 7, 8
    f = np.zeros((vs.Q, LX, LY))
    f[:, 1, 2] = np.arange(1, vs.Q + 1)
    g = ref.propagate(f, vs)
    for p, (ex, ey) in enumerate(vs.e):
        assert g[p, (1 + ex) % LX, (2 + ey) % LY] == p + 1
        assert np.count_nonzero(g[p]) == 1


# --- collision: invariants ---------------------------------------------------------------------

#: (operator, wall) cases; wall rows exist only for the regularized operator
CASES = [("bgk", False), ("regularized", False), ("regularized", True)]


@pytest.mark.parametrize("op, wall", CASES)
def test_equilibrium_is_a_fixed_point_of_collision(vs, op, wall):
    feq = ref.equilibrium(*random_fields(3), vs=vs)
    out = collide(feq, op, wall=wall)
    assert np.abs(out - feq).max() <= 1e-14 * np.abs(feq).max()


@pytest.mark.parametrize("op", OPERATORS)
def test_collision_conserves_mass_momentum_and_energy(vs, op):
    f = near_equilibrium(4)
    out = collide(f, op)
    assert np.abs(out - f).max() > 1e-6 * np.abs(f).max()  # it really relaxed something
    before, after = moments(f, vs), moments(out, vs)
    scale = np.abs(before[0]).max()
    for b, a in zip(before, after):
        assert np.abs(a - b).max() <= 1e-13 * scale


@pytest.mark.parametrize("op, wall", CASES)
def test_force_adds_rho_a_momentum_and_u_dot_F_plus_F2_over_2rho_energy(vs, op, wall):
    a = (2e-3, -3e-3)
    f = near_equilibrium(5)
    rho, ux, uy, _ = ref.fields(f, vs)
    m0, px0, py0, e0 = moments(f, vs)
    m1, px1, py1, e1 = moments(collide(f, op, force=a, wall=wall), vs)
    Fx, Fy = rho * a[0], rho * a[1]
    scale = rho.max()
    assert np.abs(m1 - m0).max() <= 1e-13 * scale
    assert np.abs((px1 - px0) - Fx).max() <= 1e-13 * scale
    assert np.abs((py1 - py0) - Fy).max() <= 1e-13 * scale
    de = ux * Fx + uy * Fy + (Fx ** 2 + Fy ** 2) / (2 * rho)
    assert np.abs((e1 - e0) - de).max() <= 1e-13 * scale


# --- generated kernels against the oracle ------------------------------------------------------

@pytest.mark.parametrize("force", [(0.0, 0.0), (2e-3, -3e-3)])
def test_generated_bgk_collision_matches_reference(generated, force):
    f = near_equilibrium(6)
    want = ref.collide_bgk(f, 0.8, force=force)
    got = generated["bgk"].evaluate(f, tau=0.8, ax=force[0], ay=force[1], wall=0)
    assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()


def test_generated_bgk_uses_tau_one_on_wall_rows(generated):
    f = near_equilibrium(7)
    want = ref.collide_bgk(f, 1.0, force=(1e-3, -2e-3))
    got = generated["bgk"].evaluate(f, tau=0.8, ax=1e-3, ay=-2e-3, wall=1)
    assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()


@pytest.mark.parametrize("force", [(0.0, 0.0), (2e-3, -3e-3)])
@pytest.mark.parametrize("wall", [0, 1])
def test_generated_regularized_collision_matches_literal_two_stage_recipe(generated, force, wall):
    f = near_equilibrium(7)
    p = dict(C1=0.2, C2=0.1, C3=0.5)
    want = ref.collide_regularized(f, force=force, wall=bool(wall), **p)
    got = generated["regularized"].evaluate(f, ax=force[0], ay=force[1], wall=wall, **p)
    assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()


def test_regularized_wall_mask_selects_unit_relaxation_per_site(vs):
    f = near_equilibrium(8)
    mask = np.zeros(f.shape[1:], dtype=bool)
    mask[:, :2] = True
    mixed = ref.collide_regularized(f, wall=mask)
    np.testing.assert_array_equal(mixed[:, :, :2], ref.collide_regularized(f, wall=True)[:, :, :2])
    np.testing.assert_array_equal(mixed[:, :, 2:], ref.collide_regularized(f, wall=False)[:, :, 2:])
    assert np.abs(mixed[:, :, :2] - ref.collide_regularized(f)[:, :, :2]).max() > 1e-8


# --- hydrodynamics on small periodic boxes -----------------------------------------------------

def shear_wave_viscosity(vs, operator, LX=64, LY=2, steps=600, **params):
    """nu (hops^2 / step) from the decay of a transverse wave u_y = U sin(k x)."""
    x = np.arange(LX)[:, None] * np.ones((1, LY))
    k = 2 * np.pi / LX
    one = np.ones_like(x)
    f = ref.equilibrium(one, 0 * x, 1e-4 * np.sin(k * x), one, vs)
    amplitude = []
    for n in range(steps + 1):
        rho, _, uy, _ = ref.fields(f, vs)
        amplitude.append(2 * np.mean(rho * uy * np.sin(k * x)))
        if n < steps:
            f = ref.step(f, operator, **params)
    t = np.arange(steps + 1)
    late = t >= steps // 10  # skip the short initial non-equilibrium transient
    rate = -np.polyfit(t[late], np.log(amplitude)[late], 1)[0]
    return rate / k ** 2


def test_shear_wave_decays_at_bgk_viscosity(vs):
    tau = 0.8
    nu = shear_wave_viscosity(vs, "bgk", tau=tau)
    expected = (tau - 0.5) * 1.0 / vs.r ** 2      # theta0 = T / r^2, T = 1
    assert nu == pytest.approx(expected, rel=0.01)
    # and it is not the code-unit value (tau - 1/2) T / r, which would be 20% off
    assert abs(nu / ((tau - 0.5) / vs.r) - 1) > 0.1


def test_shear_wave_decays_at_regularized_viscosity_set_by_tau1(vs):
    C1 = 0.2                                      # rho = T = 1: tau1 = 0.7
    nu = shear_wave_viscosity(vs, "regularized", C1=C1, C2=1e-3, C3=0.5)
    expected = C1 / vs.r ** 2                     # (tau1 - 1/2) T / r^2
    assert nu == pytest.approx(expected, rel=0.02)


def test_sound_travels_at_adiabatic_speed_sqrt2_over_r(vs):
    LX, tau, steps = 128, 0.6, 400
    x = np.arange(LX)[:, None] * 1.0
    k = 2 * np.pi / LX
    one = np.ones_like(x)
    # a pure velocity wave u_x = U sin(kx): a standing sound wave, no entropy mode at linear order
    f = ref.equilibrium(one, 1e-4 * np.sin(k * x), 0 * x, one, vs)
    amplitude = []
    for n in range(steps + 1):
        rho, ux, _, _ = ref.fields(f, vs)
        amplitude.append(2 * np.mean(rho * ux * np.sin(k * x)))
        if n < steps:
            f = ref.step(f, "bgk", tau=tau)
    a = np.array(amplitude)
    i = np.nonzero(np.sign(a[:-1]) != np.sign(a[1:]))[0]
    crossings = i + a[i] / (a[i] - a[i + 1])       # linear interpolation
    assert len(crossings) >= 5
    half_period = np.polyfit(np.arange(len(crossings)), crossings, 1)[0]
    c = np.pi / half_period / k                   # damping (Gamma/omega ~ 1e-3) shifts omega by ~1e-6
    assert c == pytest.approx(np.sqrt(2) / vs.r, rel=0.005)


@pytest.mark.parametrize("op", OPERATORS)
def test_gravity_adds_steps_times_total_mass_times_a_to_momentum(vs, op):
    g = (0.004, -0.01)
    a = ref.force_from_gravity(g, vs)
    assert a == pytest.approx((g[0] / vs.r, g[1] / vs.r), rel=1e-15)
    f = near_equilibrium(9, shape=(8, 6))
    params = dict(PARAMS[op], force=a)
    m0, px0, py0, _ = (q.sum() for q in moments(f, vs))
    steps = 5
    out = ref.run(f, steps, op, **params)
    m1, px1, py1, _ = (q.sum() for q in moments(out, vs))
    assert abs(m1 - m0) <= 1e-13 * m0
    assert abs((px1 - px0) - steps * m0 * a[0]) <= 1e-13 * m0
    assert abs((py1 - py0) - steps * m0 * a[1]) <= 1e-13 * m0
