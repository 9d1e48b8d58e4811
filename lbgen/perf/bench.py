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
  - for CUDA (CuPy or pycuda) the device's own device-to-device copy bandwidth (cudaMemcpy), for
    an OpenCL GPU the same with clEnqueueCopyBuffer;
  - for OpenCL (any device, the CPU runtime too) and CUDA (CuPy or pycuda) the device <-> host copies:
    latency and bandwidth of each direction from a postal fit over sizes
    (``lbgen.perf.links``; ``limits[backend]["host_device"]``, read by
    ``lbgen model --bench-json``).

How the numbers are counted
---------------------------
* MLUPS: lattice sites updated per second / 1e6 (LX*LY sites for propagate, collide and
  fused; the 2H*LX wall sites for bc, H the largest hop).
* bytes per site: propagate, collide, fused read and write all Q populations once:
  2 * Q * sizeof(real).  bc: the elements it really accesses per column (all Q
  populations of the 4th row to get its temperature, the populations that left towards
  the wall from prv, the known populations of the wall rows, and the unknown ones it
  writes), divided by the 6 wall sites; it is the useful traffic, the cache lines moved
  can be larger.
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
import socket
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from lbgen import __version__
from lbgen.codegen.layouts import VL_SWEEP, LayoutChoice, tag as layout_tag
from lbgen.perf.links import measure_links
from lbgen.perf.machine import copy_limits, cpu_model, measure_machine, merge_machine
from lbgen.model.catalog import DEFAULT_VELOCITY_SET
from lbgen.perf.timing import default_kernel_parameters, quiet_buffers
from lbgen.system.timing import time_call

KERNELS = ("propagate", "bc", "collide", "fused")
#: what `lbgen bench` times by default: the kernels and the fused sweep with temporal blocking of depth 2
DEFAULT_KERNELS = KERNELS + ("fused-tb2",)
#: fused with temporal blocking, `depth` steps per sweep (C backend): "fused-tb<depth>"
TIME_BLOCK_PREFIX = "fused-tb"


def time_block_depth(kernel: str) -> Optional[int]:
    """The depth of a "fused-tb<depth>" kernel name (2..MAX_TIME_BLOCK), None for other names."""
    from lbgen.codegen.spec import MAX_TIME_BLOCK
    rest = kernel[len(TIME_BLOCK_PREFIX):] if kernel.startswith(TIME_BLOCK_PREFIX) else ""
    return int(rest) if rest.isdigit() and 2 <= int(rest) <= MAX_TIME_BLOCK else None
VLS = VL_SWEEP
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
    "mlups": "million lattice-site updates per second; LX*LY sites (3D: LX*LY*LZ, a periodic box) for "
             "propagate/collide/fused, the 6*LX wall sites for bc, depth times the sites per call for "
             "fused-tb<depth>",
    "bytes_per_site": "propagate, collide, fused: 2*Q*sizeof(real) (each population read and written once); "
                      "bc: elements actually accessed per column / 6 wall sites (useful traffic); "
                      "fused-tb<depth>: the same per site update as fused (the traffic of single steps, so "
                      "frac_bw > 1 is beyond the single-step memory wall)",
    "flops_per_site": "operations of the generated assignments as printed (KernelSource.flops, "
                      "lbgen.model.collide(op).flops; AssignmentList.op_count): +,-,*,/ one flop each, "
                      "an FMA two; propagate 0; bc: wall-row assignments + moments of the 4th row, per wall site",
    "bandwidth": "copy kernel with Q read + Q write streams (Q of the velocity set) of aligned vectors, OpenMP, "
                 "same threads; "
                 "GB/s counts read + write bytes; measured with normal and with streaming (non-temporal) stores",
    "peak": "independent FMA chains on vectors (AVX-512 or AVX2), OpenMP, same threads; an FMA counts 2 flops",
    "limits": "bandwidth and peak are measured before and after the kernels (samples pooled); the limit used "
              "as denominator is the best sample (a shared machine only ever slows a micro-benchmark down); "
              "median and spread are in the JSON",
    "fractions": "frac_bw: GB/s / streaming-store copy bandwidth (frac_bw_normal: / normal-store copy "
                 "bandwidth); frac_peak: GFLOP/s / FMA peak of the kernel's precision",
    "time": "ms per kernel call: median over --repeat samples after warm-up; spread = min, max, quartiles",
}


