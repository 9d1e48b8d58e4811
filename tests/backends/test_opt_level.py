"""The test suite compiles its kernels at -O1 ($LBGEN_OPT_LEVEL, set in tests/conftest.py),
and at -O0 in the folders whose kernels take few steps (conftest's QUICK_BUILDS, this one) and in every test not marked slow:
gcc takes about a fifth of the -O3 time on the generated kernels at -O1, a twentieth at -O0.
That is sound only because a strict build's bits do not depend on the optimisation level: no
FMA contraction, no reassociation (no level has -ffast-math), so every level evaluates the same
IEEE operations in the same order.  These tests hold the -O0 and -O1 builds against the -O3
build that runs and benchmarks use, bit for bit, for every layout family in 2D and 3D, fused
and unfused; the fast subset keeps one case of each dimension."""
from __future__ import annotations

import os

import numpy as np
import pytest

import support3d
from helpers import FORCE, OPERATOR_PARAMS, step_fused, step_unfused

NATIVE = ("-march=native", "-fopenmp")


def suite_levels() -> tuple:
    """The levels the suite builds at: this folder's ($LBGEN_OPT_LEVEL while a test runs: -O0,
    tests/conftest.py quick_build, unless the caller chose one) and the slow physics runs' -O1."""
    return tuple(dict.fromkeys((os.environ["LBGEN_OPT_LEVEL"], "-O1")))
STEPS = 4


def _flags(level):
    return (level, *NATIVE)


def _slow_unless(first):
    return [] if first else [pytest.mark.slow]


CASES_2D = [pytest.param(layout, vl, operator, marks=_slow_unless(i == 0), id=f"{layout}{vl or ''}-{operator}")
            for i, (layout, vl, operator) in enumerate(
                [("caosoa", 8, "bgk"), ("aos", None, "regularized"), ("soa", None, "bgk"), ("csoa", 4, "regularized")])]


@pytest.mark.parametrize("layout, vl, operator", CASES_2D)
def test_strict_2d_builds_give_the_same_bits_at_O1_and_O3(layout, vl, operator, program, initial_state):
    from lbgen.backends import c as cbackend
    params = dict(OPERATOR_PARAMS[operator], ax=FORCE[0], ay=FORCE[1])
    results = []
    here = os.environ["LBGEN_OPT_LEVEL"]
    for level in (*suite_levels(), "-O3"):    # the suite's own strict builds, shared with the other tests
        prog = program(layout, vl, "double", operator, strict=True, flags=None if level == here else _flags(level))
        assert f" {level} " in (prog.library_path.parent / "build.log").read_text().splitlines()[0]
        # below -O2 a large site collision is one function called per site (backends/c.site_once:
        # its name stays in the library's symbols); -O3 inlines it into every sweep (no symbol)
        assert (b"lbgen_collide_site" in prog.library_path.read_bytes()) == cbackend.site_once((level,), prog.source)
        for stepper in (step_fused, step_unfused):
            a, b = prog.pack(initial_state), prog.allocate()
            for _ in range(STEPS):
                a, b = stepper(prog, a, b, **params)
            results.append(prog.unpack(a))
    *low, fused3, unfused3 = results
    for fused1, unfused1 in zip(low[0::2], low[1::2]):
        assert np.array_equal(fused1, fused3) and np.array_equal(unfused1, unfused3)


CASES_3D = [pytest.param(layout, vl, operator, marks=_slow_unless(i == 0), id=f"{layout}{vl or ''}-{operator}")
            for i, (layout, vl, operator) in enumerate(
                [("soa", None, "bgk"), ("caosoa", 8, "regularized"), ("aos", None, "bgk"), ("csoa", 4, "bgk")])]


@pytest.mark.parametrize("layout, vl, operator", CASES_3D)
def test_strict_3d_builds_give_the_same_bits_at_O1_and_O3(layout, vl, operator):
    from programs import PROGRAMS
    f0 = support3d.random_state("d3q19")
    results = []
    here = os.environ["LBGEN_OPT_LEVEL"]
    for level in (*suite_levels(), "-O3"):
        options = {} if level == here else {"flags": _flags(level)}
        prog = PROGRAMS.of("c", support3d.SHAPE, True, options, layout=layout, vl=vl, velocity_set="d3q19",
                           collision=operator)
        for fused in (True, False):
            results.append(prog.unpack(support3d.kernel_run(prog, f0, STEPS, operator, fused=fused)))
    *low, fused3, unfused3 = results
    for fused1, unfused1 in zip(low[0::2], low[1::2]):
        assert np.array_equal(fused1, fused3) and np.array_equal(unfused1, unfused3)


def test_the_suite_builds_at_the_level_it_sets():
    """conftest sets -O1 (unless the caller chose a level); a default build takes it, and a
    build with explicit flags keeps its own."""
    import os
    from lbgen.backends import c as cbackend
    assert os.environ["LBGEN_OPT_LEVEL"]
    assert cbackend.flags_for()[0] == os.environ["LBGEN_OPT_LEVEL"]
    assert cbackend.flags_for(["-O3"])[0] == "-O3"


def test_a_bad_level_is_refused_naming_it(monkeypatch):
    from lbgen.backends import c as cbackend
    monkeypatch.setenv("LBGEN_OPT_LEVEL", "-O9")
    with pytest.raises(ValueError, match=r"LBGEN_OPT_LEVEL='-O9'.*-O0, -O1"):
        cbackend.flags_for()


