"""Backends: a registry of runtimes that compile a ``KernelSource`` and run its kernels.

A runtime is a module with one small interface:

* ``available() -> (ok, why)``: whether it works here, or why not;
* ``describe() -> str``: what it runs on (compiler, device);
* ``compile(source, *shape, threads=0, strict=False, **options) -> Program``, shape (lx, ly) or
  (lx, ly, lz).

Its ``Program`` (lbgen.backends.base), one class per runtime for any D, has the buffers
(``allocate``, ``upload``, ``download``, ``pack``, ``unpack``), the boundaries
(``set_boundaries``), the kernels (``halo``, ``step_halo``, ``propagate``, ``collide``,
``fused``, ``init_equilibrium``, ``fields``, ``diagnostics``; 2D thermal walls: ``bc``,
``fused_walls``), ``step`` (the step sequence), ``synchronize``, ``describe`` and
``copy_bandwidth`` (the device's own limit, None on the host).  The simulations, bench, tune
and verify never branch on a runtime's name.

Runtimes: ``c`` (gcc + OpenMP via cffi), ``opencl`` (pyopencl), ``cuda`` (CuPy or pycuda, needs a
GPU) and ``cuda-shim`` (the CUDA source compiled for the CPU with g++ and a host shim).
"""
from __future__ import annotations

import importlib

from lbgen.backends.base import Program
from lbgen.backends.build import BackendUnavailable

__all__ = ["BackendUnavailable", "Program", "RUNTIMES", "load", "runtime", "spec_backend", "available", "compile"]

#: runtime name -> (module under lbgen.backends, the KernelSpec backend whose source it runs)
RUNTIMES = {"c": ("c", "c"), "opencl": ("opencl", "opencl"), "cuda": ("cuda", "cuda"),
            "cuda-shim": ("cuda.shim", "cuda")}


def runtime(name: str):
    """The runtime module for a name in RUNTIMES."""
    if name not in RUNTIMES:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(RUNTIMES)}")
    return importlib.import_module(f"{__name__}.{RUNTIMES[name][0]}")


def spec_backend(name: str) -> str:
    """The KernelSpec backend a runtime compiles ('cuda' for 'cuda-shim')."""
    if name not in RUNTIMES:
        raise ValueError(f"unknown backend {name!r}; choose from {', '.join(RUNTIMES)}")
    return RUNTIMES[name][1]


def cpu_device(name: str, device=None) -> bool:
    """Whether an accelerator runtime's kernels would run on a CPU device: OpenCL on a CPU
    runtime (Intel's, PoCL) for ``device`` ('P:D', part of a name, else PYOPENCL_CTX or the
    first); False for the other runtimes and where OpenCL is not available."""
    if name != "opencl":
        return False
    try:
        from lbgen.backends.opencl.platform import is_cpu_device
        return is_cpu_device(device)
    except (BackendUnavailable, ImportError):
        return False


def load(name: str):
    """The backend module for a name ('c', 'opencl', 'cuda')."""
    from lbgen.codegen.spec import BACKENDS
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    return importlib.import_module(f"{__name__}.{name}")


def available(name: str) -> tuple:
    """(True, description) when the runtime can run here, else (False, reason)."""
    try:
        return runtime(name).available()
    except BackendUnavailable as e:
        return False, str(e)
    except ImportError as e:
        return False, f"{name}: {e}"
    except Exception as e:  # a broken installation must not break `lbgen info`
        return False, f"{name}: {type(e).__name__}: {e}"


def compile(name: str, source, shape, strict: bool = False, threads: int = 0, **options):
    """The program of a runtime for a source on a lattice ``shape``, (LX, LY) or (LX, LY, LZ):
    'c' (``flags``), 'opencl' (``device``: 'P:D' or part of a device name, as
    ``lbgen.backends.opencl.select_device`` takes it, default the first working device;
    ``block_size``), 'cuda-shim' (the .cu on the CPU through the host shim; ``flags``,
    ``block_size``), 'cuda' (CuPy or pycuda on device 0; ``block_size``, ``options``).  Host buffers in
    the layout's order go in and out (``upload`` / ``download``); the OpenCL and 'cuda' programs'
    own buffers (``allocate``) stay on the device.  An option the runtime does not take is
    refused (TypeError naming it)."""
    if options.get("device") is not None and name != "opencl":
        raise ValueError(f"device={options['device']!r} selects an OpenCL device; the {name} runtime has none to "
                         f"choose")
    options = {k: v for k, v in options.items() if not (k == "device" and v is None)}
    return runtime(name).compile(source, *shape, strict=strict, threads=threads, **options)
