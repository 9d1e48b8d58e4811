"""The physical (half-step) fields (lbgen.model.collision.half_step_shift; docs/physics.md).

(1) the definition holds for the kernels' own collision assignments: for both operators,
    every velocity set, bulk and wall rows (tau = 1), the collision keeps rho and T and adds
    a to u, and the physical fields of the post-collision populations are the mean of the
    moments before and after it (u_H = u - a/2, T_H = T + |a|^2/8 exactly);
(2) the model's physical fields and their inverse (the equilibrium) agree with the oracle's
    independent formulas, and fields(init(x)) = x to round-off.
"""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.model import collide, equilibrium_assignments, physical_fields
from lbgen.model.velocity_set import velocity_set
from lbgen.reference import bulk as ref

#: a force large enough that |a|^2/8 (4.3e-6) is far above round-off
FORCE = (3e-3, -5e-3)
PARAMS = {"bgk": {"tau": 0.7}, "regularized": {"C1": 2e-3, "C2": 5e-3, "C3": 0.3}}
SETS = ("d2q37", "d2v17", "d2q9")


def _state(vs, seed=4, shape=(5, 7)):
    """Off equilibrium: an equilibrium with 1 % noise on every population."""
    rng = np.random.default_rng(seed)
    f = ref.equilibrium(1 + 0.05 * rng.uniform(-1, 1, shape), 0.05 * rng.uniform(-1, 1, shape),
                        0.05 * rng.uniform(-1, 1, shape), 1 + 0.05 * rng.uniform(-1, 1, shape), vs=vs)
    return f * (1 + 1e-2 * rng.standard_normal(f.shape))


def _energy(rho, ux, uy, T):
    return rho * (T + (ux * ux + uy * uy) / 2)          # D = 2: internal rho T plus kinetic


@pytest.mark.parametrize("wall", [0.0, 1.0], ids=["bulk", "wall-row"])
@pytest.mark.parametrize("operator", ["bgk", "regularized"])
@pytest.mark.parametrize("name", SETS)
def test_physical_fields_are_the_mean_of_the_moments_before_and_after_the_collision(name, operator, wall):
    vs = velocity_set(name)
    f = _state(vs)
    post = collide(operator, name).evaluate(f, **PARAMS[operator], ax=FORCE[0], ay=FORCE[1], wall=wall)
    rho0, ux0, uy0, T0 = ref.fields(f, vs)
    rho1, ux1, uy1, T1 = ref.fields(post, vs)
    # what the collision does to the moments: keeps rho, adds a to u, keeps T (thermal sets)
    assert np.allclose(rho1, rho0, rtol=1e-14, atol=0)
    assert np.allclose(ux1 - ux0, FORCE[0], rtol=0, atol=1e-14)
    assert np.allclose(uy1 - uy0, FORCE[1], rtol=0, atol=1e-14)
    rho, ux, uy, T = physical_fields(name, post, *FORCE)
    assert np.allclose(rho, rho1, rtol=1e-15, atol=0)
    assert np.allclose(ux, (ux0 + ux1) / 2, rtol=0, atol=1e-15)
    assert np.allclose(uy, (uy0 + uy1) / 2, rtol=0, atol=1e-15)
    if vs.isothermal:
        assert np.all(T == 1.0)
        return
    assert np.abs(T1 - T0).max() < 1e-14                         # the collision keeps T
    E = (_energy(rho0, ux0, uy0, T0) + _energy(rho1, ux1, uy1, T1)) / 2
    T_half = E / rho1 - (ux * ux + uy * uy) / 2                  # the half-step state's temperature
    assert np.abs(T - T_half).max() < 1e-14
    a2 = FORCE[0] ** 2 + FORCE[1] ** 2
    assert np.allclose(T - T1, a2 / 8, rtol=1e-9, atol=0)          # exactly |a|^2/8 (4.3e-6 here)


@pytest.mark.parametrize("name", SETS)
def test_model_and_oracle_agree_and_init_inverts_fields(name):
    vs = velocity_set(name)
    f = _state(vs, seed=9)
    model = physical_fields(name, f, *FORCE)
    oracle = ref.physical_fields(f, FORCE, vs)
    for m, o in zip(model, oracle):
        assert np.abs(m - o).max() <= 1e-15 * max(1.0, np.abs(o).max())
    # init: the populations whose physical fields are x; fields(init(x)) = x
    x = [np.asarray(a) for a in oracle]
    g = equilibrium_assignments(name).evaluate(x, ax=FORCE[0], ay=FORCE[1])
    assert np.abs(g - ref.physical_equilibrium(*x, FORCE, vs)).max() <= 1e-15 * np.abs(g).max()
    for got, want in zip(physical_fields(name, g, *FORCE), x):
        assert np.abs(got - want).max() <= 2e-15 * max(1.0, np.abs(want).max())
    # the stored moments of init(x) carry the force: u + a/2 (and T - |a|^2/8 for thermal sets)
    _, ux, uy, T = ref.fields(g, vs)
    assert np.allclose(uy - x[2], FORCE[1] / 2, rtol=0, atol=1e-15)
    if not vs.isothermal:
        assert np.allclose(x[3] - T, (FORCE[0] ** 2 + FORCE[1] ** 2) / 8, rtol=1e-9, atol=0)
