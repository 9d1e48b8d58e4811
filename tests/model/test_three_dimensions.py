"""The dimension as a parameter of the model: 3D velocity sets solved from their shells,
the Hermite machinery in D dimensions, and the refusal of 3D sets by runs (until they take
them) and by the backends without 3D kernels.  The model against the independent 3D oracle is in
tests/reference/test_bulk3d.py."""
from __future__ import annotations

import json

import itertools
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
from click.testing import CliRunner

from lbgen.cli.main import main
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.model import derived
from lbgen.model.catalog import MODEL_SETS, VELOCITY_SETS, run_set, set_entry, shell_members
from lbgen.model.hermite import components, hermite, hermite_tensor_rodrigues, multiplicity
from lbgen.model.velocity_set import velocity_set
from lbgen.run.options import ConfigError, convert
from lbgen.simulation.runner import Simulation
from lbgen.simulation.parameters import SimulationError

R = sp.Rational


# --- the sets: shells, members, exact weights ----------------------------------------------

def test_the_dimension_is_the_shell_length():
    assert {n: set_entry(n).D for n in MODEL_SETS} == {"d2q37": 2, "d2q9": 2, "d2v17": 2, "d3q19": 3, "d3q27": 3,
                                                       "d3q39": 3, "d3q103": 3}
    assert [set_entry(n).Q for n in ("d3q19", "d3q27", "d3q39", "d3q103")] == [19, 27, 39, 103]
    assert [velocity_set(n).D for n in MODEL_SETS] == [set_entry(n).D for n in MODEL_SETS]
    assert shell_members((1, 1, 0)) == {v for v in itertools.product((-1, 0, 1), repeat=3)
                                        if sorted(map(abs, v)) == [0, 1, 1]}
    assert len(shell_members((2, 1))) == 8 and len(shell_members((2, 1, 0))) == 24 and len(shell_members((3, 2, 1))) == 48


@pytest.mark.parametrize("name, r, weights", [
    ("d3q19", sp.sqrt(3), (R(1, 3), R(1, 18), R(1, 36))),
    ("d3q27", sp.sqrt(3), (R(8, 27), R(2, 27), R(1, 54), R(1, 216))),
    # Shan, Yuan & Chen, J. Fluid Mech. 550 (2006) 413-441, Table 1: D3Q39, degree 7
    ("d3q39", sp.sqrt(R(3, 2)), (R(1, 12), R(1, 12), R(1, 27), R(2, 135), R(1, 432), R(1, 1620))),
])
def test_3d_weights_and_scale_factor_come_out_of_the_solve_exactly(name, r, weights):
    vs = velocity_set(name)
    assert sp.simplify(vs.r_exact - r) == 0
    assert tuple(sp.nsimplify(w) for w in vs.shell_weights_exact) == weights
    assert all(sp.simplify(w - want) == 0 for w, want in zip(vs.shell_weights_exact, weights))
    assert vs.weights.sum() == pytest.approx(1.0, abs=1e-15)


def _gauss(n: int) -> float:
    return 0.0 if n % 2 else float(np.prod(np.arange(n - 1, 0, -2))) if n else 1.0


@pytest.mark.parametrize("name", sorted(MODEL_SETS))
def test_quadrature_integrates_every_monomial_below_its_degree(name):
    """sum_i w_i xi^alpha = E[X^alpha] for every multi-index |alpha| < degree (not only the
    symmetry classes the solve used), and some monomial of order `degree` + 1 fails: the
    degree is what the catalogue says."""
    vs = velocity_set(name)
    xi, w = vs.xi, vs.weights
    for order in range(vs.degree + 2):
        errors = []
        for alpha in itertools.product(range(order + 1), repeat=vs.D):
            if sum(alpha) != order:
                continue
            got = float(np.sum(w * np.prod(xi ** np.array(alpha), axis=1)))
            errors.append(abs(got - np.prod([_gauss(k) for k in alpha])))
        if order < vs.degree:
            assert max(errors) < 1e-12, (order, max(errors))
        elif order == vs.degree + 1:
            assert max(errors) > 1e-3, f"{name} integrates order {order}: degree above {vs.degree}"


def test_d3q27_is_the_tensor_product_of_d1q3():
    """Degree 5 leaves one free weight on D3Q27's shells; the solve's extra condition
    (x^2 y^2 z^2, the most mixed of order 6) picks the product rule w = w1(c_x) w1(c_y) w1(c_z)."""
    vs = velocity_set("d3q27")
    w1 = {0: 2 / 3, 1: 1 / 6, -1: 1 / 6}
    assert np.allclose(vs.weights, [w1[a] * w1[b] * w1[c] for a, b, c in vs.velocities], rtol=0, atol=1e-16)


