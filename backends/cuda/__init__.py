"""CUDA backend: the emitted ``.cu`` kernels run through CuPy (optional extra ``lbgen[cuda]``) or
pycuda (``lbgen[pycuda]``): :mod:`.runtimes`, chosen automatically or by ``$LBGEN_CUDA_RUNTIME``.

Three ways to use the same generated ``.cu`` text:

* here, ``compile(source, *shape)``: nvcc through the GPU runtime (CuPy's ``RawModule`` or
  pycuda's ``SourceModule``) for the compute capability of device 0, device buffers (the
  runtime's arrays), kernel launches -- needs CuPy or pycuda and a GPU;
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

from typing import Dict, Optional, Tuple

import numpy as np

from lbgen.backends.base import fields_dict
from lbgen.backends.build import BackendUnavailable, CompileError
from lbgen.backends.gpu import GPUProgram

DEFAULT_BLOCK = 128

#: the kernels of a CUDA source, without the prefix, in launch order of one unfused step
KERNELS = ("halo", "propagate", "collide", "fused", "init_equilibrium", "fields", "pack", "unpack", "diagnostics")
#: with KernelSpec(walls=True) also "bc" (one thread per column) and "fused_walls" (one per site)


def block_bound(spec) -> int:
    """The BLOCK the kernels were generated with (their __launch_bounds__)."""
    return spec.block_size or DEFAULT_BLOCK


def thread_counts(layout, wall_axis: Optional[str] = None) -> Dict[str, int]:
    """Threads each kernel is launched with, for a layout (LX, LY, VL) and the thermal walls' axis
    (the bc: one thread per line across the walls, a column, or a row with the walls across x)."""
    sites = layout.LX * layout.LY
    return {
        "halo": layout.LX * 2 * layout.halo * layout.VL + 2 * layout.halo * layout.NRP * layout.VL,
        "propagate": sites, "collide": sites, "fused": sites,
        "init_equilibrium": sites, "fields": sites, "pack": sites, "unpack": sites,
        "bc": layout.LY if wall_axis == "x" else layout.LX,
        "diagnostics": layout.LY,
        "fused_walls": sites,
    }


def grid_size(threads: int, block: int) -> int:
    return (threads + block - 1) // block


class LaunchProgram(GPUProgram):
    """Program logic common to the GPU runtimes (CuPy, pycuda) and the host shim, for any D.

    Subclasses provide ``_launch(kernel, blocks, threads, *args)`` (the 2D kernels; args:
    buffers, then the sizes and parameters as Python numbers), ``_run`` (the 3D kernels,
    ``GPUProgram``) and their buffers."""

    def __init__(self, source, shape, block_size: Optional[int] = None):
        if source.spec.backend != "cuda":
            raise ValueError(f"the CUDA backend runs CUDA sources, not {source.spec.backend!r}")
        super().__init__(source, shape)
        bound = block_bound(self.spec)
        self.block = int(block_size or bound)
        if not 1 <= self.block <= bound:
            raise ValueError(f"block_size={block_size} exceeds the kernels' __launch_bounds__({bound}); "
                             f"regenerate with KernelSpec(block_size=...) for larger blocks")
        if self.D == 2:
            self.launch_threads = thread_counts(self.layout, self.spec.wall_axis)
            self._sizes = () if self.spec.compile_time_sizes else self.shape

    def _blocks(self, items: int) -> int:
        return grid_size(items, self.block)

    def geometry(self, kernel: str) -> Tuple[int, int]:
        """(blocks, threads per block) of a 2D kernel's 1-D launch."""
        return grid_size(self.launch_threads[kernel], self.block), self.block

    def _whole(self, kernel: str, *args) -> None:
        """A 2D kernel launched over its whole range (``thread_counts``)."""
        self.calls[kernel] += 1
        self._launch(kernel, *self.geometry(kernel), *args)

    def _launch(self, kernel: str, blocks: int, threads: int, *args) -> None:  # pragma: no cover
        raise NotImplementedError

    def halo(self, f):
        if self.D == 3:
            return super().halo(f)
        self._whole("halo", f, *self._sizes)

    def _sweep(self, kernel: str, region, *args, columns_only: bool = False) -> None:
        """Launch a 2D sweep over `region` (None: the whole lattice; else (x0, x1, y0, y1), checked):
        its region arguments follow the sizes, the rest of `args` after them; an empty region
        launches nothing."""
        reg = self._check_region(region)
        n = self._lines(reg) if columns_only else self._region_items(reg)
        self.calls[kernel] += 1
        if n > 0:
            self._launch(kernel, grid_size(n, self.block), self.block, *args[:2], *self._sizes, *reg, *args[2:])

    def _sides(self, sides):
        """The kernels' int arguments wall_bottom, wall_top."""
        return [int(v) for v in self._check_sides(sides)]

    def propagate(self, prv, nxt, region=None):
        if self.D == 3:
            return super().propagate(prv, nxt, region)
        self._sweep("propagate", region, prv, nxt, *self._bc_args())

    def collide(self, src, dst, sides=(True, True), region=None, tau_wall=1.0, **params):
        if self.D == 3:
            return super().collide(src, dst, region, sides, tau_wall, **params)
        walls = self._sides(sides) if self.spec.walls else []
        self._sweep("collide", region, src, dst, *self._param_values(params), *self._tau_wall(tau_wall), *walls,
                    *self._bc_args())

    def fused(self, prv, nxt, region=None, sides=(True, True), tau_wall=1.0, **params):
        """With walls, the rows next to the walls of `sides` (bottom, top) relax with tau = tau_wall (no bc)."""
        if self.D == 3:
            return super().fused(prv, nxt, region, sides, tau_wall, **params)
        walls = self._sides(sides) if self.spec.walls else []
        self._sweep("fused", region, prv, nxt, *self._param_values(params), *self._tau_wall(tau_wall), *walls,
                    *self._bc_args())

    def bc(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), ax=0.0, ay=0.0, sides=(True, True),
           region=None, az=0.0):
        self._require_walls()
        if self.D == 3:
            return super().bc(prv, nxt, T_bottom, T_top, adiabatic, ax, ay, sides, region, az)
        self._sweep("bc", region, prv, nxt, float(T_bottom), float(T_top), int(bool(adiabatic[0])),
                    int(bool(adiabatic[1])), float(ax), float(ay), *self._sides(sides), columns_only=True)

    def fused_walls(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), sides=(True, True),
                    region=None, tau_wall=1.0, **params):
        self._require_walls()
        if self.D == 3:
            return super().fused_walls(prv, nxt, T_bottom, T_top, adiabatic, sides, region, tau_wall, **params)
        self._sweep("fused_walls", region, prv, nxt, *self._param_values(params), *self._tau_wall(tau_wall),
                    float(T_bottom), float(T_top),
                    int(bool(adiabatic[0])), int(bool(adiabatic[1])), *self._sides(sides))

    def init_equilibrium(self, f, rho, *velocity_and_T, force=None):
        if self.D == 3:
            return super().init_equilibrium(f, rho, *velocity_and_T, force=force)
        arrays = [self._to_device(np.ascontiguousarray(np.broadcast_to(a, self.shape), dtype=np.float64))
                  for a in (rho, *velocity_and_T)]
        self._whole("init_equilibrium", f, *self._sizes, *arrays, *self._force(force))
        self.halo(f)
        self.synchronize()

    def fields(self, f, force=None, native=False):
        if self.D == 3:
            return super().fields(f, force, native)
        out = [self._empty(self.shape) for _ in range(4)]
        self._whole("fields", f, *self._sizes, *out, *self._force(force))
        return fields_dict((self._host(a) for a in out), 2, native)

    def diagnostics(self, f, force=None, skip=None):
        if self.D == 3:
            return super().diagnostics(f, force, skip)
        from lbgen.codegen.diagnostics import ND
        out = self._empty((self.ly, ND))
        self._whole("diagnostics", f, *self._sizes, self._skip_device(skip), out, *self._force(force))
        return self._host(out)

    def _empty(self, shape):
        """A float64 array where the kernels write it (the shim: host; CudaProgram: device)."""
        return np.empty(shape)

    def _host(self, a) -> np.ndarray:
        return a


