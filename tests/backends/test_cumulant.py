"""The cumulant operator (Geier, Schoenherr, Pasquali & Krafczyk, Comput. Math. Appl. 70 (2015) 507)
in 2D (D2Q9) on every backend, layout and precision against the independent NumPy oracle
lbgen.reference.cumulant (the paper's formulas, not lbgen's derivation), to 1e-12 in double;
the derivation against the oracle site by site in 2D and 3D (every rate, with a force); fused_tb
equals single steps; the sets it is not defined on are refused in words before any code.
(3D kernels: tests/backends/test_c3d.py and test_gpu3d.py sweep it against lbgen.reference.bulk3d.)"""
from __future__ import annotations

import numpy as np
import pytest
from support3d import SAMPLED_LAYOUTS

from helpers import emitted_d2q9_example, step_fused, step_unfused, time_blocks_and_single_steps
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.reference import cumulant as oracle
from test_trt_les import program as trt_program

LX, LY = 6, 16
R = np.sqrt(3.0)                    # D2Q9: xi = sqrt(3) c (model units = R x lattice units)
FORCE = np.array([2e-4, -3e-4])     # lattice units
STEPS = 6
PARAMS = {"tau": 0.56, "omega_bulk": 1.4, "omega3": 0.9, "omega4": 1.2, "cumulant_limiter": 0.0}
#: (runtime, layout, vl, precision) of the fast suite; the whole sweep is slow
FAST = {("c", "caosoa", 4, "double"), ("c", "soa", None, "single"), ("opencl", "aos", None, "double"),
        ("cuda-shim", "csoa", 8, "double")}
LAYOUTS = [("aos", None), ("soa", None), ("csoa", 4), ("csoa", 8), ("caosoa", 4), ("caosoa", 8)]


def initial_state(seed=5):
    from lbgen.reference.trt_les import D2Q9_C, D2Q9_W, equilibrium
    rng = np.random.default_rng(seed)
    rho = 1.0 + 0.05 * rng.standard_normal((LX, LY))
    u = 0.05 * rng.standard_normal((2, LX, LY))
    feq = equilibrium(rho, u, D2Q9_C, D2Q9_W)
    return feq * (1.0 + 0.02 * rng.standard_normal(feq.shape))


def oracle_runner(module, params):
    """steps of an oracle module's collide (its ``params`` under the caller's) after D2Q9 streaming."""
    def run(f, steps, force=FORCE, **extra):
        for _ in range(steps):
            f = module.collide(oracle.stream(f, oracle.D2Q9_C), force=force, **{**params, **extra})
        return f
    return run


oracle_run = oracle_runner(oracle, PARAMS)


def kernel_params(force=FORCE, **params):
    return {**PARAMS, **params, "ax": R * force[0], "ay": R * force[1]}


def run(prog, f0, steps, fused=True, **params):
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(steps):
        a, b = (step_fused if fused else step_unfused)(prog, a, b, **kernel_params(**params))
    return prog.unpack(a)


def program(programs, runtime, layout, vl, precision="double", strict=False):
    """The D2Q9 cumulant program of a runtime (test_trt_les's, whose lattice this is)."""
    return trt_program(programs, runtime, layout, vl, "cumulant", precision, strict)


def sweep(fast):
    """The (runtime, layout, vl, precision) cases of an operator's D2Q9 sweep: those in ``fast`` in the
    fast suite, the other sampled layouts' slow."""
    for runtime in ("c", "opencl", "cuda-shim"):
        for layout, vl in LAYOUTS:
            for precision in ("double", "single") + (("mixed",) if runtime == "c" else ()):
                case = (runtime, layout, vl, precision)
                if case not in fast and (layout, vl) not in SAMPLED_LAYOUTS:   # the layouts: bgk's sweeps
                    continue
                yield pytest.param(*case, marks=() if case in fast else (pytest.mark.slow,),
                                   id=f"{runtime}-{layout}{vl or ''}-{precision}")