def _real_bytes(precision: str) -> int:
    return 8 if precision == "double" else 4


@lru_cache(maxsize=None)
def bc_counts(layout: str, vl: Optional[int], precision: str, collision: str = "bgk",
              wall_scheme: str = "lbgen", velocity_set_name: str = DEFAULT_VELOCITY_SET) -> Dict[str, float]:
    """Elements accessed and flops of the bc kernel per column (both walls), from its template context."""
    from lbgen.codegen.spec import KernelSpec
    from lbgen.codegen.render import wall_context
    from lbgen.model import macroscopic_assignments
    from lbgen.model.velocity_set import velocity_set
    spec = KernelSpec(layout=layout, vl=vl, precision=precision, collision=collision, walls=True,
                      wall_scheme=wall_scheme, velocity_set=velocity_set_name).validate()
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
            writes += len(row["written"])
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
        return dict(bc_counts(spec.layout, spec.vl, spec.precision, collision, spec.wall_scheme, spec.velocity_set))
    from lbgen.model.velocity_set import velocity_set
    Q = velocity_set(spec.velocity_set).Q
    flops = source.flops.get(kernel)
    if flops is None:
        from lbgen.model import collide
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
    return [(c.name, c.vl) for c in LayoutChoice.parse(text, sweep=VLS)]


def _program(case: Case, lx: int, ly: int, threads: int, walls: bool = False, wall_scheme: str = "lbgen",
             lz: Optional[int] = None):
    """(source, program) of a case: 2D, or with ``lz`` a 3D program (``Program`` refuses a lattice
    its layout cannot take, ValueError, before building anything)."""
    from lbgen.backends import compile as compile_program, runtime, spec_backend
    from lbgen.codegen.spec import KernelSpec
    from lbgen.codegen.render import generate
    spec = KernelSpec(backend=spec_backend(case.backend), layout=case.layout, vl=case.vl, precision=case.precision,
                      collision=case.collision, walls=walls,
                      wall_scheme=wall_scheme if walls else "lbgen", velocity_set=case.velocity_set)
    if lz is None:
        source = generate(spec.validate(lx, ly))
        return source, runtime(case.backend).compile(source, lx, ly, threads=threads)
    source = generate(spec.validate())
    return source, compile_program(case.backend, source, (lx, ly, lz), threads=threads)   # sizes checked before the build


