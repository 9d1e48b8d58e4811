"""What the GPU-dialect runtimes (OpenCL: backends/opencl; CUDA through CuPy or pycuda and the host shim:
backends/cuda) share, for any D: ``GPUProgram``.

Lattice buffers hold ``Layout``'s order: the OpenCL and CUDA (CuPy, pycuda) runtimes' (``allocate``) live on
the device, so stepping copies nothing, and ``download``/``upload`` move them; the host shim's
are NumPy arrays.  The boundaries of ``set_boundaries`` go to the kernels as four arguments
(walls and lids: bit 2a + s per face; lid: the 2D x D velocities; solid: NULL or the uint8
mask), copied to the device once per ``set_boundaries``.

The sweeps of any D take the C API's arguments in its order: the region as ints (2D: x0, x1, y0,
y1; 3D: six, whole Z lines), the operator parameters and force as scalars, then the boundaries
(``_bc_args``), and bounce back themselves; the runtimes launch the 2D kernels themselves, the
3D ones here.  Launch geometry in
3D: one work-item / thread per site of the region ((x1 - x0)*(y1 - y0)*LZ), the halo one per
element column of the padded lattice (``<P>_HALO_THREADS``), rounded up to the block size; a
step refreshes only the X and Y halo planes (``halo_planes``): the kernels wrap Z within the
line themselves.  Host arrays given to a 3D kernel (fields in and out, a NumPy lattice buffer)
are copied to the device around its launch, and back when it writes them.
"""
from __future__ import annotations

import numpy as np

from lbgen.backends.base import Program, body_arrays, fields_dict
from lbgen.backends.build import aligned_zeros


