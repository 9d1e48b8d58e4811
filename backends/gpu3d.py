"""The 3D GPU-dialect kernels (OpenCL, CUDA) of one spec for one lattice size: the logic
shared by ``backends/opencl/program3d.py`` (pyopencl), ``backends/cuda/program3d.py`` (the
host shim and CuPy).

The interface is ``CProgram3D``'s (lbgen.backends.c.program3d): ``pack``/``unpack``/``halo``/
``propagate``/``collide``/``fused``/``init_equilibrium``/``fields``/``step`` take the same
arguments, ``boundaries`` builds the boundaries once.  Lattice buffers hold ``Layout``'s
order: the OpenCL and CuPy runtimes' (``allocate``) live on the device, so stepping copies
nothing, and ``download``/``upload`` move them; the host shim's are NumPy arrays.  Host arrays
given to a kernel (fields in and out, a NumPy lattice buffer) are copied to the device around
its launch, and back when it writes them.  A step refreshes only the X and Y halo planes
(``halo_planes``): the kernels wrap Z within the line themselves.

The sweeps take the C API's arguments in its order: the region as six ints (``region``: None,
the whole lattice, or (x0, x1, y0, y1), whole Z lines), the ``<prefix>_params`` record's
operator parameters and force as scalars, then its boundary fields as four arguments (walls:
bit 2a + s per face, lids, lid: 6 x 3 velocities, solid: NULL or the uint8 voxel mask):
``Boundaries3D`` here holds them.  Launch geometry: one work-item / thread per site of the
region ((x1 - x0)*(y1 - y0)*LZ), the halo one per element column of the padded lattice
(``<P>_HALO_THREADS``), rounded up to the block size.
"""
from __future__ import annotations

import weakref
from typing import Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from lbgen.backends.base import Program3D, ordered_parameters

from lbgen.backends.c.program3d import checked_boundaries, face_index, wall_bits  # the C runtime's rules


class Boundaries3D:
    """The boundaries of the GPU 3D kernels: ``walls`` and ``lids`` bits (2a + s per face), ``lid`` (18 values:
    face 2a + s at 3(2a + s)), ``solid`` (None or a (LX, LY, LZ) uint8 array); the same inputs
    and checks as the C backend's ``Boundaries3D``."""

    def __init__(self, program: "GPUProgram3D", walls: Sequence = (), lids: Optional[Mapping] = None,
                 solid: Optional[np.ndarray] = None):
        self.wall_faces, self.lids_faces, self.solid = checked_boundaries(
            walls, lids, solid, (program.lx, program.ly, program.lz))
        self.walls = wall_bits(self.wall_faces)
        self.lids = sum(1 << face_index(*face) for face in self.lids_faces)
        self.lid = np.zeros(18, dtype=program.lid_dtype)
        for face, u in self.lids_faces.items():
            self.lid[3 * face_index(*face):3 * face_index(*face) + 3] = u

    @property
    def periodic(self) -> bool:
        return not self.wall_faces and self.solid is None


