"""Several MPI ranks: a Cartesian grid of blocks of one lattice, halos exchanged with the
neighbouring ranks.

``mpiexec -n N lbgen run ...`` runs one process per rank (paper, "Multi-node": one MPI
process per accelerator; seed 002: Cartesian decomposition, one axis after another).
Nothing here imports mpi4py at module level: a normal run never needs it.

Decomposition: ``lbgen.parallel.decomposition`` (the grid of any D, the blocks, the grid
rules).  The exchange: ``lbgen.parallel.exchange`` (one split axis after the other).
Inside a rank: ``lbgen.parallel.simulation`` (any D: a block with ghost zones and k H wide
halos every k steps).  The result is
bit-identical to one process in strict mode.

Collective state (every rank must call these together)
    ``state() / populations() / fields()`` gather to rank 0 (``fields`` gathers the four
    fields of each rank's fields kernel): rank 0 gets the global arrays, the other ranks
    get ``None``.  ``set_fields / set_populations / restore``
    scatter from rank 0 (the arguments of the other ranks are ignored, they may pass
    None).  ``check_finite()`` raises on every rank together, with the message (global
    first bad site) composed by rank 0.

Failures
    errors every rank sees together are marked ``collective`` (``is_collective(e)``); the
    CLI prints them once (rank 0) and all ranks exit with status 2.  An error on one rank
    only (a crash, a failed write) makes that rank print it and ``comm.Abort`` the job, so
    nothing hangs; ``install_excepthook`` does the same for uncaught exceptions.

Start-up (``world()``, the first MPI call of every command that runs under mpiexec)
    MPI_Init waits for every process of the launch.  A process that never starts MPI (a
    mismatched launch such as ``mpiexec -n 1 lbgen run : -n 1 lbgen info``, or a rank that
    failed before it) would keep the others in MPI_Init for ever, so MPI is started with a
    deadline (``LBGEN_MPI_TIMEOUT`` seconds, default 10): past it the rank prints why and
    exits with status 2.  Then ``check_same_command`` compares the ranks' command lines
    (a nonblocking barrier polled until the same deadline, then an allgather): a
    difference is refused on every rank (rank 0 names the ranks and their commands),
    exit status 2.  Until the run loop takes over (``lbgen.run.stopping``), SIGINT and
    SIGTERM end every rank at once (``comm.Abort(128 + signum)``): a rank interrupted
    between two collectives would leave the others waiting.

Modules: this one (launch, collective errors), ``decomposition``, ``exchange``,
``simulation`` (the distributed lattice of any D), ``model`` (the communication model).

Communication model (seeds 002/003/004)
    ``ring_shift`` times each rank sending N bytes to its right neighbour while receiving
    from its left one; ``fit_latency_bandwidth`` fits T = L + N/B by least squares;
    ``predict`` adds 2 halo messages per step to the per-rank slab compute time;
    ``predict_blocks`` is seed 002's T_step for a grid and a time block.
"""
from __future__ import annotations

import hashlib
import json
import contextlib
import os
import sys
import time
from typing import Callable, Optional

from lbgen.simulation.runner import SimulationError

#: environment variables set by MPI launchers (MPICH/hydra, Intel MPI, Open MPI, PMIx)
MPI_ENV = ("PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")
SIZE_ENV = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")

TAG_RING, TAG_UPWARD, TAG_DOWNWARD = 13, 14, 15

_WORLD = None   # the communicator of an MPI-launched CLI run (set by world())


# --- launch detection ---------------------------------------------------------------------
def launched_under_mpi() -> bool:
    return any(os.environ.get(k) not in (None, "") for k in MPI_ENV)


def world():
    """MPI.COMM_WORLD when this process was started by an MPI launcher with > 1 ranks, else None.

    mpi4py is imported only when a launcher's environment variables are present.  MPI is
    started with a deadline (``start_timeout()``), the ranks' command lines are compared
    (``check_same_command``, raises a collective SimulationError) and SIGINT/SIGTERM abort
    every rank until the run loop installs its own handlers (``abort_on_signals``).
    """
    global _WORLD
    if _WORLD is not None:
        return _WORLD
    if not launched_under_mpi():
        return None
    try:
        MPI = _start(start_timeout())
    except ImportError:
        sizes = [os.environ.get(k) for k in SIZE_ENV if os.environ.get(k)]
        if sizes and sizes[0].isdigit() and int(sizes[0]) > 1:
            raise SimulationError(f"started by an MPI launcher with {sizes[0]} processes, but mpi4py is not "
                                  f"installed: pip install 'lbgen[mpi]' (mpi4py + mpich)") from None
        return None
    comm = MPI.COMM_WORLD
    if comm.size <= 1:
        return None
    _WORLD = comm
    abort_on_signals(comm)
    check_same_command(comm, sys.argv[1:], timeout=start_timeout())
    return comm


