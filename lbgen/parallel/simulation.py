"""Several MPI ranks: one rank's X slab of a lattice (see lbgen.parallel.mpi for the decomposition,
the collective state and the failure rules).

Inside a rank the slab is split into regions [left edge | bulk | right edge]: 3-column
edges and the bulk on the rank's backend (when the slab is wide enough; a narrower slab is
one region), or with ``device_backend`` (``--hetero``) M host columns on each side of a
device bulk.  A step fills every region's Y halos, posts the non-blocking exchange
(Isend/Irecv) of the slab's outer padded columns with both neighbours (layout-independent
``read_columns_plain`` form, so ranks may use different layouts), copies the halos
between the local regions, advances the bulk *while the messages fly*, waits, writes the
received halos and advances the edges.  Bit-identical to one process in strict mode.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from lbgen.model.catalog import DEFAULT_VELOCITY_SET
from lbgen.model.velocity_set import velocity_set
from lbgen.parallel.mpi import TAG_LEFTWARD, TAG_RIGHTWARD, agree, check_decomposition, collective, root_call, slab_starts, slab_widths
from lbgen.simulation.runner import Simulation, SimulationError


class DistributedSimulation(Simulation):
    """One rank's slab of an LX x LY lattice split along X over the ranks of `comm`.

    Same constructor arguments as ``Simulation`` (LX is the global width), plus
    ``overlap`` (split the slab into edges and bulk so the bulk update hides the MPI
    exchange; default True).  ``regions`` are this rank's regions; their ``x_start`` are
    global columns.  See the module doc for which methods are collective.
    """

    def __init__(self, comm, lx: int, ly: int, *, overlap: bool = True, **kw):
        self.comm = comm
        self.rank, self.nranks = comm.rank, comm.size
        check_decomposition(lx, self.nranks, velocity_set(kw.get("velocity_set", DEFAULT_VELOCITY_SET)).max_hop)
        self.slab_widths = slab_widths(lx, self.nranks)
        self.slab_starts = slab_starts(lx, self.nranks)
        self.x0, self.local_lx = self.slab_starts[self.rank], self.slab_widths[self.rank]
        self.left, self.right = (self.rank - 1) % self.nranks, (self.rank + 1) % self.nranks
        self.overlap = overlap
        error = None
        if kw.get("time_block") == "auto":
            kw["time_block"] = 1      # ranks trade 3-wide halos every step: no temporal blocking
        try:
            if kw.get("time_block", 1) != 1:
                raise SimulationError(f"time_block={kw['time_block']!r}: temporal blocking runs in one process; "
                                      f"MPI ranks trade their halos every step (use time_block=1)")
            super().__init__(lx, ly, **kw)
        except Exception as e:   # noqa: BLE001 - made collective below
            error = e
        agree(comm, error)
        mine = [{"rank": self.rank, "backend": r.program.spec.backend, "layout": r.program.layout.tag,
                 "columns": [r.x_start, r.width]} for r in self.regions]
        self.rank_regions = [d for part in comm.allgather(mine) for d in part]

    def region_table(self) -> list:
        return self.rank_regions

    def _region_plan(self, lx, backend, device_backend, host_columns, backend_options, device_options) -> list:
        w, x0, H = self.local_lx, self.x0, self.vs.max_hop
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

    def _exchange_begin(self):
        """Y halos of every region, post the MPI exchange of the slab's outer columns, local links."""
        for r in self.regions:
            r.program.halo(r.f)
        first, last, H = self.regions[0], self.regions[-1], self.vs.max_hop
        send_left = np.ascontiguousarray(first.program.read_columns_plain(first.f, 0, H))
        send_right = np.ascontiguousarray(last.program.read_columns_plain(last.f, last.width - H, H))
        recv_left, recv_right = np.empty_like(send_left), np.empty_like(send_right)
        c = self.comm
        requests = [c.Irecv(recv_left, source=self.left, tag=TAG_RIGHTWARD),
                    c.Irecv(recv_right, source=self.right, tag=TAG_LEFTWARD),
                    c.Isend(send_right, dest=self.right, tag=TAG_RIGHTWARD),
                    c.Isend(send_left, dest=self.left, tag=TAG_LEFTWARD)]
        self._local_links()
        return requests, (send_left, send_right, recv_left, recv_right)

    def _exchange_end(self, pending) -> None:
        from mpi4py import MPI
        requests, (_, _, recv_left, recv_right) = pending
        MPI.Request.Waitall(requests)
        first, last = self.regions[0], self.regions[-1]
        first.program.write_columns_plain(first.f, -self.vs.max_hop, recv_left)
        last.program.write_columns_plain(last.f, last.width, recv_right)

    def exchange_halos(self) -> None:
        """Blocking form: every halo filled (collective)."""
        self._exchange_end(self._exchange_begin())

    def step(self, n: int = 1) -> None:
        """n steps; the bulk is updated while the halo messages are in flight (collective)."""
        self._check_can_step(n)
        regs = self.regions
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

    # --- gather / scatter ----------------------------------------------------------------------
    def _local_state(self) -> np.ndarray:
        self.synchronize()
        out = np.empty((self.vs.Q, self.local_lx, self.ly), dtype=self.dtype)
        for r in self.regions:
            out[:, r.x_start - self.x0:r.x_start - self.x0 + r.width, :] = r.program.layout.unpack(
                r.program.download(r.f))
        return out

    def _counts(self):
        counts = [self.vs.Q * w * self.ly for w in self.slab_widths]
        return counts, [sum(counts[:r]) for r in range(self.nranks)]

    def _gather(self, local: np.ndarray) -> Optional[np.ndarray]:
        counts, displs = self._counts()
        local = np.ascontiguousarray(local)
        recv = np.empty(sum(counts), dtype=local.dtype) if self.rank == 0 else None
        self.comm.Gatherv(local, [recv, (counts, displs)] if self.rank == 0 else None, root=0)
        if self.rank != 0:
            return None
        blocks = [recv[d:d + c].reshape(self.vs.Q, w, self.ly) for d, c, w in zip(displs, counts, self.slab_widths)]
        return np.concatenate(blocks, axis=1)

    def _scatter(self, global_array: Optional[np.ndarray], dtype) -> np.ndarray:
        counts, displs = self._counts()
        send = None
        if self.rank == 0:
            send = np.concatenate([np.ascontiguousarray(global_array[:, s:s + w, :], dtype=dtype).ravel()
                                   for s, w in zip(self.slab_starts, self.slab_widths)])
        local = np.empty(counts[self.rank], dtype=dtype)
        self.comm.Scatterv([send, (counts, displs)] if self.rank == 0 else None, local, root=0)
        return local.reshape(self.vs.Q, self.local_lx, self.ly)

    def _local_block(self, local: np.ndarray, r) -> np.ndarray:
        return np.ascontiguousarray(local[:, r.x_start - self.x0:r.x_start - self.x0 + r.width, :])

    def state(self) -> Optional[np.ndarray]:
        """Global (Q, LX, LY) populations in the working precision on rank 0, None elsewhere."""
        return self._gather(self._local_state())

    def populations(self) -> Optional[np.ndarray]:
        s = self.state()
        return None if s is None else s.astype(np.float64)

    def fields(self) -> Optional[Dict[str, np.ndarray]]:
        f = self.populations()
        return None if f is None else self._fields_of(f)

    def set_fields(self, rho=None, ux=None, uy=None, T=None) -> None:
        """Equilibrium of rank 0's fields, scattered (the other ranks' arguments are ignored)."""
        f = root_call(self.comm, lambda: self._equilibrium(rho, ux, uy, T))
        self.set_populations(f)

    def set_populations(self, f: Optional[np.ndarray]) -> None:
        a = root_call(self.comm, lambda: self._checked_populations(f))
        local = self._scatter(a, np.float64)
        for r in self.regions:
            r.f = r.program.upload_fields(self._local_block(local, r), r.f)
        self._fields_set = True

    def restore(self, populations: Optional[np.ndarray], time_step: Optional[int]) -> None:
        """Rank 0's saved state, scattered; bit-identical to never having stopped."""
        expected = (self.vs.Q, self.lx, self.ly)

        def check():
            self._check_time_step(time_step)
            p = np.asarray(populations)
            if p.shape != expected:
                raise SimulationError(f"saved populations have shape {p.shape}; this run needs {expected}")
            if p.dtype != self.dtype:
                raise SimulationError(f"saved populations are {p.dtype}; this run computes in "
                                      f"{np.dtype(self.dtype)} (precision mismatch)")
            return p
        p = root_call(self.comm, check)
        local = self._scatter(p, self.dtype)
        for r in self.regions:
            r.f = r.program.upload(r.program.layout.pack(self._local_block(local, r)), r.f)
        self.time_step = int(self.comm.bcast(time_step, root=0))
        self._fields_set = True

    def check_finite(self) -> None:
        """Raise the same SimulationError on every rank if any rank's slab went bad (collective)."""
        from mpi4py import MPI
        if self.comm.allreduce(int(self.looks_healthy()), op=MPI.MIN):
            return     # the cheap test passed on every rank
        bad = self._first_bad_site(self._local_state().astype(np.float64))
        if not self.comm.allreduce(int(bad is not None), op=MPI.MAX):
            return
        sites = self.comm.gather(bad, root=0)
        message = None
        if self.rank == 0:
            r = next(i for i, s in enumerate(sites) if s is not None)
            x, y, what, values = sites[r]
            message = str(self._divergence_error(x + self.slab_starts[r], y, what, values))
        raise collective(SimulationError(self.comm.bcast(message, root=0)))

    def run(self, steps: int, progress: bool = False, callback=None):
        return super().run(steps, progress=progress and self.rank == 0, callback=callback)
