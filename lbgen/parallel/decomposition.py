"""One decomposition of a lattice over a Cartesian grid of MPI ranks, for any D.

Along each axis of N sites split over P ranks, coordinate c owns w_c = N // P sites, plus one
for the first N % P coordinates (``slab_widths``, ``slab_starts``); every split axis needs
w_c >= k H (k the time block, H the largest hop), else the grid is refused naming the sizes.
The grid: ``--ranks-grid`` given (``parse_ranks_grid``: 'PXxPY' or 'PXxPYxPZ'), else auto
(MPI_Dims_create, then the valid factorisation with the fewest halo sites): ``rank_grid``
for any D (the 2D thermal walls and host + device ranks add their rules as arguments);
``check_decomposition`` is the X-slab form of the rule (``--hetero``).

Walls on split axes (any D): a block holds the wall faces it touches and trades no slab across
them (``ghost_sides``; ``block_extents`` gives the blocks' extents with their ghosts,
``block_indices`` one block's global indices, to cut a mask); a lone wall face on an axis
whose other face is periodic is refused (``paired_walls``).
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from lbgen.model.catalog import AXES, SIDES
from lbgen.parallel.mpi import collective
from lbgen.simulation.parameters import SimulationError

_GRID = None    # the rank grid of an MPI-launched 2D CLI run, (PX, PY) or None for auto (set_launch_grid)


def slab_widths(lx: int, n: int) -> List[int]:
    """w_r = LX // N, plus one for the first LX % N ranks."""
    return [lx // n + (1 if r < lx % n else 0) for r in range(n)]


def slab_starts(lx: int, n: int) -> List[int]:
    w = slab_widths(lx, n)
    return [sum(w[:r]) for r in range(n)]


def check_decomposition(lx: int, n: int, halo: int) -> None:
    if n < 1:
        raise collective(SimulationError(f"the number of ranks N={n} must be >= 1"))
    if lx // n < halo:
        raise collective(SimulationError(
            f"LX={lx} is too narrow for N={n} MPI ranks: rank r owns w_r = LX // N columns (one more for the "
            f"first LX % N ranks), here as few as {lx // n}, and every rank needs at least {halo} columns (the "
            f"halo width). Use at most {lx // halo} ranks or a lattice with LX >= {halo * n}."))


def parse_ranks_grid(text, dimensions: int = 2) -> Optional[tuple]:
    """'auto' (or None) -> None; 'PXxPY' (2D) or 'PXxPYxPZ' (dimensions=3) -> the counts,
    each a positive integer."""
    if text is None or (isinstance(text, str) and text.strip().lower() == "auto"):
        return None
    if isinstance(text, (tuple, list)):
        parts = list(text)
    else:
        parts = str(text).lower().replace("*", "x").split("x")
    try:
        dims = tuple(int(str(p).strip()) for p in parts)
    except ValueError:
        dims = ()
    if len(dims) != dimensions or min(dims) < 1:
        form = "PXxPY (ranks along X times ranks along Y, e.g. 2x2)" if dimensions == 2 else \
            "PXxPYxPZ (ranks along X, Y and Z, e.g. 2x1x2)"
        raise collective(SimulationError(
            f"--ranks-grid {text!r}: give 'auto' or {form}, {dimensions} positive integers"))
    return dims


def factorisations(size: int, dimensions: int) -> List[tuple]:
    """Every grid of `dimensions` positive counts whose product is `size`."""
    if dimensions == 1:
        return [(size,)]
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    return [(d,) + rest for d in divisors for rest in factorisations(size // d, dimensions - 1)]


def rank_grid(size: int, shape, halo: int, grid=None, depth: int = 1, *, held=(), unsplit=None,
              part_need=None) -> tuple:
    """The grid (PX, PY[, PZ]) of `size` ranks for a lattice of `shape` (LX, LY[, LZ]), checked
    before any work: the one rule of every D.

    `grid`: the counts given (``--ranks-grid``), or None for auto: MPI_Dims_create
    (``MPI.Compute_dims``) with the axes of `held` (a preference: 3D walls) and `unsplit` at 1,
    and when its sub-domains are too thin (or every axis is held) the valid factorisation with
    the fewest halo sites.  Every split axis needs sub-domains of at least depth x halo sites
    (a time block of `depth` steps trades depth x halo wide slabs), or ``part_need[axis] =
    (sites, what)`` where that axis' parts need more (2D thermal walls: ``min_ly_walls`` rows).
    `unsplit`: {axis: why} axes that may not be split (a grid that splits one is refused,
    naming the grid and then why: 2D walls under time blocks, host + device ranks)."""
    names = AXES[:len(shape)]
    unsplit = dict(unsplit or {})
    needs = {a: (depth * halo, f"the halo needs ({depth} x {halo}: time block x largest hop)") for a in names}
    for a, (n, what) in (part_need or {}).items():
        if n > needs[a][0]:
            needs[a] = (n, what)

    def text(g):
        return "x".join(map(str, g))

    def problems(g):
        return [f"L{a.upper()}={n} split over {p} ranks leaves sub-domains of {n // p} sites, fewer than the "
                f"{needs[a][0]} {needs[a][1]}" for a, n, p in zip(names, shape, g) if p > 1 and n // p < needs[a][0]]
    if grid is not None:
        grid = tuple(int(p) for p in grid)
        if int(np.prod(grid)) != size:
            raise collective(SimulationError(
                f"--ranks-grid {text(grid)} has {int(np.prod(grid))} ranks but mpiexec started {size}: "
                f"{' x '.join('P' + a.upper() for a in names)} must equal the number of ranks"))
        for a, why in unsplit.items():
            if grid[names.index(a)] > 1:
                raise collective(SimulationError(f"--ranks-grid {text(grid)} {why}"))
        bad = problems(grid)
        if bad:
            raise collective(SimulationError(
                f"--ranks-grid {text(grid)} on {' x '.join(map(str, shape))}: {'; '.join(bad)}. Use fewer ranks "
                f"along that axis, a larger lattice or a smaller --time-block"))
        return grid
    every = [g for g in factorisations(size, len(names)) if all(g[names.index(a)] == 1 for a in unsplit)]
    sites = int(np.prod(shape))
    every.sort(key=lambda g: (sum(sites // n * p for n, p in zip(shape, g)), tuple(-p for p in g)))
    fixed = [1 if a in unsplit or a in held else 0 for a in names]
    if 0 in fixed:
        from mpi4py import MPI
        every.insert(0, tuple(MPI.Compute_dims(size, fixed)))
    for g in every:
        if not problems(g):
            return g
    raise collective(SimulationError(
        f"{size} MPI ranks do not fit the {' x '.join(map(str, shape))} lattice: the grid {text(every[0])}: "
        f"{'; '.join(problems(every[0]))}. Use fewer ranks, a larger lattice or a smaller --time-block"))


def paired_walls(faces) -> None:
    """SimulationError unless every walled axis of a distributed lattice has walls on both
    faces: a wall on one face with the other periodic would stand at the periodic seam, inside
    the ghost planes of the rank across it (one process takes it, as a block of a larger lattice)."""
    for axis in dict.fromkeys(a for a, _ in faces):
        sides = [s for a, s in faces if a == axis]
        if len(sides) == 1:
            other = "high" if sides[0] == "low" else "low"
            raise SimulationError(f"walls: the {axis}-{sides[0]} face alone is a wall of a distributed lattice whose "
                                  f"{axis}-{other} face is periodic; over several ranks a walled axis has walls on both "
                                  f"faces (walls='{axis}')")


def ghost_sides(axis: str, coord: int, ranks: int, faces) -> tuple:
    """Which slabs the block at `coord` of `ranks` along `axis` trades: (receive low, receive
    high, send low, send high), given the lattice's wall faces ((axis, side) pairs).  An
    unsplit axis trades none; a block at a wall face receives nothing across it (no ghosts
    there) and its neighbour across the periodic wrap sends it nothing."""
    if ranks == 1:
        return False, False, False, False
    low, high = coord == 0, coord == ranks - 1
    wall_low, wall_high = (axis, "low") in faces, (axis, "high") in faces
    return (not (low and wall_low), not (high and wall_high), not (low and wall_high), not (high and wall_low))


def block_extents(shape, dims, depth: int, halo: int, faces=()) -> list:
    """Per axis, the sorted extents of the ranks' extended blocks (owned planes plus the ghost
    planes each side receives: depth x halo), e.g. for a layout's VL to divide every Z extent."""
    out = []
    for a, n, p in zip(AXES, shape, dims):
        extents = set()
        for c, w in enumerate(slab_widths(n, p)):
            recv_low, recv_high = ghost_sides(a, c, p, faces)[:2]
            extents.add(w + depth * halo * (recv_low + recv_high))
        out.append(sorted(extents))
    return out


def block_indices(shape, dims, coords, width: int, faces=()) -> list:
    """Per axis, the global indices (periodic) of the extended block at `coords`: its owned
    sites plus `width` ghost sites on each side that receives (``ghost_sides``), e.g. to cut
    a voxel mask per block (ghosts included)."""
    out = []
    for a, n, p, c in zip(AXES, shape, dims, coords):
        s, w = slab_starts(n, p)[c], slab_widths(n, p)[c]
        recv_low, recv_high = ghost_sides(a, c, p, faces)[:2]
        out.append(np.arange(s - width * recv_low, s + w + width * recv_high) % n)
    return out


def set_launch_grid(text, comm) -> None:
    """``--ranks-grid`` of the CLI: 'auto' or 'PXxPY', checked before any work.  A grid other
    than auto needs mpiexec (a single process with '1x1' is accepted: it is one rank)."""
    global _GRID
    grid = parse_ranks_grid(text)
    if comm is None and grid not in (None, (1, 1)):
        raise SimulationError(f"--ranks-grid {text}: a grid of {grid[0] * grid[1]} ranks needs "
                              f"mpiexec -n {grid[0] * grid[1]} lbgen ...; this is a single process")
    _GRID = grid


def launch_grid():
    """The rank grid the CLI was given ((PX, PY)), or None for auto."""
    return _GRID


def thermal_faces(D: int, walls=None) -> tuple:
    """The faces of the thermal walls (``Walls``): low and high of their axis (``Walls.axis_of``;
    the last axis, y in 2D, z in 3D, by default)."""
    axis = walls.axis_of(D) if walls is not None else AXES[D - 1]
    return tuple((axis, side) for side in SIDES)
