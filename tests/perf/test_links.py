"""Device <-> host copies (lbgen.perf.links): the postal fit, the OpenCL measurement `lbgen bench`
writes into its JSON, and what `lbgen model --bench-json` reads back."""
import math

import pytest
from helpers import require

from lbgen.perf import links as Lk


def test_the_fit_recovers_a_postal_model_per_direction():
    sizes = Lk.SIZES
    times = {"to_host": [2e-5 + n / 1e10 for n in sizes], "to_device": [1e-5 + n / 4e9 for n in sizes]}
    fit = Lk.fit_links(sizes, times)
    assert fit["to_host"]["latency"] == pytest.approx(2e-5) and fit["to_host"]["bandwidth"] == pytest.approx(1e10)
    assert fit["to_device"]["latency"] == pytest.approx(1e-5) and fit["to_device"]["bandwidth"] == pytest.approx(4e9)


def test_time_copies_times_each_direction_and_size():
    made = []

    def copier(nbytes, direction):
        made.append((nbytes, direction))
        return lambda: None
    times = Lk.time_copies(copier, sizes=(8, 64), repeat=2)
    assert made == [(8, "to_host"), (64, "to_host"), (8, "to_device"), (64, "to_device")]
    assert [len(times[d]) for d in Lk.DIRECTIONS] == [2, 2]


def test_opencl_copies_are_measured_and_host_programs_have_none(programs):
    from lbgen.backends import available
    require(*available("opencl"), "OpenCL")
    prog = programs.of("opencl", (8, 64), layout="soa")
    out = Lk.measure_links(prog, repeat=1, sizes=(8, 1 << 16, 1 << 20))
    for d in Lk.DIRECTIONS:
        assert len(out["times"][d]) == 3 and all(t > 0 for t in out["times"][d])
        assert math.isfinite(out[d]["bandwidth"]) and out[d]["bandwidth"] > 0 and out[d]["latency"] > 0
    assert Lk.measure_links(programs.of("c", (8, 64), layout="soa")) is None


def test_links_from_bench_reads_the_copies_and_the_runtimes_copy_limit():
    hd = {"to_host": {"latency": 1e-5, "bandwidth": 2e10}, "to_device": {"latency": 2e-5, "bandwidth": 1e10}}
    host = {"bandwidth": {"normal": {"gbs": 30.0}, "streaming": {"gbs": 40.0}}, "host_device": hd}
    got = Lk.links_from_bench({"limits": {"opencl": host}}, "opencl")
    assert got == {"to_host_latency": 1e-5, "to_host_bandwidth": 2e10, "to_device_latency": 2e-5,
                   "to_device_bandwidth": 1e10, "memory_bandwidth": 40e9}       # the streaming copy (a CPU runtime)
    device = {"bandwidth": {"gbs": 4036.0, "device_copy": {}}}
    assert Lk.links_from_bench({"limits": {"cuda": device}}, "cuda") == {"memory_bandwidth": 4036e9}
    with pytest.raises(ValueError, match="no limits of the cuda backend"):
        Lk.links_from_bench({"limits": {"c": host}}, "cuda")


def test_bench_writes_the_copies_into_the_opencl_limits():
    from lbgen.backends import available
    from lbgen.perf import bench as B
    require(*available("opencl"), "OpenCL")
    host = {"bandwidth": {"streaming": {"gbs": 40.0}}, "hostname": "h", "cpu": "c"}
    lim = B.backend_limits("opencl", B.BenchConfig(repeat=1), host)
    assert "error" not in lim, lim.get("error")
    assert set(lim["host_device"]) >= {"to_host", "to_device", "sizes", "times", "method"}
    assert lim["host_device"]["sizes"] == list(Lk.SIZES)
    assert Lk.links_from_bench({"limits": {"opencl": lim}}, "opencl")["to_host_bandwidth"] > 0


def test_the_cuda_copier_copies_between_device_memory_and_pinned_host_memory(monkeypatch):
    # no GPU here: a stand-in for CuPy under the CuPy runtime records the cudaMemcpyAsync calls the copier makes
    import sys
    from types import SimpleNamespace

    import numpy as np
    from lbgen.backends.cuda.runtimes import CuPyRuntime
    calls, pinned = [], []
    runtime = SimpleNamespace(memcpyDeviceToHost=2, memcpyHostToDevice=1, getDeviceCount=lambda: 1,
                              memcpyAsync=lambda *a: calls.append(a))
    stream = SimpleNamespace(ptr=77, synchronize=lambda: calls.append("sync"))

    class ndarray:
        def __init__(self, n, dtype):
            self.size, self.dtype, self.data = n, np.dtype(dtype), SimpleNamespace(ptr=1000 + n)
    cupy = SimpleNamespace(__version__="0-fake", ndarray=ndarray, empty=ndarray,
                           cuda=SimpleNamespace(runtime=runtime, get_current_stream=lambda: stream,
                                                Device=lambda i: SimpleNamespace(use=lambda: None)))

    def empty_pinned(shape, dtype):
        pinned.append(np.empty(shape, dtype))
        return pinned[-1]
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupyx", SimpleNamespace(empty_pinned=empty_pinned))
    copier = Lk.copier_of(SimpleNamespace(rt=CuPyRuntime()))
    copier(64, "to_host")()
    copier(32, "to_device")()
    assert calls == [(pinned[0].ctypes.data, 1064, 64, 2, 77), "sync", (1032, pinned[1].ctypes.data, 32, 1, 77), "sync"]
