"""The GPU runtimes of the CUDA backend (backends/cuda/runtimes.py): CuPy and pycuda.

Without a GPU: $LBGEN_CUDA_RUNTIME is checked in words; the automatic choice (CuPy, then
pycuda) observed with fake ``cupy`` / ``pycuda`` modules in sys.modules; and CudaProgram run
through a runtime that keeps its "device" arrays on the host and launches the kernels through
the host shim (``ShimRuntime`` below): every call CudaProgram makes goes through the runtime
interface, bit-identical to the shim's own program, in 2D and 3D; take/put (their .cu text
through the shim); the provenance, manifest and start line name the runtime.

On a GPU (skipped without one): CuPy and pycuda, both where installed, give the same bits on the
same strict source (2D D2Q37 with walls, 3D D3Q19 with walls, a lid and a mask, 20 steps), and
take/put/async copies round-trip.  Run them with ``pytest tests/backends -k "cuda and runtime"``.
"""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from lbgen.backends.build import BackendUnavailable
from lbgen.backends.cuda import runtimes
from lbgen.simulation.runner import Walls

import cuda_fakes
from cuda_fakes import fake_pycuda
from helpers import require


@pytest.fixture
def fresh(monkeypatch):
    """No runtime chosen yet, $LBGEN_CUDA_RUNTIME unset."""
    monkeypatch.setattr(runtimes, "_CHOSEN", {})
    monkeypatch.delenv(runtimes.RUNTIME_ENV, raising=False)
    return monkeypatch


# --- the choice -------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["opencl", "CuPy2", "auto"])
def test_an_unknown_runtime_name_is_refused_in_words(fresh, value):
    from lbgen.backends import available
    fresh.setenv(runtimes.RUNTIME_ENV, value)
    with pytest.raises(BackendUnavailable) as e:
        runtimes.runtime()
    assert f"{runtimes.RUNTIME_ENV}={value!r}" in str(e.value) and "cupy or pycuda" in str(e.value)
    ok, why = available("cuda")
    assert not ok and value in why
    assert runtimes._CHOSEN == {}


def _fake_cupy(devices=1):
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "99.0-fake"
    used = []
    cupy.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: devices),
        Device=lambda i: types.SimpleNamespace(use=lambda: used.append(i)))
    cupy.used = used
    return cupy


def _install(monkeypatch, cupy=None, pycuda=None):
    """Fake modules in sys.modules; None: the package does not import."""
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    for name in ("pycuda", "pycuda.driver", "pycuda.gpuarray", "pycuda.compiler", "pycuda.tools"):
        monkeypatch.setitem(sys.modules, name, None if pycuda is None else pycuda[name])


def test_cupy_comes_first_when_it_finds_a_device(fresh):
    cupy = _fake_cupy(1)
    pycuda, log = fake_pycuda(1)
    _install(fresh, cupy, pycuda)
    rt = runtimes.runtime()
    assert type(rt) is runtimes.CuPyRuntime and rt.label == "CuPy 99.0-fake"
    assert cupy.used == [0] and log == []                   # device 0 in use; pycuda never touched
    assert runtimes.runtime() is rt                         # made once


def test_pycuda_when_cupy_finds_no_device_or_does_not_import(fresh):
    for cupy in (_fake_cupy(0), None):
        fresh.setattr(runtimes, "_CHOSEN", {})
        pycuda, log = fake_pycuda(1)
        _install(fresh, cupy, pycuda)
        rt = runtimes.runtime()
        assert type(rt) is runtimes.PyCudaRuntime and rt.label == "pycuda 2099.1"
        assert log == ["init", "device 0", "push"]          # the primary context of device 0, pushed once
        rt._pop()                                           # what atexit does
        rt._pop()
        assert log[3:] == ["pop", "clear"]


