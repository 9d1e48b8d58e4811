"""Thermal walls in one sweep, A/B (issue 39), any dimension: a box of N^D of a thermal set (default
D3Q39; d2q37 for 2D) between walls across its last axis (C, the run's default layout, BGK tau 0.8, a
force): one fused_walls sweep a step against propagate,
bc, collide; fused_tb depth 2 and 3 against fused_walls; and the parts' times (fused without the
bc, bc, propagate, collide).  Interleaved rounds (lbgen.system.timing.interleaved_rates): on a
shared machine only the ratios per round mean something.  Not a test.

    python benchmarks/fused_walls_ab.py [N=48] [threads=2] [rounds=7] [velocity set=d3q39]
"""
import sys

import numpy as np

from lbgen.model.catalog import set_entry
from lbgen.simulation.parameters import Walls
from lbgen.simulation.runner import Simulation
from lbgen.system.timing import interleaved_rates

given = [int(a) for a in sys.argv[1:4]]
n, threads, rounds = given + [48, 2, 7][len(given):]
set_name = sys.argv[4] if len(sys.argv) > 4 else "d3q39"
D = set_entry(set_name).D
sim = Simulation(*(n,) * D, velocity_set=set_name, walls=Walls(T_bottom=1.02, T_top=0.98), tau=0.8, threads=threads,
                 gravity=(0.0,) * (D - 1) + (-1e-5,), check_every=0)
sim.set_fields(1.0, 0.01, *(0.0,) * (D - 1), T=1.0)
p, r = sim.program, sim.regions[0]
params, walls, f, g = sim.kernel_parameters, sim.walls, r.f, r.g
cells = n ** D
print(f"{set_name.upper()} {n}^{D}, walls across {'xyz'[D - 1]}, C {p.spec.layout}"
      f"{'' if p.spec.vl is None else f' VL {p.spec.vl}'}, {p.threads} threads")


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
depth_force = {"az": params["az"]} if "az" in params else {}
calls = {"separate": step(False), "fused_walls": step(True), "fused_tb 2": blocked(2), "fused_tb 3": blocked(3),
         "fused (no bc)": lambda: p.fused(f, g, **params),
         "bc": lambda: p.bc(f, g, walls.T_bottom, walls.T_top, (False, False), *force, **depth_force),
         "propagate": lambda: p.propagate(f, g), "collide": lambda: p.collide(g, f, **params)}
steps = {"fused_tb 2": 2, "fused_tb 3": 3}
rates = dict(zip(calls, np.array(interleaved_rates(list(calls.values()), [steps.get(k, 1) * cells for k in calls],
                                                  repeat=rounds, min_seconds=0.4))))
for name, base in (("fused_walls", "separate"), ("fused_tb 2", "fused_walls"), ("fused_tb 3", "fused_walls")):
    ratio = rates[name] / rates[base]
    print(f"{name} / {base}: median {np.median(ratio):.2f} [{ratio.min():.2f}-{ratio.max():.2f}]")
for name in ("fused (no bc)", "bc", "propagate", "collide", "separate", "fused_walls"):
    print(f"{name}: {cells / np.median(rates[name]) * 1e3:.1f} ms a call (median)")
