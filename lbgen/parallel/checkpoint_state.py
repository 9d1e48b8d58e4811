"""The state of a distributed lattice for checkpoints, a mixin of ``DistributedSimulation``
(``lbgen.parallel.simulation``; the 3D class has its own methods until the two classes are one): ``state()`` / ``restore()`` gather / scatter the populations
through rank 0 (a one-file checkpoint); ``state_pieces()`` gives the rank's owned populations
with their global offset (each rank writes its piece) and ``restore_pieces`` has every rank
read the pieces that overlap its block, so a checkpoint written by P ranks resumes on P' ranks
with no rank holding the lattice's populations.  Solid cells of a mask hold no populations."""
from __future__ import annotations

from typing import Optional

import numpy as np

from lbgen.parallel.mpi import agree, root_call
from lbgen.simulation.parameters import SimulationError


class DistributedState:
    """Checkpoints of one rank's block (uses the lattice's ``_gather``, ``_scatter``,
    ``_local_state``, ``_region_input`` and ``_solid_zeroed``)."""

    def state(self) -> Optional[np.ndarray]:
        """Global (Q, LX, LY) populations in the working precision on rank 0, None elsewhere
        (checkpoints)."""
        return self._gather(self._local_state())

    def populations(self) -> Optional[np.ndarray]:
        s = self.state()
        return None if s is None else s.astype(np.float64)

    def restore(self, populations: Optional[np.ndarray], time_step: Optional[int]) -> None:
        """Rank 0's saved state, scattered; bit-identical to never having stopped."""
        expected = (self.vs.Q, self.lx, self.ly)

        def check():
            self._check_time_step(time_step)
            from lbgen.simulation.boundaries import checked_saved_state
            return self._solid_zeroed(checked_saved_state(populations, expected, self.dtype, self.mask))
        p = root_call(self.comm, check)
        self._upload_state(self._scatter(p, self.vs.Q, self.dtype))
        self.time_step = int(self.comm.bcast(time_step, root=0))
        self._fields_set = True

    def _upload_state(self, local: np.ndarray) -> None:
        """The owned (Q, wx, wy) populations (working precision) into every region."""
        for r in self.regions:
            r.f = r.program.upload(r.program.layout.pack(self._region_input(local, r)), r.f)

    # --- checkpoint pieces: no rank gathers the populations --------------------------------
    @property
    def lattice(self) -> tuple:
        """The global sizes (LX, LY) the pieces tile."""
        return (self.lx, self.ly)

    def state_pieces(self) -> list:
        """This rank's pieces of a checkpoint: ``[((x0, y0), (Q, wx, wy) owned populations)]`` in
        the working precision, layout-independent (``lbgen.run.checkpoint.write_pieces``)."""
        return [((self.x0, self.y0), self._local_state())]

    def restore_pieces(self, saved) -> None:
        """Continue from a pieces checkpoint (collective): ``saved`` has ``shape``, ``dtype``,
        ``step`` and ``read(offset, extent)`` (``lbgen.run.checkpoint.CheckpointPieces``); each
        rank reads the pieces that overlap its block only, and every rank checks before any
        rank changes its state.  Bit-identical to never having stopped."""
        expected, error, local = (self.vs.Q, self.lx, self.ly), None, None
        try:
            self._check_time_step(saved.step)
            if tuple(saved.shape) != expected:
                raise SimulationError(f"saved populations have shape {tuple(saved.shape)}; this run needs {expected}")
            if saved.dtype != self.dtype:
                raise SimulationError(f"saved populations are {saved.dtype}; this run computes in "
                                      f"{np.dtype(self.dtype)} (precision mismatch)")
            local = saved.read((self.x0, self.y0), (self.local_lx, self.local_ly))
        except Exception as e:  # noqa: BLE001 - made collective
            error = e
        agree(self.comm, error)
        self._upload_state(local)
        self.time_step = int(saved.step)
        self._fields_set = True
