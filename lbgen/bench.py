"""`lbgen bench`: kernel timings against limits of this machine measured in the same run.

What is measured
----------------
* Kernels: ``propagate``, ``bc`` (thermal walls, timed on a program generated with
  ``walls=True``), ``collide`` and ``fused`` (propagate + collide in one sweep), for each
  backend x layout/VL x collision operator x precision.  Each kernel is warmed up, then
  timed ``repeat`` times (a sample calls the kernel enough times to last >= ``min_sample``
  seconds; on big lattices that is one call); the median and the spread (min, max,
  quartiles) are reported.
* Machine limits, in the same run and with the same thread count:
  - memory bandwidth from a copy kernel of the kernels' shape: Q read + Q write streams
    (Q of the default velocity set, D2Q37)
    (aligned AVX-512/AVX2 vectors, OpenMP), once with normal stores and once with
    streaming (non-temporal) stores, counting read + write bytes;
  - peak flop rate (double and single) from independent FMA chains (AVX-512/AVX2 vector
    extensions, OpenMP), counting an FMA as 2 flops;
  - for CUDA (pycuda) the device's own device-to-device copy bandwidth (cudaMemcpy), for
    an OpenCL GPU the same with clEnqueueCopyBuffer.

How the numbers are counted
---------------------------
* MLUPS: lattice sites updated per second / 1e6 (LX*LY sites for propagate, collide and
  fused; the 2H*LX wall sites for bc, H = the largest hop).
* bytes per site: propagate, collide, fused read and write all Q populations once:
  2 * Q * sizeof(real).  bc: the elements it really accesses per column (all Q
  populations of the first bulk row to get its temperature (thermal sets), the populations
  that left towards the wall from prv, the known populations of the wall rows, and the
  unknown ones it writes), divided by the 2H wall sites; it is the useful traffic, the
  cache lines moved can be larger.
* flops per site: operations of the generated assignments as printed
  (``KernelSource.flops`` / ``lbgen.model.collide(op).flops``, see
  ``AssignmentList.op_count``: an add, subtract, multiply or divide is one flop, a fused
  multiply-add that the compiler forms counts as two); propagate has none; bc counts its
  wall-row assignments and the moments of the 4th row.
* fractions: GB/s against the streaming-store copy bandwidth (the best this machine
  does; the normal-store fraction is in the JSON too), GFLOP/s against the FMA peak of
  the kernel's precision.

Benchmarks are not tests: nothing here passes or fails on a timing.
"""
from __future__ import annotations

import math
import platform
import socket
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from . import __version__
from .model.velocity_set import DEFAULT_VELOCITY_SET

KERNELS = ("propagate", "bc", "collide", "fused")
VLS = (4, 8, 16, 32)
ALL_LAYOUTS: Tuple[Tuple[str, Optional[int]], ...] = (
    (("aos", None), ("soa", None)) + tuple(("csoa", v) for v in VLS) + tuple(("caosoa", v) for v in VLS))
#: the lattice of the paper's Table 2
PAPER_LX, PAPER_LY = 2160, 8192
#: the paper's Haswell E5-2630v3 column of Table 2, ms per iteration at 2160 x 8192, double
PAPER_HASWELL = {
    "propagate": {"aos": 408, "soa": 847, "csoa": 247, "caosoa": 286},
    "collide": {"aos": 1232, "soa": 1612, "csoa": 955, "caosoa": 812},
}
LAYOUT_NAMES = {"aos": "AoS", "soa": "SoA", "csoa": "CSoA", "caosoa": "CAoSoA"}

COUNTING = {
    "mlups": "million lattice-site updates per second; LX*LY sites for propagate/collide/fused, "
             "the 2H*LX wall sites for bc (H: the largest hop)",
    "bytes_per_site": "propagate, collide, fused: 2*Q*sizeof(real) (each population read and written once); "
                      "bc: elements actually accessed per column / 2H wall sites (useful traffic)",
    "flops_per_site": "operations of the generated assignments as printed (KernelSource.flops, "
                      "lbgen.model.collide(op).flops; AssignmentList.op_count): +,-,*,/ one flop each, "
                      "an FMA two; propagate 0; bc: wall-row assignments + moments of the first bulk row, per wall site",
    "bandwidth": "copy kernel with Q read + Q write streams (Q of D2Q37) of aligned vectors, OpenMP, same threads; "
                 "GB/s counts read + write bytes; measured with normal and with streaming (non-temporal) stores",
    "peak": "independent FMA chains on vectors (AVX-512 or AVX2), OpenMP, same threads; an FMA counts 2 flops",
    "limits": "bandwidth and peak are measured before and after the kernels (samples pooled); the limit used "
              "as denominator is the best sample (a shared machine only ever slows a micro-benchmark down); "
              "median and spread are in the JSON",
    "fractions": "frac_bw: GB/s / streaming-store copy bandwidth (frac_bw_normal: / normal-store copy "
                 "bandwidth); frac_peak: GFLOP/s / FMA peak of the kernel's precision",
    "time": "ms per kernel call: median over --repeat samples after warm-up; spread = min, max, quartiles",
}


# --- machine-limit micro-benchmarks (C, gcc + cffi) ------------------------------------------

