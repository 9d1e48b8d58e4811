"""``Simulation.set_fields_by_slabs``: a lattice's populations set from fields given one slab of X
planes at a time (issue 38 item 4), so that a run never holds its initial fields whole (five
float64 arrays: 40 B a cell in 3D, beside a 16-bit in-place run's 44 B of populations).

A host lattice of one region runs the same init kernel on a staging lattice of the slab's planes
(``CProgram.slab_program``: the same library) and copies its planes into the buffer, then refreshes
the halo: the buffer holds the bits ``set_fields`` of the whole arrays gives (the kernel is per
site; tests/simulation/test_memory.py compares the buffers).  Other lattices (several regions, a
device, a mask, thermal walls across x) get the whole arrays assembled from the slabs and ``set_fields``."""
from __future__ import annotations

from typing import Callable, Dict, List, Tuple

import numpy as np

from lbgen.model.catalog import field_names
from lbgen.simulation.interface import checked_fields
from lbgen.simulation.state import whole_region

#: the sites of one slab (whole planes of X, at least one, at least the halo width)
SLAB_CELLS = 1 << 17
#: the least number of slabs of a lattice (of LX // SLAB_PARTS planes or more)
SLAB_PARTS = 16


def slab_bounds(lx: int, plane: int, least: int, cells: int = SLAB_CELLS) -> List[Tuple[int, int]]:
    """The slabs (x0, x1) of ``lx`` planes of ``plane`` sites: about ``cells`` sites each and at
    most a SLAB_PARTS-th of the lattice (a slab's staging lattice and fields are that share of the
    whole's), none narrower than ``least`` planes (a short last slab joins the one before)."""
    width = max(least, min(cells // max(plane, 1), lx // SLAB_PARTS), 1)
    bounds = [(x0, min(x0 + width, lx)) for x0 in range(0, lx, width)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] < least:
        bounds[-2:] = [(bounds[-2][0], lx)]
    return bounds


def _slabs_run(region) -> bool:
    """Whether a staging lattice of a few X planes runs ``region``'s kernels: a host buffer, run-time
    sizes, and no thermal walls across x (their kernels need 8 planes or more across the walls)."""
    spec = region.program.spec
    return isinstance(region.f, np.ndarray) and hasattr(region.program, "slab_program") and \
        not spec.compile_time_sizes and not (spec.walls and spec.wall_axis == "x")


def set_fields_by_slabs(sim, slab: Callable[[int, int], Dict[str, np.ndarray]], cells: int = SLAB_CELLS) -> None:
    """``sim.set_fields`` of the fields ``slab(x0, x1)`` gives on each slab of X planes (a dict
    rho, ux, uy[, uz], T of arrays of shape (x1 - x0, ...)); every slab is checked before any
    work (``checked_fields``, sites counted on the lattice), then the populations are set."""
    names = field_names(sim.dimension)
    rest = tuple(sim.shape[1:])
    bounds = slab_bounds(sim.lx, int(np.prod(rest)), sim.vs.max_hop, cells)
    fluid = None if sim.mask is None else sim.mask == 0
    for x0, x1 in bounds:                 # refused before any work, naming the lattice's site
        values = slab(x0, x1)
        checked_fields([values[n] for n in names], (x1 - x0, *rest), sim.vs, sim.force,
                       None if fluid is None else fluid[x0:x1], x0=x0)
    r = whole_region(sim)
    if r is None or sim.mask is not None or not _slabs_run(r):
        whole = {n: np.empty(sim.shape) for n in names}
        for x0, x1 in bounds:
            values = slab(x0, x1)
            for n in names:
                whole[n][x0:x1] = values[n]
        sim.set_fields(**whole)
        return
    staging = {}
    for x0, x1 in bounds:
        width = x1 - x0
        if width not in staging:
            program = r.program.slab_program(width)
            staging = {width: (program, program.allocate())}      # one staging lattice at a time
        program, f = staging[width]
        values = slab(x0, x1)
        arrays = checked_fields([values[n] for n in names], (width, *rest), sim.vs, sim.force, x0=x0)
        del values
        program.init_equilibrium(f, *arrays, force=sim.force)
        del arrays
        r.program.layout.x_planes(r.f, x0, x1)[...] = program.layout.x_planes(f, 0, width)
    del staging
    r.program.halo(r.f)
    sim._fields_set = True
    sim._natural(reset=True)


#: the sites of one slab of the fields by slabs (whole planes of X, at least one): the staging
#: lattice holds that share of the buffer, its fields that share of the lattice's
FIELD_SLAB_CELLS = 1 << 16


def field_slabs(sim, native: bool = False, cells: int = FIELD_SLAB_CELLS):
    """``sim.fields(native)``' arrays one slab of X planes at a time: (dtype, bounds, compute) with
    ``compute(x0, x1)`` -> {rho, ux, uy[, uz], T} of the planes x0 <= x < x1 -- the populations of
    those planes copied into a staging lattice (``CProgram.slab_program``) and its fields kernel
    run there (per site: the whole lattice's bits; solid cells 0).  Only for the step it was made
    at (a later read is refused).  None for the lattices set_fields_by_slabs gives whole arrays
    (several regions, a device, compile-time sizes, thermal walls across x)."""
    from lbgen.simulation.parameters import SimulationError
    r = whole_region(sim)
    if r is None or not _slabs_run(r):
        return None
    bounds = slab_bounds(sim.lx, int(np.prod(sim.shape[1:])), 1, cells)
    step = sim.time_step
    single = native and r.program.codec.arith_dtype == np.float32

    def compute(x0: int, x1: int) -> Dict[str, np.ndarray]:
        if sim.time_step != step:
            raise SimulationError(f"the fields of step {step} read by slabs at step {sim.time_step}: make them again")
        sim.synchronize()
        sim._natural()
        program = r.program.slab_program(x1 - x0)
        f = program.allocate()
        program.layout.x_planes(f, 0, x1 - x0)[...] = r.program.layout.x_planes(r.f, x0, x1)
        out = program.fields(f, force=sim.force, native=native)
        del f
        if sim.mask is not None:
            solid = sim.mask[x0:x1] == 1
            for v in out.values():
                v[solid] = 0.0
        return out
    return np.dtype(np.float32 if single else np.float64), bounds, compute
