"""Rayleigh-Taylor step (regularized + walls, 1024 x 4096, 2 threads): fused_walls against
propagate -> bc -> collide, same build, interleaved rounds of Simulation.run(5).  Not a test.

    python benchmarks/perf_fused_walls.py
"""
import numpy as np
from lbgen.simulation.runner import Simulation, Walls
try:
    from lbgen.run.setups import rayleigh_taylor
except ImportError:      # before the set-ups moved out of the runner
    from lbgen.simulation.runner import rayleigh_taylor
LX, LY = 1024, 4096
kw = dict(backend="c", collision="regularized", gravity=(0.0, -8.33e-5 / 32), walls=Walls(1.05, 0.95), threads=2, check_every=0)
sims = {"fused_walls": Simulation(LX, LY, **kw), "three_sweeps": Simulation(LX, LY, fused=False, **kw)}
fields = rayleigh_taylor(LX, LY, gravity=(0.0, -8.33e-5 / 32))
for s in sims.values():
    s.set_fields(**fields); s.step(1)
res = {k: [] for k in sims}
for rep in range(4):
    for k, s in sims.items():
        st = s.run(5)
        res[k].append(st.mlups)
for k, v in res.items():
    print(k, "MLUPS", " ".join(f"{x:.1f}" for x in v), "median", f"{np.median(v):.2f}")
print("ratio fused/three (medians)", np.median(res["fused_walls"]) / np.median(res["three_sweeps"]))
print("pairwise ratios", [round(a / b, 3) for a, b in zip(res["fused_walls"], res["three_sweeps"])])
