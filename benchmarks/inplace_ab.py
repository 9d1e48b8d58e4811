"""Interleaved A/B of in-place streaming (one population buffer, the AA pattern) against pull (two
buffers), C or OpenCL backend (the device: PYOPENCL_CTX), a periodic D3Q19 BGK cube: bytes per cell of the populations (the buffers a
Simulation holds, halos included, over the sites) and MLUPS of each, timed in turn within every
sample (``lbgen.system.timing.interleaved_rates``; two steps a call, so the in-place lattice does
one even and one odd step, and waits for the device), with the ratio per sample.  -O3 builds, as
`lbgen run` uses.

    OMP_WAIT_POLICY=passive python benchmarks/inplace_ab.py [N] [LAYOUTS] [REPEAT] [THREADS] [PRECISION] [BACKEND]
    e.g.  ... 128 soa,caosoa-vl8 7 2 double
          PYOPENCL_CTX=0 ... 64 soa,caosoa-vl8 7 2 double opencl   (THREADS: the C backend's only)
"""
from __future__ import annotations

import os
import statistics
import sys

os.environ.pop("LBGEN_OPT_LEVEL", None)       # the -O3 builds runs use

import lbgen  # noqa: E402
from lbgen.system.timing import interleaved_rates  # noqa: E402


def lattice(n: int, layout: str, streaming: str, threads: int, precision: str, backend: str):
    name, _, vl = layout.partition("-vl")
    host = {"threads": threads} if backend == "c" else {}
    sim = lbgen.Simulation(n, n, n, layout=name, vl=int(vl) if vl else None, streaming=streaming, backend=backend,
                           precision=precision, tau=0.8, time_block=1, **host)
    sim.set_fields(1.0, u=(0.01, 0.0, 0.0))
    return sim


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    layouts = (sys.argv[2] if len(sys.argv) > 2 else "soa,caosoa-vl8").split(",")
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    precision = sys.argv[5] if len(sys.argv) > 5 else "double"
    backend = sys.argv[6] if len(sys.argv) > 6 else "c"
    where = f"C, {threads} threads" if backend == "c" else backend
    print(f"| D3Q19 BGK {n}^3 {precision}, {where} | populations B/cell pull / inplace | "
          f"MLUPS pull | MLUPS inplace | inplace / pull, median [range] |")
    print("|---|---|---|---|---|")
    for layout in layouts:
        sims = [lattice(n, layout, s, threads, precision, backend) for s in ("pull", "inplace")]
        per_cell = [sum(getattr(b, "nbytes", None) or b.size for r in s.regions for b in (r.f, r.g) if b is not None)
                    / n ** 3 for s in sims]        # a device buffer's size is its bytes
        rates = interleaved_rates([lambda s=s: (s.step(2), s.program.synchronize()) for s in sims],
                                  [2 * n ** 3 / 1e6] * 2, repeat, 1.0)
        ratios = [b / a for a, b in zip(*rates)]
        print(f"| {layout} | {per_cell[0]:.0f} / {per_cell[1]:.0f} | {statistics.median(rates[0]):.1f} | "
              f"{statistics.median(rates[1]):.1f} | {statistics.median(ratios):.2f} [{min(ratios):.2f}-"
              f"{max(ratios):.2f}] |", flush=True)


if __name__ == "__main__":
    main()
