"""From a kernel spec to source text: sympy assignments printed as C99, Jinja templates.

The model hands over assignment lists; this module prints them with sympy's C printer
(float or double literals, integer powers as products) and renders the templates of one
backend dialect.  Output: a ``KernelSource`` value (files, entry points, the parameters
that made it, a content hash).  Templates know no sympy, the model knows no C.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Dict, Optional, Tuple

import jinja2
import numpy as np
import sympy

from lbgen import __version__
from lbgen.system.cache import cached_pickle, digest, source_digest
from lbgen.codegen.diagnostics import ND, ROW_INDEX, ROW_QUANTITIES
from lbgen.codegen.layouts import CLUSTERED, LAYOUTS, Layout, LayoutError, make_layout, tag as layout_tag
from lbgen.model import OPERATORS, Model, build_model, velocity_set
from lbgen.model.operators import OPERATOR_RECORDS
from lbgen.codegen.cprint import RealPrinter, print_assignments
from lbgen.model.velocity_set import DEFAULT_VELOCITY_SET, VELOCITY_SETS
from lbgen.model.walls import min_ly_walls, wall_row_count
from lbgen.model.walls import DEFAULT_SCHEME, SCHEMES, mass_rule
from lbgen.codegen.kernel_api import ENTRY_POINTS, SIZE_ERRORS, WALL_ENTRY_POINTS, size_rules

BACKENDS = ("c", "opencl", "cuda")
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
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_TIME_BLOCK:
        raise ValueError(f"time block {value!r} is not {'auto or ' if allow_auto else ''}an integer from 1 to "
                         f"{MAX_TIME_BLOCK} (time steps per sweep; 1 is no temporal blocking)")
    return int(value)
#: "mixed": populations stored as float, arithmetic in double (C backend)
PRECISIONS = ("double", "single", "mixed")

#: parameters of each collision operator as they appear in the kernel API, in order (from the
#: operator records of lbgen.model.operators)
OPERATOR_PARAMETERS = {name: op.kernel_arguments for name, op in OPERATOR_RECORDS.items()}


def default_layout(backend: str, ly: int, halo: int) -> Tuple[str, Optional[int]]:
    """The fastest valid choice: CAoSoA with the backend's preferred VL, else SoA.

    (A choice stored by `lbgen tune` for this machine and lattice takes precedence.)

    On the CPU CAoSoA with VL = 8 (one AVX-512 vector of doubles) is the best combined
    propagate + collide layout (paper Table 2; measured with `lbgen bench`); on GPUs a
    cluster of 32 lanes maps to one warp.  When no preferred VL divides LY with
    LY/VL >= the halo width the unclustered SoA layout is used.
    """
    for vl in PREFERRED_VL.get(backend, (8,)):
        if ly % vl == 0 and ly // vl >= halo:
            return "caosoa", vl
    return "soa", None


class SpecError(ValueError):
    """An invalid kernel specification (raised before any code is generated)."""


#: the largest GPU block / work-group size (CUDA and common OpenCL devices)
MAX_BLOCK_SIZE = 1024

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

    @property
    def compile_time_sizes(self) -> bool:
        return self.lx is not None and self.ly is not None

    @property
    def tag(self) -> str:
        return layout_tag(self.layout, self.vl)

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
        if self.precision == "mixed" and self.backend != "c":
            raise SpecError(f"precision 'mixed' (float storage, double arithmetic) is available on the C backend "
                            f"only, not {self.backend!r}; use double or single there")
        if isinstance(self.block_size, bool) or not isinstance(self.block_size, int) or \
                not 0 <= self.block_size <= MAX_BLOCK_SIZE:
            raise SpecError(f"block size {self.block_size!r}: allowed 0 (the backend's default) or 1 to "
                            f"{MAX_BLOCK_SIZE} (GPU work-group / block size)")
        if self.wall_scheme not in SCHEMES:
            raise SpecError(f"unknown wall scheme {self.wall_scheme!r}; choose one of {', '.join(SCHEMES)}")
        if self.wall_scheme != DEFAULT_SCHEME and not self.walls:
            raise SpecError(f"wall scheme {self.wall_scheme!r} applies to the bc kernel only: add walls "
                            f"(--walls) or leave the scheme at {DEFAULT_SCHEME!r}")
        if not self.prefix.isidentifier():
            raise SpecError(f"prefix {self.prefix!r} is not a C identifier")
        if (self.lx is None) != (self.ly is None):
            raise SpecError("give both lx and ly for compile-time sizes, or neither for run-time sizes")
        if str(self.velocity_set).lower() not in VELOCITY_SETS:
            raise SpecError(f"unknown velocity set {self.velocity_set!r}; choose one of {', '.join(VELOCITY_SETS)}")
        if self.velocity_set != self.velocity_set.lower():
            return _replace(self, velocity_set=self.velocity_set.lower()).validate(lx, ly)
        vs = velocity_set(self.velocity_set)
        spec = self
        clustered = self.layout in CLUSTERED
        if not clustered and self.vl not in (None, 1):
            raise SpecError(f"layout {self.layout} takes no VL (got VL={self.vl}); VL applies to csoa and caosoa")
        if isinstance(self.vl, np.integer):
            spec = _replace(self, vl=int(self.vl))
            return spec.validate(lx, ly)
        if clustered:
            if self.vl is None:
                return _replace(self, vl=DEFAULT_VL[self.backend]).validate(lx, ly)
            if not isinstance(self.vl, int) or self.vl < 1 or self.vl & (self.vl - 1):
                raise SpecError(f"VL={self.vl!r} is not a power of two; VL must be a power of two (1, 2, 4, 8, ...) dividing LY")
        else:
            spec = _replace(self, vl=None)
        check_lx, check_ly = (lx, ly) if lx is not None else (self.lx, self.ly)
        if self.walls and check_ly is not None and check_ly < min_ly_walls(vs):
            raise SpecError(f"LY={check_ly} is too small for walls: the {wall_row_count(vs)} wall rows of "
                            f"{vs.name} at each side and the bulk row next to them need LY >= {min_ly_walls(vs)}")
        if check_lx is not None:
            try:
                make_layout(self.layout, vs.Q, check_lx, check_ly, spec.vl, halo=vs.max_hop)
            except LayoutError as e:
                raise SpecError(str(e)) from None
        return spec


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


def _templates_dir() -> Path:
    return Path(str(resources.files("lbgen.templates")))


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    loader = jinja2.FunctionLoader(lambda name: (_templates_dir() / name).read_text())
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    return env


def _index_terms(layout_name: str, velocities, halo: int) -> Dict[str, list]:
    """C offsets of population p (relative to p = 0 at the same site) and pull offsets."""
    pop = [f"{p}*SP" if p else "0" for p in range(len(velocities))]
    pull = []
    for p, (ex, ey) in enumerate(velocities):
        terms = [f"{p}*SP"] if p else []
        if ex:
            terms.append(f"{-ex}*SX")
        if ey:
            terms.append(f"{-ey}*SR")
        pull.append(" + ".join(terms).replace("+ -", "- ") if terms else "0")
    # the pull offsets split for sweeps that address each source column by its own pointer
    # (temporal blocking): column c[halo - e_x] and the offset within that column
    pull_column = [halo - ex for ex, _ in velocities]
    pull_within = []
    for p, (_, ey) in enumerate(velocities):
        terms = ([f"{p}*SP"] if p else []) + ([f"{-ey}*SR"] if ey else [])
        pull_within.append(" + ".join(terms).replace("+ -", "- ") if terms else "0")
    return {"site": pop, "pull": pull, "pull_column": pull_column, "pull_within": pull_within}


def emit_command(spec: KernelSpec) -> str:  # noqa: C901
    """The `lbgen emit` command line that reproduces a spec."""
    words = ["lbgen emit", f"--backend {spec.backend}", f"--layout {spec.layout}"]
    if spec.layout in CLUSTERED:
        words.append(f"--vl {spec.vl}")
    words += [f"--precision {spec.precision}", f"--collision {spec.collision}"]
    if spec.velocity_set != DEFAULT_VELOCITY_SET:
        words.append(f"--velocity-set {spec.velocity_set}")
    if spec.compile_time_sizes:
        words.append(f"--lx {spec.lx} --ly {spec.ly}")
    if spec.prefix != "lbgen":
        words.append(f"--prefix {spec.prefix}")
    if not spec.streaming_stores:
        words.append("--no-streaming-stores")
    if spec.block_size:
        words.append(f"--block-size {spec.block_size}")
    if spec.walls:
        words.append("--walls")
    if spec.wall_scheme != DEFAULT_SCHEME:
        words.append(f"--wall-scheme {spec.wall_scheme}")
    return " ".join(words)


def model_of(spec: KernelSpec) -> Model:
    """The one model value a spec's kernels are printed from (derived once, cached)."""
    return build_model(spec.velocity_set, spec.collision, spec.walls, spec.wall_scheme)