def rel_err(got, want) -> float:
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def _site_values(name, seed, params, force, specialised=False):
    """The derived collision (lbgen.model.collision) evaluated at one random site, and the oracle's;
    ``specialised``: the list derived at omega3 = omega4 = 1 (the one fused takes there)."""
    import sympy as sp
    from lbgen.model.derived import collide
    from lbgen.model.velocity_set import velocity_set
    vs = velocity_set(name)
    asg = collide("cumulant", name, specialised)
    rng = np.random.default_rng(seed)
    w, c = np.array(vs.weights, dtype=float), np.array(vs.velocities)
    cu = c @ (0.06 * rng.standard_normal(vs.D))
    f = w * (1 + 3 * cu + 4.5 * cu ** 2) * (1 + 0.03 * rng.standard_normal(vs.Q))
    values = {**dict(zip(map(str, asg.inputs), f)), "cumulant_limiter": 0.0, **params, "wall": 0.0, "tau_wall": 1.0,
              **{"a" + k: vs.r * x for k, x in zip("xyz", force)}}
    env = {sp.Symbol(k, **kind): v for k, v in values.items() for kind in ({"real": True}, {"positive": True})}
    for symbol, expr in asg.assignments:
        env[symbol] = float(expr.xreplace(env))
    got = np.array([env[o] for o in asg.outputs])
    want = oracle.collide(f.reshape(-1, 1), force=np.asarray(force), c=c, w=w, **params)[:, 0]
    return f, got, want


@pytest.mark.parametrize("name", ["d2q9", "d3q27"])
@pytest.mark.parametrize("rates", [(1.0, 1.0, 1.0, 0.0), (1.3, 0.8, 1.4, 0.0), (1.3, 0.8, 1.4, 1e-2),
                                   (1.0, 1.2, 1.0, 1e-4)])
def test_the_derivation_equals_the_papers_formulas_site_by_site(name, rates):
    """lbgen.model.cumulant (chimera, log series) = lbgen.reference.cumulant (definition, typed formulas), with
    and without the limiter (the last rate: lambda)."""
    params = {"tau": 0.62, **dict(zip(("omega_bulk", "omega3", "omega4", "cumulant_limiter"), rates))}
    force = (2e-3, -1e-3, 3e-3)[:{"d2q9": 2, "d3q27": 3}[name]]
    f, got, want = _site_values(name, 2, params, force)
    assert np.abs(got - want).max() < 1e-15 * 30
    assert abs(got.sum() - f.sum()) < 1e-15 * 10                      # mass kept, momentum gains rho a
    assert np.abs(np.array(_velocities(name)).T @ (got - f) - f.sum() * np.asarray(force)).max() < 1e-15 * 10


#: the rates at which the C fused sweeps take the specialised site function: the record's defaults
DEFAULT_RATES = {"omega3": 1.0, "omega4": 1.0}


@pytest.mark.parametrize("name", ["d2q9", "d3q27"])
@pytest.mark.parametrize("limiter", [0.0, 1e-2])
def test_the_specialised_list_equals_the_papers_formulas_with_fewer_operations(name, limiter):
    """The collision fused takes at omega3 = omega4 = 1 (lbgen.model.collision.collision(specialised=True)):
    equal to the oracle's operator at those rates, with the limiter too (its rate is then 1 whatever lambda:
    Geier, Pasquali & Schoenherr 2017, Eqs. 116-123), with no |x| and without the cumulants of order >= 3
    (they relax to 0 there): the same parameters, fewer operations than the general list."""
    import sympy as sp
    from lbgen.model.derived import collide
    params = {"tau": 0.62, "omega_bulk": 1.3, **DEFAULT_RATES, "cumulant_limiter": limiter}
    force = (2e-3, -1e-3, 3e-3)[:{"d2q9": 2, "d3q27": 3}[name]]
    f, got, want = _site_values(name, 4, params, force, specialised=True)
    assert np.abs(got - want).max() < 1e-15 * 30
    full, special = collide("cumulant", name), collide("cumulant", name, specialised=True)
    assert any(e.has(sp.Abs) for _, e in full.assignments) and not any(e.has(sp.Abs) for _, e in special.assignments)
    assert special.flops < {"d2q9": 0.9, "d3q27": 0.75}[name] * full.flops and special.parameters == full.parameters