def bench_case(case: Case, kernels: Sequence[str], lx: int, ly: int, threads: int = 0, repeat: int = 5,
               warmup: int = 1, on_kernel=None, wall_scheme: str = "lbgen", lz: Optional[int] = None) -> List[Dict]:
    """Time the kernels of one case (bc: with `wall_scheme`; ``lz``: a 3D lattice, periodic);
    a result dict per kernel (limits are added later)."""
    results = []
    params = default_kernel_parameters(case.collision, 2 if lz is None else 3)
    groups = [(False, [k for k in kernels if k != "bc"]), (True, [k for k in kernels if k == "bc"])]
    for walls, names in groups:
        if not names:
            continue
        source, program = _program(case, lx, ly, threads, walls=walls, wall_scheme=wall_scheme, lz=lz)
        calls = _kernel_calls(program, *quiet_buffers(program, lx, ly, lz), params, names, three=lz is not None)
        device = program.describe()
        for name in names:
            t, inner = time_call(calls[name], program.synchronize, repeat=repeat, warmup=warmup)
            counts = kernel_counts(name, source, case.collision)
            sites = counts["sites_per_column"] * lx if name == "bc" else \
                lx * ly * (lz or 1) * (time_block_depth(name) or 1)
            sec = t["median"] / 1e3
            r = {
                "backend": case.backend, "device": device, "layout": case.layout, "vl": case.vl, "tag": case.tag,
                "velocity_set": case.velocity_set, "precision": case.precision, "collision": case.collision, "kernel": name,
                "lx": lx, "ly": ly, "lz": lz, "sites": sites, "threads": program.threads,
                "walls_program": walls, "calls_per_sample": inner,
                "wall_scheme": source.spec.wall_scheme if walls else None,
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
        del calls, program
    return results


def _kernel_calls(program, f, g, params: dict, names: Sequence[str], three: bool = False) -> Dict[str, object]:
    """name -> a call of that kernel on the quiet buffers f, g (``three``: a 3D program, which
    has no bc kernel)."""
    calls = {
        "propagate": lambda: program.propagate(f, g),
        "collide": lambda: program.collide(f, g, **params),
        "fused": lambda: program.fused(f, g, **params),
    }
    if not three:
        calls["bc"] = lambda: program.bc(f, g, 1.0, 1.0, (False, False), params["ax"], params["ay"])
    for name in names:
        depth = time_block_depth(name)
        if depth:
            calls[name] = lambda depth=depth: program.fused_tb(f, g, depth, **params)
    return calls


def add_fractions(results: List[Dict], limits: Dict) -> None:
    """frac_bw (streaming-store copy), frac_bw_normal, frac_peak, in place."""
    for r in results:
        lim = limits.get(r["backend"]) or {}
        best, normal = copy_limits(lim)
        peak = ((lim.get("peak") or {}).get(r["precision"]) or {}).get("gflops")
        r["frac_bw"] = r["gbs"] / best if best else None
        r["frac_bw_normal"] = r["gbs"] / normal if normal else None
        r["frac_peak"] = r["gflops"] / peak if peak else None


#: the lattice of a 3D `lbgen bench` when none is given: 2 x 19 x 8 x 128^3 bytes (640 MB), out of cache
DEFAULT_SHAPE3D = (128, 128, 128)


@dataclass
class BenchConfig:
    backends: Sequence[str] = ("c",)
    layouts: Sequence[Tuple[str, Optional[int]]] = ALL_LAYOUTS
    kernels: Sequence[str] = KERNELS
    collisions: Sequence[str] = ("bgk",)
    precisions: Sequence[str] = ("double",)
    lx: int = 1024
    ly: int = 4096
    #: the depth of a 3D lattice (a 3D velocity set), else None
    lz: Optional[int] = None
    threads: int = 0
    repeat: int = 5
    warmup: int = 1
    limits: bool = True
    limit_bytes: Optional[int] = None    # copy buffer size; default: the lattice size clamped to [256 MB, 1 GB]
    progress: bool = True
    notes: List[str] = field(default_factory=list)
    velocity_set: str = DEFAULT_VELOCITY_SET
    wall_scheme: str = "lbgen"            # scheme of the bc kernel (lbgen.model.walls.SCHEMES)


def _limit_bytes(cfg: BenchConfig) -> int:
    if cfg.limit_bytes:
        return int(cfg.limit_bytes)
    from lbgen.model.velocity_set import velocity_set
    vs = velocity_set(cfg.velocity_set)
    H = vs.max_hop
    if cfg.lz:
        lattice = vs.Q * (cfg.lx + 2 * H) * (cfg.ly + 2 * H) * (cfg.lz + 2 * H) * 8
    else:
        lattice = vs.Q * (cfg.lx + 2 * H) * (cfg.ly + 2 * H * 32) * 8
    return int(min(max(lattice, 256 << 20), 1 << 30))


def backend_limits(backend: str, cfg: BenchConfig, host: Optional[Dict]) -> Dict:
    """The limits the kernels of one runtime are compared with: the device's own copy
    bandwidth for accelerators, else the host's measured limits."""
    from lbgen.backends import runtime, spec_backend
    from lbgen.codegen.spec import KernelSpec
    from lbgen.codegen.render import generate
    try:
        prog = runtime(backend).compile(generate(KernelSpec(backend=spec_backend(backend), layout="soa")), 8, 64)
        where = prog.describe()
        bw = prog.copy_bandwidth(repeat=cfg.repeat)
        links = {"host_device": measure_links(prog, repeat=cfg.repeat)}
    except Exception as e:  # noqa: BLE001 - a limit that cannot be measured is reported, not fatal
        return dict(host or {}, kind="host", error=f"{backend} device probe failed: {e}")
    links = {k: v for k, v in links.items() if v is not None}      # device <-> host copies (lbgen.perf.links)
    if bw is None:
        return dict(host or {}, kind=f"host ({backend} on {where})", **links)
    return {"kind": f"{backend} device", "device": where, "bandwidth": {"gbs": bw["gbs"], "device_copy": bw},
            "peak": {}, "note": "bandwidth: the device's own buffer copy; device peak flops not measured", **links}


def run_bench(cfg: BenchConfig) -> Dict:
    """Run the benchmark matrix; returns the JSON-ready report."""
    from tqdm import tqdm

    from lbgen import backends as bk
    from lbgen.codegen.spec import SpecError
    report: Dict = {"lbgen_version": __version__, "counting": COUNTING,
                    "config": {"backends": list(cfg.backends), "layouts": [layout_tag(*l) for l in cfg.layouts],
                               "kernels": list(cfg.kernels), "collisions": list(cfg.collisions),
                               "precisions": list(cfg.precisions), "lx": cfg.lx, "ly": cfg.ly, "lz": cfg.lz,
                               "threads": cfg.threads, "repeat": cfg.repeat, "warmup": cfg.warmup,
                               "wall_scheme": cfg.wall_scheme, "velocity_set": cfg.velocity_set},
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
    want_host = bool(cfg.limits and usable)
    from lbgen.model.catalog import set_entry
    streams = set_entry(cfg.velocity_set).Q              # the kernels' shape: Q read and Q write streams
    if want_host:
        host = measure_machine(cfg.threads, limit_repeat, _limit_bytes(cfg), cfg.precisions, streams)

    cases = [Case(b, l, v, p, c, cfg.velocity_set) for b in usable for p in cfg.precisions for c in cfg.collisions
             for (l, v) in cfg.layouts]
    bar = tqdm(total=len(cases) * len(cfg.kernels), unit="kernel", disable=not cfg.progress, leave=False,
               dynamic_ncols=True)
    try:
        for case in cases:
            bar.set_description(f"{case.backend} {case.tag} {case.precision} {case.collision}")
            kernels = list(cfg.kernels)
            if case.backend != "c" and any(time_block_depth(k) for k in kernels):
                kernels = [k for k in kernels if not time_block_depth(k)]
                bar.update(len(cfg.kernels) - len(kernels))
                report["skipped"].append({"backend": case.backend, "layout": case.tag, "kernel": TIME_BLOCK_PREFIX,
                                          "reason": "temporal blocking runs on the C backend only"})
            try:
                rs = bench_case(case, kernels, cfg.lx, cfg.ly, cfg.threads, cfg.repeat, cfg.warmup,
                                on_kernel=lambda r: bar.update(1), wall_scheme=cfg.wall_scheme, lz=cfg.lz)
            except (SpecError, ValueError, NotImplementedError) as e:
                report["skipped"].append({"backend": case.backend, "layout": case.tag, "precision": case.precision,
                                          "collision": case.collision, "reason": str(e).splitlines()[0]})
                bar.update(len(kernels))
                continue
            report["results"].extend(rs)
    finally:
        bar.close()
    if want_host and report["results"]:   # again after the kernels: the machine is shared and noisy
        host = merge_machine(host, measure_machine(cfg.threads, limit_repeat, _limit_bytes(cfg), cfg.precisions,
                                                   streams))
    report["machine"] = host or {"hostname": socket.gethostname(), "cpu": cpu_model()}
    limits = {b: backend_limits(b, cfg, host) for b in usable} if cfg.limits else {}
    report["limits"] = {b: {k: v for k, v in lim.items() if k not in ("hostname", "cpu")}
                        for b, lim in limits.items()}
    add_fractions(report["results"], limits)
    return report


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
