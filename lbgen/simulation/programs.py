"""How ``Simulation`` builds its programs (lbgen/backends: one Program per runtime for any D; the
lattice then calls the Program API directly): the runtimes a D takes, the spec check, the
compile and the boundaries.  Also the regions of a lattice (``Region``:
one program each; ``split_columns``: the host + device split along X) and the planes of X they
trade (``read_planes`` / ``write_planes``, layout-independent)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np

from lbgen.simulation.parameters import SimulationError


@dataclass
class Region:
    """A band of whole planes of X [x_start, x_start + width) (mod LX) run by one program."""

    program: object
    x_start: int
    width: int
    f: object = None
    g: object = None

    @property
    def columns(self) -> np.ndarray:
        return np.arange(self.x_start, self.x_start + self.width)


def split_columns(lx: int, host_columns: int, halo: int) -> Tuple[int, int]:
    """Validate a host/accelerator split: M host planes of X at each side of the device bulk."""
    M = int(host_columns)
    if M < 0 or 2 * M > lx:
        raise SimulationError(f"host columns M={M} must satisfy 0 <= 2M <= LX={lx}")
    if M and 2 * M < halo:
        raise SimulationError(f"host columns M={M}: the host region (2M = {2 * M} columns) must be at least "
                              f"{halo} columns wide (the halo width), so M >= {(halo + 1) // 2} or M = 0")
    if lx - 2 * M and lx - 2 * M < halo:
        raise SimulationError(f"host columns M={M} leave the device {lx - 2 * M} columns; it needs at least "
                              f"{halo} (or none: M = LX/2)")
    return M, lx - 2 * M


def runtimes(D: int) -> tuple:
    """The runtime names a lattice takes (any D: the CUDA host shim too)."""
    from lbgen.backends import RUNTIMES
    return tuple(RUNTIMES)


def checked_spec(spec, shape: Sequence[int]):
    """The validated spec of a program on ``shape``, every size rule checked before compiling."""
    if len(shape) == 2:
        return spec.validate(*shape)
    from lbgen.codegen.kernel_api import check_sizes3d
    from lbgen.model.velocity_set import velocity_set
    spec = spec.validate()
    problem = check_sizes3d(spec, velocity_set(spec.velocity_set), *shape)
    if problem:
        raise SimulationError(f"{problem} ({spec.layout}{'-vl' + str(spec.vl) if spec.vl else ''}; choose another "
                              f"vl or layout, or another L{'XYZ'[len(shape) - 1]})")
    return spec


def compile_program(runtime: str, source, shape: Sequence[int], threads: int, strict: bool, options: dict):
    """The program of ``runtime`` for ``source`` on a lattice of ``shape`` (``options``: the
    runtime's own, e.g. an OpenCL ``device``)."""
    from lbgen import backends
    return backends.compile(runtime, source, tuple(shape), strict=strict, threads=threads, **options)


def boundaries(program, bounds) -> None:
    """Give ``program`` the bounce-back boundaries ``bounds`` (``boundaries.BounceBack``; None:
    periodic), which its sweeps then apply."""
    if bounds is not None:
        program.set_boundaries(**bounds.kernel_fields())


# --- the padded planes of X, layout-independent ------------------------------------------------
def _plane_maps(layout, n: int):
    """(pos, src, rep, extents, SX) of n padded planes of X from x = 0 (add x0 SX for x0): every
    storage cell ``pos`` of them and the cell ``src`` of the plain form plain[p, i, (y + H,) c + HY]
    it holds (c = r + k NR: lane-shifted halo rows included), and per plain cell ``rep``, the
    storage cell of its interior site (the other axes wrapped periodically: a runtime that wraps
    an axis inside its kernels leaves that axis' halo copies stale)."""
    key = ("_plane_maps", n)
    cache = layout.__dict__.setdefault("_maps", {})
    if key not in cache:
        H, HY, NR, L = layout.halo, layout.HY, layout.NR, layout.shape[-1]
        middle = [np.arange(-H, m + H) for m in layout.shape[1:-1]]
        p, i, *w, r, k = np.meshgrid(np.arange(layout.Q), np.arange(n), *middle, np.arange(-HY, NR + HY),
                                     np.arange(layout.VL), indexing="ij", sparse=True)
        extents = (layout.Q, n, *(m + 2 * H for m in layout.shape[1:-1]), L + 2 * HY)
        pos = layout.index(p, i, *w, r, k)
        src = np.ravel_multi_index((p, i, *(c + H for c in w), r + k * NR + HY), extents)
        pos, src = (a.ravel() for a in np.broadcast_arrays(pos, src))
        p, i, *w, c = np.meshgrid(np.arange(layout.Q), np.arange(n), *middle, np.arange(-HY, L + HY),
                                  indexing="ij", sparse=True)
        rep = layout.site_index(p, i, *(c % m for c, m in zip(w, layout.shape[1:-1])), c % L)
        cache[key] = (pos, src, np.broadcast_to(rep, extents).ravel(), extents, layout.strides["SX"])
    return cache[key]


def read_planes(program, f, x0: int, n: int, plain: bool) -> np.ndarray:
    """Padded planes x0 .. x0+n-1 of f (x from -H): as the program stores them, or ``plain``
    (layout-independent, for a region of another layout)."""
    if program.layout.D == 2:
        return program.read_columns_plain(f, x0, n) if plain else program.read_columns(f, x0, n)
    pos, src, rep, extents, stride = _plane_maps(program.layout, n)
    flat = f if isinstance(f, np.ndarray) else program.download(f)
    return flat[rep + x0 * stride].reshape(extents)


def write_planes(program, f, x0: int, data: np.ndarray, plain: bool) -> None:
    """Inverse of ``read_planes``."""
    if program.layout.D == 2:
        (program.write_columns_plain if plain else program.write_columns)(f, x0, data)
        return
    pos, src, _, _, stride = _plane_maps(program.layout, np.shape(data)[1])
    values = np.asarray(data, dtype=program.dtype).reshape(-1)[src]
    if isinstance(f, np.ndarray):
        f[pos + x0 * stride] = values
        return
    flat = program.download(f)
    flat[pos + x0 * stride] = values
    program.upload(flat, f)
