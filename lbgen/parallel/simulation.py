"""Several MPI ranks: one rank's block of a lattice split over a Cartesian grid of PX x PY
ranks (see lbgen.parallel.mpi for the launch, the collective errors and the grid rules).

Decomposition
    ``MPI_Cart`` over PX x PY ranks (``ranks_grid``: (PX, PY), or None for MPI_Dims_create),
    periodic in both axes; rank (cx, cy) owns the columns [x0, x0 + wx) and the rows
    [y0, y0 + wy), w = N // P plus one for the first N % P coordinates of that axis.

X slabs (PY = 1, time block 1): overlap as before
    the slab is split into regions [left edge | bulk | right edge] (or host | device | host
    with ``device_backend``); a step fills every region's Y halos, posts the non-blocking
    exchange (Isend/Irecv) of the slab's outer H padded columns with both neighbours,
    copies the halos between the local regions, advances the bulk *while the messages
    fly*, waits, writes the received halos and advances the edges.

Blocks (PY > 1, or a time block k > 1): one region per rank, no overlap
    the rank's program runs on its block extended by g = (k-1) H ghost columns (rows) on
    each side of every split axis (H the largest hop; g = 0 for k = 1 and on an unsplit
    axis, which the halo kernel wraps locally); g = k H where the C backend runs the k steps
    as one sweep through cache (``fused_tb``, ``sweep``), which wraps the block's ends by
    pointer instead of reading the halo.  Every k steps: the halo kernel, then the
    exchange of D = k H wide halos one axis after the other -- X first (padded columns,
    ``read_columns_plain``), then Y (padded rows over every column, X halo and ghosts
    included, ``read_rows_plain``), so the corner blocks arrive through the two exchanges
    and no diagonal message is sent; each exchange is non-blocking (Irecv/Isend both
    ways, then Waitall).  Then k steps: ``fused_tb`` (C), else k times the halo kernel and
    the step; the ghost sites are computed redundantly (the "extra halo work" of
    multi-halo exchange) and after step s only sites within g + H - s H of the owned block
    (g + H - s H >= 0 up to s = k) are still exact, so the owned block is exact after k
    steps.  The messages are layout-independent, so ranks may hold different layouts (a block
    too short for the configured cluster length takes its backend's default layout).

Bounce-back walls, lids and masks (``walls='xy'``, ``lid``, ``mask``: ``BounceBack``) on any
axis, split or not: one region per rank (blocks, time block 1: ``fused_tb`` takes none); a
rank holds a wall (lid) face only where its block touches that global face (its program's
per-face bits), trades no halo across it (``decomposition.ghost_sides``) and has no ghosts
there; a mask is cut per block with H deep ghosts on the internal sides (the kernels read a
neighbour's solid flag inside their own block).

Bit-identical to one process in strict mode: every owned site sees the same inputs in the
same order.  ``messages`` counts what this rank sent (messages, bytes) for the model.

Distributed state: ``fields()`` runs each rank's fields kernel and gathers the four field
arrays (not the populations) to rank 0; ``set_fields`` scatters the four fields and each
rank runs its init_equilibrium kernel; ``diagnostic_rows`` gives the rank's row reductions
in global rows (neutral values elsewhere) for the driver to combine.  Checkpoints (one file
through rank 0, or per-rank pieces that resume on any rank count): ``lbgen.parallel.checkpoint_state``.
"""
from __future__ import annotations

import collections
from typing import Dict, Optional

import numpy as np

from lbgen.codegen.spec import KernelSpec, SpecError, time_block_value
from lbgen.model.catalog import AXES, DEFAULT_VELOCITY_SET, SIDES
from lbgen.model.velocity_set import velocity_set
from lbgen.model.walls import min_ly_walls
from lbgen.parallel.decomposition import (block_indices, ghost_sides, parse_ranks_grid, rank_grid, slab_starts,
                                          slab_widths)
from lbgen.parallel.exchange import finish, post, trade
from lbgen.parallel.mpi import agree, collective, root_call
from lbgen.parallel.checkpoint_state import DistributedState
from lbgen.simulation.boundaries import BounceBack
from lbgen.simulation.runner import Simulation, SimulationError, Walls


