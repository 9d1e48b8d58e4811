"""C/OpenMP backend: gcc builds a shared library, cffi (ABI mode) loads it.

Compiled libraries are cached on disk under ``<cache>/c/<key>/`` where the key hashes
the generated source, the compiler flags and the compiler's version; a file lock makes
two processes that compile the same kernel at once build it only once.  A failed build
raises ``CompileError`` naming the generated file and carrying gcc's log.
"""
from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from lbgen.system.limits import resolve_threads

from lbgen.codegen.spec import time_block_walls_refusal
from lbgen.model.operators import OPERATOR_RECORDS
from lbgen.backends.base import HostBuffers, Program, body_arrays, check_tau_wall, fields_dict, wall_tau
from lbgen.backends.build import (UNCONTRACTED_LEVELS, build_library, compiler_version, find_compiler,
                                  last_level_cache_bytes, load_library, optimisation)

#: OpenMP waiting when the user set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT: idle threads
#: sleep instead of spinning 300000 rounds between the parallel regions of a step, so that
#: on a busy machine a spinning thread does not steal the core a working one needs
#: (docs/performance.md: measured quiet and busy).  libgomp reads it once, when it loads
#: (the first kernel library dlopen'ed below), so it is set at import.
WAIT_POLICY = "passive"


def _default_wait_policy() -> None:
    import os
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = WAIT_POLICY


_default_wait_policy()

DEFAULT_FLAGS = ("-O3", "-march=native", "-fopenmp")
# strict: no FMA contraction, and no basic-block (SLP) vectorisation -- with AVX-512 gcc 12's
# SLP vectoriser changed the last bit of the AoS bc kernel (x = 0, top wall) against every
# other layout and backend; loop vectorisation (omp simd) is kept, it never did
STRICT_FLAGS = ("-ffp-contract=off", "-fno-tree-slp-vectorize")
_BASE_FLAGS = ("-std=gnu11", "-fPIC", "-shared")


def compiler() -> str:
    return find_compiler("CC", "gcc", "C backend")


def available():
    cc = compiler()
    return True, f"C/OpenMP via {compiler_version(cc)}"


def describe() -> str:
    """The compiler the C kernels are built with."""
    return compiler_version(compiler())


def default_flags() -> tuple:
    """DEFAULT_FLAGS with the optimisation level of $LBGEN_OPT_LEVEL, where it is set."""
    return (optimisation(DEFAULT_FLAGS[0]),) + DEFAULT_FLAGS[1:]


def flags_for(flags: Optional[Sequence[str]] = None, strict: bool = False) -> tuple:
    chosen = tuple(default_flags() if flags is None else flags)
    if strict and not (flags is None and chosen[0] in UNCONTRACTED_LEVELS):     # else already strict
        chosen = tuple(f for f in chosen if not f.startswith("-ffp-contract") and f not in STRICT_FLAGS) + STRICT_FLAGS
    return chosen


def api_declarations(header: str) -> str:
    """The plain declarations between BEGIN API and END API, for cffi's cdef."""
    m = re.search(r"/\* BEGIN API.*?\*/(.*)/\* END API \*/", header, re.S)
    if not m:
        raise ValueError("generated header has no BEGIN API / END API block")
    # cffi's parser knows no _Float16 (fp16s storage): the API passes populations by pointer only,
    # and a uint16_t has its size and alignment
    return re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S).replace("_Float16", "uint16_t")


#: below -O2 the site's collision is compiled once when its inlined copies would hold at least
#: this many floating-point operations in all (the collision's count times its call sites): -O1,
#: gcc 12, 2026-11-27, inlined / once: D2Q9 BGK (87 x 7) 1.35 / 1.10 s, D2Q37 BGK (534 x 7)
#: 3.4 / 2.2 s, D3Q27 MRT (593 x 7) 8.3 / 4.1 s, D3Q27 cumulant (1394 x 7) 21 / 6.3 s, D3Q39
#: regularized with thermal walls (596 x 14) 1086 / 31 s (a loaded machine); a call per site
#: costs the small collisions most (the emitted example at -O1: D2Q9 2.9x, D2Q37 1.75x the time)
SITE_ONCE_FLOPS = 5000


