"""The 3D C/OpenMP kernels (templates/c/kernels.c.j2 through backends/c: CProgram)
against the independent NumPy oracle lbgen.reference.bulk3d and against each other:
every layout x operator x set in a periodic box with a force; the pack, unpack and halo
kernels against Layout's NumPy formulas; init_equilibrium and fields (physical, half-step
fields) against the oracle's and as exact inverses; strict builds bit-identical across
layouts, fused bit-identical to propagate + collide; sizes refused before any work."""
from __future__ import annotations

import numpy as np
import pytest

from lbgen.codegen.layouts import make_layout
from lbgen.reference import bulk3d as oracle
from support3d import (bounds, FORCE, LAYOUTS3D, NEW_OPERATORS, R, SHAPE, defined, kernel_run, swept, oracle_run, program3d, random_state)

STEPS = 3
#: the combinations the fast suite runs; the whole sweep runs under CI=true / --slow
FAST = {("caosoa", 8, "d3q19", "bgk"), ("soa", None, "d3q27", "regularized"), ("csoa", 4, "d3q19", "regularized"),
        ("aos", None, "d3q27", "bgk"), ("csoa", 8, "d3q19", "trt"), ("aos", None, "d3q27", "trt-les"),
        ("soa", None, "d3q19", "bgk-les"), ("caosoa", 4, "d3q27", "regularized-les"),
        ("caosoa", 8, "d3q27", "cumulant"), ("csoa", 8, "d3q19", "mrt"), ("aos", None, "d3q27", "mrt-les"),
        ("soa", None, "d3q27", "central"), ("csoa", 8, "d3q27", "kbc")}


def _sweep():
    for layout, vl in LAYOUTS3D:
        for name in ("d3q19", "d3q27"):
            for collision in ("bgk", "regularized") + NEW_OPERATORS:
                if not defined(name, collision) or not (swept(layout, vl, collision)
                                                        or (layout, vl, name, collision) in FAST):
                    continue
                marks = () if (layout, vl, name, collision) in FAST else (pytest.mark.slow,)
                yield pytest.param(layout, vl, name, collision, marks=marks,
                                   id=f"{layout}{'-vl' + str(vl) if vl else ''}-{name}-{collision}")


def rel_err(got, want) -> float:
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


@pytest.mark.parametrize("layout, vl, name, collision", list(_sweep()))
def test_periodic_box_with_force_equals_the_oracle(layout, vl, name, collision):
    f0 = random_state(name)
    want = oracle_run(f0, STEPS, name, collision)
    prog = program3d(layout, vl, name, collision)
    got = prog.unpack(kernel_run(prog, f0, STEPS, collision))
    assert rel_err(got, want) < 1e-12


@pytest.mark.parametrize("layout, vl", [("soa", None), ("caosoa", 4)])
def test_separate_kernels_equal_the_oracle(layout, vl):
    f0 = random_state("d3q19", seed=3)
    want = oracle_run(f0, STEPS, "d3q19", "bgk")
    prog = program3d(layout, vl)
    assert rel_err(prog.unpack(kernel_run(prog, f0, STEPS, "bgk", fused=False)), want) < 1e-12


@pytest.mark.parametrize("layout, vl", LAYOUTS3D)
def test_pack_unpack_and_halo_kernels_are_layout3d_formulas(layout, vl):
    prog = program3d(layout, vl)
    lay = make_layout(layout, 19, SHAPE, vl, halo=1)
    f = random_state("d3q19", seed=11)
    packed = prog.pack(f)
    assert np.array_equal(packed, lay.pack(f))             # interior and the whole halo
    assert np.array_equal(prog.unpack(packed), f)
    rng = np.random.default_rng(5)
    buf = rng.standard_normal(lay.size)
    want = lay.fill_halo(buf.copy())
    prog.halo(buf)
    assert np.array_equal(buf, want)


def _fields(name, seed=2):
    rng = np.random.default_rng(seed)
    rho = 1.0 + 0.1 * rng.random(SHAPE)
    u = 0.05 * rng.standard_normal((3,) + SHAPE)
    return rho, u


