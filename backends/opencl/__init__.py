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
size (the kernels return early past the last site).  Default work-group size: the
spec's ``block_size``, else 64 (a multiple of every VL up to 64), capped by the device.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from typing import Dict, Optional, Tuple

import numpy as np

from lbgen.system.cache import atomic_write_bytes, cache_dir, digest
from lbgen.backends.base import fields_dict
from lbgen.backends.build import BackendUnavailable, CompileError, record_build
from lbgen.backends.gpu import GPUProgram
from lbgen.codegen.kernel_api import GPU_BOUNCE_KERNELS, GPU_ENTRY_POINTS_3D

DEFAULT_BLOCK_SIZE = 64
STRICT_OPTIONS = ("-DLBGEN_STRICT",)
#: options this backend refuses: they change results (contraction, relaxed math)
FORBIDDEN_OPTIONS = ("-cl-mad-enable", "-cl-fast-relaxed-math", "-cl-unsafe-math-optimizations")

_lock = threading.Lock()
_contexts: Dict[int, tuple] = {}          # device int_ptr -> (context, queue)
_programs: Dict[tuple, object] = {}       # (device int_ptr, source digest, options) -> cl.Program


def _installed_icds() -> list:
    """(file name, library path) of the OpenCL runtimes installed as Python packages.

    pyopencl's wheel bundles pocl (its loader finds that by itself); the Intel CPU runtime
    (``pip install intel-opencl-rt intel-cmplr-lib-rt``) puts ``libintelocl.so`` into
    ``<prefix>/lib`` with an .icd file whose path is a build-time placeholder, so the ICD
    loader never finds it on its own.
    """
    import glob
    import sys
    found = []
    intel = os.path.join(sys.prefix, "lib", "libintelocl.so")
    if os.path.exists(intel):
        found.append(("00-intel-cpu.icd", intel))
    for icd in sorted(glob.glob("/etc/OpenCL/vendors/*.icd")):
        found.append((f"90-{os.path.basename(icd)}", open(icd).read().strip()))
    return found


def _setup_icd_vendors() -> None:
    """Make pip-installed OpenCL runtimes visible to the ICD loader (before it starts).

    Only when ``OCL_ICD_VENDORS`` is unset and the Intel CPU runtime is installed in this
    environment: then a vendors folder under the lbgen cache lists it next to the system
    ICDs (pyopencl's bundled pocl is found by its loader regardless).  (pocl 3.0 cannot
    build for CPUs its LLVM 14 does not know, e.g. AMD Zen 5: "unknown target CPU".)
    """
    if os.environ.get("OCL_ICD_VENDORS"):
        return
    icds = _installed_icds()
    if not any(name.startswith("00-intel") for name, _ in icds):
        return
    folder = cache_dir("opencl") / "vendors"
    folder.mkdir(parents=True, exist_ok=True)
    for name, lib in icds:
        path = folder / name
        if not path.exists() or path.read_text().strip() != lib:
            atomic_write_bytes(path, (lib + "\n").encode())
    os.environ["OCL_ICD_VENDORS"] = str(folder)


def _cl():
    if "pyopencl" not in __import__("sys").modules:
        _setup_icd_vendors()
    try:
        import pyopencl as cl
    except ImportError as e:
        raise BackendUnavailable(
            f"OpenCL backend: pyopencl is not importable ({e}); install it with "
            f"`pip install 'lbgen[opencl]'` (for OpenCL on an x86 CPU add intel-opencl-rt "
            f"intel-cmplr-lib-rt, or use pyopencl's bundled pocl where its LLVM knows the CPU)") from None
    return cl


def _platforms():
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        platforms = []
        reason = str(e)
    else:
        reason = "no OpenCL platform (ICD) found"
    if not platforms:
        raise BackendUnavailable(
            f"OpenCL backend: {reason}; install a driver or `pip install pocl-binary-distribution`")
    return platforms


def devices() -> list:
    """[(platform index, device index, platform, device)] for every device of every platform."""
    out = []
    for pi, platform in enumerate(_platforms()):
        try:
            devs = platform.get_devices()
        except Exception:          # a platform without devices raises DEVICE_NOT_FOUND
            devs = []
        for di, dev in enumerate(devs):
            out.append((pi, di, platform, dev))
    if not out:
        raise BackendUnavailable("OpenCL backend: OpenCL platforms found, but none has a device")
    return out


