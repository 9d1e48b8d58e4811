"""The Python runtimes that run the CUDA kernels on a GPU: CuPy and pycuda, behind one interface.

``CudaProgram`` (backends/cuda) and ``copy_bandwidth`` call only a ``CudaRuntime``; the two
implementations hold every call into CuPy or pycuda:

* ``CuPyRuntime``: CuPy's ``RawModule`` (backend nvcc), CuPy arrays as device buffers;
* ``PyCudaRuntime``: pycuda's ``SourceModule`` (nvcc) in device 0's primary context (retained
  and pushed once, popped at exit), ``pycuda.gpuarray.GPUArray`` as device buffers.

Both compile the same ``.cu`` text with the same nvcc options: the caller's, ``--fmad=false`` when
strict, and ``-ftz=true``, which CuPy adds to every build of its own (``NVCC_OPTIONS``), for the
compute capability of device 0, so the two runtimes run the same machine code and give the same
bits.

The choice (``runtime()``): ``$LBGEN_CUDA_RUNTIME`` = ``cupy`` or ``pycuda`` names one; unset or
empty, the first of ``RUNTIMES`` that imports and finds a device (CuPy, then pycuda).

Streams.  Kernels, ``take``/``put`` and the synchronous copies run on the runtime's compute
stream (the legacy default stream, as before).  ``to_host_async`` / ``to_device_async`` queue a
copy between a device array and a (pinned) host array: ``aside=False`` on the compute stream,
in order with the kernels (``synchronize()`` waits for it); ``aside=True`` on a second,
non-blocking copy stream, so that the kernels queued next run meanwhile.  An aside copy to the
host first waits (on the device) for the work already queued on the compute stream, so it moves
what a kernel has just packed; an aside copy to the device does not wait for the kernels: the
caller makes sure none still queued uses that device array.  ``stream_synchronize()`` waits on
the host for the copy stream: call it before reading a host array an aside copy fills, and
before launching a kernel that reads a device array an aside copy fills.
"""
from __future__ import annotations

import atexit
import os
from typing import Dict, Optional, Sequence

import numpy as np

from lbgen.backends.build import BackendUnavailable, CompileError

#: the environment variable that names the runtime
RUNTIME_ENV = "LBGEN_CUDA_RUNTIME"

#: options every build gets from both runtimes: CuPy adds -ftz=true to each of its nvcc builds
#: (cupy/cuda/compiler.py); pycuda is given the same, so the two compile the same code
NVCC_OPTIONS = ("-ftz=true",)

#: ``take`` and ``put`` for the lattice dtypes (16-bit storage: its bits), compiled on first use (threads: INDEX_BLOCK per block)
INDEX_BLOCK = 256
INDEX_KERNELS = "".join(f"""
extern "C" __global__ void lbgen_take_{n}(const {t} *__restrict__ f, const long long *__restrict__ index,
                                          {t} *__restrict__ out, long long n)
{{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = f[index[i]];
}}

extern "C" __global__ void lbgen_put_{n}({t} *__restrict__ f, const long long *__restrict__ index,
                                         const {t} *__restrict__ values, long long n)
{{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) f[index[i]] = values[i];
}}
""" for n, t in (("double", "double"), ("float", "float"), ("u16", "unsigned short")))
_INDEX_TYPES = {np.dtype(np.float64): "double", np.dtype(np.float32): "float",       # 16-bit storage: its bits
                np.dtype(np.float16): "u16", np.dtype(np.uint16): "u16"}


