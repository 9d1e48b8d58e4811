"""The 3D OpenCL kernels (templates/opencl/kernels3d.cl.j2) through pyopencl: ``OpenCLProgram3D``.

``CProgram3D``'s interface (lbgen.backends.gpu3d).  The lattice buffers (``allocate``) are
``cl.Buffer``s on the device, so stepping copies nothing; host arrays given to a kernel (fields
in and out, a NumPy lattice buffer) are copied to the device and, when written, back.
``download`` / ``upload`` move a lattice buffer.  Fields and plain arrays are ``real`` on
OpenCL (as in 2D), the lid velocities too.  Strict: ``-DLBGEN_STRICT`` (no contraction)."""
from __future__ import annotations

import numpy as np

from lbgen.backends.gpu3d import Boundaries3D, GPUProgram3D  # noqa: F401
from lbgen.codegen.kernel_api import GPU_ENTRY_POINTS_3D


class OpenCLProgram3D(GPUProgram3D):
    backend = "opencl"
    device_buffers = True

    def __init__(self, source, lx: int, ly: int, lz: int, strict: bool = False, device=None,
                 block_size=None):
        from lbgen.backends import opencl as ob
        from lbgen.backends.base import BackendUnavailable
        super().__init__(source, lx, ly, lz)
        self.field_dtype = self.lid_dtype = self.dtype
        cl = self.cl = ob._cl()
        self.device = ob.select_device(device)
        single = self.spec.precision == "single"
        if not single and not self.device.double_fp_config:
            raise BackendUnavailable(f"OpenCL backend: device {self.device.name.strip()!r} has no double precision")
        self.context, self.queue = ob._context(self.device)
        self.strict = strict
        self.options = ob.build_options(strict, single, self.device)
        self.program = ob.build(source, self.device, self.options)
        self.kernels = {n: cl.Kernel(self.program, f"{self.prefix}_{n}") for n in GPU_ENTRY_POINTS_3D}
        bs = int(block_size or self.spec.block_size or ob.DEFAULT_BLOCK_SIZE)
        self.block_size = min(bs, self.device.max_work_group_size)

    @property
    def device_name(self) -> str:
        return self.device.name.strip()

    def describe(self) -> str:
        return self.device_name

    # --- device buffers ---------------------------------------------------------------------------
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

    def synchronize(self) -> None:
        self.queue.finish()

    def _run(self, kernel, items, args, outputs):
        dev = [self._to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        bs = self.block_size
        self.kernels[kernel](self.queue, ((items + bs - 1) // bs * bs,), (bs,), *dev)
        for i in outputs:
            if isinstance(args[i], np.ndarray):
                self.cl.enqueue_copy(self.queue, args[i], dev[i], is_blocking=True)


def compile3d(source, lx: int, ly: int, lz: int, strict: bool = False, device=None, block_size=None,
              threads: int = 0) -> OpenCLProgram3D:
    return OpenCLProgram3D(source, lx, ly, lz, strict=strict, device=device, block_size=block_size)
