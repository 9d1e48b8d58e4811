"""OpenCL backend: pyopencl builds the generated ``.cl`` for one device and launches it.

Device choice (first that applies): the ``device`` argument (``"P:D"`` platform and device
indices, ``"P"`` for the first device of platform P, or a case-insensitive substring of the
device name), the ``PYOPENCL_CTX`` environment variable (same forms), else the first
device found.  Double precision needs ``cl_khr_fp64`` (``device.double_fp_config``).

Compiled programs are cached in this process (per context, source digest and build
options) and by pyopencl on disk (its binary cache).  The source is also written to
``<cache>/opencl/<key>/`` so that a build failure can name the file; the build log goes
into the ``CompileError``.  Strict mode builds with ``-DLBGEN_STRICT`` (the kernels then
say ``#pragma OPENCL FP_CONTRACT OFF``); this backend never passes ``-cl-mad-enable``
or ``-cl-fast-relaxed-math``.

One work-item per site; the global size is rounded up to a multiple of the work-group
size (the kernels return early past the last site).  Work-group size: ``block_size`` (a run
passes the one ``lbgen tune --backend opencl`` stored for its device and layout), else the
spec's ``block_size``, else 64 (a multiple of every VL up to 64), capped by the device.
Where the lattice buffer fits (``platform.INDEX32_LIMIT``) the build adds ``-DLBGEN_INDEX32``:
the kernels' index arithmetic in 32 bits, the same results.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np

from lbgen.backends.base import fields_dict
from lbgen.backends.build import BackendUnavailable
from lbgen.backends.gpu import GPUProgram
from lbgen.backends.opencl.platform import (available, build, build_options, context_of, describe,  # noqa: F401
                                            devices, pyopencl, quiet_build, select_device)
from lbgen.codegen.kernel_api import BODY_ENTRY_POINTS, GPU_ENTRY_POINTS_3D, GPU_INPLACE_ENTRY_POINTS

DEFAULT_BLOCK_SIZE = 64

#: the halo slabs' pack and unpack kernels (one work-item per value; ``real`` replaced)
SLAB_KERNELS = """
__kernel void slab_gather(__global const real *f, __global const long *index, __global real *out, const long n)
{ const long i = get_global_id(0); if (i < n) out[i] = f[index[i]]; }
__kernel void slab_scatter(__global real *f, __global const long *index, __global const real *values, const long n)
{ const long i = get_global_id(0); if (i < n) f[index[i]] = values[i]; }
"""
_SLAB_KERNELS: dict = {}


class OpenCLProgram(GPUProgram):
    """The kernels of an OpenCL source for a lattice ``shape`` (2D or 3D) on one device; lattice
    buffers (``allocate``) are ``cl.Buffer``s on the device; fields, plain arrays and lid
    velocities are ``real``."""

    def __init__(self, source, shape, strict: bool = False, device=None, block_size: Optional[int] = None):
        super().__init__(source, shape)
        cl = self.cl = pyopencl()
        self.device = select_device(device)
        single = self.spec.precision == "single"
        if not single and not self.device.double_fp_config:
            raise BackendUnavailable(
                f"OpenCL backend: device {self.device.name.strip()!r} has no double precision "
                f"(cl_khr_fp64, double_fp_config = 0); use precision='single' or another device")
        self.field_dtype = self.lid_dtype = self.real
        self.context, self.queue = context_of(self.device)
        self.strict = strict
        self.options = build_options(strict, single, self.device, elements=self.layout.size)
        self.program = build(source, self.device, self.options)
        if self.D == 3:
            names = GPU_ENTRY_POINTS_3D + (("bc", "fused_walls") if self.spec.walls else ())
        else:
            names = (("halo", "propagate", "collide", "fused", "diagnostics", "init_equilibrium", "fields")
                     + (("bc", "fused_walls") if self.spec.walls else ()))
        if self.spec.streaming == "inplace":
            names += GPU_INPLACE_ENTRY_POINTS
        self.kernels = {n: cl.Kernel(self.program, f"{self.prefix}_{n}") for n in names + BODY_ENTRY_POINTS}
        bs = block_size or self.spec.block_size or DEFAULT_BLOCK_SIZE
        limit = min(self.device.max_work_group_size,
                    min(k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device)
                        for k in self.kernels.values()))
        if bs > limit:
            if block_size or self.spec.block_size:
                raise ValueError(f"OpenCL backend: work-group size {bs} exceeds the limit {limit} "
                                 f"of {self.device.name.strip()} for these kernels")
            bs = limit
        self.block_size = int(bs)
        L = self.layout
        self.nbytes = L.size * np.dtype(self.dtype).itemsize
        if self.D == 3:
            return
        lx, ly = self.shape
        self._sizes = () if self.spec.compile_time_sizes else (np.int32(lx), np.int32(ly))
        self._site_range = self._ranges(lx * ly)
        self._column_range = self._ranges(lx)
        # one work-item per halo element: the halo cluster rows, then the whole halo columns
        self._halo_range = self._ranges(lx * 2 * L.halo * L.VL + 2 * L.halo * L.NRP * L.VL)
        self._row_range = self._ranges(ly)

    def _ranges(self, n: int):
        bs = self.block_size
        return ((n + bs - 1) // bs * bs,), (bs,)

    @property
    def device_name(self) -> str:
        return self.device.name.strip()

    def describe(self) -> str:
        return self.device_name

    def provenance(self) -> dict:
        """The device, the work-group size and the build options (manifest.json)."""
        return {**super().provenance(), "work_group": self.block_size, "build_options": " ".join(self.options)}

    def copy_bandwidth(self, repeat: int = 5, nbytes: int = 512 << 20):
        """clEnqueueCopyBuffer bandwidth (GB/s, read + write) of a GPU device; None on a CPU
        device (the host's limits apply)."""
        if not int(self.device.type) & int(self.cl.device_type.GPU):
            return None
        from lbgen.system.timing import stats
        cl, ctx, queue = self.cl, self.context, self.queue
        nbytes = int(min(nbytes, self.device.max_mem_alloc_size // 2)) // 256 * 256
        a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
        b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
        cl.enqueue_fill_buffer(queue, a, np.uint8(1), 0, nbytes)
        cl.enqueue_fill_buffer(queue, b, np.uint8(0), 0, nbytes)
        cl.enqueue_copy(queue, b, a, byte_count=nbytes)
        queue.finish()
        samples = []
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            cl.enqueue_copy(queue, b, a, byte_count=nbytes)
            queue.finish()
            samples.append(2 * nbytes / (time.perf_counter() - t0) / 1e9)
        out = stats(samples)
        out.update(gbs=out["max"], bytes_per_buffer=nbytes, device=self.device_name,
                   method="clEnqueueCopyBuffer of one buffer; read + write bytes")
        return out

    # --- device buffers ---------------------------------------------------------------------
    def allocate(self):
        return self._to_device(np.zeros(self.layout.size, dtype=self.dtype))

    def _is_device(self, a) -> bool:
        return isinstance(a, self.cl.Buffer)

    def _device_elements(self, a) -> int:
        return a.size // np.dtype(self.dtype).itemsize

    def _to_device(self, host):
        mf = self.cl.mem_flags
        return self.cl.Buffer(self.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(host))

    def _to_host(self, buffer, dtype=None) -> np.ndarray:
        dtype = np.dtype(dtype or self.dtype)
        host = np.empty(buffer.size // dtype.itemsize, dtype=dtype)
        self.cl.enqueue_copy(self.queue, host, buffer, is_blocking=True)
        return host

    def _host_into(self, buffer, host) -> None:
        self.cl.enqueue_copy(self.queue, buffer, np.ascontiguousarray(host), is_blocking=True)

    def _read_range(self, f, offset, out):
        self._count("to host", out.nbytes)
        self.cl.enqueue_copy(self.queue, out, f, src_offset=offset * out.itemsize, is_blocking=True)

    def _write_range(self, f, offset, data):
        self._count("to device", data.nbytes)
        self.cl.enqueue_copy(self.queue, f, data, dst_offset=offset * data.itemsize, is_blocking=True)

    # --- halo slabs on the device: gather/scatter kernels, pinned (mapped) host copies -----------
    def slab_index(self, index):
        return self._to_device(np.ascontiguousarray(index, dtype=np.int64))

    def slab_buffer(self, n):
        mf = self.cl.mem_flags
        return self.cl.Buffer(self.context, mf.READ_WRITE | mf.ALLOC_HOST_PTR, max(1, n) * np.dtype(self.dtype).itemsize)

    def _slab_kernel(self, name):
        kernels = _SLAB_KERNELS.get((self.context, self.dtype))
        if kernels is None:
            # the slabs copy stored values: the storage's C type (16-bit formats as their bits)
            real = {8: "double", 4: "float", 2: "ushort"}[np.dtype(self.dtype).itemsize]
            text = (("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if real == "double" else "")
                    + SLAB_KERNELS.replace("real", real))
            with quiet_build():
                program = self.cl.Program(self.context, text).build(devices=[self.device])
            kernels = _SLAB_KERNELS[(self.context, self.dtype)] = {
                k: self.cl.Kernel(program, f"slab_{k}") for k in ("gather", "scatter")}
        return kernels[name]

    def slab_host(self, n):
        """A host array in a mapped ALLOC_HOST_PTR buffer (page-locked where the runtime pins those)."""
        mf = self.cl.mem_flags
        buffer = self.cl.Buffer(self.context, mf.READ_WRITE | mf.ALLOC_HOST_PTR, max(1, n) * np.dtype(self.dtype).itemsize)
        view, _ = self.cl.enqueue_map_buffer(self.queue, buffer, self.cl.map_flags.READ | self.cl.map_flags.WRITE, 0,
                                             (n,), self.dtype)
        return view

    def gather(self, f, index, out):
        n = index.size // 8
        self._slab_kernel("gather")(self.queue, *self._ranges(n), f, index, out, np.int64(n))
        return out

    def scatter(self, f, index, values):
        n = index.size // 8
        self._slab_kernel("scatter")(self.queue, *self._ranges(n), f, index, values, np.int64(n))

    def _copy_queue(self):
        if getattr(self, "_aside", None) is None:
            self._aside = self.cl.CommandQueue(self.context, self.device)
        return self._aside

    def slab_to_host(self, slab, host, aside=False):
        self._count("to host", host.nbytes)
        if aside:
            self.cl.enqueue_copy(self._copy_queue(), host, slab, is_blocking=False,
                                 wait_for=[self.cl.enqueue_marker(self.queue)])
        else:
            self.cl.enqueue_copy(self.queue, host, slab, is_blocking=False)

    def slab_to_device(self, host, slab, aside=False):
        self._count("to device", host.nbytes)
        self.cl.enqueue_copy(self._copy_queue() if aside else self.queue, slab, host, is_blocking=aside)

    def wait_aside(self):
        self._copy_queue().finish()

    def mpi_view(self, slab):
        """The slab mapped into host memory: no copy on a device that shares it (``direct_mpi``)."""
        self.queue.finish()
        view, _ = self.cl.enqueue_map_buffer(self.queue, slab, self.cl.map_flags.READ | self.cl.map_flags.WRITE, 0,
                                             (slab.size // np.dtype(self.dtype).itemsize,), self.dtype)
        return view

    def mpi_release(self, view):
        view.base.release(self.queue)
        self.queue.finish()

    @property
    def shares_host_memory(self) -> bool:
        return bool(self.device.host_unified_memory)

    def direct_mpi(self, comm):
        if not self.device.host_unified_memory:
            return (f"the OpenCL device {self.device_name!r} does not share memory with the host, and MPI takes no "
                    f"OpenCL buffers")
        return None

    def synchronize(self) -> None:
        self.queue.finish()

    def _run(self, kernel, items, args, outputs):
        """A 3D kernel's launch (host arrays copied in, and back for the outputs)."""
        dev = [self._to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        self.kernels[kernel](self.queue, *self._ranges(items), *dev)
        for i in outputs:
            if isinstance(args[i], np.ndarray):
                self.cl.enqueue_copy(self.queue, args[i], dev[i], is_blocking=True)

    # --- the 2D kernels (scalar arguments; 3D: GPUProgram) -------------------------------------
    def _launch(self, name, ranges, *args):
        self.calls[name] += 1
        return self.kernels[name](self.queue, ranges[0], ranges[1], *args)

    def halo(self, f):
        if self.D == 3:
            return super().halo(f)
        self._launch("halo", self._halo_range, f, *self._sizes)

    def _sweep(self, region, columns_only=False):
        """(launch ranges, region arguments) of a sweep over `region` (None: the whole lattice);
        None when the region is empty."""
        reg = self._check_region(region)
        n = self._lines(reg) if columns_only else self._region_items(reg)
        if n <= 0:
            return None
        ranges = self._ranges(n) if columns_only or region is not None else self._site_range
        return ranges, [np.int32(v) for v in reg]

    def propagate(self, prv, nxt, region=None):
        if self.D == 3:
            return super().propagate(prv, nxt, region)
        sweep = self._sweep(region)
        if sweep:
            self._launch("propagate", sweep[0], prv, nxt, *self._sizes, *sweep[1], *self._bc_args())

    def _sides(self, sides):
        """The kernels' int arguments wall_bottom, wall_top."""
        return [np.int32(v) for v in self._check_sides(sides)]

    def collide(self, src, dst, sides=(True, True), region=None, tau_wall=1.0, **params):
        if self.D == 3:
            return super().collide(src, dst, region, sides, tau_wall, **params)
        walls = self._sides(sides) if self.spec.walls else []
        values = self._param_values(params, self.real) + self._tau_wall(tau_wall, self.real)
        sweep = self._sweep(region)
        if sweep:
            self._launch("collide", sweep[0], src, dst, *self._sizes, *sweep[1], *values, *walls, *self._bc_args())

    def fused(self, prv, nxt, region=None, sides=(True, True), tau_wall=1.0, **params):
        """With walls, the rows next to the walls of `sides` (bottom, top) relax with tau = tau_wall (no bc)."""
        if self.D == 3:
            return super().fused(prv, nxt, region, sides, tau_wall, **params)
        walls = self._sides(sides) if self.spec.walls else []
        values = self._param_values(params, self.real) + self._tau_wall(tau_wall, self.real)
        sweep = self._sweep(region)
        if sweep:
            self._launch("fused", sweep[0], prv, nxt, *self._sizes, *sweep[1], *values, *walls, *self._bc_args())

    def bc(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), ax=0.0, ay=0.0, sides=(True, True),
           region=None, az=0.0):
        """Thermal walls after propagate(prv -> nxt): one work-item per column of the region."""
        self._require_walls()
        if self.D == 3:
            return super().bc(prv, nxt, T_bottom, T_top, adiabatic, ax, ay, sides, region, az)
        walls = self._sides(sides)
        sweep = self._sweep(region, columns_only=True)
        if sweep:
            self._launch("bc", sweep[0], prv, nxt, *self._sizes, *sweep[1], self.real(T_bottom), self.real(T_top),
                         np.int32(bool(adiabatic[0])), np.int32(bool(adiabatic[1])), self.real(ax), self.real(ay),
                         *walls)

    def init_equilibrium(self, f, rho, *velocity_and_T, force=None):
        """The generated init_equilibrium kernel (physical fields in, arrays of `real`), then the halo."""
        if self.D == 3:
            return super().init_equilibrium(f, rho, *velocity_and_T, force=force)
        bufs = [self._to_device(self._fields_in(a)) for a in (rho, *velocity_and_T)]
        self._launch("init_equilibrium", self._site_range, f, *self._sizes, *bufs,
                     *(self.real(a) for a in self._force(force)))
        self.halo(f)
        self.queue.finish()

    def fields(self, f, force=None, native=False):
        """The generated fields kernel: the physical fields, float64 arrays of the lattice's shape
        (``native``: the kernel's own, in the arithmetic precision)."""
        if self.D == 3:
            return super().fields(f, force, native)
        hosts = [np.empty(self.shape, dtype=self.real) for _ in range(4)]
        bufs = [self.cl.Buffer(self.context, self.cl.mem_flags.WRITE_ONLY, h.nbytes) for h in hosts]
        self._launch("fields", self._site_range, f, *self._sizes, *bufs, *(self.real(a) for a in self._force(force)))
        for h, b in zip(hosts, bufs):
            self.cl.enqueue_copy(self.queue, h, b, is_blocking=True)
        return fields_dict(hosts, 2, native)

    def diagnostics(self, f, force=None, skip=None):
        """Per-line reductions of the physical fields; in 2D one work-item per row, accumulated in
        float for single precision."""
        if self.D == 3:
            return super().diagnostics(f, force, skip)
        from lbgen.codegen.diagnostics import ND
        acc = np.float32 if self.spec.precision == "single" else np.float64
        host = np.empty((self.ly, ND), dtype=acc)
        out = self.cl.Buffer(self.context, self.cl.mem_flags.WRITE_ONLY, host.nbytes)
        self._launch("diagnostics", self._row_range, f, *self._sizes, self._skip_device(skip), out,
                     *(self.real(a) for a in self._force(force)))
        self.cl.enqueue_copy(self.queue, host, out, is_blocking=True)
        return host.astype(np.float64)

    def fused_walls(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), sides=(True, True),
                    region=None, tau_wall=1.0, **params):
        """propagate + bc + collide in one launch (one work-item per site of the region)."""
        self._require_walls()
        if self.D == 3:
            return super().fused_walls(prv, nxt, T_bottom, T_top, adiabatic, sides, region, tau_wall, **params)
        walls, values = self._sides(sides), self._param_values(params, self.real) + self._tau_wall(tau_wall, self.real)
        sweep = self._sweep(region)
        if sweep:
            self._launch("fused_walls", sweep[0], prv, nxt, *self._sizes, *sweep[1], *values,
                         self.real(T_bottom), self.real(T_top), np.int32(bool(adiabatic[0])),
                         np.int32(bool(adiabatic[1])), *walls)


def compile(source, *shape, threads: int = 0, strict: bool = False, device=None,
            block_size: Optional[int] = None) -> OpenCLProgram:
    """Build (or reuse) the kernels of an OpenCL KernelSource for a lattice (lx, ly) or (lx, ly, lz).

    ``threads`` is the runtime interface's host thread count: an OpenCL device sizes its own
    pool (set POCL_MAX_PTHREAD_COUNT before the first OpenCL call to limit pocl's); any other
    keyword is refused (TypeError naming it).
    """
    return OpenCLProgram(source, shape, strict=strict, device=device, block_size=block_size)