MACHINE_C_SOURCE = r"""
#include <stddef.h>
#include <omp.h>
#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

int bench_set_threads(int n)
{
    if (n > 0) omp_set_num_threads(n);
    int t = 1;
    #pragma omp parallel
    {
        #pragma omp single
        t = omp_get_num_threads();
    }
    return t;
}

int bench_vector_bits(void)
{
#if defined(__AVX512F__)
    return 512;
#elif defined(__AVX__)
    return 256;
#else
    return 0;
#endif
}

/* dst[i*n + j] = src[i*n + j] for `streams` arrays of n doubles (n a multiple of 8, both
   64-byte aligned): per block of 8 sites every stream is read and written, like a
   propagate over Q population arrays. */
void bench_copy(const double *restrict src, double *restrict dst, ptrdiff_t n, int streams, int streaming,
                int prefetch)
{
    #pragma omp parallel
    {
        const ptrdiff_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        const ptrdiff_t nv = n / 8;
        const ptrdiff_t lo = nv * t / nt * 8, hi = nv * (t + 1) / nt * 8;
        if (streaming) {
            for (ptrdiff_t j = lo; j < hi; j += 8)
                for (int i = 0; i < streams; ++i) {
                    const double *s = src + i * n + j;
                    double *d = dst + i * n + j;
                    if (prefetch) __builtin_prefetch(s + 8 * prefetch, 0, 0);   /* like the kernels do */
#if defined(__AVX512F__)
                    _mm512_stream_pd(d, _mm512_load_pd(s));
#elif defined(__AVX__)
                    _mm256_stream_pd(d, _mm256_load_pd(s));
                    _mm256_stream_pd(d + 4, _mm256_load_pd(s + 4));
#else
                    for (int k = 0; k < 8; ++k) d[k] = s[k];
#endif
                }
#if defined(__AVX512F__) || defined(__AVX__)
            _mm_sfence();
#endif
        } else {
            for (ptrdiff_t j = lo; j < hi; j += 8)
                for (int i = 0; i < streams; ++i) {
                    const double *s = src + i * n + j;
                    double *d = dst + i * n + j;
                    if (prefetch) __builtin_prefetch(s + 8 * prefetch, 0, 0);
#if defined(__AVX512F__)
                    _mm512_store_pd(d, _mm512_load_pd(s));
#elif defined(__AVX__)
                    _mm256_store_pd(d, _mm256_load_pd(s));
                    _mm256_store_pd(d + 4, _mm256_load_pd(s + 4));
#else
                    for (int k = 0; k < 8; ++k) d[k] = s[k];
#endif
                }
        }
    }
}

#if defined(__AVX512F__)
#define VBYTES 64
#define CHAINS 16
#else
#define VBYTES 32
#define CHAINS 12
#endif
typedef double vd __attribute__((vector_size(VBYTES)));
typedef float vf __attribute__((vector_size(VBYTES)));

/* `iters` rounds of CHAINS independent a = a*b + c on full vectors in every thread;
   *flops = total flops (2 per lane per FMA).  Returns a sum so nothing is optimised away. */
#define PEAK_BODY(V, T)                                                            \
    double sink = 0.0;                                                             \
    int threads = 1;                                                               \
    _Pragma("omp parallel reduction(+:sink)")                                      \
    {                                                                              \
        _Pragma("omp single")                                                      \
        threads = omp_get_num_threads();                                           \
        V a[CHAINS];                                                               \
        V b = (V){0} + (T)0.99999, c = (V){0} + (T)1e-5;                           \
        for (int k = 0; k < CHAINS; ++k) a[k] = (V){0} + (T)(1.0 + 0.01 * k + omp_get_thread_num()); \
        for (long it = 0; it < iters; ++it) {                                      \
            _Pragma("GCC unroll 16")                                               \
            for (int k = 0; k < CHAINS; ++k) a[k] = a[k] * b + c;                  \
            __asm__ volatile("" : : : "memory");                                   \
        }                                                                          \
        V s = a[0];                                                                \
        for (int k = 1; k < CHAINS; ++k) s += a[k];                                \
        for (int l = 0; l < (int)(VBYTES / sizeof(T)); ++l) sink += s[l];          \
    }                                                                              \
    *flops = 2.0 * (double)iters * CHAINS * (VBYTES / sizeof(T)) * threads;        \
    return sink;

double bench_peak_double(long iters, double *flops) { PEAK_BODY(vd, double) }
double bench_peak_single(long iters, double *flops) { PEAK_BODY(vf, float) }
"""

MACHINE_C_DECLS = """
int bench_set_threads(int n);
int bench_vector_bits(void);
void bench_copy(const double *src, double *dst, ptrdiff_t n, int streams, int streaming, int prefetch);
double bench_peak_double(long iters, double *flops);
double bench_peak_single(long iters, double *flops);
"""


@lru_cache(maxsize=1)
def _machine_lib():
    """(ffi, lib) of the micro-benchmarks, compiled once and cached under cache_dir('bench')."""
    from cffi import FFI

    from .backends.base import build_library
    from .backends.c import compiler, compiler_version
    cc = compiler()
    flags = ("-O3", "-march=native", "-fopenmp", "-std=gnu11", "-fPIC", "-shared")
    lib_path = build_library("bench", (MACHINE_C_SOURCE, flags, compiler_version(cc)), {"machine.c": MACHINE_C_SOURCE},
                             lambda folder, out: [cc, *flags, "-o", out, folder / "machine.c"], "machine.c",
                             "gcc (bench micro-kernels)", library="libmachine.so")
    ffi = FFI()
    ffi.cdef(MACHINE_C_DECLS)
    return ffi, ffi.dlopen(str(lib_path))


def stats(samples: Sequence[float]) -> Dict[str, float]:
    a = np.asarray(list(samples), dtype=float)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {"median": float(med), "min": float(a.min()), "max": float(a.max()), "q1": float(q1), "q3": float(q3),
            "n": int(a.size), "samples": [float(x) for x in a]}


def set_threads(threads: int = 0) -> int:
    """Set the OpenMP thread count of the micro-benchmarks (0: all); returns the count used."""
    _, lib = _machine_lib()
    return int(lib.bench_set_threads(int(threads)))


