"""The entropic KBC-N4 operator (lbgen.model.kbc; Karlin, Boesch & Chikatamarla, PRE 90 (2014) 031302(R); Boesch,
Chikatamarla & Karlin, PRE 92 (2015) 043309) in 2D (D2Q9) on every backend, layout and precision against the
independent NumPy oracle lbgen.reference.kbc (moment matrix and projectors with numpy.linalg, the equilibrium
and the source population by population), to 1e-12 in double; the derivation against the oracle site by site
on D2Q9 and D3Q27 (with a force); the stabiliser's limits; the sets it is not defined on refused in words.
(3D kernels: tests/backends/test_c3d.py and test_gpu3d.py sweep it against lbgen.reference.bulk3d.)"""
from __future__ import annotations

import numpy as np
import pytest

from helpers import step_fused, step_unfused, time_blocks_and_single_steps
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.reference import kbc as oracle
from lbgen.reference.trt_les import D2Q9_C
from test_cumulant import FORCE, R, STEPS, initial_state, oracle_runner, rel_err, sweep
from test_mrt import _site
from test_trt_les import program

PARAMS = {"tau": 0.56}
#: (runtime, layout, vl, precision) of the fast suite; the whole sweep is slow
FAST = {("c", "csoa", 4, "double"), ("opencl", "caosoa", 8, "double"), ("cuda-shim", "soa", None, "double")}

oracle_run = oracle_runner(oracle, PARAMS)


@pytest.mark.parametrize("name", ["d2q9", "d3q27"])
@pytest.mark.parametrize("tau", [0.6, 0.5005])
def test_the_derivation_equals_the_papers_formulas_site_by_site(name, tau):
    f, c, w, force, got = _site(name, "kbc", {"tau": tau})
    want, gamma = oracle.collide(f.reshape(-1, 1), force=force, c=c, w=w, tau=tau, gamma=True)
    assert np.abs(got - want[:, 0]).max() < 3e-15
    assert abs(gamma[0] - 2) > 0.1           # the stabiliser is active at this site (not BGK)
    # mass kept, momentum gains rho a
    assert abs(got.sum() - f.sum()) < 1e-14 and np.abs(c.T @ (got - f) - f.sum() * force).max() < 1e-15


def test_the_oracle_is_bgk_with_guo_forcing_where_gamma_is_2():
    """tau = 1 (beta = 1/2) makes gamma = 1/beta = 2 whatever the state (the paper's Eq. 12): KBC is then BGK with
    Guo's forcing on the product-form equilibrium, f' = f - (f + S/2 - f_eq)/tau + S (Guo, Zheng & Shi 2002);
    at tau = 0.6 it is not."""
    f = initial_state()
    rho = f.sum(axis=0)
    u = (np.einsum("ia,i...->a...", D2Q9_C.astype(float), f) + rho * FORCE[:, None, None] / 2) / rho
    feq = oracle.equilibrium(rho, u, D2Q9_C)
    eps = 1e-7                                         # S = a . d f_eq / du by central differences
    S = sum(FORCE[k] * (oracle.equilibrium(rho, u + eps * np.eye(2)[k][:, None, None], D2Q9_C)
                        - oracle.equilibrium(rho, u - eps * np.eye(2)[k][:, None, None], D2Q9_C)) / (2 * eps)
            for k in range(2))
    post, gamma = oracle.collide(f, force=FORCE, tau=1.0, gamma=True)
    assert np.abs(gamma - 2).max() < 1e-12
    assert np.abs(post - (f - (f + S / 2 - feq) + S)).max() < 1e-12
    _, gamma = oracle.collide(f, force=FORCE, tau=0.6, gamma=True)
    assert np.abs(gamma - 2).min() > 1e-3


@pytest.mark.parametrize("runtime, layout, vl, precision", list(sweep(FAST)))
def test_kernels_equal_the_oracle(programs, runtime, layout, vl, precision):
    f0 = initial_state()
    want = oracle_run(f0, STEPS)
    prog = program(programs, runtime, layout, vl, "kbc", precision)
    tol = {"double": 1e-12, "mixed": 1e-6, "single": 2e-5}[precision]
    a, b = prog.pack(f0), prog.allocate()
    for _ in range(STEPS):
        a, b = step_fused(prog, a, b, **PARAMS, ax=R * FORCE[0], ay=R * FORCE[1])
    assert rel_err(prog.unpack(a), want) < tol
    if runtime == "c" and precision == "double":                  # the collide + propagate kernels too
        a, b = prog.pack(f0), prog.allocate()
        for _ in range(STEPS):
            a, b = step_unfused(prog, a, b, **PARAMS, ax=R * FORCE[0], ay=R * FORCE[1])
        assert rel_err(prog.unpack(a), want) < tol
        # and not BGK: the same steps with lbgen's bgk differ beyond the tolerance
        bgk = program(programs, runtime, layout, vl, "bgk", precision)
        a, b = bgk.pack(f0), bgk.allocate()
        for _ in range(STEPS):
            a, b = step_fused(bgk, a, b, **PARAMS, ax=R * FORCE[0], ay=R * FORCE[1])
        assert rel_err(bgk.unpack(a), want) > 1e-6


