"""TRT and the Smagorinsky subgrid model (bgk-les, regularized-les, trt-les) in 2D (D2Q9) on every
backend against the independent NumPy oracle lbgen.reference.trt_les (written from Ginzburg et al.
2008, Guo et al. 2002, Hou et al. 1996 and Yu et al. 2005, not from lbgen's derivation), to 1e-12;
C_s = 0 gives the bits of the operator without the model (strict builds, 2D and 3D); fused_tb equals
single steps; the thermal sets are refused for TRT before any work.  (3D: tests/backends/test_c3d.py
and test_gpu3d.py sweep the same operators against lbgen.reference.bulk3d.)"""
from __future__ import annotations

import numpy as np
import pytest

from helpers import emitted_d2q9_example, require, step_fused, step_unfused, time_blocks_and_single_steps
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.reference import trt_les as oracle

LX, LY = 6, 16
R = np.sqrt(3.0)                    # D2Q9: xi = sqrt(3) c (model units = R x lattice units)
FORCE = np.array([2e-4, -3e-4])     # lattice units
STEPS = 6
PARAMS = {"trt": {"tau": 0.8, "magic": 0.1}, "bgk-les": {"tau": 0.52, "smagorinsky": 0.17},
          "trt-les": {"tau": 0.52, "magic": 0.25, "smagorinsky": 0.15},
          "regularized-les": {"C1": 0.01, "smagorinsky": 0.12}}
#: the kernels' extra arguments (the regularized operator's C2, C3: no effect on D2Q9)
EXTRA = {"regularized-les": {"C2": 1e-3, "C3": 0.5}}
#: (runtime, layout, vl, operator, precision) of the fast suite; the whole sweep is slow
FAST = {("c", "aos", None, "trt", "double"), ("c", "caosoa", 8, "trt-les", "double"),
        ("c", "csoa", 4, "bgk-les", "double"), ("c", "soa", None, "regularized-les", "double"),
        ("c", "caosoa", 4, "trt", "single"), ("c", "soa", None, "trt-les", "mixed"), ("opencl", "csoa", 4, "trt-les", "double"),
        ("cuda-shim", "caosoa", 8, "trt", "double")}
LAYOUTS = [("aos", None), ("soa", None), ("csoa", 4), ("csoa", 8), ("caosoa", 4), ("caosoa", 8)]


def initial_state(seed=5):
    rng = np.random.default_rng(seed)
    rho = 1.0 + 0.05 * rng.standard_normal((LX, LY))
    u = 0.05 * rng.standard_normal((2, LX, LY))
    feq = oracle.equilibrium(rho, u, oracle.D2Q9_C, oracle.D2Q9_W)
    return feq * (1.0 + 0.02 * rng.standard_normal(feq.shape))


def oracle_run(f, steps, operator, force=FORCE, **params):
    for _ in range(steps):
        f = oracle.collide(oracle.stream(f, oracle.D2Q9_C), operator, force=force, **params)
    return f


def kernel_params(operator, force=FORCE, **params):
    return {**(params or PARAMS[operator]), **EXTRA.get(operator, {}), "ax": R * force[0], "ay": R * force[1]}


def run(prog, f0, steps, operator, fused=True, **params):
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(steps):
        a, b = (step_fused if fused else step_unfused)(prog, a, b, **kernel_params(operator, **params))
    return prog.unpack(a)


def program(programs, runtime, layout, vl, operator, precision="double", strict=False):
    if runtime == "opencl":
        from lbgen.backends import opencl
        try:
            opencl.available()
            opencl.select_device()
        except Exception as e:                                  # no OpenCL platform here
            require(False, str(e), "OpenCL")
    if runtime == "cuda-shim":
        from lbgen.backends.cuda import shim
        require(*shim.available(), "g++ for the CUDA host shim")
    return programs.of(runtime, (LX, LY), strict, layout=layout, vl=vl, precision=precision, velocity_set="d2q9",
                       collision=operator)


def _sweep():
    for runtime in ("c", "opencl", "cuda-shim"):
        for layout, vl in LAYOUTS:
            for operator in PARAMS:
                for precision in ("double", "single") + (("mixed",) if runtime == "c" else ()):
                    case = (runtime, layout, vl, operator, precision)
                    yield pytest.param(*case, marks=() if case in FAST else (pytest.mark.slow,),
                                       id=f"{runtime}-{layout}{vl or ''}-{operator}-{precision}")


