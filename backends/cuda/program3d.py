"""The 3D CUDA kernels (templates/cuda/kernels3d.cu.j2): ``ShimProgram3D`` runs the ``.cu``
text on the CPU through the host shim (g++, lbgen.backends.cuda.shim), ``CudaProgram3D``
through CuPy on device 0 (the 2D CudaProgram's way: RawModule and nvcc, --fmad=false when
strict), its lattice buffers on the GPU.  ``CProgram3D``'s interface (lbgen.backends.gpu3d);
the host shim's buffers are host NumPy arrays.  Blocks of BLOCK threads (the spec's block_size,
else 128, as in the .cu); field and plain arrays and lid velocities are doubles."""
from __future__ import annotations

import numpy as np

from lbgen.backends.gpu3d import Boundaries3D, GPUProgram3D  # noqa: F401

DEFAULT_BLOCK = 128


class _CudaLaunch(GPUProgram3D):
    backend = "cuda"

    @property
    def block(self) -> int:
        return int(self.spec.block_size or DEFAULT_BLOCK)

    def _blocks(self, items: int) -> int:
        return (items + self.block - 1) // self.block


class ShimProgram3D(_CudaLaunch):
    """The 3D CUDA kernels on the CPU (host shim; launches run block by block, thread by thread)."""

    def __init__(self, source, lx: int, ly: int, lz: int, strict: bool = False, flags=None):
        from lbgen.backends.base import load_library
        from lbgen.backends.cuda import shim
        super().__init__(source, lx, ly, lz)
        self.library_path = shim.build(source, flags, strict)
        self.real_c = "double" if self.spec.precision == "double" else "float"
        self.ffi, self.lib = load_library(self.library_path, shim.cdef_source(source.text, self.real_c))

    def describe(self) -> str:
        from lbgen.backends.cuda import shim
        return shim.describe()

    def _run(self, kernel, items, args, outputs):
        conv = []
        for a in args:
            if a is None:
                conv.append(self.ffi.NULL)
            elif isinstance(a, np.ndarray):
                ctype = {np.float64: "double", np.float32: "float", np.uint8: "unsigned char"}[a.dtype.type]
                conv.append(self.ffi.cast(f"{ctype} *", a.ctypes.data))
            elif isinstance(a, np.integer):
                conv.append(int(a))
            else:
                conv.append(float(a))
        getattr(self.lib, f"{self.prefix}_{kernel}__launch")(self._blocks(items), self.block, *conv)


class CudaProgram3D(_CudaLaunch):
    """The 3D CUDA kernels on device 0 through CuPy.  Its lattice buffers (``allocate``) are
    CuPy arrays that stay on the GPU, so stepping copies nothing; host arrays given to a kernel
    (fields in and out, a buffer from elsewhere) are copied around its launch.  ``download`` /
    ``upload`` move a lattice buffer to and from the host."""

    device_buffers = True

    def __init__(self, source, lx: int, ly: int, lz: int, strict: bool = False, options=None):
        from lbgen.backends.cuda import _cupy, compile_module
        super().__init__(source, lx, ly, lz)
        self.cupy = _cupy()
        self.module, self.arch = compile_module(source, strict, options)
        self.functions = {}

    def describe(self) -> str:
        from lbgen.backends.cuda import describe
        return describe()

    def allocate(self):
        return self.cupy.zeros(self.layout.size, dtype=self.dtype)

    def _is_device(self, a) -> bool:
        return isinstance(a, self.cupy.ndarray)

    def _device_elements(self, a) -> int:
        return a.size if a.dtype == self.dtype and a.flags.c_contiguous else -1

    def _to_device(self, host):
        return self.cupy.asarray(host)

    def _to_host(self, buffer) -> np.ndarray:
        return self.cupy.asnumpy(buffer)

    def _host_into(self, buffer, host) -> None:
        buffer.set(host)

    def synchronize(self) -> None:
        self.cupy.cuda.get_current_stream().synchronize()

    def _run(self, kernel, items, args, outputs):
        fn = self.functions.get(kernel) or self.module.get_function(f"{self.prefix}_{kernel}")
        self.functions[kernel] = fn
        conv, host = [], {}
        for i, a in enumerate(args):
            if a is None:
                conv.append(np.uintp(0))
            elif isinstance(a, np.ndarray):
                host[i] = self._to_device(a)
                conv.append(host[i])
            else:
                conv.append(a)
        fn((self._blocks(items),), (self.block,), tuple(conv))
        for i in outputs:
            if i in host:
                host[i].get(out=args[i])


def compile3d(source, lx: int, ly: int, lz: int, strict: bool = False, shim: bool = True, **kw):
    """The host-shim program (``shim=True``) or the CuPy one of a 3D CUDA source."""
    return (ShimProgram3D if shim else CudaProgram3D)(source, lx, ly, lz, strict=strict, **kw)
