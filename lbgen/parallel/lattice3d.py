"""Several MPI ranks on a 3D lattice: ``DistributedSimulation3D``, one rank's block of a
PX x PY x PZ Cartesian grid (``MPI_Cart``, periodic; auto: MPI_Dims_create of 3).

Each rank runs a ``lbgen.simulation.Simulation3D`` (only its public API: the program's
pack/unpack kernels, set_fields, fields, step) on its block extended by g = k H ghost
planes on each side of every split axis (H the largest hop, k the time block; an unsplit
axis has no ghosts: the halo kernel wraps it locally).  Every k steps the rank unpacks its
populations (the unpack kernel), trades D = k H thick slabs of owned planes with its two
neighbours along X, then Y, then Z -- each slab spans the other axes' ghosts, which the
earlier axes have just filled, so edges and corners travel through the consecutive
exchanges and no diagonal message is sent (seed 002, Fig. 1) -- with non-blocking
Isend/Irecv (``lbgen.parallel.exchange``, the 2D lattice's too), packs the block back (the pack kernel) and advances k steps (one ``fused_tb``
sweep where the block's Simulation3D blocks: C, fused).  With host
buffers (the C runtime) the slabs are read and written in place instead, through the
layout's site indices (the step's halo kernel refreshes the halo copies).  The ghost sites
are computed redundantly; after step s only sites within (k - s) H of the owned block are
exact, so the owned block is exact after k steps: bit-identical to one process in strict
mode.  Whole-block unpack/pack per exchange (device buffers) is host work of the order of
a step.

Walls, lids and masks on any axis, split or not: a rank holds a wall (lid) face only where
its block touches that global face (its ``Simulation3D`` gets the per-face wall switches of
the faces it holds), and has no ghost planes on that side; an internal face is bulk, fed by
the neighbour's slabs.  Along a split walled axis the ranks at the walls send (receive) no
slab across the wall (``lbgen.parallel.decomposition.ghost_sides``), with or without time blocks: the ghosts of a time
block lie on the internal sides only, never beyond a wall.  A mask is cut per block (ghosts
included).  ``fields()`` gathers the five owned field arrays
(the fields kernel of each rank) to rank 0; ``set_fields`` scatters rank 0's fields.  For a
run (``lbgen.run.driver.Run``): ``diagnostic_rows`` (each rank's kernel over its owned
fluid sites, combined on rank 0), ``check_finite`` (collective), ``state``/``restore`` (the
populations of the owned blocks through rank 0: checkpoints of any rank count).
"""
from __future__ import annotations

import collections
from typing import Dict, Optional

import numpy as np

from lbgen.parallel.decomposition import (block_indices, ghost_sides, paired_walls, parse_ranks_grid, rank_grid, slab_starts,
                                          slab_widths)
from lbgen.parallel.exchange import trade
from lbgen.parallel.mpi import agree, collective, root_call
from lbgen.codegen.diagnostics import ROW_QUANTITIES3D
from lbgen.model.catalog import AXES, SIDES
from lbgen.simulation.parameters import SimulationError

FIELDS3D = ("rho", "ux", "uy", "uz", "T")


