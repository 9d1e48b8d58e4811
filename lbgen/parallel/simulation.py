"""Several MPI ranks: ``DistributedSimulation``, one rank's block of a lattice of any D split over a
Cartesian grid of PX x PY[ x PZ] ranks (``MPI_Cart``, periodic; ``ranks_grid`` given or auto:
``lbgen.parallel.decomposition.rank_grid``; see ``lbgen.parallel.mpi`` for the launch and the
collective errors).

Each rank runs a ``lbgen.Simulation`` of the same D (its public API only) on its block extended
by g = k H ghost planes on each side of every split axis (H the largest hop, k the time block;
an unsplit axis has no ghosts: the block's halo kernel wraps it locally).  Every k steps the
rank trades D = k H thick slabs of owned planes with its two neighbours along X, then Y (then
Z) -- each slab spans the other axes' ghosts, which the earlier axes have just filled, so edges
and corners travel through the consecutive trades and no diagonal message is sent (seed 002,
Fig. 1) -- through ``lbgen.parallel.exchange``, then advances k steps (one ``fused_tb`` sweep
where its Simulation blocks: C, fused).  In place (``streaming='inplace'``, the AA pattern) the
ghosts are 2 H deep and traded before each even step only: its odd step reads only the slots the
even step wrote, whose sites lie within H of the owned block.  Host buffers (the C runtime) are read and written in
place through the layout's site indices; device buffers are packed and unpacked on the device
and travel by the ``halo_path`` (``lbgen.parallel.halo``: ``staged`` through page-locked host
buffers, ``device`` straight to MPI; ``auto``: the data-movement model chooses), so no whole
buffer moves while stepping.  The ghost sites are computed redundantly; after step s only
sites within (k - s) H of the owned block are exact, so the owned block is exact after k steps:
bit-identical to one process in strict mode.  The messages are layout-independent, so ranks may
hold different layouts (a block too short for the configured cluster length takes its
backend's default).  Measured against the 2D X-slab overlap (bulk stepped while the messages
fly) this design was as fast or faster (docs/parallel.md), so it is the one design.

Walls, lids and masks on any axis, split or not: a rank holds a wall (lid) face only where its
block touches that global face, has no ghost planes on that side and trades no slab across it
(``decomposition.ghost_sides``), with or without time blocks; a mask is cut per block, ghosts
included.  The 2D thermal walls (``Walls``) are the faces y-low and y-high alike (each rank's
block gets the per-side switches of the faces it holds; ``Walls(axis='x')``: x-low and x-high); host + device ranks (2D
``device_backend``) split their block's columns.

Distributed state: ``fields()`` gathers each rank's owned fields (its fields kernel) to rank 0;
``set_fields`` scatters rank 0's fields, cut per extended block; ``diagnostic_rows`` gives rank 0
the lattice's rows (each rank's owned sites, combined along X); checkpoints (one file through
rank 0, or per-rank pieces that resume on any rank count): ``lbgen.parallel.checkpoint_state``.
"""
from __future__ import annotations

import collections
from typing import Dict, Optional

import numpy as np

from lbgen.codegen.spec import KernelSpec, SpecError, time_block_value
from lbgen.model.catalog import AXES, DEFAULT_VELOCITY_SET, SIDES, field_names, set_entry
from lbgen.model.walls import min_ly_walls
from lbgen.parallel.checkpoint_state import DistributedState
from lbgen.parallel.decomposition import (block_indices, ghost_sides, paired_walls, parse_ranks_grid, rank_grid,
                                          slab_starts, slab_widths, thermal_faces)
from lbgen.parallel.exchange import trade
from lbgen.parallel.halo import HALO_PATH_CHOICES, PATHS, HaloSlabs, device_path_problem
from lbgen.parallel.mpi import agree, collective, root_call
from lbgen.simulation.bodies import BlockBodies, body_input
from lbgen.simulation.boundaries import BounceBack
from lbgen.simulation.inplace import check_streaming
from lbgen.simulation.interface import Lattice, lattice_shape
from lbgen.simulation.parameters import SimulationError, Walls

#: the thermal walls of a 2D channel stand on these faces (3D: on z-low and z-high, ``thermal_faces``)
THERMAL_FACES = (("y", "low"), ("y", "high"))


