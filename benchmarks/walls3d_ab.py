"""The 3D thermal walls in one sweep, A/B (issue 39): a D3Q39 box of N^3 between walls across z (C,
the run's default layout, BGK tau 0.8, a force): one fused_walls sweep a step against propagate,
bc, collide; fused_tb depth 2 and 3 against fused_walls; and the parts' times (fused without the
bc, bc, propagate, collide).  Interleaved rounds (lbgen.system.timing.interleaved_rates): on a
shared machine only the ratios per round mean something.  Not a test.

    python benchmarks/walls3d_ab.py [N=48] [threads=2] [rounds=7]
"""
import sys

import numpy as np

from lbgen.simulation.parameters import Walls
from lbgen.simulation.runner import Simulation
from lbgen.system.timing import interleaved_rates

given = [int(a) for a in sys.argv[1:4]]
n, threads, rounds = given + [48, 2, 7][len(given):]
sim = Simulation(n, n, n, velocity_set="d3q39", walls=Walls(T_bottom=1.02, T_top=0.98), tau=0.8, threads=threads,
                 gravity=(0.0, 0.0, -1e-5), check_every=0)
sim.set_fields(1.0, 0.01, 0.0, 0.0, T=1.0)
p, r = sim.program, sim.regions[0]
params, walls, f, g = sim.kernel_parameters, sim.walls, r.f, r.g
print(f"D3Q39 {n}^3, walls across z, C {p.spec.layout}{'' if p.spec.vl is None else f' VL {p.spec.vl}'}, "
      f"{p.threads} threads")


def step(fused):
    def call():
        p.step_halo(f)
        p.step(f, g, params, walls=walls, fused=fused)
    return call


def blocked(depth):
    def call():
        p.step_halo(f)
        p.fused_tb(f, g, depth, walls=walls, **params)
    return call


force = (params["ax"], params["ay"])
calls = {"separate": step(False), "fused_walls": step(True), "fused_tb 2": blocked(2), "fused_tb 3": blocked(3),
         "fused (no bc)": lambda: p.fused(f, g, **params),
         "bc": lambda: p.bc(f, g, walls.T_bottom, walls.T_top, (False, False), *force, az=params["az"]),
         "propagate": lambda: p.propagate(f, g), "collide": lambda: p.collide(g, f, **params)}
steps = {"fused_tb 2": 2, "fused_tb 3": 3}
rates = dict(zip(calls, np.array(interleaved_rates(list(calls.values()), [steps.get(k, 1) * n ** 3 for k in calls],
                                                  repeat=rounds, min_seconds=0.4))))
for name, base in (("fused_walls", "separate"), ("fused_tb 2", "fused_walls"), ("fused_tb 3", "fused_walls")):
    ratio = rates[name] / rates[base]
    print(f"{name} / {base}: median {np.median(ratio):.2f} [{ratio.min():.2f}-{ratio.max():.2f}]")
for name in ("fused (no bc)", "bc", "propagate", "collide", "separate", "fused_walls"):
    print(f"{name}: {n ** 3 / np.median(rates[name]) * 1e3:.1f} ms a call (median)")
