"""Seed 003's data-movement model for ranks that keep their lattice on a device (Bienz, Olson,
Gropp & Lockhart, *Modeling data movement performance on heterogeneous architectures*).

Every exchange a device rank packs the slabs it sends into contiguous device buffers and
moves them by one of two paths (``DistributedSimulation(halo_path=...)``):

* ``staged`` (003's "3-step", Section III): each sent slab is copied device -> host, MPI
  moves it between host buffers, each received slab is copied host -> device;
* ``device`` (003's "CUDA-aware / GPUDirect", Section III): the packed device buffers go to
  MPI as they are, no copies.

``halo_traffic`` counts what one rank moves per exchange (what ``Program.transfers`` and
``DistributedSimulation.messages`` count), ``DeviceLinks`` holds the links' postal
parameters, ``predict_gpu_step`` is seed 002's T_step with the halo term of each path,
``choose_path`` picks the faster possible path and ``choose_halo_path`` is that choice for a
``DistributedSimulation`` (``halo_path="auto"``).  The formulas
are in ``predict_gpu_step`` and docs/parallel.md ("GPU ranks: the halo path").
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass, fields
from typing import Optional, Sequence, Tuple

import numpy as np

from lbgen.model.catalog import AXES
from lbgen.parallel.decomposition import ghost_sides, slab_widths
from lbgen.parallel.halo import PATHS          # the halo paths of a device rank (a tie goes to the first)
from lbgen.parallel.model import DEFAULT_COMM, Machine, calc_time, comm_time, default_set, node_traffic


def halo_traffic(shape, grid, coords, depth: int = 1, Q: Optional[int] = None, halo: Optional[int] = None,
                 itemsize: int = 8, path: str = "staged", wall_faces=()) -> dict:
    """What the rank at `coords` of `grid` moves in one exchange (every `depth` steps).

    Per split axis d and side, ``ghost_sides`` says whether it sends and receives (nothing
    across a wall face).  A slab of axis d is depth x H planes spanning the other axes'
    extended extents (owned sites plus the depth x H ghost planes of each side that receives),
    Q values of `itemsize` bytes per site; a slab received from a neighbour along d has the
    size of the one sent to it (the neighbour shares the other axes' coordinates).

    "mpi messages", "mpi bytes": the slabs it sends (also per axis: "<axis> messages",
    "<axis> bytes", as ``DistributedSimulation.messages`` counts them); ``staged``: "to host
    copies"/"to host bytes" one device -> host copy per sent slab, "to device copies"/"to
    device bytes" one host -> device copy per received slab; ``device``: no copies.  Also
    "sends": [(axis index, step -1 or +1, bytes)] of its messages (``node_traffic``'s input),
    "owned", "computed" (owned + ghost sites) and "interior" (the owned sites H or more from
    every side that receives ghosts: what the staged path's overlap sweeps while the slabs travel)."""
    check_path(path)
    vs = default_set()
    Q = vs.Q if Q is None else Q
    H = vs.max_hop if halo is None else halo
    grid, coords, shape = tuple(grid), tuple(coords), tuple(shape)
    if not len(shape) == len(grid) == len(coords):
        raise ValueError(f"shape {shape}, grid {grid} and coords {coords} need one entry per axis each")
    width = depth * H
    sides = [ghost_sides(a, c, p, wall_faces) for a, c, p in zip(AXES, coords, grid)]
    size = [slab_widths(n, p)[c] for n, p, c in zip(shape, grid, coords)]
    ext = [w + width * (s[0] + s[1]) for w, s in zip(size, sides)]
    inner = [max(0, w - H * (s[0] + s[1])) for w, s in zip(size, sides)]
    out = {"owned": int(np.prod(size)), "computed": int(np.prod(ext)), "interior": int(np.prod(inner)), "sends": []}
    sent = received = 0
    sent_bytes = received_bytes = 0
    for d, axis in enumerate(AXES[:len(shape)]):
        slab = width * int(np.prod([e for i, e in enumerate(ext) if i != d])) * Q * itemsize
        recv_low, recv_high, send_low, send_high = sides[d]
        n_send, n_recv = send_low + send_high, recv_low + recv_high
        out[f"{axis} messages"], out[f"{axis} bytes"] = n_send, n_send * slab
        out["sends"] += [(d, step, slab) for step, send in ((-1, send_low), (1, send_high)) if send]
        sent, sent_bytes = sent + n_send, sent_bytes + n_send * slab
        received, received_bytes = received + n_recv, received_bytes + n_recv * slab
    staged = path == "staged"
    out.update({"mpi messages": sent, "mpi bytes": sent_bytes,
                "to host copies": sent if staged else 0, "to host bytes": sent_bytes if staged else 0,
                "to device copies": received if staged else 0, "to device bytes": received_bytes if staged else 0})
    return out


def check_path(path: str) -> str:
    if path not in PATHS:
        raise ValueError(f"halo path {path!r}: choose one of {', '.join(PATHS)}")
    return path


@dataclass(frozen=True)
class DeviceLinks:
    """Seed 003's postal terms (T = alpha + bytes / B, its Eq. 1) of a device rank's links.

    Defaults, given values (``lbgen bench`` measures the copies where a device exists):

    * to_host_* / to_device_* (003's cudaMemcpyAsync, Table II): pinned copies measured with
      CuPy on one NVIDIA H200 (13-15 us latency, about 54 GB/s each way);
    * direct_* (003's GPUDirect messages, Table I): an assumption, seed 003's GPU row for
      MVAPICH2-GDR on Lassen as the text we hold reads it (on node alpha = 3.62e-6 s, beta =
      3.71e-11 s/byte; off node alpha = 1.07e-5 s, beta = 1.42e-10 s/byte); no GPU-aware MPI
      was at hand to measure them;
    * memory_bandwidth: the device's own copy bandwidth (read + write), measured with CuPy on
      the H200 (4036 GB/s; ``lbgen bench`` reports it as the device copy limit)."""

    to_host_latency: float = 14e-6          # s
    to_host_bandwidth: float = 54e9         # bytes / s
    to_device_latency: float = 14e-6
    to_device_bandwidth: float = 54e9
    direct_latency: float = 3.62e-6
    direct_bandwidth: float = 1 / 3.71e-11
    direct_latency_inter: float = 1.07e-5
    direct_bandwidth_inter: float = 1 / 1.42e-10
    memory_bandwidth: float = 4036e9

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            latency = f.name.endswith("latency")
            ok = isinstance(v, (int, float)) and math.isfinite(v) and (v >= 0 if latency else v > 0)
            if not ok:
                raise ValueError(f"DeviceLinks {f.name}={v!r}: give a finite number "
                                 f"{'>= 0 [s]' if latency else '> 0 [bytes/s]'}")

    def to_json(self) -> dict:
        return asdict(self)


def predict_gpu_step(shape, grid, machine: Machine, links: DeviceLinks, path: str, depth: int = 1,
                     Q: Optional[int] = None, itemsize: int = 8, halo: Optional[int] = None, wall_faces=(),
                     ranks_per_device: int = 1, overlap: bool = False) -> dict:
    """Seed 002's step time (Section 3.3) of device ranks, with seed 003's halo term per path,
    for the busiest node (p = machine.ranks_per_node ranks to a node in rank order, as
    ``predict_blocks`` places them; each rank's counts from ``halo_traffic``):

        T_step  = T_halo / k + T_calc
        T_calc  = 3 Q itemsize N_computed r / M_dev                 (r ranks share one device)
        staged: T_halo = T_copy + T_mpi(L_a, B_a, L_e, B_e)         (003 Section III, "3-step")
                T_copy = r max over the node's ranks of
                         (n_dh alpha_dh + s_dh / B_dh + n_hd alpha_hd + s_hd / B_hd)
        device: T_halo = T_mpi(alpha_g, B_g, alpha_ge, B_ge)          (003 Section III, GPUDirect)
        T_mpi(L, B, L', B') = (axes with on-node messages) L + on-node bytes of the node / (B / 2)
                            + (axes with off-node messages) L' + off-node bytes / (B' / 2)

    n_dh, s_dh: the device -> host copies and bytes of one exchange (one per sent slab),
    n_hd, s_hd: host -> device (one per received slab); each copy is one postal message of
    003's Eq. 1 with Table II's terms; the MPI messages are 002's term with the host links of
    `machine` (staged) or the GPUDirect links (device).

    `overlap` (``DistributedSimulation``'s staged path: single steps, X and/or Y split): the
    interior sweep runs while the slabs are copied and traded, then the edges; only owned sites
    are swept, so, with N_int the interior sites (``halo_traffic``) and N_edge = N_owned - N_int,

        staged, overlapped: T_step = max(T_halo, T_int) + T_edge,
                            T_int = 3 Q itemsize N_int r / M_dev,  T_edge = 3 Q itemsize N_edge r / M_dev

    (T_calc reported as T_int + T_edge).  Not modelled: the pack and unpack kernels (the same
    on both paths), and 003's split of the inter-node part over the node's CPU cores (its
    Section IV; lbgen runs one process per device rank).  S = prod(shape) / T_step."""
    check_path(path)
    if ranks_per_device < 1:
        raise ValueError(f"ranks_per_device={ranks_per_device}: give at least 1")
    vs = default_set()
    Q = vs.Q if Q is None else Q
    grid = tuple(grid)
    counts = {}
    split = [d for d, p in enumerate(grid) if p > 1]
    overlapped = bool(overlap and path == "staged" and depth == 1 and split and max(split) <= 1)

    def sends(coords):
        counts[coords] = halo_traffic(shape, grid, coords, depth, Q, halo, itemsize, path, wall_faces)
        return counts[coords]["sends"]
    worst = None
    for node in node_traffic(grid, machine.ranks_per_node, sends):
        ranks = [counts[c] for c in node["coords"]]
        if path == "staged":
            t_mpi = comm_time(node, machine.latency, machine.bandwidth, machine.latency_inter,
                              machine.bandwidth_inter)
            t_copy = ranks_per_device * max(
                r["to host copies"] * links.to_host_latency + r["to host bytes"] / links.to_host_bandwidth
                + r["to device copies"] * links.to_device_latency + r["to device bytes"] / links.to_device_bandwidth
                for r in ranks)
        else:
            t_mpi = comm_time(node, links.direct_latency, links.direct_bandwidth, links.direct_latency_inter,
                              links.direct_bandwidth_inter)
            t_copy = 0.0
        row = {"t_copy": t_copy / depth, "t_mpi": t_mpi / depth}
        t_halo = row["t_copy"] + row["t_mpi"]
        if overlapped:
            interior = max(r["interior"] for r in ranks)
            edges = max(r["owned"] - r["interior"] for r in ranks)
            t_int, t_edge = (calc_time(Q, itemsize, n * ranks_per_device, links.memory_bandwidth)
                             for n in (interior, edges))
            row.update(t_calc=t_int + t_edge, t_step=max(t_halo, t_int) + t_edge)
        else:
            computed = max(r["computed"] for r in ranks)
            row["t_calc"] = calc_time(Q, itemsize, computed * ranks_per_device, links.memory_bandwidth)
            row["t_step"] = t_halo + row["t_calc"]
        if worst is None or row["t_step"] > worst["t_step"]:
            worst = row
    first = counts[(0,) * len(grid)]
    t_step = worst["t_step"]
    out = {"path": path, "grid": "x".join(map(str, grid)), "ranks": int(np.prod(grid)), "depth": depth,
           "overlap": overlapped, "t_halo": worst["t_copy"] + worst["t_mpi"], **worst,
           "mlups": int(np.prod(shape)) / t_step / 1e6}
    for key in ("mpi messages", "mpi bytes", "to host copies", "to host bytes", "to device copies",
                "to device bytes"):
        out[key.replace(" ", "_") + "_per_step"] = first[key] / depth       # rank 0's, as the run header's
    return out


def choose_path(shape, grid, machine: Machine, links: DeviceLinks, depth: int = 1, Q: Optional[int] = None,
                itemsize: int = 8, halo: Optional[int] = None, wall_faces=(), ranks_per_device: int = 1,
                device_possible: bool = False, device_why_not: str = "",
                paths: Sequence[str] = PATHS, overlap: bool = False) -> Tuple[str, str, dict]:
    """(path, why, {path: prediction}): the path of `paths` with the smaller predicted step time
    among the possible ones (``device`` only with `device_possible`: the runtime and the MPI
    library take device buffers; `device_why_not` says why not, for the text).  A tie goes to
    the first of `paths`.  `why` is one line for the run header; `overlap`: the staged path
    sweeps the interior while its slabs travel (``predict_gpu_step``)."""
    predicted = {p: predict_gpu_step(shape, grid, machine, links, p, depth, Q, itemsize, halo, wall_faces,
                                     ranks_per_device, overlap) for p in paths}
    possible = [p for p in paths if p != "device" or device_possible]
    if not possible:
        raise ValueError(f"no halo path is possible among {', '.join(paths)}: {device_why_not or 'device refused'}")
    best = min(possible, key=lambda p: predicted[p]["t_step"])
    times = ", ".join(f"{p} {predicted[p]['t_step'] * 1e3:.4g} ms" for p in paths)
    why = f"halo path {best}: the model's step time ({times})"
    if "device" in paths and not device_possible:
        why += f"; device not possible: {device_why_not or 'the runtime or MPI takes no device buffers'}"
    return best, why, predicted


def host_memory_links(links: DeviceLinks, host) -> DeviceLinks:
    """`links` for a device whose memory is host memory (the CUDA host shim, OpenCL on a CPU
    device): the device path's messages are host MPI messages, so its GPU-direct terms are the
    host MPI's (`host`: a CommModel, on and off node alike)."""
    return dataclasses.replace(links, direct_latency=host.latency, direct_bandwidth=host.bandwidth,
                               direct_latency_inter=host.latency, direct_bandwidth_inter=host.bandwidth)


def _simulation_case(sim, ranks_per_device: Optional[int] = None) -> dict:
    """``choose_path``'s arguments for a ``DistributedSimulation`` (local, measuring nothing: every
    rank reaches the same values alone): its lattice, grid, time block, velocity set, precision
    and walls; ``DeviceLinks()``'s defaults and the host MPI of ``DEFAULT_COMM``, all ranks on
    one node; where the device memory is host memory (``Program.shares_host_memory``: the CUDA
    host shim, OpenCL on a CPU device) the device path's messages are host MPI messages
    (``host_memory_links``); the staged overlap where ``DistributedSimulation.overlap_boxes``
    takes it; `ranks_per_device` default: the ranks over the CUDA devices the CUDA runtime
    (CuPy or pycuda) sees (one node), else 1."""
    links = DeviceLinks()
    programs = [r.program for r in sim.sim.regions]
    if programs and all(getattr(p, "shares_host_memory", False) for p in programs):
        links = host_memory_links(links, DEFAULT_COMM)
    grid = tuple(sim.dims)
    P = int(np.prod(grid))
    if ranks_per_device is None:
        ranks_per_device = 1
        rt = getattr(programs[0], "rt", None) if len(programs) == 1 else None    # a CUDA program's runtime
        if rt is not None:
            ranks_per_device = -(-P // max(1, int(rt.device_count())))
    overlap = sim.overlap_boxes() is not None
    return dict(shape=tuple(sim.shape), grid=grid,
                machine=Machine(DEFAULT_COMM.latency, DEFAULT_COMM.bandwidth, links.memory_bandwidth, P),
                links=links, depth=sim.time_block, Q=sim.sim.vs.Q, itemsize=np.dtype(sim.sim.dtype).itemsize,
                halo=sim.sim.vs.max_hop, wall_faces=tuple(getattr(sim, "closed_faces", sim.wall_faces)), ranks_per_device=ranks_per_device,
                overlap=overlap)


def choose_halo_path(sim, possible: Sequence[str] = PATHS, problem: Optional[str] = None) -> Tuple[str, str]:
    """(path, why) for ``DistributedSimulation(halo_path="auto")``: ``choose_path`` on the
    simulation's case (``_simulation_case``) among the paths `possible` (`problem`: why the
    device path is not)."""
    path, why, _ = choose_path(**_simulation_case(sim), device_possible="device" in possible,
                               device_why_not=problem or "")
    return path, why


def predicted_for(sim, path: Optional[str] = None, ranks_per_device: Optional[int] = None) -> dict:
    """``predict_gpu_step`` for a ``DistributedSimulation`` on `path` (default: the one it took;
    'staged-serial' reads as 'staged': the order is the simulation's ``overlap``), with the
    inputs of its auto choice (``_simulation_case``), for a benchmark to print beside its times."""
    case = _simulation_case(sim, ranks_per_device)
    path = (path or sim.halo_path).split("-")[0]
    return predict_gpu_step(case.pop("shape"), case.pop("grid"), case.pop("machine"), case.pop("links"), path, **case)