def test_3d_population_order_and_opposites():
    for name in ("d3q19", "d3q27", "d3q39", "d3q103"):
        vs = velocity_set(name)
        keys = [(-v[0], v[1], v[2]) for v in vs.velocities]
        assert keys == sorted(keys)
        assert vs.opposite == tuple(range(vs.Q - 1, -1, -1))
        assert vs.e.shape == (vs.Q, 3) and vs.propagate_offsets[0] == tuple(-vs.e[0])
    assert velocity_set("d3q39").max_hop == 3 == velocity_set("d3q103").max_hop and velocity_set("d3q19").max_hop == 1


def test_2d_sets_are_unchanged():
    """The 2D velocities, order and weights of before (D2Q9 typed; D2Q37 against d2q37.md)."""
    q9 = velocity_set("d2q9")
    assert q9.velocities == ((1, -1), (1, 0), (1, 1), (0, -1), (0, 0), (0, 1), (-1, -1), (-1, 0), (-1, 1))
    assert tuple(sp.nsimplify(w) for w in q9.shell_weights_exact) == (R(4, 9), R(1, 9), R(1, 36))
    q37 = velocity_set("d2q37")
    assert q37.velocities[:3] == ((3, -1), (3, 0), (3, 1)) and q37.velocities[18] == (0, 0) and q37.D == 2
    assert q37.r == pytest.approx(1.19697977039307435897239, rel=1e-15)


# --- Hermite machinery in D ------------------------------------------------------------------

def test_hermite_components_in_3d():
    for n in range(5):
        comps = components(n, 3)
        assert len(comps) == (n + 1) * (n + 2) // 2 and all(sum(c) == n for c in comps)
        assert sum(multiplicity(c) for c in comps) == 3 ** n       # all index tuples
    assert components(2) == ((2, 0), (1, 1), (0, 2))              # 2D order unchanged
    x, y, z = sp.symbols("x y z")
    for n in range(5):
        rod = hermite_tensor_rodrigues(n, (x, y, z))
        for c in components(n, 3):
            assert sp.expand(rod[c] - hermite(c, (x, y, z))) == 0
    assert sp.expand(hermite((1, 1, 1), (x, y, z)) - x * y * z) == 0
    assert sp.expand(hermite((2, 0, 1), (x, y, z)) - (x ** 2 - 1) * z) == 0


def _moment(f, xi, alpha):
    return np.sum(f * np.prod(xi ** np.array(alpha), axis=1)[:, None], axis=0)


def test_d3q39_equilibrium_has_the_maxwellian_moments_to_third_order():
    """Thermal 3D: sum f_eq xi^alpha = rho E[(u + sqrt(T) Z)^alpha] for |alpha| <= 3."""
    vs = velocity_set("d3q39")
    rng = np.random.default_rng(7)
    n = 6
    rho, T = 1 + 0.1 * rng.random(n), 1 + 0.1 * rng.standard_normal(n)
    u = 0.1 * rng.standard_normal((3, n))
    f = derived.equilibrium_assignments("d3q39").evaluate([rho, *u, T], ax=0.0, ay=0.0, az=0.0)  # zero force: the Maxwellian of these moments
    normal = {0: lambda m: np.ones_like(m), 1: lambda m: m, 2: lambda m: m * m + T, 3: lambda m: m ** 3 + 3 * m * T}
    for order in range(4):
        for alpha in itertools.product(range(order + 1), repeat=3):
            if sum(alpha) == order:
                want = rho * np.prod([normal[k](u[j]) for j, k in enumerate(alpha)], axis=0)
                assert np.allclose(_moment(f, vs.xi, alpha), want, rtol=0, atol=1e-13), alpha


@pytest.mark.parametrize("name", ["d3q19", "d3q27", "d3q39"])
def test_3d_bgk_conserves_mass_adds_the_force_and_its_energy(name):
    """One BGK collision: mass kept, momentum + rho a, and (thermal sets) total energy
    + rho (u.a + |a|^2/2) -- the T* shift with 1/D; isothermal sets return T = 1."""
    vs = velocity_set(name)
    rng = np.random.default_rng(3)
    n = 5
    rho, T = 1 + 0.1 * rng.random(n), np.ones(n) if vs.isothermal else 1 + 0.05 * rng.standard_normal(n)
    u = 0.05 * rng.standard_normal((3, n))
    feq = derived.equilibrium_assignments(name).evaluate([rho, *u, T], ax=0.0, ay=0.0, az=0.0)
    f = feq * (1 + 0.02 * rng.standard_normal(feq.shape))
    a = np.array([2e-3, -1e-3, 3e-3])
    out = derived.collide("bgk", name).evaluate(list(f), tau=0.7, ax=a[0], ay=a[1], az=a[2], wall=0.0)
    assert np.allclose(out.sum(0), f.sum(0), rtol=1e-14, atol=0)
    rho_f, mom = f.sum(0), vs.xi.T @ f
    assert np.allclose(vs.xi.T @ out, mom + rho_f * a[:, None], rtol=0, atol=1e-14)
    fields = derived.macroscopic_assignments(name).evaluate(list(f))
    assert fields.shape == (5, n) and np.allclose(fields[1:4], mom / rho_f, atol=1e-15)
    if vs.isothermal:
        assert np.all(fields[4] == 1.0)
        return
    energy = lambda g: 0.5 * ((vs.xi ** 2).sum(1) @ g)                 # noqa: E731
    u_f = mom / rho_f
    gain = rho_f * ((u_f * a[:, None]).sum(0) + 0.5 * (a ** 2).sum())
    assert np.allclose(energy(out), energy(f) + gain, rtol=0, atol=1e-13)
    # D rho T = sum |xi - u|^2 f
    assert np.allclose(fields[4], ((vs.xi[:, :, None] - u_f[None]) ** 2).sum(1).__mul__(f).sum(0) / (3 * rho_f))


