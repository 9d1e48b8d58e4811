"""The OpenCL backend (pyopencl; on a CPU through pocl or the Intel CPU runtime) against the
NumPy oracle: every layout and VL, both operators, double and single, unfused and fused;
strict mode bit-identical to the C backend's strict build; the halo kernel against
``layout.fill_halo``; device selection and build errors (the emitted example.py runs in test_api.py).

Skipped as a whole when no OpenCL device can build kernels here -- except under CI=true,
where that is a failure (CI must exercise this backend)."""
from __future__ import annotations

import dataclasses
import os
import re

import numpy as np
import pytest

from helpers import FORCE, LX, LY, OPERATOR_PARAMS, config_id
from lbgen.backends.build import BackendUnavailable, CompileError
from lbgen.codegen.spec import KernelSpec
from lbgen.codegen.render import generate


def _opencl_or_skip():
    try:
        from lbgen.backends import opencl as ob
        ob.available()
        return ob, ob.select_device()
    except (BackendUnavailable, ImportError) as e:
        reason = f"OpenCL backend unavailable: {e}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the OpenCL tests must run, not skip)", pytrace=False)
        pytest.skip(reason, allow_module_level=True)


ob, DEVICE = _opencl_or_skip()

STEPS = 20
STRICT_STEPS = 10
TOLERANCE = {"double": 1e-12, "single": 1e-5}
OPERATORS = ("bgk", "regularized")
#: VL 4, 8 and 32 (32: one warp-sized cluster, LY/VL = 3 rows)
CONFIGS = [("aos", None), ("soa", None)] + [(n, vl) for n in ("csoa", "caosoa") for vl in (4, 8, 32)]
IDS = [config_id(c) for c in CONFIGS]


