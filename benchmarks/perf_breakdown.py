#!/usr/bin/env python3
"""Usage: python benchmarks/perf_breakdown.py LX LY ROUNDS  (docs/performance-history.md used 1024 4096 6).

Where a step's time goes: the sweep kernel alone, the halo kernel, Simulation.step (halo +
sweep + Python), and the guard (looks_healthy) / fields.  Finely interleaved single calls,
medians of REPS rounds."""
import sys, time
import numpy as np
from lbgen.simulation.runner import Simulation, Walls
try:
    from lbgen.run.setups import rayleigh_taylor, uniform_noise
except ImportError:      # before the set-ups moved out of the runner
    from lbgen.simulation.runner import rayleigh_taylor, uniform_noise
LX, LY, REPS = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cases = {
    "periodic-bgk": (dict(collision="bgk"), uniform_noise(LX, LY)),
    "rt-regularized-walls": (dict(collision="regularized", gravity=(0.0, -8.33e-5 / 32), walls=Walls(1.05, 0.95)),
                             rayleigh_taylor(LX, LY, gravity=(0.0, -8.33e-5 / 32))),
}
sims = {}
for name, (kw, fields) in cases.items():
    t0 = time.perf_counter()
    s = Simulation(LX, LY, backend="c", threads=2, check_every=0, **kw)
    t1 = time.perf_counter()
    s.set_fields(**fields)
    t2 = time.perf_counter()
    s.step(1)
    sims[name] = s
    print(f"{name}: Simulation() {t1 - t0:.2f} s (kernels cached), set_fields {t2 - t1:.3f} s", flush=True)
res = {name: {k: [] for k in ("sweep", "halo", "step", "guard", "fields")} for name in sims}
def timed(fn):
    t = time.perf_counter(); fn(); return time.perf_counter() - t
for rep in range(REPS):
    for name, s in sims.items():
        r, p, kp, w = s.regions[0], s.program, s.kernel_parameters, s.walls
        if w is None:
            sweep = lambda: p.fused(r.f, r.g, **kp)
        else:
            sweep = lambda: p.fused_walls(r.f, r.g, w.T_bottom, w.T_top, (False, False), **kp)
        res[name]["sweep"].append(timed(sweep))
        res[name]["step"].append(timed(lambda: s.step(1)))
        res[name]["halo"].append(timed(lambda: p.halo(r.f)))
        res[name]["sweep"].append(timed(sweep))
        res[name]["step"].append(timed(lambda: s.step(1)))
        if rep % 2 == 0:
            res[name]["guard"].append(timed(s.looks_healthy))
            res[name]["fields"].append(timed(s.fields))
for name, d in res.items():
    m = {k: float(np.median(v)) for k, v in d.items()}
    sites = LX * LY / 1e6
    print(f"{name}: sweep {m['sweep']*1e3:.1f} ms ({sites / m['sweep']:.2f} MLUPS), halo {m['halo']*1e3:.2f} ms "
          f"({m['halo'] / m['sweep']:.1%} of the sweep), step {m['step']*1e3:.1f} ms "
          f"(loop at {m['sweep'] / m['step']:.1%} of the kernel speed; rest {m['step'] - m['sweep'] - m['halo']:+.4f} s); "
          f"guard {m['guard']*1e3:.1f} ms = {m['guard'] / m['step']:.2f} steps "
          f"(at the default cadence of 100 steps: {m['guard'] / (100 * m['step']):.2%}); fields {m['fields']*1e3:.1f} ms")
