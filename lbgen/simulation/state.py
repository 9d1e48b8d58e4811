"""A ``Simulation``'s stored populations read back from its buffers (``state``, ``state_chunks``):
the natural (Q, *shape) array of the storage's values that a checkpoint saves, whole or in
pieces.  In place, the buffers are made natural first and the solid cells read 0, as the pull
kernels leave them (``lbgen.simulation.inplace``)."""
from __future__ import annotations

import numpy as np


def whole_region(sim):
    """The one region when it holds the whole lattice, its columns in order (else None)."""
    first = sim.regions[0]
    if len(sim.regions) == 1 and np.array_equal(first.columns % sim.lx, np.arange(sim.lx)):
        return first
    return None


def _unpacked(sim, r) -> np.ndarray:
    """A region's natural state (host buffers are read in place: no flat copy of the lattice first)."""
    out = r.program.layout.unpack(r.f if isinstance(r.f, np.ndarray) else r.program.download(r.f))
    return out if sim._parity is None else sim._parity.solids_zeroed(sim, r, out)


def state(sim) -> np.ndarray:
    """``Simulation.state``: the (Q, *shape) stored values, the caller's array."""
    r = whole_region(sim)
    if r is not None:                # the one copy a checkpoint needs (unpack's gather), no second
        out = _unpacked(sim, r)
        # a layout whose unpack is a view of the host buffer (the next step, or the buffer's
        # release, would change it): copied, so the state is the caller's
        return out.copy() if isinstance(r.f, np.ndarray) and np.may_share_memory(out, r.f) else out
    out = np.empty((sim.vs.Q, *sim.shape), dtype=sim.dtype)
    for r in sim.regions:
        out[:, r.columns % sim.lx] = _unpacked(sim, r)
    return out


def state_chunks(sim, cells: int = 1 << 18):
    """``Simulation.state_chunks``: the values of ``state`` in the C order of its array, one
    population's slab of about ``cells`` sites at a time (``Layout.unpack_slabs``), so that a
    checkpoint of a host lattice streams them to its file without a copy of the lattice; a
    lattice of several regions or on a device yields ``state``'s populations one by one."""
    r = whole_region(sim)
    if r is None or not isinstance(r.f, np.ndarray):
        whole = state(sim)
        for p in range(sim.vs.Q):
            yield whole[p]
        return
    zero, solid = None, None
    if sim._parity is not None and sim.mask is not None:     # in place: solid cells read the stored 0
        zero = r.program.codec.encode(np.zeros((sim.vs.Q, 1)))[:, 0]
        solid = sim.mask == 1
    for p, x0, x1, values in r.program.layout.unpack_slabs(r.f, cells):
        if solid is not None:
            values[solid[x0:x1]] = zero[p]
        yield values