class GPUProgram(Program):
    """Common logic; a runtime defines ``_run(kernel, items, args, outputs)`` for the 3D kernels
    (args: NumPy arrays or its device buffers, None for a NULL pointer, np.int32 / real scalars;
    outputs: the indices of the arrays the kernel writes: host arrays among them are copied
    back), its 2D launches, and sets ``field_dtype`` / ``lid_dtype``.  A runtime whose lattice
    buffers live on the device defines the device hooks (``_is_device`` .. ``_host_into``); the
    host shim keeps host buffers."""

    field_dtype = np.float64
    lid_dtype = np.float64

    def __init__(self, source, shape):
        super().__init__(source, shape)
        self._bounds_args = None
        self._rho_lid = None        # in place with lids or open faces: (reals, aa_lid_rho's buffer), made once a size
        if self.D == 2:
            return
        self._sizes = tuple(np.int32(n) for n in self.shape)
        L = self.layout
        self.site_items = self.lx * self.ly * self.lz
        self.halo_items = (self.lx + 2 * L.halo) * (self.ly + 2 * L.halo) * (self.lz // L.VL + 2 * L.halo) * L.VL
        self.plane_items = ((self.lx + 2 * L.halo) * (self.ly + 2 * L.halo) - self.lx * self.ly) * self.lz

    # --- buffers: host arrays unless a runtime defines the device hooks ------------------------
    def _is_device(self, a) -> bool:
        return False

    def _device_elements(self, a) -> int:
        """Elements of this program's dtype a device buffer holds (-1: another dtype)."""
        raise NotImplementedError

    def _to_device(self, host: np.ndarray):
        return host

    def _to_host(self, buffer, dtype=None) -> np.ndarray:
        """A device buffer's contents (elements of ``dtype``, by default the storage's)."""
        raise NotImplementedError

    def _host_into(self, buffer, host: np.ndarray) -> None:
        raise NotImplementedError

    buffers_on_host = False
    shares_host_memory = True        # the host shim's; the device runtimes say their own

    def allocate(self):
        return aligned_zeros(self.layout.size, self.dtype)

    def upload(self, host, buffer=None):
        host = self._check_size(host)
        buffer = self.allocate() if buffer is None else buffer
        self._count("to device", host.nbytes)
        if self._is_device(buffer):
            self._host_into(buffer, host)
        else:
            buffer[...] = host
        return buffer

    def download(self, buffer) -> np.ndarray:
        self._count("to host", self.layout.size * np.dtype(self.dtype).itemsize)
        return self._to_host(buffer) if self._is_device(buffer) else np.array(buffer, dtype=self.dtype)

    def _read_range(self, f, offset, out):
        self._count("to host", out.nbytes)
        out[...] = f[offset:offset + out.size]

    def _write_range(self, f, offset, data):
        self._count("to device", data.nbytes)
        f[offset:offset + data.size] = data

    def _bounds_changed(self) -> None:
        """The boundaries as the kernels' last four arguments, the lid velocities and the mask on the device."""
        if self.bounds is None:
            self._bounds_args = None
            return
        walls, lids, lid, solid = self.bounds
        opens, openv = 0, None
        if self.open_bounds is not None:     # the face bits at 0, 6, 12, 18; the densities, then the inflow
            inlets, outlets, outflows, slips, rho_out, inflow = self.open_bounds
            opens = inlets | outlets << 6 | outflows << 12 | slips << 18
            values = rho_out if inflow is None else np.concatenate([rho_out, inflow])
            openv = self._to_device(np.ascontiguousarray(values, dtype=self.lid_dtype))
        self._bounds_args = [np.int32(walls), np.int32(lids),
                             self._to_device(np.ascontiguousarray(lid.reshape(-1), dtype=self.lid_dtype)),
                             None if solid is None else self._to_device(solid.reshape(-1)), np.int32(opens), openv]

    def _skip_device(self, skip):
        """The diagnostics' mask argument: ``skip``, else the boundaries' solid cells (on the device), or None."""
        if skip is None:
            return None if self._bounds_args is None else self._bounds_args[3]
        return self._to_device(self._skip_mask(skip).reshape(-1))

    def _lines(self, region: tuple) -> int:
        """Work-items of the 2D bc over a checked region: one per line across the thermal walls (its
        columns; its rows with the walls across x)."""
        x0, x1, y0, y1 = region
        return y1 - y0 if self.spec.wall_axis == "x" else x1 - x0

    def _region_items(self, region: tuple) -> int:
        """Work-items (threads) of a 2D sweep over a checked region: its columns times the
        storage slots s = r*VL + k (k fastest: the lanes of a cluster are consecutive items)
        from the lowest to the highest slot of its rows (common.j2 region_site, the same rule)."""
        x0, x1, y0, y1 = region
        if x1 <= x0 or y1 <= y0:
            return 0
        NR, VL = self.layout.NR, self.layout.VL
        if y0 // NR == (y1 - 1) // NR:
            slots = ((y1 - 1) % NR - y0 % NR) * VL + 1
        else:
            slots = (NR - 1) * VL + y1 // NR - (y0 // NR + (y0 % NR != 0))
        return (x1 - x0) * slots

    # --- the 3D kernels --------------------------------------------------------------------------
    def _run(self, kernel: str, items: int, args, outputs) -> None:  # pragma: no cover
        raise NotImplementedError

    def _call(self, kernel, items, args, outputs):
        self.calls[kernel] += 1
        if items > 0:               # an empty region launches nothing (OpenCL refuses a global size of 0)
            self._run(kernel, items, list(args), tuple(outputs))

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

    def _fields_in(self, a) -> np.ndarray:
        return np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=np.float64), self.shape),
                                    dtype=self.field_dtype)

    def _bc_args(self):
        return self._bounds_args or [np.int32(0), np.int32(0), None, None, np.int32(0), None]

    def halo(self, f) -> None:
        self._call("halo", self.halo_items, [self._buf(f), *self._sizes], (0,))

    def halo_planes(self, f) -> None:
        """The X and Y halo planes only (3D; the halo kernel's values there): all that propagate
        and fused read, as they wrap Z within the line themselves; the clustered layouts' halo
        rows, 2 of every NR rows, are left as they are."""
        self._call("halo_planes", self.plane_items, [self._buf(f), *self._sizes], (0,))

    def step_halo(self, f) -> None:
        """The step's halo refresh (before fused, and before the AA even step): in 3D the X and Y planes."""
        (self.halo_planes if self.D == 3 else self.halo)(f)

    # --- in-place streaming (spec streaming 'inplace', the AA pattern: templates/gpu/inplace.j2) ---
    def _aa_step(self, kernel: str, f, odd: bool, params: dict) -> None:
        """aa_even / aa_odd over the whole lattice; with lids or open faces first aa_lid_rho: the
        densities next to the lids, inlets and outlets, then the snapshot of the planes next to the
        outlets, outflows and slips (``rho_lid_size``), into a buffer kept for the next steps."""
        bc = self._bc_args()
        rho = None
        walls, lids, opens = int(bc[0]), int(bc[1]), int(bc[4])
        if walls & lids or opens:
            size = self.rho_lid_size
            if self._rho_lid is None or self._rho_lid[0] != size:
                self._rho_lid = (size, self._to_device(np.zeros(size, dtype=self.real)))
            rho = self._rho_lid[1]
            args = [self._buf(f), *self._size_args, bc[0], bc[1], bc[4], rho, np.int32(odd)]
            self._call("aa_lid_rho", self.site_count, args, (len(args) - 2,))     # it writes rho
        self._call(kernel, self.site_count, [self._buf(f), *self._size_args, *self._param_values(params, self.real),
                                             *bc, rho], (0,))

    def inplace_odd_slots(self, p, sites) -> np.ndarray:
        """As the C kernels' (``Program.inplace_odd_slots``), but in 3D the GPU kernels cross a
        clustered lane's end inside the lattice (templates/gpu/inplace.j2's zstore_: slot opp(p) of
        the site z + c_z's row and lane; only a Z face leads into the halo row)."""
        if self.D != 3:
            return super().inplace_odd_slots(p, sites)
        lay, vs = self.layout, self.vs
        s, NR, LZ = lay.strides, lay.NR, self.shape[2]
        p, (x, y, z) = np.asarray(p), np.asarray(sites, dtype=np.int64).T
        cx, cy, cz = np.asarray(vs.e, dtype=np.int64)[p].T
        r, k, zz = z % NR, z // NR, z + cz
        lane = (zz >= 0) & (zz < LZ) & ~((r + cz >= 0) & (r + cz < NR))   # inside, past the row's lane
        zs = np.where(lane, (zz % NR - r) * s["SR"] + (zz // NR - k) * s["SK"], cz * s["SR"])
        return lay.site_index(np.asarray(vs.opposite)[p], x, y, z) + cx * s["SX"] + cy * s["SY"] + zs

    @property
    def rho_lid_size(self) -> int:
        """The reals of aa_lid_rho's buffer (the kernels' ``<PREFIX>_AA_RHO_LID_SIZE``): one a site,
        then HALO planes of Q a site next to each outlet, outflow and slip face of ``open_bounds``."""
        snap = 0 if self.open_bounds is None else self.open_bounds[1] | self.open_bounds[2] | self.open_bounds[3]
        planes = sum(self.site_count // self.shape[face // 2] for face in range(2 * self.D) if snap >> face & 1)
        return self.site_count + self.vs.Q * self.vs.max_hop * planes

    @property
    def site_count(self) -> int:
        """The lattice's sites: the work-items of the in-place sweeps."""
        return int(np.prod(self.shape))

    @property
    def _size_args(self) -> tuple:
        """The kernels' size arguments (none for 2D compile-time sizes)."""
        if self.D == 2 and self.spec.compile_time_sizes:
            return ()
        return tuple(np.int32(n) for n in self.shape)

    def aa_even(self, f, **params) -> None:
        """In-place step from the natural state (a fresh halo: step_halo): the AA pattern's even step."""
        self._aa_step("aa_even", f, False, params)

    def aa_odd(self, f, **params) -> None:
        """In-place step back to the natural state: the AA pattern's odd step."""
        self._aa_step("aa_odd", f, True, params)

    def aa_fold(self, f) -> None:
        """After aa_even: what it stored into the halo, into the lattice sites it stands for (one
        work-item per edge site: the kernel's <P>_AA_FOLD_ITEMS)."""
        self._call("aa_fold", self.fold_items, [self._buf(f), *self._size_args], (0,))

    @property
    def fold_items(self) -> int:
        """The sites within the halo's reach of a face or (2D) of a lane's end (templates/gpu/inplace.j2's
        <P>_AA_FOLD_ITEMS): the work-items of aa_fold."""
        H, L = self.layout.halo, self.layout
        if self.D == 2:
            ex = min(self.lx, 2 * H)
            return ex * self.ly + (self.lx - ex) * min(L.NR, 2 * H) * L.VL
        ex, ey, ez = (min(n, 2 * H) for n in self.shape)     # 3D: a lane's end is crossed inside the lattice
        return (ex * self.ly + (self.lx - ex) * ey) * self.lz + (self.lx - ex) * (self.ly - ey) * ez

    def aa_normalise(self, f) -> None:
        """An odd-parity buffer (after aa_even, aa_fold) as the natural state; solid cells 0."""
        solid = None if self._bounds_args is None else self._bounds_args[3]
        self._call("aa_normalise", self.site_count, [self._buf(f), *self._size_args, solid], (0,))

    def _region_args(self, region) -> tuple:
        """The work-items of a 3D sweep over a region (None: the whole lattice; (x0, x1, y0, y1):
        whole Z lines, checked) and its six int arguments."""
        x0, x1, y0, y1 = self._check_region(region)
        return (x1 - x0) * (y1 - y0) * self.lz, [np.int32(v) for v in (x0, x1, y0, y1, 0, self.lz)]

    def propagate(self, prv, nxt, region=None) -> None:
        items, reg = self._region_args(region)
        self._call("propagate", items, [self._buf(prv), self._buf(nxt), *self._sizes, *reg, *self._bc_args()], (1,))

    def _wall_args(self, sides, tau_wall) -> list:
        """The 3D sweeps' thermal-wall arguments after the parameters: tau_wall, wall_bottom,
        wall_top (walls only; without walls none, and tau_wall only its default)."""
        tau = self._tau_wall(tau_wall, self.real)
        return tau + [np.int32(v) for v in self._check_sides(sides)] if self.spec.walls else tau

    def collide(self, src, dst, region=None, sides=(True, True), tau_wall=1.0, **params) -> None:
        """With the 3D thermal walls, the planes next to the walls of `sides` (z-low, z-high) relax
        with tau = tau_wall."""
        walls = self._wall_args(sides, tau_wall)
        items, reg = self._region_args(region)
        if src is dst:
            args, outputs = [self._buf(src), src], (0,)
        else:
            args, outputs = [self._buf(src), self._buf(dst)], (1,)
        self._call("collide", items, [*args, *self._sizes, *reg, *self._param_values(params, self.real), *walls,
                                      *self._bc_args()], outputs)

    def fused(self, prv, nxt, region=None, sides=(True, True), tau_wall=1.0, **params) -> None:
        """With the 3D thermal walls, the planes next to the walls of `sides` relax with tau_wall (no bc)."""
        walls = self._wall_args(sides, tau_wall)
        items, reg = self._region_args(region)
        self._call("fused", items, [self._buf(prv), self._buf(nxt), *self._sizes, *reg,
                                    *self._param_values(params, self.real), *walls, *self._bc_args()], (1,))

    def bc(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), ax=0.0, ay=0.0, sides=(True, True),
           region=None, az=0.0) -> None:
        """The 3D thermal walls across Z (or the spec's wall_axis) after propagate(prv -> nxt), on the
        walls of `sides` (low, high) this lattice holds: one work-item per line across them."""
        self._require_walls()
        walls = [np.int32(v) for v in self._check_sides(sides)]
        items, reg = self._region_args(region)
        x0, x1, y0, y1 = (int(v) for v in reg[:4])
        lines = {None: (x1 - x0) * (y1 - y0), "y": (x1 - x0) * self.lz, "x": (y1 - y0) * self.lz}[self.spec.wall_axis]
        self._call("bc", lines, [self._buf(prv), self._buf(nxt), *self._sizes, *reg, self.real(T_bottom),
                                            self.real(T_top), np.int32(bool(adiabatic[0])),
                                            np.int32(bool(adiabatic[1])), self.real(ax), self.real(ay),
                                            self.real(az), *walls], (1,))

    def fused_walls(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), sides=(True, True),
                    region=None, tau_wall=1.0, **params) -> None:
        """propagate + bc + collide in one launch (the 3D thermal walls; one work-item per site of the
        region), on the walls of `sides` (low, high) this lattice holds: the bits of the three."""
        self._require_walls()
        items, reg = self._region_args(region)
        self._call("fused_walls", items, [self._buf(prv), self._buf(nxt), *self._sizes, *reg,
                                          *self._param_values(params, self.real), *self._tau_wall(tau_wall, self.real),
                                          self.real(T_bottom), self.real(T_top), np.int32(bool(adiabatic[0])),
                                          np.int32(bool(adiabatic[1])),
                                          *[np.int32(v) for v in self._check_sides(sides)]], (1,))

    # --- bodies: the link kernels (lbgen.simulation.bodies), arrays where the buffers live ---------
    def body_upload(self, slot, weight, dirs, chunk) -> dict:
        links = body_arrays(self, slot, weight, dirs, chunk)
        links["partial"] = links["partial"].astype(self.field_dtype)
        for k in ("slot", "weight", "dir", "chunk", "value", "partial"):
            links[k] = self._to_device(links[k])
        return links

    def body_links(self, f, links: dict, put: bool = True) -> None:
        self._call("body_links", int(links["nchunk"]), [self._buf(f), links["slot"], links["weight"], links["dir"],
                                                       links["chunk"], links["nchunk"], links["value"],
                                                       links["partial"]], ())
        if put:
            self._call("body_put", int(links["n"]), [f, links["slot"], links["value"], links["n"]], ())

    def body_partial(self, links: dict) -> np.ndarray:
        p = links["partial"]
        return np.array(p if isinstance(p, np.ndarray) else self._to_host(p, self.field_dtype),
                        dtype=np.float64).reshape(-1, self.D)

    def init_equilibrium(self, f, rho, *velocity_and_T, force=None) -> None:
        arrays = [self._fields_in(a) for a in (rho, *velocity_and_T)]
        self._call("init_equilibrium", self.site_items,
                   [self._buf(f), *self._sizes, *arrays, *(self.real(a) for a in self._force(force))], (0,))
        self.halo(f)

    def fields(self, f, force=None, native=False) -> dict:
        out = [np.empty(self.shape, dtype=self.field_dtype) for _ in range(self.D + 2)]
        self._call("fields", self.site_items, [self._buf(f), *self._sizes, *out,
                                               *(self.real(a) for a in self._force(force))], (4, 5, 6, 7, 8))
        return fields_dict(out, self.D, native)

    def diagnostics(self, f, force=None, skip=None) -> np.ndarray:
        from lbgen.codegen.diagnostics import ND3
        out = np.empty((self.ly * self.lz, ND3), dtype=self.field_dtype)
        self._call("diagnostics", self.ly * self.lz, [self._buf(f), *self._sizes, self._skip_device(skip), out,
                                                       *(self.real(a) for a in self._force(force))], (5,))
        return out.astype(np.float64)