def test_only_an_operator_with_specialised_parameters_has_a_specialised_list():
    from lbgen.model.collision import collision
    from lbgen.model.velocity_set import velocity_set
    with pytest.raises(ValueError, match="operator 'bgk' has no parameters a specialised collision is derived at"):
        collision(velocity_set("d2q9"), "bgk", specialised=True)


def test_fused_at_the_default_rates_takes_the_specialised_site_function(programs):
    """The C fused (and fused_tb) kernel branches once per call on omega3 == 1 && omega4 == 1 to a sweep calling
    <P>_collide_site_special_ (no fabs, no cumulant of order >= 3).  Built plainly, one step of it equals one of
    collide (the general site function) after propagate to 1e-15 per population but not bit for bit (measured:
    1.7e-16, one ulp, on 2.5 % of them: its sums have fewer terms), and the oracle to 1e-12 after 6; a strict build
    (-DLBGEN_STRICT) keeps the general function: fused gives collide's bits.  With omega4 = 0.9 fused takes the
    general one in both builds (collide's bits), and fused_tb follows fused."""
    import re
    import subprocess
    fast, strict = program(programs, "c", "caosoa", 4), program(programs, "c", "caosoa", 4, strict=True)
    text = fast.source.files[fast.source.main_file]
    special = re.search(r"void lbgen_collide_site_special_\(.*?\n}", text, re.S).group(0)
    full = re.search(r"void lbgen_collide_site\(.*?\n}", text, re.S).group(0)
    assert "fabs" in full and "fabs" not in special
    test = r"if \(par != NULL && LBGEN_SPECIALISE && par->omega3 == 1\.0 && par->omega4 == 1\.0\)\s*"
    assert re.search(test + r"lbgen_fused_special_\(", text) and re.search(test + r"return lbgen_fused_tb_special_\(", text)
    symbols = subprocess.run(["nm", str(fast.library_path)], capture_output=True, text=True).stdout
    assert "lbgen_fused_special_" in symbols and "lbgen_fused_tb_special_" in symbols
    f0 = initial_state(7)
    runs = {}
    for omega4 in (1.0, 0.9):
        rates = {"omega3": 1.0, "omega4": omega4}
        one, separate = run(fast, f0, 1, **rates), run(fast, f0, 1, fused=False, **rates)
        assert np.array_equal(one, separate) is (omega4 != 1)            # the specialised function at the defaults
        assert np.max(np.abs(one - separate) / separate) <= 1e-15
        exact = strict, f0, 1
        assert np.array_equal(run(*exact, **rates), run(*exact, fused=False, **rates))   # strict: the general one
        fused = run(fast, f0, STEPS, **rates)
        assert rel_err(fused, oracle_run(f0, STEPS, **rates)) < 1e-12
        blocked, single = time_blocks_and_single_steps(fast, f0, kernel_params(**rates, cumulant_limiter=1e-2))
        assert np.array_equal(blocked, single) and np.array_equal(single, time_blocks_and_single_steps(
            fast, f0, kernel_params(**rates))[0])      # omega3 = 1: the limiter changes nothing
        runs[omega4] = fused
    assert rel_err(runs[0.9], runs[1.0]) > 1e-9


