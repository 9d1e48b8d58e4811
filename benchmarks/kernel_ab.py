"""A/B of two emitted versions of the same kernels in CPU time, interleaved (one thread).

    python benchmarks/site_asm.py --keep /tmp/a        # on version A (e.g. main)
    python benchmarks/site_asm.py --keep /tmp/b        # on version B
    python benchmarks/kernel_ab.py /tmp/a /tmp/b --rounds 15

For each kernel set of `site_asm.py` (`<dir>/<kernel>/src`, written by `lbgen emit`), both
versions are built as shared libraries with the runtime's flags (`gcc -O3 -march=native
-fopenmp -std=gnu11 -fPIC -shared`) and their hot entry points called with OMP_NUM_THREADS=1
on the same lattice, each through its own header's API version (its records read from the
header): D3Q19 BGK `fused` (periodic box), D2Q37 regularized `fused_walls` and
`fused_tb` depth 3 with both thermal walls (the `lbgen run rayleigh-taylor` path).  A round
times A then B then B then A, each for at least `--seconds` of process CPU time
(`time.process_time`: a loaded machine stretches wall-clock time, not the CPU time of the
work), and the ratio time(A) / time(B) of the round is printed with the median over rounds:
above 1, B is faster.  Not a test: the figures go to docs/performance-history.md.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
FLAGS = ("-O3", "-march=native", "-fopenmp", "-std=gnu11", "-fPIC", "-shared")


_CTYPES = {"double": ctypes.c_double, "int": ctypes.c_int, "const uint8_t *": ctypes.c_void_p,
           "const double *": ctypes.c_void_p}


def header_struct(header: str, name: str):
    """The ctypes Structure of ``typedef struct {...} <name>;`` in an emitted header (the record
    of that version of the API, read from its own header: fields in order, arrays included), or
    None when the header has no such record."""
    m = re.search(r"typedef struct \{([^{}]*)\}\s*" + re.escape(name) + r"\s*;", re.sub(r"/\*.*?\*/", "", header, flags=re.S))
    if not m:
        return None
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    body = re.sub(r"\{%.*?%\}", "", body)
    fields = []
    for decl in (d.strip() for d in body.split(";") if d.strip()):
        kind = next(k for k in sorted(_CTYPES, key=len, reverse=True) if decl.startswith(k))
        for item in decl[len(kind):].split(","):
            item = item.strip().lstrip("*").strip()
            base, *dims = re.split(r"\[|\]\[?", item.rstrip("]"))
            t = _CTYPES[kind]
            for dim in reversed([int(d) for d in dims if d]):
                t = t * dim
            fields.append((base.strip(), t))
    return type(name, (ctypes.Structure,), {"_fields_": fields})


def api_version(header: str) -> int:
    """``LBGEN_API_VERSION`` of an emitted header (0 where it has none: the 3D header before 4)."""
    m = re.search(r"#define LBGEN_API_VERSION\s+(\d+)", header)
    return int(m.group(1)) if m else 0


def build(src: Path, out: Path, extra_flags=()) -> ctypes.CDLL:
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", *FLAGS, *extra_flags, "-o", str(out), str(src / "lbgen_kernels.c")], check=True)
    return ctypes.CDLL(str(out))


def streaming_as_the_runtime(lib: ctypes.CDLL, elements: int) -> None:
    """Streaming stores on or off by the runtime's rule (lattices beyond the last-level cache),
    where the library has the switch: the runtimes set it, the library's default is on."""
    from lbgen.backends.c import streaming_pays
    import numpy as np
    if hasattr(lib, "lbgen_set_streaming_stores"):
        lib.lbgen_set_streaming_stores(int(streaming_pays(elements, np.float64)))


