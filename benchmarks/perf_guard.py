"""Guard cost: looks_healthy against one step (LX LY arguments, default 1024 x 4096; 2 threads).  Run it from two
checkouts alternately for an A/B (docs/performance-history.md).  Not a test."""
import sys, time
import numpy as np
from lbgen.simulation.runner import Simulation
from lbgen.run.setups import uniform_noise
LX, LY = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (1024, 4096)
s = Simulation(LX, LY, backend="c", threads=2, check_every=0)
s.set_fields(**uniform_noise(LX, LY)); s.step(2)
g, st = [], []
for i in range(3):
    t = time.perf_counter(); s.looks_healthy(); g.append(time.perf_counter() - t)
    t = time.perf_counter(); s.step(1); st.append(time.perf_counter() - t)
print(f"guard {np.median(g):.3f} s, step {np.median(st):.3f} s, guard/step {np.median(g) / np.median(st):.2f}")
