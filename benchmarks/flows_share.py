"""The boundary and force work's share of a step in a flow around a body (issue 36), and that a
periodic run pays nothing for the kinds it does not use: four D3Q19 BGK lattices of the same size
stepped in turn (same sitting, interleaved; the best of ``--repeats`` x ``--steps`` steps each):

  periodic   the periodic box (no walls, faces or bodies)
  channel    no-slip walls on y and z, a parabolic velocity inlet at x-low, a pressure outlet at x-high
  halfway    the channel with a sphere (D = LY/4, 2.5 D behind the inlet), half-way walls, its force
  bouzidi    the same with Bouzidi's interpolated walls

Prints ms/step of each and the shares (channel - periodic)/channel and (bouzidi - periodic)/bouzidi.
    python benchmarks/flows_share.py --shape 192,96,96 --threads 2
"""
from __future__ import annotations

import argparse
import time

import lbgen
from lbgen.geometry import Bodies, Sphere


def lattices(shape, threads):
    lx, ly, lz = shape
    d = ly / 4
    sphere = Bodies(shape, [Sphere((2.5 * d, (ly - 1) / 2, (lz - 1) / 2), d / 2)], names=["sphere"])
    common = dict(velocity_set="d3q19", tau=0.6, threads=threads)
    channel = dict(walls="yz", inlet={"x-low": ("parabolic", 0.1)}, outlet={"x-high": 1.0})
    out = {"periodic": lbgen.Simulation(*shape, **common),
           "channel": lbgen.Simulation(*shape, **common, **channel),
           "halfway": lbgen.Simulation(*shape, **common, **channel, bodies=sphere, body_bc="halfway"),
           "bouzidi": lbgen.Simulation(*shape, **common, **channel, bodies=sphere, body_bc="bouzidi")}
    for sim in out.values():
        sim.set_fields(1.0, 0.0, 0.0, 0.0)
        sim.step(1)                                     # first call: compiles, first touch
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="192,96,96")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    shape = tuple(int(n) for n in a.shape.split(","))
    sims = lattices(shape, a.threads)
    best = {k: float("inf") for k in sims}
    for _ in range(a.repeats):
        for name, sim in sims.items():
            t0 = time.perf_counter()
            sim.step(a.steps)
            if sim.bodies is not None:
                sim.forces()
            best[name] = min(best[name], (time.perf_counter() - t0) / a.steps)
    links = sum(sims["bouzidi"].bodies.count().values())
    print(f"D3Q19 BGK {'x'.join(map(str, shape))}, C, {a.threads} threads, best of {a.repeats} x {a.steps} steps; "
          f"sphere links {links}")
    for name, t in best.items():
        print(f"  {name:9s} {1e3 * t:8.2f} ms/step")
    print(f"  open faces + walls share of the channel's step: {(best['channel'] - best['periodic']) / best['channel']:+.1%}")
    print(f"  faces, walls, body and force share of the Bouzidi step: "
          f"{(best['bouzidi'] - best['periodic']) / best['bouzidi']:+.1%}; body and force alone: "
          f"{(best['bouzidi'] - best['channel']) / best['bouzidi']:+.1%}")


if __name__ == "__main__":
    main()
