"""The MRT operator on the weighted-orthogonal Hermite basis (lbgen.model.mrt) and its Smagorinsky
variant in 2D (D2Q9) on every backend, layout and precision against the independent NumPy oracle
lbgen.reference.mrt (the moment-space MRT with Guo's forcing, a numeric moment matrix), to 1e-12 in
double; the derivation against the oracle site by site on D2Q9, D3Q19 and D3Q27; every rate 1/tau is
BGK with Guo's forcing (TRT with Lambda = (tau - 1/2)^2); the thermal sets refused in words.
(3D kernels: tests/backends/test_c3d.py and test_gpu3d.py sweep it against lbgen.reference.bulk3d.)"""
from __future__ import annotations

import numpy as np
import pytest
from support3d import SAMPLED_LAYOUTS

from helpers import step_fused
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.reference import mrt as oracle
from lbgen.reference.trt_les import D2Q9_C, stream
from test_cumulant import LAYOUTS, R, STEPS, FORCE, initial_state, rel_err
from test_trt_les import program

PARAMS = {"mrt": {"tau": 0.56, "omega_bulk": 1.4, "omega3": 0.9, "omega4": 1.2},
          "mrt-les": {"tau": 0.52, "omega_bulk": 1.1, "omega3": 1.2, "omega4": 0.8, "smagorinsky": 0.15}}
#: (runtime, layout, vl, operator, precision) of the fast suite; the whole sweep is slow
FAST = {("c", "csoa", 4, "mrt", "double"), ("c", "aos", None, "mrt-les", "double"),
        ("opencl", "caosoa", 8, "mrt", "double"), ("cuda-shim", "soa", None, "mrt-les", "double")}


def oracle_run(f, steps, operator, force=FORCE, **params):
    for _ in range(steps):
        f = oracle.collide(stream(f, D2Q9_C), force=force, **(params or PARAMS[operator]))
    return f


def _sweep():
    for runtime in ("c", "opencl", "cuda-shim"):
        for layout, vl in LAYOUTS:
            for operator in PARAMS:
                for precision in ("double", "single") + (("mixed",) if runtime == "c" else ()):
                    case = (runtime, layout, vl, operator, precision)
                    if case not in FAST and (layout, vl) not in SAMPLED_LAYOUTS:   # the layouts: bgk's sweeps
                        continue
                    yield pytest.param(*case, marks=() if case in FAST else (pytest.mark.slow,),
                                       id=f"{runtime}-{layout}{vl or ''}-{operator}-{precision}")


def _site(name, operator, params, seed=3):
    """The derived collision evaluated at one random site (with a force), and the populations."""
    import sympy as sp
    from lbgen.model.collision import collision
    from lbgen.model.velocity_set import velocity_set
    vs = velocity_set(name)
    asg = collision(vs, operator)
    rng = np.random.default_rng(seed)
    w, c = np.array(vs.weights, dtype=float), np.array(vs.velocities)
    cu = c @ (0.05 * rng.standard_normal(vs.D))
    f = w * (1 + 3 * cu + 4.5 * cu ** 2) * (1 + 0.03 * rng.standard_normal(vs.Q))
    force = np.array((2e-3, -1e-3, 3e-3)[:vs.D])
    values = {**dict(zip(map(str, asg.inputs), f)), **params, "wall": 0.0, "tau_wall": 1.0,
              **{"a" + k: vs.r * x for k, x in zip("xyz", force)}}
    env = {sp.Symbol(k, **kind): v for k, v in values.items() for kind in ({"real": True}, {"positive": True})}
    for symbol, expr in asg.assignments:
        env[symbol] = float(expr.xreplace(env))
    return f, c, w, force, np.array([env[o] for o in asg.outputs])


@pytest.mark.parametrize("name", ["d2q9", "d3q19", "d3q27"])
@pytest.mark.parametrize("operator", ["mrt", "mrt-les"])
def test_the_derivation_equals_the_moment_space_formula_site_by_site(name, operator):
    params = {"tau": 0.6, "omega_bulk": 1.3, "omega3": 0.8, "omega4": 1.4,
              **({"smagorinsky": 0.3} if operator == "mrt-les" else {})}
    f, c, w, force, got = _site(name, operator, params)
    want = oracle.collide(f.reshape(-1, 1), force=force, c=c, w=w, **params)[:, 0]
    assert np.abs(got - want).max() < 3e-15
    assert abs(got.sum() - f.sum()) < 1e-14 and np.abs(c.T @ (got - f) - f.sum() * force).max() < 1e-15


@pytest.mark.parametrize("name", ["d2q9", "d3q19"])
def test_every_rate_one_over_tau_is_bgk_with_guo_forcing(name):
    """MRT with S = I/tau is BGK with Guo's forcing, which is TRT with tau_minus = tau: Lambda = (tau - 1/2)^2."""
    tau = 0.7
    _, _, _, _, mrt = _site(name, "mrt", {"tau": tau, "omega_bulk": 1 / tau, "omega3": 1 / tau, "omega4": 1 / tau})
    _, _, _, _, trt = _site(name, "trt", {"tau": tau, "magic": (tau - 0.5) ** 2})
    assert np.abs(mrt - trt).max() < 1e-15
    _, _, _, _, other = _site(name, "mrt", {"tau": tau, "omega_bulk": 1.0, "omega3": 1 / tau, "omega4": 1 / tau})
    assert np.abs(other - trt).max() > 1e-8                     # the bulk rate is seen


def test_the_oracle_sees_each_rate_and_the_model():
    f0 = initial_state()
    base = oracle_run(f0, STEPS, "mrt")
    for key, value in (("tau", 0.6), ("omega_bulk", 1.0), ("omega3", 1.0), ("omega4", 1.0)):
        assert rel_err(oracle_run(f0, STEPS, "mrt", **{**PARAMS["mrt"], key: value}), base) > 1e-8, key
    assert rel_err(oracle_run(f0, STEPS, "mrt-les", **{**PARAMS["mrt"], "smagorinsky": 0.1}), base) > 1e-8


@pytest.mark.parametrize("runtime, layout, vl, operator, precision", list(_sweep()))
def test_kernels_equal_the_oracle(programs, runtime, layout, vl, operator, precision):
    f0 = initial_state()
    want = oracle_run(f0, STEPS, operator)
    prog = program(programs, runtime, layout, vl, operator, precision)
    tol = {"double": 1e-12, "mixed": 1e-6, "single": 2e-5}[precision]
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(STEPS):
        a, b = step_fused(prog, a, b, **PARAMS[operator], ax=R * FORCE[0], ay=R * FORCE[1])
    assert rel_err(prog.unpack(a), want) < tol


@pytest.mark.parametrize("velocity_set", ["d2q37", "d3q39"])
@pytest.mark.parametrize("operator", ["mrt", "mrt-les"])
def test_mrt_is_refused_on_thermal_sets_before_any_code(velocity_set, operator):
    with pytest.raises(SpecError, match=r"defined on the isothermal sets .* second order"):
        KernelSpec(backend="c", layout="aos", velocity_set=velocity_set, collision=operator).validate()
