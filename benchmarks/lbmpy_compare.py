"""lbgen's fused BGK kernels beside lbmpy's generated stream-collide kernels, same work.

Not a test and not a CI dependency: it needs lbmpy (pip install lbmpy, e.g. in a separate
virtual environment that also has lbgen: ``pip install lbmpy -e .``).

lbgen's layout: CAoSoA, its cluster length chosen among ``--vls`` by a short pre-timing as
``lbgen tune`` would (in cache D2Q9 runs fastest with VL 4 on a Zen 4, D2Q37 with VL 8).
Same lattice, same OpenMP thread count, double precision, kernel calls only (no boundary
or halo updates on either side), timed interleaved in one process: every sample times
each kernel in turn, so a shared machine slows them alike; the ratio is taken per sample
and the median reported.

    python benchmarks/lbmpy_compare.py --lx 1024 --ly 4096 --threads 2

Pairs (lbgen kernel vs lbmpy kernel):
* lbgen thermal D2Q37 BGK (``fused``, and ``fused_tb`` with --time-block) vs lbmpy's
  isothermal D2V37 SRT (37 velocities, the same stencil reach) -- lbgen does more work
  per site (the thermal 4th-order equilibrium and forcing);
* lbgen D2Q9 BGK vs lbmpy's D2Q9 SRT (when lbgen has the D2Q9 velocity set).

The 3D pair -- lbgen D3Q19 BGK (``fused``, ``fused_tb``) vs lbmpy's D3Q19 SRT, with the copy
bandwidth in the same rounds -- is ``--only d3q19 [--lz 128]``, which runs
``benchmarks/bench3d.py --lbmpy`` (both build lbmpy's kernels with ``benchmarks/lbmpy_kernels.py``).
The cumulant pair -- lbgen D3Q27 cumulant ``fused`` (and D3Q27 BGK beside it) vs lbmpy's D3Q27
CUMULANT with the Galilean correction -- is ``--only d3q27-cumulant [--lz 128] [--lbmpy-rates runtime]``,
the same rounds of ``bench3d.py`` (docs/performance-history.md, 2026-11-27: lbmpy derives it in minutes).

lbmpy kernels: pull stream + collide fused in one sweep (lbmpy's default), compressible
SRT, SoA field layout (fzyx: the populations' outermost, x innermost), OpenMP and
pystencils' SIMD vectorisation for the host CPU with non-temporal stores when it offers
them (the script reports which options were accepted).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lbmpy_kernels import lbmpy_kernel  # noqa: E402


def lbgen_kernel(velocity_set: str, lx: int, ly: int, threads: int, tau: float, time_block: int, vl: int = 8):
    """(kernel call, sites per call, description) for lbgen's fused BGK, CAoSoA with cluster length vl."""
    from lbgen.backends import c as cbackend
    from lbgen.codegen.spec import KernelSpec
    from lbgen.codegen.render import generate
    spec = KernelSpec(backend="c", layout="caosoa", vl=vl, collision="bgk", velocity_set=velocity_set)
    prog = cbackend.compile(generate(spec), lx, ly, threads=threads)
    f, g = prog.allocate(), prog.allocate()
    ones, zeros = np.ones((lx, ly)), np.zeros((lx, ly))
    prog.init_equilibrium(f, ones, zeros, zeros, ones)
    prog.halo(f)
    params = {"tau": tau, "ax": 0.0, "ay": 0.0}
    bufs = [f, g]
    state = {"i": 0}

    def call():
        a, b = bufs[state["i"]], bufs[1 - state["i"]]
        if time_block > 1:
            prog.fused_tb(a, b, time_block, **params)
        else:
            prog.fused(a, b, **params)
        state["i"] ^= 1

    name = "fused" if time_block == 1 else f"fused-tb{time_block}"
    stores = "streaming" if prog.streaming_stores else "plain (lattice in cache)"
    return call, lx * ly * time_block, f"lbgen {velocity_set} BGK {name} ({spec.tag}, {prog.threads} threads, " \
                                       f"{stores} stores)"


def fastest_vl(velocity_set: str, lx: int, ly: int, threads: int, tau: float, vls, min_seconds: float):
    """The cluster length of lbgen's fastest fused kernel among vls (3 interleaved samples,
    as `lbgen tune` chooses a layout), and the MLUPS of each."""
    if len(vls) == 1:
        return vls[0], {}
    kernels = [lbgen_kernel(velocity_set, lx, ly, threads, tau, 1, vl) for vl in vls]
    samples = time_pair([k[0] for k in kernels], [k[1] for k in kernels], 3, min_seconds)
    mlups = {vl: statistics.median(s) for vl, s in zip(vls, samples)}
    return max(mlups, key=mlups.get), mlups


