"""The heterogeneous performance model of the paper (Eq. 4-8) and its micro-benchmarks.

    T_exe(M) = max(T_acc, T_host + T_mpi) + T_swap
    T_acc    = (LX - 2M) LY tau_d          (device: bulk columns)
    T_host   = 2M LY tau_h                 (host: M columns at each side)
    T_mpi    = tau_c                       (per-step communication, a constant)

The best split M* balances the two branches, T_acc(M*) = T_host(M*) + T_mpi, i.e.

    M* = (LX LY tau_d - tau_c) / (2 LY (tau_d + tau_h)),

rounded to a valid width (M = 0, or 2M >= 3 and LX - 2M >= 3 or 0).  tau_d, tau_h and
the swap cost come from short start-up runs of the real kernels on the real lattice
height; tau_c is what the run spends per step outside the kernels (MPI halo exchange when
there are several ranks, 0 otherwise).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from lbgen.model.catalog import DEFAULT_VELOCITY_SET
from lbgen.model.velocity_set import velocity_set
from lbgen.perf.timing import time_steps


@dataclass(frozen=True)
class ModelParameters:
    tau_d: float        # device seconds per site per step
    tau_h: float        # host seconds per site per step
    tau_c: float = 0.0  # per-step communication (MPI) seconds
    t_swap: float = 0.0  # per-step host <-> device halo swap seconds

    def to_json(self) -> dict:
        return asdict(self)


def valid_splits(lx: int, halo: Optional[int] = None) -> List[int]:
    """Every M with a valid geometry: 0, or 2M >= H with a device part of 0 or >= H columns.

    H is the halo width (default: that of the default velocity set, the widest)."""
    H = velocity_set(DEFAULT_VELOCITY_SET).max_hop if halo is None else halo
    out = [0]
    for M in range(1, lx // 2 + 1):
        bulk = lx - 2 * M
        if 2 * M >= H and (bulk == 0 or bulk >= H):
            out.append(M)
    return out


def step_time(p: ModelParameters, lx: int, ly: int, M: int) -> float:
    t_acc = (lx - 2 * M) * ly * p.tau_d
    t_host = 2 * M * ly * p.tau_h
    swap = p.t_swap if 0 < M < lx / 2 else 0.0
    return max(t_acc, t_host + (p.tau_c if M else 0.0)) + swap


def predicted_mlups(p: ModelParameters, lx: int, ly: int, M: int) -> float:
    return lx * ly / step_time(p, lx, ly, M) / 1e6


def balance_split(p: ModelParameters, lx: int, ly: int) -> float:
    """M* solving T_acc(M*) = T_host(M*) + T_mpi (paper Eq. 8), as a real number."""
    return (lx * ly * p.tau_d - p.tau_c) / (2 * ly * (p.tau_d + p.tau_h))


def optimal_split(p: ModelParameters, lx: int, ly: int) -> int:
    """The valid M with the smallest predicted step time.

    Without swap cost that is the valid width next to the balance point M*; a swap cost
    can make device-only (M = 0) or host-only (M = LX/2) better, and the model says so.
    """
    m_star = balance_split(p, lx, ly)
    return min(valid_splits(lx), key=lambda M: (round(step_time(p, lx, ly, M), 15), abs(M - m_star)))


def _time_swap(sim, repeats: int = 5) -> float:
    """Median seconds of one halo exchange between the regions (the host <-> device swap)."""
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        sim.exchange_halos()
        sim.synchronize()
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples))


def measure(make_simulation, lx: int, ly: int, steps: int = 5, width: Optional[int] = None) -> ModelParameters:
    """Start-up micro-benchmarks: tau_d, tau_h on a test band, the swap cost of one split.

    `make_simulation(lx, host_columns, device)` builds a Simulation of width lx: device only
    (host_columns = 0, device=True), host only (device=False) or split.  The swap is timed
    directly (a halo exchange of a split run minus that of one region), so it does not mix
    with the kernel times.
    """
    H = velocity_set(DEFAULT_VELOCITY_SET).max_hop
    width = width or max(2 * H + 2, min(lx, 64))
    dev = make_simulation(width, 0, True)
    host = make_simulation(width, 0, False)
    tau_d = time_steps(dev, steps) / (width * ly)
    tau_h = time_steps(host, steps) / (width * ly)
    split = make_simulation(width, max(2, H), True)
    t_swap = max(0.0, _time_swap(split) - _time_swap(host))
    return ModelParameters(tau_d=tau_d, tau_h=tau_h, tau_c=0.0, t_swap=t_swap)


def measure_curve(make_simulation, lx: int, ly: int, splits: Sequence[int], steps: int = 5,
                  progress: Optional[Callable[[int], None]] = None) -> Dict[int, float]:
    """Measured MLUPS of full-size runs at the given M (``progress(M)`` after each)."""
    out = {}
    for M in splits:
        sim = make_simulation(lx, M, True)
        out[M] = lx * ly / time_steps(sim, steps) / 1e6
        if progress:
            progress(M)
    return out


def plot(p: ModelParameters, lx: int, ly: int, path, measured: Optional[Dict[int, float]] = None,
         title: str = "") -> None:
    """Predicted MLUPS against 2M/LX (the paper's Fig. 8), measured points beside it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    Ms = valid_splits(lx)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([2 * M / lx for M in Ms], [predicted_mlups(p, lx, ly, M) for M in Ms], "-", label="model")
    m_best = optimal_split(p, lx, ly)
    m_star = balance_split(p, lx, ly)
    ax.axvline(2 * m_star / lx, color="gray", ls=":", label=f"balance M* = {m_star:.1f}")
    ax.axvline(2 * m_best / lx, color="tab:green", ls="--", label=f"best M = {m_best}")
    if measured:
        ax.plot([2 * M / lx for M in measured], list(measured.values()), "o", label="measured")
    ax.set_xlabel("host fraction 2M / LX")
    ax.set_ylabel("MLUPS")
    ax.set_title(title or f"host + device, {lx} x {ly}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(p: ModelParameters, lx: int, ly: int, measured: Optional[Dict[int, float]] = None, rows: int = 12) -> str:
    Ms = valid_splits(lx)
    step = max(1, len(Ms) // rows)
    chosen = sorted(set(Ms[::step]) | {optimal_split(p, lx, ly)} | set(measured or {}))
    lines = [f"tau_d = {p.tau_d:.3e} s/site  tau_h = {p.tau_h:.3e} s/site  tau_c = {p.tau_c:.3e} s  "
             f"swap = {p.t_swap:.3e} s;  balance M* = {balance_split(p, lx, ly):.2f}",
             f"{'M':>6} {'2M/LX':>7} {'model MLUPS':>12} {'measured':>10}"]
    for M in chosen:
        meas = f"{measured[M]:10.2f}" if measured and M in measured else f"{'':>10}"
        star = "  <- best" if M == optimal_split(p, lx, ly) else ""
        lines.append(f"{M:>6} {2 * M / lx:7.3f} {predicted_mlups(p, lx, ly, M):12.2f} {meas}{star}")
    return "\n".join(lines)