def inlined_flops(source) -> int:
    """The floating-point operations the site's collision would put into a C source inlined: its
    count times its call sites in the source."""
    calls = source.files[source.main_file].count(f"{source.spec.prefix}_collide_site(") - 1
    return source.flops.get("collide", 0) * max(calls, 0)


#: below -O2 (no vectorisation, nothing for AVX-512 to give) builds leave AVX-512 out: gcc 12 with
#: -march=native on an AVX-512 AMD EPYC (tuned as znver3; 2026-11-28) used the mask registers as
#: room for scalar values at -O1 (113 kmov in the D3Q39 walls library, 2-4 at -O2/-O3) and
#: miscompiled the D3Q39 bc across y (CAoSoA VL 4: 4e-4 off the oracle, NaN in a 3D
#: rayleigh-taylor run); right at -O0, -O2, -O3, and at -O1 with -mno-avx512f, -mno-avx512bw or
#: -fno-guess-branch-probability.  The suite builds at -O1 (tests/conftest.py); runs at -O3
LOW_LEVEL_FLAGS = ("-mno-avx512f",)


def below_o2(flags: Sequence[str]) -> bool:
    """Whether gcc's level in these flags (its last -O flag, -O0 without one) is below -O2."""
    levels = [f for f in flags if re.fullmatch(r"-O\w*", f)]
    return (levels[-1] if levels else "-O0") in UNCONTRACTED_LEVELS


def level_flags(flags: Sequence[str], source) -> tuple:
    """What a build with these flags adds for its level: below -O2 LOW_LEVEL_FLAGS, and
    ``-D<PREFIX>_SITE_ONCE`` where ``site_once``."""
    extra = LOW_LEVEL_FLAGS if below_o2(flags) else ()
    return extra + ((f"-D{source.spec.prefix.upper()}_SITE_ONCE",) if site_once(flags, source) else ())


def site_once(flags: Sequence[str], source) -> bool:
    """Whether a build of ``source`` with these flags compiles the site functions once
    (``<PREFIX>_SITE_ONCE``, the kernels' template) instead of inlining them into every sweep:
    below -O2 (gcc's level is its last -O flag, -O0 without one), where gcc vectorises nothing
    that inlining would give it, for a collision whose inlined copies would be large
    (``SITE_ONCE_FLOPS``): inlining those costs most of the compile time, while a small
    collision runs several times faster inlined.  The test suite's builds (-O1) are the ones
    below -O2; runs and benchmarks (-O3) inline."""
    return below_o2(flags) and inlined_flops(source) >= SITE_ONCE_FLOPS


def build(source, flags: Optional[Sequence[str]] = None, strict: bool = False) -> Path:
    """Compile (or find in the cache) the shared library for a C KernelSource."""
    if source.spec.backend != "c":
        raise ValueError(f"the C backend compiles C sources, not {source.spec.backend!r}")
    cc = compiler()
    all_flags = flags_for(flags, strict) + _BASE_FLAGS
    if strict and OPERATOR_RECORDS[source.spec.collision].specialised:
        # the general site function at every rate (templates/common.j2, site_function): every backend's bits;
        # only for an operator with a specialised one, so that the other strict builds below -O2 share the plain ones
        all_flags += (f"-D{source.spec.prefix.upper()}_STRICT",)
    all_flags += level_flags(all_flags, source)
    return build_library(
        "c", (source.digest, all_flags, compiler_version(cc)), source.files,
        lambda folder, out: [cc, *all_flags, "-o", out, folder / source.main_file, "-lm"],
        source.main_file, f"gcc ({' '.join(all_flags)})", library="libkernels.so")


#: streaming stores are turned off when the two lattice buffers take at most this share of the
#: last-level cache: a sweep then finds its input in cache and plain stores keep the output
#: there.  Measured with `fused`, 2 threads, 32 MB L3 (plain / streaming MLUPS): D2Q37
#: 64 x 256 (11 MB) 51.1 / 26.4; D2Q9 256 x 512 (19.5 MB) 253.6 / 171.3; D2Q37 128 x 256
#: (21 MB) 26.6 / 27.8; D2Q9 384 x 512 (29 MB) 181 / 192; D2Q37 1024 x 4096 23.0 / 34.0
STREAMING_CACHE_SHARE = 0.75