@pytest.mark.parametrize("velocity_set, layout, vl", [("d2q37", "caosoa", 8), ("d3q19", "soa", None)])
def test_at_O1_a_default_build_is_already_strict(tmp_path, velocity_set, layout, vl):
    """At -O1 gcc neither contracts nor SLP-vectorises, so the strict flags change nothing: the
    assembly of a generated kernel is the same with and without them.  That is why a strict
    and a default build at -O1 share one library (backends.build.UNCONTRACTED_LEVELS)."""
    import subprocess
    from lbgen.backends import c as cbackend
    from lbgen.backends.build import UNCONTRACTED_LEVELS
    from lbgen.codegen.render import generate
    from lbgen.codegen.spec import KernelSpec
    assert "-O1" in UNCONTRACTED_LEVELS
    src = generate(KernelSpec(backend="c", layout=layout, vl=vl, velocity_set=velocity_set, collision="regularized"))
    for name, text in src.files.items():
        (tmp_path / name).write_text(text)
    assembly = []
    for extra in ((), cbackend.STRICT_FLAGS):
        out = tmp_path / f"k{len(assembly)}.s"
        subprocess.run([cbackend.compiler(), "-O1", *NATIVE, *extra, "-std=gnu11", "-fPIC", "-DLBGEN_SITE_ONCE", "-S", "-o", out,
                        tmp_path / src.main_file], check=True, capture_output=True)
        assembly.append(out.read_text())
    assert assembly[0] == assembly[1]
    assert "vfmadd" not in assembly[0]


def test_the_site_collision_compiled_once_gives_the_inlined_bits(program, initial_state):
    """-D<PREFIX>_SITE_ONCE (the site's collision compiled once and called per site, as the
    suite's -O1 builds of large collisions take it: backends/c.site_once) changes no bit:
    D2Q37 BGK, strict, the suite's inlined -O1 build against the same with the define, fused
    and unfused; the library holds the site function as a symbol only when compiled once."""
    params = dict(OPERATOR_PARAMS["bgk"], ax=FORCE[0], ay=FORCE[1])
    results = []
    for once in (False, True):
        prog = program("caosoa", 8, "double", "bgk", strict=True,
                       flags=(os.environ["LBGEN_OPT_LEVEL"], *NATIVE, "-DLBGEN_SITE_ONCE") if once else None)
        assert (b"lbgen_collide_site" in prog.library_path.read_bytes()) == once
        for stepper in (step_fused, step_unfused):
            a, b = prog.pack(initial_state), prog.allocate()
            for _ in range(STEPS):
                a, b = stepper(prog, a, b, **params)
            results.append(prog.unpack(a))
    assert np.array_equal(results[0], results[2]) and np.array_equal(results[1], results[3])


@pytest.mark.parametrize("kw, once", [(dict(velocity_set="d3q39", walls=True, collision="regularized"), True),
                                      (dict(velocity_set="d3q27", collision="cumulant"), True),
                                      (dict(velocity_set="d2q37"), False), (dict(velocity_set="d2q9"), False)],
                         ids=["d3q39-walls-regularized", "d3q27-cumulant", "d2q37-bgk", "d2q9-bgk"])
def test_below_o2_only_large_site_collisions_are_compiled_once(kw, once):
    """The rule (backends/c.site_once): below -O2, a collision whose inlined copies would hold
    SITE_ONCE_FLOPS or more operations is compiled once; -O3 always inlines."""
    from lbgen.backends import c as cbackend
    from lbgen.codegen.render import generate
    from lbgen.codegen.spec import KernelSpec
    source = generate(KernelSpec(backend="c", layout="soa", **kw))
    assert (cbackend.inlined_flops(source) >= cbackend.SITE_ONCE_FLOPS) == once
    assert cbackend.site_once(("-O1",), source) == once and not cbackend.site_once(("-O3",), source)


def test_builds_below_o2_leave_avx512_out_and_runs_keep_it(program):
    """backends/c.LOW_LEVEL_FLAGS: gcc 12 miscompiled the D3Q39 bc at -O1 on an AVX-512 AMD EPYC,
    keeping scalars in the mask registers (tests/backends/test_gpu3d_walls.py's walls across y
    read 4e-4 off the oracle); below -O2 the library holds no AVX-512 register (no zmm, no mask
    k-register), while the -O3 build of the same kernels may use them where the CPU has them."""
    import shutil
    import subprocess
    if not shutil.which("objdump"):
        pytest.skip("objdump (binutils) is not installed")

    def avx512(prog):
        text = subprocess.run(["objdump", "-d", str(prog.library_path)], capture_output=True, text=True,
                              check=True).stdout
        return sum(text.count(s) for s in ("%zmm", "%k1", "%k0", "kmov"))
    low = program("caosoa", 8, "double", "bgk", flags=("-O1", *NATIVE))
    assert "-mno-avx512f" in (low.library_path.parent / "build.log").read_text().splitlines()[0]
    assert avx512(low) == 0
    cpu = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    if " avx512f " in cpu:
        assert avx512(program("caosoa", 8, "double", "bgk", flags=("-O3", *NATIVE))) > 0
