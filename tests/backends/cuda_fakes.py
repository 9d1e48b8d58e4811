"""GPU runtimes without a GPU, for tests/backends/test_cuda_runtimes.py: the .cu text compiled by
g++ through the host shim (backends/cuda/shim.py), "device" memory in host memory.

* ``ShimRuntime``: a ``CudaRuntime`` whose device arrays are NumPy arrays of a class of their own;
* ``fake_pycuda()``: the modules ``pycuda``, ``pycuda.driver``, ``.gpuarray``, ``.compiler`` and
  ``.tools`` with the calls ``PyCudaRuntime`` makes, with pycuda 2026.1's signatures (read from
  its source): ``GPUArray`` over host memory, device pointers real host addresses, the copies and
  memsets ``ctypes.memmove`` / ``memset`` checked against the live allocations, ``SourceModule``
  compiling through the shim and its functions packing their arguments as pycuda's
  ``_build_arg_buf`` does (NumPy scalars, objects with ``__cuda_array_interface__``), so
  ``PyCudaRuntime`` runs a whole Simulation on the CPU.
"""
from __future__ import annotations

import ctypes
import hashlib
import types
from pathlib import Path

import numpy as np

from helpers import require


def shim_module(text: str, options, include_dir):
    """(ffi, lib) of CUDA source text (its .cuh beside it in include_dir) built by g++ through the shim."""
    from lbgen.backends.build import build_library, load_library
    from lbgen.backends.cuda import shim
    files = {p.name: p.read_text() for p in Path(include_dir).iterdir()} if include_dir else {}
    main = next((n for n, t in files.items() if n.endswith(".cu") and t == text), "index_kernels.cu")
    files[main] = text
    real = "float" if any("typedef float" in t for t in files.values()) else "double"
    files[shim.SHIM_HEADER] = shim.shim_header_text()
    files[shim.RUNTIME_HEADER] = shim.runtime_header_text()
    files["shim_launchers.cpp"] = shim.launcher_source(main, text)
    flags = shim.flags_for(None, "--fmad=false" in options) + shim._BASE_FLAGS
    cxx = shim.compiler()
    key = hashlib.sha256("\0".join(f"{n}\0{t}" for n, t in sorted(files.items())).encode()).hexdigest()
    path = build_library("cuda-shim", (key, flags, "shim-runtime-1"), files,
                         lambda folder, out: [cxx, *flags, "-I", folder, "-o", out, folder / "shim_launchers.cpp", "-lm"],
                         main, "g++ (shim runtime)", library="libshim.so")
    return load_library(path, shim.cdef_source(text, real))


def shim_call(ffi, lib, name, grid, block, args, address) -> None:
    """Launch kernel ``name`` through the shim: None -> NULL, NumPy integers / floats as numbers,
    anything else a device array whose address ``address(a)`` gives."""
    conv = []
    for a in args:
        if a is None:
            conv.append(ffi.NULL)
        elif isinstance(a, np.uintp):              # a pointer packed as a number ("P"): pycuda's NULL
            conv.append(ffi.cast("void *", int(a)))
        elif isinstance(a, np.integer):
            conv.append(int(a))
        elif isinstance(a, np.floating):
            conv.append(float(a))
        else:
            conv.append(ffi.cast("void *", address(a)))
    getattr(lib, f"{name}__launch")(int(grid), int(block), *conv)


def require_shim_and_nvcc() -> None:
    from lbgen.backends.cuda import nvcc, shim
    require(*shim.available(), "g++ for the CUDA host shim")
    require(*nvcc.available(), "nvcc (the CUDA backend's programs need it)")


# --- a CudaRuntime on the host ------------------------------------------------------------------

class HostArray(np.ndarray):
    """A ShimRuntime "device" array: host memory, told apart from the caller's host arrays."""