def template_context(spec: KernelSpec, model: Optional[Model] = None) -> dict:
    model = model or model_of(spec)
    vs, col, eq, mac = model.vs, model.collide, model.equilibrium, model.macroscopic
    clustered = spec.layout in CLUSTERED
    vl = spec.vl if clustered else 1
    real_bytes = 8 if spec.precision == "double" else 4     # bytes of one stored population
    strides = Layout.stride_formulas(spec.layout)
    return {
        "spec": spec,
        "emit_command": emit_command(spec),
        "version": __version__,
        "P": spec.prefix,
        "Q": vs.Q,
        "HALO": vs.max_hop,
        "VL": vl,
        "clustered": clustered,
        "real": "float" if spec.precision == "single" else "double",     # arithmetic
        "storage": "double" if spec.precision == "double" else "float",  # storage of the populations
        "real_bytes": real_bytes,
        "single": spec.precision == "single",
        "lit": (lambda v: RealPrinter(spec.precision)._literal(v)),
        "strides": strides,
        "layout_description": Layout(spec.layout, vs.Q, 1, 1, vl, vs.max_hop).description,
        "isothermal": vs.isothermal,
        "velocities": vs.velocities,
        "weights": [float(w) for w in vs.weights],
        "offsets": _index_terms(spec.layout, vs.velocities, vs.max_hop),
        "collide_params": OPERATOR_PARAMETERS[spec.collision],
        "collide_body": print_assignments(col, spec.precision, suffix_parameters="_"),
        "collide_outputs": [str(s) for s in col.outputs],
        "site_outputs": [f"fout{p}" for p in range(vs.Q)],   # what collide_call leaves
        "collide_flops": col.flops,
        "collide_description": col.description,
        "uses_wall": "wall" in [str(p) for p in col.parameters],
        "equilibrium_body": print_assignments(eq, spec.precision),
        "equilibrium_outputs": [str(s) for s in eq.outputs],
        "fields_body": print_assignments(mac, spec.precision),
        "fields_outputs": [str(s) for s in mac.outputs],
        "compile_time_sizes": spec.compile_time_sizes,
        "lx": spec.lx,
        "ly": spec.ly,
        "r": vs.r,
        # streaming stores: whole clusters of at least one 32-byte vector
        "stream": spec.streaming_stores and clustered and (vl * real_bytes) % 32 == 0,
        "align": min(64, vl * real_bytes) if clustered else real_bytes,
        "block_size": spec.block_size,
        "walls": wall_context(spec, model) if spec.walls else None,
        "tb_max_depth": MAX_TIME_BLOCK,
        "diag": {"ND": ND, "quantities": ROW_QUANTITIES, "index": ROW_INDEX},
        "cx": [int(e[0]) for e in vs.velocities],
        "cy": [int(e[1]) for e in vs.velocities],
        "opposite": list(vs.opposite),
        "min_ly_walls": min_ly_walls(vs),
        "size_rules": size_rules(spec, min_ly_walls(vs)),
        "size_errors": SIZE_ERRORS,
        "entry_points": [n for n in ENTRY_POINTS if n not in WALL_ENTRY_POINTS or spec.walls],
    }