class CudaRuntime:
    """What the CUDA backend asks of a GPU runtime (device 0).  Device arrays are the runtime's
    own (``is_device``); kernel arguments are device arrays, None (a NULL pointer) or NumPy
    scalars.  ``name``/``version``: the Python package; ``label`` both."""

    key = ""                  #: the value of $LBGEN_CUDA_RUNTIME that names it
    name = ""                 #: the package, as it spells itself
    array_interface_ok = False  #: its arrays can be handed to a GPU-aware MPI (__cuda_array_interface__)
    version = ""

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"

    # --- the device --------------------------------------------------------------------------
    def device_name(self) -> str:
        raise NotImplementedError

    def compute_capability(self) -> str:
        """Of device 0, as nvcc spells it after sm_ ('90')."""
        raise NotImplementedError

    @property
    def arch(self) -> str:
        return f"sm_{self.compute_capability()}"

    def driver_version(self) -> int:
        """The driver's CUDA version (12040 for 12.4)."""
        raise NotImplementedError

    def free_memory(self) -> int:
        """Free bytes on device 0."""
        raise NotImplementedError

    def device_count(self) -> int:
        """The CUDA devices this process sees."""
        raise NotImplementedError

    def describe(self) -> str:
        """'<runtime> on <device> (sm_XY, driver CUDA a.b)'."""
        driver = self.driver_version()
        return f"{self.label} on {self.device_name()} ({self.arch}, driver CUDA {driver // 1000}.{driver % 1000 // 10})"

    # --- kernels -----------------------------------------------------------------------------
    def compile(self, text: str, options: Sequence[str], include_dir: Optional[str], nvcc: str):
        """A module of CUDA source text compiled by nvcc for device 0 (CompileError with nvcc's log)."""
        raise NotImplementedError

    def function(self, module, name: str):
        return module.get_function(name)

    def launch(self, fn, grid: int, block: int, args) -> None:
        """A 1-D launch of ``grid`` blocks of ``block`` threads on the compute stream."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Wait for the compute stream."""
        raise NotImplementedError

    # --- device arrays -----------------------------------------------------------------------
    def is_device(self, a) -> bool:
        raise NotImplementedError

    def zeros(self, shape, dtype):
        raise NotImplementedError

    def empty(self, shape, dtype):
        raise NotImplementedError

    def to_device(self, host: np.ndarray):
        """A new device array holding a copy of ``host``."""
        raise NotImplementedError

    def to_host(self, dev) -> np.ndarray:
        raise NotImplementedError

    def to_host_into(self, dev, host: np.ndarray) -> None:
        """Copy ``dev`` into the host array ``host`` (same size and dtype)."""
        raise NotImplementedError

    def to_device_into(self, host: np.ndarray, dev) -> None:
        """Copy the host array into ``dev`` (same size and dtype)."""
        raise NotImplementedError

    def view(self, dev, offset: int, n: int):
        """Elements offset .. offset + n - 1 of a 1-D device array, sharing its memory."""
        return dev[offset:offset + n]

    def dtod_ms(self, dst, src, nbytes: int) -> float:
        """Milliseconds of one device-to-device copy of ``nbytes`` on the compute stream (CUDA events)."""
        raise NotImplementedError

    # --- halo packing ------------------------------------------------------------------------
    def pinned_empty(self, n: int, dtype) -> np.ndarray:
        """A page-locked host array of n elements."""
        raise NotImplementedError

    def to_host_async(self, dev, host: np.ndarray, aside: bool = True) -> None:
        """Queue a copy of ``dev`` into the (pinned) host array: on the copy stream after the
        kernels queued so far (``aside``), else on the compute stream (module notes)."""
        self._check_pair(dev, host)
        if host.size:
            self._copy_async(dev, host, to_host=True, aside=aside)

    def to_device_async(self, host: np.ndarray, dev, aside: bool = True) -> None:
        """Queue a copy of the (pinned) host array into ``dev``: on the copy stream (``aside``;
        it does not wait for the kernels), else on the compute stream (module notes)."""
        self._check_pair(dev, host)
        if host.size:
            self._copy_async(dev, host, to_host=False, aside=aside)

    _copy_stream = None         #: the copy stream of aside copies, made on the first

    def stream_synchronize(self) -> None:
        """Wait on the host for the copy stream."""
        if self._copy_stream is not None:
            self._copy_stream.synchronize()

    def take(self, f, index, out) -> None:
        """out[i] = f[index[i]] on the compute stream (device arrays; index int64 on the device)."""
        self._index_kernel("take", f, index, out)

    def put(self, f, index, values) -> None:
        """f[index[i]] = values[i] on the compute stream (device arrays; index int64 on the device)."""
        self._index_kernel("put", f, index, values)

    def _index_kernel(self, which: str, f, index, other) -> None:
        ctype = _INDEX_TYPES.get(np.dtype(f.dtype))
        if ctype is None:
            raise TypeError(f"{which}: lattice arrays are float64, float32 or 16-bit, not {np.dtype(f.dtype)}")
        if np.dtype(index.dtype) != np.int64 or np.dtype(other.dtype) != np.dtype(f.dtype):
            raise TypeError(f"{which}: index is int64 ({np.dtype(index.dtype)} given) and the "
                            f"{'out' if which == 'take' else 'values'} array has f's dtype {np.dtype(f.dtype)} "
                            f"({np.dtype(other.dtype)} given)")
        if not all(self.is_device(a) for a in (f, index, other)):
            raise TypeError(f"{which}: f, index and {'out' if which == 'take' else 'values'} are {self.name} "
                            f"device arrays")
        if other.size != index.size:
            raise ValueError(f"{which}: index has {index.size} elements, "
                             f"{'out' if which == 'take' else 'values'} {other.size}")
        n = int(index.size)
        if n == 0:
            return
        fns = self.__dict__.get("_index_functions")
        if fns is None:
            from lbgen.backends.cuda.nvcc import find_nvcc
            module = self.compile(INDEX_KERNELS, [], None, find_nvcc())
            fns = self._index_functions = {(k, t): self.function(module, f"lbgen_{k}_{t}")
                                           for k in ("take", "put") for t in ("double", "float", "u16")}
        self.launch(fns[which, ctype], (n + INDEX_BLOCK - 1) // INDEX_BLOCK, INDEX_BLOCK,
                    (f, index, other, np.int64(n)))

    def _check_pair(self, dev, host) -> None:
        if not self.is_device(dev) or not isinstance(host, np.ndarray):
            raise TypeError(f"an asynchronous copy takes a {self.name} device array and a NumPy host array")
        if dev.size != host.size or np.dtype(dev.dtype) != host.dtype or not host.flags.c_contiguous:
            raise ValueError(f"an asynchronous copy moves whole arrays of one dtype: device {dev.size} x "
                             f"{np.dtype(dev.dtype)}, host {host.size} x {host.dtype} (contiguous: "
                             f"{host.flags.c_contiguous})")

    def _copy_async(self, dev, host, to_host: bool, aside: bool) -> None:
        raise NotImplementedError


