"""CUDA backend: the emitted ``.cu`` kernels run through pycuda (optional extra ``lbgen[cuda]``).

Three ways to use the same generated ``.cu`` text:

* here, ``compile(source, lx, ly)``: pycuda's ``SourceModule`` (nvcc) for the compute
  capability of device 0, device buffers, kernel launches -- needs pycuda and a GPU;
* :mod:`.nvcc`: ``compile_cu`` / ``ptxas_report`` -- nvcc only, no GPU: does the text
  compile for sm_80/sm_90, how many registers, any spills;
* :mod:`.shim`: the text compiled as C++ on the CPU with a host shim, launched with the
  same geometry as here -- checks indexing and bodies against the NumPy reference.

Launch geometry (shared by the runtime and the shim): 1-D grids, blocks of BLOCK threads
(``spec.block_size``, 128 by default; the kernels carry ``__launch_bounds__(BLOCK)``);
one thread per site for propagate/collide/fused with the VL lanes of a cluster on
consecutive threads; one thread per halo element for the halo refresh.
"""
from __future__ import annotations

import atexit
from typing import Any, Dict, Optional, Tuple

import numpy as np

from lbgen.backends.base import BackendUnavailable, CompileError, Program

DEFAULT_BLOCK = 128

#: the kernels of a CUDA source, without the prefix, in launch order of one unfused step
KERNELS = ("halo", "propagate", "collide", "fused", "init_equilibrium", "fields", "pack", "unpack", "diagnostics")
#: with KernelSpec(walls=True) also "bc" (one thread per column) and "fused_walls" (one per site)


def block_bound(spec) -> int:
    """The BLOCK the kernels were generated with (their __launch_bounds__)."""
    return spec.block_size or DEFAULT_BLOCK


def thread_counts(layout) -> Dict[str, int]:
    """Threads each kernel is launched with, for a layout (LX, LY, VL)."""
    sites = layout.LX * layout.LY
    return {
        "halo": layout.LX * 2 * layout.halo * layout.VL + 2 * layout.halo * layout.NRP * layout.VL,
        "propagate": sites, "collide": sites, "fused": sites,
        "init_equilibrium": sites, "fields": sites, "pack": sites, "unpack": sites, "bc": layout.LX,
        "diagnostics": layout.LY,
        "fused_walls": sites,
    }


def grid_size(threads: int, block: int) -> int:
    return (threads + block - 1) // block


