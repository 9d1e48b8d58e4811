"""From a kernel spec to source text: sympy assignments printed as C99, Jinja templates.

The model hands over assignment lists; this module prints them with sympy's C printer
(float or double literals, integer powers as products) and renders the templates of one
backend dialect.  Output: a ``KernelSource`` value (files, entry points, the parameters
that made it, a content hash).  Templates know no sympy, the model knows no C.

One render context for any dimension D (``KernelSpec.dimension``, the velocity set's):
the keys every kernel shares are written once; what differs with D -- the layout's strides
(``layouts.Layout``: clusters along the last axis, Y in 2D and Z in 3D), the pull offsets (in
3D with the boundaries' wrapped Z rows and the temporal blocking's row pointers), the size
rules (``kernel_api``), the force components -- branches on D.  The C kernels are one
template for any D, ``templates/c/kernels.c.j2`` (with ``c/time_block.c.j2``, and
``c/lattice.j2``: the 3D sweeps' loops and the pull with its boundaries); the GPU kernels of
both dialects and both dimensions are one template, ``templates/gpu/kernels.j2``; the C header
(``c/kernels.h.j2``) and the CUDA host header (``cuda/kernels.cuh.j2``) are one template each
for any D.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

import jinja2
import sympy

from lbgen import __version__
from lbgen.system.cache import cached_pickle, digest, source_digest
from lbgen.codegen.diagnostics import ND, ND3, ROW_INDEX, ROW_INDEX3D, ROW_QUANTITIES, ROW_QUANTITIES3D
from lbgen.codegen.layouts import CLUSTERED, Layout, describe, stride_formulas
from lbgen.model.catalog import AXES, CHANNEL_WALLS
from lbgen.model.derived import Model, model_digest
from lbgen.codegen.cprint import RealPrinter, print_assignments
from lbgen.model.walls import min_ly_walls, wall_row_count
from lbgen.model.walls import mass_rule
from lbgen.codegen.storage import is_shifted, storage_format
from lbgen.codegen.spec import MAX_TIME_BLOCK, OPERATOR_PARAMETERS, KernelSource, KernelSpec
from lbgen.model.operators import OPERATOR_RECORDS
from lbgen.codegen.kernel_api import (API_VERSION, ENTRY_POINTS, ENTRY_POINTS_3D,
                                      GPU_ENTRY_POINTS_3D, GPU_INPLACE_ENTRY_POINTS, INPLACE_ENTRY_POINTS, SIZE_ERRORS, WALL_ENTRY_POINTS, size_rules, size_rules3d,
                                      storage_bytes, streams_clusters, streams_soa_lines)
from lbgen.codegen.templating import emit_command, model_of  # noqa: F401 - part of this module's API
from lbgen.codegen.templating import environment as _environment, templates_dir as _templates_dir
from lbgen.codegen.templating import wall_tau_arguments


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


def _pull_terms(velocities, halo: int) -> Dict[str, list]:
    """C offsets of population p at the site (p*SP) and of its pull source (site - c_p);
    ``pull_zw`` the same source with its Z part taken from a variable per shift (``z_rows``:
    (dz, ``z_row_name(dz)``)) that wraps within the Z line instead of reading the halo rows; for
    the temporal blocking's Z lines (rows) also the pull source as a row pointer and an offset
    in it: ``tb_pull`` reads ``c<j>[site + ...]`` with row j = (H - c_x)(2H + 1) + (H - c_y),
    population stride SPI; ``tb_site`` reads the site's own row c<center>; ``tb_rows``: the
    rows j some population reads."""
    site, pull, pull_zw, pull_xy, tb_pull, tb_site = [], [], [], [], [], []
    span, center = 2 * halo + 1, halo * (2 * halo + 1) + halo
    for p, c in enumerate(velocities):
        site.append(f"{p}*SP" if p else "0")
        terms = [f"{p}*SP"] if p else []
        terms += [f"{-ck}*{stride}" for ck, stride in zip(c[:2], ("SX", "SY")) if ck]
        zw = terms + ([z_row_name(-c[2])] if c[2] else [])
        pull_xy.append(" + ".join(terms).replace("+ -", "- ") if terms else "0")
        terms += [f"{-c[2]}*SR"] if c[2] else []
        pull.append(" + ".join(terms).replace("+ -", "- ") if terms else "0")
        pull_zw.append(" + ".join(zw).replace("+ -", "- ") if zw else "0")
        within = " + ".join(([f"{p}*SPI"] if p else []) + ([f"{-c[2]}*SR"] if c[2] else [])).replace("+ -", "- ")
        tb_pull.append(f"c{(halo - c[0]) * span + halo - c[1]}[site{' + ' + within if within else ''}]")
        tb_site.append(f"c{center}[site{f' + {p}*SPI' if p else ''}]")
    rows = sorted({center} | {(halo - c[0]) * span + halo - c[1] for c in velocities})
    return {"site": site, "pull": pull, "pull_zw": pull_zw, "pull_xy": pull_xy, "tb_pull": tb_pull, "tb_site": tb_site, "tb_rows": rows,
            "z_rows": [(dz, z_row_name(dz)) for dz in sorted({-c[2] for c in velocities if c[2]})]}


def _aa_terms(offsets: dict, opposite) -> dict:
    """The in-place (AA) addresses besides a layout's site and pull offsets: ``swap`` (population
    p in the site's own slot of opp(p)) and ``pull_swap`` (the slot of opp(p) at the neighbour
    site + c_p: where the even step stores the post-collision p, the odd step finds it)."""
    out = {**offsets, "swap": [offsets["site"][q] for q in opposite],
           "pull_swap": [offsets["pull"][q] for q in opposite]}
    if "pull_xy" in offsets:       # 3D: pull_swap without its Z part (the GPU kernels add theirs)
        out["pull_swap_xy"] = [offsets["pull_xy"][q] for q in opposite]
    return out


def z_row_name(dz: int) -> str:
    """The GPU kernels' variable holding the offset from a site to the element dz sites away
    along Z, wrapped within the Z line (``pull_zw``: no halo row is read)."""
    return f"zo_{'p' if dz > 0 else 'm'}{abs(dz)}"


def template_context(spec: KernelSpec, model: Optional[Model] = None) -> dict:
    """What the templates of a spec need, for any dimension D (the velocity set's): the keys
    every kernel shares once, then what differs with D (the layout's strides and offsets, the
    size rules, the force components, 2D's walls and compile-time sizes)."""
    model = model or model_of(spec)
    vs, col, eq, mac, phys = model.vs, model.collide, model.equilibrium, model.macroscopic, model.physical
    D = spec.dimension
    clustered = spec.layout in CLUSTERED
    vl = spec.vl if clustered else 1
    real_bytes = storage_bytes(spec)     # bytes of one stored population
    printer = RealPrinter(spec.precision)
    special = model.operator.special_values() if model.collide_special is not None else {}
    ctx = {
        "spec": spec,
        "emit_command": emit_command(spec),
        "version": __version__,
        "api_version": API_VERSION,
        "P": spec.prefix,
        "D": D,
        "Q": vs.Q,
        "HALO": vs.max_hop,
        # the kernels carry the open faces' rules (KernelSpec.open_face_rules)
        "open_faces": spec.open_face_rules,
        "VL": vl,
        "clustered": clustered,
        "real": "float" if spec.precision == "single" else "double",     # arithmetic
        "storage": storage_format(spec.precision, spec.storage).c_type,  # storage of the populations
        "storage_name": storage_format(spec.precision, spec.storage).name,
        # 16-bit formats: the GPU dialects hold their bits (unsigned short: no half arithmetic needed)
        "bits16": storage_format(spec.precision, spec.storage).nbytes == 2,
        # stored values are deviations f - w_p (scaled by 2^storage_exp): the load/store conversions
        "shifted": is_shifted(spec.precision, spec.storage),
        "storage_exp": storage_format(spec.precision, spec.storage).scale_exp,
        "real_bytes": real_bytes,
        "single": spec.precision == "single",
        "lit": (lambda v: printer._literal(v)),
        "isothermal": vs.isothermal,
        "velocities": vs.velocities,
        "weights": [float(w) for w in vs.weights],
        "collide_params": OPERATOR_PARAMETERS[spec.collision] if D == 2 else model.operator.kernel_arguments_of(D),
        # each operator parameter's record (range, meaning): the debug builds check the range
        "param_records": {p.name: p for p in OPERATOR_RECORDS[spec.collision].parameters},
        # what each field of the C <prefix>_params struct means (the operator record's words)
        "param_meanings": {**{p.name: p.meaning for p in OPERATOR_RECORDS[spec.collision].parameters},
                           "ax": "force per unit mass per step along x (momentum gains rho*ax; gravity g: ax = g_x / R)",
                           "ay": "force per unit mass per step along y (gravity g: ay = g_y / R, g_y < 0 "
                                 "towards row 0)" if D == 2 else
                                 "force per unit mass per step along y (gravity g: ay = g_y / R)",
                           "az": "force per unit mass per step along z (gravity g: az = g_z / R, g_z < 0 "
                                 "towards z = 0)"},
        "collide_body": print_assignments(col, spec.precision, suffix_parameters="_"),
        "collide_outputs": [str(s) for s in col.outputs],
        # the operator's specialised parameters at their defaults ("omega3 = 1, omega4 = 1"; "": none), the C test
        # of them on the params struct, and the collision derived at them: the C fused sweeps take a second site
        # function, <P>_collide_site_special_, when the test holds
        "special": ", ".join(f"{n} = {v!r}" for n, v in special.items()),
        "special_test": " && ".join([f"{spec.prefix.upper()}_SPECIALISE"] +
                                    [f"par->{n} == {float(v)!r}" for n, v in special.items()]),
        "collide_special_body": (print_assignments(model.collide_special, spec.precision, suffix_parameters="_")
                                 if special else []),
        "collide_special_outputs": [str(s) for s in model.collide_special.outputs] if special else [],
        "collide_special_flops": model.collide_special.flops if special else 0,
        "site_outputs": [f"fout{p}" for p in range(vs.Q)],   # what collide_call leaves
        "collide_flops": col.flops,
        # the example drivers' values of an operator other than bgk and regularized: its records' defaults
        "example_params": [(p.name, repr(p.default)) for p in OPERATOR_RECORDS[spec.collision].parameters],
        # the example drivers' thermal walls (with walls): T_bottom, T_top
        "example_walls": EXAMPLE_WALLS,
        # a square root (the subgrid model's closed form) or an absolute value (the cumulant limiter's fabs) in
        # the collision: the C source includes math.h (gcc 12 only warned of fabs' implicit declaration)
        "uses_sqrt": any(isinstance(p.exp, sympy.Rational) and not p.exp.is_Integer
                         for _, e in col.assignments for p in e.atoms(sympy.Pow))
        or any(e.has(sympy.Abs) for _, e in col.assignments),
        "collide_description": col.description,
        "uses_wall": "wall" in [str(p) for p in col.parameters],
        # the wall rows' relaxation time after wall_ in the site function's arguments (", tau_wall_")
        "TW": wall_tau_arguments(col),
        "equilibrium_body": print_assignments(eq, spec.precision, suffix_parameters="_"),
        "equilibrium_outputs": [str(s) for s in eq.outputs],
        "fields_body": print_assignments(mac, spec.precision),
        "fields_outputs": [str(s) for s in mac.outputs],
        "physical_body": print_assignments(phys, spec.precision, suffix_parameters="_"),
        "physical_outputs": [str(s) for s in phys.outputs],
        "physical_description": phys.description,
        "r": vs.r,
        "block_size": spec.block_size,
        "tb_max_depth": MAX_TIME_BLOCK,
        "size_errors": SIZE_ERRORS,
        "opposite": list(vs.opposite),
        "population_of": lambda hop: [tuple(int(e) for e in v) for v in vs.velocities].index(tuple(hop)),
        **{f"c{axis}": [int(e[a]) for e in vs.velocities] for a, axis in enumerate("xyz"[:D])},
    }
    if D == 3:      # clusters along Z; the pull with its boundaries; run-time sizes only
        layout = Layout(spec.layout, vs.Q, (1, 1, vl * vs.max_hop), vl, vs.max_hop)
        ctx.update({
            "stream": streams_clusters(spec) or streams_soa_lines(spec),
            "strides": stride_formulas(spec.layout, 3),
            "layout_description": layout.description,
            "layout_macros": layout.c_macros(spec.prefix),
            "offsets": _aa_terms(_pull_terms(vs.velocities, vs.max_hop), vs.opposite),
            "walls": wall_context(spec, model) if spec.walls else None,
            "compile_time_sizes": False,
            "size_rules": size_rules3d(spec, vs),
            "entry_points": list((GPU_ENTRY_POINTS_3D if spec.backend in GPU_TEMPLATES_3D else ENTRY_POINTS_3D)
                                 + (("bc", "fused_walls") if spec.walls else ())),
            "diag": {"quantities": ROW_QUANTITIES3D, "index": ROW_INDEX3D, "ND": ND3},
        })
        return ctx
    ctx.update({
        "HALO_Y": vs.max_hop if spec.halo_y is None else spec.halo_y,   # Y halo rows (layouts.Layout.HY)
        "stream": streams_clusters(spec),
        "strides": stride_formulas(spec.layout, 2),
        "layout_description": describe(spec.layout, vs.Q, 2),
        "offsets": _aa_terms(_index_terms(spec.layout, vs.velocities, vs.max_hop), vs.opposite),
        "compile_time_sizes": spec.compile_time_sizes,
        "lx": spec.lx,
        "ly": spec.ly,
        "align": min(64, vl * real_bytes) if clustered else real_bytes,
        "walls": wall_context(spec, model) if spec.walls else None,
        "diag": {"ND": ND, "quantities": ROW_QUANTITIES, "index": ROW_INDEX},
        "min_ly_walls": min_ly_walls(vs),
        "size_rules": size_rules(spec, min_ly_walls(vs)),
        "entry_points": [n for n in ENTRY_POINTS if n not in WALL_ENTRY_POINTS or spec.walls],
    })
    return ctx


def wall_context(spec: KernelSpec, model: Optional[Model] = None) -> dict:
    """What the bc templates need: per side and row the unknown/leaving sets and the body."""
    from lbgen.model.walls import unknown_set
    model = model or model_of(spec)
    vs = model.vs
    sides = []
    axis = spec.wall_axis
    for side in CHANNEL_WALLS:
        rows = []
        for _, row, asg in (w for w in model.walls if w[0] == side):   # lbgen scheme: row 0 takes the rest
            params = [str(p) for p in asg.parameters]
            unknown = list(unknown_set(vs, side, row, axis))
            written = [int(str(s)[4:]) for s in asg.outputs]   # the unknown ones (+ the rest population)
            rows.append({
                "row": row,
                "unknown": unknown,
                "leaving": [vs.opposite[i] for i in unknown],
                "written": written,
                "inputs": [int(str(s)[1:]) for s in asg.inputs],
                "mass": mass_rule(vs, side, row, spec.wall_scheme, axis),
                "free_mass": "N" not in params,
                "uses_Tw": "Tw" in params,
                "body": print_assignments(asg, spec.precision, suffix_parameters="_"),
                "outputs": [str(s) for s in asg.outputs],
                "entering": [str(s) for s in asg.outputs[:len(unknown)]],
                "flops": asg.flops,
            })
        sides.append({"side": side, "rows": rows})
    return {"sides": sides, "rows": wall_row_count(vs), "scheme": spec.wall_scheme, "thermal": not vs.isothermal,
            # the axis across the walls (y in 2D; z, or the spec's wall_axis, in 3D) and its coordinate's name
            "axis": AXES[:vs.D].index(axis or AXES[vs.D - 1]), "axis_name": axis or AXES[vs.D - 1]}


#: (file written, template) per backend, one for any dimension (the text branches on D
#: inside); the first file is the one the backend compiles.  "{P}" in a file name is the
#: spec's prefix.
_MAIN_TEMPLATES = {
    "c": [("{P}_kernels.c", "c/kernels.c.j2"), ("{P}_kernels.h", "c/kernels.h.j2")],
    "opencl": [("{P}_kernels.cl", "gpu/kernels.j2")],
    "cuda": [("{P}_kernels.cu", "gpu/kernels.j2"), ("{P}_kernels.cuh", "cuda/kernels.cuh.j2")],
}
#: the thermal walls of the emitted examples (kernels with walls): T_bottom, T_top
EXAMPLE_WALLS = (1.02, 0.98)
#: the backends whose 3D kernels are GPU kernels (no host code)
GPU_TEMPLATES_3D = ("opencl", "cuda")


#: files that `lbgen emit` writes besides the kernels (examples, build files, README), one
#: template each for any dimension (the text branches on D inside)
_EMIT_TEMPLATES = {
    "c": [("example.c", "c/example.c.j2"), ("Makefile", "c/Makefile.j2"), ("README.md", "c/README.md.j2")],
    "opencl": [("example.py", "opencl/example.py.j2"), ("README.md", "gpu/README.md.j2")],
    "cuda": [("example.cu", "cuda/example.cu.j2"), ("Makefile", "cuda/Makefile.j2"), ("README.md", "gpu/README.md.j2")],
}


def emit_files(spec: KernelSpec) -> Dict[str, str]:
    """Everything `lbgen emit` writes for a spec: kernels, header, example, Makefile, README."""
    source = generate(spec)
    ctx = template_context(source.spec)
    files = dict(source.files)
    for out_name, template in _EMIT_TEMPLATES.get(source.spec.backend, []):
        files[out_name] = _environment().get_template(template).render(**ctx)
    return files


#: the codegen modules that shape the rendered text (lbgen/codegen/*.py)
CODEGEN_SOURCES = Path(__file__).parent


def render_key(spec: KernelSpec) -> str:
    """The render cache key of a (validated) spec: the spec, the model (``model_digest``:
    lbgen/model's sources and sympy's version), the codegen modules, the templates, Jinja's
    version and lbgen's version (printed in the kernels' header).  Nothing else: editing
    e.g. the driver or the output writers keeps rendered kernels."""
    return digest(model_digest(), source_digest(str(CODEGEN_SOURCES)),
                  source_digest(str(_templates_dir()), ("*",)), sympy.__version__, jinja2.__version__,
                  __version__, repr(spec))


def generate(spec: KernelSpec) -> KernelSource:
    """Render the kernels of one spec (validated first: nothing is generated for bad input).

    Rendered sources are cached on disk under ``render_key(spec)`` (entries checksummed, a
    damaged one re-rendered): a run whose kernels were rendered before skips sympy printing
    and the templates (about 2 s).
    """
    spec = spec.validate()
    return cached_pickle("render", render_key(spec), lambda: _render(spec))


def _render(spec: KernelSpec) -> KernelSource:
    model = model_of(spec)
    ctx = template_context(spec, model)
    env = _environment()
    files = {}
    for out_name, template in _MAIN_TEMPLATES[spec.backend]:
        name = out_name.format(P=spec.prefix)
        files[name] = env.get_template(template).render(**ctx)
    main = next(iter(files))
    inplace = GPU_INPLACE_ENTRY_POINTS if spec.backend != "c" else INPLACE_ENTRY_POINTS
    names = list(ctx["entry_points"]) + (list(inplace) if spec.streaming == "inplace" else [])
    entry = tuple(f"{spec.prefix}_{n}" for n in names)
    return KernelSource(spec=spec, files=files, main_file=main, entry_points=entry,
                        flops={"collide": model.collide.flops, "fused": model.collide.flops, "propagate": 0})
