"""One decomposition of a lattice over a Cartesian grid of MPI ranks, for any D.

Along each axis of N sites split over P ranks, coordinate c owns w_c = N // P sites, plus one
for the first N % P coordinates (``slab_widths``, ``slab_starts``); every split axis needs
w_c >= k H (k the time block, H the largest hop), else the grid is refused naming the sizes.
The grid: ``--ranks-grid`` given (``parse_ranks_grid``: 'PXxPY' or 'PXxPYxPZ'), else auto
(MPI_Dims_create, then the valid factorisation with the fewest halo sites): ``rank_grid``
for a 2D lattice (its thermal walls and host + device ranks have their own rules),
``rank_grid3d`` for a 3D one; ``check_decomposition`` is the X-slab form of the rule
(``--hetero``).

Walls on split axes (3D): a block holds the wall faces it touches and trades no slab across
them (``ghost_sides``; ``block_extents`` gives the blocks' extents with their ghosts); a lone
wall face on an axis whose other face is periodic is refused (``paired_walls``).
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from lbgen.model.catalog import AXES
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


def _axis_problem(name: str, n: int, p: int, need: int, what: str = "the halo needs") -> Optional[str]:
    if p > 1 and n // p < need:
        return (f"{name}={n} split over {p} ranks leaves sub-domains of {n // p} sites, fewer than the "
                f"{need} {what}")
    return None


def rank_grid(size: int, lx: int, ly: int, halo: int, grid=None, depth: int = 1, walled: bool = False,
              x_only: bool = False, wall_split: Optional[str] = None, wall_ly: int = 0) -> tuple:
    """(PX, PY) of `size` ranks for an LX x LY lattice, checked before any work.

    `grid`: (PX, PY), or None for auto: MPI_Dims_create (``MPI.Compute_dims``), and when its
    sub-domains are too thin the valid factorization with the fewest halo sites.  Every split
    axis needs sub-domains of at least depth x halo sites (a time block of `depth` steps
    exchanges depth x halo wide halos).  `walled`: Y has walls; split only when the kernels
    take per-side wall switches (`wall_split` None; else it says why not), with at least
    `wall_ly` rows per part (``lbgen.model.walls.min_ly_walls``: every part's kernels are
    generated with walls); `x_only` (host + device ranks): X only."""
    need = depth * halo
    y_need = max(need, wall_ly) if walled else need
    halo_what = f"the halo needs ({depth} x {halo}: time block x largest hop)"
    y_what = halo_what if y_need == need else "a walled part needs (its kernels hold wall rows at both ends)"
    no_y = x_only or (walled and wall_split is not None)
    if grid is not None:
        px, py = grid
        if px * py != size:
            raise collective(SimulationError(
                f"--ranks-grid {px}x{py} has {px * py} ranks but mpiexec started {size}: PX x PY must equal "
                f"the number of ranks"))
        if py > 1 and walled and wall_split is not None:
            raise collective(SimulationError(
                f"--ranks-grid {px}x{py} splits Y, the walled axis: {wall_split}. Split X only (--ranks-grid "
                f"{size}x1) or run a periodic box (--periodic)"))
        if py > 1 and x_only:
            raise collective(SimulationError(
                f"--ranks-grid {px}x{py} splits Y; host + device ranks (--hetero) split their columns, so only "
                f"X may be split: use --ranks-grid {size}x1"))
        problems = [m for m in (_axis_problem("LX", lx, px, need, halo_what), _axis_problem("LY", ly, py, y_need, y_what)) if m]
        if problems:
            raise collective(SimulationError(
                f"--ranks-grid {px}x{py} on {lx} x {ly}: {'; '.join(problems)}. Use fewer ranks along that axis, "
                f"a larger lattice or a smaller --time-block"))
        return px, py
    if no_y:
        candidates = [(size, 1)]
    else:
        from mpi4py import MPI
        first = tuple(MPI.Compute_dims(size, 2))
        pairs = sorted(((a, size // a) for a in range(1, size + 1) if size % a == 0),
                       key=lambda d: (d[0] * ly + d[1] * lx, -d[0]))
        candidates = [first] + [d for d in pairs if d != first]
    for px, py in candidates:
        if not (_axis_problem("LX", lx, px, need, halo_what) or _axis_problem("LY", ly, py, y_need, y_what)):
            return px, py
    px, py = candidates[0]
    why = _axis_problem("LX", lx, px, need, halo_what) or _axis_problem("LY", ly, py, y_need, y_what)
    raise collective(SimulationError(
        f"{size} MPI ranks do not fit the {lx} x {ly} lattice: the grid {px}x{py}: {why}. "
        f"Use fewer ranks, a larger lattice or a smaller --time-block"))


def rank_grid3d(size: int, shape, halo: int, grid=None, depth: int = 1, walled=()) -> tuple:
    """(PX, PY, PZ) of `size` ranks for a lattice of `shape`, checked before any work: the
    product is the rank count and every split axis has sub-domains of at least depth x halo
    planes (walled axes may be split: each block holds the wall faces it touches).  None:
    MPI_Dims_create with the `walled` axes held at 1 where that fits, else the first valid
    factorisation with the fewest halo sites."""
    need = depth * halo

    def problems(g):
        return [f"{a.upper()}={n} split over {p} ranks leaves sub-domains of {n // p} planes, fewer than the "
                f"{need} the halo needs ({depth} x {halo}: time block x largest hop)"
                for a, n, p in zip(AXES, shape, g) if p > 1 and n // p < need]
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
