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

Modules: this one (launch, collective errors, decomposition), ``lbgen.parallel.simulation``
(the distributed simulation), ``lbgen.parallel.model`` (the communication model).

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
from typing import Callable, List, Optional

from lbgen.simulation.runner import SimulationError

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
