"""The 3D C/OpenMP kernels of one spec for one lattice size: ``CProgram3D``.

The 3D counterpart of ``CProgram`` (lbgen.backends.c): the same compile cache
(``build``), the same cffi loader, host buffers in the layout's order
(``layouts.Layout``).  Its kernels take the 2D calling convention: a ``<prefix>_region``
and one ``<prefix>_params`` record (``_par``: the operator's parameters, the force and the
boundary fields -- ``boundaries``: half-way bounce-back walls per face, moving lids, a voxel
mask; None: a periodic box), built once per set of values and passed to every sweep.
"""
from __future__ import annotations

from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from lbgen.backends.base import Program3D, load_library, ordered_parameters
from lbgen.model.catalog import AXES, SIDES
from lbgen.system.limits import resolve_threads

def face_index(axis: str, side: str) -> int:
    """The bit / row of a face in the kernels' boundary fields (walls, lids, lid): 2a + s (a: the axis'
    place in AXES, x y z; s: the side's in SIDES, low high)."""
    return 2 * AXES.index(axis) + SIDES.index(side)


def _face_key(face, what: str = "lid face") -> Tuple[str, str]:
    """A face as (axis, side), from ('z', 'high') or 'z-high'; anything else refused naming it."""
    parts = tuple(face.split("-")) if isinstance(face, str) else tuple(face) if isinstance(face, tuple) else ()
    if len(parts) != 2 or parts[0] not in AXES or parts[1] not in SIDES:
        raise ValueError(f"{what} {face!r}: name it 'z-high' or ('z', 'high'): an axis among x, y, z and a side "
                         f"among low, high")
    return parts


def wall_faces_of(walls) -> Tuple[Tuple[str, str], ...]:
    """The wall faces (axis, side) in bit order (2a + s) of ``walls``: axes ('z': both z faces)
    and faces ('z-low' or ('z', 'low')) mixed; anything else refused naming it."""
    faces = set()
    for item in walls:
        if isinstance(item, str) and item in AXES:
            faces.update((item, side) for side in SIDES)
        elif isinstance(item, str) and "-" not in item:
            raise ValueError(f"wall axis {item!r}: choose among x, y, z (or a face such as 'z-low')")
        else:
            faces.add(_face_key(item, "wall face"))
    return tuple(sorted(faces, key=lambda f: face_index(*f)))


def checked_boundaries(walls: Sequence, lids: Optional[Mapping], solid: Optional[np.ndarray],
                       shape: Tuple[int, int, int]):
    """The boundaries every 3D runtime takes, checked once: (wall faces (axis, side) in bit
    order, from axes -- both faces -- or faces, see ``wall_faces_of``; {(axis, side): (ux, uy,
    uz)} of floats (a face given as (axis, side) or 'axis-side'), None or the contiguous uint8
    mask).  A wall axis outside x, y, z, a lid on a face without a wall, a lid velocity without
    3 components, or a mask of another shape or dtype is refused, naming it."""
    lids = {_face_key(face): u for face, u in dict(lids or {}).items()}
    faces = wall_faces_of(walls)
    for (axis, side), u in lids.items():
        if (axis, side) not in faces:
            raise ValueError(f"a lid on the {axis}-{side} face needs a wall there (walls on the {axis} axis or "
                             f"the {axis}-{side} face)")
        if len(tuple(u)) != 3:
            raise ValueError(f"lid {axis}-{side}: velocity {u!r} needs 3 components")
    if solid is not None:
        solid = np.asarray(solid)
        if solid.shape != tuple(shape) or solid.dtype != np.uint8:
            raise ValueError(f"solid mask: {solid.dtype} array of shape {solid.shape}; the kernels take a "
                             f"uint8 array of shape {tuple(shape)}")
        solid = np.ascontiguousarray(solid)
    return (faces, {k: tuple(float(c) for c in v) for k, v in lids.items()}, solid)


def wall_bits(faces) -> int:
    """The params record's ``walls``: bit 2a + s per wall face (axis a, side s)."""
    return sum(1 << face_index(*face) for face in faces)