def test_the_variable_overrides_the_order(fresh):
    pycuda, log = fake_pycuda(1)
    _install(fresh, _fake_cupy(1), pycuda)
    fresh.setenv(runtimes.RUNTIME_ENV, " PyCUDA ")
    rt = runtimes.runtime()
    assert type(rt) is runtimes.PyCudaRuntime
    rt._pop()
    fresh.setenv(runtimes.RUNTIME_ENV, "cupy")
    assert type(runtimes.runtime()) is runtimes.CuPyRuntime


def test_a_named_runtime_that_does_not_import_is_named(fresh):
    _install(fresh, _fake_cupy(1), None)
    fresh.setenv(runtimes.RUNTIME_ENV, "pycuda")
    with pytest.raises(BackendUnavailable) as e:
        runtimes.runtime()
    text = str(e.value)
    assert "LBGEN_CUDA_RUNTIME=pycuda" in text and "pycuda cannot be imported" in text and "lbgen[pycuda]" in text


def test_no_runtime_names_both_reasons(fresh):
    pycuda, _ = fake_pycuda(0)
    _install(fresh, None, pycuda)
    with pytest.raises(BackendUnavailable) as e:
        runtimes.runtime()
    text = str(e.value)
    assert "CuPy cannot be imported" in text and "pycuda found no CUDA device" in text
    assert runtimes._CHOSEN == {}


# --- CudaProgram through a runtime on the host (the shim runs the kernels) -------------------------

@pytest.fixture
def shim_runtime(monkeypatch):
    rt = cuda_fakes.shim_runtime()
    monkeypatch.setattr(runtimes, "_CHOSEN", {"": rt})
    monkeypatch.delenv(runtimes.RUNTIME_ENV, raising=False)
    return rt


@pytest.fixture
def fake_pycuda_runtime(fresh):
    """PyCudaRuntime, chosen automatically (no CuPy), over fake_pycuda (tests/backends/cuda_fakes.py): (runtime, log)."""
    cuda_fakes.require_shim_and_nvcc()
    mods, log = fake_pycuda(1)
    _install(fresh, None, mods)
    rt = runtimes.runtime()
    assert type(rt) is runtimes.PyCudaRuntime
    yield rt, log
    rt._pop()


#: a runtime on the CPU: (runtime, its label, the kernel launches it made so far)
@pytest.fixture(params=["shim-runtime", "fake-pycuda"])
def cpu_runtime(request):
    if request.param == "shim-runtime":
        rt = request.getfixturevalue("shim_runtime")
        return rt, "shim-runtime 0.0", lambda: list(rt.launches)
    rt, log = request.getfixturevalue("fake_pycuda_runtime")
    return rt, "pycuda 2099.1", lambda: [e[1] for e in log if isinstance(e, tuple) and e[0] == "launch"]


def _populations(sim_kw, shape, backend, steps):
    import lbgen
    sim = lbgen.Simulation(*shape, backend=backend, strict=True, **sim_kw)
    rng = np.random.default_rng(3)
    sim.set_fields(1.0 + 1e-2 * rng.standard_normal(shape), 0.02, 0.01, *([0.0] if len(shape) == 3 else []))
    sim.run(steps)
    return sim, sim.populations()


CASES = {
    "2d-d2q37-walls": (dict(layout="caosoa", vl=8, walls=Walls(1.03, 0.97), check_every=0), (8, 32)),
    "3d-d3q19-walls-lid-mask": (dict(velocity_set="d3q19", layout="caosoa", vl=8, walls="z",
                                     lid={"z-high": (0.05, 0, 0)},
                                     mask=np.random.default_rng(8).random((6, 6, 8)) < 0.1), (6, 6, 8)),
}


#: the 2D case compiles for 30 s cold (slow); the fast suite's 2D launches through the runtime: the start-line test
@pytest.mark.parametrize("case", [pytest.param(c, marks=(pytest.mark.slow,) if c.startswith("2d") else ())
                                  for c in CASES])