def rel_err(got, want) -> float:
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def test_the_oracle_sees_each_operator_and_parameter():
    """The tolerance below can tell TRT from BGK, Lambda from another, the model on from off."""
    f0 = initial_state()
    base = oracle_run(f0, STEPS, "trt", tau=0.8, magic=0.1)
    assert rel_err(oracle_run(f0, STEPS, "trt", tau=0.8, magic=0.2), base) > 1e-6
    assert rel_err(oracle_run(f0, STEPS, "bgk", tau=0.8), base) > 1e-6
    assert rel_err(oracle_run(f0, STEPS, "trt-les", tau=0.8, magic=0.1, smagorinsky=0.1), base) > 1e-6
    assert np.array_equal(oracle_run(f0, STEPS, "trt-les", tau=0.8, magic=0.1, smagorinsky=0.0), base)


@pytest.mark.parametrize("runtime, layout, vl, operator, precision", list(_sweep()))
def test_kernels_equal_the_oracle(programs, runtime, layout, vl, operator, precision):
    f0 = initial_state()
    want = oracle_run(f0, STEPS, operator, **PARAMS[operator])
    prog = program(programs, runtime, layout, vl, operator, precision)
    tol = {"double": 1e-12, "mixed": 1e-6, "single": 2e-5}[precision]
    assert rel_err(run(prog, f0, STEPS, operator), want) < tol
    if runtime == "c" and precision == "double":
        assert rel_err(run(prog, f0, STEPS, operator, fused=False), want) < tol


@pytest.mark.parametrize("operator", ["bgk", "trt", "regularized"])
def test_smagorinsky_zero_gives_the_bits_of_the_operator_without_it(programs, operator):
    """tau_eff = (tau + sqrt(tau^2 + 0)) / 2 = tau exactly in IEEE arithmetic: strict builds agree bit for bit."""
    f0 = initial_state(9)
    base = {"bgk": {"tau": 0.7}, "trt": {"tau": 0.7, "magic": 0.2},
            "regularized": {"C1": 0.02, "C2": 1e-3, "C3": 0.5}}[operator]
    force = {"ax": R * FORCE[0], "ay": R * FORCE[1]}
    outs = []
    for name, extra in ((operator, {}), (operator + "-les", {"smagorinsky": 0.0})):
        prog = program(programs, "c", "caosoa", 4, name, strict=True)
        a, b = prog.pack(f0), prog.allocate()
        for _ in range(STEPS):
            a, b = step_fused(prog, a, b, **base, **extra, **force)
        outs.append(prog.unpack(a))
    assert np.array_equal(outs[0], outs[1])
    assert not np.array_equal(outs[0], f0)


def test_smagorinsky_zero_gives_the_bits_in_3d(programs):
    from support3d import random_state
    f0 = random_state("d3q19", shape=(4, 4, 8))
    outs = []
    for name, extra in (("trt", {}), ("trt-les", {"smagorinsky": 0.0})):
        prog = programs.of("c", (4, 4, 8), True, layout="caosoa", vl=4, velocity_set="d3q19", collision=name)
        a, b = prog.pack(f0), prog.allocate()
        for _ in range(3):
            prog.step_halo(a)
            a, b = prog.step(a, b, {"tau": 0.6, "magic": 0.3, **extra, "ax": 1e-4, "ay": 0.0, "az": -2e-4})
        outs.append(prog.unpack(a))
    assert np.array_equal(outs[0], outs[1])


def test_time_blocks_of_trt_les_equal_single_steps_bit_for_bit(programs):
    prog = program(programs, "c", "caosoa", 4, "trt-les", strict=True)
    f0 = initial_state(3)
    params = kernel_params("trt-les")
    out = time_blocks_and_single_steps(prog, f0, params)
    assert np.array_equal(out[0], out[1]) and not np.array_equal(out[0], f0)


@pytest.mark.parametrize("velocity_set", ["d2q37", "d2v17", "d3q39", "d3q103"])
@pytest.mark.parametrize("operator", ["trt", "trt-les"])
def test_trt_is_refused_on_thermal_sets_before_any_code(velocity_set, operator):
    with pytest.raises(SpecError, match=r"defined on the isothermal sets .* heat flux"):
        KernelSpec(backend="c", layout="aos", velocity_set=velocity_set, collision=operator).validate()


def test_trt_is_refused_on_thermal_sets_by_a_run_description():
    from lbgen.run.config import ConfigError, RunConfig
    with pytest.raises(ConfigError, match="trt operator is defined on the isothermal sets"):
        RunConfig.build("shear-wave", ("test", {"velocity_set": "d2q37", "collision": "trt"}))
    cfg = RunConfig.build("shear-wave", ("test", {"velocity_set": "d2q9", "collision": "trt", "magic": 0.25}))
    assert cfg.parameters == {"tau": 0.8, "magic": 0.25}