@pytest.mark.parametrize("layout, vl, name", [("caosoa", 8, "d3q19"), ("soa", None, "d3q27")])
def test_init_and_fields_are_the_oracles_physical_fields_and_inverses(layout, vl, name):
    prog = program3d(layout, vl, name, "regularized" if name == "d3q27" else "bgk")
    rho, u = _fields(name)
    a = R * FORCE
    f = prog.allocate()
    prog.init_equilibrium(f, rho, *(R * u), 1.0, force=a)
    want = oracle.physical_equilibrium(rho, u, FORCE, name)
    assert rel_err(prog.unpack(f), want) < 1e-14
    got = prog.fields(f, force=a)
    assert rel_err(got["rho"], rho) < 1e-14
    for k, c in enumerate(("ux", "uy", "uz")):
        assert np.max(np.abs(got[c] - R * u[k])) < 1e-15      # fields(init(x)) = x to round-off
    assert np.all(got["T"] == 1.0)                           # isothermal sets report T = 1
    # the fields of the oracle's populations after steps under the force are its physical fields
    f1 = oracle_run(want, 2, name, "bgk")
    rho1, u1 = oracle.physical_fields(f1, FORCE, name)
    got = prog.fields(prog.pack(f1), force=a)
    assert rel_err(got["rho"], rho1) < 1e-14
    assert max(np.max(np.abs(got[c] - R * u1[k])) for k, c in enumerate(("ux", "uy", "uz"))) < 1e-15


def test_a_fluid_at_rest_under_a_force_reads_at_rest():
    prog = program3d("caosoa", 8)
    a = R * np.array([0.0, 0.0, -1e-3])
    f, g = prog.allocate(), prog.allocate()
    prog.init_equilibrium(f, 1.0, 0.0, 0.0, 0.0, 1.0, force=a)
    rest = prog.fields(f, force=a)
    assert max(np.max(np.abs(rest[c])) for c in ("ux", "uy", "uz")) < 1e-15
    prog.step_halo(f)
    f, g = prog.step(f, g, {"tau": 0.8, "ax": a[0], "ay": a[1], "az": a[2]})
    after = prog.fields(f, force=a)                          # one step: the force accelerates it by a
    assert np.allclose(after["uz"], a[2], rtol=1e-12, atol=0)


def test_thermal_3d_set_round_trips_its_temperature():
    """D3Q39 (thermal, halo 3): fields(init(x)) = x with T_H = T + |a|^2/12 undone exactly."""
    shape = (4, 4, 12)
    prog = program3d("caosoa", 4, "d3q39", "bgk", shape=shape)
    rng = np.random.default_rng(4)
    rho, T = 1.0 + 0.1 * rng.random(shape), 1.0 + 0.05 * rng.random(shape)
    u = 0.05 * rng.standard_normal((3,) + shape)
    a = (2e-3, -1e-3, 3e-3)
    f = prog.allocate()
    prog.init_equilibrium(f, rho, *u, T, force=a)
    got = prog.fields(f, force=a)
    for want, key in ((rho, "rho"), (u[0], "ux"), (u[1], "uy"), (u[2], "uz"), (T, "T")):
        assert np.max(np.abs(got[key] - want)) < 1e-14, key
    stored = prog.fields(f)                                  # a = 0: the stored moments
    assert np.allclose(stored["T"], T - sum(c * c for c in a) / 12, rtol=0, atol=1e-14)
    assert np.allclose(stored["ux"], u[0] + a[0] / 2, rtol=0, atol=1e-15)
    # mass and momentum (+ rho a per step) over a few periodic steps
    g = prog.allocate()
    m0 = prog.unpack(f).sum()
    for _ in range(3):
        prog.step_halo(f)
        f, g = prog.step(f, g, {"tau": 0.9, "ax": a[0], "ay": a[1], "az": a[2]})
    assert abs(prog.unpack(f).sum() / m0 - 1) < 1e-13


def _strict_state(layout, vl, collision="bgk", fused=True):
    prog = program3d(layout, vl, "d3q19", collision, strict=True)
    return prog.unpack(kernel_run(prog, random_state("d3q19", seed=9), STEPS, collision, fused=fused))


@pytest.mark.parametrize("layout, vl", [pytest.param(lay, v, marks=() if (lay, v) in (("soa", None), ("caosoa", 8))
                                                     else (pytest.mark.slow,)) for lay, v in LAYOUTS3D])
def test_strict_builds_are_bit_identical_across_layouts_and_fused_equals_separate(layout, vl):
    reference = _strict_state("soa", None)
    assert np.array_equal(_strict_state(layout, vl), reference)
    assert np.array_equal(_strict_state(layout, vl, fused=False), reference)


