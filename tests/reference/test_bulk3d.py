"""The 3D oracle (lbgen.reference.bulk3d): against the model's sympy assignments, and
against the physics (conservation, viscosity, second-order walls, the moving wall).

References: c_s^2 = 1/3, nu = (tau - 1/2)/3 and the D3Q19/D3Q27 weights (Krueger et al.,
The Lattice Boltzmann Method, Springer 2017, ch. 3); half-way bounce-back is second-order
accurate for plane Poiseuille flow (ibid. ch. 5; He, Zou, Luo & Dembo, J. Stat. Phys. 87
(1997) 115); the moving-wall correction of Ladd, J. Fluid Mech. 271 (1994) 285.
"""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.model.derived import collide, equilibrium_assignments, macroscopic_assignments
from lbgen.model.velocity_set import velocity_set
from lbgen.reference import bulk3d as o

SETS = ["d3q19", "d3q27"]


def _random_state(lat, shape, rng, amplitude=0.05):
    rho = 1.0 + 0.1 * rng.standard_normal(shape)
    u = 0.05 * rng.standard_normal((3,) + tuple(shape))
    feq = o.equilibrium(rho, u, lat)
    return feq * (1.0 + amplitude * rng.standard_normal(feq.shape))


# --- the model's sympy assignments = the oracle ---------------------------------------------

@pytest.mark.parametrize("name", SETS)
def test_oracle_lattice_is_the_models(name):
    """Same velocities in the same order; the textbook weights are the solved ones."""
    vs, lat = velocity_set(name), o.lattice(name)
    assert [tuple(v) for v in lat.c.tolist()] == list(vs.velocities)
    assert np.array_equal(lat.w, vs.weights)
    assert np.array_equal(lat.opposite, np.array(vs.opposite))
    assert vs.r == pytest.approx(1 / np.sqrt(o.CS2), rel=1e-15)


@pytest.mark.parametrize("name", SETS)
def test_model_equilibrium_and_fields_equal_the_oracle(name):
    """Model units u_model = r u (xi = r c, r = 1/c_s); T is ignored (isothermal)."""
    rng = np.random.default_rng(11)
    lat, r = o.lattice(name), velocity_set(name).r
    n = 64
    rho, u = 1 + 0.1 * rng.standard_normal(n), 0.08 * rng.standard_normal((3, n))
    got = equilibrium_assignments(name).evaluate([rho, *(r * u), 1 + rng.random(n)], ax=0.0, ay=0.0, az=0.0)
    assert np.max(np.abs(got - o.equilibrium(rho, u, lat))) < 1e-12
    f = _random_state(lat, (n,), rng)
    fields = macroscopic_assignments(name).evaluate(list(f))
    rho_o, u_o = o.fields(f, lat)
    assert np.max(np.abs(fields[0] - rho_o)) < 1e-12 and np.max(np.abs(fields[1:4] - r * u_o)) < 1e-12


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("tau", [0.55, 0.8, 1.7])
def test_model_bgk_with_force_equals_the_oracle(name, tau):
    rng = np.random.default_rng(int(tau * 100))
    lat, r = o.lattice(name), velocity_set(name).r
    f = _random_state(lat, (64,), rng)
    a = 2e-3 * rng.standard_normal(3)
    got = collide("bgk", name).evaluate(list(f), tau=tau, ax=r * a[0], ay=r * a[1], az=r * a[2], wall=0.0)
    assert np.max(np.abs(got - o.collide_bgk(f, tau, a, lat))) < 1e-12


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("C1", [1e-3, 0.1])
def test_model_regularized_with_force_equals_the_oracle(name, C1):
    """The model (Hermite projections, tau1 = 1/2 + C1/(rho T), T = 1; C2, C3 unread) = the
    oracle's stress-tensor form of Latt & Chopard."""
    rng = np.random.default_rng(5)
    lat, r = o.lattice(name), velocity_set(name).r
    f = _random_state(lat, (64,), rng)
    a = 2e-3 * rng.standard_normal(3)
    got = collide("regularized", name).evaluate(list(f), C1=C1, C2=0.3, C3=0.7, ax=r * a[0], ay=r * a[1],
                                                az=r * a[2], wall=0.0)
    assert np.max(np.abs(got - o.collide_regularized(f, C1, a, lat))) < 1e-12


# --- the oracle's own physics ---------------------------------------------------------------