def streaming_pays(elements: int, dtype) -> bool:
    """Whether non-temporal stores suit a lattice buffer of `elements` values (two of them)."""
    llc = last_level_cache_bytes()
    return not llc or 2 * elements * np.dtype(dtype).itemsize > STREAMING_CACHE_SHARE * llc


class CProgram(HostBuffers, Program):
    """Compiled C kernels of one spec for one lattice ``shape`` (2D or 3D), buffers in host memory.
    Every sweep takes a ``<prefix>_region`` and the ``<prefix>_params`` record (``_par``: the
    operator's parameters, the force, the boundaries of ``set_boundaries`` and, with the 2D
    thermal walls, the wall fields), built once per set of values."""

    def __init__(self, source, shape, flags=None, strict: bool = False, threads: int = 0):
        super().__init__(source, shape)
        self.library_path = build(source, flags, strict)
        self.ffi, self.lib = load_library(self.library_path,
                                          api_declarations(source.files[source.main_file.replace(".c", ".h")]))
        self.real_c = {"float64": "double", "float32": "float", "float16": "uint16_t", "uint16": "uint16_t"}[np.dtype(self.dtype).name]
        # a thread count beyond the cap (also from OMP_NUM_THREADS) would crash libgomp
        self.threads = self._fn("set_threads")(resolve_threads(int(threads)))
        # non-temporal stores when the two buffers do not fit in the last-level cache
        self.streaming_stores = self._fn("set_streaming_stores")(int(streaming_pays(self.layout.size, self.dtype)))
        self._sizes = () if source.spec.compile_time_sizes else self.shape
        self._whole = None     # the whole-lattice region struct, made on first use
        self._last_par = None  # (key, params struct) of the last call: reused while the values stay
        self._propagate_par = None  # propagate's params record: the boundaries only (_boundary_par)

    def _fn(self, name):
        self.calls[name] += 1
        return getattr(self.lib, f"{self.prefix}_{name}")

    def provenance(self) -> dict:
        out = super().provenance()
        out["streaming_stores"] = bool(self.streaming_stores)
        return out

    def _ptr(self, a: np.ndarray):
        if a.dtype != self.dtype or not a.flags.c_contiguous or a.size != self.layout.size:
            raise ValueError(f"a lattice buffer of this program is a contiguous {np.dtype(self.dtype)} array of "
                             f"{self.layout.size} elements (allocate())")
        return self.ffi.cast(f"{self.real_c} *", a.ctypes.data)

    def _doubles(self, arrays):
        """Contiguous float64 arrays of the lattice's shape (numbers broadcast) and their pointers; the
        kernels only read them, so an array that is one already is passed as it is (no copy)."""
        arrays = [np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=np.float64), self.shape)) for a in arrays]
        return arrays, [self.ffi.cast("double *", a.ctypes.data) for a in arrays]

    # --- bodies: the link kernels (lbgen.simulation.bodies) --------------------------------------
    def body_upload(self, slot, weight, dirs, chunk) -> dict:
        links = body_arrays(self, slot, weight, dirs, chunk)
        cast = self.ffi.cast
        links["args"] = (cast("const int64_t *", links["slot"].ctypes.data),
                         cast("const float *" if links["weight"].dtype == np.float32 else "const double *",
                              links["weight"].ctypes.data),      # the arithmetic's (the storage's may be narrower)
                         cast("const int *", links["dir"].ctypes.data), cast("const int64_t *", links["chunk"].ctypes.data),
                         links["nchunk"], cast(f"{self.real_c} *", links["value"].ctypes.data),
                         cast("double *", links["partial"].ctypes.data))
        return links

    def body_links(self, f, links: dict, put: bool = True) -> None:
        self._fn("body_links")(self._ptr(f), *links["args"])
        if put:
            self._fn("body_put")(self._ptr(f), links["args"][0], links["args"][5], links["n"])

    def body_partial(self, links: dict) -> np.ndarray:
        return links["partial"].copy()

    def halo(self, f):
        self._fn("halo")(self._ptr(f), *self._sizes)

    def slab_program(self, width: int) -> "CProgram":
        """These kernels on ``width`` planes of X (the lattice's other sizes the same): the same
        loaded library, whose settings (threads, streaming stores) are left as they are -- a staging
        lattice whose init kernel sets a lattice's populations one slab at a time
        (``lbgen.simulation.slabs``)."""
        if self.spec.compile_time_sizes:
            raise ValueError("kernels with compile-time sizes run on their own lattice only")
        other = copy.copy(self)
        Program.__init__(other, self.source, (int(width), *self.shape[1:]))
        other._sizes, other._whole, other._last_par, other._propagate_par = other.shape, None, None, None
        return other

    def _region(self, region=None):
        """The kernels' `<prefix>_region` struct: None is the whole lattice, else (x0, x1, y0, y1),
        interior sites x0 <= x < x1, y0 <= y < y1 (3D: whole Z lines), checked here (the kernels
        trust it)."""
        if region is None and self._whole is not None:
            return self._whole
        x0, x1, y0, y1 = self._check_region(region)
        fields = {"x0": x0, "x1": x1, "y0": y0, "y1": y1} | ({"z0": 0, "z1": self.lz} if self.D == 3 else {})
        reg = self.ffi.new(f"{self.prefix}_region *", fields)
        if region is None:
            self._whole = reg
        return reg

    def propagate(self, prv, nxt, region=None):
        """Pull streaming of the region; the bounce-back boundaries (``set_boundaries``) applied by
        the kernel itself (it reads only their fields of the params record)."""
        reg = self._region(region)
        self._fn("propagate")(self._ptr(prv), self._ptr(nxt), *self._sizes, reg, self._boundary_par())

    def _boundary_par(self):
        """The params record propagate reads: the boundaries, no collision parameters (0)."""
        if self._propagate_par is None:
            self._propagate_par = self._par({n: 0.0 for n in self.parameter_names})
        return self._propagate_par

    def _par(self, params: dict, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), sides=(True, True),
             tau_wall=1.0):
        """The kernels' `<prefix>_params` struct (kept alive by the returned cffi object): the
        collision parameters (checked by name), the boundaries, with walls also the wall fields
        (tau_wall: the wall rows' relaxation time)."""
        values = self._param_values(params)
        sides = self._check_sides(sides)
        tau_wall = check_tau_wall(tau_wall)
        # exact values as the key (hex: -0.0 and 0.0 differ, NaN equals itself)
        key = (tuple(float(v).hex() for v in (*values, T_bottom, T_top, tau_wall)), bool(adiabatic[0]),
               bool(adiabatic[1]), sides)
        if self._last_par is not None and self._last_par[0] == key:   # a run passes the same values every step
            return self._last_par[1]
        fields = dict(zip(self.parameter_names, values))
        if self.bounds is not None:
            walls, lids, lid, solid = self.bounds
            fields.update(walls=walls, lids=lids, lid=lid.tolist(),
                          solid=self.ffi.NULL if solid is None else self.ffi.cast("const uint8_t *", solid.ctypes.data))
        if self.open_bounds is not None:
            inlets, outlets, outflows, slips, rho_out, inflow = self.open_bounds
            fields.update(inlets=inlets, outlets=outlets, outflows=outflows, slips=slips, rho_out=rho_out.tolist(),
                          inflow=self.ffi.NULL if inflow is None else self.ffi.cast("const double *",
                                                                                   inflow.ctypes.data))
        if self.spec.walls:
            bottom, top = sides
            fields.update(T_bottom=float(T_bottom), T_top=float(T_top), adiabatic_bottom=int(bool(adiabatic[0])),
                          adiabatic_top=int(bool(adiabatic[1])), wall_bottom=int(bottom), wall_top=int(top),
                          tau_wall=tau_wall)
        elif sides != (True, True) or tau_wall != 1.0:
            self._require_walls()
        par = self.ffi.new(f"{self.prefix}_params *", fields)
        self._last_par = (key, par)
        return par

    def _bounds_changed(self) -> None:
        self._last_par = self._propagate_par = None     # the params record carries the boundaries

    def collide(self, src, dst, sides=(True, True), region=None, tau_wall=1.0, **params):
        """With walls, the rows next to the walls of `sides` (bottom, top) relax with tau = tau_wall."""
        reg, par = self._region(region), self._par(params, sides=sides, tau_wall=tau_wall)
        self._fn("collide")(self._ptr(src), self._ptr(dst), *self._sizes, reg, par)

    def fused(self, prv, nxt, region=None, sides=(True, True), tau_wall=1.0, **params):
        """With walls, the rows next to the walls of `sides` (bottom, top) relax with tau = tau_wall (no bc)."""
        reg, par = self._region(region), self._par(params, sides=sides, tau_wall=tau_wall)
        self._fn("fused")(self._ptr(prv), self._ptr(nxt), *self._sizes, reg, par)

    def aa_even(self, f, **params):
        """In-place step from the natural state (fresh halo): the AA pattern's even step."""
        if self._fn("aa_even")(self._ptr(f), *self._sizes, self._par(params)):
            raise MemoryError("aa_even: no memory for the densities of the sites next to the lids")

    def aa_odd(self, f, **params):
        """In-place step back to the natural state: the AA pattern's odd step."""
        if self._fn("aa_odd")(self._ptr(f), *self._sizes, self._par(params)):
            raise MemoryError("aa_odd: no memory for the densities of the sites next to the lids")

    def aa_fold(self, f):
        """After aa_even: what it stored into the halo, into the lattice sites it stands for."""
        self._fn("aa_fold")(self._ptr(f), *self._sizes)

    def aa_normalise(self, f):
        """An odd-parity buffer (after aa_even, aa_fold) as the natural state; solid cells 0."""
        self._fn("aa_normalise")(self._ptr(f), *self._sizes, self._boundary_par())

    def fused_tb(self, prv, nxt, depth: int, walls=None, sides=(True, True), **params):
        """`depth` steps in one sweep (temporal blocking): prv (fresh halo) -> nxt (interior), the
        bits of `depth` x (halo, fused).  With walls, a side off in `sides` is periodic (see the header)."""
        depth = self._check_time_block(depth)
        refusal = time_block_walls_refusal(self.D, self.spec.wall_axis) if self.spec.walls else None
        if refusal:
            raise ValueError(f"fused_tb: {refusal}")
        if self.spec.walls:
            if walls is None:
                raise ValueError("these kernels were generated with walls: fused_tb needs walls=Walls(...)")
            par = self._par(params, walls.T_bottom, walls.T_top, (walls.adiabatic_bottom, walls.adiabatic_top), sides,
                            wall_tau(walls))
        else:
            if walls is not None:
                self._require_walls()
            par = self._par(params, sides=sides)
        status = self._fn("fused_tb")(self._ptr(prv), self._ptr(nxt), *self._sizes, depth, par)
        if status == 3:
            raise ValueError("fused_tb: these bounce-back boundaries or open faces (set_boundaries) are not time-blocked; "
                             "step with fused")
        if status == 4:
            raise ValueError("fused_tb: the walls' axis is not time-blocked (status 4)")
        if status == 1:
            raise MemoryError(f"fused_tb: no memory for the per-thread ring of {depth - 1} time levels")
        if status:
            raise ValueError(f"fused_tb refused depth {depth}")

    def bc(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), ax=0.0, ay=0.0, sides=(True, True),
           region=None, az=0.0):
        self._require_walls()
        # the bc reads the force and the wall fields; the collision parameters are not its own
        params = {n: 0.0 for n in self.parameter_names} | {"ax": ax, "ay": ay} | ({"az": az} if self.D == 3 else {})
        reg, par = self._region(region), self._par(params, T_bottom, T_top, adiabatic, sides)
        self._fn("bc")(self._ptr(prv), self._ptr(nxt), *self._sizes, reg, par)

    def fused_walls(self, prv, nxt, T_bottom=1.0, T_top=1.0, adiabatic=(False, False), sides=(True, True),
                    region=None, tau_wall=1.0, **params):
        self._require_walls()
        reg, par = self._region(region), self._par(params, T_bottom, T_top, adiabatic, sides, tau_wall)
        self._fn("fused_walls")(self._ptr(prv), self._ptr(nxt), *self._sizes, reg, par)

    def init_equilibrium(self, f, rho, *velocity_and_T, force=None):
        _, ptrs = self._doubles((rho, *velocity_and_T))
        self._fn("init_equilibrium")(self._ptr(f), *self._sizes, *ptrs, *self._force(force))

    def fields(self, f, force=None, native=False):
        single = native and self.codec.arith_dtype == np.float32     # fields_real: float arrays (in double: fields')
        out = [np.empty(self.shape, dtype=np.float32 if single else np.float64) for _ in range(self.D + 2)]
        ptrs = [self.ffi.cast("float *" if single else "double *", a.ctypes.data) for a in out]
        self._fn("fields_real" if single else "fields")(self._ptr(f), *self._sizes, *ptrs, *self._force(force))
        return fields_dict(out, self.D, native)

    def diagnostics(self, f, force=None, skip=None):
        """The kernel's lines; the sites of ``skip`` (default: the boundaries' solid cells) left out."""
        from lbgen.codegen.diagnostics import ND, ND3
        out = np.empty((int(np.prod(self.shape[1:])), ND if self.D == 2 else ND3))
        mask = self._skip_mask(skip)
        self._fn("diagnostics")(self._ptr(f), *self._sizes,
                                self.ffi.NULL if mask is None else self.ffi.cast("const uint8_t *", mask.ctypes.data),
                                self.ffi.cast("double *", out.ctypes.data), *self._force(force))
        return out

    def get_region(self, f, cells) -> np.ndarray:
        """The populations of a block of cells (x0, x1, y0, y1[, z0, z1]), halo cells included, as a
        (Q, W, H[, D]) float64 array (the get_region kernel)."""
        reg, shape = self._cells(cells)
        out = np.empty(shape)
        self._fn("get_region")(self._ptr(f), self.ffi.cast("double *", out.ctypes.data), *self._sizes, reg)
        return out

    def put_region(self, f, cells, values) -> None:
        """Write a (Q, W, H[, D]) block of populations into the cells (x0, x1, y0, y1[, z0, z1]), every
        stored copy (the put_region kernel)."""
        reg, shape = self._cells(cells)
        values = np.ascontiguousarray(values, dtype=np.float64)
        if values.shape != shape:
            raise ValueError(f"put_region: values of shape {values.shape}; the cells {tuple(cells)} take {shape}")
        self._fn("put_region")(self._ptr(f), self.ffi.cast("double *", values.ctypes.data), *self._sizes, reg)

    def _cells(self, cells):
        """A block of cells (a low and a high bound per axis) within the padded lattice, checked: (the
        region record, the block's (Q, ...) shape)."""
        h, names = self.vs.max_hop, [f"{a}{i}" for a in "xyz"[:self.D] for i in "01"]
        try:
            bounds = [int(v) for v in cells]
        except (TypeError, ValueError):
            bounds = []
        if len(bounds) != 2 * self.D:
            raise ValueError(f"cells={cells!r} must be {2 * self.D} integers ({', '.join(names)})")
        pairs = list(zip(bounds[::2], bounds[1::2]))
        if not all(-h <= a <= b <= n + h for (a, b), n in zip(pairs, self.shape)):
            raise ValueError(f"cells {tuple(bounds)} outside the padded lattice: allowed " + ", ".join(
                f"{-h} <= {a}0 <= {a}1 <= {n + h}" for a, n in zip("xyz", self.shape)))
        reg = self.ffi.new(f"{self.prefix}_region *", dict(zip(names, bounds)))
        return reg, (self.vs.Q, *(b - a for a, b in pairs))

    def check(self, *shape) -> tuple:
        """The emitted <prefix>_check: (status, message)."""
        buf = self.ffi.new("char[]", 256)
        status = self._fn("check")(*(int(n) for n in shape), buf, 256)
        return int(status), self.ffi.string(buf).decode()


def compile(source, *shape, flags=None, strict: bool = False, threads: int = 0) -> CProgram:
    """The C kernels of a source for a lattice (lx, ly) or (lx, ly, lz)."""
    return CProgram(source, shape, flags=flags, strict=strict, threads=threads)
