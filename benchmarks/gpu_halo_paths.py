"""Device ranks' halo paths timed (issue 40): under ``mpiexec -n P``, a D3Q19 cube split along X
over P ranks of one backend (``--backend cuda`` on a GPU; ``opencl`` on the CPU runtime
anywhere), each halo path the ranks can take, interleaved rounds; per path the step time
(the slowest rank's, median of the rounds), MLUPS, the bytes each rank copied and sent per step
(``DistributedSimulation.transfers`` / ``messages``) and the data-movement model's prediction
(``lbgen.parallel.gpu_model``) beside them.  With one process: the single-device step of the
same lattice.  Prints one JSON line (rank 0); ``--out`` writes it to a file too.

    mpiexec -n 2 python benchmarks/gpu_halo_paths.py --size 256 --steps 50 --backend cuda
    python benchmarks/gpu_halo_paths.py --size 256 --steps 50 --backend cuda        # one device
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def fields(n: int):
    x, y, _ = np.meshgrid(*(np.arange(n) * 2 * np.pi / n,) * 3, indexing="ij")
    return 1.0, 0.05 * np.sin(x) * np.cos(y), -0.05 * np.cos(x) * np.sin(y), 0.0


def timed(sim, steps: int, comm=None) -> float:
    sim.step(2)                                   # warm-up (first launches, pinned buffers)
    sim.synchronize()
    if comm is not None:
        comm.Barrier()
    t0 = time.perf_counter()
    sim.step(steps)
    sim.synchronize()
    dt = time.perf_counter() - t0
    return dt if comm is None else comm.allreduce(dt, op=_max())


def _max():
    from mpi4py import MPI
    return MPI.MAX


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--precision", default="double")
    ap.add_argument("--paths", default="staged,staged-serial,device",
                    help="staged (its copies and trades overlap the interior sweep), staged-serial (overlap=False: "
                         "exchange, then step), device")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    n = a.size
    kw = dict(backend=a.backend, velocity_set="d3q19", tau=0.8, check_every=0, precision=a.precision)
    from lbgen.parallel.mpi import world
    comm = world()
    import lbgen
    report = {"size": n, "backend": a.backend, "precision": a.precision, "steps": a.steps, "lbgen": lbgen.__file__}
    if comm is None or comm.size == 1:
        from lbgen.simulation.runner import Simulation
        sim = Simulation(n, n, n, **kw)
        sim.set_fields(*fields(n))
        dts = [timed(sim, a.steps) / a.steps for _ in range(a.rounds)]
        report.update(ranks=1, device=sim.program.describe(), step_s=float(np.median(dts)), rounds_s=dts,
                      mlups=n ** 3 / float(np.median(dts)) / 1e6)
    else:
        from lbgen.parallel.simulation import DistributedSimulation
        sims = {}
        for path in a.paths.split(","):
            try:
                sims[path] = DistributedSimulation(comm, n, n, n, ranks_grid=f"{comm.size}x1x1",
                                                   halo_path=path.split("-")[0], overlap=path != "staged-serial", **kw)
            except Exception as e:  # noqa: BLE001 - a path these ranks cannot take: say why
                report[f"{path} refused"] = str(e).splitlines()[0]
                continue
            sims[path].set_fields(*fields(n))
        rounds = {p: [] for p in sims}
        moved = {}
        for _ in range(a.rounds):
            for path, sim in sims.items():
                before, sent = dict(sim.transfers), dict(sim.messages)
                dt = timed(sim, a.steps, comm) / a.steps
                rounds[path].append(dt)
                moved[path] = {k: (v - before.get(k, 0)) / (a.steps + 2) for k, v in sim.transfers.items()}
                moved[path].update({k: (v - sent.get(k, 0)) / (a.steps + 2) for k, v in sim.messages.items()})
        report.update(ranks=comm.size)
        for path, sim in sims.items():
            step = float(np.median(rounds[path]))
            entry = {"step_s": step, "rounds_s": rounds[path], "mlups": n ** 3 / step / 1e6,
                     "per_step_rank0": moved[path], "reason": sim.halo_path_reason}
            try:
                from lbgen.parallel import gpu_model
                entry["model"] = gpu_model.predicted_for(sim, path)
            except (ImportError, AttributeError, TypeError, ValueError) as e:
                entry["model"] = f"unavailable: {e}"
            report[path] = entry
        if comm.rank != 0:
            return
    line = json.dumps(report)
    print(line, flush=True)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(line + "\n")


if __name__ == "__main__":
    main()