def test_equilibrium_moments():
    """sum f_eq = rho, sum c f_eq = rho u, sum c c f_eq = rho (cs^2 I + u u)."""
    lat = o.lattice("d3q19")
    rho, u = np.array([1.2]), np.array([[0.03], [-0.02], [0.05]])
    f = o.equilibrium(rho, u, lat)
    c = lat.c.astype(float)
    assert f.sum(0) == pytest.approx(rho, rel=1e-15)
    assert np.allclose(c.T @ f, rho * u, rtol=1e-14, atol=0)
    Pi = np.einsum("ia,ib,i...->ab...", c, c, f)[..., 0]
    assert np.allclose(Pi, rho[0] * (o.CS2 * np.eye(3) + u[:, 0, None] * u[None, :, 0]), rtol=1e-14, atol=1e-17)


@pytest.mark.parametrize("operator, params", [("bgk", {"tau": 0.7}), ("regularized", {"C1": 0.05})])
def test_mass_is_conserved_with_walls_a_lid_and_a_random_mask(operator, params):
    rng = np.random.default_rng(4)
    lat = o.lattice("d3q19")
    shape = (6, 7, 5)
    solid = rng.random(shape) < 0.2
    f = np.where(solid, 0.0, _random_state(lat, shape, rng, 0.01))
    m0 = o.mass(f)
    for walls, lids in [(("y",), {}), (("x", "z"), {}), (("x", "y", "z"), {("z", "high"): (0.05, -0.02, 0.0)}),
                        (("y",), {("y", "low"): (0.03, 0.0, 0.04), ("y", "high"): (-0.03, 0.0, 0.01)})]:
        b = o.Boundaries(shape, lat, walls=walls, lids=lids, solid=solid)
        g = o.run(f, 40, operator, lat, b, force=(1e-4, -2e-4, 5e-5), **params)
        assert abs(o.mass(g) - m0) < 1e-13 * m0, (walls, lids)
        assert np.all(g[:, solid] == 0.0) and np.all(g[:, ~solid] > 0)


def test_boundaries_check_their_inputs():
    lat = o.lattice("d3q19")
    with pytest.raises(ValueError, match="bool array of shape"):
        o.Boundaries((4, 4, 4), lat, solid=np.zeros((4, 4, 3), bool))
    with pytest.raises(ValueError, match="bool array of shape"):
        o.Boundaries((4, 4, 4), lat, solid=np.zeros((4, 4, 4), int))
    with pytest.raises(ValueError, match="lid"):
        o.Boundaries((4, 4, 4), lat, walls=("x",), lids={("y", "high"): (0.1, 0, 0)})
    with pytest.raises(ValueError, match="wall axis"):
        o.Boundaries((4, 4, 4), lat, walls=("w",))


def test_a_solid_mask_is_the_same_wall_as_a_wall_face():
    """Solid planes at y = 0 and y = LY - 1 of a periodic box bounce back exactly as the wall
    faces of the box between them."""
    rng = np.random.default_rng(8)
    lat = o.lattice("d3q27")
    inner = _random_state(lat, (3, 5, 4), rng, 0.02)
    solid = np.zeros((3, 7, 4), bool)
    solid[:, [0, 6], :] = True
    padded = np.zeros((lat.Q, 3, 7, 4))
    padded[:, :, 1:6] = inner
    kw = dict(tau=0.9, force=(2e-4, 0.0, -1e-4))
    a = o.run(inner, 10, "bgk", lat, o.Boundaries((3, 5, 4), lat, walls=("y",)), **kw)
    b = o.run(padded, 10, "bgk", lat, o.Boundaries((3, 7, 4), lat, solid=solid), **kw)
    assert np.max(np.abs(a - b[:, :, 1:6])) < 1e-15


def _shear_wave_viscosity(L, tau, lat):
    """u_x = A sin(k z) on a periodic (1, 1, L) box; nu from the decay over one e-fold."""
    k, amp = 2 * np.pi / L, 1e-4
    z = np.arange(L).reshape(1, 1, L)
    u = np.zeros((3, 1, 1, L))
    u[0] = amp * np.sin(k * z)
    f = o.equilibrium(np.ones((1, 1, L)), u, lat)
    mode = np.sin(k * z)

    def amplitude(f):
        return float((o.fields(f, lat)[1][0] * mode).sum() * 2 / L)

    nu = (tau - 0.5) / 3
    f = o.run(f, 20, "bgk", lat, tau=tau)
    a0, steps = amplitude(f), int(1 / (nu * k * k))
    f = o.run(f, steps, "bgk", lat, tau=tau)
    return -np.log(amplitude(f) / a0) / (k * k * steps)


