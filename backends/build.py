"""Building and loading compiled kernels, and the host facts a build depends on: the compilers
(find_compiler, compiler_version, native_target), optimisation levels, the one compile cache
(build_library), the library loader (load_library), aligned host buffers, the CPU model and
its last-level cache."""
from __future__ import annotations

from functools import lru_cache

import numpy as np


class BackendUnavailable(RuntimeError):
    """A backend cannot run here (missing package, device or compiler); the message says why."""


class CompileError(RuntimeError):
    """A kernel failed to compile; the message carries the source path and the compiler log."""


def find_compiler(env_var: str, default: str, who: str) -> str:
    """The compiler named by $env_var (or `default`), which must be on PATH."""
    import os
    import shutil
    cmd = os.environ.get(env_var, default)
    if shutil.which(cmd) is None:
        raise BackendUnavailable(f"{who}: compiler {cmd!r} not found on PATH (set {env_var} or install {default})")
    return cmd


@lru_cache(maxsize=None)
def native_target(cmd: str = "") -> str:
    """What ``-march=native`` means on this machine: gcc's resolved -march and a digest of
    every target option it enables, so a cache shared by two CPU kinds (an NFS home) keeps
    their libraries apart."""
    import hashlib
    import os
    import re
    import subprocess
    cmd = cmd or os.environ.get("CC", "gcc")
    try:
        out = subprocess.run([cmd, "-march=native", "-Q", "--help=target"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    march = re.search(r"^\s*-march=\s*(\S+)", out, re.M)
    return f"{march.group(1) if march else 'unknown'}-{hashlib.sha256(out.encode()).hexdigest()[:16]}"


def _resolve_native(parts):
    """Key parts with every "-march=native" replaced by the CPU it resolves to here."""
    if isinstance(parts, (tuple, list)):
        return type(parts)(_resolve_native(p) for p in parts)
    if isinstance(parts, str) and parts == "-march=native":
        return f"-march=native={native_target()}"
    return parts


@lru_cache(maxsize=None)
def compiler_version(cmd: str) -> str:
    """First line of `cmd --version` (part of every compile cache key)."""
    import subprocess
    out = subprocess.run([cmd, "--version"], capture_output=True, text=True)
    return out.stdout.splitlines()[0] if out.stdout else cmd


#: the levels $LBGEN_OPT_LEVEL may name
OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Og")


def optimisation(default: str) -> str:
    """The optimisation level of a default kernel build (C, and the CUDA host shim; OpenCL builds
    below -O2 with its optimiser off, opencl/platform.py): ``default``, or ``$LBGEN_OPT_LEVEL``
    where it is set.  The test suite sets -O1 for its correctness
    builds (gcc takes a fifth of the -O3 time on the generated kernels); strict builds give the
    same bits at every level (tests/backends/test_opt_level.py), runs and benchmarks keep -O3."""
    import os
    level = os.environ.get("LBGEN_OPT_LEVEL", "").strip()
    if not level:
        return default
    if level not in OPT_LEVELS:
        raise ValueError(f"LBGEN_OPT_LEVEL={level!r}: not an optimisation level; use one of {', '.join(OPT_LEVELS)} "
                         f"(or unset it for {default})")
    return level


#: levels at which gcc neither contracts a*b + c into an FMA nor SLP-vectorises (both start at
#: -O2: -fexpensive-optimizations, -ftree-slp-vectorize): a default build there is already what
#: the strict flags ask for (the assembly is the same, tests/backends/test_opt_level.py), so a
#: default and a strict build at these levels are one library
UNCONTRACTED_LEVELS = ("-O0", "-O1", "-Og")


def record_build(kind: str, key: str, main_file: str, what: str, seconds: float) -> None:
    """One line per compiler run, appended to ``$LBGEN_BUILD_LOG`` when it is set: the test
    suite's account of what it compiles and how long each build takes."""
    import os
    log = os.environ.get("LBGEN_BUILD_LOG")
    if log:
        try:
            with open(log, "a") as fh:
                fh.write(f"{kind}\t{seconds:.2f}\t{key}\t{main_file}\t{what}\t"
                         f"{os.environ.get('PYTEST_CURRENT_TEST', '')}\n")
        except OSError as e:            # an account that cannot be written never fails a build
            import warnings
            warnings.warn(f"LBGEN_BUILD_LOG={log}: cannot append to it ({e.strerror or e}); builds go on unrecorded",
                          stacklevel=2)


def build_library(kind: str, key_parts: tuple, files: dict, command, main_file: str, what: str,
                  library: str = "lib.so"):
    """Compile once into ``<cache>/<kind>/<key>/<library>`` and return its path.

    ``files`` (name -> text) are written to the entry's folder; ``command(folder, output)``
    gives the compiler command line.  A file lock makes concurrent processes build once;
    the library appears atomically (rename) with its SHA-256 recorded beside it, checked
    before every use: a damaged library is rebuilt.  "-march=native" in the key stands for
    the CPU it resolves to (native_target).  On failure: CompileError naming the source
    file and carrying the compiler's log (also kept in build.log).
    """
    import subprocess
    import time

    from filelock import FileLock

    from lbgen.system.cache import atomic_write_bytes, cache_dir, digest, file_digest
    key = digest(*_resolve_native(key_parts))
    directory = cache_dir(kind) / key
    lib = directory / library
    recorded = directory / f"{library}.sha256"

    def intact() -> bool:          # a truncated or corrupted library would SIGBUS/SIGILL on load
        try:
            return lib.exists() and recorded.read_text().strip() == file_digest(lib)
        except OSError:
            return False
    if intact():
        return lib
    directory.mkdir(parents=True, exist_ok=True)
    with FileLock(str(directory) + ".lock"):
        if intact():
            return lib
        if lib.exists():
            import sys
            print(f"lbgen: warning: cached library {lib} failed its checksum (damaged); rebuilding it",
                  file=sys.stderr)
            lib.unlink()
        for name, text in files.items():
            (directory / name).write_text(text)
        tmp = directory / f"{library}.{key}.tmp"
        cmd = [str(c) for c in command(directory, tmp)]
        started = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=directory)
        record_build(kind, key, main_file, what, time.perf_counter() - started)
        log = f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
        atomic_write_bytes(directory / "build.log", log.encode())
        if proc.returncode != 0:
            if tmp.exists():
                tmp.unlink()
            raise CompileError(f"{what} failed to compile {directory / main_file}\n"
                               f"(log also in {directory / 'build.log'})\n{log}")
        atomic_write_bytes(recorded, file_digest(tmp).encode())
        tmp.replace(lib)
    return lib


#: every library loaded stays loaded for the life of the process: unloading one whose
#: OpenMP threads exist (libgomp goes with it when no other library holds it) crashes the
#: process later, at its next fork or parallel region
_LOADED: dict = {}


def load_library(path, declarations: str):
    """(ffi, lib) of a compiled library (cffi ABI mode), loaded once per process and path."""
    from cffi import FFI
    key = str(path)
    if key not in _LOADED:
        ffi = FFI()
        ffi.cdef(declarations)
        _LOADED[key] = (ffi, ffi.dlopen(key))
    return _LOADED[key]


def aligned_zeros(n: int, dtype, align: int = 64) -> np.ndarray:
    """A zeroed 1-D array whose data starts on an `align`-byte boundary (aligned vector loads)."""
    dtype = np.dtype(dtype)
    raw = np.empty(n * dtype.itemsize + align, dtype=np.uint8)
    # Written now, not left to calloc's lazy zero pages: a fresh buffer's page faults (and,
    # for numpy's huge-page-advised large arrays, the kernel's compaction) happen here, at
    # set-up, instead of inside the first sweeps that write it.
    raw.fill(0)
    offset = (-raw.ctypes.data) % align
    return raw[offset:offset + n * dtype.itemsize].view(dtype)


def cpu_model() -> str:
    """The host CPU's model name (/proc/cpuinfo), else what platform knows."""
    import platform
    from pathlib import Path as _Path
    try:
        for line in _Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def last_level_cache_bytes() -> int:
    """Size in bytes of the CPU's largest data cache (Linux sysfs, cpu0); 0 when unknown."""
    from pathlib import Path as _Path
    best = 0
    for index in _Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            size = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        try:
            best = max(best, int(size.rstrip("KMG")) * scale)
        except ValueError:
            continue
    return best
