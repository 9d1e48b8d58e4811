"""Measurement of lbgen's programs and simulations: ``quiet_buffers`` (two buffers at rest
for timing kernels), ``default_kernel_parameters`` (an operator's kernel arguments at its
defaults), ``time_steps`` (a Simulation's seconds per step).  The timing primitives
(``stats``, ``time_call``, ``interleaved_rates``) live one layer lower, in
``lbgen.system.timing`` (the backends use them too).  ``lbgen bench``, ``lbgen tune`` and
the performance models use these; nothing here passes or fails on a timing.
"""
from __future__ import annotations

import time
from typing import Dict, Optional

import numpy as np

from lbgen.model.operators import force_arguments, operator


def quiet_buffers(program, lx: int, ly: int, lz: Optional[int] = None):
    """Two buffers of a program at a quiet equilibrium (rho = T = 1, u = 0), halos filled;
    with ``lz``, of a 3D program (velocity (0, 0, 0))."""
    shape = (lx, ly) if lz is None else (lx, ly, lz)
    one, zero = np.ones(shape), np.zeros(shape)
    f = program.allocate()
    g = program.allocate()
    for buf in (f, g):
        program.init_equilibrium(buf, one, *([zero] * len(shape)), one)
        program.halo(buf)
    program.synchronize()
    return f, g


def default_kernel_parameters(collision: str, dimension: int = 2) -> Dict[str, float]:
    """The collide/fused arguments of an operator at its record's defaults, no force (ax, ay[, az])."""
    return {**operator(collision).defaults(), **{name: 0.0 for name in force_arguments(dimension)}}


def time_steps(sim, steps: int, repeats: int = 3) -> float:
    """Median seconds per step of a Simulation over `repeats` timings of `steps` steps
    (after a warm-up step).  A simulation without a state is timed from the fluid at rest."""
    if not sim.has_state:
        sim.set_fields(1.0, u=(0.0,) * sim.dimension)
    sim.step(1)            # warm-up (first launches, page faults)
    sim.synchronize()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        sim.step(steps)
        sim.synchronize()
        samples.append((time.perf_counter() - t0) / steps)
    return float(np.median(samples))
