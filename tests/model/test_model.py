"""The model: lattices solved from the moment conditions, Hermite equilibrium, operators."""
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from lbgen.model import collide
from lbgen.model.velocity_set import d2q9, d2q37
from lbgen.model.collision import equilibrium
from lbgen.model.hermite import (components, gaussian_hermite_moment, hermite, hermite_tensor_rodrigues,
                                 maxwellian_coefficient, expansion)

# published values (d2q37.md, 23 digits) -- the code derives them, the tests compare
PUBLISHED_R = sp.Float("1.19697977039307435897239", 30)
PUBLISHED_WEIGHTS = {
    (0, 0): "0.23315066913235250228650",
    (1, 0): "0.10730609154221900241246",
    (1, 1): "0.05766785988879488203006",
    (2, 0): "0.01420821615845075026469",
    (2, 1): "0.00535304900051377523273",
    (2, 2): "0.00101193759267357547541",
    (3, 0): "0.00024530102775771734547",
    (3, 1): "0.00028341425299419821740",
}


def _gauss(n):
    return 0 if n % 2 else int(sp.factorial2(n - 1))


def test_d2q37_scale_factor_matches_published_value():
    vs = d2q37()
    assert abs(vs.r_float(30) - PUBLISHED_R) < 1e-22
    assert abs(vs.r - 1.19697977039307435897239) < 1e-15


def test_d2q37_scale_factor_is_root_of_published_polynomial():
    t = 1 / d2q37().r_float(40) ** 2
    assert abs(35 * t ** 3 - 70 * t ** 2 + 49 * t - 12) < 1e-30


def test_d2q37_shell_weights_match_published_values():
    vs = d2q37()
    for shell, w in zip(vs.shells, vs.shell_weights_exact):
        assert abs(sp.N(w, 30) - sp.Float(PUBLISHED_WEIGHTS[shell], 30)) < 1e-22, shell
        # and as doubles to 1e-15
        assert abs(float(w) - float(PUBLISHED_WEIGHTS[shell])) < 1e-15


def test_d2q37_population_order_and_opposites():
    vs = d2q37()
    assert vs.Q == 37
    assert vs.velocities[0] == (3, -1) and vs.velocities[1] == (3, 0) and vs.velocities[2] == (3, 1)
    assert vs.velocities[3] == (2, -2) and vs.velocities[18] == (0, 0) and vs.velocities[36] == (-3, 1)
    assert vs.opposite == tuple(36 - p for p in range(37))
    assert sorted(vs.velocities, key=lambda v: (-v[0], v[1])) == list(vs.velocities)
    assert vs.propagate_offsets[0] == (-3, 1)


def test_d2q37_integrates_all_moments_up_to_order_9_exactly_and_fails_at_order_10():
    vs = d2q37()
    r = vs.r_float(50)
    w = vs.weights_float(50)
    def moment(m, n):
        return sum(wi * (r * a) ** m * (r * b) ** n for wi, (a, b) in zip(w, vs.velocities))
    for m, n in itertools.product(range(10), repeat=2):
        if m + n <= 9:
            assert abs(moment(m, n) - _gauss(m) * _gauss(n)) < 1e-35, (m, n)
    failures = [(m, 10 - m) for m in range(11) if abs(moment(m, 10 - m) - _gauss(m) * _gauss(10 - m)) > 1e-10]
    assert failures, "a degree-9 quadrature cannot integrate every 10th-order moment"


def test_d2q9_comes_out_of_the_same_derivation():
    vs = d2q9()
    assert vs.r_exact == sp.sqrt(3)
    assert vs.shell_weights_exact == (sp.Rational(4, 9), sp.Rational(1, 9), sp.Rational(1, 36))
    assert vs.Q == 9 and vs.opposite == tuple(8 - p for p in range(9))


def test_tensor_hermite_polynomials_match_rodrigues_and_textbook_forms():
    x, y = sp.symbols("x y", real=True)
    for n in range(5):
        rod = hermite_tensor_rodrigues(n, (x, y))
        for c in components(n):
            assert sp.expand(rod[c] - hermite(c, (x, y))) == 0
    # H2 = xi xi - delta, H3 = xi xi xi - 3[xi delta], H4 = xi^4 - 6[xi xi delta] + 3[delta delta]
    assert sp.expand(hermite((2, 0), (x, y)) - (x ** 2 - 1)) == 0
    assert sp.expand(hermite((1, 1), (x, y)) - x * y) == 0
    assert sp.expand(hermite((3, 0), (x, y)) - (x ** 3 - 3 * x)) == 0
    assert sp.expand(hermite((2, 1), (x, y)) - (x ** 2 * y - y)) == 0
    assert sp.expand(hermite((4, 0), (x, y)) - (x ** 4 - 6 * x ** 2 + 3)) == 0
    assert sp.expand(hermite((2, 2), (x, y)) - (x ** 2 * y ** 2 - x ** 2 - y ** 2 + 1)) == 0