class CuPyRuntime(CudaRuntime):
    key, name = "cupy", "CuPy"
    array_interface_ok = True

    def __init__(self):
        try:
            import cupy
        except ImportError as e:   # not installed, or installed for another CUDA
            raise BackendUnavailable(f"CuPy cannot be imported ({e})") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # CUDARuntimeError: no driver, a driver older than CuPy's CUDA, no device
            raise BackendUnavailable(f"CuPy: the CUDA runtime could not start ({e}); no usable GPU here") from None
        if count == 0:
            raise BackendUnavailable("CuPy found no CUDA device")
        cupy.cuda.Device(0).use()
        self.cupy = cupy
        self.version = cupy.__version__

    def device_name(self) -> str:
        return self.cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()

    def compute_capability(self) -> str:
        return str(self.cupy.cuda.Device(0).compute_capability)

    def driver_version(self) -> int:
        return int(self.cupy.cuda.runtime.driverGetVersion())

    def free_memory(self) -> int:
        return int(self.cupy.cuda.runtime.memGetInfo()[0])

    def device_count(self) -> int:
        return int(self.cupy.cuda.runtime.getDeviceCount())

    def compile(self, text, options, include_dir, nvcc):
        # CuPy finds nvcc itself ($NVCC, CUDA_PATH, PATH) and adds NVCC_OPTIONS
        opts = list(options) + ([f"-I{include_dir}"] if include_dir else [])
        try:
            module = self.cupy.RawModule(code=text, options=tuple(opts), backend="nvcc")
            module.compile()
        except Exception as e:  # cupy.cuda.compiler.CompileException carries nvcc's log
            raise CompileError(f"nvcc (through CuPy) failed (options {opts}):\n{e}") from None
        return module

    def launch(self, fn, grid, block, args):
        fn((grid,), (block,), tuple(np.uintp(0) if a is None else a for a in args))     # None: NULL

    def synchronize(self):
        self.cupy.cuda.get_current_stream().synchronize()

    def is_device(self, a):
        return isinstance(a, self.cupy.ndarray)

    def zeros(self, shape, dtype):
        return self.cupy.zeros(shape, dtype=dtype)

    def empty(self, shape, dtype):
        return self.cupy.empty(shape, dtype=dtype)

    def to_device(self, host):
        return self.cupy.asarray(host)

    def to_host(self, dev):
        return self.cupy.asnumpy(dev)

    def to_host_into(self, dev, host):
        dev.get(out=host)

    def to_device_into(self, host, dev):
        dev.set(host)

    def dtod_ms(self, dst, src, nbytes):
        cupy = self.cupy
        rt, stream = cupy.cuda.runtime, cupy.cuda.get_current_stream()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        rt.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, rt.memcpyDeviceToDevice, stream.ptr)
        end.record(stream)
        end.synchronize()
        return float(cupy.cuda.get_elapsed_time(start, end))

    def pinned_empty(self, n, dtype):
        import cupyx
        return cupyx.empty_pinned((int(n),), dtype=dtype)

    def _copy_async(self, dev, host, to_host, aside):
        cupy = self.cupy
        rt = cupy.cuda.runtime
        stream = cupy.cuda.get_current_stream()
        if aside:
            if self._copy_stream is None:
                self._copy_stream = cupy.cuda.Stream(non_blocking=True)
            if to_host:
                queued = cupy.cuda.Event(disable_timing=True)
                queued.record(stream)
                self._copy_stream.wait_event(queued)
            stream = self._copy_stream
        if to_host:
            rt.memcpyAsync(host.ctypes.data, dev.data.ptr, host.nbytes, rt.memcpyDeviceToHost, stream.ptr)
        else:
            rt.memcpyAsync(dev.data.ptr, host.ctypes.data, host.nbytes, rt.memcpyHostToDevice, stream.ptr)