class DistributedSimulation(DistributedState, Simulation):
    """One rank's block of an LX x LY lattice split over a PX x PY grid of the ranks of `comm`.

    Same constructor arguments as ``Simulation`` (LX, LY are the global sizes), plus
    ``overlap`` (X slabs: split the slab into edges and bulk so the bulk update hides the
    MPI exchange; default True) and ``ranks_grid`` ('auto'/None, 'PXxPY' or (PX, PY)).
    ``time_block=k`` exchanges k H wide halos every k steps (see the module doc).
    ``regions`` are this rank's regions; their ``x_start`` are global columns.  See the
    module doc for which methods are collective.
    """

    def __init__(self, comm, lx: int, ly: int, *, overlap: bool = True, ranks_grid=None, **kw):
        self.comm = comm
        self.rank, self.nranks = comm.rank, comm.size
        vs_name = kw.get("velocity_set", DEFAULT_VELOCITY_SET)
        H = velocity_set(vs_name).max_hop
        bounds = self._bounce_back(kw, (lx, ly), vs_name)
        depth = kw.pop("time_block", 1)
        if depth == "auto":
            depth = 1       # the depth under MPI is a choice of the user (no tuning across ranks)
        try:
            depth = time_block_value(depth, allow_auto=False)
        except ValueError as e:
            raise collective(SimulationError(str(e))) from None
        if bounds is not None:
            try:
                bounds.check_runs(kw.get("device_backend"), depth)     # no time block, no host + device
            except SimulationError as e:
                raise collective(e) from None
        #: the lattice's bounce-back wall faces (axis, side); each rank holds those its block touches
        self.bounds = bounds         # its wall_faces: those of the lattice (Simulation.__init__ resets it)
        if depth > 1 and kw.get("device_backend") is not None:
            raise collective(SimulationError(
                f"time_block={depth} with device_backend={kw['device_backend']!r}: the host + device split "
                f"trades halos every step; use time_block=1"))
        # every backend's kernels take per-side wall switches (Simulation.wall_sides): a Y split
        # with walls runs, but not under time blocks
        walled, size = kw.get("walls") is not None, self.nranks
        unsplit = {}
        if walled and depth > 1:
            unsplit["y"] = (f"splits Y, the walled axis: a time block runs on ghost rows, which would lie beyond the "
                            f"wall (use a time block of 1). Split X only (--ranks-grid {size}x1) or run a periodic box "
                            f"(--periodic)")
        if kw.get("device_backend") is not None:
            unsplit.setdefault("y", f"splits Y; host + device ranks (--hetero) split their columns, so only X may "
                                    f"be split: use --ranks-grid {size}x1")
        need = {"y": (min_ly_walls(velocity_set(vs_name)), "a walled part needs (its kernels hold wall rows at both "
                                                           "ends)")} if walled else None
        self.dims = rank_grid(size, (lx, ly), H, parse_ranks_grid(ranks_grid), depth, unsplit=unsplit,
                              part_need=need, held=tuple(dict.fromkeys(a for a, _ in self.wall_faces)))
        px, py = self.dims
        self.cart = comm.Create_cart(list(self.dims), periods=[True, True], reorder=False)
        self.coords = tuple(self.cart.Get_coords(self.rank))
        self.left, self.right = self.cart.Shift(0, 1)
        self.down, self.up = self.cart.Shift(1, 1)
        self.slab_widths, self.slab_starts = slab_widths(lx, px), slab_starts(lx, px)
        self.row_heights, self.row_starts = slab_widths(ly, py), slab_starts(ly, py)
        self.x0, self.local_lx = self.slab_starts[self.coords[0]], self.slab_widths[self.coords[0]]
        self.y0, self.local_ly = self.row_starts[self.coords[1]], self.row_heights[self.coords[1]]
        #: one region per rank, extended by ghosts (Y split, a time block or bounce-back
        #: boundaries); else the X-slab overlap
        self.blocked = py > 1 or depth > 1 or bounds is not None
        #: a time block of the C backend sweeps through cache (fused_tb); it wraps the block's ends
        #: by pointer instead of reading the halo, so its ghosts are k H deep, not (k - 1) H
        self.sweep = (depth > 1 and kw.get("backend", "c") == "c" and kw.get("fused", True)
                      and kw.get("device_backend") is None)
        # a mask needs the solid cells one hop beyond the owned block (the kernels wrap their own block)
        g = (depth if self.sweep or (bounds is not None and bounds.mask is not None) else depth - 1) * H
        self.ghost = (g if px > 1 else 0, g if py > 1 else 0)
        #: per axis (receive low, receive high, send low, send high): ``ghost_sides`` (none across a wall)
        self.sides = [ghost_sides(a, c, p, self.wall_faces) for a, c, p in zip(AXES, self.coords, self.dims)]
        #: ghost columns (rows) on the low and the high side of each axis (none beyond a wall face)
        self.ghost_low = tuple(n * s[0] for n, s in zip(self.ghost, self.sides))
        self.ghost_high = tuple(n * s[1] for n, s in zip(self.ghost, self.sides))
        #: width of every halo message: k H (H for single steps)
        self.halo_width = depth * H
        self.overlap = overlap
        #: what this rank sent so far: messages and bytes per axis ("x", "y")
        self.messages = collections.Counter()
        self.program_ly = self.local_ly + self.ghost_low[1] + self.ghost_high[1]
        error = None
        try:
            self._fit_layout(kw, H)
            super().__init__(lx, self.program_ly, time_block=1, **kw)
        except Exception as e:   # noqa: BLE001 - made collective below
            error = e
        agree(comm, error)
        self.shape = (lx, ly)
        self.time_block = depth
        #: the lattice's bounce-back boundaries (the global mask); each region holds its block's part
        self.bounds = bounds
        if bounds is not None:
            held = tuple(f for f in self.wall_faces if not self.sides[AXES.index(f[0])][SIDES.index(f[1])])
            rows = block_indices((lx, ly), self.dims, self.coords, self.ghost[1], self.wall_faces)[1]
            for r in self.regions:
                cut = None if bounds.mask is None else bounds.mask[np.ix_(r.columns % lx, rows)]
                r.program.set_boundaries(**bounds.kernel_fields(held, cut))
        #: the walls this rank holds: the bottom one on the lowest row of ranks, the top on the highest
        #: (a periodic lattice has none to hold: the kernels' default, both, is passed on)
        if self.walls is not None:
            self.wall_sides = (self.coords[1] == 0, self.coords[1] == py - 1)
        mine = [{"rank": self.rank, "backend": r.program.spec.backend, "layout": r.program.layout.tag,
                 "columns": [r.x_start + self.ghost_low[0], r.width - self.ghost_low[0] - self.ghost_high[0]],
                 "rows": [self.y0, self.local_ly]} for r in self.regions]
        self.rank_regions = [d for part in comm.allgather(mine) for d in part]

    @staticmethod
    def _bounce_back(kw: dict, shape, vs_name: str):
        """The checked bounce-back walls, lids and mask of the lattice (``BounceBack``, None for
        none), taken out of `kw`: the rank's region gets its block's part after the build."""
        walls = kw.pop("walls") if kw.get("walls") is not None and not isinstance(kw["walls"], Walls) else None
        lid, mask = kw.pop("lid", None), kw.pop("mask", None)
        try:
            return BounceBack.of(walls, lid, mask, shape, vs_name)
        except SimulationError as e:
            raise collective(e) from None

    def _solid_zeroed(self, a: np.ndarray, x0: int = 0, y0: int = 0) -> np.ndarray:
        """`a` (C, nx, ny) at global (x0, y0) with the solid cells of the mask zeroed (they hold
        no populations and their fields read 0, as on one process)."""
        if self.mask is None:
            return a
        m = self.mask[x0:x0 + a.shape[1], y0:y0 + a.shape[2]]
        return np.where(m[None] == 1, a.dtype.type(0), a)

    def _fit_layout(self, kw: dict, H: int) -> None:
        """A layout and cluster length resolved for the whole lattice that does not fit this
        rank's block (LY_local % VL, LY_local / VL >= H) give way to the backend's default."""
        if not self.blocked or kw.get("layout") is None:
            return
        width = self.local_lx + self.ghost_low[0] + self.ghost_high[0]
        try:
            KernelSpec(backend=kw.get("backend", "c"), layout=kw["layout"], vl=kw.get("vl"),
                       velocity_set=kw.get("velocity_set", DEFAULT_VELOCITY_SET)).validate(width, self.program_ly)
        except SpecError:
            kw["layout"], kw["vl"] = None, None

    def region_table(self) -> list:
        return self.rank_regions

    def _region_plan(self, lx, backend, device_backend, host_columns, backend_options, device_options) -> list:
        w, x0, H = self.local_lx, self.x0, self.vs.max_hop
        if self.blocked:
            return [(backend, x0 - self.ghost_low[0], w + self.ghost_low[0] + self.ghost_high[0], backend_options)]
        if device_backend is None:
            if host_columns:
                raise SimulationError("host columns need a device backend (device_backend='opencl' or 'cuda')")
            if self.overlap and w >= 3 * H:
                return [(backend, x0, H, backend_options), (backend, x0 + H, w - 2 * H, backend_options),
                        (backend, x0 + w - H, H, backend_options)]
            return [(backend, x0, w, backend_options)]
        M = int(host_columns or 0)
        dev = dict(device_options or {})
        if M == 0:
            return [(device_backend, x0, w, dev)]
        if 2 * M == w:
            return [(backend, x0, w, backend_options)]
        if M < H or w - 2 * M < H:
            raise SimulationError(
                f"host columns M={M} do not fit a slab of {w} columns: with several ranks each side of a rank's "
                f"device bulk is its own host region, so M >= {H} and the bulk w - 2M >= {H} (or M = 0, "
                f"or M = w/2)")
        return [(backend, x0, M, backend_options), (device_backend, x0 + M, w - 2 * M, dev),
                (backend, x0 + w - M, M, backend_options)]

    # --- the exchange ------------------------------------------------------------------------
    def _local_links(self) -> None:
        regs, H = self.regions, self.vs.max_hop
        if len(regs) < 2:
            return
        read = "read_columns_plain" if self._plain_exchange else "read_columns"
        write = "write_columns_plain" if self._plain_exchange else "write_columns"
        edges = [(getattr(r.program, read)(r.f, 0, H), getattr(r.program, read)(r.f, r.width - H, H))
                 for r in regs]
        for i in range(len(regs) - 1):
            a, b = regs[i], regs[i + 1]
            getattr(b.program, write)(b.f, -H, edges[i][1])     # b's left halo <- a's right edge
            getattr(a.program, write)(a.f, a.width, edges[i + 1][0])  # a's right halo <- b's left edge

    def _x_begin(self):
        """Post the trade of the rank's outer D = halo_width owned columns with the X neighbours
        (``lbgen.parallel.exchange``)."""
        first, last, D = self.regions[0], self.regions[-1], self.halo_width
        lo, hi = self.ghost_low[0], self.ghost_high[0]
        return post(self.comm, self.messages, "x", (self.left, self.right),
                    (lambda: first.program.read_columns_plain(first.f, lo, D),
                     lambda: last.program.read_columns_plain(last.f, last.width - hi - D, D)), self.sides[0])

    def _x_end(self, pending) -> None:
        recv_left, recv_right = finish(pending)
        first, last, D = self.regions[0], self.regions[-1], self.halo_width
        if recv_left is not None:           # none arrives across a wall face
            first.program.write_columns_plain(first.f, self.ghost_low[0] - D, recv_left)
        if recv_right is not None:
            last.program.write_columns_plain(last.f, last.width - self.ghost_high[0], recv_right)

    def _y_exchange(self) -> None:
        """The outer D owned rows (every padded column) with the Y neighbours (one region)."""
        r, D, g, h = self.regions[0], self.halo_width, self.ghost_low[1], self.local_ly
        p = r.program
        recv_down, recv_up = trade(self.comm, self.messages, "y", (self.down, self.up),
                                   (lambda: p.read_rows_plain(r.f, g, D), lambda: p.read_rows_plain(r.f, g + h - D, D)),
                                   self.sides[1])
        if recv_down is not None:           # none arrives across a wall face
            p.write_rows_plain(r.f, g - D, recv_down)
        if recv_up is not None:
            p.write_rows_plain(r.f, g + h, recv_up)

    def _exchange_begin(self):
        """Y halos of every region (the halo kernel), post the X exchange, local links."""
        for r in self.regions:
            r.program.halo(r.f)
        pending = self._x_begin() if self.dims[0] > 1 else None
        self._local_links()
        return pending

    def _exchange_end(self, pending) -> None:
        if pending is not None:
            self._x_end(pending)
        if self.dims[1] > 1:
            self._y_exchange()

    def exchange_halos(self) -> None:
        """Blocking form: every halo (and ghost) filled, X then Y (collective)."""
        self._exchange_end(self._exchange_begin())

    def step(self, n: int = 1) -> None:
        """n steps (collective).  X slabs: the bulk is updated while the halo messages are in
        flight.  Blocks: an exchange of k H wide halos, then up to k steps locally."""
        self._check_can_step(n)
        regs = self.regions
        if self.blocked:
            r, k = regs[0], self.time_block
            while n > 0:
                m = min(k, n)
                self.exchange_halos()
                if self.sweep and m > 1:     # m steps in one sweep through cache
                    r.program.fused_tb(r.f, r.g, m, walls=self.walls, sides=self.wall_sides,
                                       **self.kernel_parameters)
                    r.f, r.g = r.g, r.f
                for i in range(m if not (self.sweep and m > 1) else 0):
                    if i:        # the unsplit axis wraps; split ones fill sites the block no longer needs
                        r.program.halo(r.f)
                    self.advance(r)
                self.synchronize()
                self.time_step += m
                self.sweeps["blocked" if m > 1 else "single"] += 1
                n -= m
            return
        for _ in range(n):
            pending = self._exchange_begin()
            for r in regs[1:-1]:          # the bulk: needs only local halos
                self.advance(r)
            self._exchange_end(pending)
            self.advance(regs[0])
            if len(regs) > 1:
                self.advance(regs[-1])
            self.synchronize()
            self.time_step += 1
            self.sweeps["single"] += 1

    # --- this rank's block <-> the regions' arrays ---------------------------------------------
    def _owned(self, per_region) -> np.ndarray:
        """(C, wx, wy) owned block from per_region(r) -> (C, r.width, program_ly) arrays."""
        gy, x0, wx = self.ghost_low[1], self.x0, self.local_lx
        out = None
        for r in self.regions:
            a = per_region(r)
            if out is None:
                out = np.empty((a.shape[0], wx, self.local_ly), dtype=a.dtype)
            lo, hi = max(0, x0 - r.x_start), min(r.width, x0 + wx - r.x_start)
            out[:, r.x_start - x0 + lo:r.x_start - x0 + hi, :] = a[:, lo:hi, gy:gy + self.local_ly]
        return out

    def _region_input(self, local: np.ndarray, r) -> np.ndarray:
        """(C, r.width, program_ly) input of region r from the owned (C, wx, wy) block; ghost sites
        are filled by wrapping the block (finite values the first exchange replaces)."""
        if self.blocked:
            pad = [(0, 0)] + list(zip(self.ghost_low, self.ghost_high))
            return np.ascontiguousarray(np.pad(local, pad, mode="wrap"))
        return np.ascontiguousarray(local[:, r.x_start - self.x0:r.x_start - self.x0 + r.width, :])

    def _blocks(self):
        """(x0, wx, y0, wy) of every rank in rank order."""
        out = []
        for rank in range(self.nranks):
            cx, cy = self.cart.Get_coords(rank)
            out.append((self.slab_starts[cx], self.slab_widths[cx], self.row_starts[cy], self.row_heights[cy]))
        return out

    def _gather(self, local: np.ndarray) -> Optional[np.ndarray]:
        """Rank 0: the (C, LX, LY) array of every rank's (C, wx, wy) block; None elsewhere."""
        C = local.shape[0]
        blocks = self._blocks()
        counts = [C * wx * wy for _, wx, _, wy in blocks]
        displs = [sum(counts[:i]) for i in range(len(counts))]
        local = np.ascontiguousarray(local)
        recv = np.empty(sum(counts), dtype=local.dtype) if self.rank == 0 else None
        self.comm.Gatherv(local, [recv, (counts, displs)] if self.rank == 0 else None, root=0)
        if self.rank != 0:
            return None
        out = np.empty((C, self.lx, self.ly), dtype=local.dtype)
        for (x0, wx, y0, wy), d, c in zip(blocks, displs, counts):
            out[:, x0:x0 + wx, y0:y0 + wy] = recv[d:d + c].reshape(C, wx, wy)
        return out

    def _scatter(self, global_array: Optional[np.ndarray], channels: int, dtype) -> np.ndarray:
        """This rank's (C, wx, wy) block of rank 0's (C, LX, LY) array."""
        blocks = self._blocks()
        counts = [channels * wx * wy for _, wx, _, wy in blocks]
        displs = [sum(counts[:i]) for i in range(len(counts))]
        send = None
        if self.rank == 0:
            send = np.concatenate([np.ascontiguousarray(global_array[:, x0:x0 + wx, y0:y0 + wy], dtype=dtype).ravel()
                                   for x0, wx, y0, wy in blocks])
        local = np.empty(counts[self.rank], dtype=dtype)
        self.comm.Scatterv([send, (counts, displs)] if self.rank == 0 else None, local, root=0)
        return local.reshape(channels, self.local_lx, self.local_ly)

    def _local_state(self) -> np.ndarray:
        self.synchronize()
        return self._owned(lambda r: r.program.layout.unpack(r.program.download(r.f)))

    def _local_fields(self) -> np.ndarray:
        """(4, wx, wy): rho, ux, uy, T of the owned block by each region's fields kernel."""
        self.synchronize()
        ax, ay = self.force
        return self._owned(lambda r: np.stack(list(r.program.fields(r.f, ax=ax, ay=ay).values())))

    # --- collective state ----------------------------------------------------------------------
    def fields(self) -> Optional[Dict[str, np.ndarray]]:
        """The physical fields on rank 0 (None elsewhere): each rank's fields kernel, four
        arrays gathered (no populations leave a rank)."""
        f = self._gather(self._local_fields())
        return None if f is None else dict(zip(("rho", "ux", "uy", "T"), self._solid_zeroed(f)))

    def diagnostic_rows(self) -> np.ndarray:
        """(LY, ND) row reductions of this rank's owned sites in global rows, the neutral value
        (0, +inf for a min, -inf for a max) in the rows of other ranks: ``combine_rows`` of
        every rank's rows gives the lattice's."""
        from lbgen.codegen.diagnostics import ROW_QUANTITIES, rows_of_fields
        if self.ghost == (0, 0) and self.mask is None:
            local = super().diagnostic_rows()       # the kernels: no ghost sites to leave out
        else:                                        # the owned fields, the solid cells skipped
            solid = None if self.mask is None else \
                self.mask[self.x0:self.x0 + self.local_lx, self.y0:self.y0 + self.local_ly]
            local = rows_of_fields(dict(zip(("rho", "ux", "uy", "T"), self._solid_zeroed(
                self._local_fields(), self.x0, self.y0))), solid=solid)
        neutral = np.array([{"sum": 0.0, "min": np.inf, "max": -np.inf}[how] for _, how in ROW_QUANTITIES])
        out = np.tile(neutral, (self.ly, 1))
        out[self.y0:self.y0 + self.local_ly] = local
        return out

    def set_fields(self, rho=None, ux=None, uy=None, T=None) -> None:
        """Rank 0's physical fields, checked there and scattered (four arrays); each rank's
        init_equilibrium kernel makes its populations (the other ranks' arguments are ignored)."""
        fields = root_call(self.comm, lambda: np.stack(self._checked_fields(rho, ux, uy, T)))
        local = self._scatter(fields, 4, np.float64)
        ax, ay = self.force
        for r in self.regions:
            block = self._region_input(local, r)
            r.program.init_equilibrium(r.f, *block, ax=ax, ay=ay)
        if self.mask is not None:      # solid cells hold no populations
            self._upload_state(self._solid_zeroed(self._local_state(), self.x0, self.y0))
        self._fields_set = True

    def set_populations(self, f: Optional[np.ndarray]) -> None:
        a = root_call(self.comm, lambda: self._solid_zeroed(self._checked_populations(f)))
        local = self._scatter(a, self.vs.Q, np.float64)
        for r in self.regions:
            r.f = r.program.upload_fields(self._region_input(local, r), r.f)
        self._fields_set = True

    def check_finite(self) -> None:
        """Raise the same SimulationError on every rank if any rank's block went bad (collective)."""
        from mpi4py import MPI
        if self.comm.allreduce(int(self.looks_healthy()), op=MPI.MIN):
            return     # the cheap test passed on every rank
        bad = self.first_bad_site(self._local_state().astype(np.float64))
        if not self.comm.allreduce(int(bad is not None), op=MPI.MAX):
            return
        sites = self.comm.gather(bad, root=0)
        message = None
        if self.rank == 0:
            r = next(i for i, s in enumerate(sites) if s is not None)
            (x, y), what, values = sites[r]
            x0, _, y0, _ = self._blocks()[r]
            message = str(self.divergence((x + x0, y + y0), what, values))
        raise collective(SimulationError(self.comm.bcast(message, root=0)))

    def run(self, steps: int, progress: bool = False, callback=None):
        return super().run(steps, progress=progress and self.rank == 0, callback=callback)