def test_single_and_mixed_precision_follow_the_oracle():
    f0 = random_state("d3q19")
    want = oracle_run(f0, STEPS, "d3q19", "bgk")
    for precision, tol in (("single", 2e-6), ("mixed", 2e-6)):
        prog = program3d("caosoa", 8, precision=precision)
        assert prog.dtype == np.float32
        assert rel_err(prog.unpack(kernel_run(prog, f0, STEPS, "bgk")), want) < tol, precision


@pytest.mark.parametrize("shape, message", [
    ((6, 5, 12), "lz=12 is not a multiple of VL=8"),
    ((6, 5, 0), "lattice 6 x 5 x 0: lx, ly and lz must be >= 1"),
])
def test_sizes_are_refused_before_any_work_naming_the_value(shape, message):
    from lbgen.backends.c import compile
    from lbgen.codegen.render import generate
    from lbgen.codegen.spec import KernelSpec
    src = generate(KernelSpec(velocity_set="d3q19", layout="caosoa", vl=8))
    with pytest.raises(ValueError, match=message):
        compile(src, *shape)
    prog = program3d("caosoa", 8)
    status, text = prog.check(*shape)                        # the emitted check says the same
    assert status != 0 and message in text
    assert prog.check(*SHAPE) == (0, "")


def test_kernel_parameters_are_checked_by_name():
    prog = program3d("caosoa", 8)
    f, g = prog.allocate(), prog.allocate()
    with pytest.raises(TypeError, match="bgk collide takes parameters tau, ax, ay, az; missing \\['az'\\]"):
        prog.fused(f, g, tau=0.8, ax=0.0, ay=0.0)
    with pytest.raises(ValueError, match="contiguous float64 array of"):
        prog.halo(np.zeros(10))


@pytest.mark.parametrize("layout, vl, expected, precision, shape", [
    ("caosoa", 8, True, "double", SHAPE), ("caosoa", 4, True, "double", SHAPE), ("csoa", 8, True, "double", SHAPE),
    ("csoa", 4, False, "double", SHAPE), ("soa", None, True, "double", SHAPE), ("soa", None, True, "single", (4, 6, 40)),
    ("soa", None, True, "double", (6, 5, 15)), ("soa", None, True, "double", (4, 6, 30)),
    ("soa", None, True, "double", (7, 4, 20))])
def test_streaming_stores_change_no_bit_and_follow_the_cache_rule(layout, vl, expected, precision, shape):
    """fused streams whole clusters with non-temporal stores (clustered layouts, lattices
    beyond the last-level cache); on and off give the same bits, in the bulk and next to a
    wall and a lid (the sites that store plainly).  CSoA with clusters of half a cache line
    (VL 4 of doubles: they ran at 0.35x plain stores) has none: always 0.  SoA streams the
    whole lines of each run of rows it sweeps (here one X plane's rows), the sites before and
    after them plainly: a plane's first whole line starts 1, 3, 5 or 7 sites in in SHAPE
    (6, 5, 16), 0 to 4 or 7 sites in in (6, 5, 15); (4, 6, 30) has 22 whole lines a plane, as
    (4, 6, 40) has 15 in single precision (16-site lines); (7, 4, 20)'s population arrays are
    no whole number of lines (9 x 6 x 22 doubles), so it stores plainly whatever the switch
    says."""
    from lbgen.backends import c as cbackend
    prog = program3d(layout, vl, strict=True, precision=precision, shape=shape)
    want = int(expected and cbackend.streaming_pays(prog.layout.size, prog.dtype))
    assert prog.lib.lbgen_set_streaming_stores(-1) == want == prog.streaming_stores
    f0 = random_state("d3q19", shape=shape, seed=11)
    bc = bounds(walls=("z",), lids={("z", "high"): (0.05, 0.0, 0.0)})
    results = {}
    for on in (1, 0):
        assert prog.lib.lbgen_set_streaming_stores(on) == (on if expected else 0)
        results[on] = [prog.unpack(kernel_run(prog, f0, 2, "bgk", bc=b)) for b in (None, bc)]
    prog.lib.lbgen_set_streaming_stores(want)
    for a, b in zip(results[1], results[0]):
        assert np.array_equal(a, b)
