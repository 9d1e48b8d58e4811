"""The thermal walls sweep against the machine's limits (issue 39; a benchmark, not a test): a box of N^3 of a
thermal set (default D3Q39, 96^3) between the thermal walls across z, with a force (gravity), per operator
(default BGK and regularized): MLUPS of one ``fused_walls`` step (halo + fused sweep with the wall rows), the
bytes it moves per site, the fraction of the copy bandwidth and of the FMA peak, and its CPU time; with
``--cpu-time --threads 1`` the step and the peak in process CPU time (one core, unstretched by the load).

    python benchmarks/fused_walls_roof.py [--size 96] [--threads 2] [--collisions bgk,regularized]
                                          [--velocity-set d3q39] [--repeat 5] [--json out.json]
    python benchmarks/fused_walls_roof.py --threads 1 --cpu-time

Every round (``lbgen.system.timing.interleaved_rates``) first measures the copy bandwidth of a Q + Q stream
copy with streaming stores (``lbgen.perf.machine.measure_bandwidth``, buffers of the lattice's size, the limit
``lbgen bench`` uses) and the FMA peak (``measure_peak``, double, the same threads), then times each operator's
step in turn, so a shared machine slows them alike; fractions are taken per round and their medians reported.
Bytes per site: Q x 2 x 8 (each population read once and written once, double: ``bench3d.bytes_per_site``).
Operations per site: the collide list's (``lbgen info``'s count, an FMA as two); the wall rows (2/N of the
sites) and the force are not in it, so the fraction of the peak is a lower bound.  CPU time: the process's CPU
seconds over the same calls (all threads together) against their wall seconds x threads gives the share of
the threads' time the step actually ran (below 1: a loaded machine took the cores); the CPU-time rate
(sites x threads / CPU seconds) is what the threads did while they ran.  The kernels' code quality (flop
instructions, spills, stack operands): ``python benchmarks/site_asm.py --kernels d3q39-bgk-walls,...``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from bench3d import bytes_per_site, chosen_clock


def walls_step(n: int, velocity_set: str, collision: str, threads: int, tau: float, layout=None):
    """(one fused_walls step as a call, the Simulation) on the thermal box between walls across z."""
    from lbgen.model.physics import kinematic_viscosity, scale_factor, viscosity_parameters
    from lbgen.simulation.parameters import Walls
    from lbgen.simulation.runner import Simulation
    r = scale_factor(velocity_set)            # the viscosity of BGK's tau, in each operator's parameter (C1, ...)
    viscosity = viscosity_parameters(collision, kinematic_viscosity("bgk", {"tau": tau}, r=r), r=r)
    sim = Simulation(n, n, n, velocity_set=velocity_set, collision=collision, walls=Walls(T_bottom=1.02, T_top=0.98),
                     threads=threads, gravity=(0.0, 0.0, -1e-5), check_every=0, layout=layout, **viscosity)
    sim.set_fields(1.0, 0.01, 0.0, 0.0, T=1.0)
    p, r = sim.program, sim.regions[0]
    params, walls, f, g = sim.kernel_parameters, sim.walls, r.f, r.g

    def call():
        p.step_halo(f)
        p.step(f, g, params, walls=walls, fused=True)
    return call, sim


def main(argv=None) -> int:
    from lbgen.model.derived import collide
    from lbgen.model.operators import ParameterError, operator
    from lbgen.model.velocity_set import velocity_set as vset
    from lbgen.perf.machine import cpu_model, measure_bandwidth, measure_peak
    from lbgen.system.timing import interleaved_rates
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=96, help="LX = LY = LZ")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--velocity-set", default="d3q39", help="a 3D thermal set (default d3q39)")
    ap.add_argument("--collisions", default="bgk,regularized")
    ap.add_argument("--tau", type=float, default=0.8,
                    help="BGK's relaxation time; the other operators get its viscosity (regularized: C1), their other "
                         "parameters at their defaults")
    ap.add_argument("--layout", default=None, help="the C layout (default: the runtime's choice, lbgen.codegen.spec."
                    "choose_layout); e.g. soa")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved rounds")
    ap.add_argument("--min-seconds", type=float, default=1.0, help="least time of one kernel's sample")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time in process CPU time (time.process_time) instead of wall-clock: with --threads 1, the "
                         "step's own time and one core's peak, which a loaded machine does not stretch; no copy")
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)
    clock = chosen_clock(ap, args)
    collisions = [c for c in args.collisions.split(",") if c.strip()]
    try:
        vs = vset(args.velocity_set)
        from lbgen.model.physics import is_thermal
        if vs.D != 3 or not is_thermal(args.velocity_set):
            raise ValueError(f"--velocity-set {args.velocity_set}: a 3D thermal set is timed here (d3q39, d3q103: "
                             "the thermal walls); 2D: fused_walls_ab.py with d2q37")
        for c in collisions:
            operator(c).check_set(args.velocity_set, True)
            operator(c).check_walls(True)
    except (ParameterError, KeyError, ValueError) as e:
        ap.error(str(e))
    if not collisions:
        ap.error("--collisions names no operator")
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    q, sites = vs.Q, args.size ** 3
    per_site = bytes_per_site(q)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cpu_model(),
              "clock": "process CPU time" if args.cpu_time else "wall-clock",
              "lattice": [args.size] * 3, "threads": args.threads, "velocity_set": args.velocity_set,
              "bytes_per_site": per_site, "load_average_start": os.getloadavg(), "kernels": []}
    print(f"{report['date']}  {report['cpu']}  {args.size}^3 {args.velocity_set.upper()} between thermal walls, "
          f"{args.threads} threads, load average {report['load_average_start'][0]:.1f}", flush=True)
    steps, cpu, wall = [], [[0.0] for _ in collisions], [[0.0] for _ in collisions]
    for j, c in enumerate(collisions):
        call, sim = walls_step(args.size, args.velocity_set, c, args.threads, args.tau, args.layout)
        p = sim.program
        print(f"{c}: C {p.spec.layout}{'' if p.spec.vl is None else f' VL {p.spec.vl}'}, "
              f"{collide(c, args.velocity_set).flops} operations per site", flush=True)

        def timed(call=call, j=j):          # CPU and wall seconds of every call, warm-up included
            c0, w0 = time.process_time(), time.perf_counter()
            call()
            cpu[j][0] += time.process_time() - c0
            wall[j][0] += time.perf_counter() - w0
        steps.append(timed)
    copy, peak = [], []

    def limits():
        copy.append(float("nan") if args.cpu_time else     # a copy's rate in CPU time would not be the memory's
                    measure_bandwidth(nbytes=sites * q * 8, threads=args.threads, repeat=1, streams=q)
                    ["streaming"]["gbs"])
        peak.append(measure_peak("double", threads=args.threads, repeat=3, clock=clock)["gflops"])

    samples = interleaved_rates(steps, [sites] * len(steps), args.repeat, args.min_seconds, between=limits,
                                clock=clock)
    report.update(load_average_end=os.getloadavg(), copy_gbs=copy, peak_gflops=peak)
    for j, c in enumerate(collisions):
        ops = collide(c, args.velocity_set).flops
        mlups = [s / 1e6 for s in samples[j]]
        frac = [m * per_site / 1e3 / b for m, b in zip(mlups, copy)]
        roof = [m * ops / 1e3 / pk for m, pk in zip(mlups, peak)]
        busy = cpu[j][0] / (wall[j][0] * args.threads)
        entry = {"collision": c, "mlups": mlups, "mlups_median": statistics.median(mlups),
                 "gbs_median": statistics.median(mlups) * per_site / 1e3, "fraction_of_copy": frac,
                 "fraction_of_copy_median": statistics.median(frac), "ops_per_site": ops,
                 "gflops_median": statistics.median(mlups) * ops / 1e3, "fraction_of_peak": roof,
                 "fraction_of_peak_median": statistics.median(roof), "cpu_seconds": cpu[j][0],
                 "wall_seconds": wall[j][0], "cpu_share_of_threads": busy,
                 "cpu_time_mlups": statistics.median(mlups) / (1.0 if args.cpu_time else busy)}
        report["kernels"].append(entry)
        print(f"{c} fused_walls: {entry['mlups_median']:.2f} MLUPS [{min(mlups):.2f}-{max(mlups):.2f}], "
              f"{per_site} B/site, {entry['gbs_median']:.1f} GB/s, {entry['fraction_of_copy_median']:.2f} of the copy "
              f"[{min(frac):.2f}-{max(frac):.2f}]; {ops} ops/site: {entry['gflops_median']:.1f} GFLOP/s, "
              f"{entry['fraction_of_peak_median']:.3f} of the FMA peak [{min(roof):.3f}-{max(roof):.3f}]; "
              f"CPU time {busy:.2f} of {args.threads} threads' wall time ({entry['cpu_time_mlups']:.2f} MLUPS "
              f"in CPU time)", flush=True)
    print(f"copy bandwidth (streaming stores, {q} + {q} streams) per round: " + ", ".join(f"{c:.1f}" for c in copy)
          + f" GB/s; FMA peak (double, {args.threads} threads) per round: " + ", ".join(f"{p:.0f}" for p in peak)
          + f" GFLOP/s; load average at the end {report['load_average_end'][0]:.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
