"""Run the emitted ``.cu`` text on the CPU: g++ with a host shim, cffi to call it.

The generated CUDA source is compiled unchanged as C++ (``g++ -x c++``) after
``cuda_host_shim.h``, which defines the CUDA qualifiers away and turns ``blockIdx``,
``threadIdx``, ``blockDim`` and ``gridDim`` into globals.  For every ``__global__``
kernel of the source a launcher ``<kernel>__launch(blocks, threads, args...)`` is
generated: it loops over the 1-D grid (block by block, thread by thread), setting those
globals and calling the kernel.  ``ShimProgram`` launches them with the same geometry
as the GPU runtime (:class:`lbgen.backends.cuda.LaunchProgram`), so the thread ->
site mapping, the halo split and the kernel bodies are all checked on a machine
without a GPU.  Builds are cached on disk under ``<cache>/cuda-shim/<key>/``.

The shim also stands in for ``cuda_runtime.h`` (memory, events, ``cudaLaunchKernel``), so
the emitted host launch wrappers and a whole host program (``build_host_program``: e.g.
the emitted ``example.cu`` with ``<prefix>_kernels.cu``) run on the CPU as well.
"""
from __future__ import annotations

import re
import subprocess
from importlib import resources
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

from lbgen.backends.build import (UNCONTRACTED_LEVELS, BackendUnavailable, CompileError, build_library,
                                  compiler_version, find_compiler, load_library, optimisation)
from lbgen.backends.cuda import LaunchProgram, arithmetic_dtype

SHIM_HEADER = "cuda_host_shim.h"
RUNTIME_HEADER = "cuda_runtime.h"
DEFAULT_FLAGS = ("-O2",)
STRICT_FLAGS = ("-ffp-contract=off",)
_BASE_FLAGS = ("-x", "c++", "-std=c++14", "-fPIC", "-shared", "-w")

_KERNEL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s+)?(\w+)\s*\(([^)]*)\)", re.S)


def compiler() -> str:
    return find_compiler("CXX", "g++", "CUDA host shim")


def available() -> Tuple[bool, str]:
    try:
        cxx = compiler()
    except BackendUnavailable as e:
        return False, str(e)
    return True, f"CUDA source on the CPU through a host shim ({compiler_version(cxx)})"


def describe() -> str:
    """The host compiler that runs the CUDA source on the CPU."""
    return f"host shim ({compiler_version(compiler())})"


def shim_header_text() -> str:
    return resources.files(__package__).joinpath(SHIM_HEADER).read_text()


def runtime_header_text() -> str:
    """``cuda_runtime.h`` for host builds: the emitted ``.cuh`` includes it; here it is the shim."""
    return f'#include "{SHIM_HEADER}"\n'


def kernels_of(text: str) -> List[Tuple[str, List[Tuple[str, str]]]]:
    """[(kernel name, [(parameter type, parameter name), ...]), ...] of every __global__ function."""
    out = []
    for name, params in _KERNEL.findall(text):
        plist = []
        for p in (q.strip() for q in params.split(",")):
            if not p or p == "void":
                continue
            m = re.match(r"(.*?)(\w+)$", p, re.S)
            if not m:
                raise ValueError(f"cannot parse parameter {p!r} of kernel {name}")
            plist.append((" ".join(m.group(1).split()), m.group(2)))
        out.append((name, plist))
    if not out:
        raise ValueError("no __global__ kernels found in the CUDA source")
    return out


def launcher_source(main_file: str, text: str) -> str:
    """C++ translation unit: shim header, the .cu text, one extern "C" launcher per kernel."""
    lines = [f'#include "{SHIM_HEADER}"', f'#include "{main_file}"', "", 'extern "C" {']
    for name, params in kernels_of(text):
        decl = ", ".join(["unsigned int lbgen_blocks", "unsigned int lbgen_threads"]
                         + [f"{t} {n}" if not t.endswith("*") else f"{t}{n}" for t, n in params])
        args = ", ".join(n for _, n in params)
        lines += [f"void {name}__launch({decl})",
                  "{",
                  f"    LBGEN_SHIM_LAUNCH(lbgen_blocks, lbgen_threads, {name}({args}));",
                  "}"]
    lines.append('}  /* extern "C" */')
    return "\n".join(lines) + "\n"


def cdef_source(text: str, real: str, store: str = None) -> str:
    """cffi declarations of the launchers (real -> double/float, store -> the stored population's
    C type (default: real), __restrict__ dropped)."""
    decls = []
    for name, params in kernels_of(text):
        ps = ["unsigned int", "unsigned int"]
        for t, _ in params:
            t = re.sub(r"\b__restrict__\b", "", t)
            t = re.sub(r"\breal\b", real, t)
            t = re.sub(r"\bstore\b", store or real, t)
            ps.append(" ".join(t.split()))
        decls.append(f"void {name}__launch({', '.join(ps)});")
    return "\n".join(decls)


