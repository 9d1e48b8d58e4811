"""The central-moment MRT (lbgen.model.central) in 2D (D2Q9) on every backend, layout and precision against
the independent NumPy oracle lbgen.reference.central (each site's transform matrix from its definition,
solved with numpy), to 1e-12 in double; the derivation against the oracle site by site on D2Q9, D3Q19 and
D3Q27 (every rate, with a force); the basis of each set; the sets it is not defined on refused in words.
(3D kernels: tests/backends/test_c3d.py and test_gpu3d.py sweep it against lbgen.reference.bulk3d.)"""
from __future__ import annotations

import numpy as np
import pytest

from helpers import emitted_d2q9_example, step_fused, step_unfused, time_blocks_and_single_steps
from lbgen.codegen.spec import KernelSpec, SpecError
from lbgen.reference import central as oracle
from lbgen.reference.trt_les import D2Q9_C, stream
from test_cumulant import FORCE, R, STEPS, initial_state, oracle_runner, rel_err, sweep
from test_mrt import _site
from test_trt_les import program

PARAMS = {"tau": 0.56, "omega_bulk": 1.4, "omega3": 0.9, "omega4": 1.2}
#: (runtime, layout, vl, precision) of the fast suite; the whole sweep is slow
FAST = {("c", "csoa", 4, "double"), ("opencl", "caosoa", 8, "double"), ("cuda-shim", "soa", None, "double")}

oracle_run = oracle_runner(oracle, PARAMS)


@pytest.mark.parametrize("name, count", [("d2q9", 9), ("d3q19", 19), ("d3q27", 27)])
def test_the_basis_has_one_central_moment_per_population(name, count):
    from lbgen.model.central import central_basis
    from lbgen.model.velocity_set import velocity_set
    basis = central_basis(velocity_set(name))
    assert len(basis) == len(set(basis)) == count and max(max(e) for e in basis) == 2
    # closed under lowering an exponent: the shift between raw and central moments stays inside it
    assert all(e[:k] + (e[k] - 1,) + e[k + 1:] in basis for e in basis for k in range(len(e)) if e[k])
    if name == "d3q19":
        assert (1, 1, 1) not in basis and (2, 2, 0) in basis


@pytest.mark.parametrize("name", ["d2q9", "d3q27"])
def test_the_derivation_equals_the_papers_formulas_site_by_site(name):
    params = {"tau": 0.6, "omega_bulk": 1.3, "omega3": 0.8, "omega4": 1.4}
    f, c, w, force, got = _site(name, "central", params)
    want = oracle.collide(f.reshape(-1, 1), force=force, c=c, w=w, **params)[:, 0]
    assert np.abs(got - want).max() < 3e-15
    # mass kept, momentum gains rho a
    assert abs(got.sum() - f.sum()) < 1e-14 and np.abs(c.T @ (got - f) - f.sum() * force).max() < 1e-15


def test_the_oracle_sees_each_rate():
    f0 = initial_state()
    base = oracle_run(f0, STEPS)
    for key, value in (("tau", 0.6), ("omega_bulk", 1.0), ("omega3", 1.0), ("omega4", 1.0)):
        assert rel_err(oracle_run(f0, STEPS, **{key: value}), base) > 1e-8, key


def test_the_oracle_is_not_the_raw_moment_mrt():
    """Central moments relaxed with rates other than 1/tau differ from the raw-moment MRT (lbgen.reference.mrt),
    beyond the kernels' tolerance; with every rate 1/tau both are BGK with Guo's forcing up to the third-order
    source terms."""
    from lbgen.reference import mrt
    f0 = initial_state()
    raw = f0
    for _ in range(STEPS):
        raw = mrt.collide(stream(raw, D2Q9_C), force=FORCE, **PARAMS)
    assert rel_err(oracle_run(f0, STEPS), raw) > 1e-6


@pytest.mark.parametrize("runtime, layout, vl, precision", list(sweep(FAST)))
def test_kernels_equal_the_oracle(programs, runtime, layout, vl, precision):
    f0 = initial_state()
    want = oracle_run(f0, STEPS)
    prog = program(programs, runtime, layout, vl, "central", precision)
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


@pytest.mark.slow        # the time-block code is shared: test_cumulant.py runs it fast
def test_time_blocks_equal_single_steps_bit_for_bit(programs):
    prog = program(programs, "c", "csoa", 4, "central", strict=True)
    f0 = initial_state(3)
    params = {**PARAMS, "ax": R * FORCE[0], "ay": R * FORCE[1]}
    out = time_blocks_and_single_steps(prog, f0, params)
    assert np.array_equal(out[0], out[1]) and not np.array_equal(out[0], f0)


def test_a_run_description_takes_the_rates_on_every_isothermal_set():
    from lbgen.run.config import RunConfig
    cfg = RunConfig.build("taylor-green", ("test", {"velocity_set": "d3q27", "collision": "central", "omega4": 1.5}))
    assert cfg.parameters == {"tau": 0.8, "omega_bulk": 1.0, "omega3": 1.0, "omega4": 1.5}
    from lbgen.run.options import ConfigError
    with pytest.raises(ConfigError, match="on D3Q19 .* a decaying Taylor-Green vortex gained energy"):
        RunConfig.build("taylor-green", ("test", {"velocity_set": "d3q19", "collision": "central"}))


@pytest.mark.slow
def test_emitted_central_example_builds_and_reproduces_the_oracle(tmp_path):
    """lbgen emit carries the rates (the params struct's omega_bulk, omega3, omega4, from the record) and the
    emitted example (a D2Q9 shear wave under the force (0, -1e-5), model units) equals the oracle."""
    from lbgen.reference.trt_les import D2Q9_W, equilibrium, moments
    spec = KernelSpec(layout="soa", velocity_set="d2q9", collision="central")
    header, data, (rho, u, a) = emitted_d2q9_example(tmp_path, spec, R)
    lx, ly, steps = 16, 64, 20
    assert all(f"double {n};" in header for n in ("omega_bulk", "omega3", "omega4"))
    f = equilibrium(rho, u + 0.5 * a[:, None, None], D2Q9_C, D2Q9_W)
    f = oracle_run(f, steps, force=a, tau=0.8, omega_bulk=1.0, omega3=1.0, omega4=1.0)
    rho_f, u_f = moments(f, D2Q9_C)
    want = [rho_f, R * (u_f[0] - a[0] / 2), R * (u_f[1] - a[1] / 2)]
    for column, field in zip((2, 3, 4), want):
        assert np.abs(data[:, column].reshape(lx, ly) - field).max() <= 1e-12


@pytest.mark.parametrize("velocity_set", ["d2q37", "d3q39"])
def test_central_is_refused_on_thermal_sets_before_any_code(velocity_set):
    with pytest.raises(SpecError, match=r"central operator is defined on the isothermal sets .*Maxwellian's central"):
        KernelSpec(backend="c", layout="aos", velocity_set=velocity_set, collision="central").validate()