# --- the GPU runtime: CuPy or pycuda (backends/cuda/runtimes.py) ---------------------------------------

def gpu_runtime():
    """The CUDA runtime of this process (CuPy or pycuda: ``runtimes.runtime``); BackendUnavailable says why not."""
    from lbgen.backends.cuda.runtimes import runtime
    return runtime()


def _loaded_mpi_libraries() -> Tuple[str, ...]:
    """The MPI libraries this process has loaded (libmpi*.so*, from /proc/self/maps; none where
    there is no /proc)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/libmpi" in line}
    except OSError:
        return ()
    return tuple(sorted(p for p in paths if p.rsplit("/", 1)[-1].startswith("libmpi")))


def mpi_cuda_aware() -> bool:
    """Whether the MPI library mpi4py loaded takes CUDA device pointers (MPIX_Query_cuda_support,
    an extension of MPICH and Open MPI; False where the library lacks it)."""
    import ctypes
    from mpi4py import MPI  # noqa: F401 - loads the library
    library = ctypes.CDLL(None)
    for path in _loaded_mpi_libraries():   # the libmpi mpi4py loaded (perhaps not global)
        try:
            library = ctypes.CDLL(path)
            break
        except OSError:
            continue
    query = getattr(library, "MPIX_Query_cuda_support", None)
    return bool(query()) if query is not None else False


def device_arch() -> str:
    """sm_XY of device 0 (from its compute capability)."""
    return gpu_runtime().arch


def describe() -> str:
    """The GPU a CUDA run uses (device 0)."""
    return gpu_runtime().device_name()


def available() -> Tuple[bool, str]:
    try:
        rt = gpu_runtime()
        from lbgen.backends.cuda.nvcc import find_nvcc
        find_nvcc()   # the kernels are compiled by nvcc (their host helpers include cuda_runtime.h)
    except BackendUnavailable as e:
        return False, str(e)
    return True, f"CUDA via {rt.describe()}"


def _source_folder(source):
    """A cache folder holding the files of a source (the .cu includes its .cuh)."""
    from lbgen.system.cache import atomic_write_bytes, cache_dir
    folder = cache_dir("cuda") / source.digest
    for name, text in source.files.items():
        if not (folder / name).exists():
            atomic_write_bytes(folder / name, text.encode())
    return folder


def copy_bandwidth(repeat: int = 5, nbytes: int = 1 << 30) -> dict:
    """Device-to-device copy bandwidth (GB/s, read + write) of GPU 0: cudaMemcpy of one
    large buffer, timed with CUDA events.  BackendUnavailable without a GPU runtime."""
    from lbgen.system.timing import stats
    rt = gpu_runtime()
    nbytes = int(min(nbytes, rt.free_memory() // 4)) // 256 * 256
    a = rt.zeros(nbytes, np.uint8)
    b = rt.zeros(nbytes, np.uint8)
    rt.dtod_ms(b, a, nbytes)   # warm-up
    samples = [2 * nbytes / (rt.dtod_ms(b, a, nbytes) * 1e-3) / 1e9 for _ in range(max(1, repeat))]
    out = stats(samples)
    out.update(gbs=out["max"], bytes_per_buffer=nbytes, device=rt.device_name(), runtime=rt.label,
               method="cudaMemcpy device to device of one buffer, CUDA events; read + write bytes")
    return out


def compile_module(source, strict: bool = False, options=None):
    """(module, arch) of a CUDA source for device 0 (2D and 3D runtimes), compiled by nvcc through
    the GPU runtime; ``strict``: no FMA contraction.  nvcc's log is carried in the CompileError."""
    from lbgen.backends.cuda.nvcc import find_nvcc
    rt = gpu_runtime()
    opts = list(options or []) + (["--fmad=false"] if strict else [])
    try:
        return rt.compile(source.text, opts, _source_folder(source), find_nvcc()), rt.arch
    except CompileError as e:
        raise CompileError(f"{source.main_file} for {rt.arch}: {e}") from None