@contextlib.contextmanager
def _quiet_build():
    """pyopencl warns on any non-empty build log (and on log access before a build); the
    log of a failed build goes into CompileError instead.  PYOPENCL_COMPILER_OUTPUT=1
    still shows everything."""
    with warnings.catch_warnings():
        if not os.environ.get("PYOPENCL_COMPILER_OUTPUT"):
            warnings.simplefilter("ignore", _cl().CompilerWarning)
            warnings.filterwarnings("ignore", message="Pre-build attribute access")
        yield


def _describe(entry) -> str:
    pi, di, platform, dev = entry
    return f"{pi}:{di} {dev.name.strip()} ({platform.name.strip()}, {dev.version.strip()})"


def select_device(device: Optional[str] = None):
    """The cl.Device chosen by ``device``, else ``$PYOPENCL_CTX``, else the first one.

    Raises BackendUnavailable (listing the devices there are) when nothing matches.
    """
    found = devices()
    origin = "device"
    choice = device
    if choice is None or str(choice).strip() == "":
        choice = os.environ.get("PYOPENCL_CTX") or None
        origin = "PYOPENCL_CTX"
    if choice is None:
        return _first_working_device(found)
    text = str(choice).strip()
    listing = "; ".join(_describe(e) for e in found)
    parts = text.split(":")
    if all(p.strip().isdigit() for p in parts if p.strip() != "") and 1 <= len(parts) <= 2 and parts[0].strip():
        pi = int(parts[0])
        di = int(parts[1]) if len(parts) == 2 and parts[1].strip() else 0
        for e in found:
            if e[0] == pi and e[1] == di:
                return e[3]
        raise BackendUnavailable(f"OpenCL backend: no device {pi}:{di} ({origin}={text!r}); devices here: {listing}")
    matches = [e for e in found if text.lower() in e[3].name.lower()]
    if not matches:
        raise BackendUnavailable(f"OpenCL backend: no device whose name contains {text!r} ({origin}={text!r}); "
                                 f"devices here: {listing}")
    return matches[0][3]


_working: Dict[int, Optional[str]] = {}   # device int_ptr -> None (builds) or why not


def _probe(dev) -> Optional[str]:
    """None when the device builds a trivial kernel, else the build error (cached)."""
    cl = _cl()
    key = dev.int_ptr
    if key not in _working:
        try:
            ctx, _ = _context(dev)
            with _quiet_build():
                cl.Program(ctx, "__kernel void lbgen_probe(__global float *a) { a[0] = 1.0f; }").build(devices=[dev])
            _working[key] = None
        except cl.Error as e:
            _working[key] = " ".join(str(e).split())[:300]
    return _working[key]


def _first_working_device(found):
    """The first device that can build kernels (a device whose compiler fails is passed over)."""
    failures = []
    for entry in found:
        why = _probe(entry[3])
        if why is None:
            return entry[3]
        failures.append(f"{_describe(entry)}: {why}")
    raise BackendUnavailable("OpenCL backend: no device can build kernels here: " + "; ".join(failures))


def available() -> Tuple[bool, str]:
    found = devices()
    return True, "OpenCL via pyopencl: " + "; ".join(_describe(e) for e in found)


def _context(dev):
    cl = _cl()
    key = dev.int_ptr
    with _lock:
        if key not in _contexts:
            ctx = cl.Context([dev])
            _contexts[key] = (ctx, cl.CommandQueue(ctx, dev))
        return _contexts[key]


def build_options(strict: bool = False, single: bool = False, dev=None) -> tuple:
    opts = list(STRICT_OPTIONS) if strict else []
    if strict and single and dev is not None:
        cl = _cl()
        if dev.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
            opts.append("-cl-fp32-correctly-rounded-divide-sqrt")
    return tuple(opts)


