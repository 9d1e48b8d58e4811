"""A/B on a GPU: a 3D step's halo refresh, the whole halo (``halo``) against the X and Y planes
only (``halo_planes``, the default since the kernels wrap Z themselves), same kernels, rounds
interleaved.  Prints MLUPS per round, the medians and their ratio, and checks that both give
the same bits.

    python benchmarks/gpu_halo_ab.py [--size 256] [--steps 100] [--rounds 5] [--backend cuda]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import lbgen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--velocity-set", default="d3q19")
    a = ap.parse_args()
    n = a.size
    sim = lbgen.Simulation(n, n, n, backend=a.backend, velocity_set=a.velocity_set, tau=0.8, check_every=0)
    prog = sim.program
    print(f"{a.velocity_set} {n}^3 on {prog.describe()}, {sim.spec.layout} VL {sim.spec.vl}")
    x, y, _ = np.meshgrid(*(np.arange(n) * 2 * np.pi / n,) * 3, indexing="ij")
    sim.set_fields(rho=1.0, ux=0.05 * np.sin(x) * np.cos(y), uy=-0.05 * np.cos(x) * np.sin(y), uz=0.0)
    start = sim.state()
    variants = {"halo": prog.halo, "halo_planes": prog.halo_planes}
    rates = {k: [] for k in variants}
    for _ in range(a.rounds):
        for name, refresh in variants.items():
            prog.step_halo = refresh
            sim.restore(start, 0)
            sim.step(1)                                   # warm-up
            sim.synchronize()
            t0 = time.perf_counter()
            sim.step(a.steps)
            sim.synchronize()
            rates[name].append(n ** 3 * a.steps / (time.perf_counter() - t0) / 1e6)
    ends = {}
    for name, refresh in variants.items():
        prog.step_halo = refresh
        sim.restore(start, 0)
        sim.step(a.steps)
        ends[name] = sim.state()
    for name, r in rates.items():
        print(f"{name:12s} MLUPS " + " ".join(f"{v:8.1f}" for v in r) + f"   median {np.median(r):8.1f}")
    print(f"halo_planes / halo: {np.median(rates['halo_planes']) / np.median(rates['halo']):.3f}; "
          f"same bits after {a.steps} steps: {np.array_equal(ends['halo'], ends['halo_planes'])}")


if __name__ == "__main__":
    main()