def test_a_program_through_the_runtime_interface_equals_the_c_backend(cpu_runtime, case):
    """CudaProgram with every device call through the runtime (PyCudaRuntime: every pycuda call
    it makes): strict, the same bits as the C backend's strict build (as the shim's own program
    is), and the kernels went through the runtime's launches."""
    rt, label, launches = cpu_runtime
    kw, shape = CASES[case]
    sim, through_runtime = _populations(kw, shape, "cuda", 4)
    assert launches() and sim.program.rt is rt
    c_sim, c = _populations(kw, shape, "c", 4)
    assert np.array_equal(through_runtime, c)
    assert sim.program.provenance()["cuda_runtime"] == label
    got, want = sim.fields(), c_sim.fields()               # the fields kernel's outputs copied back
    assert all(np.array_equal(got[k], want[k]) for k in want)


def test_in_place_through_the_runtime_interface_ends_with_the_c_pull_bits(shim_runtime):
    """CudaProgram in place (one buffer, templates/gpu/inplace.j2) with its launches through the
    runtime: after an odd count, walls, a lid and a mask, the C backend's strict pull state."""
    kw, shape = CASES["3d-d3q19-walls-lid-mask"]
    sim, in_place = _populations({**kw, "streaming": "inplace"}, shape, "cuda", 5)
    assert {"lbgen_aa_even", "lbgen_aa_odd", "lbgen_aa_fold", "lbgen_aa_lid_rho"} <= set(shim_runtime.launches)
    assert [r.g for r in sim.regions] == [None]
    assert np.array_equal(in_place, _populations(kw, shape, "c", 5)[1])


def test_halo_slabs_through_the_runtime(cpu_runtime):
    """CudaProgram's halo-slab methods (lbgen.parallel.halo) on the runtime: gather and scatter
    with its take / put, slab copies both ways on the compute stream and aside, each counted."""
    _halo_slabs()


def _halo_slabs():
    from lbgen.backends import compile as compile_program
    from lbgen.codegen.render import generate
    from lbgen.codegen.spec import KernelSpec
    prog = compile_program("cuda", generate(KernelSpec(backend="cuda", layout="soa", velocity_set="d3q19")), (4, 4, 8))
    rng = np.random.default_rng(4)
    values = rng.standard_normal(prog.layout.size)
    f = prog.upload(values)
    where = rng.permutation(prog.layout.size)[:100]
    index, slab, host = prog.slab_index(where), prog.slab_buffer(100), prog.slab_host(100)
    prog.transfers.clear()
    prog.gather(f, index, slab)
    for aside in (False, True):
        host[...] = 0
        prog.slab_to_host(slab, host, aside=aside)
        prog.wait_aside() if aside else prog.synchronize()
        assert np.array_equal(host, values[where])
    for k, aside in ((2.0, False), (3.0, True)):
        g = prog.allocate()
        host[...] = k * values[where]
        prog.slab_to_device(host, slab, aside=aside)
        prog.scatter(g, index, slab)
        want = np.zeros(prog.layout.size)
        want[where] = k * values[where]
        assert np.array_equal(prog.download(g), want)
    size = prog.layout.size * 8
    assert dict(prog.transfers) == {"to host copies": 4, "to host bytes": 2 * 800 + 2 * size,
                                    "to device copies": 2, "to device bytes": 2 * 800}


def test_pycuda_is_given_the_options_cupy_builds_with(fake_pycuda_runtime):
    """SourceModule: nvcc's options as CuPy's (strict: --fmad=false; always -ftz=true), the
    source's folder as an include folder, the arch of device 0, no extern "C" wrapper."""
    rt, log = fake_pycuda_runtime
    kw, shape = CASES["3d-d3q19-walls-lid-mask"]
    _populations(kw, shape, "cuda", 1)
    assert [e for e in log if isinstance(e, tuple) and e[0] == "compile"] == \
        [("compile", ("--fmad=false", "-ftz=true"), 1)]             # the SourceModule's own asserts: the rest