def vector_bits() -> int:
    return int(_machine_lib()[1].bench_vector_bits())


def measure_bandwidth(nbytes: int = 512 << 20, threads: int = 0, repeat: int = 5,
                      streams: Optional[int] = None) -> Dict:
    """Copy bandwidth (GB/s, read + write bytes) of a `streams`-stream copy, normal and streaming stores.

    ``nbytes`` is the size of each of the two buffers (rounded to whole 64-byte blocks per
    stream); keep it well above the last-level cache.
    """
    from .backends.c import aligned_zeros
    if streams is None:      # the kernels' shape: Q read and Q write streams of the default set
        from .model import velocity_set
        streams = velocity_set(DEFAULT_VELOCITY_SET).Q
    ffi, lib = _machine_lib()
    used = set_threads(threads)
    n = max(8, (int(nbytes) // (8 * streams)) // 8 * 8)
    src = aligned_zeros(n * streams, np.float64)
    dst = aligned_zeros(n * streams, np.float64)
    src[:] = 1.0
    dst[:] = 0.0
    ps, pd = ffi.cast("double *", src.ctypes.data), ffi.cast("double *", dst.ctypes.data)
    moved = 2 * 8 * n * streams
    # one call should last >= 20 ms; small (test) buffers are copied several times per sample
    lib.bench_copy(ps, pd, n, streams, 0, 0)
    t0 = time.perf_counter()
    lib.bench_copy(ps, pd, n, streams, 1, 0)
    once = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(math.ceil(0.02 / once)))
    out = {"bytes_per_buffer": 8 * n * streams, "streams": streams, "threads": used, "calls_per_sample": inner}
    # each store kind with and without software prefetch (4 lines ahead per stream, as the
    # kernels prefetch their next clusters): the limit is the better of the two
    for name, streaming in (("normal", 0), ("streaming", 1)):
        variants = {}
        for prefetch in (0, 4):
            samples = []
            for _ in range(max(1, repeat)):
                t0 = time.perf_counter()
                for _ in range(inner):
                    lib.bench_copy(ps, pd, n, streams, streaming, prefetch)
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
            lib.bench_copy(ps, pd, n * streams, 1, 1, 4)
        samples.append(moved * inner / (time.perf_counter() - t0) / 1e9)
    out["contiguous_streaming"] = dict(stats(samples), gbs=max(samples))
    if not np.all(dst[:: max(1, dst.size // 97)] == 1.0):  # pragma: no cover - a broken copy kernel
        raise RuntimeError("bench copy kernel produced wrong data")
    return out


def measure_peak(precision: str = "double", threads: int = 0, repeat: int = 5, seconds: float = 0.05) -> Dict:
    """Peak flop rate (GFLOP/s) of independent vector FMA chains, all threads."""
    ffi, lib = _machine_lib()
    used = set_threads(threads)
    fn = lib.bench_peak_single if precision == "single" else lib.bench_peak_double   # mixed computes in double
    flops = ffi.new("double *")
    iters = 1000
    fn(iters, flops)
    while True:  # calibrate: one sample lasts >= seconds
        t0 = time.perf_counter()
        fn(iters, flops)
        dt = time.perf_counter() - t0
        if dt >= seconds or iters > 1 << 40:
            break
        iters = int(iters * max(2.0, 1.2 * seconds / max(dt, 1e-7)))
    samples = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        sink = fn(iters, flops)
        dt = time.perf_counter() - t0
        samples.append(flops[0] / dt / 1e9)
    out = stats(samples)
    out.update(gflops=out["max"], precision=precision, threads=used, vector_bits=vector_bits(),
               finite_result=bool(math.isfinite(sink)))
    return out


def cuda_copy_bandwidth(nbytes: int = 1 << 30, repeat: int = 5) -> Dict:
    """Device-to-device copy bandwidth (GB/s, read + write) of GPU 0 through pycuda.

    cudaMemcpy (cuMemcpyDtoD) of one large buffer, timed with CUDA events.  Raises
    BackendUnavailable when pycuda or a GPU is missing.
    """
    from .backends.cuda import _STATE, _driver
    cuda = _driver()
    free, _total = cuda.mem_get_info()
    nbytes = int(min(nbytes, free // 4)) // 256 * 256
    a = cuda.mem_alloc(nbytes)
    b = cuda.mem_alloc(nbytes)
    try:
        cuda.memset_d8(a, 1, nbytes)
        cuda.memset_d8(b, 0, nbytes)
        cuda.memcpy_dtod(b, a, nbytes)   # warm-up
        cuda.Context.synchronize()
        start, end = cuda.Event(), cuda.Event()
        samples = []
        for _ in range(max(1, repeat)):
            start.record()
            cuda.memcpy_dtod_async(b, a, nbytes)
            end.record()
            end.synchronize()
            ms = end.time_since(start)
            samples.append(2 * nbytes / (ms * 1e-3) / 1e9)
    finally:
        a.free()
        b.free()
    out = stats(samples)
    out.update(gbs=out["max"], bytes_per_buffer=nbytes, device=_STATE["device"].name(),
               method="cuMemcpyDtoD of one buffer, CUDA events; read + write bytes")
    return out


def opencl_copy_bandwidth(program, nbytes: int = 512 << 20, repeat: int = 5) -> Dict:
    """clEnqueueCopyBuffer bandwidth (GB/s, read + write) on the device of an OpenCL program."""
    cl = program.cl
    ctx, queue = program.context, program.queue
    nbytes = int(min(nbytes, program.device.max_mem_alloc_size // 2)) // 256 * 256
    a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queue, a, np.uint8(1), 0, nbytes)
    cl.enqueue_fill_buffer(queue, b, np.uint8(0), 0, nbytes)
    cl.enqueue_copy(queue, b, a, byte_count=nbytes)
    queue.finish()
    samples = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        cl.enqueue_copy(queue, b, a, byte_count=nbytes)
        queue.finish()
        samples.append(2 * nbytes / (time.perf_counter() - t0) / 1e9)
    out = stats(samples)
    out.update(gbs=out["max"], bytes_per_buffer=nbytes, device=program.device_name,
               method="clEnqueueCopyBuffer of one buffer; read + write bytes")
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measure_machine(threads: int = 0, repeat: int = 5, nbytes: int = 512 << 20,
                    precisions: Iterable[str] = ("double", "single")) -> Dict:
    """The host's limits: copy bandwidth (normal, streaming stores) and FMA peak per precision."""
    out = {"hostname": socket.gethostname(), "cpu": cpu_model(), "vector_bits": vector_bits(),
           "bandwidth": measure_bandwidth(nbytes=nbytes, threads=threads, repeat=repeat)}
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

def _real_bytes(precision: str) -> int:
    return 8 if precision == "double" else 4


@lru_cache(maxsize=None)
def bc_counts(layout: str, vl: Optional[int], precision: str, collision: str = "bgk",
              velocity_set_name: str = DEFAULT_VELOCITY_SET) -> Dict[str, float]:
    """Elements accessed and flops of the bc kernel per column (both walls), from its template context."""
    from .codegen import KernelSpec, wall_context
    from .model import macroscopic_assignments, velocity_set
    spec = KernelSpec(layout=layout, vl=vl, precision=precision, collision=collision, walls=True,
                      velocity_set=velocity_set_name).validate()
    ctx = wall_context(spec)
    Q = velocity_set(spec.velocity_set).Q
    moments = macroscopic_assignments(spec.velocity_set).flops
    reads = writes = 0
    flops = 0
    for side in ctx["sides"]:
        if ctx["thermal"]:
            reads += Q            # all populations of the first bulk row (its temperature)
            flops += moments
        for row in side["rows"]:
            reads += len(row["leaving"]) + len(row["inputs"])
            writes += len(row["unknown"])
            flops += row["flops"] + len(row["leaving"]) + len(row["outputs"])  # + the sums L, entered
    rb = _real_bytes(precision)
    sites = 2 * ctx["rows"]
    return {"sites_per_column": sites, "reads": reads, "writes": writes,
            "bytes_per_site": (reads + writes) * rb / sites, "flops_per_site": flops / sites}


def kernel_counts(kernel: str, source, collision: str) -> Dict[str, float]:
    """bytes and flops per (updated) site of one kernel of a generated source."""
    spec = source.spec
    rb = _real_bytes(spec.precision)
    if kernel == "bc":
        return dict(bc_counts(spec.layout, spec.vl, spec.precision, collision, spec.velocity_set))
    from .model import velocity_set
    Q = velocity_set(spec.velocity_set).Q
    flops = source.flops.get(kernel)
    if flops is None:
        from .model import collide
        flops = 0 if kernel == "propagate" else collide(collision, spec.velocity_set).flops
    return {"bytes_per_site": 2 * Q * rb, "flops_per_site": float(flops)}


# --- kernel timing --------------------------------------------------------------------------------

@dataclass
class Case:
    backend: str
    layout: str
    vl: Optional[int]
    precision: str
    collision: str
    velocity_set: str = DEFAULT_VELOCITY_SET

    @property
    def tag(self) -> str:
        return f"{self.layout}-vl{self.vl}" if self.layout in ("csoa", "caosoa") else self.layout


def parse_layouts(text: str) -> List[Tuple[str, Optional[int]]]:
    """'aos,soa,csoa-vl8,caosoa' -> [(name, vl)]; a clustered name without -vlN means every VL in VLS;
    'all' means all four layouts with the VL sweep."""
    from .layouts import LAYOUTS
    out: List[Tuple[str, Optional[int]]] = []
    for item in [t.strip().lower() for t in text.split(",") if t.strip()]:
        if item == "all":
            out += list(ALL_LAYOUTS)
            continue
        name, _, vl = item.partition("-vl")
        if name not in LAYOUTS:
            raise ValueError(f"unknown layout {name!r} in {item!r}; choose from {', '.join(LAYOUTS)} "
                             "(clustered ones as csoa-vl8, caosoa-vl16, ...)")
        if name in ("csoa", "caosoa"):
            if not vl:
                out += [(name, v) for v in VLS]
                continue
            try:
                out.append((name, int(vl)))
            except ValueError:
                raise ValueError(f"layout {item!r}: VL {vl!r} is not an integer") from None
        else:
            if vl:
                raise ValueError(f"layout {name} takes no VL (got {item!r})")
            out.append((name, None))
    seen, unique = set(), []
    for c in out:
        if c not in seen:
            seen.add(c)
            unique.append(c)
    return unique


def kernel_parameters(collision: str, velocity_set_name: str = DEFAULT_VELOCITY_SET) -> Dict[str, float]:
    from .model import velocity_set
    from .runner import Parameters
    return Parameters(collision=collision).kernel_parameters(velocity_set(velocity_set_name).r)


def _device_name(backend: str, program) -> str:
    if backend == "c":
        return cpu_model()
    if backend == "opencl":
        return getattr(program, "device_name", "opencl")
    try:
        from .backends.cuda import _STATE
        return _STATE["device"].name()
    except Exception:
        return backend


def _init_buffers(program, lx: int, ly: int):
    """Two buffers at a quiet equilibrium (rho = T = 1, u = 0), halos filled."""
    rho, ux, uy, T = (np.ones((lx, ly)), np.zeros((lx, ly)), np.zeros((lx, ly)), np.ones((lx, ly)))
    f = program.allocate()
    g = program.allocate()
    if hasattr(program, "init_equilibrium"):
        program.init_equilibrium(f, rho, ux, uy, T)
        program.init_equilibrium(g, rho, ux, uy, T)
    else:
        from . import reference
        eq = reference.equilibrium(rho, ux, uy, T)
        program.upload_fields(eq, f)
        program.upload_fields(eq, g)
        del eq
    program.halo(f)
    program.halo(g)
    program.synchronize()
    return f, g


def time_call(fn, sync, repeat: int = 5, warmup: int = 1, min_sample: float = 0.02) -> Tuple[Dict, int]:
    """Median/min/max/quartiles (ms per call) of `fn`, after `warmup` calls."""
    for _ in range(max(1, warmup)):
        fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    once = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(math.ceil(min_sample / once)))
    samples = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / inner * 1e3)
    return stats(samples), inner


def _program(case: Case, lx: int, ly: int, threads: int, walls: bool = False):
    from . import backends
    from .codegen import KernelSpec, generate
    spec = KernelSpec(backend=case.backend, layout=case.layout, vl=case.vl, precision=case.precision,
                      collision=case.collision, walls=walls, velocity_set=case.velocity_set).validate(lx, ly)
    source = generate(spec)
    return source, backends.load(case.backend).compile(source, lx, ly, threads=threads)


def bench_case(case: Case, kernels: Sequence[str], lx: int, ly: int, threads: int = 0, repeat: int = 5,
               warmup: int = 1, on_kernel=None) -> List[Dict]:
    """Time the kernels of one case; a result dict per kernel (limits are added later)."""
    results = []
    params = kernel_parameters(case.collision, case.velocity_set)
    groups = [(False, [k for k in kernels if k != "bc"]), (True, [k for k in kernels if k == "bc"])]
    for walls, names in groups:
        if not names:
            continue
        source, program = _program(case, lx, ly, threads, walls=walls)
        f, g = _init_buffers(program, lx, ly)
        calls = {
            "propagate": lambda: program.propagate(f, g),
            "collide": lambda: program.collide(f, g, **params),
            "fused": lambda: program.fused(f, g, **params),
            "bc": lambda: program.bc(f, g, 1.0, 1.0, (False, False), params["ax"], params["ay"]),
        }
        device = _device_name(case.backend, program)
        for name in names:
            t, inner = time_call(calls[name], program.synchronize, repeat=repeat, warmup=warmup)
            counts = kernel_counts(name, source, case.collision)
            sites = counts["sites_per_column"] * lx if name == "bc" else lx * ly
            sec = t["median"] / 1e3
            r = {
                "backend": case.backend, "device": device, "layout": case.layout, "vl": case.vl, "tag": case.tag,
                "velocity_set": case.velocity_set,
                "precision": case.precision, "collision": case.collision, "kernel": name,
                "lx": lx, "ly": ly, "sites": sites, "threads": getattr(program, "threads", None),
                "walls_program": walls, "calls_per_sample": inner,
                "ms": t,
                "mlups": sites / sec / 1e6,
                "mlups_min": sites / (t["max"] / 1e3) / 1e6, "mlups_max": sites / (t["min"] / 1e3) / 1e6,
                "bytes_per_site": counts["bytes_per_site"],
                "gbs": counts["bytes_per_site"] * sites / sec / 1e9,
                "flops_per_site": counts["flops_per_site"],
                "gflops": counts["flops_per_site"] * sites / sec / 1e9,
                "arithmetic_intensity": counts["flops_per_site"] / counts["bytes_per_site"],
            }
            results.append(r)
            if on_kernel:
                on_kernel(r)
        del f, g, program
    return results


def add_fractions(results: List[Dict], limits: Dict) -> None:
    """frac_bw (streaming-store copy), frac_bw_normal, frac_peak, in place."""
    for r in results:
        lim = limits.get(r["backend"]) or {}
        bw = lim.get("bandwidth") or {}
        stream = (bw.get("streaming") or {}).get("gbs")
        normal = (bw.get("normal") or {}).get("gbs") or bw.get("gbs")
        peak = ((lim.get("peak") or {}).get(r["precision"]) or {}).get("gflops")
        best = stream or normal
        r["frac_bw"] = r["gbs"] / best if best else None
        r["frac_bw_normal"] = r["gbs"] / normal if normal else None
        r["frac_peak"] = r["gflops"] / peak if peak else None


@dataclass
class BenchConfig:
    backends: Sequence[str] = ("c",)
    layouts: Sequence[Tuple[str, Optional[int]]] = ALL_LAYOUTS
    kernels: Sequence[str] = KERNELS
    collisions: Sequence[str] = ("bgk",)
    precisions: Sequence[str] = ("double",)
    lx: int = 1024
    ly: int = 4096
    threads: int = 0
    repeat: int = 5
    warmup: int = 1
    limits: bool = True
    limit_bytes: Optional[int] = None    # copy buffer size; default: the lattice size clamped to [256 MB, 1 GB]
    progress: bool = True
    notes: List[str] = field(default_factory=list)
    velocity_set: str = DEFAULT_VELOCITY_SET


def _limit_bytes(cfg: BenchConfig) -> int:
    if cfg.limit_bytes:
        return int(cfg.limit_bytes)
    from .model import velocity_set
    vs = velocity_set(cfg.velocity_set)
    H = vs.max_hop
    lattice = vs.Q * (cfg.lx + 2 * H) * (cfg.ly + 2 * H * 32) * 8
    return int(min(max(lattice, 256 << 20), 1 << 30))


def backend_limits(backend: str, cfg: BenchConfig, host: Optional[Dict]) -> Dict:
    """The limits the kernels of one backend are compared with."""
    if backend == "c":
        return dict(host or {}, kind="host (C/OpenMP)")
    if backend == "cuda":
        try:
            bw = cuda_copy_bandwidth(repeat=cfg.repeat)
        except Exception as e:
            return {"kind": "cuda device", "error": str(e)}
        return {"kind": "cuda device", "bandwidth": {"gbs": bw["gbs"], "device_copy": bw}, "peak": {},
                "note": "bandwidth: device-to-device cudaMemcpy; GPU peak flops not measured"}
    if backend == "opencl":
        try:
            from .codegen import KernelSpec, generate
            from . import backends
            lx, ly = 8, 64
            prog = backends.load("opencl").compile(
                generate(KernelSpec(backend="opencl", layout="soa", vl=None)), lx, ly)
            if int(prog.device.type) & int(prog.cl.device_type.GPU):
                bw = opencl_copy_bandwidth(prog, repeat=cfg.repeat)
                return {"kind": "opencl gpu", "device": prog.device_name,
                        "bandwidth": {"gbs": bw["gbs"], "device_copy": bw}, "peak": {}}
            return dict(host or {}, kind=f"host (OpenCL CPU device {prog.device_name})")
        except Exception as e:
            return dict(host or {}, kind="host", error=f"opencl device probe failed: {e}")
    return {}


def run_bench(cfg: BenchConfig) -> Dict:
    """Run the benchmark matrix; returns the JSON-ready report."""
    from tqdm import tqdm

    from . import backends as bk
    from .codegen import SpecError
    report: Dict = {"lbgen_version": __version__, "counting": COUNTING,
                    "config": {"backends": list(cfg.backends), "layouts": [_tag(*l) for l in cfg.layouts],
                               "kernels": list(cfg.kernels), "collisions": list(cfg.collisions),
                               "precisions": list(cfg.precisions), "lx": cfg.lx, "ly": cfg.ly,
                               "threads": cfg.threads, "repeat": cfg.repeat, "warmup": cfg.warmup,
                               "velocity_set": cfg.velocity_set},
                    "notes": list(cfg.notes), "skipped": [], "results": []}
    usable = []
    for b in cfg.backends:
        ok, why = bk.available(b)
        if ok:
            usable.append(b)
        else:
            report["skipped"].append({"backend": b, "reason": why})
    host = None
    limit_repeat = max(cfg.repeat, 5)
    want_host = cfg.limits and any(b in ("c", "opencl") for b in usable)
    if want_host:
        host = measure_machine(cfg.threads, limit_repeat, _limit_bytes(cfg), cfg.precisions)

    cases = [Case(b, l, v, p, c, cfg.velocity_set) for b in usable for p in cfg.precisions for c in cfg.collisions
             for (l, v) in cfg.layouts]
    bar = tqdm(total=len(cases) * len(cfg.kernels), unit="kernel", disable=not cfg.progress, leave=False,
               dynamic_ncols=True)
    try:
        for case in cases:
            bar.set_description(f"{case.backend} {case.tag} {case.precision} {case.collision}")
            try:
                rs = bench_case(case, cfg.kernels, cfg.lx, cfg.ly, cfg.threads, cfg.repeat, cfg.warmup,
                                on_kernel=lambda r: bar.update(1))
            except (SpecError, ValueError, NotImplementedError) as e:
                report["skipped"].append({"backend": case.backend, "layout": case.tag, "precision": case.precision,
                                          "collision": case.collision, "reason": str(e).splitlines()[0]})
                bar.update(len(cfg.kernels))
                continue
            report["results"].extend(rs)
    finally:
        bar.close()
    if want_host and report["results"]:   # again after the kernels: the machine is shared and noisy
        host = merge_machine(host, measure_machine(cfg.threads, limit_repeat, _limit_bytes(cfg), cfg.precisions))
    report["machine"] = host or {"hostname": socket.gethostname(), "cpu": cpu_model()}
    limits = {b: backend_limits(b, cfg, host) for b in usable} if cfg.limits else {}
    report["limits"] = {b: {k: v for k, v in lim.items() if k not in ("hostname", "cpu")}
                        for b, lim in limits.items()}
    add_fractions(report["results"], limits)
    return report


def _tag(layout: str, vl: Optional[int]) -> str:
    return f"{layout}-vl{vl}" if layout in ("csoa", "caosoa") else layout


# --- the paper's Table 2 ----------------------------------------------------------------------------

def run_paper_table(backend: str = "c", lx: int = 1024, ly: int = 4096, vls: Sequence[int] = VLS,
                    precision: str = "double", collision: str = "bgk", threads: int = 0, repeat: int = 5,
                    warmup: int = 1, progress: bool = True) -> Dict:
    """Propagate and collide x AoS/SoA/CSoA/CAoSoA at each layout's best VL, next to the paper's Haswell."""
    layouts = [("aos", None), ("soa", None)] + [(n, v) for n in ("csoa", "caosoa") for v in vls]
    cfg = BenchConfig(backends=(backend,), layouts=layouts, kernels=("propagate", "collide"),
                      collisions=(collision,), precisions=(precision,), lx=lx, ly=ly, threads=threads,
                      repeat=repeat, warmup=warmup, limits=False, progress=progress)
    sweep = run_bench(cfg)
    report = paper_table(sweep["results"], lx, ly)
    report["sweep"] = sweep
    return report


def paper_table(results: List[Dict], lx: int, ly: int) -> Dict:
    by = {}
    for r in results:
        by.setdefault((r["layout"], r["vl"]), {})[r["kernel"]] = r["ms"]["median"]
    best: Dict[str, Tuple[Optional[int], Dict[str, float]]] = {}
    for (layout, vl), ms in by.items():
        if "propagate" not in ms or "collide" not in ms:
            continue
        total = ms["propagate"] + ms["collide"]
        if layout not in best or total < sum(best[layout][1].values()):
            best[layout] = (vl, ms)
    scale = PAPER_LX * PAPER_LY / (lx * ly)
    rows = []
    for kernel in ("propagate", "collide"):
        for layout in ("aos", "soa", "csoa", "caosoa"):
            if layout not in best:
                continue
            vl, ms = best[layout]
            rows.append({"kernel": kernel, "layout": layout, "name": LAYOUT_NAMES[layout], "vl": vl,
                         "ms": ms[kernel], "ms_at_paper_size": ms[kernel] * scale,
                         "mlups": lx * ly / (ms[kernel] / 1e3) / 1e6,
                         "paper_haswell_ms": PAPER_HASWELL[kernel][layout],
                         "speedup_vs_paper": PAPER_HASWELL[kernel][layout] / (ms[kernel] * scale)})
    combined = {layout: sum(ms.values()) for layout, (vl, ms) in best.items()}
    winner = min(combined, key=combined.get) if combined else None
    paper_combined = {l: PAPER_HASWELL["propagate"][l] + PAPER_HASWELL["collide"][l] for l in LAYOUT_NAMES}
    return {"lx": lx, "ly": ly, "paper_lx": PAPER_LX, "paper_ly": PAPER_LY, "scale": scale, "rows": rows,
            "best_vl": {l: best[l][0] for l in best},
            "combined_ms": combined, "combined_ms_at_paper_size": {l: v * scale for l, v in combined.items()},
            "winner": winner, "paper_combined_ms": paper_combined,
            "paper_winner": min(paper_combined, key=paper_combined.get)}


def format_paper_table(t: Dict) -> str:
    lines = [f"Paper Table 2 comparison: ms per iteration, double; here {t['lx']} x {t['ly']}, "
             f"scaled x{t['scale']:.3f} to the paper's {t['paper_lx']} x {t['paper_ly']} (per-site time)",
             f"{'kernel':<10} {'layout':<7} {'VL':>3} {'ms here':>10} {'ms @2160x8192':>14} {'MLUPS':>8} "
             f"{'Haswell':>8} {'Haswell/here':>12}"]
    for r in t["rows"]:
        lines.append(f"{r['kernel']:<10} {r['name']:<7} {r['vl'] or '-':>3} {r['ms']:>10.3f} "
                     f"{r['ms_at_paper_size']:>14.1f} {r['mlups']:>8.1f} {r['paper_haswell_ms']:>8d} "
                     f"{r['speedup_vs_paper']:>11.2f}x")
    lines.append("combined propagate + collide (ms @2160x8192): " + ", ".join(
        f"{LAYOUT_NAMES[l]} {v:.0f}" for l, v in sorted(t["combined_ms_at_paper_size"].items(), key=lambda kv: kv[1])))
    if t["winner"]:
        lines.append(f"winner here: {LAYOUT_NAMES[t['winner']]}"
                     + (f" (VL={t['best_vl'][t['winner']]})" if t["best_vl"].get(t["winner"]) else "")
                     + f"; paper's Haswell winner: {LAYOUT_NAMES[t['paper_winner']]} "
                     f"({t['paper_combined_ms'][t['paper_winner']]} ms)")
    return "\n".join(lines)


# --- output -----------------------------------------------------------------------------------------

def _pct(x: Optional[float]) -> str:
    return f"{100 * x:5.1f}%" if x is not None and math.isfinite(x) else "    -"


def format_limits(report: Dict) -> str:
    m = report.get("machine") or {}
    lines = [f"machine: {m.get('hostname', '?')}, {m.get('cpu', '?')}, {m.get('threads', '?')} threads, "
             f"{m.get('vector_bits', '?')}-bit vectors"]
    bw = m.get("bandwidth")
    if bw:
        lines.append(f"copy bandwidth ({bw['streams']}+{bw['streams']} streams, {bw['bytes_per_buffer'] / 2**20:.0f} MiB per buffer, "
                     f"read+write bytes; best [median, min]): normal stores {bw['normal']['gbs']:.1f} GB/s "
                     f"[{bw['normal']['median']:.1f}, {bw['normal']['min']:.1f}], streaming stores "
                     f"{bw['streaming']['gbs']:.1f} GB/s [{bw['streaming']['median']:.1f}, {bw['streaming']['min']:.1f}]")
        if bw.get("contiguous_streaming"):
            lines.append(f"  (for comparison, 1+1 contiguous streams with streaming stores: "
                         f"{bw['contiguous_streaming']['gbs']:.1f} GB/s -- AoS and CAoSoA walk memory like that "
                         f"in collide, so they can pass 100% of the {bw['streams']}+{bw['streams']}-stream copy)")
    for p, pk in (m.get("peak") or {}).items():
        lines.append(f"peak {p} (FMA chains, FMA = 2 flops; best [median, min]): {pk['gflops']:.1f} GFLOP/s "
                     f"[{pk['median']:.1f}, {pk['min']:.1f}]")
    lines.append("%BW: kernel GB/s / best streaming-store copy; %peak: kernel GFLOP/s / best FMA peak")
    for b, lim in (report.get("limits") or {}).items():
        if b != "c" and lim.get("bandwidth", {}).get("device_copy"):
            dc = lim["bandwidth"]["device_copy"]
            lines.append(f"{b} device copy bandwidth ({dc['device']}): {dc['gbs']:.1f} GB/s")
        if lim.get("error"):
            lines.append(f"{b}: limits not measured: {lim['error']}")
    return "\n".join(lines)


def format_table(report: Dict) -> str:
    lines = [format_limits(report), ""]
    head = (f"{'backend':<7} {'prec':<6} {'coll':<11} {'layout':<12} {'kernel':<9} {'ms (median)':>11} "
            f"{'[min-max]':>19} {'MLUPS':>8} {'GB/s':>7} {'%BW':>6} {'GFLOP/s':>8} {'%peak':>6}")
    lines.append(head)
    lines.append("-" * len(head))
    for r in report["results"]:
        ms = r["ms"]
        lines.append(f"{r['backend']:<7} {r['precision']:<6} {r['collision']:<11} {r['tag']:<12} {r['kernel']:<9} "
                     f"{ms['median']:>11.3f} {'[' + format(ms['min'], '.3f') + '-' + format(ms['max'], '.3f') + ']':>19} "
                     f"{r['mlups']:>8.1f} {r['gbs']:>7.1f} {_pct(r.get('frac_bw')):>6} {r['gflops']:>8.1f} "
                     f"{_pct(r.get('frac_peak')):>6}")
    for s in report.get("skipped", []):
        what = " ".join(str(s[k]) for k in ("backend", "layout", "precision", "collision") if k in s)
        lines.append(f"skipped {what}: {s['reason']}")
    lines += ["", "counting:"] + [f"  {k}: {v}" for k, v in COUNTING.items()]
    return "\n".join(lines)


def make_plots(report: Dict, directory) -> List[Path]:
    """MLUPS vs VL per layout (like the paper's Fig. 9/10) and a roofline; returns the PNG paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    results = report.get("results", [])
    combos = sorted({(r["backend"], r["precision"], r["collision"]) for r in results})
    for backend, precision, collision in combos:
        rs = [r for r in results if (r["backend"], r["precision"], r["collision"]) == (backend, precision, collision)]
        kernels = [k for k in KERNELS if k != "bc" and any(r["kernel"] == k for r in rs)] or \
                  sorted({r["kernel"] for r in rs})
        fig, axes = plt.subplots(1, len(kernels), figsize=(4.5 * len(kernels), 4), squeeze=False)
        for ax, kernel in zip(axes[0], kernels):
            kr = [r for r in rs if r["kernel"] == kernel]
            vls = sorted({r["vl"] for r in kr if r["vl"]}) or list(VLS)
            for layout in ("aos", "soa", "csoa", "caosoa"):
                pts = sorted((r["vl"], r["mlups"], r["mlups_min"], r["mlups_max"]) for r in kr if r["layout"] == layout
                             and r["vl"])
                flat = [r for r in kr if r["layout"] == layout and not r["vl"]]
                if pts:
                    x = [p[0] for p in pts]
                    y = np.array([p[1] for p in pts])
                    err = np.array([[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]])
                    ax.errorbar(x, y, yerr=np.clip(err, 0, None), marker="o", capsize=3, label=LAYOUT_NAMES[layout])
                elif flat:
                    ax.axhline(flat[0]["mlups"], ls="--", lw=1, label=f"{LAYOUT_NAMES[layout]} (no VL)",
                               color={"aos": "grey", "soa": "black"}[layout])
            ax.set_xscale("log", base=2)
            ax.set_xticks(vls)
            ax.set_xticklabels([str(v) for v in vls])
            ax.set_xlabel("VL")
            ax.set_ylabel("MLUPS")
            ax.set_title(kernel)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(f"{backend} {precision} {collision}: {rs[0]['lx']} x {rs[0]['ly']}")
        fig.tight_layout()
        p = directory / f"mlups_vs_vl_{backend}_{precision}_{collision}.png"
        fig.savefig(p, dpi=100)
        plt.close(fig)
        paths.append(p)
    limits = report.get("limits") or {}
    for backend, precision in sorted({(c[0], c[1]) for c in combos}):
        rs = [r for r in results if r["backend"] == backend and r["precision"] == precision]
        lim = limits.get(backend) or {}
        fig, ax = plt.subplots(figsize=(7, 5))
        ai_pts = [max(r["arithmetic_intensity"], 1e-3) for r in rs]
        lo, hi = min(ai_pts + [1e-2]) / 2, max(ai_pts + [100]) * 2
        ai = np.logspace(np.log10(lo), np.log10(hi), 200)
        peak = ((lim.get("peak") or {}).get(precision) or {}).get("gflops")
        bw = lim.get("bandwidth") or {}
        lines = [("streaming-store copy", (bw.get("streaming") or {}).get("gbs"), "-"),
                 ("normal-store copy", (bw.get("normal") or {}).get("gbs"), "--"),
                 ("device copy", bw.get("gbs") if "device_copy" in bw else None, "-")]
        for label, b, ls in lines:
            if b:
                y = ai * b if peak is None else np.minimum(ai * b, peak)
                ax.plot(ai, y, ls, color="k", lw=1.2, label=f"{label} {b:.1f} GB/s")
        if peak:
            ax.axhline(peak, color="tab:red", lw=1, label=f"FMA peak {peak:.0f} GFLOP/s")
        markers = {"propagate": "v", "bc": "s", "collide": "o", "fused": "D"}
        for r, x in zip(rs, ai_pts):
            y = max(r["gflops"], 1e-3)
            ax.plot(x, y, markers.get(r["kernel"], "o"), ms=6, alpha=0.8)
            ax.annotate(f"{r['kernel']} {r['tag']}", (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (flops / byte; propagate plotted at 1e-3)")
        ax.set_ylabel("GFLOP/s")
        ax.set_title(f"roofline: {backend} {precision}")
        ax.grid(alpha=0.3, which="both")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        p = directory / f"roofline_{backend}_{precision}.png"
        fig.savefig(p, dpi=100)
        plt.close(fig)
        paths.append(p)
    return paths


def to_jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