def test_fused_3d_at_the_default_rates_takes_the_specialised_site_function():
    """D3Q27: one step of fused at omega3 = omega4 = 1 (the specialised site function) equals one of propagate +
    collide (the general one) to 1e-15 per population, not bit for bit; a strict build gives collide's bits
    (the general function), as at omega4 = 0.9 in both builds; three steps follow the oracle
    (lbgen.reference.bulk3d) to 1e-12 at both rates."""
    from support3d import R as R3, program3d, random_state
    from lbgen.reference import bulk3d
    f0, force = random_state("d3q27", seed=9), np.array([1e-4, -2e-4, 3e-4])
    runs = {}
    for omega4 in (1.0, 0.9):
        rates = {"tau": 0.56, "omega_bulk": 1.3, "omega3": 1.0, "omega4": omega4, "cumulant_limiter": 0.0}
        params = {**rates, **dict(zip(("ax", "ay", "az"), R3 * force))}
        out = {}
        for strict in (False, True):
            prog = program3d("caosoa", 8, "d3q27", "cumulant", strict=strict)
            for fused, steps in ((True, 1), (False, 1), (True, 3)):
                f, g = prog.pack(f0), prog.allocate()
                for _ in range(steps):
                    prog.step_halo(f)
                    f, g = prog.step(f, g, params, fused=fused)
                out[strict, fused, steps] = prog.unpack(f)
        one, separate = out[False, True, 1], out[False, False, 1]
        assert np.array_equal(one, separate) is (omega4 != 1)
        assert np.max(np.abs(one - separate) / separate) <= 1e-15
        assert np.array_equal(out[True, True, 1], out[True, False, 1])
        want = bulk3d.run(f0.copy(), 3, "cumulant", bulk3d.lattice("d3q27"), None, force=force, **rates)
        assert rel_err(out[False, True, 3], want) < 1e-12
        runs[omega4] = out[False, True, 3]
    assert rel_err(runs[0.9], runs[1.0]) > 1e-9


def _velocities(name):
    from lbgen.model.velocity_set import velocity_set
    return velocity_set(name).velocities


def test_the_oracle_sees_each_rate():
    """The tolerance below can tell each rate and the force apart (each changes the run by far more)."""
    f0 = initial_state()
    base = oracle_run(f0, STEPS)
    for key, value in (("tau", 0.6), ("omega_bulk", 1.0), ("omega3", 1.0), ("omega4", 1.0)):
        assert rel_err(oracle_run(f0, STEPS, **{key: value}), base) > 1e-8, key
    assert rel_err(oracle_run(f0, STEPS, force=2 * FORCE), base) > 1e-8
    assert rel_err(oracle_run(f0, STEPS, cumulant_limiter=1e-2), base) > 1e-8


def test_the_limiter_changes_the_bits_and_the_kernels_follow_the_oracle(programs):
    """Geier, Pasquali & Schoenherr 2017's limiter (lambda = 1e-2, VirtualFluids' value; 1e-4) on the C kernel (the fast
    suite's program): equal to the oracle to 1e-12, different from the run without it beyond that; lambda = 0
    is the operator without it (the oracle's third order without any limiter code)."""
    prog = program(programs, "c", "caosoa", 4)
    f0 = initial_state()
    off = run(prog, f0, STEPS)
    for lam in (1e-2, 1e-4):
        on = run(prog, f0, STEPS, cumulant_limiter=lam)
        assert rel_err(on, oracle_run(f0, STEPS, cumulant_limiter=lam)) < 1e-12
        assert rel_err(on, off) > 1e-9
    assert rel_err(off, oracle_run(f0, STEPS)) < 1e-12


def test_a_negative_limiter_is_refused_by_name():
    from lbgen.model.operators import ParameterError, operator
    with pytest.raises(ParameterError, match=r"cumulant_limiter=-0.01 must be >= 0 .*limiter lambda"):
        operator("cumulant").check({"cumulant_limiter": -0.01})