class PyCudaRuntime(CudaRuntime):
    key, name = "pycuda", "pycuda"
    array_interface_ok = True     # GPUArray.__cuda_array_interface__ (version 3), as mpi4py reads it

    def __init__(self):
        try:
            import pycuda
            import pycuda.driver as drv
            import pycuda.gpuarray as gpuarray
            import pycuda.compiler as compiler
        except ImportError as e:
            raise BackendUnavailable(f"pycuda cannot be imported ({e})") from None
        try:
            drv.init()
            count = drv.Device.count()
        except Exception as e:  # pycuda.driver.Error: no driver, no device
            raise BackendUnavailable(f"pycuda: the CUDA driver could not start ({e}); no usable GPU here") from None
        if count == 0:
            raise BackendUnavailable("pycuda found no CUDA device")
        self.drv, self.gpuarray, self.compiler = drv, gpuarray, compiler
        self.version = pycuda.VERSION_TEXT
        self.device = drv.Device(0)
        self.context = self.device.retain_primary_context()
        self.context.push()
        atexit.register(self._pop)      # pycuda aborts at exit when a pushed context is left on the stack

    def _pop(self) -> None:
        if self.context is not None:
            self.context.pop()
            self.context = None
            from pycuda.tools import clear_context_caches
            clear_context_caches()

    def device_name(self) -> str:
        return self.device.name()

    def compute_capability(self) -> str:
        major, minor = self.device.compute_capability()
        return f"{major}{minor}"

    def driver_version(self) -> int:
        return int(self.drv.get_driver_version())

    def free_memory(self) -> int:
        return int(self.drv.mem_get_info()[0])

    def device_count(self) -> int:
        return int(self.drv.Device.count())

    def compile(self, text, options, include_dir, nvcc):
        import warnings
        opts = list(options) + list(NVCC_OPTIONS)
        try:
            with warnings.catch_warnings():     # nvcc's remarks (unused variables) as a UserWarning: CuPy drops them too
                warnings.filterwarnings("ignore", message="The CUDA compiler succeeded")
                return self.compiler.SourceModule(text, nvcc=nvcc, options=opts, no_extern_c=True, arch=self.arch,
                                                  include_dirs=[str(include_dir)] if include_dir else [])
        except Exception as e:  # pycuda.driver.CompileError carries nvcc's command line and log
            raise CompileError(f"nvcc (through pycuda) failed for {self.arch} (options {opts}):\n{e}") from None

    def launch(self, fn, grid, block, args):
        fn(*(np.uintp(0) if a is None else a for a in args), grid=(int(grid), 1, 1), block=(int(block), 1, 1))

    def synchronize(self):
        self.drv.Context.synchronize()

    def is_device(self, a):
        return isinstance(a, self.gpuarray.GPUArray)

    def empty(self, shape, dtype):
        return self.gpuarray.GPUArray(shape, np.dtype(dtype))

    def zeros(self, shape, dtype):
        a = self.empty(shape, dtype)
        if a.nbytes:
            self.drv.memset_d8(a.gpudata, 0, a.nbytes)
        return a

    def to_device(self, host):
        return self.gpuarray.to_gpu(np.ascontiguousarray(host))

    def to_host(self, dev):
        return dev.get()

    def to_host_into(self, dev, host):
        dev.get(ary=host)

    def to_device_into(self, host, dev):
        dev.set(np.ascontiguousarray(host).reshape(dev.shape))

    def dtod_ms(self, dst, src, nbytes):
        drv = self.drv
        start, end = drv.Event(), drv.Event()
        start.record()
        drv.memcpy_dtod_async(dst.ptr, src.ptr, nbytes)
        end.record()
        end.synchronize()
        return float(end.time_since(start))

    def pinned_empty(self, n, dtype):
        return self.drv.pagelocked_empty((int(n),), np.dtype(dtype))

    def _copy_async(self, dev, host, to_host, aside):
        drv = self.drv
        stream = None                                    # the compute (legacy default) stream
        if aside:
            if self._copy_stream is None:
                self._copy_stream = drv.Stream(1)       # CU_STREAM_NON_BLOCKING
            if to_host:
                queued = drv.Event(drv.event_flags.DISABLE_TIMING)
                queued.record()
                self._copy_stream.wait_for_event(queued)
            stream = self._copy_stream
        if to_host:
            drv.memcpy_dtoh_async(host, dev.ptr, stream)
        else:
            drv.memcpy_htod_async(dev.ptr, host, stream)