def wall_context(spec: KernelSpec, model: Optional[Model] = None) -> dict:
    """What the bc templates need: per side and row the unknown/leaving sets and the body."""
    from lbgen.model.walls import unknown_set
    model = model or model_of(spec)
    vs = model.vs
    sides = []
    for side in ("bottom", "top"):
        rows = []
        for _, row, asg in (w for w in model.walls if w[0] == side):   # lbgen scheme: row 0 takes the rest
            params = [str(p) for p in asg.parameters]
            unknown = list(unknown_set(vs, side, row))
            written = [int(str(s)[4:]) for s in asg.outputs]   # the unknown ones (+ the rest population)
            rows.append({
                "row": row,
                "unknown": unknown,
                "leaving": [vs.opposite[i] for i in unknown],
                "written": written,
                "inputs": [int(str(s)[1:]) for s in asg.inputs],
                "mass": mass_rule(vs, side, row, spec.wall_scheme),
                "free_mass": "N" not in params,
                "uses_Tw": "Tw" in params,
                "body": print_assignments(asg, spec.precision, suffix_parameters="_"),
                "outputs": [str(s) for s in asg.outputs],
                "entering": [str(s) for s in asg.outputs[:len(unknown)]],
                "flops": asg.flops,
            })
        sides.append({"side": side, "rows": rows})
    return {"sides": sides, "rows": wall_row_count(vs), "scheme": spec.wall_scheme, "thermal": not vs.isothermal}