@pytest.mark.parametrize("name", SETS)
def test_shear_wave_viscosity_at_two_resolutions(name):
    """nu within 0.5% of (tau - 1/2)/3 at L = 32 and 64, and the error falls as k^2."""
    lat, tau = o.lattice(name), 0.8
    nu = (tau - 0.5) / 3
    errors = [_shear_wave_viscosity(L, tau, lat) / nu - 1 for L in (32, 64)]
    assert all(abs(e) < 0.005 for e in errors), errors
    assert 3.5 < errors[0] / errors[1] < 4.5, errors


def _poiseuille_error(N, axis, flow, tau, operator, lat):
    """Body-force flow along `flow` between walls across `axis` (N fluid nodes, walls half
    a cell outside): the relative L2 error of the steady half-step velocity against
    u = a/(2 nu) (s + 1/2)(N - 1/2 - s)."""
    nu, umax = (tau - 0.5) / 3, 0.01
    a = np.zeros(3)
    a[flow] = 8 * nu * umax / N ** 2
    shape = [1, 1, 1]
    shape[axis] = N
    s = np.arange(N)
    exact = a[flow] / (2 * nu) * (s + 0.5) * (N - 0.5 - s)
    u = np.zeros((3,) + tuple(shape))
    u[flow] = exact.reshape(shape)
    f = o.equilibrium(np.ones(shape), u, lat)
    b = o.Boundaries(tuple(shape), lat, walls=("xyz"[axis],))
    params = {"tau": tau} if operator == "bgk" else {"C1": tau - 0.5}
    previous = None
    for _ in range(200):
        f = o.run(f, 100, operator, lat, b, force=a, **params)
        got = o.physical_velocity(f, a, lat)[flow].ravel()
        if previous is not None and np.max(np.abs(got - previous)) < 1e-11 * umax:
            break
        previous = got
    else:
        raise AssertionError("no steady state")
    other = [k for k in range(3) if k != flow]
    assert np.max(np.abs(o.physical_velocity(f, a, lat)[other])) < 1e-12 * umax
    return np.sqrt(np.mean((got - exact) ** 2) / np.mean(exact ** 2))


@pytest.mark.parametrize("axis, flow, operator", [(1, 0, "bgk"), (2, 1, "regularized"), (0, 2, "bgk")],
                         ids=["walls-y-bgk", "walls-z-regularized", "walls-x-bgk"])
def test_poiseuille_between_bounce_back_walls_is_second_order(axis, flow, operator):
    lat = o.lattice("d3q19")
    errors = [_poiseuille_error(N, axis, flow, 0.8, operator, lat) for N in (8, 16)]
    assert errors[0] < 0.02, errors
    order = np.log2(errors[0] / errors[1])
    assert 1.9 < order < 2.1, errors


@pytest.mark.parametrize("name", SETS)
def test_moving_lid_drives_the_linear_couette_profile(name):
    """A lid at y = LY - 1/2 moving with U over a resting wall at y = -1/2: the steady
    profile u_x = U (y + 1/2) / LY is exact for half-way bounce-back with Ladd's correction
    (a sign error would drive the flow backwards), and mass is conserved."""
    lat = o.lattice(name)
    LY, U, tau = 6, 0.02, 0.9
    shape = (2, LY, 3)
    b = o.Boundaries(shape, lat, walls=("y",), lids={("y", "high"): (U, 0.0, 0.0)})
    f = o.equilibrium(np.ones(shape), np.zeros((3,) + shape), lat)
    f = o.run(f, 1500, "bgk", lat, b, tau=tau)
    ux = o.fields(f, lat)[1][0]
    exact = U * (np.arange(LY) + 0.5) / LY
    assert np.max(np.abs(ux - exact[None, :, None])) < 1e-6 * U
    assert abs(o.mass(f) - np.prod(shape)) < 1e-13 * np.prod(shape)    # round-off of 1500 steps


# --- the thermal D3Q39 --------------------------------------------------------------------------

