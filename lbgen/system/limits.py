"""What a run may ask of this machine: thread counts and memory, checked before any work.

One home for the caps: `max_threads()` (MAX_THREADS_PER_CORE per core, at least
MIN_THREAD_CAP) and `available_memory()`; the driver, the CLI and the C backend use them.
"""
from __future__ import annotations

import math
import os
from typing import Callable, Optional, Sequence

#: more OpenMP threads than this per core only oversubscribes (libgomp segfaults at ~1e5)
MAX_THREADS_PER_CORE = 4
MIN_THREAD_CAP = 16


class LimitError(ValueError):
    """A request beyond what this machine allows; the message names the value and the limit."""


#: the largest rank count ``lbgen model`` evaluates (a grid, or the scaling table's --max-ranks,
#: lbgen.parallel.model.check_model_ranks): its step time visits every rank of the grid once
#: (the busiest node), so the table's cost grows with the ranks -- seconds for 16384 on one
#: core -- and the bound keeps every call short
MAX_MODEL_RANKS = 16384


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def max_threads() -> int:
    return max(MIN_THREAD_CAP, MAX_THREADS_PER_CORE * cpu_count())


def check_threads(threads, what: str = "--threads") -> int:
    """Refuse a thread count outside 0 .. max_threads() (0: OMP_NUM_THREADS or all cores)."""
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise LimitError(f"{what} {threads!r}: expected a whole number of threads")
    cap = max_threads()
    if not 0 <= threads <= cap:
        raise LimitError(f"{what} {threads}: allowed 0 (OMP_NUM_THREADS or all cores) to {cap} "
                         f"({MAX_THREADS_PER_CORE} per core, {cpu_count()} cores here)")
    return threads


def omp_env_threads() -> Optional[int]:
    """The first number of $OMP_NUM_THREADS, or None when unset or not a number."""
    text = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    try:
        return int(text)
    except ValueError:
        return None


def resolve_threads(threads: int, warn: Optional[Callable[[str], None]] = None) -> int:
    """The thread count to set: `threads`, or with 0 an OMP_NUM_THREADS beyond the cap
    lowered to the cap (with a message through `warn`); 0 otherwise (OpenMP's default)."""
    check_threads(threads)
    if threads:
        return threads
    env = omp_env_threads()
    cap = max_threads()
    if env is not None and env > cap:
        if warn is not None:
            warn(f"warning: OMP_NUM_THREADS={env} is beyond the cap of {cap} threads "
                 f"({MAX_THREADS_PER_CORE} per core, {cpu_count()} cores here); using {cap}")
        return cap
    return 0


def available_memory() -> Optional[int]:
    """Bytes of memory available to a new allocation (MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):   # pragma: no cover
        return None


def run_memory_estimate(shape: Sequence[int], Q: int, itemsize: int, halo: int = 3, buffers: int = 2,
                        lanes: int = 8, real: int = 8, slabs: bool = True) -> int:
    """Host bytes a run of a lattice ``shape`` ((LX, LY) or (LX, LY, LZ): D from its length)
    of Q populations needs at its peak, roughly: what ``lbgen run`` holds (issue 38 item 4,
    measured in docs/performance-history.md): ``buffers`` population buffers (2 pull, 1 in
    place: lbgen.codegen.spec.population_buffers) with halos in every direction
    (``itemsize``: bytes of one stored population, lbgen.codegen.storage; the last axis's halo
    rows are clusters of ``lanes`` cells: 8, the run's default CAoSoA VL 8, bounds the
    layouts' padding from above), and the fields of one event in the arithmetic precision
    (``real`` bytes: 4 in single, whose fields a run holds in float32).  In 2D those are D + 2
    arrays (``field_bytes``) and a quarter more for the writers' slabs and the interpreter at
    small lattices.  In 3D a run makes its fields by slabs of X planes as the writers read them
    (``lbgen.output.slabbed``), the .vti an eighth of the Z planes at a time: an eighth of the
    fields' bytes, and a slab's staging lattice, counted as a sixteenth of one buffer (a slab
    is at most LX / 16 planes).  A 3D set-up sets its fields by slabs too
    (``lbgen.simulation.slabs``), checkpoints and masks stream their slabs: no gathered state
    is counted.  ``slabs`` False: a 3D run whose fields are held whole (a device, host + device
    regions, thermal walls across x: ``lbgen.simulation.slabs``), counted as in 2D."""
    cells = math.prod(int(n) for n in shape)
    buffers_bytes = population_bytes(shape, Q, itemsize, halo, buffers, lanes)
    if len(shape) == 3 and slabs:
        staging = population_bytes(shape, Q, itemsize, halo, 1, lanes) // 16
        return buffers_bytes + field_bytes(3, real) * cells // 8 + staging
    fields = field_bytes(len(shape), real) * cells
    return buffers_bytes + fields + fields // 4


def population_bytes(shape: Sequence[int], Q: int, itemsize: int, halo: int = 3, buffers: int = 2,
                     lanes: int = 8) -> int:
    """Bytes of ``buffers`` population buffers of a lattice ``shape`` with halos in every direction
    (the last axis's halo rows clusters of ``lanes`` cells)."""
    *rest, last = (int(n) for n in shape)
    padded = math.prod(n + 2 * halo for n in rest) * (last + 2 * halo * max(1, int(lanes)))
    return Q * padded * buffers * itemsize


def largest_lattice(memory: int, dimension: int, Q: int, itemsize: int, halo: int = 3, buffers: int = 2,
                    lanes: int = 8, real: int = 8, device: bool = False, fields: bool = True) -> int:
    """The largest N whose N^D lattice fits ``memory`` bytes by the estimate of what it holds (0
    when none does): on the host, ``run_memory_estimate``; on a GPU (``device``), the population
    buffers and (``fields``) one event's fields there (the GPU runtimes' field arrays are float64:
    ``real`` 8), without the host's slack.  Bisection on the monotonic estimate."""
    def need(n: int) -> int:
        shape = (n,) * int(dimension)
        if not device:
            return run_memory_estimate(shape, Q, itemsize, halo, buffers, lanes, real)
        held = field_bytes(dimension, real) * n ** dimension if fields else 0
        return population_bytes(shape, Q, itemsize, halo, buffers, lanes) + held
    if memory <= 0 or need(1) > memory:
        return 0
    lo, hi = 1, 2
    while need(hi) <= memory:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if need(mid) <= memory else (lo, mid)
    return lo


def field_bytes(dimension: int, real: int = 8) -> int:
    """Bytes a cell of the fields a run holds at an event: rho, the D velocity components and T
    of ``real`` bytes each (the arithmetic's: ``Simulation.fields(native=True)``)."""
    return (int(dimension) + 2) * int(real)


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def check_memory(shape: Sequence[int], Q: int, itemsize: int, precision: str, halo: int = 3, buffers: int = 2,
                 real: int = 8, slabs: bool = True) -> int:
    """Refuse a lattice whose estimate exceeds the available memory; returns the estimate."""
    need = run_memory_estimate(shape, Q, itemsize, halo, buffers, real=real, slabs=slabs)
    have = available_memory()
    if have is not None and need > have:
        names = ("--lx", "--ly", "--lz")[:len(shape)]
        raise LimitError(f"the lattice {' x '.join(str(int(n)) for n in shape)} ({precision}) needs about "
                         f"{_gib(need)} of memory ({Q} populations per site, {buffers} buffer{'s' if buffers > 1 else ''}, plus the "
                         f"fields of an event), but only {_gib(have)} are available here; choose a smaller {'/'.join(names)}")
    return need
