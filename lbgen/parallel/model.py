"""The multi-rank communication model (seeds 002/003): ``ring_shift`` times each rank
sending N bytes to its right neighbour while receiving from its left one;
``fit_latency_bandwidth`` fits T = L + N/B by least squares; ``predict`` adds 2 halo
messages per step to the per-rank slab compute time (``lbgen model --ranks N``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from lbgen.model.catalog import DEFAULT_VELOCITY_SET
from lbgen.model.velocity_set import velocity_set
from lbgen.parallel.mpi import TAG_RING
from lbgen.simulation.runner import Simulation


@dataclass(frozen=True)
class CommModel:
    """Postal model of one message: T = latency + bytes / bandwidth."""

    latency: float      # s
    bandwidth: float    # bytes / s

    def time(self, nbytes: float) -> float:
        return self.latency + nbytes / self.bandwidth

    def to_json(self) -> dict:
        return asdict(self)


#: assumed when nothing was measured (shared-memory MPI on one node, order of magnitude)
DEFAULT_COMM = CommModel(latency=1e-6, bandwidth=5e9)


def ring_shift(comm, sizes: Sequence[int] = (8, 1024, 16384, 131072, 1048576), repetitions: int = 15
               ) -> Dict[int, float]:
    """Ring-shift micro-benchmark: every rank sends `size` bytes right and receives from the
    left (Sendrecv); per size the median over repetitions of the slowest rank's time."""
    from mpi4py import MPI
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    out = {}
    for size in sizes:
        send = np.ones(int(size), dtype=np.uint8)
        recv = np.empty_like(send)
        times = []
        for i in range(repetitions + 1):
            comm.Barrier()
            t0 = MPI.Wtime()
            comm.Sendrecv(send, dest=right, sendtag=TAG_RING, recvbuf=recv, source=left, recvtag=TAG_RING)
            dt = comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX)
            if i:                      # the first is a warm-up (connection set-up)
                times.append(dt)
        out[int(size)] = float(np.median(times))
    return out


def fit_latency_bandwidth(sizes: Sequence[float], times: Sequence[float]) -> CommModel:
    """Least-squares fit of T = L + N/B.  A fit that comes out non-positive (noise on a tiny
    range of sizes) is clamped: L to 1% of the smallest time, 1/B to 1e-15 s/byte."""
    n = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if n.size < 2 or np.ptp(n) == 0:
        raise ValueError("the fit needs at least two different message sizes")
    A = np.stack([np.ones_like(n), n], axis=1)
    (L, inv_b), *_ = np.linalg.lstsq(A, t, rcond=None)
    L = float(L) if L > 0 else max(0.01 * float(t.min()), 1e-12)
    inv_b = float(inv_b) if inv_b > 0 else 1e-15
    return CommModel(latency=L, bandwidth=1.0 / inv_b)


def _default_set():
    """The velocity set of the performance model (the production case)."""
    return velocity_set(DEFAULT_VELOCITY_SET)


def halo_bytes(ly: int, Q: Optional[int] = None, itemsize: int = 8) -> int:
    """One halo message: H padded columns of Q populations (default: the default velocity set)."""
    vs = _default_set()
    Q = vs.Q if Q is None else Q
    return vs.max_hop * (ly + 2 * vs.max_hop) * Q * itemsize


def predict(tau: float, lx: int, ly: int, ranks: int, comm_model: CommModel, overlap: bool = True,
            Q: Optional[int] = None, itemsize: int = 8) -> dict:
    """Per-step time and MLUPS of N ranks (the slowest, widest slab sets the pace).

    T_comp = w_max LY tau;  T_comm = 2 (L + bytes/B), bytes = 3 (LY+6) Q itemsize (the two
    halo messages a rank sends per step, counted one after the other: postal model).
    Overlapped (slab >= 9 columns): T = max(T_bulk, T_comm) + T_edges with T_edges the 6
    edge columns, T_bulk the rest; otherwise T = T_comp + T_comm.  N = 1 has no messages.
    """
    w = -(-lx // ranks)
    t_comp = w * ly * tau
    t_comm = 0.0 if ranks == 1 else 2 * comm_model.time(halo_bytes(ly, Q, itemsize))
    if ranks == 1:
        t = t_comp
    elif overlap and w >= 3 * _default_set().max_hop:
        H = _default_set().max_hop
        t = max((w - 2 * H) * ly * tau, t_comm) + 2 * H * ly * tau
    else:
        t = t_comp + t_comm
    return {"ranks": ranks, "width": w, "t_comp": t_comp, "t_comm": t_comm, "t_step": t,
            "mlups": lx * ly / t / 1e6}


def measure_tau(make_simulation: Callable[[int], Simulation], width: int, ly: int, steps: int = 5) -> float:
    """Seconds per site per step of one process on a slab of `width` columns."""
    from lbgen.perf.timing import time_steps
    return time_steps(make_simulation(width), steps) / (width * ly)


def measure_ranks(comm, make_distributed: Callable, n: int, steps: int = 5) -> Optional[float]:
    """Measured seconds per step with the first n ranks of comm (slowest rank; collective on
    comm; returns the time on rank 0, None elsewhere)."""
    from mpi4py import MPI
    sub = comm.Split(0 if comm.rank < n else MPI.UNDEFINED, comm.rank)
    t = None
    if sub != MPI.COMM_NULL:
        sim = make_distributed(sub)
        sim.step(1)
        sub.Barrier()
        t0 = MPI.Wtime()
        sim.step(steps)
        t = sub.allreduce((MPI.Wtime() - t0) / steps, op=MPI.MAX)
        sub.Free()
    comm.Barrier()
    return comm.bcast(t, root=0)


def rank_table(rows: List[dict], comm_model: CommModel, lx: int, ly: int, measured_source: str = "") -> str:
    lines = [f"communication: L = {comm_model.latency * 1e6:.2f} us, B = {comm_model.bandwidth / 1e9:.3f} GB/s; "
             f"halo message {halo_bytes(ly)} bytes ({_default_set().max_hop} x {ly + 2 * _default_set().max_hop} x "
             f"{_default_set().Q} x 8); lattice {lx} x {ly}",
             f"{'ranks':>5} {'slab':>5} {'tau [s/site]':>13} {'T_comp [ms]':>12} {'T_comm [ms]':>12} "
             f"{'T_step [ms]':>12} {'model MLUPS':>12} {'measured MLUPS':>15}"]
    for r in rows:
        meas = f"{r['measured_mlups']:15.2f}" if r.get("measured_mlups") is not None else f"{'':>15}"
        lines.append(f"{r['ranks']:>5} {r['width']:>5} {r['tau']:13.3e} {r['t_comp'] * 1e3:12.4f} "
                     f"{r['t_comm'] * 1e3:12.4f} {r['t_step'] * 1e3:12.4f} {r['mlups']:12.2f} {meas}")
    if measured_source:
        lines.append(measured_source)
    return "\n".join(lines)