class Boundaries3D:
    """The boundary fields of the kernels' ``<prefix>_params`` record, checked once for a program,
    with the mask they point to kept alive.  ``walls``: the no-slip wall faces (axis, side) (given
    as axes, both faces, or faces); ``lids``: {(axis, side): (ux, uy, uz)} moving wall faces (model
    units); ``solid``: None or a (LX, LY, LZ) uint8 array (nonzero: a solid voxel)."""

    def __init__(self, program: "CProgram3D", walls: Sequence = (), lids: Optional[Mapping] = None,
                 solid: Optional[np.ndarray] = None):
        self.walls, self.lids, self.solid = checked_boundaries(walls, lids, solid, (program.lx, program.ly, program.lz))
        lid = [[0.0] * 3 for _ in range(6)]
        for face, u in self.lids.items():
            lid[face_index(*face)] = list(u)
        #: the record's boundary fields (walls: bit 2a + s per face)
        self.fields = {"walls": wall_bits(self.walls), "lids": sum(1 << face_index(*face) for face in self.lids),
                       "lid": lid}
        if self.solid is not None:
            self.fields["solid"] = program.ffi.cast("const uint8_t *", self.solid.ctypes.data)

    @property
    def periodic(self) -> bool:
        return not self.walls and self.solid is None


