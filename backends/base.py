"""The interface every backend implements."""
from __future__ import annotations

import abc
import collections
from functools import lru_cache
from typing import Any, Optional

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
    """The optimisation level of a default kernel build (C, and the CUDA host shim): ``default``,
    or ``$LBGEN_OPT_LEVEL`` where it is set.  The test suite sets -O1 for its correctness
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


class Program(abc.ABC):
    """Compiled kernels of one spec for one lattice size."""

    #: OpenMP threads of a host program (None where the device decides)
    threads: Optional[int] = None
    #: the shared library a host program loaded (None for device programs)
    library_path: Any = None

    def __init__(self, source, lx: int, ly: int):
        from lbgen.codegen.layouts import make_layout
        from lbgen.model.velocity_set import velocity_set
        self.source = source
        self.spec = source.spec
        self.lx, self.ly = lx, ly
        #: calls of each kernel entry point so far (the host runtimes count them; a log for tests
        #: and benchmarks that must observe which kernels ran)
        self.calls = collections.Counter()
        if self.spec.compile_time_sizes and (lx, ly) != (self.spec.lx, self.spec.ly):
            raise ValueError(f"these kernels were generated for the lattice lx={self.spec.lx}, ly={self.spec.ly} "
                             f"(compile-time sizes); they cannot run on {lx} x {ly}")
        vs = velocity_set(self.spec.velocity_set)
        self.layout = make_layout(self.spec.layout, vs.Q, (lx, ly), self.spec.vl, halo=vs.max_hop,
                                  halo_y=self.spec.halo_y)
        self.dtype = np.float64 if self.spec.precision == "double" else np.float32
        #: the bounce-back boundaries every sweep honours (set_boundaries; None: periodic)
        self.bounds = None

    def set_boundaries(self, walls: int = 0, lids: int = 0, lid=None, solid=None) -> None:
        """2D bounce-back boundaries for every following sweep (the `<prefix>_params` fields;
        ``lbgen.simulation.boundaries`` checks the values): ``walls`` and ``lids`` face bits
        (bit 2a + s: side s of axis a), ``lid`` the (4, 2) face velocities (model units),
        ``solid`` an (lx, ly) array of 0 and 1 or None.  All 0 and None: periodic."""
        if self.spec.walls and (walls or lids or solid is not None):
            raise ValueError("bounce-back walls, lids and solid cells are not available in kernels generated with "
                             "the thermal walls (KernelSpec(walls=True))")
        lid = np.zeros((4, 2)) if lid is None else np.asarray(lid, dtype=np.float64).reshape(4, 2)
        if solid is not None:
            solid = np.ascontiguousarray(solid, dtype=np.uint8)
            if solid.shape != (self.lx, self.ly):
                raise ValueError(f"solid: shape {solid.shape}; need this program's lattice (lx, ly) = "
                                 f"{(self.lx, self.ly)}")
        self.bounds = (int(walls), int(lids), lid, solid) if (walls or solid is not None) else None
        self._bounds_changed()

    def _bounds_changed(self) -> None:
        """A hook: the runtime refreshes what it derived from ``bounds``."""

    @abc.abstractmethod
    def allocate(self) -> Any: ...

    @abc.abstractmethod
    def upload(self, host: np.ndarray, buffer: Any = None) -> Any:
        """Copy a flat host array (layout order) into a (new or given) device buffer."""

    @abc.abstractmethod
    def download(self, buffer: Any) -> np.ndarray:
        """Flat host copy (layout order) of a device buffer."""

    @abc.abstractmethod
    def halo(self, f: Any) -> None: ...

    @abc.abstractmethod
    def propagate(self, prv: Any, nxt: Any) -> None:
        """Pull streaming prv -> nxt, the bounce-back boundaries (``set_boundaries``) included."""

    @abc.abstractmethod
    def collide(self, src: Any, dst: Any, **params) -> None: ...

    @abc.abstractmethod
    def fused(self, prv: Any, nxt: Any, **params) -> None: ...

    def fused_tb(self, prv: Any, nxt: Any, depth: int, walls=None, **params) -> None:
        """`depth` time steps in one sweep through cache (temporal blocking; C backend)."""
        raise NotImplementedError(f"temporal blocking (time_block > 1) runs on the C backend only, "
                                  f"not on {self.spec.backend!r}")

    @staticmethod
    def _check_time_block(depth) -> int:
        from lbgen.codegen.spec import time_block_value
        if isinstance(depth, str):
            raise ValueError(f"time block {depth!r} is not an integer (time steps per sweep)")
        return time_block_value(depth, allow_auto=False)

    def bc(self, prv: Any, nxt: Any, T_bottom: float = 1.0, T_top: float = 1.0,
           adiabatic=(False, False), ax: float = 0.0, ay: float = 0.0, sides=(True, True)) -> None:
        """Thermal walls after propagate(prv -> nxt), on the sides (bottom, top) this lattice
        holds (``sides``); only for specs generated with walls."""
        raise NotImplementedError(f"the {self.spec.backend} backend has no bc kernel yet")

    def diagnostics(self, f: Any, ax: float = 0.0, ay: float = 0.0) -> np.ndarray:
        """Per-row reductions over x of the physical fields of the state in f (force per unit
        mass per step (ax, ay), as ``fields``): an (LY, ND) float64 array whose columns are
        ``lbgen.codegen.diagnostics.ROW_QUANTITIES`` (the generated diagnostics kernel; only
        LY x ND numbers leave the device)."""
        raise NotImplementedError(f"the {self.spec.backend} backend has no diagnostics kernel")

    def fused_walls(self, prv: Any, nxt: Any, T_bottom: float = 1.0, T_top: float = 1.0,
                    adiabatic=(False, False), sides=(True, True), **params) -> None:
        """propagate + bc + collide in one sweep (prv -> nxt); only for specs generated with walls."""
        raise NotImplementedError(f"the {self.spec.backend} backend has no fused walls kernel yet")

    def describe(self) -> str:
        """What the kernels run on (a CPU model, a device name)."""
        return cpu_model()

    def provenance(self) -> dict:
        """What a run records about these kernels (manifest.json)."""
        out = {"device": self.describe()}
        if self.threads is not None:
            out["threads"] = str(self.threads)
        if self.library_path is not None:
            out["library_path"] = str(self.library_path)
        return out

    def copy_bandwidth(self, repeat: int = 5) -> Optional[dict]:
        """The device's own copy bandwidth (GB/s, read + write) for accelerator backends;
        None where the kernels run on the host (its limits are measured by lbgen.perf.machine)."""
        return None

    @staticmethod
    def _check_tau_wall(tau_wall) -> float:
        """The wall rows' relaxation time as a float: finite and > 1/2 (the kernels trust it)."""
        return check_tau_wall(tau_wall)

    def _tau_wall(self, tau_wall, convert=float) -> list:
        """The GPU kernels' `real tau_wall` argument (walls only; without walls only the default)."""
        tau_wall = self._check_tau_wall(tau_wall)
        if not self.spec.walls:
            if tau_wall != 1.0:
                self._require_walls()
            return []
        return [convert(tau_wall)]

    @staticmethod
    def _check_sides(sides) -> tuple:
        """(bottom, top): which walls a lattice holds, as two real booleans; a lattice split in Y
        holds the bottom wall only on its lowest part and the top wall only on its highest."""
        try:
            bottom, top = sides
        except (TypeError, ValueError):
            raise ValueError(f"sides={sides!r} must be a pair (bottom, top) of booleans: the walls this "
                             f"lattice holds") from None
        for name, v in (("bottom", bottom), ("top", top)):
            if not isinstance(v, (bool, np.bool_)):
                raise ValueError(f"sides: {name}={v!r} is not a boolean (True: this lattice holds the {name} wall)")
        return bool(bottom), bool(top)

    def _check_region(self, region) -> tuple:
        """(x0, x1, y0, y1) of a sweep's region (``checked_region``)."""
        return checked_region(region, self.lx, self.ly)

    def _region_items(self, region: tuple) -> int:
        """Work-items (threads) of a GPU sweep over a checked region: its columns times the
        storage slots s = r*VL + k (k fastest: the lanes of a cluster are consecutive items)
        from the lowest to the highest slot of its rows (common.j2 region_site, the same rule)."""
        x0, x1, y0, y1 = region
        if x1 <= x0 or y1 <= y0:
            return 0
        NR, VL = self.layout.NR, self.layout.VL
        if y0 // NR == (y1 - 1) // NR:
            slots = ((y1 - 1) % NR - y0 % NR) * VL + 1
        else:
            slots = (NR - 1) * VL + y1 // NR - (y0 // NR + (y0 % NR != 0))
        return (x1 - x0) * slots

    def _require_walls(self) -> None:
        if not self.spec.walls:
            raise ValueError("these kernels were generated without walls (KernelSpec(walls=True) adds the bc kernel)")

    def synchronize(self) -> None:
        pass

    # --- the step sequence: written once, for the runner, tune, verify and bench ----------
    def step(self, f: Any, g: Any, params: dict, walls=None, fused: bool = True, sides=(True, True)):
        """One time step of a region whose halos are fresh: ``f`` holds the state, ``g`` is
        spare.  Returns (state, spare) after the step (asynchronous on devices).

        Periodic: the fused kernel (or propagate then collide).  With ``walls`` (anything
        with T_bottom, T_top, adiabatic_bottom, adiabatic_top): the fused_walls kernel (or
        propagate, bc, collide: the same bits in strict builds), on the walls of ``sides``
        (bottom, top) only: a lattice split in Y holds each wall on one part; the wall rows
        relax with ``walls.tau_wall`` (1 where walls has none)."""
        if walls is None and fused:
            self.fused(f, g, **params)
            return g, f
        if fused:
            self.fused_walls(f, g, walls.T_bottom, walls.T_top, (walls.adiabatic_bottom, walls.adiabatic_top),
                             sides=sides, tau_wall=wall_tau(walls), **params)
            return g, f
        self.propagate(f, g)          # the bounce-back boundaries (set_boundaries) included
        if walls is not None:
            self.bc(f, g, walls.T_bottom, walls.T_top, (walls.adiabatic_bottom, walls.adiabatic_top),
                    params["ax"], params["ay"], sides=sides)
            self.collide(g, f, sides=sides, tau_wall=wall_tau(walls), **params)
        else:
            self.collide(g, f, **params)
        return f, g

    # --- whole padded columns (halo exchange between regions, ranks and devices) ------------
    def column_ranges(self, x0: int, n: int):
        """Contiguous (offset, length) element ranges holding padded columns x0 .. x0+n-1.

        x counts from -H (the left halo, H = layout.halo) to LX+H-1; a padded column includes
        its Y halo rows.
        Layouts whose X stride is the outermost one (AoS, CAoSoA) hold them in one range,
        the others (SoA, CSoA) in one range per population.
        """
        H = self.layout.halo
        if x0 < -H or n < 0 or x0 + n > self.lx + H:
            raise ValueError(f"columns {x0}..{x0 + n - 1} outside {-H}..{self.lx + H - 1}")
        s = self.layout.strides
        start = (x0 + H) * s["SX"]
        if s["SP"] > s["SX"]:
            return [(p * s["SP"] + start, n * s["SX"]) for p in range(self.layout.Q)]
        return [(start, n * s["SX"])]

    def read_columns(self, f: Any, x0: int, n: int) -> np.ndarray:
        """Flat copy of padded columns x0 .. x0+n-1 (all populations, Y halo rows included)."""
        ranges = self.column_ranges(x0, n)
        out = np.empty(sum(length for _, length in ranges), dtype=self.dtype)
        pos = 0
        for offset, length in ranges:
            self._read_range(f, offset, out[pos:pos + length])
            pos += length
        return out

    def write_columns(self, f: Any, x0: int, data: np.ndarray) -> None:
        """Inverse of read_columns: data from read_columns(..., n) of a program of the same layout."""
        data = np.ascontiguousarray(data, dtype=self.dtype)
        n = data.size // (self.layout.Q * self.layout.NRP * self.layout.VL)
        pos = 0
        for offset, length in self.column_ranges(x0, n):
            self._write_range(f, offset, data[pos:pos + length])
            pos += length
        if pos != data.size:
            raise ValueError(f"column data of {data.size} elements does not fit {n} columns of this layout")

    # Columns in a layout-independent form, so regions with different layouts or VLs can
    # trade halos: plain[p, i, y + H] for y = -H .. LY+H-1 (the Y halo rows included).
    def _block_maps(self, n: int):
        key = ("_block_maps", n)
        cache = self.__dict__.setdefault("_maps", {})
        if key not in cache:
            L, s = self.layout, self.layout.strides
            H = L.halo
            per_population = s["SP"] > s["SX"]
            p = np.arange(L.Q)[:, None, None, None]
            i = np.arange(n)[None, :, None, None]
            r = np.arange(-H, L.NR + H)[None, None, :, None]
            k = np.arange(L.VL)[None, None, None, :]
            within = i * s["SX"] + (r + H) * s["SR"] + k * s["SK"]
            pos = p * (n * s["SX"]) + within if per_population else p * s["SP"] + within
            y = r + k * L.NR                                     # the site each storage cell holds
            canonical = (p * n + i) * (L.LY + 2 * H) + (y + H)
            scatter_pos, scatter_src = np.broadcast_arrays(pos, canonical)
            # one representative storage cell per (p, i, y): the last writer wins, any is exact
            rep = np.empty(L.Q * n * (L.LY + 2 * H), dtype=np.int64)
            rep[scatter_src.ravel()] = scatter_pos.ravel()
            cache[key] = (scatter_pos.ravel(), scatter_src.ravel(), rep)
        return cache[key]

    def read_columns_plain(self, f: Any, x0: int, n: int) -> np.ndarray:
        """Padded columns x0 .. x0+n-1 as plain[p, i, y + H], y = -H .. LY+H-1."""
        raw = self.read_columns(f, x0, n)
        _, _, rep = self._block_maps(n)
        return raw[rep].reshape(self.layout.Q, n, self.layout.LY + 2 * self.layout.halo)

    def write_columns_plain(self, f: Any, x0: int, plain: np.ndarray) -> None:
        """Inverse of read_columns_plain (every storage cell, lane-shifted halo copies included)."""
        plain = np.asarray(plain)
        n = plain.shape[1]
        pos, src, _ = self._block_maps(n)
        raw = np.empty(pos.size, dtype=self.dtype)
        raw[pos] = plain.reshape(-1)[src]
        self.write_columns(f, x0, raw)

    # Whole padded rows in the same layout-independent form (the Y halo exchange between MPI
    # ranks split along Y): plain[p, x + H, j] for x = -H .. LX+H-1 (the X halo columns
    # included) and the rows y0 + j, j < n; y counts from -H to LY+H-1 as for columns.
    def _row_maps(self, y0: int, n: int):
        key = ("_row_maps", y0, n)
        cache = self.__dict__.setdefault("_maps", {})
        if key not in cache:
            L, s = self.layout, self.layout.strides
            H = L.halo
            if y0 < -H or n < 0 or y0 + n > L.LY + H:
                raise ValueError(f"rows {y0}..{y0 + n - 1} outside {-H}..{L.LY + H - 1}")
            p = np.arange(L.Q)[:, None, None, None]
            x = np.arange(L.LX + 2 * H)[None, :, None, None]             # x + H
            r = np.arange(-H, L.NR + H)[None, None, :, None]
            k = np.arange(L.VL)[None, None, None, :]
            pos = p * s["SP"] + x * s["SX"] + (r + H) * s["SR"] + k * s["SK"]
            y = r + k * L.NR + 0 * (p + x)
            pos, y = np.broadcast_arrays(pos, y)
            inside = (y >= y0) & (y < y0 + n)
            canonical = ((p * (L.LX + 2 * H) + x) * n + (y - y0)) + 0 * pos
            pos, src = pos[inside], canonical[inside]
            rep = np.empty(L.Q * (L.LX + 2 * H) * n, dtype=np.int64)
            rep[src] = pos                     # one storage cell per (p, x, y): any is exact
            cache[key] = (pos, src, rep)
        return cache[key]

    def read_rows_plain(self, f: Any, y0: int, n: int) -> np.ndarray:
        """Padded rows y0 .. y0+n-1 as plain[p, x + H, j] (every column, X halo included).
        Host buffers are indexed in place; a device buffer is downloaded whole."""
        _, _, rep = self._row_maps(y0, n)
        flat = f if isinstance(f, np.ndarray) else self.download(f)
        return flat[rep].reshape(self.layout.Q, self.layout.LX + 2 * self.layout.halo, n)

    def write_rows_plain(self, f: Any, y0: int, plain: np.ndarray) -> None:
        """Inverse of read_rows_plain (every storage cell of those rows, lane-shifted copies included)."""
        plain = np.asarray(plain, dtype=self.dtype)
        pos, src, _ = self._row_maps(y0, plain.shape[2])
        if isinstance(f, np.ndarray):
            f[pos] = plain.reshape(-1)[src]
            return
        flat = self.download(f)
        flat[pos] = plain.reshape(-1)[src]
        self.upload(flat, f)

    def _read_range(self, f: Any, offset: int, out: np.ndarray) -> None:
        raise NotImplementedError(f"the {self.spec.backend} backend cannot read columns")

    def _write_range(self, f: Any, offset: int, data: np.ndarray) -> None:
        raise NotImplementedError(f"the {self.spec.backend} backend cannot write columns")

    # conveniences shared by every backend
    def upload_fields(self, f: np.ndarray, buffer: Any = None) -> Any:
        """(Q, LX, LY) populations -> device buffer in this layout (halo filled)."""
        return self.upload(self.layout.pack(np.asarray(f, dtype=self.dtype)), buffer)

    def download_fields(self, buffer: Any) -> np.ndarray:
        return self.layout.unpack(self.download(buffer)).astype(np.float64)

    # Backends with generated init_equilibrium / fields kernels override these two; this
    # host path evaluates the same model assignments with NumPy (bit for bit what a strict
    # build of the kernels computes in double precision).
    def init_equilibrium(self, f: Any, rho, ux, uy, T, ax: float = 0.0, ay: float = 0.0) -> None:
        """f (in place) = the populations whose physical (half-step) fields are the given ones,
        (LX, LY) arrays each, under the force per unit mass per step (ax, ay): the exact
        inverse of ``fields`` (lbgen.model.collision.half_step_shift); halo filled."""
        from lbgen.model import equilibrium_assignments
        fields = [np.broadcast_to(np.asarray(a, dtype=np.float64), (self.lx, self.ly)) for a in (rho, ux, uy, T)]
        self.upload_fields(equilibrium_assignments(self.spec.velocity_set).evaluate(fields, ax=ax, ay=ay), f)

    def fields(self, f: Any, ax: float = 0.0, ay: float = 0.0):
        """{rho, ux, uy, T}, (LX, LY) float64 arrays each (a dict, as the 3D programs'): the
        physical (half-step) fields of the populations in f under the force per unit mass per
        step (ax, ay) -- rho, u - a/2, T + |a|^2/8 of the stored moments (ax = ay = 0: the
        stored moments)."""
        from lbgen.model import physical_fields
        return fields_dict(physical_fields(self.spec.velocity_set, self.download_fields(f), ax, ay))

    def _param_values(self, params: dict):
        """The kernel arguments in order (``ordered_parameters``)."""
        from lbgen.codegen.spec import OPERATOR_PARAMETERS
        return ordered_parameters(self, OPERATOR_PARAMETERS[self.spec.collision], params)