def arithmetic_dtype(spec) -> np.dtype:
    """The kernels' arithmetic type (their real parameters, the emitted ``<prefix>_arith``): float64
    for double and mixed precision (fp32 storage of double arithmetic), float32 otherwise; the one
    home of that rule for the launches and the host shim."""
    from lbgen.codegen.spec import arithmetic_bytes
    return np.dtype({8: np.float64, 4: np.float32}[arithmetic_bytes(spec.precision)])


def kernel_arguments(spec) -> Dict[str, str]:
    """The argument kinds of the kernels of a CUDA spec, one letter per parameter in the order
    of their parameter lists (templates/cuda/api.j2): P pointer, i int, d / f real (the sweeps'
    boundaries last: walls, lids, lid, solid, opens, openv)."""
    from lbgen.codegen.spec import OPERATOR_PARAMETERS
    real = arithmetic_dtype(spec).char                                   # "d" or "f"
    sizes = "" if spec.compile_time_sizes else "ii"
    nparams = len(OPERATOR_PARAMETERS[spec.collision])
    formats = {
        "halo": "P" + sizes, "propagate": "PP" + sizes + "iiii" + "iiPPiP", "pack": "PP" + sizes,
        "unpack": "PP" + sizes,
        "collide": "PP" + sizes + "iiii" + real * nparams + (real + "ii" if spec.walls else "") + "iiPPiP",
        "fused": "PP" + sizes + "iiii" + real * nparams + (real + "ii" if spec.walls else "") + "iiPPiP",
        "init_equilibrium": "P" + sizes + "PPPP" + real * 2, "fields": "P" + sizes + "PPPP" + real * 2,
        "diagnostics": "P" + sizes + "PP" + real * 2,
        "body_links": "PPPPPiPP", "body_put": "PPPi",     # f, the links' arrays and counts (lbgen.simulation.bodies)
    }
    if spec.walls:
        formats["bc"] = "PP" + sizes + "iiii" + real + real + "ii" + real + real + "ii"
        formats["fused_walls"] = "PP" + sizes + "iiii" + real * nparams + real + real + real + "ii" + "ii"
    return formats