class LaunchProgram(Program):
    """Program logic common to the pycuda runtime and the host shim.

    Subclasses provide ``_launch(kernel, blocks, threads, *args)`` (args: buffers, then the
    sizes and parameters as Python numbers), allocate/upload/download.
    """

    def __init__(self, source, lx: int, ly: int, block_size: Optional[int] = None):
        if source.spec.backend != "cuda":
            raise ValueError(f"the CUDA backend runs CUDA sources, not {source.spec.backend!r}")
        super().__init__(source, lx, ly)
        bound = block_bound(self.spec)
        self.block = int(block_size or bound)
        if not 1 <= self.block <= bound:
            raise ValueError(f"block_size={block_size} exceeds the kernels' __launch_bounds__({bound}); "
                             f"regenerate with KernelSpec(block_size=...) for larger blocks")
        self.prefix = self.spec.prefix
        self.launch_threads = thread_counts(self.layout)
        self._sizes = () if self.spec.compile_time_sizes else (lx, ly)

    def geometry(self, kernel: str) -> Tuple[int, int]:
        """(blocks, threads per block) of a kernel's 1-D launch."""
        return grid_size(self.launch_threads[kernel], self.block), self.block

    def _run(self, kernel: str, *args) -> None:
        blocks, threads = self.geometry(kernel)
        self._launch(kernel, blocks, threads, *args)

    def _launch(self, kernel: str, blocks: int, threads: int, *args) -> None:  # pragma: no cover
        raise NotImplementedError

    @staticmethod
    def _force(ax, ay) -> Tuple[float, float]:
        """The force arguments (per unit mass per step) of init_equilibrium, fields, diagnostics."""
        return float(ax), float(ay)

    def halo(self, f):
        self._run("halo", f, *self._sizes)

    def _sweep(self, kernel: str, region, *args, columns_only: bool = False) -> None:
        """Launch a sweep over `region` (None: the whole lattice; else (x0, x1, y0, y1), checked):
        its region arguments follow the sizes, the rest of `args` after them; an empty region
        launches nothing."""
        reg = self._check_region(region)
        n = reg[1] - reg[0] if columns_only else self._region_items(reg)
        if n > 0:
            self._launch(kernel, grid_size(n, self.block), self.block, *args[:2], *self._sizes, *reg, *args[2:])

    def _sides(self, sides):
        """The kernels' int arguments wall_bottom, wall_top."""
        return [int(v) for v in self._check_sides(sides)]

    def propagate(self, prv, nxt, region=None):
        self._sweep("propagate", region, prv, nxt)

    def collide(self, src, dst, sides=(True, True), region=None, **params):
        walls = self._sides(sides) if self.spec.walls else []
        self._sweep("collide", region, src, dst, *self._param_values(params), *walls)

    def fused(self, prv, nxt, region=None, **params):
        self._sweep("fused", region, prv, nxt, *self._param_values(params))

    def bc(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), ax=0.0, ay=0.0, sides=(True, True),
           region=None):
        self._require_walls()
        self._sweep("bc", region, prv, nxt, float(T_bottom), float(T_top), int(bool(adiabatic[0])),
                    int(bool(adiabatic[1])), float(ax), float(ay), *self._sides(sides), columns_only=True)

    def fused_walls(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), sides=(True, True),
                    region=None, **params):
        self._require_walls()
        self._sweep("fused_walls", region, prv, nxt, *self._param_values(params), float(T_bottom), float(T_top),
                    int(bool(adiabatic[0])), int(bool(adiabatic[1])), *self._sides(sides))


# --- pycuda runtime ----------------------------------------------------------------------

_STATE: Dict[str, Any] = {}


def _driver():
    """pycuda.driver, initialised, with a context on device 0 (made once, popped at exit)."""
    if "context" in _STATE:
        return _STATE["driver"]
    try:
        import pycuda.driver as cuda
    except ImportError as e:   # not installed, or installed without a loadable libcuda
        raise BackendUnavailable(f"CUDA: pycuda cannot be imported ({e}); pip install 'lbgen[cuda]' "
                                 "on a machine with an NVIDIA driver") from None
    try:
        cuda.init()
        count = cuda.Device.count()
    except Exception as e:  # cuda.Error / RuntimeError: no driver, no device
        raise BackendUnavailable(f"CUDA: the driver could not be initialised ({e}); no usable GPU here") from None
    if count == 0:
        raise BackendUnavailable("CUDA: pycuda found no CUDA device")
    device = cuda.Device(0)
    try:
        context = device.retain_primary_context()
        context.push()
    except Exception as e:
        raise BackendUnavailable(f"CUDA: could not create a context on {device.name()} ({e})") from None

    def _pop():
        try:
            context.pop()
        except Exception:
            pass

    atexit.register(_pop)
    _STATE.update(driver=cuda, device=device, context=context)
    return cuda


def device_arch() -> str:
    """sm_XY of device 0 (from its compute capability)."""
    _driver()
    major, minor = _STATE["device"].compute_capability()
    return f"sm_{major}{minor}"


def available() -> Tuple[bool, str]:
    try:
        cuda = _driver()
        from lbgen.backends.cuda.nvcc import find_nvcc
        find_nvcc()   # SourceModule runs nvcc
        import pycuda.compiler  # noqa: F401
    except BackendUnavailable as e:
        return False, str(e)
    except ImportError as e:
        return False, f"CUDA: {e}"
    dev = _STATE["device"]
    return True, f"CUDA via pycuda on {dev.name()} ({device_arch()}, driver {cuda.get_driver_version()})"