def calls(lib: ctypes.CDLL, kernel: str, size, header: str):
    """{name: (call, sites per call)} of the hot kernels of one library, called as its own
    header's version of the API says (``header``: its text)."""
    D = ctypes.c_double
    Region, Params = header_struct(header, "lbgen_region"), header_struct(header, "lbgen_params")
    lib.lbgen_alloc.restype = ctypes.POINTER(D)
    lib.lbgen_buffer_size.restype = ctypes.c_size_t
    if kernel == "d3q19-bgk":
        n = size
        bufs = [lib.lbgen_alloc(n, n, n) for _ in range(2)]
        count = lib.lbgen_buffer_size(n, n, n)
        streaming_as_the_runtime(lib, count)
        for b in bufs:
            ctypes.memmove(b, (D * count)(*([1.0 / 19] * count)), count * 8)
        state = [0]

        if Params is None:                     # 3D before API 4: loose parameters, boundaries NULL
            def sweep(a, b):
                lib.lbgen_fused(a, b, n, n, n, None, D(0.8), D(0.0), D(0.0), D(0.0))
        else:                                  # API 4: the region and the record (zero: periodic)
            region, par = Region(0, n, 0, n, 0, n), Params(tau=0.8)

            def sweep(a, b):
                lib.lbgen_fused(a, b, n, n, n, ctypes.byref(region), ctypes.byref(par))

        def fused():
            a, b = bufs[state[0]], bufs[1 - state[0]]
            sweep(a, b)
            state[0] ^= 1
        return {"fused": (fused, n ** 3)}
    lx, ly = size
    bufs = [lib.lbgen_alloc(lx, ly) for _ in range(2)]
    count = lib.lbgen_buffer_size(lx, ly)
    streaming_as_the_runtime(lib, count)
    for b in bufs:
        ctypes.memmove(b, (D * count)(*([1.0 / 37] * count)), count * 8)
    region = Region(0, lx, 0, ly)
    par = Params(C1=0.002, C2=0.002, C3=0.0, ax=0.0, ay=-1e-5, wall_bottom=1, wall_top=1,
                 T_bottom=1.0, T_top=1.0, adiabatic_bottom=0, adiabatic_top=0)
    if "tau_wall" in dict(Params._fields_):
        par.tau_wall = 1.0
    state = [0]

    def fused_walls():
        a, b = bufs[state[0]], bufs[1 - state[0]]
        lib.lbgen_fused_walls(a, b, lx, ly, ctypes.byref(region), ctypes.byref(par))
        state[0] ^= 1

    def fused_tb():
        a, b = bufs[state[0]], bufs[1 - state[0]]
        lib.lbgen_fused_tb(a, b, lx, ly, 3, ctypes.byref(par))
        state[0] ^= 1
    return {"fused_walls": (fused_walls, lx * ly), "fused_tb3": (fused_tb, 3 * lx * ly)}


def cpu_time_per_site(call, sites: int, seconds: float) -> float:
    call()
    n, t0 = 0, time.process_time()
    while True:
        call()
        n += 1
        t = time.process_time() - t0
        if t >= seconds:
            return t / (n * sites)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path, help="site_asm.py --keep folder of version A")
    ap.add_argument("b", type=Path, help="site_asm.py --keep folder of version B")
    ap.add_argument("--kernels", default="d2q37-regularized-walls,d3q19-bgk")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--seconds", type=float, default=0.5, help="CPU seconds per timing")
    ap.add_argument("--size2d", default="64x256", help="LXxLY of the D2Q37 lattice")
    ap.add_argument("--size3d", type=int, default=32, help="edge of the D3Q19 cube")
    ap.add_argument("--flags", default="", help="extra gcc flags (space-separated; e.g. -O1 for a quick check)")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.seconds <= 0:
        ap.error(f"--rounds {args.rounds} / --seconds {args.seconds}: allowed: rounds >= 1, seconds > 0")
    lx, ly = (int(v) for v in args.size2d.split("x"))
    for kernel in [k for k in args.kernels.split(",") if k]:
        size = args.size3d if kernel.startswith("d3") else (lx, ly)
        # one build per distinct folder: A and B given as the same folder (a self-check) share
        # one library instead of gcc rewriting a library that is already loaded
        built = {}
        for d in (args.a, args.b):
            if d.resolve() not in built:
                built[d.resolve()] = build(d / kernel / "src", d / kernel / "ab" / "lib.so", args.flags.split())
        libs = [built[d.resolve()] for d in (args.a, args.b)]
        headers = [(d / kernel / "src" / "lbgen_kernels.h").read_text() for d in (args.a, args.b)]
        print(f"{kernel}: API version A {api_version(headers[0])}, B {api_version(headers[1])}", flush=True)
        sets = [calls(lib, kernel, size, h) for lib, h in zip(libs, headers)]
        for name in sets[0]:
            ratios, ns = [], []
            for _ in range(args.rounds):
                a1 = cpu_time_per_site(*sets[0][name], args.seconds)
                b1 = cpu_time_per_site(*sets[1][name], args.seconds)
                b2 = cpu_time_per_site(*sets[1][name], args.seconds)
                a2 = cpu_time_per_site(*sets[0][name], args.seconds)
                ratios.append((a1 + a2) / (b1 + b2))
                ns.append(((a1 + a2) / 2 * 1e9, (b1 + b2) / 2 * 1e9))
            med = statistics.median(ratios)
            print(f"{kernel} {name}: A/B CPU time {med:.3f} [{min(ratios):.3f}-{max(ratios):.3f}] over "
                  f"{args.rounds} rounds; ns/site A {statistics.median(n[0] for n in ns):.1f}, "
                  f"B {statistics.median(n[1] for n in ns):.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
