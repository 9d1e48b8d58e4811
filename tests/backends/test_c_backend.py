"""The C/OpenMP backend against the NumPy oracle: every layout, VL, operator and precision,
unfused and fused; bit-identical layouts in strict mode; the equilibrium/fields kernels;
the on-disk compile cache (reuse, concurrency); compile errors; compiler flags."""
from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from helpers import (FAST_LAYOUT_CONFIGS, FORCE, LAYOUT_CONFIGS, LX, LY, OPERATOR_PARAMS, config_id, layout_params,
                     random_fields)
from lbgen.reference import bulk as ref
from lbgen.backends import c as cbackend
from lbgen.backends.build import CompileError
from lbgen.codegen.spec import KernelSpec
from lbgen.codegen.render import generate

STEPS = 20
TOLERANCE = {"double": 1e-12, "single": 1e-5}
OPERATORS = ("bgk", "regularized")
CONFIG_IDS = [config_id(c) for c in LAYOUT_CONFIGS]


def relative_error(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


# --- against the reference -------------------------------------------------------------------

def test_reference_trajectory_is_sensitive_to_the_force_and_the_operator(reference_run, initial_state):
    """So the tolerances below can see a dropped force or a wrong operator."""
    with_force = reference_run("bgk", STEPS)
    assert relative_error(reference_run("bgk", STEPS, force=(0.0, 0.0)), with_force) > 100 * TOLERANCE["single"]
    assert relative_error(reference_run("regularized", STEPS), with_force) > 100 * TOLERANCE["single"]
    assert relative_error(initial_state, with_force) > 100 * TOLERANCE["single"]


#: the layouts whose single and mixed precision builds the fast subset runs (the rest: slow)
PRECISION_FAST = [("aos", None), ("caosoa", 8)]


def _precision_params():
    return [pytest.param(name, vl, precision, id=f"{config_id((name, vl))}-{precision}",
                         marks=() if (name, vl) in FAST_LAYOUT_CONFIGS and
                         (precision == "double" or (name, vl) in PRECISION_FAST) else (pytest.mark.slow,))
            for name, vl in LAYOUT_CONFIGS for precision in ("double", "single")
            if precision == "double" or vl != 16]            # single: every family, VL 4, 8 and 32


@pytest.mark.parametrize("path", ["unfused", "fused"])
@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("name, vl, precision", _precision_params())
def test_c_kernels_match_the_reference_after_20_steps_with_force(
        name, vl, operator, precision, path, program, run_program, reference_run, initial_state):
    prog = program(name, vl, precision, operator)
    got = run_program(prog, initial_state, STEPS, path, operator)
    err = relative_error(got, reference_run(operator, STEPS))
    assert err <= TOLERANCE[precision], f"{name} vl={vl} {operator} {precision} {path}: relative error {err:.3g}"


def test_collide_may_run_in_place_and_propagate_leaves_its_input_untouched(program, initial_state):
    prog = program("caosoa", 8)
    a = prog.pack(initial_state)
    b = prog.allocate()
    prog.halo(a)
    a_before = a.copy()
    prog.propagate(a, b)
    np.testing.assert_array_equal(a, a_before)
    np.testing.assert_array_equal(prog.unpack(b), ref.propagate(initial_state))
    params = dict(OPERATOR_PARAMS["bgk"], ax=FORCE[0], ay=FORCE[1])
    out = prog.allocate()
    prog.collide(b, out, **params)
    prog.collide(b, b, **params)          # in place
    np.testing.assert_array_equal(prog.unpack(b), prog.unpack(out))


def test_wrong_collision_parameters_are_refused_by_name(program):
    prog = program("caosoa", 8)
    a, b = prog.allocate(), prog.allocate()
    with pytest.raises(TypeError, match=r"missing \['ay'\].*unexpected \['C1'\]"):
        prog.collide(a, b, tau=0.8, ax=0.0, C1=0.1)


# --- strict mode: bit-identical across layouts -----------------------------------------------

STRICT_STEPS = 10


@pytest.fixture(scope="session")
def strict_baseline(program, run_program, initial_state):
    memo = {}

    def get(operator):
        if operator not in memo:
            prog = program("aos", None, "double", operator, strict=True)
            memo[operator] = run_program(prog, initial_state, STRICT_STEPS, "unfused", operator)
        return memo[operator]

    return get


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("name, vl", layout_params())
def test_strict_mode_gives_bit_identical_fields_in_every_layout_fused_or_not(
        name, vl, operator, program, run_program, initial_state, strict_baseline):
    prog = program(name, vl, "double", operator, strict=True)
    command = (prog.library_path.parent / "build.log").read_text().splitlines()[0].split()
    assert set(cbackend.flags_for(strict=True)) <= set(command)
    baseline = strict_baseline(operator)
    for path in ("unfused", "fused"):
        got = run_program(prog, initial_state, STRICT_STEPS, path, operator)
        diff = np.abs(got - baseline).max()
        assert np.array_equal(got, baseline), f"{name} vl={vl} {path} differs from aos by up to {diff:.3g}"


# --- equilibrium and fields kernels ----------------------------------------------------------

@pytest.mark.parametrize("name, vl", layout_params())
def test_c_init_equilibrium_and_fields_agree_with_the_reference(name, vl, program):
    prog = program(name, vl)
    rho, ux, uy, T = random_fields(11)
    buf = prog.allocate()
    prog.init_equilibrium(buf, rho, ux, uy, T)
    want = ref.equilibrium(rho, ux, uy, T)
    got = prog.unpack(buf)
    assert relative_error(got, want) <= 1e-13
    # the halo was refreshed by init_equilibrium
    np.testing.assert_array_equal(buf, prog.layout.fill_halo(buf.copy()))
    # fields of the equilibrium give the inputs back, and agree with ref.fields on any state
    for c_field, field in zip(prog.fields(buf).values(), (rho, ux, uy, T)):
        np.testing.assert_allclose(c_field, field, rtol=0, atol=1e-13)
    f = want * (1.0 + 1e-2 * np.random.default_rng(5).standard_normal(want.shape))
    for c_field, r_field in zip(prog.fields(prog.pack(f)).values(), ref.fields(f)):
        np.testing.assert_allclose(c_field, r_field, rtol=0, atol=1e-13)


def test_single_precision_init_equilibrium_is_accurate_to_float_rounding(program):
    prog = program("csoa", 16, "single")
    rho, ux, uy, T = random_fields(12)
    buf = prog.allocate()
    assert buf.dtype == np.float32
    prog.init_equilibrium(buf, rho, ux, uy, T)
    assert relative_error(prog.unpack(buf), ref.equilibrium(rho, ux, uy, T)) <= 1e-6


# --- the compile cache ---------------------------------------------------------------------------

def test_second_compile_of_the_same_source_reuses_the_library_without_gcc(monkeypatch):
    src = generate(KernelSpec(backend="c", layout="csoa", vl=8))
    first = cbackend.compile(src, LX, LY)
    mtime = first.library_path.stat().st_mtime_ns

    def no_gcc(*args, **kwargs):
        raise AssertionError(f"gcc ran again: {args}")

    monkeypatch.setattr(subprocess, "run", no_gcc)
    second = cbackend.compile(src, LX, 2 * LY)        # a different lattice: same library
    assert second.library_path == first.library_path
    assert second.library_path.stat().st_mtime_ns == mtime
    # other flags are another cache entry
    monkeypatch.undo()
    other = cbackend.compile(src, LX, LY, flags=cbackend.default_flags() + ("-DLBGEN_OTHER_FLAGS",))
    assert other.library_path != first.library_path


_CHILD = textwrap.dedent("""
    import os, pickle, sys, time
    import numpy as np
    from lbgen.backends import c as cbackend
    src = pickle.load(open(sys.argv[1], "rb"))
    while not os.path.exists(sys.argv[2]):       # start together
        time.sleep(0.005)
    prog = cbackend.compile(src, 6, 96)
    a = prog.allocate(); b = prog.allocate()
    a[...] = 1.0
    prog.halo(a); prog.fused(a, b, tau=0.8, ax=0.0, ay=0.0)
    print(prog.library_path)
    print(repr(float(b.sum())))
""")


def test_two_processes_compiling_the_same_new_kernel_both_succeed_and_gcc_runs_once(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("LBGEN_CACHE_DIR", str(cache))
    # a compiler wrapper that records every compilation (not the --version and -march=native probes)
    calls = tmp_path / "gcc-calls.log"
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in --version|*--help=target*) ;; *) echo "$$" >> "{calls}"; '
                       f'sleep 0.5 ;; esac\nexec gcc "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    src_file = tmp_path / "source.pickle"
    src_file.write_bytes(pickle.dumps(generate(KernelSpec(backend="c", layout="caosoa", vl=8, prefix="concurrent"))))
    go = tmp_path / "go"
    children = [subprocess.Popen([sys.executable, "-c", _CHILD, str(src_file), str(go)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    time.sleep(0.2)
    go.touch()
    results = [child.communicate(timeout=120) for child in children]
    for child, (out, err) in zip(children, results):
        assert child.returncode == 0, err
    outputs = [out.split() for out, _ in results]
    assert outputs[0] == outputs[1]                        # same library, same result
    assert outputs[0][0].startswith(str(cache))
    assert float(outputs[0][1]) == pytest.approx(37 * LX * LY)  # uniform state stays uniform, mass kept
    assert len(calls.read_text().split()) == 1, "gcc ran more than once for one kernel"
    leftovers = [p.name for p in (cache / "c").rglob("*.tmp")]
    assert not leftovers


def test_compile_error_names_the_generated_file_and_carries_the_gcc_log(tmp_path, monkeypatch):
    monkeypatch.setenv("LBGEN_CACHE_DIR", str(tmp_path))
    src = generate(KernelSpec(backend="c", layout="soa", vl=None))
    files = dict(src.files)
    files[src.main_file] += "\nint broken_by_the_test(void) { return 1 +; }\n"
    broken = dataclasses.replace(src, files=files)
    with pytest.raises(CompileError) as info:
        cbackend.compile(broken, LX, LY)
    message = str(info.value)
    c_files = list((tmp_path / "c").rglob(src.main_file))
    assert len(c_files) == 1
    assert str(c_files[0]) in message
    assert "error" in message and "broken_by_the_test" in message
    # a failed build leaves no library behind: trying again fails again
    assert not list((tmp_path / "c").rglob("*.so"))
    with pytest.raises(CompileError):
        cbackend.compile(broken, LX, LY)


# --- flags ------------------------------------------------------------------------------------------

def test_flags_for_defaults_and_strict_mode(monkeypatch):
    monkeypatch.delenv("LBGEN_OPT_LEVEL", raising=False)
    assert cbackend.flags_for() == cbackend.DEFAULT_FLAGS
    assert "-ffp-contract=off" not in cbackend.flags_for()
    assert cbackend.flags_for(strict=True)[-2:] == ("-ffp-contract=off", "-fno-tree-slp-vectorize")
    assert set(cbackend.DEFAULT_FLAGS) <= set(cbackend.flags_for(strict=True))
    # strict overrides a user's contraction setting, keeps the rest
    assert cbackend.flags_for(["-O2", "-ffp-contract=fast"], strict=True) == (
        "-O2", "-ffp-contract=off", "-fno-tree-slp-vectorize")
    assert cbackend.flags_for(["-O1"]) == ("-O1",)
    assert cbackend.flags_for(["-O1"], strict=True)[-2:] == ("-ffp-contract=off", "-fno-tree-slp-vectorize")  # given: kept
    monkeypatch.setenv("LBGEN_OPT_LEVEL", "-O1")         # the default at -O1 is already strict: one library
    assert cbackend.flags_for(strict=True) == cbackend.flags_for() == ("-O1",) + cbackend.DEFAULT_FLAGS[1:]


@pytest.mark.parametrize("operator", OPERATORS)
def test_flags_override_reaches_gcc_and_still_matches_the_reference(
        operator, program, run_program, reference_run, initial_state):
    prog = program("caosoa", 8, "double", operator, flags=["-O0"])
    log = (prog.library_path.parent / "build.log").read_text()
    command = log.splitlines()[0]
    assert " -O0 " in command and "-O3" not in command
    assert prog.library_path != program("caosoa", 8, "double", operator).library_path
    got = run_program(prog, initial_state, STEPS, "fused", operator)
    assert relative_error(got, reference_run(operator, STEPS)) <= TOLERANCE["double"]


# --- compile-time sizes -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, vl", [("soa", None), ("caosoa", 32)], ids=["soa", "caosoa-vl32"])
def test_compile_time_sizes_match_the_reference(name, vl, run_program, reference_run, initial_state):
    src = generate(KernelSpec(backend="c", layout=name, vl=vl, collision="regularized", lx=LX, ly=LY))
    assert f"#define LBGEN_LY   {LY}" in src.files["lbgen_kernels.h"]
    prog = cbackend.compile(src, LX, LY)
    got = run_program(prog, initial_state, STEPS, "fused", "regularized")
    assert relative_error(got, reference_run("regularized", STEPS)) <= TOLERANCE["double"]


def test_a_compile_time_sized_source_refuses_another_lattice():
    src = generate(KernelSpec(backend="c", layout="caosoa", vl=8, lx=LX, ly=LY))
    with pytest.raises((ValueError, RuntimeError), match="96"):
        cbackend.compile(src, LX, LY // 2)     # never run: its kernels would index past the buffers


@pytest.mark.parametrize("name, vl", [("aos", None), ("caosoa", 8), ("csoa", 32)])
def test_two_openmp_threads_give_the_same_bits_as_one(name, vl, initial_state):
    """Threads split the X loop: the result must not depend on their number."""
    src = generate(KernelSpec(backend="c", layout=name, vl=vl, collision="regularized", walls=True))
    results = []
    for threads in (1, 2):
        prog = cbackend.compile(src, LX, LY, threads=threads)
        assert prog.threads == threads
        a = prog.pack(initial_state)
        b = prog.allocate()
        for _ in range(5):
            prog.halo(a)
            prog.propagate(a, b)
            prog.bc(a, b, 1.02, 0.98, (False, True), *FORCE)
            prog.collide(b, a, C1=0.2, C2=0.1, C3=0.5, ax=FORCE[0], ay=FORCE[1])
        results.append(prog.unpack(a))
    assert np.array_equal(results[0], results[1])


#: float storage with double arithmetic: one float rounding of each population per step
MIXED_TOLERANCE = 1e-6


@pytest.mark.parametrize("cfg", [pytest.param(cfg, id=config_id(cfg), marks=() if cfg in PRECISION_FAST else
                                              (pytest.mark.slow,)) for cfg in FAST_LAYOUT_CONFIGS])   # each family
@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("path", ["unfused", "fused"])
def test_mixed_precision_matches_the_reference_within_its_documented_tolerance(
        cfg, operator, path, program, run_program, reference_run, initial_state):
    name, vl = cfg
    prog = program(name, vl, precision="mixed", collision=operator)
    assert prog.dtype == np.float32                      # stored as float ...
    got = run_program(prog, initial_state, STEPS, path, operator)
    want = reference_run(operator, STEPS)
    err = relative_error(got, want)
    assert err <= MIXED_TOLERANCE
    single = run_program(program(name, vl, precision="single", collision=operator), initial_state, STEPS, path,
                         operator)
    assert err < relative_error(single, want) / 4          # ... but computed in double: far closer than single


@pytest.mark.parametrize("walls", [False, True], ids=["periodic", "walls"])
def test_streaming_and_plain_stores_give_the_same_bits_and_the_choice_follows_the_cache(walls, initial_state):
    """The run-time switch of the non-temporal stores (on for lattices larger than the
    last-level cache) changes no value: every sweep kernel, both ways, bit for bit."""
    from lbgen.simulation.runner import Walls
    spec = KernelSpec(backend="c", layout="caosoa", vl=8, collision="regularized", walls=walls)
    prog = cbackend.compile(generate(spec), LX, LY, strict=True)
    assert prog.lib.lbgen_set_streaming_stores(-1) == int(cbackend.streaming_pays(prog.layout.size, prog.dtype))
    assert prog.provenance()["streaming_stores"] == bool(prog.streaming_stores)
    params = dict(OPERATOR_PARAMS["regularized"], ax=FORCE[0], ay=FORCE[1])
    wall = Walls(1.05, 0.95)
    results = {}
    for on in (1, 0):
        assert prog.lib.lbgen_set_streaming_stores(on) == on
        f = prog.pack(initial_state)
        g = prog.allocate()
        out = []
        for _ in range(3):
            prog.halo(f)
            if walls:
                prog.fused_walls(f, g, T_bottom=1.05, T_top=0.95, **params)
            else:
                prog.fused(f, g, **params)
            f, g = g, f
        out.append(f.copy())
        prog.halo(f)
        prog.propagate(f, g)
        if walls:
            prog.bc(f, g, T_bottom=1.05, T_top=0.95, ax=FORCE[0], ay=FORCE[1])
        prog.collide(g, f, **params)
        out.append(f.copy())
        prog.halo(f)
        prog.fused_tb(f, g, 2, walls=wall if walls else None, **params)
        out.append(g.copy())
        results[on] = out
    for a, b in zip(results[1], results[0]):
        assert np.array_equal(a, b)


def test_streaming_stores_are_off_for_a_lattice_in_cache_and_on_for_a_large_one(monkeypatch):
    monkeypatch.setattr(cbackend, "last_level_cache_bytes", lambda: 32 << 20)
    assert not cbackend.streaming_pays(37 * 70 * 262, np.float64)          # 64 x 256 D2Q37: 11 MB
    assert cbackend.streaming_pays(37 * 1030 * 4102, np.float64)          # 1024 x 4096: 2.5 GB
    monkeypatch.setattr(cbackend, "last_level_cache_bytes", lambda: 0)    # unknown cache: stream
    assert cbackend.streaming_pays(100, np.float64)


@pytest.mark.parametrize("layout, vl, precision, streams", [
    ("caosoa", 4, "double", True), ("csoa", 8, "double", True),      # whole lines, or lines the next cluster fills
    ("csoa", 4, "double", False), ("csoa", 8, "single", False),      # half-line streams: 0.45x, 0.60x plain stores
])
def test_csoa_streams_whole_cache_lines_only(layout, vl, precision, streams):
    """CSoA keeps each population's cluster apart, so its non-temporal stores fill a cache
    line only with clusters of 64 bytes; with 32-byte clusters the switch stays off (it
    reports 0 when turned on)."""
    spec = KernelSpec(backend="c", layout=layout, vl=vl, precision=precision)
    prog = cbackend.compile(generate(spec), 8, 64)
    was = prog.lib.lbgen_set_streaming_stores(-1)
    assert prog.lib.lbgen_set_streaming_stores(1) == int(streams)
    prog.lib.lbgen_set_streaming_stores(was)