def relative_error(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


@pytest.fixture(scope="module")
def ocl_program(programs):
    """ocl_program(layout, vl, precision, collision, strict) from the session's cache."""

    def get(layout, vl, precision="double", collision="bgk", strict=False):
        return programs.of("opencl", (LX, LY), strict, layout=layout, vl=vl, precision=precision,
                           collision=collision)

    return get


# --- against the reference ---------------------------------------------------------------------

#: the fast subset: one VL per clustered layout family (those the other OpenCL tests build too),
#: single precision on two layouts; every other case is slow
OPENCL_FAST = [("aos", None), ("soa", None), ("csoa", 4), ("caosoa", 32)]


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("name, vl, precision", [
    pytest.param(name, vl, precision, id=f"{config_id((name, vl))}-{precision}",
                 marks=() if (name, vl) in OPENCL_FAST and (precision == "double" or (name, vl) in (("aos", None), ("caosoa", 32)))
                 else (pytest.mark.slow,)) for name, vl in CONFIGS for precision in ("double", "single")
    if precision == "double" or (name, vl) in OPENCL_FAST])             # single: one VL per family
def test_opencl_kernels_match_the_reference_after_20_steps_with_force_fused_and_unfused(
        name, vl, operator, precision, ocl_program, run_program, reference_run, initial_state):
    prog = ocl_program(name, vl, precision, operator)
    want = reference_run(operator, STEPS)
    for path in ("unfused", "fused"):
        got = run_program(prog, initial_state, STEPS, path, operator)
        err = relative_error(got, want)
        assert err <= TOLERANCE[precision], f"{name} vl={vl} {operator} {precision} {path}: relative error {err:.3g}"


@pytest.mark.parametrize("name, vl", [("aos", None), ("csoa", 4), ("caosoa", 32)],
                         ids=["aos", "csoa-vl4", "caosoa-vl32"])
def test_halo_kernel_equals_numpy_fill_halo(name, vl, ocl_program):
    prog = ocl_program(name, vl)
    host = np.random.default_rng(3).standard_normal(prog.layout.size)
    buf = prog.upload(host)                       # raw upload: the halo holds noise
    prog.halo(buf)
    np.testing.assert_array_equal(prog.download(buf), prog.layout.fill_halo(host.copy()))


def test_collide_in_place_and_propagate_leave_results_consistent(ocl_program, initial_state):
    from lbgen.reference import bulk as ref
    prog = ocl_program("caosoa", 8)
    a = prog.pack(initial_state)
    b = prog.allocate()
    prog.halo(a)
    before = prog.download(a)
    prog.propagate(a, b)
    np.testing.assert_array_equal(prog.download(a), before)
    np.testing.assert_array_equal(prog.unpack(b), ref.propagate(initial_state))
    params = dict(OPERATOR_PARAMS["bgk"], ax=FORCE[0], ay=FORCE[1])
    out = prog.allocate()
    prog.collide(b, out, **params)
    prog.collide(b, b, **params)
    prog.synchronize()
    np.testing.assert_array_equal(prog.download(b), prog.download(out))


def test_wrong_collision_parameters_are_refused_by_name(ocl_program):
    prog = ocl_program("caosoa", 8)
    a, b = prog.allocate(), prog.allocate()
    with pytest.raises(TypeError, match=r"missing \['ay'\].*unexpected \['C1'\]"):
        prog.collide(a, b, tau=0.8, ax=0.0, C1=0.1)


# --- strict mode: bit-identical to the C backend ----------------------------------------------

@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("name, vl", [("aos", None), ("csoa", 8), ("caosoa", 32)],
                         ids=["aos", "csoa-vl8", "caosoa-vl32"])
def test_strict_opencl_is_bit_identical_to_strict_c(name, vl, operator, ocl_program, program, run_program,
                                                    initial_state):
    prog = ocl_program(name, vl, "double", operator, strict=True)
    assert "-DLBGEN_STRICT" in prog.options
    from lbgen.backends.opencl.platform import FORBIDDEN_OPTIONS
    assert not set(prog.options) & set(FORBIDDEN_OPTIONS)
    c_result = run_program(program(name, vl, "double", operator, strict=True), initial_state, STRICT_STEPS,
                           "unfused", operator)
    for path in ("unfused", "fused"):
        got = run_program(prog, initial_state, STRICT_STEPS, path, operator)
        diff = np.abs(got - c_result).max()
        assert np.array_equal(got, c_result), f"{name} vl={vl} {operator} {path}: differs from C by {diff:.3g}"


def test_strict_pragma_and_precision_handling_in_the_source():
    double = generate(KernelSpec(backend="opencl", layout="caosoa", vl=8)).text
    single = generate(KernelSpec(backend="opencl", layout="caosoa", vl=8, precision="single")).text
    for text in (double, single):
        assert re.search(r"#ifdef LBGEN_STRICT\s*#pragma OPENCL FP_CONTRACT OFF\s*#endif", text)
    assert "cl_khr_fp64" in double
    assert "cl_khr_fp64" not in single and not re.search(r"\bdouble\b", single.split("*/", 2)[-1])


# --- device selection, capabilities, build errors -------------------------------------------

def test_bad_device_selection_names_the_devices_there_are(monkeypatch):
    src = generate(KernelSpec(backend="opencl", layout="caosoa", vl=8))
    with pytest.raises(BackendUnavailable, match=r"no device whose name contains 'no-such-device-xyz'.*devices here"):
        ob.compile(src, LX, LY, device="no-such-device-xyz")
    with pytest.raises(BackendUnavailable, match=r"no device 97:3"):
        ob.compile(src, LX, LY, device="97:3")
    monkeypatch.setenv("PYOPENCL_CTX", "no-such-device-xyz")
    with pytest.raises(BackendUnavailable, match=r"PYOPENCL_CTX"):
        ob.select_device()


def test_device_selection_by_index_and_name_substring():
    entry = next(e for e in ob.devices() if e[3].int_ptr == DEVICE.int_ptr)
    assert ob.select_device(f"{entry[0]}:{entry[1]}").int_ptr == DEVICE.int_ptr
    assert DEVICE.name.strip().lower() in ob.select_device(DEVICE.name.strip()[2:].upper()).name.lower()


def test_double_precision_on_a_device_without_fp64_is_a_clear_error(monkeypatch):
    class NoFP64:
        name = "Tiny Embedded GPU"
        double_fp_config = 0
    monkeypatch.setattr(ob, "select_device", lambda device=None: NoFP64())
    src = generate(KernelSpec(backend="opencl", layout="soa", vl=None))
    with pytest.raises(BackendUnavailable, match=r"'Tiny Embedded GPU' has no double precision"):
        ob.compile(src, LX, LY)


def test_build_failure_raises_compile_error_with_the_cl_path_and_the_log():
    src = generate(KernelSpec(backend="opencl", layout="aos", vl=None, prefix="broken"))
    anchor = "const broken_index g = (broken_index)get_global_id(0);"     # the kernels' index type
    assert anchor in src.text
    bad = src.text.replace(anchor, anchor + " undeclared_identifier_zz = 1;", 1)
    broken = dataclasses.replace(src, files={src.main_file: bad})
    with pytest.raises(CompileError) as info:
        ob.compile(broken, LX, LY)
    message = str(info.value)
    assert "broken_kernels.cl" in message and "undeclared_identifier_zz" in message
    path = re.search(r"generated file (\S+\.cl)", message).group(1)
    assert open(path).read() == bad


def test_programs_are_cached_in_process_and_work_group_size_is_configurable():
    src = generate(KernelSpec(backend="opencl", layout="caosoa", vl=32))
    first = ob.compile(src, LX, LY)
    second = ob.compile(src, LX, 2 * LY, block_size=32)
    assert second.program is first.program
    assert first.block_size == ob.DEFAULT_BLOCK_SIZE and second.block_size == 32
    assert second._site_range[0][0] % 32 == 0


# --- the binary cache, and the suite's unoptimised builds ---------------------------------------

#: one process's build: a strict D2Q37 program, 3 fused steps from a fixed state; prints the digest
#: of the result's bits
_BUILD_AND_STEP = """
import hashlib, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from helpers import FORCE, LX, LY, step_fused
from lbgen.backends import opencl as ob
from lbgen.codegen.render import generate
from lbgen.codegen.spec import KernelSpec
prog = ob.compile(generate(KernelSpec(backend="opencl", layout="soa", vl=None)), LX, LY, strict=True)
f0 = 1.0 + 0.01 * np.random.default_rng(7).standard_normal((prog.layout.Q, LX, LY))
a, b = prog.pack(f0), prog.allocate()
for _ in range(3):
    a, b = step_fused(prog, a, b, tau=0.8, ax=FORCE[0], ay=FORCE[1])
print(hashlib.sha256(prog.unpack(a).tobytes()).hexdigest())
"""


def _build_log(path):
    return [line.split("\t") for line in path.read_text().splitlines()] if path.exists() else []


def test_a_program_is_compiled_once_per_machine_and_other_processes_load_its_binary(tmp_path):
    """Two processes at once (xdist workers, MPI ranks) and a third after them: one compile (the
    file lock), the others load the stored binary, and all three step to the same bits."""
    import subprocess
    import sys
    log = tmp_path / "build.log"
    env = dict(os.environ, LBGEN_CACHE_DIR=str(tmp_path / "cache"), LBGEN_BUILD_LOG=str(log),
               XDG_CACHE_HOME=str(tmp_path / "xdg"))
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = [sys.executable, "-c", _BUILD_AND_STEP, tests]
    together = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
    outputs = [p.communicate(timeout=600) for p in together]
    assert all(p.returncode == 0 for p in together), [err[-2000:] for _, err in outputs]
    after = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert after.returncode == 0, after.stderr[-2000:]
    digests = {out.strip() for out, _ in outputs} | {after.stdout.strip()}
    assert len(digests) == 1
    builds = _build_log(log)
    assert [parts[0] for parts in builds] == ["opencl"]
    assert (tmp_path / "cache" / "opencl" / builds[0][2] / ob.platform.BINARY).is_file()


@pytest.mark.parametrize("damage", ["checksum", "refused"])
def test_a_damaged_or_refused_binary_is_replaced_by_a_source_build(damage, tmp_path, monkeypatch):
    from lbgen.system.cache import write_checked
    monkeypatch.setenv("LBGEN_CACHE_DIR", str(tmp_path / "cache"))
    log = tmp_path / "build.log"
    monkeypatch.setenv("LBGEN_BUILD_LOG", str(log))
    monkeypatch.setattr(ob.platform, "_programs", {})           # nothing built in this process
    src = generate(KernelSpec(backend="opencl", layout="aos", vl=None, prefix=f"damaged_{damage}"))
    options = ob.build_options(strict=True)
    ob.build(src, DEVICE, options)
    binary = tmp_path / "cache" / "opencl" / _build_log(log)[0][2] / ob.platform.BINARY
    if damage == "checksum":
        binary.write_bytes(binary.read_bytes()[:-100])                      # truncated
    else:
        write_checked(binary, b"not a program binary of any OpenCL runtime")   # intact, but no binary
    monkeypatch.setattr(ob.platform, "_programs", {})
    program = ob.build(src, DEVICE, options)
    assert len(_build_log(log)) == 2                                        # built again from source
    assert program.all_kernels()                                            # a usable program
    ob.platform.read_checked(binary)                                        # and an intact binary again
    monkeypatch.setattr(ob.platform, "_programs", {})
    ob.build(src, DEVICE, options)
    assert len(_build_log(log)) == 2                                        # which a later build loads


def test_the_suites_unoptimised_strict_build_has_the_bits_of_the_optimised_one(monkeypatch, initial_state,
                                                                               run_program):
    """The suite builds OpenCL with -cl-opt-disable ($LBGEN_OPT_LEVEL below -O2, tests/conftest.py);
    runs build with the runtime's optimiser: a strict build's bits are the same."""
    src = generate(KernelSpec(backend="opencl", layout="csoa", vl=8, collision="regularized"))
    results = {}
    for level in ("-O1", "-O3"):
        monkeypatch.setenv("LBGEN_OPT_LEVEL", level)
        prog = ob.compile(src, LX, LY, strict=True)
        assert (ob.platform.UNOPTIMISED in prog.options) == (level == "-O1")
        results[level] = run_program(prog, initial_state, STRICT_STEPS, "fused", "regularized")
    assert np.array_equal(results["-O1"], results["-O3"])
