"""Device <-> host copies of an accelerator program, timed over a range of sizes and fitted
with seed 003's postal model T = alpha + bytes / B (its Eq. 1; ``fit_latency_bandwidth``):
what ``lbgen bench`` writes into its JSON (``limits[backend]["host_device"]``) and
``lbgen model --bench-json`` reads as the ``staged`` halo path's copy terms
(``lbgen.parallel.gpu_model.DeviceLinks``).

OpenCL: ``enqueue_copy`` between a device buffer and a host array, blocking (the CPU runtime
is a device too); CUDA (CuPy or pycuda: the program's runtime): ``cudaMemcpyAsync`` between
device memory and pinned host memory on the compute stream, then a synchronize.  Each copy is timed on the host
clock with what waits for it (as the halo exchange pays it): per size the median of
`repeat` copies after one warm-up.  Programs whose device memory is host memory (C, the
CUDA host shim) have no such link: None.
"""
from __future__ import annotations

import time
from typing import Callable, Optional, Sequence

import numpy as np

#: the copy sizes [bytes] of the fit: a halo slab of a small block to a large 3D face
SIZES = (8, 4096, 65536, 1 << 20, 8 << 20)
DIRECTIONS = ("to_host", "to_device")


def _opencl(prog) -> Callable:
    cl, queue = prog.cl, prog.queue

    def copier(nbytes: int, direction: str):
        buf = cl.Buffer(prog.context, cl.mem_flags.READ_WRITE, nbytes)
        host = np.ones(nbytes, dtype=np.uint8)
        dst, src = (host, buf) if direction == "to_host" else (buf, host)

        def once():
            cl.enqueue_copy(queue, dst, src, is_blocking=True)
            queue.finish()
        return once
    return copier


def _cuda(prog) -> Callable:
    rt = prog.rt                    # CuPy or pycuda (backends/cuda/runtimes.py)

    def copier(nbytes: int, direction: str):
        dev = rt.empty(nbytes, np.uint8)
        host = rt.pinned_empty(nbytes, np.uint8)

        def once():
            if direction == "to_host":
                rt.to_host_async(dev, host, aside=False)
            else:
                rt.to_device_async(host, dev, aside=False)
            rt.synchronize()
        return once
    return copier


def copier_of(prog) -> Optional[Callable]:
    """copier(nbytes, direction) -> a function making one copy, for a program whose device
    memory is not host memory; None otherwise."""
    if hasattr(prog, "rt"):
        return _cuda(prog)
    if hasattr(prog, "cl") and hasattr(prog, "queue"):
        return _opencl(prog)
    return None


def time_copies(copier: Callable, sizes: Sequence[int] = SIZES, repeat: int = 5) -> dict:
    """{direction: [median seconds per size]}: `repeat` timed copies per size after a warm-up."""
    out = {d: [] for d in DIRECTIONS}
    for direction in DIRECTIONS:
        for nbytes in sizes:
            once = copier(int(nbytes), direction)
            once()
            samples = []
            for _ in range(max(1, repeat)):
                t0 = time.perf_counter()
                once()
                samples.append(time.perf_counter() - t0)
            out[direction].append(float(np.median(samples)))
    return out


def fit_links(sizes: Sequence[int], times: dict) -> dict:
    """The postal fit per direction: {"to_host": {"latency", "bandwidth"}, "to_device": ...}."""
    from lbgen.parallel.model import fit_latency_bandwidth
    return {d: fit_latency_bandwidth(list(sizes), times[d]).to_json() for d in DIRECTIONS}


def measure_links(prog, repeat: int = 5, sizes: Sequence[int] = SIZES) -> Optional[dict]:
    """The JSON ``lbgen bench`` records: the fit per direction, the sizes and times it came
    from and how they were taken; None where the program's device memory is host memory."""
    copier = copier_of(prog)
    if copier is None:
        return None
    times = time_copies(copier, sizes, repeat)
    out = fit_links(sizes, times)
    out.update(sizes=[int(s) for s in sizes], times=times,
               method="blocking copy device <-> host (OpenCL enqueue_copy; CUDA cudaMemcpyAsync with pinned host "
                      "memory + stream synchronize), median of the repeats per size, host clock; least-squares "
                      "fit of T = alpha + bytes / B")
    return out


def links_from_bench(report: dict, backend: str) -> dict:
    """{DeviceLinks field: value} measured in a ``lbgen bench`` JSON report for `backend`:
    the copy terms (``host_device``) and the memory bandwidth the kernels are compared with
    (``copy_limits``: a device's own copy, or the host's on a CPU runtime);
    ValueError naming what is missing."""
    from lbgen.perf.machine import copy_limits
    limits = (report.get("limits") or {}).get(backend)
    if not limits:
        raise ValueError(f"the bench report has no limits of the {backend} backend (run lbgen bench --backends "
                         f"{backend} without --no-limits); it has: {', '.join(report.get('limits') or {}) or 'none'}")
    out = {}
    links = limits.get("host_device")
    if links:
        for d in DIRECTIONS:
            out[f"{d}_latency"] = float(links[d]["latency"])
            out[f"{d}_bandwidth"] = float(links[d]["bandwidth"])
    gbs = copy_limits(limits)[0]
    if gbs:
        out["memory_bandwidth"] = float(gbs) * 1e9
    if not out:
        raise ValueError(f"the bench report's {backend} limits hold neither device <-> host copies nor a memory "
                         f"bandwidth")
    return out