def _shim_runtime_class():
    from lbgen.backends.cuda.runtimes import CudaRuntime

    class ShimRuntime(CudaRuntime):
        """A CudaRuntime whose kernels run on the CPU through the host shim (tests only)."""
        key, name, version = "shim", "shim-runtime", "0.0"

        def __init__(self):
            require_shim_and_nvcc()
            self.launches = []

        def device_name(self):
            return "the CPU (shim runtime)"

        def compute_capability(self):
            return "90"

        def driver_version(self):
            return 13000

        def free_memory(self):
            return 1 << 30

        def device_count(self):
            return 1

        def compile(self, text, options, include_dir, nvcc):
            return shim_module(text, options, include_dir)

        def function(self, module, name):
            return module, name

        def launch(self, fn, grid, block, args):
            (ffi, lib), name = fn

            def address(a):
                assert isinstance(a, HostArray), f"{name}: {type(a).__name__} handed to a kernel"
                return a.ctypes.data
            assert all(a is None or isinstance(a, (np.ndarray, np.number)) for a in args), (name, args)
            self.launches.append(name)
            shim_call(ffi, lib, name, grid, block, args, address)

        def synchronize(self):
            pass

        def is_device(self, a):
            return isinstance(a, HostArray)

        def zeros(self, shape, dtype):
            return np.zeros(shape, dtype).view(HostArray)

        def empty(self, shape, dtype):
            return np.full(shape, np.nan if np.dtype(dtype).kind == "f" else 7, dtype).view(HostArray)

        def to_device(self, host):
            return np.array(host, copy=True).view(HostArray)

        def to_host(self, dev):
            return np.array(dev)

        def to_host_into(self, dev, host):
            host[...] = np.asarray(dev).reshape(host.shape)

        def to_device_into(self, host, dev):
            np.asarray(dev)[...] = np.asarray(host).reshape(dev.shape)

        def pinned_empty(self, n, dtype):
            return np.empty(n, dtype)

        def _copy_async(self, dev, host, to_host, aside):
            if to_host:
                host[...] = dev
            else:
                dev[...] = host

        def stream_synchronize(self):
            pass

    return ShimRuntime


def shim_runtime():
    return _shim_runtime_class()()


# --- pycuda over host memory -----------------------------------------------------------------------