def build(source, dev, options: tuple):
    """The built cl.Program for a source on a device (cached in this process)."""
    cl = _cl()
    if source.spec.backend != "opencl":
        raise ValueError(f"the OpenCL backend compiles OpenCL sources, not {source.spec.backend!r}")
    bad = [o for o in options if o in FORBIDDEN_OPTIONS]
    if bad:
        raise ValueError(f"OpenCL backend: build options {bad} change results and are not allowed")
    ctx, _ = _context(dev)
    key = (dev.int_ptr, source.digest, options)
    with _lock:
        if key in _programs:
            return _programs[key]
    directory = cache_dir("opencl") / digest(source.digest, options, dev.name, dev.driver_version)
    cl_file = directory / source.main_file
    if not cl_file.exists():
        for name, text in source.files.items():
            atomic_write_bytes(directory / name, text.encode())
    program = cl.Program(ctx, source.text)
    started = time.perf_counter()
    try:
        with _quiet_build():
            program.build(options=list(options), devices=[dev])
        record_build("opencl", directory.name, source.main_file, f"OpenCL ({dev.name.strip()})",
                     time.perf_counter() - started)
    except cl.Error as e:
        try:
            with _quiet_build():
                log = program.get_build_info(dev, cl.program_build_info.LOG)
        except Exception:
            log = ""
        log = log or str(e)
        atomic_write_bytes(directory / "build.log", log.encode())
        raise CompileError(f"OpenCL failed to build the generated file {cl_file} for {dev.name.strip()}\n"
                           f"(options: {' '.join(options) or '(none)'}; log also in {directory / 'build.log'})\n"
                           f"{log}") from None
    with _lock:
        _programs[key] = program
    return program


