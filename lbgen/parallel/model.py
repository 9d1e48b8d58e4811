"""The multi-rank communication models (seeds 002/003/004): ``ring_shift`` times each rank
sending N bytes to its right neighbour while receiving from its left one;
``fit_latency_bandwidth`` fits T = L + N/B by least squares; ``predict`` adds 2 halo
messages per step to the per-rank slab compute time (``lbgen model --ranks N``);
``predict_blocks`` is seed 002's T_step for a Cartesian grid of any D with k H deep halos
every k steps, ``rank_exchange`` what one rank sends per exchange (what ``DistributedSimulation``
counts), ``scaling_table`` / ``plot_scaling`` the weak and strong predictions
(``lbgen model --ranks-grid``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from lbgen.model.catalog import DEFAULT_VELOCITY_SET
from lbgen.model.velocity_set import velocity_set
from lbgen.parallel.mpi import TAG_RING
from lbgen.system.limits import MAX_MODEL_RANKS
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


def comm_parameters(comm, ranks: int, latency: Optional[float] = None, bandwidth: Optional[float] = None
                    ) -> Tuple[CommModel, str]:
    """The message latency and bandwidth of a model and where they came from: those given;
    else, under mpiexec with ranks > 1, a ring-shift fit over comm (collective); else
    DEFAULT_COMM ("assumed")."""
    if comm is not None and latency is None and bandwidth is None and ranks > 1:
        times = ring_shift(comm)
        fit, source = fit_latency_bandwidth(list(times), list(times.values())), f"ring shift over {comm.size} ranks"
    else:
        fit = DEFAULT_COMM
        source = "given" if latency is not None or bandwidth is not None else "assumed"
    return CommModel(fit.latency if latency is None else latency, fit.bandwidth if bandwidth is None else bandwidth), \
        source


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


def default_set():
    """The velocity set of the performance model (the production case)."""
    return velocity_set(DEFAULT_VELOCITY_SET)


def halo_bytes(ly: int, Q: Optional[int] = None, itemsize: int = 8) -> int:
    """One halo message: H padded columns of Q populations (default: the default velocity set)."""
    vs = default_set()
    Q = vs.Q if Q is None else Q
    return vs.max_hop * (ly + 2 * vs.max_hop) * Q * itemsize


def predict(tau: float, lx: int, ly: int, ranks: int, comm_model: CommModel,
            Q: Optional[int] = None, itemsize: int = 8) -> dict:
    """Per-step time and MLUPS of N ranks (the slowest, widest slab sets the pace).

    T_comp = w_max LY tau;  T_comm = 2 (L + bytes/B), bytes = 3 (LY+6) Q itemsize (the two
    halo messages a rank sends per step, counted one after the other: postal model);
    T = T_comp + T_comm (the exchange precedes the sweep: ``lbgen.parallel.simulation``).
    N = 1 has no messages.
    """
    w = -(-lx // ranks)
    t_comp = w * ly * tau
    t_comm = 0.0 if ranks == 1 else 2 * comm_model.time(halo_bytes(ly, Q, itemsize))
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
             f"halo message {halo_bytes(ly)} bytes ({default_set().max_hop} x {ly + 2 * default_set().max_hop} x "
             f"{default_set().Q} x 8); lattice {lx} x {ly}",
             f"{'ranks':>5} {'slab':>5} {'tau [s/site]':>13} {'T_comp [ms]':>12} {'T_comm [ms]':>12} "
             f"{'T_step [ms]':>12} {'model MLUPS':>12} {'measured MLUPS':>15}"]
    for r in rows:
        meas = f"{r['measured_mlups']:15.2f}" if r.get("measured_mlups") is not None else f"{'':>15}"
        lines.append(f"{r['ranks']:>5} {r['width']:>5} {r['tau']:13.3e} {r['t_comp'] * 1e3:12.4f} "
                     f"{r['t_comm'] * 1e3:12.4f} {r['t_step'] * 1e3:12.4f} {r['mlups']:12.2f} {meas}")
    if measured_source:
        lines.append(measured_source)
    return "\n".join(lines)


# --- the Cartesian step model (seed 002, Section 3.3; multi-halo exchange of seed 004) --------------
@dataclass(frozen=True)
class Machine:
    """What the step model needs of a machine (measured or given).

    latency, bandwidth: intra-node L_a [s] and B_a [bytes/s] (a ring-shift fit);
    memory_bandwidth: M [bytes/s] of one node (copy with the kernels' Q + Q streams);
    ranks_per_node: p; latency_inter, bandwidth_inter: L_e, B_e between nodes (default: the
    intra-node ones)."""

    latency: float
    bandwidth: float
    memory_bandwidth: float
    ranks_per_node: int = 1
    latency_inter: Optional[float] = None
    bandwidth_inter: Optional[float] = None

    def to_json(self) -> dict:
        return asdict(self)


def dims_create(size: int, n: int = 2) -> tuple:
    """The balanced grid of MPI_Dims_create in n = 2 or 3 dimensions: non-increasing counts,
    as close to equal as the factors allow."""
    if n == 2:
        py = max(d for d in range(1, int(size ** 0.5) + 1) if size % d == 0)
        return size // py, py
    best = None
    for c in range(1, size + 1):
        if size % c:
            continue
        b_a = dims_create(size // c, 2)
        g = tuple(sorted(b_a + (c,), reverse=True))
        if best is None or (g[0] - g[-1], tuple(-x for x in g)) < (best[0] - best[-1], tuple(-x for x in best)):
            best = g
    return best


def rank_coords(rank: int, grid) -> tuple:
    """Row-major coordinates of a rank, as MPI_Cart_create(reorder=False) numbers them."""
    return rank // grid[1], rank % grid[1]


def rank_exchange(shape, grid, coords, depth: int = 1, Q: Optional[int] = None, halo: Optional[int] = None,
                  itemsize: int = 8) -> dict:
    """What one rank of ``lbgen.parallel.simulation.DistributedSimulation`` sends in one exchange
    (every `depth` steps), any D: per split axis 2 slabs of D = depth x H planes spanning the
    other axes' extended extents (k H ghosts per split side), Q values per site; the block the
    rank computes, owned + ghosts."""
    from lbgen.parallel.decomposition import slab_widths
    vs = default_set()
    Q = vs.Q if Q is None else Q
    H = vs.max_hop if halo is None else halo
    size = [slab_widths(n, p)[c] for n, p, c in zip(shape, grid, coords)]
    ext = [w + (2 * depth * H if p > 1 else 0) for w, p in zip(size, grid)]
    out = {"owned": int(np.prod(size)), "computed": int(np.prod(ext))}
    for d, axis in enumerate("xyz"[:len(shape)]):
        others = int(np.prod([e for i, e in enumerate(ext) if i != d]))
        split = grid[d] > 1
        out[f"{axis} messages"] = 2 if split else 0
        out[f"{axis} bytes"] = 2 * depth * H * others * Q * itemsize if split else 0
    return out


def node_traffic(grid, ranks_per_node: int, sends: Callable) -> List[dict]:
    """Per node, seed 002's placement: p = ranks_per_node ranks to a node in rank order
    (row-major coordinates, MPI_Cart_create(reorder=False)).  `sends(coords)` lists one rank's
    messages of an exchange as (axis index, step -1 or +1, bytes); a node's row holds its
    ranks' "coords", their number ("ranks"), the bytes sent to ranks on the node ("intra") and
    off it ("inter"), and the axes with such messages ("intra axes", "inter axes")."""
    grid = tuple(grid)
    P = int(np.prod(grid))
    p = max(1, min(ranks_per_node, P))
    out = []
    for node in range(-(-P // p)):
        row = {"coords": [], "ranks": 0, "intra": 0, "inter": 0, "intra axes": set(), "inter axes": set()}
        for rank in range(node * p, min(P, (node + 1) * p)):
            coords = tuple(int(c) for c in np.unravel_index(rank, grid))
            row["coords"].append(coords)
            row["ranks"] += 1
            for d, step, nbytes in sends(coords):
                c = list(coords)
                c[d] = (c[d] + step) % grid[d]
                where = "intra" if int(np.ravel_multi_index(c, grid)) // p == node else "inter"
                row[where] += nbytes
                row[f"{where} axes"].add(d)
        out.append(row)
    return out


def comm_time(node: dict, latency: float, bandwidth: float, latency_inter: Optional[float] = None,
              bandwidth_inter: Optional[float] = None) -> float:
    """Seed 002's communication time of one exchange of a node (``node_traffic``'s row): a
    latency per axis with messages on the node (L_a) and off it (L_e), the node's intra-node
    bytes over B_a / 2 and its inter-node bytes over B_e / 2 (the inter ones default to the
    intra ones)."""
    L_e = latency if latency_inter is None else latency_inter
    B_e = bandwidth if bandwidth_inter is None else bandwidth_inter
    return (len(node["intra axes"]) * latency + node["intra"] / (bandwidth / 2)
            + len(node["inter axes"]) * L_e + node["inter"] / (B_e / 2))


def calc_time(Q: int, itemsize: int, sites: int, memory_bandwidth: float) -> float:
    """Seed 002's T_calc of `sites` lattice updates sharing one memory bandwidth M:
    3 Q itemsize sites / M."""
    return 3 * Q * itemsize * sites / memory_bandwidth


def predict_blocks(shape, grid, machine: Machine, depth: int, plan: Callable, Q: int, itemsize: int = 8,
                   sweep: bool = False) -> dict:
    """Seed 002's step time for a Cartesian grid of ranks (any dimension), p = ranks_per_node
    to a node (ranks placed on nodes in rank order, row-major coordinates, as 002 assumes):

        T_step = T_comm / k + T_calc
        T_comm = sum over the split axes of (L_a, and L_e where the node sends off-node)
                 + intra bytes of the node / (B_a / 2) + inter bytes of the node / (B_e / 2)
        T_calc = 3 Q itemsize N_computed p / M      (/ k with `sweep`)

    for the busiest node (its ranks' messages of one exchange, every k = depth steps; `plan`
    (coords) gives one rank's: "<axis> bytes", "<axis> messages", "computed", "owned");
    N_computed includes the ghost sites of a time block (the extra halo work of 004) and M is
    shared by the node's p ranks (002 writes N^3 / M with M per process).  `sweep`: the k
    steps run as one sweep through cache (fused_tb), whose memory traffic is one read and one
    write per k steps, so T_calc divides by k (004's temporal blocking; no in-cache limit is
    modelled, so large k are overestimated).  S = prod(shape) / T_step."""
    grid = tuple(grid)
    P = int(np.prod(grid))
    p = max(1, min(machine.ranks_per_node, P))
    names = "xyz"[:len(grid)]
    plans = {}

    def sends(coords):
        one = plans[coords] = plan(coords)
        return [(d, step, one[f"{axis} bytes"] // 2) for d, axis in enumerate(names) if grid[d] > 1
                for step in (-1, 1)]
    worst = None
    for node in node_traffic(grid, machine.ranks_per_node, sends):
        computed = max(plans[c]["computed"] for c in node["coords"])
        t_comm = comm_time(node, machine.latency, machine.bandwidth, machine.latency_inter, machine.bandwidth_inter)
        t_calc = calc_time(Q, itemsize, computed * p, machine.memory_bandwidth) / (depth if sweep else 1)
        row = {"t_comm": t_comm / depth, "t_calc": t_calc, "intra_bytes": node["intra"], "inter_bytes": node["inter"]}
        if worst is None or row["t_comm"] + row["t_calc"] > worst["t_comm"] + worst["t_calc"]:
            worst = row
    plan0 = plan((0,) * len(grid))
    t_step = worst["t_comm"] + worst["t_calc"]
    return {"grid": "x".join(map(str, grid)), "ranks": P, "depth": depth, "t_comm": worst["t_comm"],
            "t_calc": worst["t_calc"], "t_step": t_step, "mlups": int(np.prod(shape)) / t_step / 1e6,
            "messages_per_step": sum(plan0[f"{a} messages"] for a in names) / depth,
            "bytes_per_step": sum(plan0[f"{a} bytes"] for a in names) / depth,
            "extra_work": plan0["computed"] / plan0["owned"] - 1.0}


def check_model_ranks(ranks: int, what: str) -> int:
    """``ranks`` (of the option named ``what``) up to MAX_MODEL_RANKS, else ValueError naming both."""
    if ranks > MAX_MODEL_RANKS:
        raise ValueError(f"{what}: {ranks} ranks is beyond the {MAX_MODEL_RANKS} the model evaluates (its cost grows "
                         f"with the ranks); give at most {MAX_MODEL_RANKS}")
    return ranks


def scaling_table(machine: Machine, lx: int, ly: int, depth: int = 1, max_ranks: int = 4096,
                  Q: Optional[int] = None, itemsize: int = 8, lz: Optional[int] = None,
                  halo: Optional[int] = None, sweep: bool = False) -> Dict[str, List[dict]]:
    """Weak scaling (an lx x ly [x lz] block per rank) and strong scaling (that lattice split)
    for P = 1, 2, 4, ... max_ranks on the grid dims_create(P); strong stops where a
    sub-domain gets thinner than depth x H.  With lz: a 3D lattice (Q and halo of the 3D set)."""
    check_model_ranks(max_ranks, "max_ranks")
    H = (default_set().max_hop if halo is None else halo)
    shape = (lx, ly) if lz is None else (lx, ly, lz)
    out = {"weak": [], "strong": []}

    def predict(sizes, g):
        return predict_blocks(sizes, g, machine, depth, lambda c: rank_exchange(sizes, g, c, depth, Q, H, itemsize),
                              default_set().Q if Q is None else Q, itemsize, sweep=sweep)
    P = 1
    while P <= max_ranks:
        g = dims_create(P, len(shape))
        out["weak"].append(predict(tuple(n * d for n, d in zip(shape, g)), g))
        if all(n // d >= depth * H for n, d in zip(shape, g) if d > 1):
            out["strong"].append(predict(shape, g))
        P *= 2
    return out


def plot_scaling(table: Dict[str, List[dict]], path, title: str = "") -> None:
    """PNG: predicted MLUPS against ranks, one line per entry of `table` (weak and strong, or a
    GPU model's halo paths), with the ideal lines."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (name, rows), style in zip(table.items(), ("o-", "s-", "^-", "v-")):
        if not rows:
            continue
        P = [r["ranks"] for r in rows]
        label = f"{name} scaling (model)" if name in ("weak", "strong") else f"{name} (model)"
        ax.plot(P, [r["mlups"] for r in rows], style, label=label)
        ax.plot(P, [rows[0]["mlups"] * n / P[0] for n in P], ":", color="grey")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("MPI ranks")
    ax.set_ylabel("MLUPS")
    ax.set_title(title or "predicted scaling (dotted: ideal)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