#: the runtimes in the order of the automatic choice
RUNTIMES = {"cupy": CuPyRuntime, "pycuda": PyCudaRuntime}

#: INSTALL hints, by runtime key
INSTALL = {"cupy": "pip install 'lbgen[cuda]' (CuPy for CUDA 13; for a CUDA 12 driver: pip install cupy-cuda12x)",
           "pycuda": "pip install 'lbgen[pycuda]' (builds from its sdist: needs the CUDA toolkit)"}

#: the runtime chosen, by the value of $LBGEN_CUDA_RUNTIME ('' automatic)
_CHOSEN: Dict[str, CudaRuntime] = {}


def requested() -> str:
    """The runtime $LBGEN_CUDA_RUNTIME names ('' unset or empty: automatic), checked."""
    value = os.environ.get(RUNTIME_ENV, "")
    key = value.strip().lower()
    if key and key not in RUNTIMES:
        raise BackendUnavailable(f"CUDA: {RUNTIME_ENV}={value!r} names no CUDA runtime: set it to "
                                 f"{' or '.join(RUNTIMES)}, or leave it unset for the automatic choice "
                                 f"(the first of {', '.join(RUNTIMES)} that imports and finds a GPU)")
    return key


def runtime() -> CudaRuntime:
    """The CUDA runtime of this process: the one $LBGEN_CUDA_RUNTIME names, else the first of
    ``RUNTIMES`` that imports and finds a device; made once.  BackendUnavailable says why not."""
    key = requested()
    if key in _CHOSEN:
        return _CHOSEN[key]
    reasons = []
    for name in ([key] if key else list(RUNTIMES)):
        try:
            rt = RUNTIMES[name]()
        except BackendUnavailable as e:
            reasons.append((name, str(e)))
            continue
        _CHOSEN[key] = rt
        return rt
    if key:
        raise BackendUnavailable(f"CUDA: {RUNTIME_ENV}={key} chooses {RUNTIMES[key].name}, but {reasons[0][1]}; "
                                 f"{INSTALL[key]} on a machine with an NVIDIA driver and nvcc")
    raise BackendUnavailable("CUDA: no GPU runtime: " + "; ".join(why for _, why in reasons) + "; "
                             + " or ".join(INSTALL.values()) + " on a machine with an NVIDIA driver and nvcc")
