"""What determines the emitted code, and the rules of its choices -- without sympy or Jinja.

``KernelSpec`` (validated before anything is generated), the backends, precisions, the
preferred and default cluster lengths, the temporal-blocking depth and the ``KernelSource``
value a rendering produces.  Command lines, run descriptions and backends import these
names from here; ``lbgen.codegen.render`` turns a spec into source text.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from numbers import Integral
from typing import Dict, Optional, Tuple

from lbgen.codegen.storage import ARITHMETIC, NATURAL, STORAGES, check_storage, storage_format
from lbgen.codegen.layouts import CLUSTERED, LAYOUTS, LayoutError, check_halo_y, check_vl, tag as layout_tag
from lbgen.model.catalog import AXES, DEFAULT_SCHEME, DEFAULT_VELOCITY_SET, MODEL_SETS, SCHEMES, run_set
from lbgen.model.operators import OPERATOR_RECORDS, OPERATORS

BACKENDS = ("c", "opencl", "cuda")
#: the dimensions each backend generates kernels for
KERNEL_DIMENSIONS = {"c": (2, 3), "opencl": (2, 3), "cuda": (2, 3)}
#: preferred cluster lengths per backend, fastest first (measured with `lbgen bench`; see
#: README: default layout/VL)
PREFERRED_VL = {"c": (8, 16, 4, 32, 2), "opencl": (32, 16, 8, 64, 4), "cuda": (32, 16, 64, 8, 4)}
#: cluster length when a clustered layout is asked for without one: one AVX-512 vector of
#: doubles on the CPU, one warp on GPUs
DEFAULT_VL = {backend: vls[0] for backend, vls in PREFERRED_VL.items()}
#: deepest temporal blocking (time steps per sweep) of the C backend's fused_tb kernel
MAX_TIME_BLOCK = 8


def time_block_value(value, allow_auto: bool = True):
    """A temporal-blocking depth: an integer 1..MAX_TIME_BLOCK (1: one step per sweep), or
    'auto' (tuned); anything else raises ValueError naming it and what is allowed."""
    if allow_auto and isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, Integral) or not 1 <= value <= MAX_TIME_BLOCK:
        raise ValueError(f"time block {value!r} is not {'auto or ' if allow_auto else ''}an integer from 1 to "
                         f"{MAX_TIME_BLOCK} (time steps per sweep; 1 is no temporal blocking)")
    return int(value)


def time_block_walls_refusal(dimension: int, axis: Optional[str]) -> Optional[str]:
    """Why the temporal blocking (fused_tb) cannot take thermal walls across ``axis`` (None: the
    dimension's default, y in 2D and z in 3D), in words; None where it can: across the last axis,
    which each unit of the blocked sweep (2D: the Y column of one x, 3D: the Z line of one (x, y))
    holds whole, so its bc is the unit's own."""
    if axis is None or axis == "xyz"[dimension - 1]:
        return None
    if dimension == 2:
        return ("the 2D thermal walls across x are not time-blocked: the blocked sweep's unit is the Y column of "
                "one x and the wavefront walks along x, while their bc needs the x columns next to each wall at "
                "once; put the walls across y (wall_axis None, --wall-axis y) or step with time block 1 (fused_walls)")
    how = "the wavefront walks along x" if axis == "x" else "y is cut into bands"
    return (f"the 3D thermal walls across {axis} are not time-blocked: the blocked sweep's unit is the Z line of one "
            f"(x, y) and {how}, while their bc needs the {axis} planes next to each wall at once; put the walls "
            f"across z (wall_axis None, --wall-axis z) or step with time block 1 (fused_walls)")
#: "mixed": populations stored as float, arithmetic in double
PRECISIONS = ("double", "single", "mixed")

#: the streaming patterns: "pull" (two population buffers, the state pulled from one into the
#: other every step) and "inplace" (one buffer, the AA pattern of Bailey et al. 2009: an even step
#: that reads and writes the neighbours' slots, an odd step that reads and writes the site's own;
#: docs/architecture.md, "In-place streaming")
STREAMING = ("pull", "inplace")
#: the backends whose kernels stream in place
INPLACE_BACKENDS = ("c", "opencl", "cuda")


def population_buffers(streaming: str) -> int:
    """How many population buffers a lattice of this streaming pattern holds (2 pull, 1 in place)."""
    return 1 if streaming == "inplace" else 2


def storage_bytes(precision: str, storage: Optional[str] = None) -> int:
    """Bytes of one stored population (``lbgen.codegen.storage``: the named storage, else the
    precision's own: 8 in double, 4 in single and mixed)."""
    return storage_format(precision, storage).nbytes


def arithmetic_bytes(precision: str) -> int:
    """Bytes of one value of the arithmetic (``lbgen.codegen.storage.ARITHMETIC``): 8 in double and
    mixed, 4 in single (a run's fields are held so: ``Simulation.fields(native=True)``)."""
    return STORAGES[ARITHMETIC[precision]].nbytes

#: parameters of each collision operator as they appear in the kernel API, in order (from the
#: operator records of lbgen.model.operators)
OPERATOR_PARAMETERS = {name: op.kernel_arguments for name, op in OPERATOR_RECORDS.items()}


#: backends whose short 3D Z lines default to SoA: a 3D lattice there takes CAoSoA (the preferred
#: VL) only from CLUSTER_ROWS_3D cluster rows of Z on, since the 2 x halo cluster rows it pads Z
#: with cost more on shorter lines (docs/performance-history.md, "3D default layout, again": D3Q19 fused
#: and fused_tb depth 3, 2 threads, CAoSoA VL 8 against SoA: 0.80x / 0.92x at 32^3 (4 rows),
#: 1.06x / 1.17x at 48^3, 1.17x / 1.21x at 64^3, 1.54x / 1.45x at 128^3; D3Q27 64^3 1.45x, D3Q39
#: 96^3 1.65x fused)
SOA_IN_3D = ("c",)
CLUSTER_ROWS_3D = 6
#: backends whose 3D lattices on a CPU device (OpenCL on Intel's CPU runtime or PoCL) default to
#: SoA: VL 32 (a warp's lanes on a GPU) ranked last but one or last of ten there (D3Q19 single, 128^3,
#: `lbgen tune --backend opencl`, 2 vCPUs; docs/performance.md, "OpenCL on CPU runtimes")
SOA_ON_CPU_DEVICES_3D = ("opencl",)


def default_layout(backend: str, ly: int, halo: int, dimension: int = 2, walls_along_depth: bool = False,
                   cpu_device: bool = False, thermal_walls: bool = False) -> Tuple[str, Optional[int]]:
    """The fastest valid choice: CAoSoA with the backend's preferred VL, else SoA.  In 3D
    (``dimension`` 3; ``ly`` is then LZ, the clustered axis) the backends of ``SOA_IN_3D`` take
    SoA unless Z holds CLUSTER_ROWS_3D or more whole clusters of their first preferred VL, or the
    lattice has walls across Z (``walls_along_depth``), where every SoA Z line meets the walls and
    takes the boundary path, a cluster row only next to them (D3Q19 cavity, walls on x, y, z,
    128^3, time block 3: SoA 44 against CAoSoA VL 8 75 MLUPS; docs/performance-history.md).

    A 3D lattice of a backend of ``SOA_ON_CPU_DEVICES_3D`` on a CPU device (``cpu_device``) takes SoA.
    A 3D lattice between thermal walls (``thermal_walls``: the thermal sets' ``fused_walls``) takes
    SoA on the backends of ``SOA_IN_3D``, whatever its depth: D3Q39 96^3 between walls across z,
    1 thread CPU time, SoA 1.78x [1.72-1.80] CAoSoA VL 8's rate (BGK), 2 threads 0.31 / 0.28 of the
    copy against 0.16 / 0.18 (BGK / regularized; Xeon AVX-512, 2026-11-27, docs/performance.md).

    (A choice stored by `lbgen tune` for this machine and lattice takes precedence.)

    On the CPU CAoSoA with VL = 8 (one AVX-512 vector of doubles) is the best combined
    propagate + collide layout in 2D (paper Table 2; measured with `lbgen bench`) and in 3D from
    6 cluster rows on; shorter 3D Z lines ran faster in the unclustered SoA (unit stride along
    Z, no cluster halo rows); on GPUs a cluster of 32 lanes maps to one warp.  When no preferred
    VL divides LY (in 3D: LZ) with LY/VL >= the halo width the unclustered SoA layout is used.
    """
    if dimension not in (2, 3):
        raise ValueError(f"default_layout: dimension {dimension!r}; allowed: 2 or 3")
    if dimension == 3 and cpu_device and backend in SOA_ON_CPU_DEVICES_3D:
        return "soa", None
    if dimension == 3 and thermal_walls and backend in SOA_IN_3D:
        return "soa", None
    if dimension == 3 and backend in SOA_IN_3D and not walls_along_depth:
        vl = PREFERRED_VL[backend][0]
        if ly % vl or ly // vl < CLUSTER_ROWS_3D:
            return "soa", None
    for vl in PREFERRED_VL.get(backend, (8,)):
        if ly % vl == 0 and ly // vl >= halo:
            return "caosoa", vl
    return "soa", None


def choose_layout(backend: str, depth: int, halo: int, layout: Optional[str] = None,
                  vl: Optional[int] = None, dimension: int = 2, walls_along_depth: bool = False,
                  cpu_device: bool = False, thermal_walls: bool = False) -> Tuple[str, Optional[int]]:
    """The layout and VL a lattice gets when the caller leaves either open: ``default_layout``
    for a missing layout (its VL unless one is given), the backend's preferred VL that fits
    (else 1) for a clustered layout given without one; VL is None for the unclustered layouts.
    ``depth``: the extent of the clustered axis (LY in 2D, LZ in 3D); ``walls_along_depth``:
    walls across it; ``cpu_device``: the kernels run on a CPU device; ``thermal_walls``: the thermal
    walls' kernels (``default_layout``)."""
    if layout is None:
        layout, default_vl = default_layout(backend, depth, halo, dimension, walls_along_depth, cpu_device,
                                            thermal_walls)
        vl = vl if vl is not None else default_vl
    if layout in CLUSTERED and vl is None:
        vl = default_layout(backend, depth, halo)[1] or 1
    return layout, (vl if layout in CLUSTERED else None)


class SpecError(ValueError):
    """An invalid kernel specification (raised before any code is generated)."""


#: the largest GPU block / work-group size (CUDA and common OpenCL devices)
MAX_BLOCK_SIZE = 1024

PREFIX_RULE = ("a prefix starts with an ASCII letter, holds only ASCII letters, digits and single underscores, "
               "does not end with an underscore and is not a C or C++ keyword (every emitted name is "
               "<prefix>_<name> or <PREFIX>_<NAME>: C reserves names that start with an underscore and C++ "
               "(CUDA) names that hold a double underscore, and the prefix itself names the files)")
#: the keywords of C (C11/C23) and C++ (CUDA): refused as prefixes
C_KEYWORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t
    class compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield
    decltype default delete do double dynamic_cast else enum explicit export extern false float for friend
    goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private
    protected public register reinterpret_cast requires restrict return short signed sizeof static
    static_assert static_cast struct switch template this thread_local throw true try typedef typeid typename
    typeof typeof_unqual union unsigned using virtual void volatile wchar_t while xor xor_eq
""".split())
_PREFIX = re.compile(r"[A-Za-z](?:_?[A-Za-z0-9])*")


def check_prefix(prefix) -> str:
    """The one rule of a symbol prefix (PREFIX_RULE); anything else raises SpecError naming the
    value and the rule."""
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix) or prefix in C_KEYWORDS:
        raise SpecError(f"prefix {prefix!r} is not allowed: {PREFIX_RULE}")
    return prefix

@dataclass(frozen=True)
class KernelSpec:
    """Everything that determines the emitted code."""

    backend: str = "c"
    layout: str = "caosoa"
    vl: Optional[int] = None      # csoa/caosoa: None means the backend's DEFAULT_VL
    precision: str = "double"
    collision: str = "bgk"
    lx: Optional[int] = None      # compile-time sizes when both given
    ly: Optional[int] = None
    velocity_set: str = DEFAULT_VELOCITY_SET
    streaming_stores: bool = True
    block_size: int = 0           # GPU work-group / block size (0: backend default)
    prefix: str = "lbgen"
    walls: bool = False           # thermal walls at bottom and top: bc kernel, tau = 1 rows
    wall_scheme: str = DEFAULT_SCHEME   # bc scheme with walls: lbgen.model.walls.SCHEMES
    halo_y: Optional[int] = None  # C, 2D: Y halo rows (cluster rows), >= the set's hop; None: the hop
    storage: Optional[str] = None  # populations' storage (lbgen.codegen.storage); None: the precision's own
    streaming: str = "pull"       # STREAMING: "pull" (two buffers) or "inplace" (one, the AA pattern)
    wall_axis: Optional[str] = None  # thermal walls: the axis they stand across ('x'; 3D also 'y'); None: the last (y in 2D, z in 3D)
    # the sets whose hops are longer than 1 (the thermal sets): also emit the open faces' rules
    # (lbgen.simulation.open_faces; open_face_rules); the hop-1 sets always carry theirs
    open_faces: bool = False

    @property
    def compile_time_sizes(self) -> bool:
        return self.lx is not None and self.ly is not None

    @property
    def tag(self) -> str:
        return layout_tag(self.layout, self.vl)

    @property
    def open_face_rules(self) -> bool:
        """Whether the kernels carry the open faces' rules (inlets, outlets, outflows, slips:
        lbgen.simulation.open_faces): always on a set whose hops are 1, with ``open_faces`` on the
        others (their long-hop rules make every kernel larger and slower to compile)."""
        entry = MODEL_SETS.get(str(self.velocity_set).lower())
        return bool(self.open_faces) or (entry is not None and entry.max_hop == 1)

    @property
    def dimension(self) -> int:
        """D, from the velocity set (``SetEntry.D``: the length of its shells); 2 for unknown names
        (which ``validate`` refuses)."""
        entry = MODEL_SETS.get(str(self.velocity_set).lower())
        return entry.D if entry is not None else 2

    def validate(self, lx: Optional[int] = None, ly: Optional[int] = None) -> "KernelSpec":
        """Check every field; with sizes, also the layout rules.  Returns a normalised spec."""
        if self.backend not in BACKENDS:
            raise SpecError(f"unknown backend {self.backend!r}; choose one of {', '.join(BACKENDS)}")
        if self.layout not in LAYOUTS:
            raise SpecError(f"unknown layout {self.layout!r}; choose one of {', '.join(LAYOUTS)}")
        if self.precision not in PRECISIONS:
            raise SpecError(f"unknown precision {self.precision!r}; choose one of {', '.join(PRECISIONS)}")
        if self.collision not in OPERATORS:
            raise SpecError(f"unknown collision operator {self.collision!r}; choose one of {', '.join(OPERATORS)}")
        entry = MODEL_SETS.get(str(self.velocity_set).lower())
        if entry is not None:
            try:
                OPERATOR_RECORDS[self.collision].check_set(entry.label, entry.order >= 3)
                OPERATOR_RECORDS[self.collision].check_walls(bool(self.walls))
            except ValueError as e:
                raise SpecError(str(e)) from None
        self._check_streaming()
        if not isinstance(self.open_faces, bool):
            raise SpecError(f"open_faces={self.open_faces!r}: True (emit the open faces' rules for a set whose hops "
                            f"are longer than 1) or False")
        if self.open_faces and entry is not None:
            if entry.max_hop == 1:      # its kernels always carry them: one spec, one cache entry
                return _replace(self, open_faces=False).validate(lx, ly)
            if self.walls:
                raise SpecError("open_faces=True (--open-faces) with walls=True (--walls): the thermal walls' kernels "
                                "take no open faces; leave one of them out")
        if self.storage is not None:
            spec = self._normalised_storage()
            if spec is not self:
                return spec.validate(lx, ly)
        if isinstance(self.block_size, bool) or not isinstance(self.block_size, int) or \
                not 0 <= self.block_size <= MAX_BLOCK_SIZE:
            raise SpecError(f"block size {self.block_size!r}: allowed 0 (the backend's default) or 1 to "
                            f"{MAX_BLOCK_SIZE} (GPU work-group / block size)")
        if self.wall_scheme not in SCHEMES:
            raise SpecError(f"unknown wall scheme {self.wall_scheme!r}; choose one of {', '.join(SCHEMES)}")
        if self.wall_axis is not None:
            axes = AXES[:self.dimension]
            if not self.walls:
                raise SpecError(f"wall_axis={self.wall_axis!r} places the thermal walls (walls=True, --walls); "
                                f"add them or leave the axis unset")
            if not isinstance(self.wall_axis, str) or self.wall_axis not in axes:
                raise SpecError(f"wall_axis={self.wall_axis!r}: the thermal walls of a {self.dimension}D set stand "
                                f"across one of {', '.join(axes)}")
            if self.wall_axis == axes[-1]:      # the default, spelled out: one spec, one cache entry
                return _replace(self, wall_axis=None).validate(lx, ly)
        if self.wall_scheme != DEFAULT_SCHEME and not self.walls:
            raise SpecError(f"wall scheme {self.wall_scheme!r} applies to the bc kernel only: add walls "
                            f"(--walls) or leave the scheme at {DEFAULT_SCHEME!r}")
        check_prefix(self.prefix)
        if (self.lx is None) != (self.ly is None):
            raise SpecError("give both lx and ly for compile-time sizes, or neither for run-time sizes")
        if self.dimension == 3:
            self._check_3d()
            if self.halo_y is not None:
                raise SpecError(f"halo_y={self.halo_y!r} (--halo-y) applies to 2D kernels only")
        else:
            try:
                run_set(self.velocity_set)           # a known set of a dimension the kernels handle
            except ValueError as e:
                raise SpecError(str(e)) from None
        if self.velocity_set != self.velocity_set.lower():
            return _replace(self, velocity_set=self.velocity_set.lower()).validate(lx, ly)
        if self.dimension == 3:
            return self._validate_3d()
        from lbgen.codegen.layouts import make_layout
        from lbgen.model.velocity_set import velocity_set
        from lbgen.model.walls import min_ly_walls, wall_row_count
        vs = velocity_set(self.velocity_set)
        spec = self
        clustered = self.layout in CLUSTERED
        if not clustered and self.vl not in (None, 1):
            raise SpecError(f"layout {self.layout} takes no VL (got VL={self.vl}); VL applies to csoa and caosoa")
        if isinstance(self.vl, Integral) and type(self.vl) is not int:
            spec = _replace(self, vl=int(self.vl))
            return spec.validate(lx, ly)
        if clustered:
            if self.vl is None:
                return _replace(self, vl=DEFAULT_VL[self.backend]).validate(lx, ly)
            try:
                check_vl(self.vl)
            except LayoutError as e:
                raise SpecError(str(e)) from None
        else:
            spec = _replace(self, vl=None)
        if self.halo_y is not None:
            if self.backend != "c":
                raise SpecError(f"halo_y={self.halo_y!r} (--halo-y): a wider Y halo is emitted for the C backend "
                                f"only, not {self.backend!r}")
            try:
                hy = check_halo_y(self.halo_y, vs.max_hop)
            except LayoutError as e:
                raise SpecError(str(e)) from None
            if hy == vs.max_hop:     # the default, spelled out: one spec, one cache entry
                return _replace(spec, halo_y=None).validate(lx, ly)
            if type(self.halo_y) is not int:
                return _replace(spec, halo_y=hy).validate(lx, ly)
        check_lx, check_ly = (lx, ly) if lx is not None else (self.lx, self.ly)
        across = check_lx if self.wall_axis == "x" else check_ly       # the extent across the walls
        if self.walls and across is not None and across < min_ly_walls(vs):
            A = "X" if self.wall_axis == "x" else "Y"
            raise SpecError(f"L{A}={across} is too small for walls: the {wall_row_count(vs)} wall rows of "
                            f"{vs.name} at each side and the bulk row next to them need L{A} >= {min_ly_walls(vs)}")
        if check_lx is not None:
            try:
                make_layout(self.layout, vs.Q, (check_lx, check_ly), spec.vl, halo=vs.max_hop, halo_y=self.halo_y)
            except LayoutError as e:
                raise SpecError(str(e)) from None
        return spec

    def _check_streaming(self) -> None:
        """The streaming pattern: one of STREAMING; in place only where its kernels are generated."""
        if self.streaming not in STREAMING:
            raise SpecError(f"unknown streaming {self.streaming!r}; choose one of {', '.join(STREAMING)}")
        if self.streaming != "inplace":
            return
        if self.backend not in INPLACE_BACKENDS:
            raise SpecError(f"streaming 'inplace' (one population buffer, the AA pattern) is generated for the "
                            f"{', '.join(INPLACE_BACKENDS)} backends, not {self.backend!r}; use "
                            f"streaming 'pull' there")
        if self.walls:
            raise SpecError("streaming 'inplace' does not take the thermal walls (walls=True, --walls: their bc "
                            "kernel reads the pulled populations of a second buffer); use streaming 'pull'")

    def _normalised_storage(self) -> "KernelSpec":
        """The one spec of a storage choice: the precision's own storage is None, double
        arithmetic with float storage is precision 'mixed'; refused in words: an unknown storage,
        one wider than the arithmetic."""
        try:
            check_storage(self.storage, self.precision)
        except ValueError as e:
            raise SpecError(str(e)) from None
        if self.storage == NATURAL[self.precision]:
            return _replace(self, storage=None)
        if self.precision == "double" and self.storage == "fp32":
            return _replace(self, precision="mixed", storage=None)
        return self

    def _check_3d(self) -> None:
        """What a 3D set's kernels do not take (yet), refused in words."""
        name = str(self.velocity_set).lower()
        if 3 not in KERNEL_DIMENSIONS[self.backend]:
            able = [b for b, dims in KERNEL_DIMENSIONS.items() if 3 in dims]
            raise SpecError(f"{name} is a 3D set: 3D kernels are generated for the {' and '.join(able)} backend only "
                            f"so far, not {self.backend!r}; use "
                            f"--backend c / backend='c'")
        if self.walls:
            entry = MODEL_SETS.get(name)
            if entry is not None and entry.isothermal:
                raise SpecError(f"{name} is an isothermal 3D set: walls=True (--walls) adds the thermal walls' bc "
                                f"kernel (D3Q39, D3Q103); {name} takes its walls at run time (bounce-back walls per "
                                f"axis, moving lids, a voxel mask: the boundaries argument of propagate, collide "
                                f"and fused)")
            if self.wall_scheme != DEFAULT_SCHEME:
                raise SpecError(f"wall scheme {self.wall_scheme!r} is the production code's 2D bc; the 3D thermal "
                                f"walls of {name} take the {DEFAULT_SCHEME!r} scheme")
        if self.lx is not None or self.ly is not None:
            raise SpecError(f"{name} is a 3D set: compile-time sizes (lx, ly; --lx, --ly) are 2D only; 3D kernels "
                            f"take lx, ly, lz at run time")

    def _validate_3d(self) -> "KernelSpec":
        """The normalised 3D spec: a VL for clustered layouts, none for the others (lattice
        sizes are checked by ``layouts.make_layout`` and the emitted ``<prefix>_check``)."""
        if self.layout in CLUSTERED:
            if self.vl is None:
                return _replace(self, vl=DEFAULT_VL[self.backend])._validate_3d()
            try:
                vl = check_vl(self.vl)
            except LayoutError as e:
                raise SpecError(str(e)) from None
            return self if vl == self.vl and type(self.vl) is int else _replace(self, vl=vl)
        if self.vl not in (None, 1):
            raise SpecError(f"layout {self.layout} takes no VL (got VL={self.vl}); VL applies to csoa and caosoa")
        return self if self.vl is None else _replace(self, vl=None)


def _replace(spec: KernelSpec, **kw) -> KernelSpec:
    d = asdict(spec)
    d.update(kw)
    return KernelSpec(**d)


@dataclass(frozen=True)
class KernelSource:
    spec: KernelSpec
    files: Dict[str, str]                 # file name -> text
    main_file: str                        # the file a backend compiles
    entry_points: Tuple[str, ...]
    flops: Dict[str, int] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.files[self.main_file]

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + self.files[name].encode() + b"\0")
        return h.hexdigest()