def checked_region(region, lx: int, ly: int, note: str = "") -> tuple:
    """(x0, x1, y0, y1) of a sweep's region, for any D: None is the whole lattice, else interior
    sites x0 <= x < x1, y0 <= y < y1 (3D: whole Z lines, ``note``), checked here (the kernels
    trust it)."""
    if region is None:
        return 0, lx, 0, ly
    try:
        x0, x1, y0, y1 = region
    except (TypeError, ValueError):
        raise ValueError(f"region={region!r} must be (x0, x1, y0, y1): interior sites x0 <= x < x1, "
                         f"y0 <= y < y1{note}") from None
    for name, v in zip(("x0", "x1", "y0", "y1"), (x0, x1, y0, y1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"region: {name}={v!r} is not an integer")
    if not (0 <= x0 <= x1 <= lx and 0 <= y0 <= y1 <= ly):
        raise ValueError(f"region (x0, x1, y0, y1) = {(x0, x1, y0, y1)} outside the lattice: allowed "
                         f"0 <= x0 <= x1 <= {lx}, 0 <= y0 <= y1 <= {ly}")
    return int(x0), int(x1), int(y0), int(y1)


def fields_dict(arrays) -> dict:
    """The 2D fields kernel's four arrays as the dict every program's ``fields`` returns."""
    from lbgen.model.catalog import field_names
    return dict(zip(field_names(2), arrays))


def wall_tau(walls) -> float:
    """The wall rows' relaxation time of a walls description (``Walls.tau_wall``; anything
    without one: 1, the default)."""
    return getattr(walls, "tau_wall", 1.0)


def check_tau_wall(tau_wall) -> float:
    """tau_wall as a float, refused unless a finite real number > 1/2 (the relaxation time
    of the rows next to a thermal wall)."""
    import math
    if isinstance(tau_wall, (bool, np.bool_)) or not isinstance(tau_wall, (int, float, np.integer, np.floating)):
        raise ValueError(f"tau_wall={tau_wall!r} is not a number: the relaxation time of the rows next to "
                         f"a thermal wall, a finite value > 1/2 (1: the default)")
    value = float(tau_wall)
    if not (math.isfinite(value) and value > 0.5):
        raise ValueError(f"tau_wall={value!r} outside its range: the relaxation time of the rows next to a "
                         f"thermal wall must be finite and > 1/2 (1: the default)")
    return value


def ordered_parameters(program, names, params: dict, convert=float) -> list:
    """A collide kernel's parameter values in the order ``names``, for every runtime (2D and
    3D).  The names are checked once per set of keys and remembered on ``program`` (a run
    passes the same dict every step: no re-validation on the hot path)."""
    if params.keys() != getattr(program, "_checked_keys", None):
        missing = [n for n in names if n not in params]
        extra = [n for n in params if n not in names]
        if missing or extra:
            raise TypeError(f"{program.spec.collision} collide takes parameters {', '.join(names)}; "
                            f"missing {missing}, unexpected {extra}")
        program._checked_keys = set(params)
    return [convert(params[n]) for n in names]


class HostBuffers:
    """Buffers in host memory (numpy, 64-byte aligned): for the backends that run on the CPU."""

    def allocate(self) -> np.ndarray:
        return aligned_zeros(self.layout.size, self.dtype)

    def upload(self, host, buffer=None):
        host = np.asarray(host, dtype=self.dtype).reshape(-1)
        if host.size != self.layout.size:
            raise ValueError(f"upload expects {self.layout.size} elements, got {host.size}")
        buf = self.allocate() if buffer is None else buffer
        buf[...] = host
        return buf

    def download(self, buffer):
        return np.array(buffer, copy=True)

    def _read_range(self, f, offset, out):
        out[...] = f[offset:offset + out.size]

    def _write_range(self, f, offset, data):
        f[offset:offset + data.size] = data


class Program3D:
    """What the 3D runtimes share (the C one, backends/c/program3d.py, and the GPU dialects',
    backends/gpu3d.py): the spec and size checks before any work, the lattice description,
    buffers in ``Layout`` order (host arrays here; a device runtime's own, moved by
    ``download``/``upload``), the boundaries record and the step sequence.  A
    runtime sets ``backend`` and ``Boundaries`` (its boundaries class: built from a program,
    walls, lids and a solid mask; ``periodic`` when it holds none) and defines the kernels."""

    backend = ""
    Boundaries: Any = None

    def _describe(self, source, lx: int, ly: int, lz: int) -> None:
        from lbgen.codegen.layouts import make_layout
        from lbgen.codegen.kernel_api import check_sizes3d
        from lbgen.model.operators import operator
        from lbgen.model.velocity_set import velocity_set
        self.source = source
        self.spec = spec = source.spec
        if spec.dimension != 3 or spec.backend != self.backend:
            raise ValueError(f"{type(self).__name__} runs 3D {self.backend} kernels, not a {spec.dimension}D "
                             f"{spec.backend} source")
        self.vs = vs = velocity_set(spec.velocity_set)
        problem = check_sizes3d(spec, vs, lx, ly, lz)         # the emitted check's rules, before any work
        if problem:
            raise ValueError(problem)
        self.lx, self.ly, self.lz = int(lx), int(ly), int(lz)
        self.layout = make_layout(spec.layout, vs.Q, (self.lx, self.ly, self.lz), spec.vl, halo=vs.max_hop)
        self.dtype = np.float64 if spec.precision == "double" else np.float32
        self.calls = collections.Counter()
        self.prefix = spec.prefix
        self.parameter_names = operator(spec.collision).kernel_arguments_of(3)

    def allocate(self) -> np.ndarray:
        return aligned_zeros(self.layout.size, self.dtype)

    def download(self, buffer) -> np.ndarray:
        """A flat host copy (layout order) of a lattice buffer (one on a GPU too)."""
        return np.array(buffer, dtype=self.dtype)

    def upload(self, host, buffer=None):
        """Copy a flat host array (layout order) into a (new or given) lattice buffer."""
        host = np.asarray(host, dtype=self.dtype).reshape(-1)
        if host.size != self.layout.size:
            raise ValueError(f"upload expects {self.layout.size} elements, got {host.size}")
        buffer = self.allocate() if buffer is None else buffer
        self._copy_in(buffer, host)
        return buffer

    def _copy_in(self, buffer, host: np.ndarray) -> None:
        buffer[...] = host

    def describe(self) -> str:
        """What the kernels run on (the host's CPU model; a GPU runtime names its device)."""
        return cpu_model()

    def synchronize(self) -> None:
        """Wait for the kernels launched so far (the host runtimes return with their work done)."""

    def _check_region(self, region) -> tuple:
        """(x0, x1, y0, y1) of a 3D sweep's region (whole Z lines; ``checked_region``)."""
        return checked_region(region, self.lx, self.ly, ", whole Z lines")

    def boundaries(self, walls=(), lids=None, solid=None):
        """The boundaries record of these kernels (None for a periodic box without a mask)."""
        bc = self.Boundaries(self, walls, lids, solid)
        return None if bc.periodic else bc

    def step_halo(self, f) -> None:
        """The halo refresh of a step (the GPU runtimes refresh only what their kernels read)."""
        self.halo(f)

    def step(self, f, g, params, bc=None, fused: bool = True):
        """One time step from the state in f (g spare): the halo refresh, then fused (or
        propagate and collide: the same bits in builds without FMA contraction).  Returns
        (state, spare)."""
        self.step_halo(f)
        if fused:
            self.fused(f, g, bc, **params)
            return g, f
        self.propagate(f, g, bc)
        self.collide(g, f, bc, **params)
        return f, g
