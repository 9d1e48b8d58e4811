"""The state of a distributed lattice for checkpoints, a mixin of ``DistributedSimulation``
(``lbgen.parallel.simulation``), any D: ``state()`` / ``restore()`` gather / scatter the
populations through rank 0 (a one-file checkpoint); ``state_pieces()`` gives the rank's owned
populations with their global offset (each rank writes its piece) and ``restore_pieces`` has
every rank read the pieces that overlap its block, so a checkpoint written by P ranks resumes on
P' ranks with no rank holding the lattice's populations.  Solid cells of a mask hold no
populations.  The ghosts of a restored block are filled by wrapping the block (finite values
the first exchange replaces)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from lbgen.parallel.mpi import agree
from lbgen.simulation.parameters import SimulationError


class DistributedState:
    """Checkpoints of one rank's block (uses the lattice's ``sim``, ``shape``, ``origin``,
    ``size``, ``mask``, ``_owned``, ``_indices``, ``_gather_blocks`` and ``_scatter_blocks``)."""

    def state(self) -> Optional[np.ndarray]:
        """The populations (Q, *shape) in the working precision on rank 0, None elsewhere
        (collective): each rank's owned block gathered."""
        return self._gather_blocks(self._owned(self.sim.state()))

    def populations(self) -> Optional[np.ndarray]:
        s = self.state()
        return None if s is None else self.sim.program.codec.decode(s)

    def _expected(self) -> tuple:
        return (self.sim.vs.Q,) + self.shape

    def restore(self, populations: Optional[np.ndarray], time_step: Optional[int]) -> None:
        """Rank 0's saved state (any rank count wrote it), each rank's extended block scattered
        (collective); bit-identical to never having stopped."""
        def cut(rank):
            if cut.saved is None:
                from lbgen.simulation.boundaries import checked_saved_state
                from lbgen.simulation.interface import count
                count("restore: time_step", time_step)
                cut.saved = checked_saved_state(populations, self._expected(), self.sim.dtype, self.mask)
            return cut.saved[(slice(None),) + np.ix_(*self._indices(rank))], int(time_step)
        cut.saved = None
        self._restore_block(*self._scatter_blocks(cut))

    def set_populations(self, f: Optional[np.ndarray]) -> None:
        """Rank 0's populations (Q, *shape), checked there, each rank's extended block scattered
        (collective; the other ranks' arguments are ignored)."""
        def cut(rank):
            if cut.checked is None:
                from lbgen.simulation.interface import checked_populations
                fluid = None if self.mask is None else self.mask == 0
                cut.checked = checked_populations(f, self._expected(), self.sim.program.codec.range_dtype, fluid)
            return cut.checked[(slice(None),) + np.ix_(*self._indices(rank))]
        cut.checked = None
        block, error = self._scatter_blocks(cut), None
        try:
            self.sim.set_populations(block)
        except Exception as e:  # noqa: BLE001 - made collective
            error = e
        agree(self.comm, error)

    def _restore_block(self, block: Optional[np.ndarray], step: int) -> None:
        error = None
        try:
            self.sim.restore(np.ascontiguousarray(block), step)
        except Exception as e:  # noqa: BLE001 - made collective
            error = e
        agree(self.comm, error)
        self.time_step = int(step)

    # --- checkpoint pieces: no rank gathers the populations --------------------------------
    @property
    def lattice(self) -> tuple:
        """The global sizes the pieces tile."""
        return self.shape

    def state_pieces(self) -> list:
        """This rank's pieces of a checkpoint: ``[(origin, (Q, *size) owned populations)]`` in
        the working precision, layout-independent (``lbgen.run.checkpoint.write_pieces``).  The
        populations are a ``ChunkedArray``: streamed from the rank's buffer one population's
        slab at a time (``Simulation.state_chunks``, its ghosts cut off), as the one-process
        checkpoint, so no rank holds a copy of its block; the file is the same, byte for byte."""
        from lbgen.run.checkpoint_file import ChunkedArray
        return [(self.origin, ChunkedArray((self.sim.vs.Q, *self.size), self.sim.dtype, self._owned_chunks))]

    def _owned_chunks(self):
        """The owned populations in the C order of their (Q, *size) array: each slab of x planes
        ``state_chunks`` gives (one population's, of the extended block) cut to the owned planes
        and, across them, to the owned cells."""
        lx, gx, nx = self.sim.shape[0], self.ghost_low[0], self.size[0]
        across = (slice(None),) + tuple(slice(g, g + n) for g, n in zip(self.ghost_low[1:], self.size[1:]))
        x = 0                                  # the first x plane of the next slab (of this population)
        for slab in self.sim.state_chunks():
            a, b = max(x, gx), min(x + slab.shape[0], gx + nx)
            if a < b:
                yield np.ascontiguousarray(slab[(slice(a - x, b - x),) + across[1:]])
            x = (x + slab.shape[0]) % lx

    def restore_pieces(self, saved) -> None:
        """Continue from a pieces checkpoint (collective): ``saved`` has ``shape``, ``dtype``,
        ``step`` and ``read(offset, extent)`` (``lbgen.run.checkpoint.CheckpointPieces``); each
        rank reads the pieces that overlap its block only, and every rank checks before any
        rank changes its state.  Bit-identical to never having stopped."""
        expected, error, local = self._expected(), None, None
        try:
            if tuple(saved.shape) != expected:
                raise SimulationError(f"saved populations have shape {tuple(saved.shape)}; this run needs {expected}")
            if saved.dtype != self.sim.dtype:
                raise SimulationError(f"saved populations are {saved.dtype}; this run computes in "
                                      f"{np.dtype(self.sim.dtype)} (precision mismatch)")
            local = saved.read(self.origin, self.size)
        except Exception as e:  # noqa: BLE001 - made collective
            error = e
        agree(self.comm, error)          # every rank has its block before any rank changes its state
        pad = [(0, 0)] + list(zip(self.ghost_low, self.ghost_high))
        self._restore_block(None if local is None else np.pad(local, pad, mode="wrap"), int(saved.step))
