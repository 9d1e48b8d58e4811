"""SIGINT and SIGTERM during a run: finish the current step, then stop cleanly.

Inside ``with StopSignals() as stop:`` the first SIGINT or SIGTERM only records itself
(``stop.signal``); the run loop checks it after every step, writes a checkpoint and
marks the manifest.  A second signal interrupts at once (KeyboardInterrupt).  Outside
the main thread (where handlers cannot be installed) nothing changes.
"""
from __future__ import annotations

import signal
import threading
from typing import Optional


class RunInterrupted(Exception):
    """The run stopped on a signal; the message says what was kept and how to resume."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.signum = signum
        self.exit_code = 128 + signum          # the shell's convention: 130 (INT), 143 (TERM)


class StopSignals:
    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, enabled: bool = True):
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.signal: Optional[int] = None
        self._previous = {}

    @property
    def name(self) -> str:
        return signal.Signals(self.signal).name if self.signal else ""

    def _handle(self, signum, frame):
        if self.signal is not None:
            raise KeyboardInterrupt
        self.signal = signum

    def __enter__(self) -> "StopSignals":
        if self.enabled:
            for s in self.SIGNALS:
                self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}
