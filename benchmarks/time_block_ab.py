"""Interleaved A/B of lbgen's fused kernel against fused_tb (temporal blocking), C backend.

    OMP_WAIT_POLICY=passive python benchmarks/time_block_ab.py LX LY LAYOUT VL DEPTHS REPEAT THREADS [COLLISION]
    e.g.  ... 1024 4096 caosoa 8 2,3 5 1

Each sample runs 12 steps (halo + kernel) of every variant in turn; it prints the median
and best wall-clock MLUPS and the CPU-time MLUPS (site updates per second of process CPU
time, times the thread count), which is what a kernel costs on a machine shared with
other work.  FLAGS="-O3 -march=native -fopenmp -DLBGEN_TB_KB=2048" changes the build
(e.g. the cache budget that sets the band height).  A benchmark, not a test.
"""
import os
import sys
import time

import numpy as np

from lbgen.backends import c as cb
from lbgen.codegen.spec import KernelSpec
from lbgen.codegen.render import generate
from lbgen.perf.timing import default_kernel_parameters

lx, ly = int(sys.argv[1]), int(sys.argv[2])
layout, vl = sys.argv[3], int(sys.argv[4]) or None
depths = [int(d) for d in sys.argv[5].split(",")]
reps, threads = int(sys.argv[6]), int(sys.argv[7])
coll = sys.argv[8] if len(sys.argv) > 8 else "bgk"
flags = tuple(os.environ["FLAGS"].split()) if os.environ.get("FLAGS") else None
prog = cb.compile(generate(KernelSpec(backend="c", layout=layout, vl=vl, collision=coll)), lx, ly,
                  threads=threads, flags=flags)
a, b = prog.allocate(), prog.allocate()
prog.init_equilibrium(a, np.ones((lx, ly)), np.zeros((lx, ly)), np.zeros((lx, ly)), np.ones((lx, ly)))
p = default_kernel_parameters(coll)
res = {d: ([], []) for d in [1] + depths}
steps = 12
for _ in range(reps):
    for d in [1] + depths:
        t, c = time.perf_counter(), time.process_time()
        for _ in range(steps // d):
            prog.halo(a)
            if d == 1:
                prog.fused(a, b, **p)
            else:
                prog.fused_tb(a, b, d, **p)
            a, b = b, a
        dt, dc = time.perf_counter() - t, time.process_time() - c
        res[d][0].append(steps * lx * ly / dt / 1e6)
        res[d][1].append(steps * lx * ly / dc / 1e6 * threads)
print(f"{lx} x {ly} {layout} VL {vl} {coll}, {threads} threads, load average {os.getloadavg()[0]:.1f}")
for d, (w, c) in res.items():
    name = "fused" if d == 1 else f"fused_tb depth {d}"
    print(f"{name:>18}: wall MLUPS median {np.median(w):.1f} best {max(w):.1f} | CPU-time MLUPS median "
          f"{np.median(c):.1f} best {max(c):.1f}")