# --- start-up: a deadline for MPI_Init, the same command on every rank ----------------------
#: seconds the ranks wait for each other at start-up (MPI_Init, the command check)
START_TIMEOUT = 10.0


def start_timeout() -> float:
    """``LBGEN_MPI_TIMEOUT`` (seconds; raise it for launches whose ranks start slowly), else 10."""
    try:
        value = float(os.environ.get("LBGEN_MPI_TIMEOUT", START_TIMEOUT))
    except ValueError:
        value = START_TIMEOUT
    return value if value > 0 else START_TIMEOUT


def _launch_rank() -> str:
    """This process's rank and size from the launcher's environment (before MPI is started)."""
    rank = next((os.environ[k] for k in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK") if os.environ.get(k)), "?")
    size = next((os.environ[k] for k in SIZE_ENV if os.environ.get(k)), "?")
    return f"rank {rank} of {size}"


def _command(argv) -> str:
    import shlex
    return shlex.join(["lbgen"] + [str(a) for a in argv])


def _start(timeout: float):
    """Import mpi4py and start MPI; if MPI_Init has not returned after `timeout` seconds (a
    process of the launch never starts MPI), print why and exit with status 2.

    mpi4py's own MPI_Init holds the GIL, so no Python thread could run meanwhile: MPI_Init_thread
    is called through ctypes (which releases it) while a timer thread waits; mpi4py then finds
    MPI started, and finalizes it at exit (``rc.finalize``).  Falls back to mpi4py's start
    (no deadline) where the C function cannot be found."""
    if "mpi4py.MPI" not in sys.modules:
        import mpi4py
        mpi4py.rc.initialize = False
        mpi4py.rc.finalize = True
    from mpi4py import MPI
    if MPI.Is_initialized():
        return MPI
    try:
        import ctypes
        init = ctypes.CDLL(MPI.__file__).MPI_Init_thread     # libmpi, a dependency of mpi4py's module
    except (OSError, AttributeError):
        MPI.Init_thread()
        return MPI
    import threading
    lock = threading.Lock()
    started = []

    def too_late():
        with lock:
            if started:
                return
            sys.stderr.write(
                f"Error: {_launch_rank()}: MPI did not start within {timeout:g} s: not every process of this "
                f"mpiexec launch joined it. Every rank must run the same lbgen command (this one runs "
                f"`{_command(sys.argv[1:])}`); a launch that mixes commands, such as `mpiexec -n 1 lbgen run : "
                f"-n 1 lbgen info`, is refused, and so is one whose other ranks failed before starting MPI "
                f"(see their messages). If the ranks only start slowly, raise LBGEN_MPI_TIMEOUT (now {timeout:g} "
                f"seconds).\n")
            sys.stderr.flush()
            os._exit(2)

    timer = threading.Timer(timeout, too_late)
    timer.daemon = True
    timer.start()
    provided = ctypes.c_int(0)
    try:
        err = init(None, None, ctypes.c_int(MPI.THREAD_MULTIPLE), ctypes.byref(provided))
    finally:
        with lock:
            started.append(True)
        timer.cancel()
    if err != 0:
        raise SimulationError(f"MPI_Init_thread failed (MPI error code {err})")
    for comm in (MPI.COMM_SELF, MPI.COMM_WORLD):    # what mpi4py does when it starts MPI: errors raise
        comm.Set_errhandler(MPI.ERRORS_RETURN)
    return MPI


def check_same_command(comm, argv, timeout: float = START_TIMEOUT) -> None:
    """Every rank must run the same lbgen command with the same arguments (collective).

    The ranks first meet at a nonblocking barrier polled until `timeout` seconds: a rank that
    started MPI but never comes here (another program in an MPMD launch) cannot answer, so
    this rank says so and aborts the job (exit status 2) instead of waiting for ever.  Then
    the argument lists (``sys.argv[1:]``) are gathered; if any differs, every rank raises
    the same collective SimulationError, composed by rank 0: each distinct command line
    with the ranks that run it."""
    argv = [str(a) for a in argv]
    request = comm.Ibarrier()
    deadline = time.monotonic() + timeout
    pause = 0.0005
    while not request.Test():
        if time.monotonic() > deadline:
            sys.stderr.write(f"Error: rank {comm.rank} of {comm.size} (`{_command(argv)}`): not every MPI rank "
                             f"reached lbgen's start-up check within {timeout:g} s: another program or a rank "
                             f"stuck before it is part of this launch. Every rank must run the same lbgen "
                             f"command. lbgen: aborting all {comm.size} ranks\n")
            sys.stderr.flush()
            time.sleep(0.3)
            try:
                comm.Abort(2)
            finally:
                os._exit(2)
        time.sleep(pause)
        pause = min(2 * pause, 0.05)
    commands = comm.allgather(argv)
    if all(c == commands[0] for c in commands):
        return
    groups = {}
    for r, c in enumerate(commands):
        groups.setdefault(tuple(c), []).append(r)
    parts = []
    for c, ranks in groups.items():
        who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
        parts.append(f"{who} {'runs' if len(ranks) == 1 else 'run'} `{_command(c)}`")
    raise collective(SimulationError(
        f"the {comm.size} MPI ranks were started with different commands: {'; '.join(parts)}. Every rank must "
        f"run the same lbgen command with the same arguments (mpiexec -n {comm.size} lbgen ...)."))


def abort_on_signals(comm) -> None:
    """SIGINT/SIGTERM end every rank at once (``comm.Abort(128 + signum)``): outside the run
    loop (set-up, compilation, the final gather) a rank cannot stop on its own without
    leaving the others waiting in a collective.  The run loop replaces these handlers with
    its clean stop (``lbgen.run.stopping.StopSignals``) and restores them after."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return

    def handle(signum, frame):
        name = signal.Signals(signum).name
        try:
            sys.stderr.write(f"lbgen: rank {comm.rank} of {comm.size}: {name} outside the run loop: nothing "
                             f"to save; stopping every rank\n")
            sys.stderr.flush()
        finally:
            try:
                comm.Abort(128 + signum)
            finally:   # Abort returns when the handler runs inside an MPI wait (mpi4py checks signals there)
                os._exit(128 + signum)
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, handle)


def active():
    """The communicator of the current MPI CLI run, or None."""
    return _WORLD


# --- collective errors -------------------------------------------------------------------
def collective(exc: BaseException) -> BaseException:
    """Mark an exception that every rank raises together (no abort needed)."""
    exc.collective = True
    return exc


@contextlib.contextmanager
def same_on_every_rank(comm):
    """Checks that every rank runs on the same inputs (the command line, its files, shared
    values) with no communication inside: under MPI every rank refuses the same input
    together, so the refusal is a collective error (one message, from rank 0, the exit status
    of one process) instead of an abort rank by rank."""
    try:
        yield
    except (ValueError, SimulationError) as e:    # ConfigError, UserError's ClickException: below
        if comm is not None:
            collective(e)
        raise
    except Exception as e:
        if comm is not None and type(e).__name__ in ("UserError", "ClickException"):
            collective(e)
        raise


def is_collective(exc: BaseException) -> bool:
    return bool(getattr(exc, "collective", False))


def _known(exc: BaseException) -> bool:
    """A refusal or failure lbgen words itself (its message says it all: no traceback)."""
    return isinstance(exc, (SimulationError, ValueError)) or type(exc).__name__ in (
        "SpecError", "BackendUnavailable", "CheckpointError", "UserError", "ClickException")


def _describe(exc: BaseException) -> str:
    if _known(exc):
        return str(getattr(exc, "message", None) or exc)
    return f"{type(exc).__name__}: {exc}"


def _shared(exc: Optional[BaseException]):
    """What the other ranks learn of a rank's failure: its words, and for an OSError (a full
    disk, a read-only folder) its errno and file, so that every rank raises the same OSError
    and the run driver reports it as one process does (status "failed", a resume command)."""
    if exc is None:
        return None
    if isinstance(exc, OSError) and exc.errno is not None:
        return _describe(exc), (exc.errno, exc.strerror, exc.filename)
    return _describe(exc), None


def _raise_shared(text: str, os_error, cause: Optional[BaseException] = None):
    err = collective(OSError(*os_error) if os_error is not None else SimulationError(text))
    if cause is not None:
        raise err from cause
    raise err


def agree(comm, error: Optional[BaseException]) -> None:
    """Every rank passes its local error (or None); if any rank failed, all raise together.

    Only for code between collectives: a rank that fails inside a collective would hang
    the others, so those failures abort instead.
    """
    shared = comm.allgather(_shared(error))
    failed = [(r, m[0]) for r, m in enumerate(shared) if m is not None]
    if not failed:
        return
    if len({m for _, m in failed}) == 1 and len(failed) == comm.size:
        text = failed[0][1]
    else:
        text = "; ".join(f"rank {r} of {comm.size}: {m}" for r, m in failed)
    os_error = next((m[1] for m in shared if m is not None and m[1] is not None), None)
    _raise_shared(text, os_error, error)


def root_call(comm, fn: Callable, share: bool = False):
    """Run fn on rank 0 only; its failure is raised on every rank.  Returns fn's result on
    rank 0 (and on every rank with share=True, by broadcast), None elsewhere."""
    if comm is None:
        return fn()
    result, failure = None, None
    if comm.rank == 0:
        try:
            result = fn()
        except Exception as e:   # noqa: BLE001 - re-raised on every rank
            failure = _shared(e)
    status = comm.bcast((failure, result if share else None), root=0)
    if status[0] is not None:
        _raise_shared(*status[0])
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
    known = _known(exc)
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
