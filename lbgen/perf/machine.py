"""The machine's limits, measured: copy bandwidth and FMA peak of this host.

Small C micro-kernels (templates/bench/machine.c: a copy with the kernels' shape, Q read
+ Q write streams (Q of the default velocity set), normal and streaming stores, with and without software prefetch; and
independent FMA chains) compiled once with the backends' library cache.  Used by
``lbgen bench`` (the denominators of its fractions) and the performance models.
"""
from __future__ import annotations

import math
import socket
import time
from functools import lru_cache
from importlib import resources
from typing import Dict, Iterable, Optional

import numpy as np

from lbgen.backends.build import cpu_model
from lbgen.system.timing import stats

MACHINE_C_DECLS = """
int bench_set_threads(int n);
int bench_vector_bits(void);
void bench_copy(const double *src, double *dst, ptrdiff_t n, ptrdiff_t stride, int streams, int streaming, int prefetch);
double bench_peak_double(long iters, double *flops);
double bench_peak_single(long iters, double *flops);
"""



@lru_cache(maxsize=1)
def _machine_lib():
    """(ffi, lib) of the micro-benchmarks, compiled once and cached under cache_dir('bench')."""
    from cffi import FFI

    from lbgen.backends.build import build_library
    from lbgen.backends.c import compiler, compiler_version
    source = resources.files("lbgen.backends.c").joinpath("machine.c").read_text()
    cc = compiler()
    flags = ("-O3", "-march=native", "-fopenmp", "-std=gnu11", "-fPIC", "-shared")
    lib_path = build_library("bench", (source, flags, compiler_version(cc)), {"machine.c": source},
                             lambda folder, out: [cc, *flags, "-o", out, folder / "machine.c"], "machine.c",
                             "gcc (bench micro-kernels)", library="libmachine.so")
    ffi = FFI()
    ffi.cdef(MACHINE_C_DECLS)
    return ffi, ffi.dlopen(str(lib_path))


def set_threads(threads: int = 0) -> int:
    """Set the OpenMP thread count of the micro-benchmarks (0: all); returns the count used."""
    from lbgen.system.limits import resolve_threads
    _, lib = _machine_lib()
    return int(lib.bench_set_threads(resolve_threads(int(threads))))   # OMP_NUM_THREADS capped


def vector_bits() -> int:
    return int(_machine_lib()[1].bench_vector_bits())


#: the copy's streams lie this many doubles past a whole number of 4 KiB pages apart
#: (one 64-byte line): stream i starts i lines into its page, so no two of up to 64 streams
#: share their cache sets.  Streams exactly a power of two apart (a 128^3 lattice's 19
#: population arrays copied back to back) ran the streaming copy at 5.3 GB/s against
#: 32 GB/s with this spacing on a Zen 3 VM (docs/performance-history.md), which made kernels
#: "faster than the copy".
STREAM_SKEW = 8
PAGE_DOUBLES = 4096 // 8


