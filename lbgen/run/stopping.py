"""SIGINT and SIGTERM during a run: finish the current step, then stop cleanly.

Inside ``with StopSignals() as stop:`` the first SIGINT or SIGTERM only records itself
(``stop.signal``); the run loop checks it after every step, writes a checkpoint and
marks the manifest.  A second signal interrupts at once (KeyboardInterrupt).  Outside
the main thread (where handlers cannot be installed) nothing changes.

With MPI (``StopSignals(comm=comm)``; ``mpiexec`` forwards SIGINT and SIGTERM to every
rank) the handler only records the signal in ``stop.pending``; the ranks agree on it in
``requested()``, a cheap collective (an Allreduce, MAX, of the pending signal number) that
the run loop calls once per sweep on every rank, so every rank sees ``stop.signal`` set
after the same sweep and leaves the loop at the same step -- also when the signal reached
one rank only, or reached the ranks on different sides of a sweep boundary.

The Allreduce costs microseconds (measured with 2 ranks on 2 shared, busy cores: 4 us
median, 15-20 us mean, so 0.3-2 % of a 1 ms sweep of a 12 x 32 lattice; inside the loop a
call also absorbs the ranks' skew, up to hundreds of us), so the ranks agree only every
K-th call: each rank proposes K from its own measurements (the Allreduce's time, the time of
a sweep) so that the agreement costs below 1 % of the sweeps between two agreements, at
most 0.1 s of sweeps (a signal is answered that fast), and the proposals travel in the same
Allreduce, MAX: every rank uses the same K from the same call on (``every=K`` fixes it).
Production lattices (sweeps of tens of milliseconds) agree after every sweep.

A second signal on a rank while the run stops (or before the ranks agreed) cannot be
turned into a clean stop without the other ranks, so it calls ``on_abort(signum)`` (the
run marks its manifest) and ``comm.Abort(128 + signum)``: MPI ends every rank, none is
left waiting in a collective.
"""
from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from typing import Callable, Optional


class RunInterrupted(Exception):
    """The run stopped on a signal; the message says what was kept and how to resume."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.signum = signum
        self.exit_code = 128 + signum          # the shell's convention: 130 (INT), 143 (TERM)


class StopSignals:
    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    #: the agreement's cost budget (fraction of the sweeps between two agreements) and the
    #: longest time between two agreements (how fast a signal is answered)
    COST, LATENCY = 0.01, 0.1

    def __init__(self, enabled: bool = True, comm=None, every: Optional[int] = None,
                 on_abort: Optional[Callable[[int], None]] = None):
        """`every`: with MPI, agree every `every` sweeps (None: adaptive, see the module)."""
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.comm = comm
        self.adaptive = every is None
        self.every = 1 if every is None else max(1, int(every))
        self.on_abort = on_abort
        self.signal: Optional[int] = None      # the signal the run stops on (MPI: agreed by every rank)
        self.pending: Optional[int] = None     # the first signal this process received
        self.agreements = 0                    # collectives run by requested()
        self.calls = 0                         # requested() calls (sweeps)
        self._countdown = 1                    # calls until the next agreement (the first call agrees)
        self._last = None                      # perf_counter() at the end of the last agreement
        self._allreduce = None                 # seconds per Allreduce (moving average)
        self._buffers = None
        self._previous = {}

    @property
    def name(self) -> str:
        return signal.Signals(self.signal).name if self.signal else ""

    def _handle(self, signum, frame):
        if self.pending is not None:
            if self.comm is not None:
                self._abort(signum)
            raise KeyboardInterrupt
        self.pending = signum
        if self.comm is None:
            self.signal = signum

    def _abort(self, signum: int) -> None:
        """A second signal under MPI: end every rank now (MPI_Abort), after on_abort.  The
        other ranks wait a moment first, so that rank 0 (which writes the manifest) usually
        gets to its own second signal before the abort ends it."""
        comm = self.comm
        try:
            if comm.rank != 0:
                time.sleep(0.3)
            sys.stderr.write(f"lbgen: rank {comm.rank} of {comm.size}: second {signal.Signals(signum).name}: "
                             f"stopping every rank at once\n")
            sys.stderr.flush()
            if self.on_abort is not None:
                self.on_abort(signum)
        except BaseException:          # noqa: BLE001 - the abort below must happen
            pass
        finally:
            try:
                comm.Abort(128 + signum)
            finally:   # Abort returns when the handler runs inside an MPI wait (mpi4py checks signals there)
                os._exit(128 + signum)             # then the launcher ends the other ranks

    def requested(self) -> bool:
        """Whether the run should stop now.  One process: a signal arrived.  MPI: collective --
        every rank must call it the same number of times (once per sweep of the run loop); on
        every K-th call the ranks agree (MAX of the pending signal numbers, and of their
        proposals for the next K), and ``self.signal`` becomes the agreed signal on every rank
        together."""
        if self.signal:
            return True
        if self.comm is None:
            return False
        self.calls += 1
        self._countdown -= 1
        if self._countdown > 0:
            return False
        import numpy as np
        from mpi4py import MPI
        if self._buffers is None:
            self._buffers = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)
        local, agreed = self._buffers
        t0 = time.perf_counter()
        local[0] = self.pending or 0
        local[1] = self._propose((t0 - self._last) / self.every if self._last is not None else None)
        self.comm.Allreduce(local, agreed, op=MPI.MAX)
        t1 = time.perf_counter()
        self._allreduce = t1 - t0 if self._allreduce is None else 0.75 * self._allreduce + 0.25 * (t1 - t0)
        self._last = t1
        self.agreements += 1
        self.every = self._countdown = max(1, int(agreed[1]))
        if agreed[0]:
            self.signal = int(agreed[0])
        return bool(self.signal)

    def _propose(self, sweep: Optional[float]) -> int:
        """This rank's K: the Allreduce below COST of the K sweeps, K sweeps within LATENCY."""
        if not self.adaptive:
            return self.every
        if sweep is None or self._allreduce is None or sweep <= 0:
            return 1
        wanted = math.ceil(self._allreduce / (self.COST * sweep))
        return max(1, min(wanted, int(self.LATENCY / sweep)))

    def __enter__(self) -> "StopSignals":
        if self.enabled:
            for s in self.SIGNALS:
                self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}