def test_time_blocks_equal_single_steps_bit_for_bit(programs):
    prog = program(programs, "c", "csoa", 4, "kbc", strict=True)
    f0 = initial_state(3)
    params = {**PARAMS, "ax": R * FORCE[0], "ay": R * FORCE[1]}
    out = time_blocks_and_single_steps(prog, f0, params)
    assert np.array_equal(out[0], out[1]) and not np.array_equal(out[0], f0)


def test_a_run_description_takes_kbc_on_d2q9_and_d3q27_only():
    from lbgen.run.config import RunConfig
    from lbgen.run.options import ConfigError
    cfg = RunConfig.build("taylor-green", ("test", {"velocity_set": "d3q27", "collision": "kbc", "tau": 0.51}))
    assert cfg.parameters == {"tau": 0.51}
    with pytest.raises(ConfigError, match=r"kbc operator is defined on D2Q9, D3Q27 only, not on D3Q19: .*corner"):
        RunConfig.build("taylor-green", ("test", {"velocity_set": "d3q19", "collision": "kbc"}))
    with pytest.raises(ConfigError, match=r"--omega3 has no effect .*not of the kbc operator \(its parameters: tau\)"):
        RunConfig.build("taylor-green", ("test", {"velocity_set": "d3q27", "collision": "kbc", "omega3": 1.2}))


@pytest.mark.parametrize("velocity_set", ["d2q37", "d3q39"])
def test_kbc_is_refused_on_thermal_sets_before_any_code(velocity_set):
    with pytest.raises(SpecError, match=r"kbc operator is defined on the isothermal sets .*product form"):
        KernelSpec(backend="c", layout="aos", velocity_set=velocity_set, collision="kbc").validate()


def test_kbc_is_refused_on_d3q19_before_any_code():
    with pytest.raises(SpecError, match=r"kbc operator is defined on D2Q9, D3Q27 only, not on D3Q19: .*lacks the corner"):
        KernelSpec(backend="c", layout="aos", velocity_set="d3q19", collision="kbc").validate()


@pytest.mark.slow
def test_emitted_kbc_example_builds_and_reproduces_the_oracle(tmp_path):
    """lbgen emit carries the operator (the params struct's tau, from the record) and the emitted example (a D2Q9
    shear wave under the force (0, -1e-5), model units) equals the oracle to 1e-12."""
    from helpers import emitted_d2q9_example
    from lbgen.reference.trt_les import D2Q9_W, equilibrium, moments
    spec = KernelSpec(layout="soa", velocity_set="d2q9", collision="kbc")
    header, data, (rho, u, a) = emitted_d2q9_example(tmp_path, spec, R)
    lx, ly, steps = 16, 64, 20
    assert "double tau;" in header and "omega3" not in header and "KBC" in header
    f = equilibrium(rho, u + 0.5 * a[:, None, None], D2Q9_C, D2Q9_W)
    f = oracle_run(f, steps, force=a, tau=0.8)
    rho_f, u_f = moments(f, D2Q9_C)
    want = [rho_f, R * (u_f[0] - a[0] / 2), R * (u_f[1] - a[1] / 2)]
    for column, field in zip((2, 3, 4), want):
        assert np.abs(data[:, column].reshape(lx, ly) - field).max() <= 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("velocity_set, layout, vl", [("d2q9", "caosoa", 32), ("d3q27", "soa", None)])
def test_nvcc_compiles_the_kbc_kernels(velocity_set, layout, vl):
    """The .cu text the shim runs above also compiles with nvcc for sm_90: every kernel, registers within 255."""
    from helpers import require
    from lbgen.backends.cuda import nvcc
    from lbgen.codegen.render import generate
    require(*nvcc.available(), "nvcc")
    src = generate(KernelSpec(backend="cuda", layout=layout, vl=vl, velocity_set=velocity_set, collision="kbc"))
    res, = nvcc.compile_many([(src, "sm_90")])
    assert res.binary and "lbgen_fused" in res.kernels and "lbgen_collide" in res.kernels, res.log
    assert all(0 < r.registers <= 255 for r in res.kernels.values())


@pytest.mark.parametrize("velocity_set", ["d2q9", "d3q27"])
def test_lbgen_verify_checks_kbc_against_its_oracle(velocity_set):
    """`lbgen verify --collision kbc` runs the kernels against lbgen.reference.kbc (through bulk.py / bulk3d.py)."""
    from click.testing import CliRunner
    from lbgen.cli.main import main
    r = CliRunner().invoke(main, ["verify", "--velocity-set", velocity_set, "--collision", "kbc", "--backends", "c",
                                  "--layouts", "soa", "--steps", "2"])
    assert r.exit_code == 0, r.output
    rows = [line.split() for line in r.output.splitlines() if " kbc " in line]
    assert len(rows) == 2 and all(row[-1] == "ok" and float(row[5]) < 1e-13 for row in rows), r.output
