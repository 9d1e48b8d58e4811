"""Periodic BGK, 1024 x 1024, 30 steps; argument: OpenMP threads (0: all).  Driven by
perf_wait_policy.sh (quiet/busy x wait policy x threads).  Not a test."""
import sys
from lbgen.simulation.runner import Simulation
try:
    from lbgen.run.setups import uniform_noise
except ImportError:      # before the set-ups moved out of the runner
    from lbgen.simulation.runner import uniform_noise
threads = int(sys.argv[1])
sim = Simulation(1024, 1024, backend="c", collision="bgk", threads=threads, check_every=0)
sim.set_fields(**uniform_noise(1024, 1024))
sim.step(2)
print(sim.run(30).mlups)