def flags_for(flags: Optional[Sequence[str]] = None, strict: bool = False) -> tuple:
    chosen = tuple((optimisation(DEFAULT_FLAGS[0]),) + DEFAULT_FLAGS[1:] if flags is None else flags)
    if strict and not (flags is None and chosen[0] in UNCONTRACTED_LEVELS):     # else already strict
        chosen = tuple(f for f in chosen if not f.startswith("-ffp-contract")) + STRICT_FLAGS
    return chosen


def build(source, flags: Optional[Sequence[str]] = None, strict: bool = False) -> Path:
    """Compile (or find in the cache) the shim library of a CUDA KernelSource."""
    if source.spec.backend != "cuda":
        raise ValueError(f"the CUDA host shim compiles CUDA sources, not {source.spec.backend!r}")
    cxx = compiler()
    all_flags = flags_for(flags, strict) + _BASE_FLAGS
    header = shim_header_text()
    files = dict(source.files)
    files[SHIM_HEADER] = header
    files[RUNTIME_HEADER] = runtime_header_text()
    files["shim_launchers.cpp"] = launcher_source(source.main_file, source.text)
    # -x c++ applies to the launcher unit; the .cu is #included, so it is C++ too
    return build_library(
        "cuda-shim", (source.digest, header, all_flags, compiler_version(cxx), "shim-2"), files,
        lambda folder, out: [cxx, *all_flags, "-I", folder, "-o", out, folder / "shim_launchers.cpp", "-lm"],
        source.main_file, f"g++ through the CUDA host shim ({' '.join(all_flags)})", library="libshim.so")


def build_host_program(folder: Path, sources: Sequence[str], output: str = "example",
                       flags: Optional[Sequence[str]] = None) -> Path:
    """Compile a CUDA host program (e.g. an emitted ``example.cu`` with ``<prefix>_kernels.cu``)
    for the CPU: g++ with the shim standing in for ``cuda_runtime.h``.  Returns the executable."""
    folder = Path(folder)
    include = folder / "shim-include"
    include.mkdir(exist_ok=True)
    (include / SHIM_HEADER).write_text(shim_header_text())
    (include / RUNTIME_HEADER).write_text(runtime_header_text())
    cmd = [compiler(), *flags_for(flags), "-x", "c++", "-std=c++14", "-w", "-I", str(include),
           "-o", output, *sources, "-lm"]
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(f"g++ through the CUDA host shim failed to build {output} in {folder}\n"
                           f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    return folder / output


class ShimProgram(LaunchProgram):
    """The CUDA kernels of one source run on the CPU (2D or 3D), launched like the GPU runtime
    would (block by block, thread by thread); its buffers are host NumPy arrays."""

    def __init__(self, source, shape, strict: bool = False, flags=None, block_size: Optional[int] = None):
        super().__init__(source, shape, block_size)
        self.library_path = build(source, flags, strict)
        self.real_c = {"d": "double", "f": "float"}[arithmetic_dtype(self.spec).char]   # mixed: double
        store_c = {8: "double", 4: "float", 2: "unsigned short"}[np.dtype(self.dtype).itemsize]
        self.ffi, self.lib = load_library(self.library_path, cdef_source(source.text, self.real_c, store_c))

    def describe(self) -> str:
        return describe()

    def _launch(self, kernel, blocks, threads, *args):
        ctypes = {np.float64: "double", np.float32: "float", np.float16: "unsigned short",   # 16-bit storage: its bits
                  np.uint16: "unsigned short", np.uint8: "void",   # the mask: uint8_t or unsigned char
                  np.int64: "void", np.int32: "void"}                         # the body links' indices
        conv = []
        for a in args:
            if a is None:
                conv.append(self.ffi.NULL)
            elif isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise TypeError("shim buffers are contiguous numpy arrays (from allocate/upload)")
                conv.append(self.ffi.cast(f"{ctypes[a.dtype.type]} *", a.ctypes.data))
            elif isinstance(a, np.integer):
                conv.append(int(a))
            else:
                conv.append(a)
        getattr(self.lib, f"{self.prefix}_{kernel}__launch")(blocks, threads, *conv)

    def _run(self, kernel, items, args, outputs):
        self._launch(kernel, self._blocks(items), self.block, *(a if a is None or isinstance(a, (np.ndarray, np.integer))
                                                               else float(a) for a in args))


def compile(source, *shape, strict: bool = False, flags=None, block_size: Optional[int] = None,
            threads: int = 0) -> ShimProgram:
    """The host-shim Program of a CUDA KernelSource for a lattice (lx, ly) or (lx, ly, lz) (same
    interface as the GPU runtime; the shim runs the launches one after another, ``threads`` does
    not apply)."""
    return ShimProgram(source, shape, strict=strict, flags=flags, block_size=block_size)