def stream_stride(n: int) -> int:
    """Doubles from one copy stream's start to the next for streams of n doubles: n rounded
    up to whole 4 KiB pages, plus STREAM_SKEW (so never a multiple of 4 KiB)."""
    return -(-int(n) // PAGE_DOUBLES) * PAGE_DOUBLES + STREAM_SKEW


def measure_bandwidth(nbytes: int = 512 << 20, threads: int = 0, repeat: int = 5,
                      streams: Optional[int] = None) -> Dict:
    """Copy bandwidth (GB/s, read + write bytes) of a `streams`-stream copy, normal and streaming stores.

    ``nbytes`` is the size of each of the two buffers (rounded to whole 64-byte blocks per
    stream); keep it well above the last-level cache.
    """
    from lbgen.backends.build import aligned_zeros
    if streams is None:      # the kernels' shape: Q read and Q write streams of the default set
        from lbgen.model.catalog import DEFAULT_VELOCITY_SET
        from lbgen.model.velocity_set import velocity_set
        streams = velocity_set(DEFAULT_VELOCITY_SET).Q
    ffi, lib = _machine_lib()
    used = set_threads(threads)
    n = max(8, (int(nbytes) // (8 * streams)) // 8 * 8)
    stride = stream_stride(n)
    src = aligned_zeros(stride * streams, np.float64)
    dst = aligned_zeros(stride * streams, np.float64)
    src[:] = 1.0
    dst[:] = 0.0
    ps, pd = ffi.cast("double *", src.ctypes.data), ffi.cast("double *", dst.ctypes.data)
    moved = 2 * 8 * n * streams
    # one call should last >= 20 ms; small (test) buffers are copied several times per sample
    lib.bench_copy(ps, pd, n, stride, streams, 0, 0)
    t0 = time.perf_counter()
    lib.bench_copy(ps, pd, n, stride, streams, 1, 0)
    once = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(math.ceil(0.02 / once)))
    out = {"bytes_per_buffer": 8 * n * streams, "streams": streams, "stream_stride_bytes": 8 * stride,
           "threads": used, "calls_per_sample": inner}
    # each store kind with and without software prefetch (4 lines ahead per stream, as the
    # kernels prefetch their next clusters): the limit is the better of the two
    for name, streaming in (("normal", 0), ("streaming", 1)):
        variants = {}
        for prefetch in (0, 4):
            samples = []
            for _ in range(max(1, repeat)):
                t0 = time.perf_counter()
                for _ in range(inner):
                    lib.bench_copy(ps, pd, n, stride, streams, streaming, prefetch)
                dt = time.perf_counter() - t0
                samples.append(moved * inner / dt / 1e9)
            variants[prefetch] = stats(samples)
        best = max(variants, key=lambda k: variants[k]["max"])
        out[name] = dict(variants[best], prefetch_lines=best,
                         without_prefetch_gbs=variants[0]["max"], with_prefetch_gbs=variants[4]["max"])
        out[name]["gbs"] = out[name]["max"]   # the limit: the best sample (noise only slows a copy down)
    # the same bytes as one contiguous read and one write stream (how AoS and CAoSoA walk
    # memory in collide): for information; the Q+Q-stream copy stays the denominator
    samples = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        for _ in range(inner):
            lib.bench_copy(ps, pd, n * streams, n * streams, 1, 1, 4)
        samples.append(moved * inner / (time.perf_counter() - t0) / 1e9)
    out["contiguous_streaming"] = dict(stats(samples), gbs=max(samples))
    copied = dst.reshape(streams, stride)[:, :n]
    if not np.all(copied[:, :: max(1, n // 97)] == 1.0):  # pragma: no cover - a broken copy kernel
        raise RuntimeError("bench copy kernel produced wrong data")
    return out


def measure_peak(precision: str = "double", threads: int = 0, repeat: int = 5, seconds: float = 0.05,
                 clock=time.perf_counter) -> Dict:
    """Peak flop rate (GFLOP/s) of independent vector FMA chains, all threads; ``clock``: the
    timer (time.process_time with one thread: the rate a loaded machine does not stretch)."""
    ffi, lib = _machine_lib()
    used = set_threads(threads)
    fn = lib.bench_peak_single if precision == "single" else lib.bench_peak_double   # mixed computes in double
    flops = ffi.new("double *")
    iters = 1000
    fn(iters, flops)
    while True:  # calibrate: one sample lasts >= seconds
        t0 = clock()
        fn(iters, flops)
        dt = clock() - t0
        if dt >= seconds or iters > 1 << 40:
            break
        iters = int(iters * max(2.0, 1.2 * seconds / max(dt, 1e-7)))
    samples = []
    for _ in range(max(1, repeat)):
        t0 = clock()
        sink = fn(iters, flops)
        dt = max(clock() - t0, 1e-9)
        samples.append(flops[0] / dt / 1e9)
    out = stats(samples)
    out.update(gflops=out["max"], precision=precision, threads=used, vector_bits=vector_bits(),
               finite_result=bool(math.isfinite(sink)))
    return out


def measure_machine(threads: int = 0, repeat: int = 5, nbytes: int = 512 << 20,
                    precisions: Iterable[str] = ("double", "single"), streams: Optional[int] = None) -> Dict:
    """The host's limits: copy bandwidth (normal, streaming stores; ``streams`` read and write
    streams, default the default set's Q) and FMA peak per precision."""
    out = {"hostname": socket.gethostname(), "cpu": cpu_model(), "vector_bits": vector_bits(),
           "bandwidth": measure_bandwidth(nbytes=nbytes, threads=threads, repeat=repeat, streams=streams)}
    out["threads"] = out["bandwidth"]["threads"]
    out["peak"] = {p: measure_peak(p, threads=threads, repeat=repeat) for p in precisions}
    return out


def merge_machine(before: Dict, after: Dict) -> Dict:
    """Limits measured before and after the kernels, samples pooled (the limit is the best sample)."""
    out = dict(before)
    bw = dict(before["bandwidth"])
    for name in ("normal", "streaming"):
        st = stats(before["bandwidth"][name]["samples"] + after["bandwidth"][name]["samples"])
        st["gbs"] = st["max"]
        bw[name] = st
    out["bandwidth"] = bw
    peak = {}
    for p, pk in before["peak"].items():
        st = stats(pk["samples"] + after["peak"][p]["samples"])
        peak[p] = dict(pk, **st, gflops=st["max"])
    out["peak"] = peak
    out["measured"] = "before and after the kernels, samples pooled"
    return out


# --- kernel traffic and flop counts ---------------------------------------------------------------


def copy_limits(limits: dict) -> tuple:
    """(best, normal) copy bandwidth [GB/s] of one runtime's limits in a bench report: the
    streaming-store copy where measured (else the normal-store one, else a device's own
    copy) and the normal-store one (else a device's); None where nothing was measured."""
    bw = (limits or {}).get("bandwidth") or {}
    normal = (bw.get("normal") or {}).get("gbs") or bw.get("gbs")
    return (bw.get("streaming") or {}).get("gbs") or normal, normal