class CudaProgram(LaunchProgram):
    """Kernels of one CUDA source compiled for device 0; buffers are device arrays of the GPU
    runtime (``self.rt``: CuPy or pycuda, backends/cuda/runtimes.py), which holds every call into it."""

    def __init__(self, source, shape, strict: bool = False, block_size: Optional[int] = None, options=None):
        super().__init__(source, shape, block_size)      # sizes checked before any work
        self.rt = gpu_runtime()
        self.module, self.arch = compile_module(source, strict, options)
        kinds = {"P": None, "i": np.int32, "d": np.float64, "f": np.float32}
        self.functions, self.kinds = {}, {}
        if self.D == 2:
            for k, fmt in kernel_arguments(self.spec).items():
                self.functions[k] = self.rt.function(self.module, f"{self.prefix}_{k}")
                self.kinds[k] = [kinds[c] for c in fmt]

    def _launch(self, kernel, blocks, threads, *args):
        kinds = self.kinds[kernel]
        if len(args) != len(kinds):
            raise TypeError(f"{self.prefix}_{kernel} takes {len(kinds)} arguments, got {len(args)}")
        self.rt.launch(self.functions[kernel], blocks, threads,
                       [a if kind is None else kind(a) for a, kind in zip(args, kinds)])

    def _run(self, kernel, items, args, outputs):
        """A 3D kernel's launch (host arrays copied in, and back for the outputs)."""
        fn = self.functions.get(kernel) or self.rt.function(self.module, f"{self.prefix}_{kernel}")
        self.functions[kernel] = fn
        conv, host = [], {}
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                host[i] = self._to_device(a)
                conv.append(host[i])
            else:
                conv.append(a)
        self.rt.launch(fn, self._blocks(items), self.block, conv)
        for i in outputs:
            if i in host:
                self.rt.to_host_into(host[i], args[i])

    def provenance(self) -> dict:
        out = super().provenance()
        out["cuda_runtime"] = self.rt.label
        return out

    # --- device buffers: the runtime's arrays -----------------------------------------------------
    def allocate(self):
        return self.rt.zeros(self.layout.size, self.dtype)

    def _is_device(self, a) -> bool:
        return self.rt.is_device(a)

    def _device_elements(self, a) -> int:
        return a.size if a.dtype == self.dtype and a.flags.c_contiguous else -1

    def _to_device(self, host):
        return self.rt.to_device(host)

    def _to_host(self, buffer, dtype=None) -> np.ndarray:
        return self.rt.to_host(buffer)      # typed device arrays: their own dtype

    def _host_into(self, buffer, host) -> None:
        self.rt.to_device_into(host, buffer)

    def _empty(self, shape):
        return self.rt.empty(shape, np.float64)

    def _host(self, a) -> np.ndarray:
        return self.rt.to_host(a)

    def describe(self) -> str:
        return self.rt.device_name()

    def copy_bandwidth(self, repeat: int = 5):
        return copy_bandwidth(repeat)

    def synchronize(self):
        self.rt.synchronize()

    def _read_range(self, f, offset, out):
        self._count("to host", out.nbytes)
        out[...] = self.rt.to_host(self.rt.view(f, offset, out.size))

    def _write_range(self, f, offset, data):
        self._count("to device", data.nbytes)
        self.rt.to_device_into(np.ascontiguousarray(data, dtype=self.dtype), self.rt.view(f, offset, data.size))

    # --- halo slabs on the device: the runtime's take / put kernels, pinned host copies ------------
    def slab_index(self, index):
        return self.rt.to_device(np.ascontiguousarray(index, dtype=np.int64))

    def slab_buffer(self, n):
        return self.rt.empty(n, self.dtype)

    def gather(self, f, index, out):
        self.rt.take(f, index, out)
        return out

    def scatter(self, f, index, values):
        self.rt.put(f, index, values)

    def slab_to_host(self, slab, host, aside=False):
        self._count("to host", host.nbytes)
        self.rt.to_host_async(slab, host, aside=aside)

    def slab_to_device(self, host, slab, aside=False):
        self._count("to device", host.nbytes)
        if aside:
            self.rt.to_device_async(host, slab, aside=True)
            self.rt.stream_synchronize()
        else:
            self.rt.to_device_into(host, slab)

    def wait_aside(self):
        self.rt.stream_synchronize()

    shares_host_memory = False

    def slab_host(self, n):
        return self.rt.pinned_empty(n, self.dtype)

    def direct_mpi(self, comm):
        if not self.rt.array_interface_ok:
            return f"{self.rt.label}'s device arrays do not carry __cuda_array_interface__ for MPI"
        if not mpi_cuda_aware():
            return "this MPI library is not CUDA-aware (MPIX_Query_cuda_support() is 0 or absent)"
        return None


def compile(source, *shape, strict: bool = False, block_size: Optional[int] = None, threads: int = 0,
            options=None) -> CudaProgram:
    """Compile a CUDA KernelSource for device 0 (BackendUnavailable without a GPU runtime: CuPy or pycuda).
    ``threads`` (the interface's host thread count) does not apply to a GPU."""
    return CudaProgram(source, shape, strict=strict, block_size=block_size, options=options)