class CProgram3D(Program3D):
    """Compiled 3D kernels of one spec for an lx x ly x lz lattice, buffers in host memory."""

    backend = "c"
    Boundaries = Boundaries3D
    threads: Optional[int] = None

    def __init__(self, source, lx: int, ly: int, lz: int, flags=None, strict: bool = False, threads: int = 0):
        from lbgen.backends.c import api_declarations, build, streaming_pays
        self._describe(source, lx, ly, lz)
        self.library_path = build(source, flags, strict)
        self.ffi, self.lib = load_library(self.library_path,
                                          api_declarations(source.files[source.main_file.replace(".c", ".h")]))
        self.real_c = "double" if self.spec.precision == "double" else "float"
        self.threads = self._fn("set_threads")(resolve_threads(int(threads)))
        # non-temporal stores when the two buffers do not fit in the last-level cache (as in 2D)
        self.streaming_stores = self._fn("set_streaming_stores")(int(streaming_pays(self.layout.size, self.dtype)))
        self._sizes = (self.lx, self.ly, self.lz)

    # --- plumbing ----------------------------------------------------------------------
    def _fn(self, name):
        self.calls[name] += 1
        return getattr(self.lib, f"{self.prefix}_{name}")

    def _ptr(self, a: np.ndarray):
        if a.dtype != self.dtype or not a.flags.c_contiguous or a.size != self.layout.size:
            raise ValueError(f"a lattice buffer of this program is a contiguous {np.dtype(self.dtype)} array of "
                             f"{self.layout.size} elements (allocate())")
        return self.ffi.cast(f"{self.real_c} *", a.ctypes.data)

    def _par(self, bc: Optional[Boundaries3D], params: Optional[Mapping[str, float]]):
        """The kernels' ``<prefix>_params`` record (kept alive by the returned cffi object): the
        operator's parameters and the force by name (None: zero, for propagate, which reads the
        boundary fields only), the boundary fields of ``bc`` (None: zero, a periodic box).
        Remade only when the values change (a run passes the same every step)."""
        values = [0.0] * len(self.parameter_names) if params is None else self._param_values(params)
        key = (bc, tuple(values))
        last = getattr(self, "_last_par", None)
        if last is not None and last[0] == key:
            return last[1]
        fields = dict(zip(self.parameter_names, values))
        if bc is not None:
            fields.update(bc.fields)
        par = self.ffi.new(f"{self.prefix}_params *", fields)
        self._last_par = (key, par)
        return par

    def _region(self, region=None):
        """The kernels' ``<prefix>_region``: None is the whole lattice, else (x0, x1, y0, y1)
        (whole Z lines), checked (``Program3D._check_region``)."""
        x0, x1, y0, y1 = self._check_region(region)
        whole = region is None
        if whole and getattr(self, "_whole", None) is not None:
            return self._whole
        reg = self.ffi.new(f"{self.prefix}_region *", {"x0": x0, "x1": x1, "y0": y0, "y1": y1, "z0": 0, "z1": self.lz})
        if whole:
            self._whole = reg
        return reg

    def _doubles(self, a, shape) -> np.ndarray:
        return np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=np.float64), shape))

    def _param_values(self, params: Mapping[str, float]):
        return ordered_parameters(self, self.parameter_names, params)

    # --- buffers -----------------------------------------------------------------------
    def pack(self, plain: np.ndarray, f: Optional[np.ndarray] = None) -> np.ndarray:
        """(Q, LX, LY, LZ) populations -> a buffer of this layout (the pack kernel; halo refreshed)."""
        plain = self._doubles(plain, (self.vs.Q, self.lx, self.ly, self.lz))
        f = self.allocate() if f is None else f
        self._fn("pack")(self._ptr(f), self.ffi.cast("double *", plain.ctypes.data), *self._sizes)
        return f

    def unpack(self, f: np.ndarray) -> np.ndarray:
        """A buffer -> (Q, LX, LY, LZ) float64 populations (the unpack kernel)."""
        out = np.empty((self.vs.Q, self.lx, self.ly, self.lz))
        self._fn("unpack")(self._ptr(f), self.ffi.cast("double *", out.ctypes.data), *self._sizes)
        return out

    # --- kernels -----------------------------------------------------------------------
    def halo(self, f) -> None:
        self._fn("halo")(self._ptr(f), *self._sizes)

    def propagate(self, prv, nxt, bc: Optional[Boundaries3D] = None, region=None) -> None:
        self._fn("propagate")(self._ptr(prv), self._ptr(nxt), *self._sizes, self._region(region), self._par(bc, None))

    def collide(self, src, dst, bc: Optional[Boundaries3D] = None, region=None, **params) -> None:
        self._fn("collide")(self._ptr(src), self._ptr(dst), *self._sizes, self._region(region), self._par(bc, params))

    def fused(self, prv, nxt, bc: Optional[Boundaries3D] = None, region=None, **params) -> None:
        self._fn("fused")(self._ptr(prv), self._ptr(nxt), *self._sizes, self._region(region), self._par(bc, params))

    def fused_tb(self, prv, nxt, depth: int, bc: Optional[Boundaries3D] = None, **params) -> None:
        """`depth` fused steps in one sweep through cache (temporal blocking along X): prv
        (fresh halo) -> nxt (interior), the bits of `depth` x (halo, fused)."""
        from lbgen.codegen.spec import time_block_value
        if isinstance(depth, str):
            raise ValueError(f"time block {depth!r} is not an integer (time steps per sweep)")
        depth = time_block_value(depth, allow_auto=False)
        status = self._fn("fused_tb")(self._ptr(prv), self._ptr(nxt), *self._sizes, depth, self._par(bc, params))
        if status == 1:
            raise MemoryError(f"fused_tb: no memory for the per-thread ring of {depth - 1} time levels")
        if status:
            raise ValueError(f"fused_tb refused depth {depth}")

    def get_region(self, f, cells) -> np.ndarray:
        """The populations of a block of cells (x0, x1, y0, y1, z0, z1), halo cells included, as a
        (Q, W, H, D) float64 array (the get_region kernel)."""
        reg = self._cells(cells)
        out = np.empty((self.vs.Q, reg.x1 - reg.x0, reg.y1 - reg.y0, reg.z1 - reg.z0))
        self._fn("get_region")(self._ptr(f), self.ffi.cast("double *", out.ctypes.data), *self._sizes, reg)
        return out

    def put_region(self, f, cells, values) -> None:
        """Write a (Q, W, H, D) block of populations into the cells (x0, x1, y0, y1, z0, z1), every
        stored copy (the put_region kernel)."""
        reg = self._cells(cells)
        shape = (self.vs.Q, reg.x1 - reg.x0, reg.y1 - reg.y0, reg.z1 - reg.z0)
        values = np.ascontiguousarray(values, dtype=np.float64)
        if values.shape != shape:
            raise ValueError(f"put_region: values of shape {values.shape}; the cells {tuple(cells)} take {shape}")
        self._fn("put_region")(self._ptr(f), self.ffi.cast("double *", values.ctypes.data), *self._sizes, reg)

    def _cells(self, cells):
        """A block of cells (x0, x1, y0, y1, z0, z1) within the padded lattice, checked, as a region record."""
        h = self.vs.max_hop
        try:
            x0, x1, y0, y1, z0, z1 = (int(v) for v in cells)
        except (TypeError, ValueError):
            raise ValueError(f"cells={cells!r} must be six integers (x0, x1, y0, y1, z0, z1)") from None
        if not all(-h <= a <= b <= n + h for a, b, n in ((x0, x1, self.lx), (y0, y1, self.ly), (z0, z1, self.lz))):
            raise ValueError(f"cells {(x0, x1, y0, y1, z0, z1)} outside the padded lattice: allowed {-h} <= x0 <= "
                             f"x1 <= {self.lx + h}, the same in y (<= {self.ly + h}) and z (<= {self.lz + h})")
        return self.ffi.new(f"{self.prefix}_region *", {"x0": x0, "x1": x1, "y0": y0, "y1": y1, "z0": z0, "z1": z1})

    def init_equilibrium(self, f, rho, ux, uy, uz, T, force: Tuple[float, float, float] = (0.0, 0.0, 0.0)) -> None:
        """f = the equilibrium whose physical (half-step) fields are the given ones under ``force``."""
        shape = (self.lx, self.ly, self.lz)
        arrays = [self._doubles(a, shape) for a in (rho, ux, uy, uz, T)]
        self._fn("init_equilibrium")(self._ptr(f), *self._sizes,
                                     *[self.ffi.cast("double *", a.ctypes.data) for a in arrays],
                                     *(float(a) for a in force))

    def fields(self, f, force: Tuple[float, float, float] = (0.0, 0.0, 0.0)) -> Dict[str, np.ndarray]:
        """The physical (half-step) fields of f under ``force``: rho, ux, uy, uz, T, (LX, LY, LZ) each."""
        out = {k: np.empty((self.lx, self.ly, self.lz)) for k in ("rho", "ux", "uy", "uz", "T")}
        self._fn("fields")(self._ptr(f), *self._sizes, *[self.ffi.cast("double *", a.ctypes.data) for a in out.values()],
                           *(float(a) for a in force))
        return out

    def diagnostics(self, f, solid: Optional[np.ndarray] = None,
                    force: Tuple[float, float, float] = (0.0, 0.0, 0.0)) -> np.ndarray:
        """(LY*LZ, ND3) per-line reductions over x of the physical fields (the diagnostics
        kernel; columns lbgen.codegen.diagnostics.ROW_QUANTITIES3D); ``solid``: None or the
        uint8 voxel mask (skipped)."""
        from lbgen.codegen.diagnostics import ND3
        out = np.empty((self.ly * self.lz, ND3))
        solid = None if solid is None else checked_boundaries((), None, solid, (self.lx, self.ly, self.lz))[2]
        mask = self.ffi.NULL if solid is None else self.ffi.cast("const uint8_t *", solid.ctypes.data)
        self._fn("diagnostics")(self._ptr(f), *self._sizes, mask, self.ffi.cast("double *", out.ctypes.data),
                                *(float(a) for a in force))
        return out

    def check(self, lx: int, ly: int, lz: int) -> Tuple[int, str]:
        """The emitted <prefix>_check: (status, message)."""
        buf = self.ffi.new("char[]", 256)
        status = self._fn("check")(int(lx), int(ly), int(lz), buf, 256)
        return int(status), self.ffi.string(buf).decode()


def compile3d(source, lx: int, ly: int, lz: int, flags=None, strict: bool = False, threads: int = 0) -> CProgram3D:
    return CProgram3D(source, lx, ly, lz, flags=flags, strict=strict, threads=threads)