@pytest.mark.parametrize("runtime, layout, vl, precision", list(sweep(FAST)))
def test_kernels_equal_the_oracle(programs, runtime, layout, vl, precision):
    f0 = initial_state()
    want = oracle_run(f0, STEPS)
    prog = program(programs, runtime, layout, vl, precision)
    tol = {"double": 1e-12, "mixed": 1e-6, "single": 2e-5}[precision]
    assert rel_err(run(prog, f0, STEPS), want) < tol
    if runtime == "c" and precision == "double":
        assert rel_err(run(prog, f0, STEPS, fused=False), want) < tol


def test_time_blocks_equal_single_steps_bit_for_bit(programs):
    prog = program(programs, "c", "caosoa", 4, strict=True)
    f0 = initial_state(3)
    params = kernel_params()
    out = time_blocks_and_single_steps(prog, f0, params)
    assert np.array_equal(out[0], out[1]) and not np.array_equal(out[0], f0)


@pytest.mark.parametrize("velocity_set, message", [
    ("d3q19", "defined on D2Q9, D3Q27 only, not on D3Q19: the chimera transform needs every velocity"),
    ("d2q37", "defined on the isothermal sets"), ("d3q39", "defined on the isothermal sets")])
def test_the_sets_it_is_not_defined_on_are_refused_in_words(velocity_set, message):
    with pytest.raises(SpecError, match=message):
        KernelSpec(backend="c", layout="aos", velocity_set=velocity_set, collision="cumulant").validate()


def test_a_run_description_refuses_d3q19_and_takes_the_rates():
    from lbgen.run.config import ConfigError, RunConfig
    with pytest.raises(ConfigError, match="cumulant operator is defined on D2Q9, D3Q27 only"):
        RunConfig.build("taylor-green", ("test", {"velocity_set": "d3q19", "collision": "cumulant"}))
    cfg = RunConfig.build("shear-wave", ("test", {"velocity_set": "d2q9", "collision": "cumulant", "omega3": 1.5}))
    assert cfg.parameters == {"tau": 0.8, "omega_bulk": 1.0, "omega3": 1.5, "omega4": 1.0, "cumulant_limiter": 0.0}


@pytest.mark.parametrize("bad, message", [({"omega3": 2.0}, "omega3=2.0 must be > 0 and < 2"),
                                          ({"omega_bulk": 0.0}, "omega_bulk=0.0 must be > 0 and < 2"),
                                          ({"tau": 0.5}, "tau=0.5 must be > 0.5")])
def test_bad_rates_are_refused_by_name(bad, message):
    from lbgen.model.operators import ParameterError, operator
    with pytest.raises(ParameterError, match=message):
        operator("cumulant").check(bad)


@pytest.mark.slow
def test_emitted_cumulant_example_builds_and_reproduces_the_oracle(tmp_path):
    """lbgen emit carries the rates (the params struct's omega_bulk, omega3, omega4, from the record) and the
    emitted example (a D2Q9 shear wave under the force (0, -1e-5), model units) equals the oracle."""
    from lbgen.reference.trt_les import equilibrium, moments
    spec = KernelSpec(layout="caosoa", vl=8, velocity_set="d2q9", collision="cumulant")
    header, data, (rho, u, a) = emitted_d2q9_example(tmp_path, spec, R)
    lx, ly, steps = 16, 64, 20
    assert all(f"double {n};" in header for n in ("omega_bulk", "omega3", "omega4"))
    f = equilibrium(rho, u + 0.5 * a[:, None, None], oracle.D2Q9_C, oracle.D2Q9_W)
    f = oracle_run(f, steps, force=a, tau=0.8, omega_bulk=1.0, omega3=1.0, omega4=1.0)
    rho_f, u_f = moments(f, oracle.D2Q9_C)
    want = [rho_f, R * (u_f[0] - a[0] / 2), R * (u_f[1] - a[1] / 2)]
    for column, field in zip((2, 3, 4), want):
        assert np.abs(data[:, column].reshape(lx, ly) - field).max() <= 1e-12
