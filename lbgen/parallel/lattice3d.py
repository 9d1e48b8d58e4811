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
Isend/Irecv, packs the block back (the pack kernel) and advances k steps (one ``fused_tb``
sweep where the block's Simulation3D blocks: C, fused).  With host
buffers (the C runtime) the slabs are read and written in place instead, through the
layout's site indices (the step's halo kernel refreshes the halo copies).  The ghost sites
are computed redundantly; after step s only sites within (k - s) H of the owned block are
exact, so the owned block is exact after k steps: bit-identical to one process in strict
mode.  Whole-block unpack/pack per exchange (device buffers) is host work of the order of
a step.

Walls, lids and masks: walls and lids on unsplit axes only (each block holds both faces);
a mask is cut per block (ghosts included).  ``fields()`` gathers the five owned field arrays
(the fields kernel of each rank) to rank 0; ``set_fields`` scatters rank 0's fields.  For a
run (``lbgen.run.driver.Run``): ``diagnostic_rows`` (each rank's kernel over its owned
fluid sites, combined on rank 0), ``check_finite`` (collective), ``state``/``restore`` (the
populations of the owned blocks through rank 0: checkpoints of any rank count).
"""
from __future__ import annotations

import collections
from typing import Dict, Optional

import numpy as np

from lbgen.parallel.mpi import (TAG_DOWNWARD, TAG_UPWARD, agree, collective, parse_ranks_grid, root_call,
                                slab_starts, slab_widths)
from lbgen.codegen.diagnostics import ROW_QUANTITIES3D
from lbgen.model.catalog import AXES
from lbgen.simulation.parameters import SimulationError

FIELDS3D = ("rho", "ux", "uy", "uz", "T")


def rank_grid3d(size: int, shape, halo: int, grid=None, depth: int = 1, walled=()) -> tuple:
    """(PX, PY, PZ) of `size` ranks for a lattice of `shape`, checked before any work: the
    product is the rank count, every split axis has sub-domains of at least depth x halo
    planes, and no walled axis is split.  None: MPI_Dims_create, else the first valid
    factorisation with the fewest halo sites."""
    need = depth * halo

    def problems(g):
        out = [f"{a.upper()}={n} split over {p} ranks leaves sub-domains of {n // p} planes, fewer than the "
               f"{need} the halo needs ({depth} x {halo}: time block x largest hop)"
               for a, n, p in zip(AXES, shape, g) if p > 1 and n // p < need]
        out += [f"it splits {a.upper()}, a walled axis (walls and lids stay on unsplit axes)"
                for a, p in zip(AXES, g) if p > 1 and a in walled]
        return out
    name = "x".join
    if grid is not None:
        if int(np.prod(grid)) != size:
            raise collective(SimulationError(f"--ranks-grid {name(map(str, grid))} has {int(np.prod(grid))} ranks "
                                             f"but mpiexec started {size}"))
        bad = problems(grid)
        if bad:
            raise collective(SimulationError(f"--ranks-grid {name(map(str, grid))} on "
                                             f"{' x '.join(map(str, shape))}: {'; '.join(bad)}"))
        return tuple(grid)
    from mpi4py import MPI
    fixed = [1 if a in walled else 0 for a in AXES]
    first = tuple(MPI.Compute_dims(size, fixed))
    triples = [(a, b, size // (a * b)) for a in range(1, size + 1) for b in range(1, size + 1)
               if size % (a * b) == 0]
    triples.sort(key=lambda g: sum(int(np.prod(shape)) // n * p for n, p in zip(shape, g)))
    for g in [first] + triples:
        if not problems(g):
            return g
    raise collective(SimulationError(f"{size} MPI ranks do not fit the {' x '.join(map(str, shape))} lattice: "
                                     f"the grid {name(map(str, first))}: {'; '.join(problems(first))}"))


class DistributedSimulation3D:
    """One rank's block of an LX x LY x LZ lattice over a PX x PY x PZ grid of the ranks of
    `comm` (see the module doc).  Same keywords as ``Simulation3D`` (the sizes and the mask
    global), plus ``ranks_grid`` ('auto'/None, 'PXxPYxPZ' or a triple), ``time_block`` and
    ``through_pack`` (see ``exchange``)."""

    def __init__(self, comm, lx: int, ly: int, lz: int, *, ranks_grid=None, time_block: int = 1, mask=None,
                 through_pack: bool = False, **kw):
        from lbgen.codegen.spec import time_block_value
        from lbgen.model.velocity_set import velocity_set
        from lbgen.simulation.lattice3d import Simulation3D, voxel_mask, wall_axes
        self.comm, self.rank, self.nranks = comm, comm.rank, comm.size
        self.shape = (lx, ly, lz)
        try:
            depth = time_block_value(time_block, allow_auto=False)
        except ValueError as e:
            raise collective(SimulationError(str(e))) from None
        H = velocity_set(kw.get("velocity_set", "d3q19")).max_hop
        walled = wall_axes(kw.get("walls"))
        self.dims = rank_grid3d(self.nranks, self.shape, H, parse_ranks_grid(ranks_grid, 3), depth, walled)
        self.cart = comm.Create_cart(list(self.dims), periods=[True] * 3, reorder=False)
        self.coords = tuple(self.cart.Get_coords(self.rank))
        self.neighbours = [self.cart.Shift(d, 1) for d in range(3)]          # (low, high) per axis
        self.widths = [slab_widths(n, p) for n, p in zip(self.shape, self.dims)]
        self.starts = [slab_starts(n, p) for n, p in zip(self.shape, self.dims)]
        self.origin = tuple(self.starts[d][self.coords[d]] for d in range(3))
        self.size = tuple(self.widths[d][self.coords[d]] for d in range(3))
        self.ghost = tuple(depth * H if p > 1 else 0 for p in self.dims)
        self.halo_width = depth * H
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
            self.sim = Simulation3D(*self.extended, mask=local_mask, time_block=local_depth, **kw)
        except Exception as e:  # noqa: BLE001 - made collective below
            error = e
        agree(comm, error)
        # the diagnostics skip the ghost sites (as solid voxels): each rank reduces its owned ones
        skip = np.ones(self.extended, np.uint8)
        self._owned(skip)[...] = 0 if local_mask is None else self._owned(local_mask)
        self._skip = skip

    @property
    def extended(self) -> tuple:
        return tuple(n + 2 * g for n, g in zip(self.size, self.ghost))

    def _indices(self, rank: Optional[int] = None):
        """Global indices (periodic) of the extended block of `rank` (default: this one), per axis."""
        coords = self.coords if rank is None else self.cart.Get_coords(rank)
        out = []
        for d in range(3):
            s, w, g = self.starts[d][coords[d]], self.widths[d][coords[d]], self.ghost[d]
            out.append(np.arange(s - g, s + w + g) % self.shape[d])
        return out

    def _owned(self, a: np.ndarray) -> np.ndarray:
        g, n = self.ghost, self.size
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

    def _post(self, d: int, send_low, send_high):
        from mpi4py import MPI
        low, high = self.neighbours[d]
        recv_low, recv_high = np.empty_like(send_low), np.empty_like(send_high)
        c = self.comm
        MPI.Request.Waitall([c.Irecv(recv_low, source=low, tag=TAG_UPWARD),
                             c.Irecv(recv_high, source=high, tag=TAG_DOWNWARD),
                             c.Isend(send_high, dest=high, tag=TAG_UPWARD),
                             c.Isend(send_low, dest=low, tag=TAG_DOWNWARD)])
        self.messages[f"{AXES[d]} messages"] += 2
        self.messages[f"{AXES[d]} bytes"] += send_low.nbytes + send_high.nbytes
        return recv_low, recv_high

    def _exchange_in_place(self, f: np.ndarray) -> None:
        D = self.halo_width
        for d in range(3):
            if self.dims[d] == 1:
                continue
            g, n = self.ghost[d], self.size[d]
            recv_low, recv_high = self._post(d, f[self._slab_index(d, g, g + D)],
                                             f[self._slab_index(d, g + n - D, g + n)])
            f[self._slab_index(d, g - D, g)] = recv_low
            f[self._slab_index(d, g + n, g + n + D)] = recv_high

    def _exchange_unpacked(self) -> None:
        prog = self.sim.program
        a = prog.unpack(self.sim.f)
        D = self.halo_width
        for d in range(3):
            if self.dims[d] == 1:
                continue
            g, n = self.ghost[d], self.size[d]

            def slab(lo, hi):
                index = [slice(None)] * 4
                index[d + 1] = slice(lo, hi)
                return tuple(index)
            recv_low, recv_high = self._post(d, np.ascontiguousarray(a[slab(g, g + D)]),
                                             np.ascontiguousarray(a[slab(g + n - D, g + n)]))
            a[slab(g - D, g)] = recv_low
            a[slab(g + n, g + n + D)] = recv_high
        prog.pack(a, self.sim.f)

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
    walls = property(lambda self: self.sim.walls)
    lid = property(lambda self: self.sim.lid)
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
        g, n = self.ghost, self.size
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
                    x, y, z = ((self.origin[d] + site[d] - self.ghost[d]) % self.shape[d] for d in range(3))
                    error = self.sim.divergence(x, y, z, site[3], where=f"on rank {self.rank}")
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
        pad = [(0, 0)] + [(g, g) for g in self.ghost]
        error = None
        try:
            self.sim.restore(np.ascontiguousarray(np.pad(local, pad, mode="wrap")), saved.step)
        except Exception as e:  # noqa: BLE001 - made collective
            error = e
        agree(self.comm, error)
        self.time_step = int(saved.step)
