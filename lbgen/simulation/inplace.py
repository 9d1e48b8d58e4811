"""In-place streaming of a ``Simulation`` (``streaming='inplace'``: one population buffer, the AA
pattern of the C kernels, ``lbgen.backends.base.Program.step_inplace``): what it does not run
beside, refused in words before any work, and the parity of its one buffer.

The buffer is *natural* (the pull kernels' state: slot p of site x holds f*_p(x)) after
``set_fields``, a restore and every odd step of the pattern; after an even step it holds the
populations in the other parity's slots.  Whatever reads the state (``state``, ``fields``, the
diagnostics, a checkpoint) first makes it natural (``natural``: the kernels' ``aa_normalise``),
so the step count's parity never reaches a saved state: a run resumed at any step continues
bit-identically, starting its next step as an even one.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from lbgen.codegen.spec import STREAMING
from lbgen.simulation.parameters import SimulationError


def check_streaming(streaming, *, device_backend: Optional[str], time_block: int, fused: bool, bodies,
                    bounds, backend: str = "c", ranks: bool = False) -> str:
    """The streaming pattern of a lattice, refused in words where it cannot run (the backend and
    the thermal walls are ``KernelSpec``'s to refuse; ``bodies`` run in place: their link kernels
    address the parity's slots, ``BodyLinks.before_step(odd=...)``)."""
    if streaming not in STREAMING:
        raise SimulationError(f"streaming={streaming!r}; choose one of {', '.join(map(repr, STREAMING))}")
    if streaming == "pull":
        return streaming
    if device_backend is not None:
        why = (f"device_backend={device_backend!r}: host + device regions trade the halo planes of a pulled "
               f"buffer every step")
    elif time_block != 1:
        why = f"time_block={time_block}: the temporal blocking (fused_tb) is a pull sweep"
    elif not fused:
        why = "fused=False: propagate then collide stream between two buffers"
    else:
        return streaming
    raise SimulationError(f"streaming='inplace' does not run with {why}; use streaming='pull' (the default) there")


class InPlaceParity:
    """The parity of an in-place lattice's buffers: ``odd`` when the next step is the AA pattern's
    odd one (the buffers hold the other parity's slots)."""

    def __init__(self):
        self.odd = False

    def step(self, sim, n: int) -> None:
        """n steps of ``sim`` (one region): an even step on a fresh halo, an odd one on its own slots."""
        for _ in range(n):
            if sim.bodies is not None:
                sim.bodies.before_step(sim.regions[0].f, odd=self.odd)
            if not self.odd:
                sim.exchange_halos()
            for r in sim.regions:
                r.program.step_inplace(r.f, self.odd, sim.kernel_parameters)
            self.odd = not self.odd
            sim.time_step += 1
            sim.sweeps["single"] += 1

    def natural(self, sim, reset: bool = False) -> None:
        """Make ``sim``'s buffers natural (no step: ``aa_normalise``, solid cells 0); ``reset``: they
        were just written natural (set_fields, set_populations, restore)."""
        if self.odd and not reset:
            for r in sim.regions:
                r.program.aa_normalise(r.f)
        self.odd = False

    @staticmethod
    def solids_zeroed(sim, region, out):
        """A region's unpacked natural state ``out`` (Q, ...) with its solid cells 0, as the pull
        kernels leave them (in place they keep the values their fluid neighbours bounce)."""
        if sim.mask is not None:
            out[:, sim.mask[region.columns % sim.lx] == 1] = region.program.codec.encode(np.zeros((sim.vs.Q, 1)))
        return out