class DistributedSimulation(DistributedState, Lattice):
    """One rank's block of an LX x LY[ x LZ] lattice over a grid of the ranks of `comm` (see the
    module doc).  Same keywords as ``Simulation`` (the sizes and the mask global), plus
    ``ranks_grid`` ('auto'/None, 'PXxPY[xPZ]' or a tuple), ``halo_path`` (device ranks:
    'auto', 'staged' or 'device'; ``lbgen.parallel.halo``) and ``overlap`` (the staged path's
    interior sweep while the slabs travel; False for A/B timings)."""

    def __init__(self, comm, *shape: int, ranks_grid=None, time_block=1, mask=None, halo_path: str = "auto",
                 overlap: bool = True, **kw):
        from lbgen.simulation.runner import Simulation
        self.comm, self.rank, self.nranks = comm, comm.rank, comm.size
        try:
            self.shape, vs_name = lattice_shape(shape, kw.get("velocity_set"))
            if halo_path not in HALO_PATH_CHOICES:
                raise SimulationError(f"halo_path={halo_path!r}: one of {', '.join(HALO_PATH_CHOICES)}")
        except SimulationError as e:
            raise collective(e) from None
        D = len(self.shape)
        H = set_entry(vs_name).max_hop
        try:
            depth = 1 if time_block == "auto" else time_block_value(time_block, allow_auto=False)
            thermal = isinstance(kw.get("walls"), Walls)
            opening = {k: kw.pop(k) for k in ("inlet", "outlet", "outflow", "slip", "inlet_temperature")
                       if kw.get(k) is not None}
            if opening and thermal:
                raise SimulationError(f"{', '.join(opening)}: the open faces do not run beside the 2D thermal walls")
            body = body_input(kw.pop("bodies", None), mask, self.shape, kw.pop("body_bc", None))
            if body is not None:
                mask = body[0]
                if depth != 1:
                    raise SimulationError(f"time_block={depth}: the link kernels of bodies run before every step; "
                                          f"use time_block=1")
            bounds = None if thermal else BounceBack.of(kw.get("walls"), kw.get("lid"), mask, self.shape, vs_name,
                                                        **opening)
            if bounds is not None:
                bounds.check_runs(kw.get("device_backend"), depth)
            inplace = check_streaming(kw.get("streaming", "pull"), device_backend=kw.get("device_backend"),
                                      time_block=depth, fused=kw.get("fused", True), bodies=body,
                                      bounds=bounds, backend=kw.get("backend", "c"), ranks=True) == "inplace"
            #: the lattice's wall faces (axis, side); each rank's block holds those it touches
            self.wall_faces = thermal_faces(D, kw["walls"]) if thermal else () if bounds is None else bounds.walls
            #: the faces that are not periodic (walls and open faces): no ghost planes across them
            self.closed_faces = self.wall_faces + (tuple(bounds.open.kinds()) if bounds is not None else ())
            paired_walls(self.closed_faces)
            #: the open faces of the whole lattice (lbgen.simulation.open_faces), or None
            self.open_faces = bounds.open if bounds is not None and bounds.open else None
            self.lid = {} if bounds is None else bounds.lid
            #: the global voxel mask (uint8) or None; each rank's block holds its cut
            self.mask = None if bounds is None else bounds.mask
            if depth > 1 and kw.get("device_backend") is not None:
                raise SimulationError(f"time_block={depth} with device_backend={kw['device_backend']!r}: the host + "
                                      f"device split trades halos every step; use time_block=1")
        except (SimulationError, ValueError) as e:
            raise collective(SimulationError(str(e))) from None
        unsplit, need = {}, None
        if thermal:
            from lbgen.model.velocity_set import velocity_set
            need = {self.wall_faces[0][0]: (min_ly_walls(velocity_set(vs_name)),      # the walls' axis
                                            "a walled part needs (its kernels hold wall rows at both ends)")}
            if depth > 1:               # the walled axis (3D: z, the one time-blocked walls stand across)
                a, ghosts, keep = (("y", "rows", f"X only (--ranks-grid {self.nranks}x1)") if D == 2 else
                                   ("z", "planes", "X and Y only (--ranks-grid PXxPYx1)"))
                unsplit[a] = (f"splits {a.upper()}, the walled axis: a time block runs on ghost {ghosts}, which would lie "
                              f"beyond the wall (use a time block of 1). Split {keep} or run a periodic box (--periodic)")
        if kw.get("device_backend") is not None:
            unsplit.setdefault("y", f"splits Y; host + device ranks (--hetero) split their columns, so only X may be "
                                    f"split: use --ranks-grid {self.nranks}x1")
        held = () if thermal else tuple(dict.fromkeys(a for a, _ in self.closed_faces))
        reach = 2 if inplace else depth     # in place: 2H wide ghosts last the AA pattern's two steps
        # quadratic walls on bodies read f*(x - 2c_i): two ghost layers (2H planes), traded every step
        quadratic = body is not None and body[4] == "quadratic"
        if quadratic:
            reach = max(reach, 2)
            need = {a: (2 * H, "the quadratic bounce-back's ghosts (two sites upstream of a link) need")
                    for a in AXES[:D]} if need is None else need
        need = {a: (2 * H, f"in-place streaming's ghosts need (2 x {H}: two AA steps x largest hop)")
                for a in AXES[:D]} if inplace else need
        self.dims = rank_grid(self.nranks, self.shape, H, parse_ranks_grid(ranks_grid, D), depth, held=held,
                              unsplit=unsplit, part_need=need)
        if quadratic and inplace and any(p > 1 for p in self.dims):
            # its q < 1/2 links read f*(x - 2c_i): the AA pattern's odd step finds only H valid ghost planes
            raise collective(SimulationError(
                f"body_bc='quadratic' with streaming='inplace' on {self.nranks} ranks split as "
                f"{'x'.join(map(str, self.dims))}: the quadratic bounce-back reads two sites upstream of a link, "
                f"beyond the ghosts an in-place odd step holds; use streaming='pull', one rank, or body_bc='bouzidi'"))
        self.cart = comm.Create_cart(list(self.dims), periods=[True] * D, reorder=False)
        self.coords = tuple(self.cart.Get_coords(self.rank))
        self.neighbours = [self.cart.Shift(d, 1) for d in range(D)]          # (low, high) per axis
        self.origin = tuple(slab_starts(n, p)[c] for n, p, c in zip(self.shape, self.dims, self.coords))
        self.size = tuple(slab_widths(n, p)[c] for n, p, c in zip(self.shape, self.dims, self.coords))
        #: width of every halo message: k H (in place: 2 H)
        self.halo_width = reach * H
        #: per axis (receive low, receive high, send low, send high): ``ghost_sides`` (none across a wall)
        self.sides = [ghost_sides(a, c, p, self.closed_faces) for a, c, p in zip(AXES, self.coords, self.dims)]
        #: ghost planes per axis on the low and the high side (none across a wall face)
        self.ghost_low = tuple(self.halo_width * s[0] for s in self.sides)
        self.ghost_high = tuple(self.halo_width * s[1] for s in self.sides)
        held = tuple(f for f in self.wall_faces if not self.sides[AXES.index(f[0])][SIDES.index(f[1])]
                     or self.dims[AXES.index(f[0])] == 1)
        if bounds is not None:
            kw = dict(kw, walls=held, lid={"-".join(face): u for face, u in self.lid.items() if face in held})
        self.time_block = depth
        self.time_step = 0
        #: the staged path sweeps the interior while the slabs travel (``overlap_boxes``; False: exchange, then step)
        self.overlap = bool(overlap)
        #: what this rank sent so far: messages and bytes per axis ("x", "y", "z")
        self.messages = collections.Counter()
        # the rank's own sweep: fused_tb where it runs (C, fused, one backend), else single steps
        sweep = str(kw.get("backend", "c")).lower() == "c" and kw.get("fused", True) and \
            kw.get("device_backend") is None
        error, local_mask = None, None
        try:
            local_mask = None if self.mask is None else self.mask[np.ix_(*self._indices())]
            self._fit_layout(kw)
            if body is not None:          # this block's bodies: links leave it across its split axes
                kw.update(bodies=self._block_bodies(body), body_bc=body[4],
                          body_closed=tuple(a for a, p in zip(AXES, self.dims) if p > 1))
            self.sim = Simulation(*self.extended, mask=None if body is not None else local_mask,
                                  time_block=depth if sweep else 1, open_rules=self.open_faces is not None, **kw)
            if self.open_faces is not None:
                self._open_block(local_mask)
            if thermal:
                self.sim.wall_sides = tuple(f in held for f in thermal_faces(D, kw["walls"]))
            #: how the halo slabs travel: 'host' (host buffers, in place), 'staged' or 'device'
            self.halo_path, self.halo_path_reason = self._halo_path(halo_path)
        except Exception as e:  # noqa: BLE001 - made collective below
            error = e
        agree(comm, error)
        self._slabs = HaloSlabs(self._regions(), self.halo_path, self.sim.vs.Q, self.sim.dtype, self._slab_parts,
                                self._slab_shape)
        #: the owned fluid sites are 0 (the diagnostics skip the ghosts as solid sites)
        self._skip = np.ones(self.extended, np.uint8)
        self._owned(self._skip)[...] = 0 if local_mask is None else self._owned(local_mask)
        mine = [{"rank": self.rank, "backend": b, "layout": t, "columns": [self.origin[0], self.size[0]],
                 "rows": [self.origin[1], self.size[1]]} for b, t in self._programs()]
        self.rank_regions = [d for part in comm.allgather(mine) for d in part]

    def _block_bodies(self, body):
        """The bodies of this rank's extended block: labels cut, wall distances in global coordinates
        (wrapped into the box)."""
        labels, names, distance = body[1][np.ix_(*self._indices())], body[2], body[3]
        corner = np.array([o - g for o, g in zip(self.origin, self.ghost_low)])
        shape = np.array(self.shape)
        # ghost sites beyond a periodic seam wrap into the box (their labels were cut so), where the
        # body's surface is: a link of a ghost two planes deep may end in a body across the seam
        return BlockBodies(labels, names, None if distance is None else
                           (lambda sites, dirs: distance((np.asarray(sites) + corner) % shape, dirs)))

    @property
    def bodies(self):
        """The links of this block's bodies (``lbgen.simulation.bodies.BodyLinks``) or None."""
        return self.sim.bodies

    def forces(self) -> Optional[Dict[str, np.ndarray]]:
        """{body name: the force on it} of the last step on rank 0 (None elsewhere; collective): each
        rank's chunks of its own sites, summed in the order of their global sites, as one process."""
        links = self.sim.bodies
        if links is None:
            return {} if self.rank == 0 else None
        site = links.chunk_site
        owned = np.all([(site[:, k] >= g) & (site[:, k] < g + n) for k, (g, n) in
                        enumerate(zip(self.ghost_low, self.size))], axis=0) if len(site) else np.zeros(0, bool)
        glob = [np.asarray(idx)[site[owned, k]] for k, idx in enumerate(self._indices())]
        key = np.ravel_multi_index(tuple(glob), self.shape) if owned.any() else np.zeros(0, np.int64)
        mine = (links.chunk_body[owned], key, links.partial()[owned])
        parts = self.comm.gather(mine, root=0)
        if self.rank != 0:
            return None
        body = np.concatenate([p[0] for p in parts])
        keys = np.concatenate([p[1] for p in parts])
        rows = np.concatenate([p[2].reshape(-1, len(self.shape)) for p in parts])
        order = np.lexsort((keys, body))
        return links.totals(body[order], rows[order])

    @property
    def extended(self) -> tuple:
        """The sizes of this rank's block with its ghost planes."""
        return tuple(n + lo + hi for n, lo, hi in zip(self.size, self.ghost_low, self.ghost_high))

    def _fit_layout(self, kw: dict) -> None:
        """A layout and cluster length resolved for the whole lattice that does not fit this
        rank's block give way to the backend's default."""
        if kw.get("layout") is None or len(self.shape) == 3:
            return
        try:
            KernelSpec(backend=kw.get("backend", "c"), layout=kw["layout"], vl=kw.get("vl"),
                       velocity_set=kw.get("velocity_set") or DEFAULT_VELOCITY_SET).validate(*self.extended)
        except SpecError:
            kw["layout"], kw["vl"] = None, None

    def _indices(self, rank: Optional[int] = None):
        """Global indices (periodic) of the extended block of `rank` (default: this one), per axis."""
        coords = self.coords if rank is None else self.cart.Get_coords(rank)
        return block_indices(self.shape, self.dims, coords, self.halo_width, self.closed_faces)

    def _open_block(self, local_mask) -> None:
        """The open faces this rank's block holds (those at the lattice's ends, as its walls), the
        inlets' face arrays cut to its extended block, given to its lattice's programs."""
        import dataclasses

        from lbgen.simulation import programs
        from lbgen.simulation.open_faces import OpenFaces
        D, index = len(self.shape), self._indices()
        held = [f for f in self.open_faces.kinds() if not self.sides[AXES.index(f[0])][SIDES.index(f[1])]
                or self.dims[AXES.index(f[0])] == 1]
        inlets = {}
        for f in held:
            if f in self.open_faces.inlets:
                a = AXES.index(f[0])
                inlets[f] = self.open_faces.inlets[f][np.ix_(*[index[b] for b in range(D) if b != a])]
        cut = OpenFaces(inlets, {f: r for f, r in self.open_faces.outlets.items() if f in held},
                        tuple(f for f in self.open_faces.outflows if f in held),
                        tuple(f for f in self.open_faces.slips if f in held),
                        {f: p for f, p in self.open_faces.profiles.items() if f in held},
                        {f: t for f, t in self.open_faces.temperatures.items() if f in held},
                        self.open_faces.velocity_set, self.open_faces.max_hop)
        base = self.sim.bounds or BounceBack((), {}, local_mask, D)
        self.sim.bounds = dataclasses.replace(base, open=cut, shape=tuple(self.extended))
        for region in self.sim.regions:
            programs.boundaries(region.program, self.sim.bounds)

    def _owned(self, a: np.ndarray) -> np.ndarray:
        """The owned part of an array over the extended block (leading axes kept)."""
        return a[(Ellipsis,) + tuple(slice(g, g + n) for g, n in zip(self.ghost_low, self.size))]

    def _regions(self) -> list:
        """[(program, region, first column)] of the rank's Simulation (host + device: bands of columns)."""
        return [(r.program, r, r.x_start) for r in self.sim.regions]

    def _programs(self) -> list:
        return [(p.spec.backend, p.layout.tag) for p, *_ in self._regions()]

    # --- the exchange --------------------------------------------------------------------------
    def _slab_parts(self, d: int, lo: int, hi: int) -> list:
        """The slab of planes lo..hi-1 along axis d (the other axes over their extended extent)
        as parts: (region, flat indices of its buffer of every population at the part's sites in
        (p, x, y[, z]) order, the slab's columns)."""
        key = (d, lo, hi)
        cache = self.__dict__.setdefault("_slab_index", {})
        if key not in cache:
            ext, parts = self.extended, []
            x_lo, x_hi = (lo, hi) if d == 0 else (0, ext[0])
            for i, (prog, _, start) in enumerate(self._regions()):
                width = prog.layout.shape[0]
                for x0 in (start, start - ext[0]):        # a region may wrap around the block (host + device)
                    a, b = max(x0, x_lo), min(x0 + width, x_hi)
                    if a >= b:
                        continue
                    ranges = [np.arange(a - x0, b - x0)] + [np.arange(lo, hi) if e == d else np.arange(n)
                                                            for e, n in enumerate(ext[1:], 1)]
                    grid = np.ix_(np.arange(self.sim.vs.Q), *ranges)
                    index = prog.layout.site_index(*grid)
                    parts.append((i, np.ascontiguousarray(np.broadcast_to(index, np.broadcast_shapes(
                        *(g.shape for g in grid))).ravel()), slice(a - x_lo, b - x_lo)))
            cache[key] = parts
        return cache[key]

    def _halo_path(self, wanted: str) -> tuple:
        """(path, why) of this rank's halo slabs: 'host' for host buffers; else ``wanted`` where the
        programs can take it ('auto': the data-movement model's choice among those they can)."""
        programs = [p for p, *_ in self._regions()]
        if all(p.buffers_on_host for p in programs):
            if wanted != "auto":
                raise SimulationError(f"halo_path={wanted!r}: the {programs[0].spec.backend} ranks' buffers are host "
                                      f"memory, read and written in place; the halo paths apply to opencl and cuda "
                                      f"ranks (use 'auto')")
            return "host", "host buffers, read and written in place"
        problem = device_path_problem(programs, self.comm)
        if wanted == "device" and problem:
            raise SimulationError(f"halo_path='device': {problem}; use 'staged' (or 'auto')")
        if wanted != "auto":
            return wanted, "as asked"
        from lbgen.parallel.gpu_model import choose_halo_path
        return choose_halo_path(self, possible=PATHS if problem is None else ("staged",), problem=problem)

    def _slab_shape(self, d: int, lo: int, hi: int) -> tuple:
        return (self.sim.vs.Q,) + tuple(hi - lo if e == d else n for e, n in enumerate(self.extended))

    def exchange(self, during=None) -> None:
        """Ghost slabs of every split axis from the neighbours, X then Y (then Z) (collective);
        ``during()`` is queued right after the first axis's slabs (the sweep that overlaps the
        trades: ``overlap_boxes``)."""
        if not any(p > 1 for p in self.dims):
            return
        slabs = self._slabs
        for d in range(len(self.shape)):
            if self.dims[d] == 1:
                continue
            D, g, n = self.halo_width, self.ghost_low[d], self.size[d]
            sides = self.sides[d]
            sent = [slabs.read(d, lo, hi) if sides[2 + side] else None
                    for side, (lo, hi) in enumerate(((g, g + D), (g + n - D, g + n)))]
            if during is not None:
                during()
                during = None
            slabs.ready()
            ghosts = ((g - D, g), (g + n, g + n + D))
            arrived = trade(self.comm, self.messages, AXES[d], self.neighbours[d],
                            (lambda: sent[0], lambda: sent[1]), sides,
                            receive=[lambda lo=lo, hi=hi: slabs.receive(d, lo, hi) for lo, hi in ghosts])
            slabs.release()
            for (lo, hi), data in zip(ghosts, arrived):
                if data is not None:
                    slabs.write(d, lo, hi, data)

    @property
    def transfers(self) -> collections.Counter:
        """What this rank's programs copied between host and device so far (``Program.transfers``)."""
        return sum((p.transfers for p, *_ in self._regions()), collections.Counter())

    def overlap_boxes(self) -> Optional[tuple]:
        """The staged path's overlap, where it applies (``overlap``; device ranks of one program,
        single fused steps without thermal walls, X and/or Y split): (interior, edges) boxes
        (x0, x1, y0, y1) of the owned planes -- the interior (H or more from every side that
        receives ghosts) is swept while the slabs are copied and traded, the edges once the
        ghosts have arrived.  None: exchange, then step."""
        split = [d for d in range(len(self.shape)) if self.dims[d] > 1]
        sim = self.sim
        if (not self.overlap or self.time_block != 1 or len(sim.regions) != 1 or sim.regions[0].program.buffers_on_host
                or sim.walls is not None or not sim.fused or not split or max(split) > 1 or sim.streaming != "pull"):
            return None
        H = sim.vs.max_hop
        owned = [(self.ghost_low[d], self.ghost_low[d] + self.size[d]) for d in (0, 1)]
        inner = [(a + H * self.sides[d][0], b - H * self.sides[d][1]) for d, (a, b) in enumerate(owned)]
        if any(b <= a for a, b in inner):
            return None
        (ox0, ox1), (oy0, oy1) = owned
        (ix0, ix1), (iy0, iy1) = inner
        edges = [(ox0, ix0, oy0, oy1), (ix1, ox1, oy0, oy1), (ix0, ix1, oy0, iy0), (ix0, ix1, iy1, oy1)]
        return (ix0, ix1, iy0, iy1), [e for e in edges if e[1] > e[0] and e[3] > e[2]]

    def _overlapped_step(self, interior, edges) -> None:
        """One step whose interior sweeps while the halo slabs travel (bit-identical to exchange,
        then step: every owned site is swept once from the same values; ghost sites are not
        swept, as the next exchange overwrites them)."""
        sim = self.sim
        r = sim.regions[0]
        prog, params = r.program, sim.kernel_parameters
        prog.step_halo(r.f)
        self._slabs.aside = True
        try:
            self.exchange(during=lambda: prog.fused(r.f, r.g, region=interior, **params))
        finally:
            self._slabs.aside = False
        prog.step_halo(r.f)                 # the ghosts' halo copies (clustered layouts' halo rows)
        for box in edges:
            prog.fused(r.f, r.g, region=box, **params)
        r.f, r.g = r.g, r.f
        sim.time_step += 1
        sim.sweeps["single"] += 1

    def step(self, n: int = 1) -> None:
        """n steps (collective): an exchange, then up to time_block steps of the rank's block (the
        staged path's single steps overlap the trades with the interior sweep: ``overlap_boxes``)."""
        self._check_can_step(n)
        plan = self.overlap_boxes() if self.halo_path == "staged" and self.sim.bodies is None else None
        while plan is not None and n > 0:
            self._overlapped_step(*plan)
            self.time_step += 1
            n -= 1
        while n > 0:
            m = min(self.time_block, n)
            if self.sim._parity is None or not self.sim._parity.odd:   # in place: before the even steps only
                self.exchange()
            self.sim.step(m)
            self.time_step += m
            n -= m

    def run(self, steps: int, progress: bool = False, callback=None):
        return super().run(steps, progress=progress and self.rank == 0, callback=callback)

    # --- distributed state ---------------------------------------------------------------------
    def _gather_blocks(self, mine: np.ndarray) -> Optional[np.ndarray]:
        """Rank 0: the (C, *shape) array of every rank's (C, *size) owned block; None elsewhere."""
        parts = self.comm.gather((self.origin, np.ascontiguousarray(mine)), root=0)
        if self.rank != 0:
            return None
        out = np.empty(mine.shape[:1] + self.shape, dtype=mine.dtype)
        for origin, block in parts:
            out[(slice(None),) + tuple(slice(o, o + n) for o, n in zip(origin, block.shape[1:]))] = block
        return out

    def _scatter_blocks(self, cut) -> object:
        """This rank's part of rank 0's ``cut(rank)`` for every rank (checked there: collective)."""
        everyone = root_call(self.comm, lambda: [cut(r) for r in range(self.nranks)])
        return self.comm.scatter(everyone, root=0)

    def set_fields(self, rho=None, *velocity, u=None, T=None, ux=None, uy=None, uz=None) -> None:
        """Rank 0's fields (numbers or arrays of the lattice's shape, the forms of
        ``Simulation.set_fields``), each rank's extended block scattered; the other ranks'
        arguments are ignored (collective)."""
        from lbgen.simulation.interface import field_arguments

        def cut(r):
            if cut.arrays is None:
                rho_, v, T_ = field_arguments(len(self.shape), rho, velocity, u, T, {"ux": ux, "uy": uy, "uz": uz})
                arrays = [np.asarray(a, dtype=np.float64) for a in (rho_, *v, T_)]
                bad = [a.shape for a in arrays if a.ndim and a.shape != self.shape]
                if bad:
                    raise SimulationError(f"set_fields: a field of shape {bad[0]}; this lattice is "
                                          f"{' x '.join(map(str, self.shape))} (give numbers or arrays of that shape)")
                cut.arrays = [np.broadcast_to(a, self.shape) for a in arrays]
            return [a[np.ix_(*self._indices(r))] for a in cut.arrays]
        cut.arrays = None
        mine = self._scatter_blocks(cut)
        error = None
        try:
            self.sim.set_fields(*mine)
        except Exception as e:  # noqa: BLE001 - made collective below
            error = e
        agree(self.comm, error)

    def fields(self, native: bool = False) -> Optional[Dict[str, np.ndarray]]:
        """The physical fields of the lattice on rank 0 (every rank's owned arrays of its fields
        kernel; ``native``: in the arithmetic precision, as ``Simulation.fields``), None elsewhere (collective)."""
        names = field_names(len(self.shape))
        local = self.sim.fields(native)
        out = self._gather_blocks(np.stack([self._owned(local[k]) for k in names]))
        return None if out is None else dict(zip(names, out))

    def diagnostic_rows(self) -> Optional[np.ndarray]:
        """The rows of the lattice on rank 0 (2D: (LY, ND); 3D: (LY*LZ, ND3)), None elsewhere
        (collective): each rank's owned fluid sites reduced along X, its owned lines sent to
        rank 0, which combines the parts of a line in order of X (sums, max, min; with X unsplit
        every line is one rank's, the bits of one process)."""
        from lbgen.codegen import diagnostics as dg
        owned = tuple(slice(g, g + n) for g, n in zip(self.ghost_low[1:], self.size[1:]))
        if len(self.shape) == 3:
            quantities = dg.ROW_QUANTITIES3D
            self.sim._natural()
            lines = self.sim.program.diagnostics(self.sim.f, force=self.sim.force, skip=self._skip)  # ghosts skipped
            rows = lines.reshape(self.extended[1:] + (-1,))[owned]
        else:
            quantities = dg.ROW_QUANTITIES
            if not (self.ghost_low[0] or self.ghost_high[0]):    # no ghost columns: the kernels' rows
                rows = self.sim.diagnostic_rows()[owned]
            else:
                rows = dg.rows_of_fields({k: self._owned(v) for k, v in self.sim.fields().items()},
                                         solid=self._owned(self._skip))
        parts = self.comm.gather((self.origin, np.ascontiguousarray(rows)), root=0)
        if self.rank != 0:
            return None
        return dg.combine_blocks(parts, self.shape[1:], quantities)

    def check_finite(self) -> None:
        """Every rank checks its owned sites (collective); a failure is raised on every rank,
        naming the first bad owned site in global lattice coordinates and the rank that holds it."""
        error = None
        try:
            error = self._divergence()
        except Exception as e:  # noqa: BLE001 - made collective below
            error = e
        report = str(error) if isinstance(error, SimulationError) else None   # a divergence report
        reports = [m for m in self.comm.allgather(report) if m is not None]
        if reports:                          # the first failing rank's report, once, on every rank
            raise collective(SimulationError(reports[0])) from error
        agree(self.comm, error)

    def _divergence(self) -> Optional[SimulationError]:
        """This rank's divergence report (its first bad owned site, global coordinates), or None."""
        if self.sim.looks_healthy(skip=self._skip):        # the owned fluid sites (ghosts are the neighbours')
            return None
        bad = self.sim.first_bad_site(skip=self._skip)      # owned fluid sites only
        if bad is None:
            return None
        site, what, values = bad
        at = tuple((o + i - g) % n for o, i, g, n in zip(self.origin, site, self.ghost_low, self.shape))
        return self.sim.divergence(at, what, values, where=f"on rank {self.rank}")

    # --- the run driver's interface (lbgen.run.driver.Run) ---------------------------------------
    spec = property(lambda self: self.sim.spec)
    source = property(lambda self: self.sim.source)
    vs = property(lambda self: self.sim.vs)
    program = property(lambda self: self.sim.program)
    runtime = property(lambda self: self.sim.runtime)
    dtype = property(lambda self: self.sim.dtype)
    params = property(lambda self: self.sim.params)
    force = property(lambda self: self.sim.force)
    has_state = property(lambda self: self.sim.has_state)
    check_every = property(lambda self: self.sim.check_every)
    regions = property(lambda self: self.sim.regions, doc="This rank's regions (2D), columns of its extended block.")
    dimension = property(lambda self: len(self.shape))
    bounds = property(lambda self: self.sim.bounds)
    streaming = property(lambda self: self.sim.streaming)
    walls = property(lambda self: self.sim.walls if len(self.shape) == 2 and isinstance(self.sim.walls, Walls) else
                     tuple(dict.fromkeys(a for a, _ in self.wall_faces)),
                     doc="The lattice's wall axes (or the 2D thermal Walls); each rank's block holds some faces.")
    lx = property(lambda self: self.shape[0], doc="The global lattice's sizes.")
    ly = property(lambda self: self.shape[1])
    lz = property(lambda self: self.shape[2])
    sweeps = property(lambda self: self.sim.sweeps, doc="This rank's sweeps (every rank runs the same ones).")

    def synchronize(self) -> None:
        self.sim.synchronize()

    def grid_text(self) -> str:
        return "x".join(map(str, self.dims))

    def region_table(self) -> list:
        """Every rank's programs with their owned columns (rows) (the run's start line, manifest)."""
        return self.rank_regions


#: the name of the 3D class before the two were one (one release)
DistributedSimulation3D = DistributedSimulation