def _thermal_state(n, rng, noise=0.02):
    lat = o.lattice("d3q39")
    rho, u, T = 1 + 0.1 * rng.standard_normal(n), 0.05 * rng.standard_normal((3, n)), 1 + 0.05 * rng.standard_normal(n)
    return lat, rho, u, T, o.equilibrium(rho, u, lat, T) * (1 + noise * rng.standard_normal((lat.Q, n)))


def test_d3q39_oracle_lattice_equilibrium_and_temperature_are_the_models():
    """Shan, Yuan & Chen's shells and weights typed here = the solve's; the third-order
    equilibrium at T and the temperature moment = the model's (u_model = r u, r = 1/c_s)."""
    vs, rng = velocity_set("d3q39"), np.random.default_rng(8)
    lat, rho, u, T, f = _thermal_state(64, rng)
    assert [tuple(v) for v in lat.c.tolist()] == list(vs.velocities) and np.array_equal(lat.w, vs.weights)
    assert vs.r == pytest.approx(1 / np.sqrt(lat.cs2), rel=1e-15)
    got = equilibrium_assignments("d3q39").evaluate([rho, *(vs.r * u), T], ax=0.0, ay=0.0, az=0.0)
    assert np.max(np.abs(got - o.equilibrium(rho, u, lat, T))) < 1e-14
    fields = macroscopic_assignments("d3q39").evaluate(list(f))
    assert np.max(np.abs(fields[4] - o.temperature(f, lat))) < 1e-13


@pytest.mark.parametrize("tau", [0.55, 0.8, 1.7])
def test_d3q39_model_bgk_with_force_equals_the_oracle(tau):
    """The force shifts u by tau a and theta by tau (1 - tau) |a|^2 / (D cs^2)."""
    vs, rng = velocity_set("d3q39"), np.random.default_rng(int(tau * 10))
    lat, _, _, _, f = _thermal_state(64, rng)
    a = 2e-3 * rng.standard_normal(3)
    r = vs.r
    got = collide("bgk", "d3q39").evaluate(list(f), tau=tau, ax=r * a[0], ay=r * a[1], az=r * a[2], wall=0.0)
    assert np.max(np.abs(got - o.collide_bgk(f, tau, a, lat))) < 1e-13
    rho, u = o.fields(f, lat)
    unshifted = o.equilibrium(rho, u + tau * a[:, None], lat, o.temperature(f, lat))
    assert np.max(np.abs(got - (f - (f - unshifted) / tau))) > 1e-12      # the temperature shift is seen


def test_d3q39_equilibrium_has_the_maxwellian_moments_to_third_order():
    """sum f = rho, sum c f = rho u, sum c c f = rho (cs^2 T I + u u), and the third moment
    rho (u u u + cs^2 T (u delta + ...)), at T != 1; the oracle's temperature() gives T back."""
    lat = o.lattice("d3q39")
    rho, u, T = np.array([1.3]), np.array([[0.04], [-0.03], [0.02]]), np.array([1.08])
    f = o.equilibrium(rho, u, lat, T)[..., 0]
    c, cs2, v = lat.c.astype(float), lat.cs2, u[:, 0]
    assert f.sum() == pytest.approx(rho[0], rel=1e-15)
    assert np.allclose(c.T @ f, rho[0] * v, rtol=1e-13, atol=1e-17)
    Pi = np.einsum("ia,ib,i->ab", c, c, f)
    assert np.allclose(Pi, rho[0] * (cs2 * T[0] * np.eye(3) + np.outer(v, v)), rtol=1e-13, atol=1e-16)
    M3 = np.einsum("ia,ib,ic,i->abc", c, c, c, f)
    d = np.eye(3)
    want = rho[0] * (np.einsum("a,b,c->abc", v, v, v) + cs2 * T[0] * (np.einsum("a,bc->abc", v, d)
                                                                       + np.einsum("b,ac->abc", v, d)
                                                                       + np.einsum("c,ab->abc", v, d)))
    assert np.allclose(M3, want, rtol=1e-12, atol=1e-16)
    assert o.temperature(o.equilibrium(rho, u, lat, T), lat) == pytest.approx(T, rel=1e-14)
    with pytest.raises(ValueError, match="second order"):
        o.collide_regularized(o.equilibrium(rho, u, lat, T), 1e-3, lat=lat)


# --- the fourth-order D3Q103 ----------------------------------------------------------------------