class OpenCLProgram(GPUProgram):
    """The kernels of an OpenCL source for a lattice ``shape`` (2D or 3D) on one device; lattice
    buffers (``allocate``) are ``cl.Buffer``s on the device; fields, plain arrays and lid
    velocities are ``real``."""

    def __init__(self, source, shape, strict: bool = False, device=None, block_size: Optional[int] = None):
        super().__init__(source, shape)
        cl = self.cl = _cl()
        self.device = select_device(device)
        single = self.spec.precision == "single"
        if not single and not self.device.double_fp_config:
            raise BackendUnavailable(
                f"OpenCL backend: device {self.device.name.strip()!r} has no double precision "
                f"(cl_khr_fp64, double_fp_config = 0); use precision='single' or another device")
        self.field_dtype = self.lid_dtype = self.dtype
        self.context, self.queue = _context(self.device)
        self.strict = strict
        self.options = build_options(strict, single, self.device)
        self.program = build(source, self.device, self.options)
        if self.D == 3:
            names = GPU_ENTRY_POINTS_3D
        else:
            names = (("halo", "propagate", "collide", "fused", "diagnostics", "init_equilibrium", "fields")
                     + (("bc", "fused_walls") if self.spec.walls else GPU_BOUNCE_KERNELS))
        self.kernels = {n: cl.Kernel(self.program, f"{self.prefix}_{n}") for n in names}
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

    def _to_host(self, buffer) -> np.ndarray:
        host = np.empty(buffer.size // np.dtype(self.dtype).itemsize, dtype=self.dtype)
        self.cl.enqueue_copy(self.queue, host, buffer, is_blocking=True)
        return host

    def _host_into(self, buffer, host) -> None:
        self.cl.enqueue_copy(self.queue, buffer, np.ascontiguousarray(host), is_blocking=True)

    def _read_range(self, f, offset, out):
        self.cl.enqueue_copy(self.queue, out, f, src_offset=offset * out.itemsize, is_blocking=True)

    def _write_range(self, f, offset, data):
        self.cl.enqueue_copy(self.queue, f, data, dst_offset=offset * data.itemsize, is_blocking=True)

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
        n = reg[1] - reg[0] if columns_only else self._region_items(reg)
        if n <= 0:
            return None
        ranges = (self._column_range if columns_only else self._site_range) if region is None else self._ranges(n)
        return ranges, [np.int32(v) for v in reg]

    def propagate(self, prv, nxt, region=None):
        """The propagate kernel, then (with boundaries, set_boundaries) the bounce kernel: the C
        API's propagate, which applies them itself."""
        if self.D == 3:
            return super().propagate(prv, nxt, region)
        sweep = self._sweep(region)
        if sweep:
            self._launch("propagate", sweep[0], prv, nxt, *self._sizes, *sweep[1])
            if self.bounds is not None:
                self._launch("bounce", sweep[0], prv, nxt, *self._sizes, *sweep[1], *self._bounds_args)

    def _sides(self, sides):
        """The kernels' int arguments wall_bottom, wall_top."""
        return [np.int32(v) for v in self._check_sides(sides)]

    def collide(self, src, dst, sides=(True, True), region=None, tau_wall=1.0, **params):
        if self.D == 3:
            return super().collide(src, dst, region, **params)
        walls = self._sides(sides) if self.spec.walls else []
        values = self._param_values(params, self.dtype) + self._tau_wall(tau_wall, self.dtype)
        sweep = self._sweep(region)
        if sweep:
            self._launch("collide", sweep[0], src, dst, *self._sizes, *sweep[1], *values, *walls)
            if self.bounds is not None and self.bounds[3] is not None:      # solid cells hold 0
                self._launch("bounded_collide", sweep[0], src, dst, *self._sizes, *sweep[1], *self._bounds_args)

    def fused(self, prv, nxt, region=None, sides=(True, True), tau_wall=1.0, **params):
        """With walls, the rows next to the walls of `sides` (bottom, top) relax with tau = tau_wall (no bc)."""
        if self.D == 3:
            return super().fused(prv, nxt, region, **params)
        walls = self._sides(sides) if self.spec.walls else []
        values = self._param_values(params, self.dtype) + self._tau_wall(tau_wall, self.dtype)
        sweep = self._sweep(region)
        if sweep:
            self._launch("fused", sweep[0], prv, nxt, *self._sizes, *sweep[1], *values, *walls)
            if self.bounds is not None:     # the sites a boundary reaches, redone
                self._launch("bounded_fused", sweep[0], prv, nxt, *self._sizes, *sweep[1], *values,
                             *self._bounds_args)

    def bc(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), ax=0.0, ay=0.0, sides=(True, True),
           region=None):
        """Thermal walls after propagate(prv -> nxt): one work-item per column of the region."""
        self._require_walls()
        walls = self._sides(sides)
        sweep = self._sweep(region, columns_only=True)
        if sweep:
            self._launch("bc", sweep[0], prv, nxt, *self._sizes, *sweep[1], self.dtype(T_bottom), self.dtype(T_top),
                         np.int32(bool(adiabatic[0])), np.int32(bool(adiabatic[1])), self.dtype(ax), self.dtype(ay),
                         *walls)

    def init_equilibrium(self, f, rho, *velocity_and_T, force=None):
        """The generated init_equilibrium kernel (physical fields in, arrays of `real`), then the halo."""
        if self.D == 3:
            return super().init_equilibrium(f, rho, *velocity_and_T, force=force)
        bufs = [self._to_device(self._fields_in(a)) for a in (rho, *velocity_and_T)]
        self._launch("init_equilibrium", self._site_range, f, *self._sizes, *bufs,
                     *(self.dtype(a) for a in self._force(force)))
        self.halo(f)
        self.queue.finish()

    def fields(self, f, force=None):
        """The generated fields kernel: the physical fields, float64 arrays of the lattice's shape."""
        if self.D == 3:
            return super().fields(f, force)
        hosts = [np.empty(self.shape, dtype=self.dtype) for _ in range(4)]
        bufs = [self.cl.Buffer(self.context, self.cl.mem_flags.WRITE_ONLY, h.nbytes) for h in hosts]
        self._launch("fields", self._site_range, f, *self._sizes, *bufs, *(self.dtype(a) for a in self._force(force)))
        for h, b in zip(hosts, bufs):
            self.cl.enqueue_copy(self.queue, h, b, is_blocking=True)
        return fields_dict(hosts)

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
                     *(self.dtype(a) for a in self._force(force)))
        self.cl.enqueue_copy(self.queue, host, out, is_blocking=True)
        return host.astype(np.float64)

    def fused_walls(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), sides=(True, True),
                    region=None, tau_wall=1.0, **params):
        """propagate + bc + collide in one launch (one work-item per site of the region)."""
        self._require_walls()
        walls, values = self._sides(sides), self._param_values(params, self.dtype) + self._tau_wall(tau_wall, self.dtype)
        sweep = self._sweep(region)
        if sweep:
            self._launch("fused_walls", sweep[0], prv, nxt, *self._sizes, *sweep[1], *values,
                         self.dtype(T_bottom), self.dtype(T_top), np.int32(bool(adiabatic[0])),
                         np.int32(bool(adiabatic[1])), *walls)


def describe(device=None) -> str:
    """The OpenCL device a run would use."""
    return select_device(device).name.strip()


def compile(source, *shape, threads: int = 0, strict: bool = False, device=None,
            block_size: Optional[int] = None) -> OpenCLProgram:
    """Build (or reuse) the kernels of an OpenCL KernelSource for a lattice (lx, ly) or (lx, ly, lz).

    ``threads`` is the runtime interface's host thread count: an OpenCL device sizes its own
    pool (set POCL_MAX_PTHREAD_COUNT before the first OpenCL call to limit pocl's); any other
    keyword is refused (TypeError naming it).
    """
    return OpenCLProgram(source, shape, strict=strict, device=device, block_size=block_size)