class DistributedSimulation3D:
    """One rank's block of an LX x LY x LZ lattice over a PX x PY x PZ grid of the ranks of
    `comm` (see the module doc).  Same keywords as ``Simulation3D`` (the sizes and the mask
    global), plus ``ranks_grid`` ('auto'/None, 'PXxPYxPZ' or a triple), ``time_block`` and
    ``through_pack`` (see ``exchange``)."""

    def __init__(self, comm, lx: int, ly: int, lz: int, *, ranks_grid=None, time_block: int = 1, mask=None,
                 through_pack: bool = False, **kw):
        from lbgen.codegen.spec import time_block_value
        from lbgen.model.velocity_set import velocity_set
        from lbgen.simulation.boundaries import lid_faces, voxel_mask, wall_faces
        from lbgen.simulation.runner import Simulation
        self.comm, self.rank, self.nranks = comm, comm.rank, comm.size
        self.shape = (lx, ly, lz)
        try:
            depth = time_block_value(time_block, allow_auto=False)
        except ValueError as e:
            raise collective(SimulationError(str(e))) from None
        H = velocity_set(kw.get("velocity_set", "d3q19")).max_hop
        try:
            #: the lattice's wall faces (axis, side); each rank's Simulation3D holds those its block touches
            self.wall_faces = wall_faces(kw.get("walls"))
            paired_walls(self.wall_faces)
            #: the lattice's moving walls {(axis, side): (ux, uy, uz)}, checked on every rank
            self.lid = lid_faces(kw.get("lid"), self.wall_faces)
        except SimulationError as e:
            raise collective(e) from None
        walled = tuple(dict.fromkeys(a for a, _ in self.wall_faces))
        self.dims = rank_grid(self.nranks, self.shape, H, parse_ranks_grid(ranks_grid, 3), depth, held=walled)
        self.cart = comm.Create_cart(list(self.dims), periods=[True] * 3, reorder=False)
        self.coords = tuple(self.cart.Get_coords(self.rank))
        self.neighbours = [self.cart.Shift(d, 1) for d in range(3)]          # (low, high) per axis
        self.widths = [slab_widths(n, p) for n, p in zip(self.shape, self.dims)]
        self.starts = [slab_starts(n, p) for n, p in zip(self.shape, self.dims)]
        self.origin = tuple(self.starts[d][self.coords[d]] for d in range(3))
        self.size = tuple(self.widths[d][self.coords[d]] for d in range(3))
        self.halo_width = depth * H
        #: per axis (receive low, receive high, send low, send high): ``ghost_sides``
        self.sides = [ghost_sides(a, c, p, self.wall_faces) for a, c, p in zip(AXES, self.coords, self.dims)]
        #: ghost planes per axis on the low and the high side (none across a wall face)
        self.ghost_low = tuple(depth * H * s[0] for s in self.sides)
        self.ghost_high = tuple(depth * H * s[1] for s in self.sides)
        held = tuple(face for face in self.wall_faces if not self.sides[AXES.index(face[0])][SIDES.index(face[1])]
                     or self.dims[AXES.index(face[0])] == 1)
        if kw.get("walls") is not None:
            kw = dict(kw, walls=held)
        if kw.get("lid") is not None:
            kw = dict(kw, lid={"-".join(face): u for face, u in self.lid.items() if face in held})
        self.time_block = depth
        self.time_step = 0
        self.messages = collections.Counter()
        #: exchange through the unpack/pack kernels (the whole block) even where the buffers are
        #: host arrays that the slabs could be read from in place (device buffers always do)
        self.through_pack = bool(through_pack)
        #: the global voxel mask (uint8) or None; each rank's Simulation3D holds its cut
        self.mask = None
        # the rank's own sweep: fused_tb where it runs (C, fused), else single steps
        local_depth = depth if str(kw.get("backend", "c")).lower() == "c" and kw.get("fused", True) else 1
        error = None
        try:
            self.mask = None if mask is None else voxel_mask(mask, self.shape)
            local_mask = None if mask is None else self.mask[np.ix_(*self._indices())]
            self.sim = Simulation(*self.extended, mask=local_mask, time_block=local_depth, **kw)
        except Exception as e:  # noqa: BLE001 - made collective below
            error = e
        agree(comm, error)
        # the diagnostics skip the ghost sites (as solid voxels): each rank reduces its owned ones
        skip = np.ones(self.extended, np.uint8)
        self._owned(skip)[...] = 0 if local_mask is None else self._owned(local_mask)
        self._skip = skip

    @property
    def extended(self) -> tuple:
        return tuple(n + lo + hi for n, lo, hi in zip(self.size, self.ghost_low, self.ghost_high))

    def _indices(self, rank: Optional[int] = None):
        """Global indices (periodic) of the extended block of `rank` (default: this one), per axis."""
        coords = self.coords if rank is None else self.cart.Get_coords(rank)
        return block_indices(self.shape, self.dims, coords, self.halo_width, self.wall_faces)

    def _owned(self, a: np.ndarray) -> np.ndarray:
        g, n = self.ghost_low, self.size
        return a[..., g[0]:g[0] + n[0], g[1]:g[1] + n[1], g[2]:g[2] + n[2]]

    # --- the exchange --------------------------------------------------------------------------
    def _slab_index(self, d: int, lo: int, hi: int) -> np.ndarray:
        """Flat buffer indices (the layout's ``site_index``) of every population at the sites of
        planes lo..hi-1 along axis d, the other axes over their extended extent, in (p, x, y, z)
        order: the same order on both sides of a message, whatever the layouts."""
        key = (d, lo, hi)
        cache = self.__dict__.setdefault("_slabs", {})
        if key not in cache:
            ranges = [np.arange(n) for n in self.extended]
            ranges[d] = np.arange(lo, hi)
            p = np.arange(self.sim.vs.Q)[:, None, None, None]
            x, y, z = (r.reshape(shape) for r, shape in zip(ranges, ((1, -1, 1, 1), (1, 1, -1, 1), (1, 1, 1, -1))))
            cache[key] = np.ascontiguousarray(self.sim.program.layout.site_index(p, x, y, z).ravel())
        return cache[key]

    def exchange(self) -> None:
        """Ghost slabs of every split axis from the neighbours, X then Y then Z (collective).

        Host buffers: the slabs are read and written in place through the layout's site
        indices (the step's halo kernel then refreshes the halo copies); device buffers go
        through the unpack and pack kernels (the whole block)."""
        if not any(p > 1 for p in self.dims):
            return
        if isinstance(self.sim.f, np.ndarray) and not self.through_pack:
            return self._exchange_in_place(self.sim.f)
        return self._exchange_unpacked()

    def _trade(self, d: int, read) -> tuple:
        """The slabs of axis d (``lbgen.parallel.exchange``): read(lo, hi) gives the owned planes
        lo..hi-1; returns the (low, high) ghost slabs that arrived (None where none does)."""
        D, g, n = self.halo_width, self.ghost_low[d], self.size[d]
        return trade(self.comm, self.messages, AXES[d], self.neighbours[d],
                     (lambda: read(g, g + D), lambda: read(g + n - D, g + n)), self.sides[d])

    def _exchange_in_place(self, f: np.ndarray) -> None:
        for d in range(3):
            if self.dims[d] > 1:
                self._write(d, self._trade(d, lambda lo, hi: f[self._slab_index(d, lo, hi)]),
                            lambda lo, hi, data: f.__setitem__(self._slab_index(d, lo, hi), data))

    def _exchange_unpacked(self) -> None:
        prog = self.sim.program
        a = prog.unpack(self.sim.f)
        for d in range(3):
            if self.dims[d] == 1:
                continue

            def slab(lo, hi):
                index = [slice(None)] * 4
                index[d + 1] = slice(lo, hi)
                return tuple(index)
            self._write(d, self._trade(d, lambda lo, hi: a[slab(lo, hi)]),
                        lambda lo, hi, data: a.__setitem__(slab(lo, hi), data))
        prog.pack(a, self.sim.f)

    def _write(self, d: int, arrived, write) -> None:
        """The ghost slabs that arrived along axis d into the ghost planes on either side."""
        D, g, n = self.halo_width, self.ghost_low[d], self.size[d]
        for (lo, hi), data in zip(((g - D, g), (g + n, g + n + D)), arrived):
            if data is not None:
                write(lo, hi, data)

    def step(self, n: int = 1) -> None:
        """n steps (collective): an exchange, then up to time_block steps of the rank's block."""
        while n > 0:
            m = min(self.time_block, n)
            self.exchange()
            self.sim.step(m)
            self.time_step += m
            n -= m

    # --- distributed state ---------------------------------------------------------------------
    def set_fields(self, rho=None, ux=None, uy=None, uz=None, T=1.0) -> None:
        """Rank 0's fields (numbers or (LX, LY, LZ) arrays), each rank's extended block scattered;
        the other ranks' arguments are ignored (collective)."""
        def blocks():
            arrays = [np.broadcast_to(np.asarray(v, dtype=np.float64), self.shape) for v in (rho, ux, uy, uz, T)]
            return [[a[np.ix_(*self._indices(r))] for a in arrays] for r in range(self.nranks)]
        everyone = root_call(self.comm, blocks)          # checked and cut on rank 0 (collective)
        mine = self.comm.scatter(everyone, root=0)
        error = None
        try:
            self.sim.set_fields(*mine)
        except Exception as e:  # noqa: BLE001 - made collective below
            error = e
        agree(self.comm, error)

    def fields(self) -> Optional[Dict[str, np.ndarray]]:
        """The physical fields of the lattice on rank 0 (the five owned arrays of every rank's
        fields kernel), None elsewhere (collective)."""
        mine = np.stack([self._owned(v) for v in (self.sim.fields()[k] for k in FIELDS3D)])
        parts = self.comm.gather((self.origin, mine), root=0)
        if self.rank != 0:
            return None
        out = np.empty((len(FIELDS3D),) + self.shape)
        for (x0, y0, z0), block in parts:
            _, nx, ny, nz = block.shape
            out[:, x0:x0 + nx, y0:y0 + ny, z0:z0 + nz] = block
        return dict(zip(FIELDS3D, out))

    # --- the run driver's interface (lbgen.run.driver.Run) ---------------------------------------
    spec = property(lambda self: self.sim.spec)
    source = property(lambda self: self.sim.source)
    vs = property(lambda self: self.sim.vs)
    program = property(lambda self: self.sim.program)
    runtime = property(lambda self: self.sim.runtime)
    dtype = property(lambda self: self.sim.dtype)
    walls = property(lambda self: tuple(dict.fromkeys(a for a, _ in self.wall_faces)),
                     doc="The lattice's wall axes (as Simulation3D's; each rank's block holds some faces).")
    lx = property(lambda self: self.shape[0], doc="The global lattice's sizes (as Simulation3D's).")
    ly = property(lambda self: self.shape[1])
    lz = property(lambda self: self.shape[2])
    sweeps = property(lambda self: self.sim.sweeps, doc="This rank's sweeps (every rank runs the same ones).")

    def synchronize(self) -> None:
        """The ranks' kernels return when done: nothing to wait for."""

    def grid_text(self) -> str:
        return "x".join(map(str, self.dims))

    def diagnostic_rows(self) -> Optional[np.ndarray]:
        """The (LY*LZ, ND3) rows of the lattice on rank 0, None elsewhere (collective): each rank's
        diagnostics kernel over its owned fluid sites (the ghosts skipped as solid voxels), its
        owned lines sent to rank 0, which combines the parts of a line along X (sums, max, min;
        in order of X: with X unsplit every line is one rank's, the bits of one process)."""
        rows = self.program.diagnostics(self.sim.f, self._skip, force=self.sim.force)
        ext = self.extended
        g, n = self.ghost_low, self.size
        lines = rows.reshape(ext[1], ext[2], -1)[g[1]:g[1] + n[1], g[2]:g[2] + n[2]]
        parts = self.comm.gather((self.origin, np.ascontiguousarray(lines)), root=0)
        if self.rank != 0:
            return None
        out = None
        for (x0, y0, z0), block in sorted(parts, key=lambda p: p[0][0]):
            if out is None:
                out = np.full((self.shape[1], self.shape[2], block.shape[-1]), np.nan)
                seen = np.zeros(self.shape[1:], bool)
            ny, nz = block.shape[:2]
            where = (slice(y0, y0 + ny), slice(z0, z0 + nz))
            first = ~seen[where]
            target = out[where]
            for j, (_, how) in enumerate(ROW_QUANTITIES3D):
                combined = {"sum": np.add, "max": np.fmax, "min": np.fmin}[how](target[..., j], block[..., j])
                target[..., j] = np.where(first, block[..., j], combined)
            out[where] = target
            seen[where] = True
        return out.reshape(self.shape[1] * self.shape[2], -1)

    def check_finite(self) -> None:
        """Every rank checks its block (collective); a failure is raised on every rank, naming
        the first bad owned site in global lattice coordinates and the rank that holds it."""
        from lbgen.codegen.diagnostics import healthy
        error = None
        try:
            if not healthy(self.sim.diagnostics()):
                site = self.sim.first_bad_site(skip=self._skip)      # owned fluid sites only
                if site is not None:
                    at = tuple((self.origin[d] + site[0][d] - self.ghost_low[d]) % self.shape[d] for d in range(3))
                    error = self.sim.divergence(at, *site[1:], where=f"on rank {self.rank}")
        except Exception as e:  # noqa: BLE001 - made collective below
            error = e
        report = str(error) if isinstance(error, SimulationError) else None   # a divergence report
        reports = [m for m in self.comm.allgather(report) if m is not None]
        if reports:                          # the first failing rank's report, once, on every rank
            raise collective(SimulationError(reports[0])) from error
        agree(self.comm, error)

    def state(self) -> Optional[np.ndarray]:
        """The populations (Q, LX, LY, LZ) on rank 0 for a checkpoint, None elsewhere (collective):
        each rank's owned block gathered, as the 2D DistributedSimulation's checkpoints."""
        mine = np.ascontiguousarray(self._owned(self.sim.state()))
        parts = self.comm.gather((self.origin, mine), root=0)
        if self.rank != 0:
            return None
        out = np.empty((self.vs.Q,) + self.shape, dtype=mine.dtype)
        for (x0, y0, z0), block in parts:
            _, nx, ny, nz = block.shape
            out[:, x0:x0 + nx, y0:y0 + ny, z0:z0 + nz] = block
        return out

    def restore(self, populations: Optional[np.ndarray], time_step: Optional[int]) -> None:
        """Rank 0's saved state (any rank count wrote it), each rank's extended block scattered
        (collective); bit-identical to never having stopped."""
        def blocks():
            a = np.asarray(populations)
            expected = (self.vs.Q,) + self.shape
            if a.shape != expected:
                raise SimulationError(f"saved populations have shape {a.shape}; this run needs {expected}")
            return [(a[(slice(None),) + np.ix_(*self._indices(r))], int(time_step)) for r in range(self.nranks)]
        everyone = root_call(self.comm, blocks)
        block, step = self.comm.scatter(everyone, root=0)
        error = None
        try:
            self.sim.restore(block, step)
        except Exception as e:  # noqa: BLE001 - made collective below
            error = e
        agree(self.comm, error)
        self.time_step = step

    # --- checkpoint pieces: no rank gathers the populations --------------------------------
    @property
    def lattice(self) -> tuple:
        """The global sizes (LX, LY, LZ) the pieces tile."""
        return self.shape

    def state_pieces(self) -> list:
        """This rank's pieces of a checkpoint: ``[((x0, y0, z0), (Q, nx, ny, nz) owned
        populations)]`` in the working precision (``lbgen.run.checkpoint.write_pieces``)."""
        return [(self.origin, np.ascontiguousarray(self._owned(self.sim.state())))]

    def restore_pieces(self, saved) -> None:
        """Continue from a pieces checkpoint (collective; see DistributedSimulation.restore_pieces):
        each rank reads the pieces that overlap its block; the ghosts are filled by wrapping the
        block (finite values the first exchange replaces).  Bit-identical to never having stopped."""
        expected, error, local = (self.sim.vs.Q,) + self.shape, None, None
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
        error = None
        try:
            self.sim.restore(np.ascontiguousarray(np.pad(local, pad, mode="wrap")), saved.step)
        except Exception as e:  # noqa: BLE001 - made collective
            error = e
        agree(self.comm, error)
        self.time_step = int(saved.step)
