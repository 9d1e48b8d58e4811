"""3D fused kernels on the C backend out of cache (D3Q19 BGK by default): MLUPS, fraction of the
measured copy bandwidth, temporal blocking (fused_tb) against the single-step limit, other
operators against the first (``--collisions``), lbmpy's counterpart kernel.

Not a test (nothing passes or fails on a timing); the figures go to docs/performance-history.md.

    python benchmarks/bench3d.py --size 128 --threads 2 --depths 2,3 --repeat 5 --lbmpy
    python benchmarks/bench3d.py --collisions bgk,trt,mrt --depths "" --layouts caosoa-vl8
    python benchmarks/bench3d.py --velocity-set d3q27 --collisions cumulant --depths "" --lbmpy

Every round (``--repeat`` of them) first measures the copy bandwidth of a Q + Q stream copy
(``lbgen.perf.machine.measure_bandwidth``, Q = 19, buffers of the lattice's size: the
limit ``lbgen bench`` uses; Q of the velocity set), then times each kernel in turn (``lbgen.system.timing.
interleaved_rates``), so a shared machine slows them alike; fractions and ratios are taken
per round and their medians reported.  Bytes per site of one step: Q x 2 x 8 (each
population read once and written once, double); a depth-N sweep is counted as N steps'
bytes, so a fraction above 1.0 is beyond the single-step memory wall.  Kernel calls only:
``fused`` and ``fused_tb`` on a periodic box, no halo call between sweeps (its cost is
the same for both and small: 2/LX of the lattice), as lbmpy's kernel is timed without its
periodic boundary.  The bits: after timing, a random state is advanced by N single steps
(halo, fused) and by one fused_tb sweep of depth N with the same build; the script says
whether they are identical (they must be in strict builds: tests/backends/test_c3d_time_block.py).
The compute roof: every round also measures the FMA peak (``measure_peak``, double, the same
threads, the same clock: with ``--cpu-time`` one core's unstretched peak); each lbgen kernel's rate times its collide list's operations per site (``lbgen info``'s
count, an FMA as two) is given as GFLOP/s and as a fraction of that peak.

lbmpy (``--lbmpy``; pip install lbmpy): the stream-collide kernel of the first operator's
counterpart (``benchmarks/lbmpy_kernels.LBMPY_METHODS``: BGK -> SRT, cumulant -> CUMULANT with
the Galilean correction; compressible, SoA fzyx layout, OpenMP, pystencils' SIMD vectorisation
for this CPU with non-temporal stores), with and without its common-subexpression options, the
faster one by a short pre-timing (``--lbmpy-cse`` picks one and skips it: lbmpy derives the
D3Q27 cumulant in minutes) (``benchmarks/lbmpy_kernels.lbmpy_kernel``, which
``benchmarks/lbmpy_compare.py`` uses too).  The kernels' operator parameters other than tau are
the operator's defaults (lbgen: runtime arguments; lbmpy: constants folded into its code).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

def chosen_clock(ap, args):
    """The timer of ``--cpu-time`` (process CPU time: with --threads 1 the step's own time, which a
    loaded machine does not stretch) or wall-clock; --cpu-time with more threads refused through ``ap``."""
    if args.cpu_time and args.threads != 1:
        ap.error(f"--cpu-time needs --threads 1 (got {args.threads}): the CPU time of several threads "
                 "adds up, a rate from it would not be a rate")
    return time.process_time if args.cpu_time else time.perf_counter


def bytes_per_site(q: int) -> int:
    """Bytes one double-precision pull step moves per site: every population read and written once."""
    return q * 2 * 8


def lbgen_program3d(shape, threads: int, layout: str, vl, strict: bool = False, collision: str = "bgk",
                    velocity_set: str = "d3q19"):
    """The C program of the benchmark lattice (D3Q19 BGK by default)."""
    from lbgen.backends.c import compile
    from lbgen.codegen.render import generate
    from lbgen.codegen.spec import KernelSpec
    spec = KernelSpec(backend="c", layout=layout, vl=vl, collision=collision, velocity_set=velocity_set)
    return compile(generate(spec), *shape, strict=strict, threads=threads)


def kernel_params(prog, tau: float, force=(0.0, 0.0, 0.0)) -> dict:
    """The fused kernel's arguments: the operator's defaults, the shear relaxation ``tau``, the force."""
    from lbgen.model.operators import operator
    params = {**operator(prog.spec.collision).defaults(), "tau": tau}
    return {**params, **dict(zip(("ax", "ay", "az"), force))}


def lbgen_kernel3d(prog, tau: float, depth: int, **extra):
    """(call, site updates per call, name): fused (depth 1) or fused_tb on a fluid at rest; ``extra``: operator
    parameters other than their defaults."""
    shape = (prog.lx, prog.ly, prog.lz)
    one, zero = np.ones(shape), np.zeros(shape)
    bufs = [prog.allocate(), prog.allocate()]
    for b in bufs:
        prog.init_equilibrium(b, one, zero, zero, zero, one)
    params = {**kernel_params(prog, tau), **extra}
    state = {"i": 0}

    def call():
        a, b = bufs[state["i"]], bufs[1 - state["i"]]
        if depth > 1:
            prog.fused_tb(a, b, depth, None, **params)
        else:
            prog.fused(a, b, **params)
        state["i"] ^= 1

    name = ("fused" if depth == 1 else f"fused_tb depth {depth}") + "".join(f" {k}={v}" for k, v in extra.items())
    return call, int(np.prod(shape)) * depth, (f"lbgen {prog.spec.velocity_set} {prog.spec.collision} {name} "
                                               f"({prog.layout.tag}, {prog.threads} threads)")


def operations(collision: str, velocity_set: str, fused: bool) -> int:
    """The collide list's operations per site of the kernel timed: with its parameters' defaults, fused takes the
    site function derived at the operator's ``specialised`` parameters' defaults (where it has some)."""
    from lbgen.model.derived import collide
    from lbgen.model.operators import operator
    return collide(collision, velocity_set, specialised=fused and bool(operator(collision).specialised)).flops


def same_bits(prog, tau: float, depth: int, steps_seed: int = 3) -> dict:
    """N single steps (halo, fused) against one fused_tb sweep of depth N, from a random
    near-equilibrium state: identical bits, and the largest difference."""
    rng = np.random.default_rng(steps_seed)
    shape = (prog.lx, prog.ly, prog.lz)
    w = np.array(prog.vs.weights, dtype=float)
    f0 = w[:, None, None, None] * (1.0 + 0.01 * rng.standard_normal((prog.vs.Q,) + shape))
    params = kernel_params(prog, tau, (1e-5, -2e-5, 3e-5))
    f, g = prog.pack(f0), prog.allocate()
    for _ in range(depth):
        prog.step_halo(f)
        f, g = prog.step(f, g, params)
    single = prog.unpack(f)
    f, g = prog.pack(f0), prog.allocate()
    prog.halo(f)
    prog.fused_tb(f, g, depth, None, **params)
    blocked = prog.unpack(g)
    return {"depth": depth, "identical": bool(np.array_equal(single, blocked)),
            "max_abs_difference": float(np.abs(single - blocked).max())}


def main(argv=None) -> int:
    from lbgen.perf.machine import cpu_model, measure_bandwidth, measure_peak
    from lbgen.system.timing import interleaved_rates
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=128, help="LX = LY = LZ")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--layouts", default="caosoa-vl8,soa",
                    help="lbgen layouts to choose from by a short interleaved pre-timing of fused, as lbgen tune "
                         "would (one value: no choice)")
    ap.add_argument("--depths", default="2,3", help="fused_tb depths to time beside fused")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved rounds")
    ap.add_argument("--min-seconds", type=float, default=1.0, help="least time of one kernel's sample")
    ap.add_argument("--tau", type=float, default=0.8)
    ap.add_argument("--velocity-set", default="d3q19", help="the 3D velocity set (default d3q19)")
    ap.add_argument("--collisions", default="bgk",
                    help="lbgen operators whose fused kernels are timed in the same rounds (comma-separated; the "
                         "first is the reference of the ratios, its layout is chosen, its fused_tb timed)")
    ap.add_argument("--lbmpy", action="store_true",
                    help="time lbmpy's counterpart of the first operator in the same rounds (SRT for bgk, "
                         "CUMULANT for cumulant)")
    ap.add_argument("--lbmpy-cse", choices=["both", "on", "off"], default="both",
                    help="lbmpy's common-subexpression options: both (the faster by a pre-timing), on, off")
    ap.add_argument("--lbmpy-rates", choices=["constant", "runtime"], default="constant",
                    help="lbmpy's relaxation rates: constants folded into its code (default: its fastest) or "
                         "kernel arguments as lbgen's are (runtime: the same work)")
    ap.add_argument("--pre-rounds", type=int, default=None,
                    help="interleaved rounds of the layout pre-timing (default 2, 3 with --cpu-time); each "
                         "layout's per-round rate ratio to the first layout's is printed (median [min-max])")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time in process CPU time (time.process_time) instead of wall-clock: with --threads 1, "
                         "the kernels' own time, which a loaded machine does not stretch; no copy bandwidth")
    ap.add_argument("--general-too", type=float, default=None, metavar="OMEGA4",
                    help="cumulant: time fused again with omega4=OMEGA4 (!= 1: the general site function, with the "
                         "limiter's code and every cumulant, which fused takes unless omega3 = omega4 = 1; the same "
                         "work as at the defaults before the specialised one)")
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)
    clock = chosen_clock(ap, args)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    shape = (args.size,) * 3
    sites = int(np.prod(shape))
    depths = [int(d) for d in args.depths.split(",") if d.strip()]
    collisions = [c for c in args.collisions.split(",") if c.strip()]
    from lbgen.model.velocity_set import velocity_set as vset
    from lbgen.model.operators import ParameterError, operator
    try:
        q = vset(args.velocity_set).Q
        if vset(args.velocity_set).D != 3:
            raise ValueError(f"--velocity-set {args.velocity_set}: a 3D set is timed here (2D: lbmpy_compare.py)")
        for c in collisions:
            operator(c).check_set(args.velocity_set, False)
    except (ParameterError, KeyError, ValueError) as e:
        ap.error(str(e))
    if not collisions:
        ap.error("--collisions names no operator")
    from lbmpy_kernels import LBMPY_METHODS
    if args.lbmpy and collisions[0] not in LBMPY_METHODS:
        ap.error(f"--lbmpy: lbmpy's counterpart of the first operator {collisions[0]!r} is not built here; "
                 f"the first of --collisions must be one of {', '.join(LBMPY_METHODS)}")
    per_site = bytes_per_site(q)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cpu_model(),
              "lattice": list(shape), "threads": args.threads, "load_average_start": os.getloadavg(),
              "velocity_set": args.velocity_set, "bytes_per_site": per_site, "kernels": []}
    print(f"{report['date']}  {report['cpu']}  {'x'.join(map(str, shape))} {args.velocity_set.upper()}, "
          f"{args.threads} threads, load average {report['load_average_start'][0]:.1f}", flush=True)
    build = {"collision": collisions[0], "velocity_set": args.velocity_set}
    from lbgen.perf.bench import parse_layouts
    layouts = parse_layouts(args.layouts)
    if len(layouts) > 1:
        progs = [lbgen_program3d(shape, args.threads, lay, vl, **build) for lay, vl in layouts]
        rounds = args.pre_rounds or (3 if args.cpu_time else 2)
        pre = interleaved_rates([lbgen_kernel3d(p, args.tau, 1)[0] for p in progs], [sites] * len(progs),
                                rounds, args.min_seconds / 3, clock=clock)
        best = max(range(len(progs)), key=lambda j: statistics.median(pre[j]))
        ratios = [[a / b for a, b in zip(s, pre[0])] for s in pre]
        print("lbgen layout pre-timing, fused (MLUPS): " + ", ".join(
            f"{p.layout.tag}: {statistics.median(s) / 1e6:.1f} ({statistics.median(r):.3f}x "
            f"[{min(r):.3f}-{max(r):.3f}] {progs[0].layout.tag})" for p, s, r in zip(progs, pre, ratios)),
            flush=True)
        report["layout_pre_timing"] = {p.layout.tag: statistics.median(s) / 1e6 for p, s in zip(progs, pre)}
        prog, chosen = progs[best], layouts[best]
        del progs
    else:
        chosen = layouts[0]
        prog = lbgen_program3d(shape, args.threads, *chosen, **build)
    kernels = [lbgen_kernel3d(prog, args.tau, 1)] + [lbgen_kernel3d(prog, args.tau, d) for d in depths]
    # fused_tb takes the specialised site function where fused does
    ops = [operations(collisions[0], args.velocity_set, fused=True)] * (1 + len(depths))
    if args.general_too is not None:
        if args.general_too == 1 or not operator(collisions[0]).specialised:
            ap.error(f"--general-too {args.general_too}: an omega4 other than 1 of an operator with a specialised "
                     f"site function (the first of --collisions is {collisions[0]!r})")
        kernels.append(lbgen_kernel3d(prog, args.tau, 1, omega4=args.general_too))
        ops.append(operations(collisions[0], args.velocity_set, fused=False))
    ops += [operations(c, args.velocity_set, fused=True) for c in collisions[1:]] + [None] * args.lbmpy
    for other in collisions[1:]:                    # the other operators, in the chosen layout
        kernels.append(lbgen_kernel3d(lbgen_program3d(shape, args.threads, *chosen, collision=other,
                                                      velocity_set=args.velocity_set),
                                      args.tau, 1))
    if args.lbmpy:
        from lbmpy_kernels import lbmpy_kernel
        cses = {"both": (False, True), "on": (True,), "off": (False,)}[args.lbmpy_cse]
        options = [lbmpy_kernel(args.velocity_set.upper(), shape, args.threads, args.tau, cse, collisions[0],
                                runtime_rates=args.lbmpy_rates == "runtime") for cse in cses]
        best = 0
        if len(options) > 1:
            pre = [[v / 1e6 for v in s] for s in interleaved_rates([o[0] for o in options], [sites] * len(options),
                                                                   2, args.min_seconds / 3, clock=clock)]
            best = max(range(len(options)), key=lambda j: statistics.median(pre[j]))
            print("lbmpy pre-timing (MLUPS): " + ", ".join(f"{o[1]}: {statistics.median(p):.1f}"
                                                            for o, p in zip(options, pre)), flush=True)
        kernels.append((options[best][0], sites, options[best][1]))
        del options
    copy, peak = [], []

    def measure_copy():
        if not args.cpu_time:               # a copy's rate in CPU time would not be the memory's
            bw = measure_bandwidth(nbytes=sites * q * 8, threads=args.threads, repeat=1, streams=q)
            copy.append(bw["streaming"]["gbs"])
        peak.append(measure_peak("double", threads=args.threads, repeat=3, clock=clock)["gflops"])

    samples = interleaved_rates([k[0] for k in kernels], [k[1] for k in kernels], args.repeat, args.min_seconds,
                                between=measure_copy, clock=clock)
    if args.cpu_time:
        copy = [float("nan")] * args.repeat
    report["load_average_end"] = os.getloadavg()
    report["copy_gbs"] = copy
    report["peak_gflops"] = peak
    fused = samples[0]
    for j, (_, _, name) in enumerate(kernels):
        mlups = [s / 1e6 for s in samples[j]]
        frac = [m * 1e6 * per_site / 1e9 / c for m, c in zip(mlups, copy)]
        entry = {"kernel": name, "mlups_median": statistics.median(mlups), "mlups": mlups,
                 "gbs_median": statistics.median(mlups) * per_site / 1e3,
                 "fraction_of_copy_median": statistics.median(frac), "fraction_of_copy": frac,
                 "vs_fused_median": statistics.median(s / f for s, f in zip(samples[j], fused)),
                 "vs_fused": [s / f for s, f in zip(samples[j], fused)]}
        if ops[j] is not None:              # the compute roof: the collide list's operations at this rate
            roof = [m * ops[j] / 1e3 / p for m, p in zip(mlups, peak)]
            entry.update(ops_per_site=ops[j], gflops_median=statistics.median(mlups) * ops[j] / 1e3,
                         fraction_of_peak_median=statistics.median(roof), fraction_of_peak=roof)
        if args.lbmpy and j < len(kernels) - 1:
            entry["vs_lbmpy_median"] = statistics.median(s / o for s, o in zip(samples[j], samples[-1]))
            entry["vs_lbmpy"] = [s / o for s, o in zip(samples[j], samples[-1])]
        report["kernels"].append(entry)
        extra = (f", {entry['vs_lbmpy_median']:.2f}x lbmpy [{min(entry['vs_lbmpy']):.2f}-"
                 f"{max(entry['vs_lbmpy']):.2f}]" if "vs_lbmpy_median" in entry else "")
        print(f"{name}: {entry['mlups_median']:.1f} MLUPS [{min(mlups):.1f}-{max(mlups):.1f}], "
              f"{entry['gbs_median']:.1f} GB/s, {entry['fraction_of_copy_median']:.2f} of the copy "
              f"[{min(frac):.2f}-{max(frac):.2f}], {entry['vs_fused_median']:.2f}x the first "
              f"[{min(entry['vs_fused']):.2f}-{max(entry['vs_fused']):.2f}]{extra}", flush=True)
        if ops[j] is not None:
            print(f"    {ops[j]} operations per site: {entry['gflops_median']:.1f} GFLOP/s, "
                  f"{entry['fraction_of_peak_median']:.3f} of the FMA peak", flush=True)
    print(f"copy bandwidth (streaming stores, {q} + {q} streams) per round: "
          + ", ".join(f"{c:.1f}" for c in copy) + " GB/s; FMA peak (double, "
          f"{args.threads} threads) per round: " + ", ".join(f"{p:.0f}" for p in peak) + " GFLOP/s", flush=True)
    report["bits"] = [same_bits(prog, args.tau, d) for d in depths]
    for b in report["bits"]:
        print(f"fused_tb depth {b['depth']} against {b['depth']} single steps (this build): "
              f"{'identical bits' if b['identical'] else 'max |difference| %.3g' % b['max_abs_difference']}")
    print(f"load average at the end {report['load_average_end'][0]:.1f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