def test_d3q103_oracle_solve_lattice_and_equilibrium_are_the_models():
    """The oracle's own 40-digit solve (cs^2 the D2Q37 root) gives the model's sympy weights to
    round-off; its fourth-order equilibrium at T != 1 is the model's, and its temperature moment."""
    vs, rng = velocity_set("d3q103"), np.random.default_rng(11)
    lat = o.lattice("d3q103")
    assert [tuple(v) for v in lat.c.tolist()] == list(vs.velocities) and lat.order == 4 and lat.Q == 103
    assert np.max(np.abs(lat.w / vs.weights - 1)) < 1e-15 and np.all(lat.w > 0)
    assert vs.r == pytest.approx(1 / np.sqrt(lat.cs2), rel=1e-15)
    n = 64
    rho, u, T = 1 + 0.1 * rng.standard_normal(n), 0.05 * rng.standard_normal((3, n)), 1 + 0.3 * rng.standard_normal(n)
    f = o.equilibrium(rho, u, lat, T)
    got = equilibrium_assignments("d3q103").evaluate([rho, *(vs.r * u), T], ax=0.0, ay=0.0, az=0.0)
    assert np.max(np.abs(got - f)) < 1e-14
    f = f * (1 + 0.02 * rng.standard_normal(f.shape))
    fields = macroscopic_assignments("d3q103").evaluate(list(f))
    assert np.max(np.abs(fields[4] - o.temperature(f, lat))) < 1e-13


def test_d3q103_quadrature_holds_to_degree_nine_and_no_further():
    """sum_i w_i xi^m = the Gaussian moment for every monomial up to degree 9, not at 10."""
    lat = o.lattice("d3q103")
    xi = lat.c / np.sqrt(lat.cs2)

    def gauss(k):
        return 0.0 if k % 2 else float(np.prod(np.arange(k - 1, 0, -2))) if k else 1.0

    def error(a, b, c):
        return abs((lat.w * xi[:, 0] ** a * xi[:, 1] ** b * xi[:, 2] ** c).sum() - gauss(a) * gauss(b) * gauss(c))

    assert max(error(a, b, c) for a in range(10) for b in range(10 - a) for c in range(10 - a - b)) < 1e-11
    assert max(error(a, b, c) for a in range(11) for b in range(11 - a) for c in range(11 - a - b)
               if a + b + c == 10) > 1e-3


def test_d3q103_equilibrium_has_the_maxwellian_fourth_moment_and_bgk_is_the_models():
    """The fourth moment at T != 1 is the Maxwellian's (a third-order equilibrium misses it);
    the model's BGK with a force equals the oracle's (u and theta shifted)."""
    lat = o.lattice("d3q103")
    rho, u, T = np.array([1.2]), np.array([[0.05], [-0.04], [0.03]]), np.array([1.3])
    f = o.equilibrium(rho, u, lat, T)[..., 0]
    c, v, s = lat.c.astype(float), u[:, 0], lat.cs2 * T[0]
    d = np.eye(3)
    M4 = np.einsum("ia,ib,ic,id,i->abcd", c, c, c, c, f)
    vvvv = np.einsum("a,b,c,d->abcd", v, v, v, v)
    dvv = sum(np.einsum(spec, d, np.outer(v, v)) for spec in ("ab,cd->abcd", "ac,bd->abcd", "ad,bc->abcd",
                                                              "bc,ad->abcd", "bd,ac->abcd", "cd,ab->abcd"))
    dd = sum(np.einsum(spec, d, d) for spec in ("ab,cd->abcd", "ac,bd->abcd", "ad,bc->abcd"))
    want = rho[0] * (vvvv + s * dvv + s * s * dd)
    assert np.allclose(M4, want, rtol=1e-12, atol=1e-15)
    vs, rng = velocity_set("d3q103"), np.random.default_rng(5)
    n, tau, a = 32, 0.7, 2e-3 * rng.standard_normal(3)
    g = o.equilibrium(1 + 0.1 * rng.random(n), 0.05 * rng.standard_normal((3, n)), lat, 1 + 0.2 * rng.random(n))
    g = g * (1 + 0.02 * rng.standard_normal(g.shape))
    r = vs.r
    got = collide("bgk", "d3q103").evaluate(list(g), tau=tau, ax=r * a[0], ay=r * a[1], az=r * a[2], wall=0.0)
    assert np.max(np.abs(got - o.collide_bgk(g, tau, a, lat))) < 1e-13