def test_maxwellian_hermite_coefficients_equal_gaussian_integrals():
    xi, u, th = sp.symbols("xi u theta", positive=True)
    x = sp.Symbol("x")
    for n in range(5):
        integral = sp.integrate(sp.exp(-(xi - u) ** 2 / (2 * th)) / sp.sqrt(2 * sp.pi * th)
                                * sp.Poly(sp.hermite_prob(n, x), x).as_expr().subs(x, xi), (xi, -sp.oo, sp.oo))
        assert sp.simplify(integral - gaussian_hermite_moment(n, u, th)) == 0, n


def _explicit_equilibrium(rho, ux, uy, th, cx, cy):
    """d2q37.md's explicit 4th-order formula (typed here, independent of the model code)."""
    s = cx * ux + cy * uy
    c2 = cx ** 2 + cy ** 2
    u2 = ux ** 2 + uy ** 2
    return rho * (1 + s + (s ** 2 - u2) / 2 + (th - 1) * (c2 - 2) / 2
                  + s / 6 * (s ** 2 - 3 * u2 + 3 * (th - 1) * (c2 - 4))
                  + (s ** 4 - 6 * s ** 2 * u2 + 3 * u2 ** 2) / 24
                  + (th - 1) / 4 * ((c2 - 4) * (s ** 2 - u2) - 2 * s ** 2)
                  + (th - 1) ** 2 / 8 * (c2 ** 2 - 8 * c2 + 8))


def test_hermite_built_equilibrium_equals_explicit_formula_symbolically():
    rho, ux, uy, th, cx, cy = sp.symbols("rho u_x u_y theta c_x c_y", real=True)
    coefficients = {c: maxwellian_coefficient(c, rho, (ux, uy), th) for n in range(5) for c in components(n)}
    built = expansion(coefficients, (cx, cy), 1, 4)
    assert sp.expand(built - _explicit_equilibrium(rho, ux, uy, th, cx, cy)) == 0


def test_equilibrium_moments_are_density_momentum_and_energy():
    vs = d2q37()
    rng = np.random.default_rng(3)
    rho, ux, uy, T = 1 + 0.1 * rng.random(8), 0.1 * rng.standard_normal(8), 0.1 * rng.standard_normal(8), 1 + 0.1 * rng.random(8)
    f = equilibrium(vs).evaluate([rho, ux, uy, T], ax=0.0, ay=0.0)      # no force: stored = physical
    xi = vs.xi
    assert np.allclose(f.sum(0), rho, rtol=1e-14, atol=0)
    assert np.allclose(xi[:, 0] @ f, rho * ux, rtol=0, atol=1e-14)
    assert np.allclose(xi[:, 1] @ f, rho * uy, rtol=0, atol=1e-14)
    energy = 0.5 * ((xi ** 2).sum(1) @ f)
    assert np.allclose(energy, rho * (T + (ux ** 2 + uy ** 2) / 2), rtol=1e-14, atol=0)


@pytest.mark.parametrize("operator", ["bgk", "regularized"])
def test_collision_assignments_are_cse_d_and_counted(operator):
    asg = collide(operator)
    assert len(asg.outputs) == 37 and len(asg.inputs) == 37
    # ordered: every symbol is assigned before it is used
    known = set(asg.inputs) | set(asg.parameters)
    for sym, expr in asg.assignments:
        assert expr.free_symbols <= known, sym
        known.add(sym)
    # far below the 6613 flops per site of the reference code
    assert 0 < asg.flops < 3000


def test_regularized_derivation_is_fast_and_cached_on_disk(tmp_path):
    env = dict(os.environ, LBGEN_CACHE_DIR=str(tmp_path))
    # time the derivation (or its retrieval), not the import of sympy
    code = ("import time; from lbgen.model import collide; t=time.perf_counter(); collide('regularized'); "
            "print(time.perf_counter()-t)")
    cold = float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)
    warm = float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)
    assert cold < 20
    assert warm < 1.0
    assert list((tmp_path / "model").glob("*.pickle")), "the derivation must be stored on disk"