def test_the_manifest_and_the_start_line_name_the_runtime(cpu_runtime, tmp_path):
    from click.testing import CliRunner
    from lbgen.cli.main import main
    from lbgen.output import read_manifest
    for extra, shape in (([], ["--lx", "8", "--ly", "16"]), (["--velocity-set", "d3q19"],
                                                           ["--lx", "4", "--ly", "4", "--lz", "8"])):
        out = tmp_path / ("3d" if extra else "2d")
        res = CliRunner().invoke(main, ["run", *extra, *shape, "--steps", "2", "--backend", "cuda", "--layout", "soa",
                                        "--out", str(out)])
        assert res.exit_code == 0, res.output
        start = next(line for line in res.output.splitlines() if line.startswith("lbgen run:"))
        assert "cuda soa" in start and start.endswith(f" through {cpu_runtime[1]}"), start
        kernels = read_manifest(out)["device"]
        names = [r.get("cuda_runtime") for r in kernels["regions"]] if "regions" in kernels \
            else [kernels.get("cuda_runtime")]
        assert names == [cpu_runtime[1]], kernels


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_take_and_put_kernels_round_trip(cpu_runtime, dtype):
    """take/put: their .cu text through the shim with the runtime's launch (n not a multiple of the block)."""
    rt, _, launches = cpu_runtime
    f = rt.to_device(np.arange(1000, dtype=dtype))
    where = np.random.default_rng(1).permutation(1000)[:300].astype(np.int64)
    index = rt.to_device(where)
    out = rt.zeros(300, dtype)
    rt.take(f, index, out)
    assert np.array_equal(rt.to_host(out), where.astype(dtype))
    g = rt.zeros(1000, dtype)
    rt.put(g, index, out)
    want = np.zeros(1000, dtype)
    want[where] = where
    assert np.array_equal(rt.to_host(g), want)
    assert launches() == [f"lbgen_take_{'double' if dtype == np.float64 else 'float'}",
                          f"lbgen_put_{'double' if dtype == np.float64 else 'float'}"]
    rt.take(f, rt.zeros(0, np.int64), rt.zeros(0, dtype))              # empty: nothing launched
    assert len(launches()) == 2