#: (file written, template) per backend; the first file is the one the backend compiles.
#: "lbgen" in a file name is replaced by the spec's prefix.
_MAIN_TEMPLATES = {
    "c": [("lbgen_kernels.c", "c/kernels.c.j2"), ("lbgen_kernels.h", "c/kernels.h.j2")],
    "opencl": [("lbgen_kernels.cl", "opencl/kernels.cl.j2")],
    "cuda": [("lbgen_kernels.cu", "cuda/kernels.cu.j2"), ("lbgen_kernels.cuh", "cuda/kernels.cuh.j2")],
}


#: files that `lbgen emit` writes besides the kernels (examples, build files, README)
_EMIT_TEMPLATES = {
    "c": [("example.c", "c/example.c.j2"), ("Makefile", "c/Makefile.j2"), ("README.md", "c/README.md.j2")],
    "opencl": [("example.py", "opencl/example.py.j2"), ("README.md", "opencl/README.md.j2")],
    "cuda": [("example.cu", "cuda/example.cu.j2"), ("Makefile", "cuda/Makefile.j2"), ("README.md", "cuda/README.md.j2")],
}


def emit_files(spec: KernelSpec) -> Dict[str, str]:
    """Everything `lbgen emit` writes for a spec: kernels, header, example, Makefile, README."""
    source = generate(spec)
    ctx = template_context(source.spec)
    files = dict(source.files)
    for out_name, template in _EMIT_TEMPLATES.get(source.spec.backend, []):
        files[out_name] = _environment().get_template(template).render(**ctx)
    return files


def generate(spec: KernelSpec) -> KernelSource:
    """Render the kernels of one spec (validated first: nothing is generated for bad input).

    Rendered sources are cached on disk, keyed by the spec, the code of the lbgen package
    and its templates and the sympy and Jinja versions: a run whose kernels were rendered
    before skips sympy printing and the templates (about 2 s).
    """
    spec = spec.validate()
    package = Path(__file__).parent
    key = digest(source_digest(str(package)), source_digest(str(_templates_dir()), ("*",)),
                 sympy.__version__, jinja2.__version__, repr(spec))
    return cached_pickle("render", key, lambda: _render(spec))


def _render(spec: KernelSpec) -> KernelSource:
    model = model_of(spec)
    ctx = template_context(spec, model)
    env = _environment()
    files = {}
    for out_name, template in _MAIN_TEMPLATES[spec.backend]:
        name = out_name.replace("lbgen", spec.prefix)
        files[name] = env.get_template(template).render(**ctx)
    main = next(iter(files))
    entry = tuple(f"{spec.prefix}_{n}" for n in ctx["entry_points"])
    return KernelSource(spec=spec, files=files, main_file=main, entry_points=entry,
                        flops={"collide": model.collide.flops, "fused": model.collide.flops, "propagate": 0})