@pytest.mark.parametrize("bad, message", [({"magic": 0.0}, "magic=0.0 must be > 0"),
                                          ({"smagorinsky": -0.1}, "smagorinsky=-0.1 must be >= 0 and < 1"),
                                          ({"tau": 0.5}, "tau=0.5 must be > 0.5")])
def test_bad_parameters_are_refused_by_name(bad, message):
    from lbgen.model.operators import ParameterError, operator
    with pytest.raises(ParameterError, match=message):
        operator("trt-les").check(bad)


@pytest.mark.slow
def test_emitted_trt_les_example_builds_and_reproduces_the_oracle(tmp_path):
    """lbgen emit carries the new parameters (the params struct's magic and smagorinsky, from the records)
    and the emitted example (a D2Q9 shear wave under the force (0, -1e-5), model units) equals the oracle."""
    spec = KernelSpec(layout="caosoa", vl=8, velocity_set="d2q9", collision="trt-les")
    header, data, (rho, u, a) = emitted_d2q9_example(tmp_path, spec, R)
    lx, ly, steps = 16, 64, 20
    assert "double magic;" in header and "double smagorinsky;" in header
    f = oracle.equilibrium(rho, u + 0.5 * a[:, None, None], oracle.D2Q9_C, oracle.D2Q9_W)
    f = oracle_run(f, steps, "trt-les", force=a, tau=0.8, magic=3 / 16, smagorinsky=0.1)
    rho_f, u_f = oracle.moments(f, oracle.D2Q9_C)
    want = [rho_f, R * (u_f[0] - a[0] / 2), R * (u_f[1] - a[1] / 2)]
    for column, field in zip((2, 3, 4), want):
        assert np.abs(data[:, column].reshape(lx, ly) - field).max() <= 1e-12


def test_lbgen_info_counts_the_new_operators_and_names_those_a_set_refuses():
    import json
    from click.testing import CliRunner
    from lbgen.cli.main import main
    d3 = json.loads(CliRunner().invoke(main, ["info", "--json", "--velocity-set", "d3q19"]).output)
    ops = d3["operators"]
    assert ops["trt"]["flops_per_site"] > ops["bgk"]["flops_per_site"] > 0
    assert set(d3["refused_operators"]) == {"cumulant", "cumulant-les", "central", "kbc"}
    assert "D3Q27 only" in d3["refused_operators"]["cumulant"] and "gained energy" in d3["refused_operators"]["central"]
    assert ops["mrt-les"]["flops_per_site"] > ops["mrt"]["flops_per_site"] > ops["bgk"]["flops_per_site"]
    assert ops["trt-les"]["parameters"][:3] == ["tau", "magic", "smagorinsky"]
    result = CliRunner().invoke(main, ["info", "--json", "--velocity-set", "d2q37"])
    assert result.exit_code == 0
    thermal = json.loads(result.output)
    assert set(thermal["refused_operators"]) == {"trt", "trt-les", "mrt", "mrt-les", "cumulant", "central", "cumulant-les",
                                               "kbc"}
    assert "trt" not in thermal["operators"]
    assert "heat flux" in thermal["refused_operators"]["trt"] and "product form" in thermal["refused_operators"]["kbc"]


@pytest.mark.parametrize("operator, params", [
    ("bgk-les", {"tau": 0.52, "smagorinsky": 0.3}),
    ("regularized-les", {"C1": 0.02, "C2": 0.01, "C3": 0.5, "smagorinsky": 0.3})])
def test_the_subgrid_model_on_the_thermal_d2q37_equals_the_oracle(programs, operator, params):
    """D2Q37 (fourth order, T from the moments: c_s^2 = T / r^2 in the closed form) against
    lbgen.reference.bulk (its BGK and regularized operators with bulk.subgrid_tau's relaxation time)."""
    from lbgen.reference import bulk
    from lbgen.reference.verify import initial_state as thermal_state
    f0 = thermal_state(LX, 48, seed=4)
    force = (2e-4, -3e-4)                                            # model units
    want = f0
    for _ in range(STEPS):
        want = bulk.collide(bulk.propagate(want), operator, force=force, **params)
    plain = f0
    for _ in range(STEPS):
        plain = bulk.collide(bulk.propagate(plain), operator.replace("-les", ""), force=force,
                             **{k: v for k, v in params.items() if k != "smagorinsky"})
    assert rel_err(plain, want) > 1e-5                              # the model changes the run here (7e-3, 8e-4)
    prog = programs.of("c", (LX, 48), False, layout="csoa", vl=4, velocity_set="d2q37", collision=operator)
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(STEPS):
        a, b = step_fused(prog, a, b, **params, ax=force[0], ay=force[1])
    assert rel_err(prog.unpack(a), want) < 1e-12