def _source_folder(source):
    """A cache folder holding the files of a source (the .cu includes its .cuh)."""
    from lbgen.system.cache import atomic_write_bytes, cache_dir
    folder = cache_dir("cuda") / source.digest
    for name, text in source.files.items():
        if not (folder / name).exists():
            atomic_write_bytes(folder / name, text.encode())
    return folder


def describe() -> str:
    """The GPU a CUDA run uses (device 0)."""
    _driver()
    return _STATE["device"].name()


def copy_bandwidth(repeat: int = 5, nbytes: int = 1 << 30) -> dict:
    """Device-to-device copy bandwidth (GB/s, read + write) of GPU 0: cuMemcpyDtoD of one
    large buffer, timed with CUDA events.  BackendUnavailable without pycuda or a GPU."""
    from lbgen.perf.timing import stats
    cuda = _driver()
    free, _total = cuda.mem_get_info()
    nbytes = int(min(nbytes, free // 4)) // 256 * 256
    a = cuda.mem_alloc(nbytes)
    b = cuda.mem_alloc(nbytes)
    try:
        cuda.memset_d8(a, 1, nbytes)
        cuda.memset_d8(b, 0, nbytes)
        cuda.memcpy_dtod(b, a, nbytes)   # warm-up
        cuda.Context.synchronize()
        start, end = cuda.Event(), cuda.Event()
        samples = []
        for _ in range(max(1, repeat)):
            start.record()
            cuda.memcpy_dtod_async(b, a, nbytes)
            end.record()
            end.synchronize()
            samples.append(2 * nbytes / (end.time_since(start) * 1e-3) / 1e9)
    finally:
        a.free()
        b.free()
    out = stats(samples)
    out.update(gbs=out["max"], bytes_per_buffer=nbytes, device=describe(),
               method="cuMemcpyDtoD of one buffer, CUDA events; read + write bytes")
    return out


def compile_module(source, strict: bool = False, options=None):
    """(pycuda SourceModule, arch) of a CUDA source for device 0 (2D and 3D runtimes);
    ``strict``: no FMA contraction.  nvcc's log is carried in the CompileError."""
    from pycuda.compiler import SourceModule
    arch = device_arch()
    opts = list(options or []) + (["--fmad=false"] if strict else [])
    try:
        module = SourceModule(source.text, options=opts, arch=arch, no_extern_c=True,
                              include_dirs=[str(_source_folder(source))])
    except Exception as e:  # pycuda.driver.CompileError carries nvcc's log
        raise CompileError(f"pycuda/nvcc failed to compile {source.main_file} for {arch} "
                           f"(options {opts}):\n{e}") from None
    return module, arch


def launch_formats(spec) -> Dict[str, str]:
    """pycuda's prepared-call argument formats of the kernels of a CUDA spec (P pointer, i int,
    d/f real), in the order of their parameter lists (templates/cuda/api.j2)."""
    from lbgen.codegen.spec import OPERATOR_PARAMETERS
    real = "d" if spec.precision == "double" else "f"
    sizes = "" if spec.compile_time_sizes else "ii"
    nparams = len(OPERATOR_PARAMETERS[spec.collision])
    formats = {
        "halo": "P" + sizes, "propagate": "PP" + sizes + "iiii", "pack": "PP" + sizes, "unpack": "PP" + sizes,
        "collide": "PP" + sizes + "iiii" + real * nparams + ("ii" if spec.walls else ""),
        "fused": "PP" + sizes + "iiii" + real * nparams,
        "init_equilibrium": "P" + sizes + "PPPP" + real * 2, "fields": "P" + sizes + "PPPP" + real * 2,
        "diagnostics": "P" + sizes + "P" + real * 2,
    }
    if spec.walls:
        formats["bc"] = "PP" + sizes + "iiii" + real + real + "ii" + real + real + "ii"
        formats["fused_walls"] = "PP" + sizes + "iiii" + real * nparams + real + real + "ii" + "ii"
    return formats


class CudaProgram(LaunchProgram):
    """Kernels of one CUDA source compiled by pycuda for device 0."""

    def __init__(self, source, lx: int, ly: int, strict: bool = False, block_size: Optional[int] = None,
                 options=None):
        super().__init__(source, lx, ly, block_size)
        self.cuda = _driver()
        self.module, self.arch = compile_module(source, strict, options)
        real = "d" if self.spec.precision == "double" else "f"
        self.real_np = np.float64 if real == "d" else np.float32
        formats = launch_formats(self.spec)
        self.functions = {}
        for k, fmt in formats.items():
            fn = self.module.get_function(f"{self.prefix}_{k}")
            fn.prepare(fmt)
            self.functions[k] = fn
        self.nbytes = self.layout.size * np.dtype(self.dtype).itemsize

    def _param_signature(self):
        from lbgen.codegen.spec import OPERATOR_PARAMETERS
        return OPERATOR_PARAMETERS[self.spec.collision]

    def _launch(self, kernel, blocks, threads, *args):
        conv = []
        for a in args:
            if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
                conv.append(np.int32(a))
            elif isinstance(a, (float, np.floating)):
                conv.append(self.real_np(a))
            else:
                conv.append(int(a))   # DeviceAllocation -> device pointer
        self.functions[kernel].prepared_call((blocks, 1), (threads, 1, 1), *conv)

    def allocate(self):
        buf = self.cuda.mem_alloc(self.nbytes)
        self.cuda.memset_d8(buf, 0, self.nbytes)
        return buf

    def upload(self, host, buffer=None):
        host = np.ascontiguousarray(np.asarray(host, dtype=self.dtype).reshape(-1))
        if host.size != self.layout.size:
            raise ValueError(f"upload expects {self.layout.size} elements, got {host.size}")
        buf = self.allocate() if buffer is None else buffer
        self.cuda.memcpy_htod(buf, host)
        return buf

    def download(self, buffer):
        out = np.empty(self.layout.size, dtype=self.dtype)
        self.cuda.memcpy_dtoh(out, buffer)
        return out

    def describe(self) -> str:
        return describe()

    def copy_bandwidth(self, repeat: int = 5):
        return copy_bandwidth(repeat)

    def synchronize(self):
        self.cuda.Context.synchronize()

    def _read_range(self, f, offset, out):
        self.cuda.memcpy_dtoh(out, int(f) + offset * self.dtype().itemsize)

    def _write_range(self, f, offset, data):
        self.cuda.memcpy_htod(int(f) + offset * self.dtype().itemsize, data)

    def init_equilibrium(self, f, rho, ux, uy, T, ax=0.0, ay=0.0):
        arrays = [self.cuda.to_device(np.ascontiguousarray(np.broadcast_to(a, (self.lx, self.ly)), dtype=np.float64))
                  for a in (rho, ux, uy, T)]
        self._run("init_equilibrium", f, *self._sizes, *arrays, *self._force(ax, ay))
        self.halo(f)
        self.synchronize()

    def fields(self, f, ax=0.0, ay=0.0):
        n = self.lx * self.ly * 8
        outs = [self.cuda.mem_alloc(n) for _ in range(4)]
        self._run("fields", f, *self._sizes, *outs, *self._force(ax, ay))
        result = []
        for d in outs:
            h = np.empty((self.lx, self.ly))
            self.cuda.memcpy_dtoh(h, d)
            result.append(h)
        return tuple(result)


    def diagnostics(self, f, ax=0.0, ay=0.0):
        from lbgen.codegen.diagnostics import ND
        out = self.cuda.mem_alloc(self.ly * ND * 8)
        self._run("diagnostics", f, *self._sizes, out, *self._force(ax, ay))
        host = np.empty((self.ly, ND))
        self.cuda.memcpy_dtoh(host, out)
        out.free()
        return host

def compile(source, lx: int, ly: int, strict: bool = False, block_size: Optional[int] = None,
            threads: int = 0) -> CudaProgram:
    """Compile a CUDA KernelSource with pycuda for device 0 (BackendUnavailable without one).
    ``threads`` (the interface's host thread count) does not apply to a GPU."""
    return CudaProgram(source, lx, ly, strict=strict, block_size=block_size)