def test_3d_derivations_are_cached_on_disk(monkeypatch):
    """The second derivation in a process without the in-memory cache comes from disk
    (key: model_digest and the set's name); a different set is not served from it."""
    first = derived.collide("bgk", "d3q19")
    derived.collide.cache_clear()
    from lbgen.model import collision

    def fail(*args):
        raise AssertionError("derived again instead of read from the disk cache")

    monkeypatch.setattr(collision, "collision", fail)
    again = derived.collide("bgk", "d3q19")
    assert again is not first and again.assignments == first.assignments and again.outputs == first.outputs
    derived.collide.cache_clear()
    monkeypatch.undo()
    other = derived.collide("bgk", "d3q27")
    assert len(other.outputs) == 27


def test_model_and_catalog_imports_stay_light():
    code = ("import sys, lbgen.model, lbgen.model.catalog, lbgen.model.operators; "
            "assert lbgen.model.set_entry('d3q19').D == 3; "
            "assert 'sympy' not in sys.modules and 'numpy' not in sys.modules, 'heavy import'")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- 3D sets: `lbgen run` takes them (Run); lbgen.Simulation and `lbgen info` refuse them in words ---

MESSAGE = "d3q19 is a 3D set; this takes the 2D sets"


def test_3d_sets_are_not_offered_to_runs():
    assert set(VELOCITY_SETS) == {"d2q37", "d2q9", "d2v17"}
    assert run_set("D2Q9") == "d2q9"
    with pytest.raises(ValueError, match=MESSAGE):
        run_set("d3q19")
    with pytest.raises(ValueError, match="unknown velocity set 'd5q5'"):
        run_set("d5q5")


def test_kernels_and_simulation_refuse_a_3d_set_in_words():
    # every backend generates 3D kernels (tests/backends/test_c3d.py, test_gpu3d.py)
    assert KernelSpec(velocity_set="D3Q19").validate().velocity_set == "d3q19"
    assert KernelSpec(velocity_set="d3q19", backend="opencl").validate().dimension == 3
    with pytest.raises(SimulationError, match="d3q27 is a 3D set: give the depth"):
        Simulation(8, 16, velocity_set="D3Q27")            # with lz: a 3D lattice (tests/simulation/test_simulation3d.py)
    assert convert("velocity_set", "d3q19") == "d3q19"     # `lbgen run` takes 3D sets (Run: tests/run/test_run3d.py)
    with pytest.raises(ConfigError, match="unknown velocity set 'd5q5'"):
        convert("velocity_set", "d5q5")
    # the wall algebra exists for any D (walls across z in 3D); the kernels take it for the thermal sets only
    rows = derived.build_model("d3q39", "bgk", walls=True).walls
    assert [(side, row) for side, row, _ in rows] == [(s, r) for s in ("bottom", "top") for r in (2, 1, 0)]
    assert rows[0][2].name == "wall_z_low_2"
    with pytest.raises(SpecError, match="d3q19 is an isothermal 3D set: walls=True"):
        KernelSpec(velocity_set="d3q19", walls=True).validate()


def test_cli_emit_writes_a_3d_set_on_a_gpu_backend(tmp_path):
    result = CliRunner().invoke(main, ["emit", "--velocity-set", "d3q19", "--backend", "opencl",
                                       "-o", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["README.md", "example.py", "lbgen_kernels.cl"]
    assert "d3q19" in CliRunner().invoke(main, ["emit", "--help"]).output


def test_cli_info_describes_a_3d_set():
    """`lbgen info` takes every set: D3Q19's three shells and weights from the solve."""
    data = json.loads(CliRunner().invoke(main, ["info", "--json", "--velocity-set", "d3q19"]).output)
    vs = data["velocity_set"]
    assert (vs["D"], vs["Q"], vs["hermite_order"]) == (3, 19, 2)
    assert [(tuple(s["shell"]), s["count"]) for s in vs["shells"]] == [((0, 0, 0), 1), ((1, 0, 0), 6), ((1, 1, 0), 12)]
    assert [float(s["weight_digits"]) for s in vs["shells"]] == pytest.approx([1 / 3, 1 / 18, 1 / 36], rel=1e-15)
    assert data["operators"]["bgk"]["flops_per_site"] > 0
    text = CliRunner().invoke(main, ["info", "--velocity-set", "d3q39"]).output
    assert "D3Q39 (3D), Q = 39" in text and "(3,0,0)" in text