def test_nvcc_compiles_the_take_and_put_kernels(tmp_path):
    """The text both GPU runtimes compile for take/put, as pycuda's SourceModule calls nvcc."""
    import subprocess
    from lbgen.backends.cuda import nvcc
    require(*nvcc.available(), "nvcc")
    (tmp_path / "kernel.cu").write_text(runtimes.INDEX_KERNELS)
    proc = subprocess.run([nvcc.find_nvcc(), "--cubin", *runtimes.NVCC_OPTIONS, "-arch", "sm_90", "kernel.cu"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    binary = (tmp_path / "kernel.cubin").read_bytes()
    assert all(f"lbgen_{k}_{t}".encode() in binary for k in ("take", "put") for t in ("double", "float"))


def test_take_and_put_refuse_bad_arrays(shim_runtime):
    rt = shim_runtime
    f, out = rt.zeros(10, np.float64), rt.zeros(3, np.float64)
    with pytest.raises(TypeError, match="index is int64 \\(int32 given\\)"):
        rt.take(f, rt.zeros(3, np.int32), out)
    with pytest.raises(ValueError, match="index has 4 elements, out 3"):
        rt.take(f, rt.zeros(4, np.int64), out)
    with pytest.raises(TypeError, match="device arrays"):
        rt.put(f, np.zeros(3, np.int64), out)
    with pytest.raises(ValueError, match="whole arrays of one dtype"):
        rt.to_host_async(f, np.empty(9))
    assert rt.launches == []


# --- on a GPU: CuPy and pycuda side by side (each skipped where it is not installed) -------------

def _gpu_runtime(key):
    try:
        return runtimes.RUNTIMES[key]()
    except BackendUnavailable as e:
        pytest.skip(f"{key}: {e}")


def _on(monkeypatch, key):
    monkeypatch.setattr(runtimes, "_CHOSEN", {})
    monkeypatch.setenv(runtimes.RUNTIME_ENV, key)


@pytest.mark.parametrize("case", list(CASES))
def test_gpu_cupy_and_pycuda_give_the_same_bits(monkeypatch, case):
    for key in runtimes.RUNTIMES:
        _gpu_runtime(key)
    kw, shape = CASES[case]
    got = {}
    for key in runtimes.RUNTIMES:
        _on(monkeypatch, key)
        sim, got[key] = _populations(kw, shape, "cuda", 20)
        assert sim.program.provenance()["cuda_runtime"].lower().startswith(key)
    assert np.array_equal(got["cupy"], got["pycuda"])
    assert np.isfinite(got["cupy"]).all()


@pytest.mark.parametrize("key", list(runtimes.RUNTIMES))
def test_gpu_runtime_take_put_and_async_copies(monkeypatch, key):
    _gpu_runtime(key)
    _on(monkeypatch, key)
    _round_trips(runtimes.runtime())
    _halo_slabs()


def test_pycuda_runtime_round_trips_on_a_fake_pycuda(fake_pycuda_runtime):
    """The GPU test's round trips with PyCudaRuntime over fake_pycuda: the aside copies on one
    non-blocking stream, the one to the host after waiting for an event recorded on the compute
    stream; the others on the compute stream."""
    rt, log = fake_pycuda_runtime
    _round_trips(rt)
    copies = [e for e in log if e == "wait" or isinstance(e, tuple) and e[0] in ("dtoh", "htod")]
    assert copies == ["wait", ("dtoh", True), ("htod", True), ("dtoh", False), ("htod", False)]
    assert [e for e in log if isinstance(e, tuple) and e[0] == "stream"] == [("stream", 1)]   # CU_STREAM_NON_BLOCKING


def _round_trips(rt):
    """take, pinned async copies both ways, put, the copy bandwidth and available() through a runtime."""
    from lbgen.backends import cuda
    assert rt.arch.startswith("sm_") and rt.free_memory() > 0 and rt.device_name()
    host = np.random.default_rng(2).standard_normal(5000)
    f = rt.to_device(host)
    index_host = np.random.default_rng(3).permutation(5000)[:777].astype(np.int64)
    index = rt.to_device(index_host)
    out = rt.zeros(777, np.float64)
    rt.take(f, index, out)
    pinned = rt.pinned_empty(777, np.float64)
    rt.to_host_async(out, pinned, aside=True)
    rt.stream_synchronize()
    assert np.array_equal(pinned, host[index_host])
    g = rt.zeros(5000, np.float64)
    back = rt.zeros(777, np.float64)
    rt.synchronize()            # an aside copy to the device does not wait for the zeros' memsets
    rt.to_device_async(pinned, back, aside=True)
    rt.stream_synchronize()
    rt.put(g, index, back)
    want = np.zeros(5000)
    want[index_host] = host[index_host]
    assert np.array_equal(rt.to_host(g), want)
    again = rt.pinned_empty(5000, np.float64)                      # on the compute stream: after put
    rt.to_host_async(g, again, aside=False)
    rt.synchronize()
    assert np.array_equal(again, want)
    reverse = rt.pinned_empty(5000, np.float64)
    reverse[...] = again[::-1]
    rt.to_device_async(reverse, f, aside=False)
    rt.synchronize()
    assert np.array_equal(rt.to_host(f), want[::-1])
    assert rt.device_count() >= 1
    assert rt.array_interface_ok == hasattr(f, "__cuda_array_interface__")
    bandwidth = cuda.copy_bandwidth(repeat=2, nbytes=1 << 26)           # through the runtime's events
    assert bandwidth["runtime"] == rt.label and bandwidth["gbs"] > 50
    ok, why = cuda.available()
    assert ok and why.startswith(f"CUDA via {rt.label} on ")
