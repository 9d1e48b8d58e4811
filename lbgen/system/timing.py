"""Timing primitives: the one home of timing loops and their statistics.

``stats`` (median, spread), ``time_call`` (a call timed in samples long enough to
measure), ``interleaved_rates`` (several calls timed in turn, sample by sample: A/B
comparisons on a shared machine).  They know no lattice, kernel or program: the backends
(device copy bandwidths), ``lbgen.perf`` (``lbgen bench``, ``lbgen tune``, the performance
models) and the benchmarks use them; nothing here passes or fails on a timing.
"""
from __future__ import annotations

import math
import time
from typing import Dict, Sequence, Tuple

import numpy as np


def stats(samples: Sequence[float]) -> Dict[str, float]:
    a = np.asarray(list(samples), dtype=float)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {"median": float(med), "min": float(a.min()), "max": float(a.max()), "q1": float(q1), "q3": float(q3),
            "n": int(a.size), "samples": [float(x) for x in a]}


def time_call(fn, sync, repeat: int = 5, warmup: int = 1, min_sample: float = 0.02) -> Tuple[Dict, int]:
    """Median/min/max/quartiles (ms per call) of `fn`, after `warmup` calls."""
    for _ in range(max(1, warmup)):
        fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    once = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(math.ceil(min_sample / once)))
    samples = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / inner * 1e3)
    return stats(samples), inner


def interleaved_rates(calls: Sequence, work: Sequence[float], repeat: int, min_seconds: float,
                      between=None, clock=time.perf_counter) -> list:
    """Work per second (``work[j]`` units per call of ``calls[j]``, e.g. site updates), one
    list of ``repeat`` samples per call, the calls timed in turn within every sample so that
    a shared machine slows them alike (ratios are then taken per sample).  Each sample of a
    call lasts at least ``min_seconds`` (calls per sample from one timed call after two
    warm-up calls); ``between()``, when given, runs at the start of every round (untimed:
    e.g. a limit measured in the same rounds).  ``clock``: the time measured, wall-clock by
    default; ``time.process_time`` gives the CPU time of this process (with one thread, the
    work's own time, which a loaded machine does not stretch)."""
    for c in calls:       # warm-up (and page faults)
        c()
        c()
    inner = []
    for c in calls:
        t0 = clock()
        c()
        inner.append(max(1, int(min_seconds / max(clock() - t0, 1e-6))))
    samples = [[] for _ in calls]
    for _ in range(repeat):
        if between is not None:
            between()
        for j, c in enumerate(calls):
            t0 = clock()
            for _ in range(inner[j]):
                c()
            samples[j].append(work[j] * inner[j] / (clock() - t0))
    return samples
