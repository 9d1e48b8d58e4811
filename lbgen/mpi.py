"""Several MPI ranks: X slabs of one lattice, halos exchanged with the neighbouring ranks.

``mpiexec -n N lbgen run ...`` runs one process per rank (paper, "Multi-node": one MPI
process per accelerator, slabs along X, halos of H columns every step, H the velocity
set's largest hop).  Nothing here imports mpi4py at module level: a normal run never
needs it.

Decomposition
    rank r of N owns the global columns [x_r, x_r + w_r) with w_r = LX // N, plus one for
    the first LX % N ranks; every w_r must be >= H (the halo width), else the run is
    refused.  The ranks form a periodic ring in X.

Inside a rank
    the slab is split into regions [left edge | bulk | right edge]: 3-column edges and
    the bulk on the rank's backend (when w_r >= 9; a narrower slab is one region), or with
    ``device_backend`` (``--hetero``) M host columns on each side of a device bulk.  A
    step fills every region's Y halos, posts the non-blocking exchange (Isend/Irecv) of
    the slab's outer 3 padded columns with both neighbours (layout-independent
    ``read_columns_plain`` form, so ranks may use different layouts), copies the halos
    between the local regions, advances the bulk *while the messages fly*, waits, writes
    the received halos and advances the edges.  The result is bit-identical to one process
    in strict mode (every site sees the same inputs in the same order).

Collective state (every rank must call these together)
    ``state() / populations() / fields()`` gather to rank 0: rank 0 gets the global
    arrays, the other ranks get ``None``.  ``set_fields / set_populations / restore``
    scatter from rank 0 (the arguments of the other ranks are ignored, they may pass
    None).  ``check_finite()`` raises on every rank together, with the message (global
    first bad site) composed by rank 0.

Failures
    errors every rank sees together are marked ``collective`` (``is_collective(e)``); the
    CLI prints them once (rank 0) and all ranks exit with status 2.  An error on one rank
    only (a crash, a failed write) makes that rank print it and ``comm.Abort`` the job, so
    nothing hangs; ``install_excepthook`` does the same for uncaught exceptions.

Communication model (seeds 002/003)
    ``ring_shift`` times each rank sending N bytes to its right neighbour while receiving
    from its left one; ``fit_latency_bandwidth`` fits T = L + N/B by least squares, and
    ``predict`` adds 2 halo messages per step to the per-rank slab compute time.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from .model.velocity_set import DEFAULT_VELOCITY_SET, velocity_set
from .runner import Simulation, SimulationError

#: environment variables set by MPI launchers (MPICH/hydra, Intel MPI, Open MPI, PMIx)
MPI_ENV = ("PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")
_SIZE_ENV = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")

TAG_RIGHTWARD, TAG_LEFTWARD, TAG_RING = 11, 12, 13

_WORLD = None   # the communicator of an MPI-launched CLI run (set by world())


# --- launch detection ---------------------------------------------------------------------
def launched_under_mpi() -> bool:
    return any(os.environ.get(k) not in (None, "") for k in MPI_ENV)


def world():
    """MPI.COMM_WORLD when this process was started by an MPI launcher with > 1 ranks, else None.

    mpi4py is imported only when a launcher's environment variables are present.
    """
    global _WORLD
    if _WORLD is not None:
        return _WORLD
    if not launched_under_mpi():
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        sizes = [os.environ.get(k) for k in _SIZE_ENV if os.environ.get(k)]
        if sizes and sizes[0].isdigit() and int(sizes[0]) > 1:
            raise SimulationError(f"started by an MPI launcher with {sizes[0]} processes, but mpi4py is not "
                                  f"installed: pip install 'lbgen[mpi]' (mpi4py + mpich)") from None
        return None
    comm = MPI.COMM_WORLD
    if comm.size <= 1:
        return None
    _WORLD = comm
    return comm


def active():
    """The communicator of the current MPI CLI run, or None."""
    return _WORLD


# --- collective errors -------------------------------------------------------------------
def collective(exc: BaseException) -> BaseException:
    """Mark an exception that every rank raises together (no abort needed)."""
    exc.collective = True
    return exc


def is_collective(exc: BaseException) -> bool:
    return bool(getattr(exc, "collective", False))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SimulationError) or type(exc).__name__ in ("SpecError", "BackendUnavailable", "ValueError",
                                                                    "CheckpointError", "UserError", "ClickException"):
        return str(getattr(exc, "message", None) or exc)
    return f"{type(exc).__name__}: {exc}"


def agree(comm, error: Optional[BaseException]) -> None:
    """Every rank passes its local error (or None); if any rank failed, all raise together.

    Only for code between collectives: a rank that fails inside a collective would hang
    the others, so those failures abort instead.
    """
    messages = comm.allgather(None if error is None else _describe(error))
    failed = [(r, m) for r, m in enumerate(messages) if m is not None]
    if not failed:
        return
    if len({m for _, m in failed}) == 1 and len(failed) == comm.size:
        text = failed[0][1]
    else:
        text = "; ".join(f"rank {r} of {comm.size}: {m}" for r, m in failed)
    err = collective(SimulationError(text))
    if error is not None:
        raise err from error
    raise err


def root_call(comm, fn: Callable, share: bool = False):
    """Run fn on rank 0 only; its failure is raised on every rank.  Returns fn's result on
    rank 0 (and on every rank with share=True, by broadcast), None elsewhere."""
    if comm is None:
        return fn()
    result, message = None, None
    if comm.rank == 0:
        try:
            result = fn()
        except Exception as e:   # noqa: BLE001 - re-raised on every rank
            message = _describe(e)
    status = comm.bcast((message, result if share else None), root=0)
    if status[0] is not None:
        raise collective(SimulationError(status[0]))
    return result if comm.rank == 0 else status[1]


def install_excepthook(comm) -> None:
    """Uncaught exceptions on any rank print there and abort the whole job (no hang)."""
    previous = sys.excepthook

    def hook(tp, value, tb):
        try:
            sys.stderr.write(f"lbgen: rank {comm.rank} of {comm.size} failed; aborting all ranks\n")
            previous(tp, value, tb)
            sys.stderr.flush()
            time.sleep(0.3)
        finally:
            comm.Abort(1)
    sys.excepthook = hook


def abort(comm, exc: BaseException, code: int = 2) -> None:
    """Print a rank's own failure and end every rank of the job."""
    import traceback
    known = isinstance(exc, SimulationError) or type(exc).__name__ in (
        "SpecError", "BackendUnavailable", "CheckpointError", "UserError", "ClickException")
    text = _describe(exc)
    sys.stderr.write(f"Error: rank {comm.rank} of {comm.size} failed: {text}\n")
    if not known:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    sys.stderr.write(f"lbgen: aborting all {comm.size} ranks\n")
    sys.stderr.flush()
    sys.stdout.flush()
    time.sleep(0.3)    # let mpiexec forward this rank's last lines before Abort kills the job
    comm.Abort(code)