def fake_pycuda(devices: int = 1):
    """(modules by name, log): a pycuda whose GPU is this CPU (module notes)."""
    log = []
    live = {}                     # address -> nbytes of the allocations alive

    def check(address, nbytes):
        assert isinstance(address, int), f"a device pointer is an int or an allocation, not {type(address).__name__}"
        assert any(a <= address and address + nbytes <= a + n for a, n in live.items()), \
            f"{nbytes} bytes at {address:#x} lie outside every allocation"

    class DeviceAllocation:
        def __init__(self, nbytes):
            self.raw = np.full(nbytes, 0xFF, np.uint8)         # not zeros: zeros() must clear it
            self.address = self.raw.ctypes.data
            live[self.address] = nbytes

        def __int__(self):
            return self.address

        def __del__(self):
            live.pop(self.address, None)

    def _address(p):
        return int(p)

    class GPUArray:
        def __init__(self, shape, dtype, allocator=None, base=None, gpudata=None, strides=None, order="C"):
            shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
            self.shape, self.dtype = shape, np.dtype(dtype)
            self.size = int(np.prod(shape))
            self.nbytes = self.size * self.dtype.itemsize
            if gpudata is None:
                self.gpudata = DeviceAllocation(self.nbytes) if self.size else None
            else:
                self.gpudata = gpudata
            self.base = base

        @property
        def _host(self):
            """The memory as a NumPy array (no copy)."""
            if not self.size:
                return np.empty(self.shape, self.dtype)
            buf = (ctypes.c_char * self.nbytes).from_address(int(self.gpudata))
            return np.frombuffer(buf, self.dtype).reshape(self.shape)

        @property
        def ptr(self):
            return self.gpudata.__int__()

        @property
        def flags(self):
            return types.SimpleNamespace(c_contiguous=True, f_contiguous=len(self.shape) <= 1, forc=True)

        @property
        def __cuda_array_interface__(self):
            return {"shape": self.shape, "strides": None, "data": (int(self.gpudata) if self.size else 0, False),
                    "typestr": self.dtype.str, "stream": None, "version": 3}

        def get(self, ary=None, pagelocked=False, async_=False, stream=None):
            if ary is None:
                ary = np.empty(self.shape, self.dtype)
            assert ary.size == self.size and ary.dtype == self.dtype, "self and ary must be the same size and dtype"
            assert ary.shape == self.shape, "get() between arrays of different shapes warns (deprecated)"
            ary[...] = self._host
            return ary

        def set(self, ary, async_=False, stream=None):
            assert ary.size == self.size and ary.dtype == self.dtype, "ary and self must be the same size and dtype"
            assert ary.shape == self.shape, "Setting array from one with different shape (warns)"
            self._host[...] = ary

        def __getitem__(self, index):
            assert isinstance(index, slice) and len(self.shape) == 1 and index.step in (None, 1)
            start, stop, _ = index.indices(self.size)
            n = max(0, stop - start)
            return GPUArray((n,), self.dtype, base=self, gpudata=int(self.gpudata) + start * self.dtype.itemsize)

    def to_gpu(ary):
        out = GPUArray(ary.shape, ary.dtype)
        out.set(ary)
        return out

    class Context:
        synchronize = staticmethod(lambda: log.append("synchronize"))

        def push(self):
            log.append("push")

        def pop(self):
            log.append("pop")

    class Device:
        count = staticmethod(lambda: devices)

        def __init__(self, i):
            log.append(f"device {i}")

        def name(self):
            return "Fake GPU"

        def compute_capability(self):
            return (9, 0)

        def retain_primary_context(self):
            return Context()

    class Event:
        def __init__(self, flags=0):
            self.flags = flags

        def record(self, stream=None):
            log.append(("record", stream))
            return self

        def synchronize(self):
            return self

        def time_since(self, start):
            assert isinstance(start, Event)
            return 0.25

    class Stream:
        def __init__(self, flags=0):
            log.append(("stream", flags))

        def wait_for_event(self, event):
            assert isinstance(event, Event)
            log.append("wait")

        def synchronize(self):
            log.append("stream synchronize")

    def memset_d8(dest, data, size):
        check(_address(dest), size)
        ctypes.memset(_address(dest), data, size)

    def memcpy_dtod_async(dest, src, size, stream=None):
        check(_address(dest), size)
        check(_address(src), size)
        ctypes.memmove(_address(dest), _address(src), size)

    def memcpy_dtoh_async(dest, src, stream=None):
        assert isinstance(dest, np.ndarray) and dest.flags.c_contiguous and isinstance(stream, (Stream, type(None)))
        check(_address(src), dest.nbytes)
        ctypes.memmove(dest.ctypes.data, _address(src), dest.nbytes)
        log.append(("dtoh", stream is not None))

    def memcpy_htod_async(dest, src, stream=None):
        assert isinstance(src, np.ndarray) and src.flags.c_contiguous and isinstance(stream, (Stream, type(None)))
        check(_address(dest), src.nbytes)
        ctypes.memmove(_address(dest), src.ctypes.data, src.nbytes)
        log.append(("htod", stream is not None))

    def pagelocked_empty(shape, dtype, order="C", mem_flags=0):
        return np.empty(shape, dtype, order=order)

    class Function:
        def __init__(self, module, name):
            self.module, self.name = module, name

        def __call__(self, *args, grid=(1, 1), stream=None, block=None, shared=0, texrefs=(), time_kernel=False):
            assert block is not None and len(grid) <= 3 and len(block) <= 3
            assert tuple(grid[1:]) in ((), (1,), (1, 1)) and tuple(block[1:]) in ((), (1,), (1, 1))

            def address(a):                      # pycuda's _build_arg_buf: __cuda_array_interface__ -> "P"
                cai = getattr(a, "__cuda_array_interface__", None)
                if not cai:
                    raise TypeError(f"invalid type on parameter: {type(a).__name__}")
                check(cai["data"][0], 1)
                return cai["data"][0]
            shim_call(*self.module, self.name, grid[0], block[0], args, address)
            log.append(("launch", self.name))

    class SourceModule:
        def __init__(self, source, nvcc="nvcc", options=None, keep=False, no_extern_c=False, arch=None, code=None,
                     cache_dir=None, include_dirs=None):
            assert no_extern_c and arch == "sm_90" and isinstance(options, list) and "-ftz=true" in options
            assert isinstance(include_dirs, list) and Path(nvcc).name == "nvcc"
            self.module = shim_module(source, options, include_dirs[0] if include_dirs else None)
            log.append(("compile", tuple(options), len(include_dirs)))

        def get_function(self, name):
            return Function(self.module, name)

    pkg = types.ModuleType("pycuda")
    pkg.VERSION_TEXT = "2099.1"
    drv = types.ModuleType("pycuda.driver")
    drv.__dict__.update(
        init=lambda: log.append("init"), Device=Device, Context=Context, Event=Event, Stream=Stream,
        event_flags=types.SimpleNamespace(DISABLE_TIMING=2), get_driver_version=lambda: 13000,
        mem_get_info=lambda: (1 << 30, 2 << 30), memset_d8=memset_d8, memcpy_dtod_async=memcpy_dtod_async,
        memcpy_dtoh_async=memcpy_dtoh_async, memcpy_htod_async=memcpy_htod_async, pagelocked_empty=pagelocked_empty)
    gpuarray = types.ModuleType("pycuda.gpuarray")
    gpuarray.GPUArray, gpuarray.to_gpu = GPUArray, to_gpu
    compiler = types.ModuleType("pycuda.compiler")
    compiler.SourceModule = SourceModule
    tools = types.ModuleType("pycuda.tools")
    tools.clear_context_caches = lambda: log.append("clear")
    mods = {"pycuda": pkg, "pycuda.driver": drv, "pycuda.gpuarray": gpuarray, "pycuda.compiler": compiler,
            "pycuda.tools": tools}
    for name, mod in mods.items():
        if "." in name:
            setattr(pkg, name.split(".")[1], mod)
    return mods, log
