"""The production-style MPI driver on lbgen's kernels (examples/production/driver.c) against the
production D2Q37 code itself, same lattice, same ranks and threads, interleaved.

Not a test.  Builds the production code with the venv's mpicc (mpich; the sources as
benchmarks/production_compare.py finds them: --source, else the local mirror), emits lbgen's
kernels in the production layout (``--layout soa --halo-y 16 --walls --collision regularized``)
and builds the driver with the same mpicc and flags.  Then, for ``--rounds`` rounds, for each
decomposition (1 rank x 2 threads, 2 ranks x 1 thread by default; the production code splits 2
ranks in X, MPI_Dims_create, and so does the driver) it runs, in an order rotating per round,
the production binary, the driver with overlap (bulk during the X halo exchange, then the
borders) and without (exchange, then one sweep), each under ``mpiexec -n R`` with
OMP_NUM_THREADS=T and OMP_WAIT_POLICY=passive.  Timers: the production code's own ms/iter
(its [GLOBAL-INFO] line: its whole step loop), the driver's own (MPI_Wtime around its step
loop between two barriers).  Prints per round the MLUPS and the driver / production ratios,
then their medians.

    .venv/bin/python benchmarks/production_driver_compare.py --lx 256 --ly 1024 --steps 50 --rounds 3

Physics differ in one place that does not change the cost: the production code's walls are
adiabatic with its own bc (lbgen's "reference" scheme), the driver's are fixed-temperature
with lbgen's scheme (see production_compare.py: the bc touches 6 rows).
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from production_compare import GLOBAL_INFO, build_production, fail, production_sources  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DRIVER_LINE = re.compile(r"steps on (\d+) x (\d+), (\d+) x (\d+) ranks, overlap (\d): ([0-9.]+) s, ([0-9.]+) MLUPS")


def build_driver(scratch: Path, mpicc: str, cflags: list) -> Path:
    from lbgen.codegen.emit import emit
    from lbgen.codegen.spec import KernelSpec
    kernels = scratch / "kernels"
    emit(KernelSpec(layout="soa", halo_y=16, walls=True, collision="regularized"), kernels)
    exe = scratch / "driver"
    cmd = [mpicc, *cflags, "-std=gnu11", f"-I{kernels}", str(REPO / "examples" / "production" / "driver.c"),
           str(kernels / "lbgen_kernels.c"), "-lm", "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        fail("the driver did not build:\n" + " ".join(cmd) + "\n" + done.stderr[-3000:])
    return exe


def run_production(mpiexec, binary, folder, lx, ly, steps, ranks, env) -> float:
    folder.mkdir(exist_ok=True)
    (folder / "control").write_text(f"{lx}\n{ly}\n{steps}\n1\n")
    done = subprocess.run([mpiexec, "-n", str(ranks), str(binary)], cwd=folder, env=env, capture_output=True,
                          text=True)
    m = GLOBAL_INFO.search(done.stdout + done.stderr)
    if done.returncode or not m:
        fail(f"production run failed:\n{(done.stdout + done.stderr)[-3000:]}")
    if int(m.group(4)) != ranks:
        fail(f"production ran on {m.group(4)} ranks, asked {ranks}")
    return lx * ly / (float(m.group(6)) * 1e3)


def run_driver(mpiexec, exe, folder, lx, ly, steps, ranks, overlap, env) -> float:
    out = folder / "fields.bin"
    done = subprocess.run([mpiexec, "-n", str(ranks), str(exe), str(lx), str(ly), str(ranks), "1", str(steps),
                           str(overlap), str(out)], cwd=folder, env=env, capture_output=True, text=True)
    m = DRIVER_LINE.search(done.stdout)
    if done.returncode or not m:
        fail(f"driver run failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return float(m.group(7))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lx", type=int, default=256)
    ap.add_argument("--ly", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--source", default=None, help="DisCostiC-Sim checkout (default: the local mirror)")
    ap.add_argument("--cflags", default="-O3 -march=native -fopenmp")
    ap.add_argument("--configs", default="1x2,2x1", help="ranks x threads, comma separated")
    args = ap.parse_args(argv)
    bindir = Path(sys.executable).parent
    mpicc, mpiexec = str(bindir / "mpicc"), str(bindir / "mpiexec")
    configs = [tuple(int(v) for v in c.split("x")) for c in args.configs.split(",")]
    cflags = args.cflags.split()
    with tempfile.TemporaryDirectory(prefix="prod_driver_") as tmp:
        scratch = Path(tmp)
        src, origin = production_sources(args.source, scratch)
        prod, _ = build_production(src, scratch, "gcc", cflags, mpicc)
        exe = build_driver(scratch, mpicc, cflags)
        print(f"production: {origin}; flags {' '.join(cflags)}; lattice {args.lx} x {args.ly}, {args.steps} steps; "
              f"load before {os.getloadavg()[0]:.2f}")
        ratios = {(c, o): [] for c in configs for o in (1, 0)}
        for rnd in range(args.rounds):
            for ranks, threads in configs:
                env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="passive")
                sides = ["prod", 1, 0]
                sides = sides[rnd % 3:] + sides[:rnd % 3]
                got = {}
                for side in sides:
                    if side == "prod":
                        got[side] = run_production(mpiexec, prod, scratch / "prun", args.lx, args.ly, args.steps,
                                                   ranks, env)
                    else:
                        got[side] = run_driver(mpiexec, exe, scratch, args.lx, args.ly, args.steps, ranks, side, env)
                for o in (1, 0):
                    ratios[(ranks, threads), o].append(got[o] / got["prod"])
                print(f"round {rnd + 1} {ranks} rank(s) x {threads} thread(s): production {got['prod']:.2f} MLUPS, "
                      f"driver overlap {got[1]:.2f} ({got[1] / got['prod']:.2f}x), "
                      f"no overlap {got[0]:.2f} ({got[0] / got['prod']:.2f}x)", flush=True)
        print(f"load after {os.getloadavg()[0]:.2f}")
        for (c, o), r in ratios.items():
            print(f"median {c[0]} rank(s) x {c[1]} thread(s), {'overlap' if o else 'no overlap'}: "
                  f"{statistics.median(r):.2f}x (min {min(r):.2f}, max {max(r):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