class GPUProgram3D(Program3D):
    """Common logic; a runtime defines ``_run(kernel, items, args, outputs)`` (args: NumPy
    arrays or its device buffers, None for a NULL pointer, np.int32 / real scalars; outputs:
    the indices of the arrays the kernel writes: host arrays among them are copied back) and
    sets ``field_dtype`` / ``lid_dtype``.  A runtime whose lattice buffers live on the device
    (``allocate``) defines the four device hooks below; the host shim keeps host buffers."""

    Boundaries = Boundaries3D
    field_dtype = np.float64
    lid_dtype = np.float64
    #: allocate() gives device buffers (the _is_device ... _host_into hooks are defined)
    device_buffers = False

    def __init__(self, source, lx: int, ly: int, lz: int):
        self._describe(source, lx, ly, lz)
        self._sizes = tuple(np.int32(n) for n in (self.lx, self.ly, self.lz))
        L = self.layout
        self.site_items = self.lx * self.ly * self.lz
        self.halo_items = (self.lx + 2 * L.halo) * (self.ly + 2 * L.halo) * (self.lz // L.VL + 2 * L.halo) * L.VL
        self.plane_items = ((self.lx + 2 * L.halo) * (self.ly + 2 * L.halo) - self.lx * self.ly) * self.lz
        self.threads = None

    # --- to implement -----------------------------------------------------------------------
    def _run(self, kernel: str, items: int, args, outputs) -> None:  # pragma: no cover
        raise NotImplementedError

    # --- plumbing ---------------------------------------------------------------------------
    def _call(self, kernel, items, args, outputs):
        self.calls[kernel] += 1
        if items > 0:               # an empty region launches nothing (OpenCL refuses a global size of 0)
            self._run(kernel, items, list(args), tuple(outputs))

    # --- device buffers: a runtime with its own defines these ----------------------------------
    def _is_device(self, a) -> bool:
        return False

    def _device_elements(self, a) -> int:
        """Elements of this program's dtype a device buffer holds (-1: another dtype)."""
        raise NotImplementedError

    def _to_device(self, host: np.ndarray):
        raise NotImplementedError

    def _to_host(self, buffer) -> np.ndarray:
        raise NotImplementedError

    def _host_into(self, buffer, host: np.ndarray) -> None:
        raise NotImplementedError

    def download(self, buffer) -> np.ndarray:
        return self._to_host(buffer) if self._is_device(buffer) else super().download(buffer)

    def _copy_in(self, buffer, host: np.ndarray) -> None:
        if self._is_device(buffer):
            self._host_into(buffer, host)
        else:
            super()._copy_in(buffer, host)

    def _buf(self, a):
        if self._is_device(a):
            ok = self._device_elements(a) == self.layout.size
        else:
            ok = isinstance(a, np.ndarray) and a.dtype == self.dtype and a.flags.c_contiguous \
                and a.size == self.layout.size
        if not ok:
            raise ValueError(f"a lattice buffer of this program is a contiguous {np.dtype(self.dtype)} array of "
                             f"{self.layout.size} elements (allocate())")
        return a

    def _fields_in(self, a, shape) -> np.ndarray:
        return np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=np.float64), shape), dtype=self.field_dtype)

    def _real(self, v) -> np.generic:
        return self.dtype(v)

    def _param_values(self, params: Mapping[str, float]):
        return ordered_parameters(self, self.parameter_names, params, convert=self._real)

    def _bc_args(self, bc: Optional[Boundaries3D]):
        """The boundaries as kernel arguments; a runtime with device buffers gets device copies
        of the lid velocities and the mask, made once per record and program."""
        if bc is None:
            return [np.int32(0), np.int32(0), None, None]
        lid, solid = bc.lid, bc.solid
        if self.device_buffers:
            held = bc.__dict__.setdefault("_on_device", weakref.WeakKeyDictionary())
            if self not in held:
                held[self] = (self._to_device(lid), None if solid is None else self._to_device(solid))
            lid, solid = held[self]
        return [np.int32(bc.walls), np.int32(bc.lids), lid, solid]

    # --- buffers ----------------------------------------------------------------------------
    def pack(self, plain: np.ndarray, f: Optional[np.ndarray] = None) -> np.ndarray:
        """(Q, LX, LY, LZ) populations -> a buffer of this layout (pack, then halo)."""
        plain = self._fields_in(plain, (self.vs.Q, self.lx, self.ly, self.lz))
        f = self.allocate() if f is None else self._buf(f)
        self._call("pack", self.site_items, [f, plain, *self._sizes], (0,))
        self.halo(f)
        return f

    def unpack(self, f: np.ndarray) -> np.ndarray:
        out = np.empty((self.vs.Q, self.lx, self.ly, self.lz), dtype=self.field_dtype)
        self._call("unpack", self.site_items, [self._buf(f), out, *self._sizes], (1,))
        return out.astype(np.float64)

    # --- kernels ----------------------------------------------------------------------------
    def halo(self, f) -> None:
        self._call("halo", self.halo_items, [self._buf(f), *self._sizes], (0,))

    def halo_planes(self, f) -> None:
        """The X and Y halo planes only (the halo kernel's values there): all that propagate and
        fused read, as they wrap Z within the line themselves; the clustered layouts' halo rows,
        2 of every NR rows, are left as they are."""
        self._call("halo_planes", self.plane_items, [self._buf(f), *self._sizes], (0,))

    def step_halo(self, f) -> None:
        self.halo_planes(f)

    def _region_args(self, region) -> Tuple[int, list]:
        """The work-items of a sweep over a region (None: the whole lattice; (x0, x1, y0, y1):
        whole Z lines, checked) and its six int arguments."""
        x0, x1, y0, y1 = self._check_region(region)
        return (x1 - x0) * (y1 - y0) * self.lz, [np.int32(v) for v in (x0, x1, y0, y1, 0, self.lz)]

    def propagate(self, prv, nxt, bc: Optional[Boundaries3D] = None, region=None) -> None:
        items, reg = self._region_args(region)
        self._call("propagate", items, [self._buf(prv), self._buf(nxt), *self._sizes, *reg, *self._bc_args(bc)],
                   (1,))

    def collide(self, src, dst, bc: Optional[Boundaries3D] = None, region=None, **params) -> None:
        items, reg = self._region_args(region)
        if src is dst:
            args, outputs = [self._buf(src), src], (0,)
        else:
            args, outputs = [self._buf(src), self._buf(dst)], (1,)
        self._call("collide", items, [*args, *self._sizes, *reg, *self._param_values(params), *self._bc_args(bc)],
                   outputs)

    def fused(self, prv, nxt, bc: Optional[Boundaries3D] = None, region=None, **params) -> None:
        items, reg = self._region_args(region)
        self._call("fused", items, [self._buf(prv), self._buf(nxt), *self._sizes, *reg, *self._param_values(params),
                                    *self._bc_args(bc)], (1,))

    def init_equilibrium(self, f, rho, ux, uy, uz, T, force: Tuple[float, float, float] = (0.0, 0.0, 0.0)) -> None:
        shape = (self.lx, self.ly, self.lz)
        arrays = [self._fields_in(a, shape) for a in (rho, ux, uy, uz, T)]
        self._call("init_equilibrium", self.site_items,
                   [self._buf(f), *self._sizes, *arrays, *(self._real(a) for a in force)], (0,))
        self.halo(f)

    def fields(self, f, force: Tuple[float, float, float] = (0.0, 0.0, 0.0)) -> Dict[str, np.ndarray]:
        names = ("rho", "ux", "uy", "uz", "T")
        out = [np.empty((self.lx, self.ly, self.lz), dtype=self.field_dtype) for _ in names]
        self._call("fields", self.site_items, [self._buf(f), *self._sizes, *out, *(self._real(a) for a in force)],
                   (4, 5, 6, 7, 8))
        return {n: a.astype(np.float64) for n, a in zip(names, out)}

    def diagnostics(self, f, solid: Optional[np.ndarray] = None,
                    force: Tuple[float, float, float] = (0.0, 0.0, 0.0)) -> np.ndarray:
        """(LY*LZ, ND3) per-line reductions over x of the physical fields (the diagnostics
        kernel; columns lbgen.codegen.diagnostics.ROW_QUANTITIES3D); ``solid``: None or the
        uint8 voxel mask (skipped)."""
        from lbgen.codegen.diagnostics import ND3
        out = np.empty((self.ly * self.lz, ND3), dtype=self.field_dtype)
        solid = None if solid is None else checked_boundaries((), None, solid, (self.lx, self.ly, self.lz))[2]
        self._call("diagnostics", self.ly * self.lz, [self._buf(f), *self._sizes, solid, out,
                                                       *(self._real(a) for a in force)], (5,))
        return out.astype(np.float64)