def check_same_config(comm, config: dict) -> None:
    """All ranks must run the same configuration: compare a hash of it (collective)."""
    text = json.dumps(config, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()
    digests = comm.allgather(digest)
    if len(set(digests)) == 1:
        return
    configs = comm.gather(config, root=0)
    message = None
    if comm.rank == 0:
        parts = []
        for r, c in enumerate(configs):
            if digests[r] == digests[0]:
                continue
            keys = sorted(k for k in set(c) | set(configs[0]) if c.get(k) != configs[0].get(k))
            diff = ", ".join(f"{k}: {configs[0].get(k)!r} on rank 0 but {c.get(k)!r}" for k in keys)
            parts.append(f"rank {r} ({diff})")
        message = (f"configuration mismatch between the {comm.size} MPI ranks: {'; '.join(parts)}. "
                   f"Every rank must be started with the same arguments.")
    raise collective(SimulationError(comm.bcast(message, root=0)))


# --- decomposition -----------------------------------------------------------------------
def slab_widths(lx: int, n: int) -> List[int]:
    """w_r = LX // N, plus one for the first LX % N ranks."""
    return [lx // n + (1 if r < lx % n else 0) for r in range(n)]


def slab_starts(lx: int, n: int) -> List[int]:
    w = slab_widths(lx, n)
    return [sum(w[:r]) for r in range(n)]


def check_decomposition(lx: int, n: int, halo: int) -> None:
    if n < 1:
        raise collective(SimulationError(f"the number of ranks N={n} must be >= 1"))
    if lx // n < halo:
        raise collective(SimulationError(
            f"LX={lx} is too narrow for N={n} MPI ranks: rank r owns w_r = LX // N columns (one more for the "
            f"first LX % N ranks), here as few as {lx // n}, and every rank needs at least {halo} columns (the "
            f"halo width). Use at most {lx // halo} ranks or a lattice with LX >= {halo * n}."))


class DistributedSimulation(Simulation):
    """One rank's slab of an LX x LY lattice split along X over the ranks of `comm`.

    Same constructor arguments as ``Simulation`` (LX is the global width), plus
    ``overlap`` (split the slab into edges and bulk so the bulk update hides the MPI
    exchange; default True).  ``regions`` are this rank's regions; their ``x_start`` are
    global columns.  See the module doc for which methods are collective.
    """

    def __init__(self, comm, lx: int, ly: int, *, overlap: bool = True, **kw):
        self.comm = comm
        self.rank, self.nranks = comm.rank, comm.size
        check_decomposition(lx, self.nranks, velocity_set(kw.get("velocity_set", DEFAULT_VELOCITY_SET)).max_hop)
        self.slab_widths = slab_widths(lx, self.nranks)
        self.slab_starts = slab_starts(lx, self.nranks)
        self.x0, self.local_lx = self.slab_starts[self.rank], self.slab_widths[self.rank]
        self.left, self.right = (self.rank - 1) % self.nranks, (self.rank + 1) % self.nranks
        self.overlap = overlap
        error = None
        try:
            super().__init__(lx, ly, **kw)
        except Exception as e:   # noqa: BLE001 - made collective below
            error = e
        agree(comm, error)
        fail = os.environ.get("LBGEN_TEST_FAIL_RANK")
        self._fail_at = None
        if fail not in (None, "") and int(fail) == self.rank:
            self._fail_at = int(os.environ.get("LBGEN_TEST_FAIL_STEP", "1"))
        mine = [{"rank": self.rank, "backend": r.program.spec.backend, "layout": r.program.layout.tag,
                 "columns": [r.x_start, r.width]} for r in self.regions]
        self.rank_regions = [d for part in comm.allgather(mine) for d in part]

    def _region_plan(self, lx, backend, device_backend, host_columns, backend_options, device_options) -> list:
        w, x0, H = self.local_lx, self.x0, self.vs.max_hop
        if device_backend is None:
            if host_columns:
                raise SimulationError("host columns need a device backend (device_backend='opencl' or 'cuda')")
            if self.overlap and w >= 3 * H:
                return [(backend, x0, H, backend_options), (backend, x0 + H, w - 2 * H, backend_options),
                        (backend, x0 + w - H, H, backend_options)]
            return [(backend, x0, w, backend_options)]
        M = int(host_columns or 0)
        dev = dict(device_options or {})
        if M == 0:
            return [(device_backend, x0, w, dev)]
        if 2 * M == w:
            return [(backend, x0, w, backend_options)]
        if M < H or w - 2 * M < H:
            raise SimulationError(
                f"host columns M={M} do not fit a slab of {w} columns: with several ranks each side of a rank's "
                f"device bulk is its own host region, so M >= {H} and the bulk w - 2M >= {H} (or M = 0, "
                f"or M = w/2)")
        return [(backend, x0, M, backend_options), (device_backend, x0 + M, w - 2 * M, dev),
                (backend, x0 + w - M, M, backend_options)]

    # --- the exchange ------------------------------------------------------------------------
    def _local_links(self) -> None:
        regs, H = self.regions, self.vs.max_hop
        if len(regs) < 2:
            return
        read = "read_columns_plain" if self._plain_exchange else "read_columns"
        write = "write_columns_plain" if self._plain_exchange else "write_columns"
        edges = [(getattr(r.program, read)(r.f, 0, H), getattr(r.program, read)(r.f, r.width - H, H))
                 for r in regs]
        for i in range(len(regs) - 1):
            a, b = regs[i], regs[i + 1]
            getattr(b.program, write)(b.f, -H, edges[i][1])     # b's left halo <- a's right edge
            getattr(a.program, write)(a.f, a.width, edges[i + 1][0])  # a's right halo <- b's left edge

    def _exchange_begin(self):
        """Y halos of every region, post the MPI exchange of the slab's outer columns, local links."""
        for r in self.regions:
            r.program.halo(r.f)
        first, last, H = self.regions[0], self.regions[-1], self.vs.max_hop
        send_left = np.ascontiguousarray(first.program.read_columns_plain(first.f, 0, H))
        send_right = np.ascontiguousarray(last.program.read_columns_plain(last.f, last.width - H, H))
        recv_left, recv_right = np.empty_like(send_left), np.empty_like(send_right)
        c = self.comm
        requests = [c.Irecv(recv_left, source=self.left, tag=TAG_RIGHTWARD),
                    c.Irecv(recv_right, source=self.right, tag=TAG_LEFTWARD),
                    c.Isend(send_right, dest=self.right, tag=TAG_RIGHTWARD),
                    c.Isend(send_left, dest=self.left, tag=TAG_LEFTWARD)]
        self._local_links()
        return requests, (send_left, send_right, recv_left, recv_right)

    def _exchange_end(self, pending) -> None:
        from mpi4py import MPI
        requests, (_, _, recv_left, recv_right) = pending
        MPI.Request.Waitall(requests)
        first, last = self.regions[0], self.regions[-1]
        first.program.write_columns_plain(first.f, -self.vs.max_hop, recv_left)
        last.program.write_columns_plain(last.f, last.width, recv_right)

    def exchange_halos(self) -> None:
        """Blocking form: every halo filled (collective)."""
        self._exchange_end(self._exchange_begin())

    def step(self, n: int = 1) -> None:
        """n steps; the bulk is updated while the halo messages are in flight (collective)."""
        regs = self.regions
        for _ in range(n):
            if self._fail_at is not None and self.time_step >= self._fail_at:
                raise RuntimeError(f"injected failure on rank {self.rank} at step {self.time_step} "
                                   f"(LBGEN_TEST_FAIL_RANK={self.rank}, a test hook)")
            pending = self._exchange_begin()
            for r in regs[1:-1]:          # the bulk: needs only local halos
                self.advance(r)
            self._exchange_end(pending)
            self.advance(regs[0])
            if len(regs) > 1:
                self.advance(regs[-1])
            self.synchronize()
            self.time_step += 1

    # --- gather / scatter ----------------------------------------------------------------------
    def _local_state(self) -> np.ndarray:
        self.synchronize()
        out = np.empty((self.vs.Q, self.local_lx, self.ly), dtype=self.dtype)
        for r in self.regions:
            out[:, r.x_start - self.x0:r.x_start - self.x0 + r.width, :] = r.program.layout.unpack(
                r.program.download(r.f))
        return out

    def _counts(self):
        counts = [self.vs.Q * w * self.ly for w in self.slab_widths]
        return counts, [sum(counts[:r]) for r in range(self.nranks)]

    def _gather(self, local: np.ndarray) -> Optional[np.ndarray]:
        counts, displs = self._counts()
        local = np.ascontiguousarray(local)
        recv = np.empty(sum(counts), dtype=local.dtype) if self.rank == 0 else None
        self.comm.Gatherv(local, [recv, (counts, displs)] if self.rank == 0 else None, root=0)
        if self.rank != 0:
            return None
        blocks = [recv[d:d + c].reshape(self.vs.Q, w, self.ly) for d, c, w in zip(displs, counts, self.slab_widths)]
        return np.concatenate(blocks, axis=1)

    def _scatter(self, global_array: Optional[np.ndarray], dtype) -> np.ndarray:
        counts, displs = self._counts()
        send = None
        if self.rank == 0:
            send = np.concatenate([np.ascontiguousarray(global_array[:, s:s + w, :], dtype=dtype).ravel()
                                   for s, w in zip(self.slab_starts, self.slab_widths)])
        local = np.empty(counts[self.rank], dtype=dtype)
        self.comm.Scatterv([send, (counts, displs)] if self.rank == 0 else None, local, root=0)
        return local.reshape(self.vs.Q, self.local_lx, self.ly)

    def _local_block(self, local: np.ndarray, r) -> np.ndarray:
        return np.ascontiguousarray(local[:, r.x_start - self.x0:r.x_start - self.x0 + r.width, :])

    def state(self) -> Optional[np.ndarray]:
        """Global (Q, LX, LY) populations in the working precision on rank 0, None elsewhere."""
        return self._gather(self._local_state())

    def populations(self) -> Optional[np.ndarray]:
        s = self.state()
        return None if s is None else s.astype(np.float64)

    def fields(self) -> Optional[Dict[str, np.ndarray]]:
        f = self.populations()
        return None if f is None else self._fields_of(f)

    def set_fields(self, rho=None, ux=None, uy=None, T=None) -> None:
        """Equilibrium of rank 0's fields, scattered (the other ranks' arguments are ignored)."""
        f = root_call(self.comm, lambda: self._equilibrium(rho, ux, uy, T))
        self.set_populations(f)

    def set_populations(self, f: Optional[np.ndarray]) -> None:
        expected = (self.vs.Q, self.lx, self.ly)

        def check():
            a = np.asarray(f, dtype=np.float64)
            if a.shape != expected:
                raise ValueError(f"populations must have shape {expected}, got {a.shape}")
            return a
        a = root_call(self.comm, check)
        local = self._scatter(a, np.float64)
        for r in self.regions:
            r.f = r.program.upload_fields(self._local_block(local, r), r.f)

    def restore(self, populations: Optional[np.ndarray], time_step: Optional[int]) -> None:
        """Rank 0's saved state, scattered; bit-identical to never having stopped."""
        expected = (self.vs.Q, self.lx, self.ly)

        def check():
            p = np.asarray(populations)
            if p.shape != expected:
                raise SimulationError(f"saved populations have shape {p.shape}; this run needs {expected}")
            if p.dtype != self.dtype:
                raise SimulationError(f"saved populations are {p.dtype}; this run computes in "
                                      f"{np.dtype(self.dtype)} (precision mismatch)")
            return p
        p = root_call(self.comm, check)
        local = self._scatter(p, self.dtype)
        for r in self.regions:
            r.f = r.program.upload(r.program.layout.pack(self._local_block(local, r)), r.f)
        self.time_step = int(self.comm.bcast(time_step, root=0))

    def check_finite(self) -> None:
        """Raise the same SimulationError on every rank if any rank's slab went bad (collective)."""
        from mpi4py import MPI
        if self.comm.allreduce(int(self.looks_healthy()), op=MPI.MIN):
            return     # the cheap test passed on every rank
        bad = self._first_bad_site(self._local_state().astype(np.float64))
        if not self.comm.allreduce(int(bad is not None), op=MPI.MAX):
            return
        sites = self.comm.gather(bad, root=0)
        message = None
        if self.rank == 0:
            r = next(i for i, s in enumerate(sites) if s is not None)
            x, y, what, values = sites[r]
            message = str(self._divergence_error(x + self.slab_starts[r], y, what, values))
        raise collective(SimulationError(self.comm.bcast(message, root=0)))

    def run(self, steps: int, progress: bool = False, callback=None):
        return super().run(steps, progress=progress and self.rank == 0, callback=callback)


# --- communication model ------------------------------------------------------------------
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
    from .perfmodel import _time_steps
    return _time_steps(make_simulation(width), steps) / (width * ly)


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