def time_pair(calls, sites, repeat: int, min_seconds: float):
    """Interleaved samples: MLUPS per kernel per sample (lbgen.system.timing.interleaved_rates)."""
    from lbgen.system.timing import interleaved_rates
    return [[v / 1e6 for v in s] for s in interleaved_rates(calls, sites, repeat, min_seconds)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lx", type=int, default=1024)
    ap.add_argument("--ly", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7, help="interleaved samples per kernel")
    ap.add_argument("--min-seconds", type=float, default=0.3, help="least time of one sample")
    ap.add_argument("--tau", type=float, default=0.8)
    ap.add_argument("--time-block", type=int, default=0, help="also time lbgen's fused_tb at this depth (C)")
    ap.add_argument("--only", choices=["d2q37", "d2q9", "d3q19", "d3q27-cumulant"], default=None,
                    help="one pair; d3q19, d3q27-cumulant: the 3D pairs, run by benchmarks/bench3d.py --lbmpy on an "
                         "LZ^3 box")
    ap.add_argument("--lbmpy-rates", choices=["constant", "runtime"], default="constant",
                    help="3D pairs: lbmpy's rates folded in as constants (its default) or kernel arguments as lbgen's")
    ap.add_argument("--lz", type=int, default=128, help="the 3D pairs (--only d3q19, d3q27-cumulant): the edge of "
                    "the cubic lattice")
    ap.add_argument("--vls", default="4,8", help="lbgen's CAoSoA cluster lengths to choose from by a short "
                    "pre-timing, per velocity set, as lbgen tune would (default 4,8; one value: no choice)")
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)
    try:
        import lbmpy  # noqa: F401
    except ImportError:
        print("lbmpy is not installed here: pip install lbmpy (a separate virtual environment is fine)",
              file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    if args.only in ("d3q19", "d3q27-cumulant"):    # the 3D pairs with their copy limit: bench3d's rounds
        import bench3d
        pair = (["--depths", str(args.time_block or 3)] if args.only == "d3q19" else
                ["--velocity-set", "d3q27", "--collisions", "cumulant,bgk", "--depths", "", "--layouts", "caosoa-vl8"])
        return bench3d.main(["--size", str(args.lz), "--threads", str(args.threads), "--repeat", str(args.repeat),
                             "--tau", str(args.tau), "--lbmpy", "--lbmpy-rates", args.lbmpy_rates] + pair
                            + (["--json", args.json] if args.json else []))
    pairs = [("d2q37", "D2V37"), ("d2q9", "D2Q9")]
    if args.only:
        pairs = [p for p in pairs if p[0] == args.only]
    from lbgen.perf.machine import cpu_model
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cpu_model(),
              "lattice": [args.lx, args.ly], "threads": args.threads, "load_average": os.getloadavg(),
              "pairs": []}
    print(f"{report['date']}  {report['cpu']}  {args.lx} x {args.ly}, {args.threads} threads, "
          f"load average {report['load_average'][0]:.1f}")
    for ours, theirs in pairs:
        try:
            vls = [int(v) for v in args.vls.split(",")]
            vl, tried = fastest_vl(ours, args.lx, args.ly, args.threads, args.tau, vls, args.min_seconds / 3)
            if tried:
                print(f"{ours}: lbgen's cluster length by pre-timing: VL {vl} ("
                      + ", ".join(f"VL {v}: {m:.1f} MLUPS" for v, m in tried.items()) + ")")
            mine = [lbgen_kernel(ours, args.lx, args.ly, args.threads, args.tau, 1, vl)]
            if args.time_block > 1:
                mine.append(lbgen_kernel(ours, args.lx, args.ly, args.threads, args.tau, args.time_block, vl))
        except Exception as e:  # noqa: BLE001 - e.g. lbgen without this velocity set
            print(f"{ours}: lbgen cannot build it here ({type(e).__name__}: {str(e).splitlines()[0]}); skipped")
            continue
        other, other_name = lbmpy_kernel(theirs, (args.lx, args.ly), args.threads, args.tau)
        calls = [other] + [m[0] for m in mine]
        sites = [args.lx * args.ly] + [m[1] for m in mine]
        names = [other_name] + [m[2] for m in mine]
        samples = time_pair(calls, sites, args.repeat, args.min_seconds)
        for j in range(1, len(calls)):
            ratios = [samples[j][i] / samples[0][i] for i in range(args.repeat)]
            entry = {"lbgen": names[j], "lbmpy": names[0],
                     "lbgen_mlups_median": statistics.median(samples[j]),
                     "lbmpy_mlups_median": statistics.median(samples[0]),
                     "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}
            report["pairs"].append(entry)
            print(f"{names[j]}: {entry['lbgen_mlups_median']:.1f} MLUPS | {names[0]}: "
                  f"{entry['lbmpy_mlups_median']:.1f} MLUPS | ratio {entry['ratio_median']:.2f} "
                  f"[{entry['ratio_min']:.2f}-{entry['ratio_max']:.2f}]")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
