"""Checkpoints of several ranks: gathered to rank 0 as one file (``state()`` + ``write_checkpoint``,
read back by rank 0 and scattered: ``restore``) against pieces (``write_pieces``, each rank its
block; ``restore_pieces``, each rank the pieces over its block), interleaved A/B in one sitting.

    mpiexec -n 4 python benchmarks/checkpoint_pieces.py --lx 512 --ly 512 --rounds 5 --dir /tmp/ckbench

Prints (rank 0) the median seconds of each kind per round order A B / B A alternated, their
ratio, and the largest population array one rank holds (bytes) on each path."""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

from lbgen.parallel.simulation import DistributedSimulation
from lbgen.run.checkpoint import CheckpointPieces, read_checkpoint, write_checkpoint, write_pieces


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lx", type=int, default=512)
    ap.add_argument("--ly", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default="ckbench")
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    sim = DistributedSimulation(comm, a.lx, a.ly)
    sim.set_fields(rho=1.0, ux=0.01, uy=0.0, T=1.0)
    sim.step(1)
    folder = Path(a.dir)
    one, pieces = folder / "one.lbchk", folder / "step.lbpieces"
    held = {"one file": 0, "pieces": 0}

    def write_one():
        state = sim.state()
        if comm.rank == 0:
            write_checkpoint(one, state, sim.time_step)
            held["one file"] = max(held["one file"], state.nbytes)

    def read_one():
        state = read_checkpoint(one)[0] if comm.rank == 0 else None
        sim.restore(state, sim.time_step if comm.rank == 0 else None)

    def write_many():
        mine = sim.state_pieces()
        held["pieces"] = max(held["pieces"], mine[0][1].nbytes)
        write_pieces(pieces, mine, sim.time_step, grid=sim.dims, lattice=sim.lattice, velocity_set=sim.vs.name,
                     comm=comm)

    def read_many():
        sim.restore_pieces(CheckpointPieces(pieces))

    calls = {"write one file": write_one, "write pieces": write_many, "read one file": read_one,
             "read pieces": read_many}
    if comm.rank == 0:
        folder.mkdir(parents=True, exist_ok=True)
    comm.Barrier()
    times = {k: [] for k in calls}
    for r in range(a.rounds):
        for pair in (("write one file", "write pieces"), ("read one file", "read pieces")):
            for name in (pair if r % 2 == 0 else pair[::-1]):
                comm.Barrier()
                t = time.perf_counter()
                calls[name]()
                comm.Barrier()
                times[name].append(time.perf_counter() - t)
    most = comm.reduce(held["pieces"], op=MPI.MAX, root=0)
    if comm.rank == 0:
        med = {k: statistics.median(v) for k, v in times.items()}
        print(json.dumps({"ranks": comm.size, "grid": list(sim.dims), "lattice": [a.lx, a.ly], "Q": sim.vs.Q,
                          "median_s": med, "rounds_s": times,
                          "write ratio (one file / pieces)": med["write one file"] / med["write pieces"],
                          "read ratio (one file / pieces)": med["read one file"] / med["read pieces"],
                          "largest array on a rank, one file [B]": held["one file"],
                          "largest array on a rank, pieces [B]": most}, indent=1))
        shutil.rmtree(folder, ignore_errors=True)
    assert np.isfinite(sim.state_pieces()[0][1]).all()


if __name__ == "__main__":
    main()
