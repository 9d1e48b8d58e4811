"""From a 3D kernel spec to source text: the C/OpenMP kernels of a D3Qn velocity set.

The dimension comes from the velocity set (``KernelSpec.dimension``); ``render.generate``
hands a 3D spec here.  The per-site bodies are the model's assignment lists, printed by
the same printer and wrapped by the same ``common.j2`` site function as in 2D; what is
3D -- the layout's strides (``layouts.Layout``: clusters of VL along Z, the fastest
axis), the loops, the halo, the pull with its boundaries (half-way bounce-back walls per
axis, moving lids, a voxel mask), the physical (half-step) fields and the size rules --
is in ``templates/c/kernels3d.c.j2``, ``kernels3d.h.j2`` and ``common3d.j2``.
"""
from __future__ import annotations

from typing import Dict, List, Optional


from lbgen import __version__
from lbgen.codegen.cprint import RealPrinter, print_assignments
from lbgen.codegen.diagnostics import ND3, ROW_INDEX3D, ROW_QUANTITIES3D
from lbgen.codegen.kernel_api import PTRDIFF_MAX_64, SIZE_ERRORS, storage_bytes, streams_clusters, streams_soa_lines
from lbgen.codegen.layouts import CLUSTERED, Layout, stride_formulas
from lbgen.codegen.spec import MAX_TIME_BLOCK, KernelSource, KernelSpec
from lbgen.codegen.templating import emit_command, environment, model_of, wall_tau_arguments
from lbgen.model.derived import Model
from lbgen.model.catalog import AXES, SIDES

#: the entry points of the 3D C kernels (with the prefix), in the header's order
ENTRY_POINTS_3D = ("check", "buffer_size", "alloc", "free", "set_threads", "halo", "propagate", "collide", "fused",
                   "fused_tb", "init_equilibrium", "fields", "pack", "unpack", "diagnostics")
#: the boundary faces in the order of the boundaries struct's lid bits and lid velocities:
#: face 2a + s is the low (s = 0) or high (s = 1) face normal to axis a (x, y, z)
FACES = tuple(f"{axis}-{side}" for axis in AXES for side in SIDES)


def size_rules3d(spec: KernelSpec, vs) -> List[dict]:
    """The lattice sizes the 3D kernels of a validated spec accept, in the order the emitted
    ``<prefix>_check(lx, ly, lz, ...)`` tests them: ``code`` (a name of SIZE_ERRORS), ``c``
    (the condition on lx, ly, lz that holds for valid sizes), ``message`` (printf format
    naming the bad value), ``args``, ``text`` (the rule in words); OVERFLOW also ``macro``."""
    vl = spec.vl if spec.layout in CLUSTERED else 1
    H, Q, nbytes = vs.max_hop, vs.Q, storage_bytes(spec)
    rules = [dict(code="SIZE", c="lx >= 1 && ly >= 1 && lz >= 1",
                  message="lattice %d x %d x %d: lx, ly and lz must be >= 1", args="lx, ly, lz",
                  text="LX, LY, LZ >= 1")]
    if vl > 1:
        rules.append(dict(code="VL", c=f"lz % {vl} == 0", message=f"lz=%d is not a multiple of VL={vl}", args="lz",
                          text=f"LZ a multiple of VL = {vl} (the clusters cut Z, the fastest axis)"))
        rules.append(dict(code="HALO", c=f"lz / {vl} >= {H}",
                          message=f"lz=%d gives LZ/VL = %d cluster rows; the {H}-row halo needs LZ/VL >= {H} "
                                  f"(lz >= {H * vl})", args=f"lz, lz / {vl}",
                          text=f"LZ/VL >= {H}, i.e. LZ >= {H * vl} (the halo is {H} cluster row"
                               f"{'s' if H > 1 else ''})"))

    def fits(lx, ly, lz):
        return (f"(ptrdiff_t)({lx}) + {2 * H} <= (PTRDIFF_MAX - 63) / {Q * vl * nbytes} / "
                f"((ptrdiff_t)({ly}) + {2 * H}) / ((ptrdiff_t)({lz}) / {vl} + {2 * H})")
    rules.append(dict(code="OVERFLOW", c=fits("lx", "ly", "lz"), macro=fits("LX", "LY", "LZ"),
                      message=f"lattice %d x %d x %d is too large: one lattice buffer ({Q} x (lx + {2 * H}) x "
                              f"(ly + {2 * H}) x (lz/{vl} + {2 * H}) x {vl} values of {nbytes} bytes) overflows "
                              f"the kernels' index and size types", args="lx, ly, lz",
                      text=f"one lattice buffer ({Q} x (LX + {2 * H}) x (LY + {2 * H}) x (LZ/{vl} + {2 * H}) x {vl} "
                           f"values of {nbytes} bytes, rounded up to 64) at most PTRDIFF_MAX bytes"))
    for rule in rules:
        rule["value"] = SIZE_ERRORS.index(rule["code"]) + 1
        rule["py"] = (rule["c"].replace("&&", "and").replace("(ptrdiff_t)", "")
                      .replace("PTRDIFF_MAX", str(PTRDIFF_MAX_64)).replace(" / ", " // "))
    return rules


def check_sizes3d(spec: KernelSpec, vs, lx: int, ly: int, lz: int) -> Optional[str]:
    """None when the 3D kernels of ``spec`` accept an lx x ly x lz lattice, else the message
    of the first broken rule (the emitted check's, from the same rules)."""
    env = {"lx": int(lx), "ly": int(ly), "lz": int(lz)}
    for rule in size_rules3d(spec, vs):
        if not eval(rule["py"], {}, env):
            args = eval(f"({rule['args'].replace(' / ', ' // ')},)", {}, env)
            return rule["message"] % args
    return None


def _pull_terms(velocities, halo: int) -> Dict[str, list]:
    """C offsets of population p at the site (p*SP) and of its pull source (site - c_p);
    ``pull_zw`` the same source with its Z part taken from a variable per shift (``z_rows``:
    (dz, ``z_row_name(dz)``)) that wraps within the Z line instead of reading the halo rows; for
    the temporal blocking's Z lines (rows) also the pull source as a row pointer and an offset
    in it: ``tb_pull`` reads ``c<j>[site + ...]`` with row j = (H - c_x)(2H + 1) + (H - c_y),
    population stride SPI; ``tb_site`` reads the site's own row c<center>; ``tb_rows``: the
    rows j some population reads."""
    site, pull, pull_zw, tb_pull, tb_site = [], [], [], [], []
    span, center = 2 * halo + 1, halo * (2 * halo + 1) + halo
    for p, c in enumerate(velocities):
        site.append(f"{p}*SP" if p else "0")
        terms = [f"{p}*SP"] if p else []
        terms += [f"{-ck}*{stride}" for ck, stride in zip(c[:2], ("SX", "SY")) if ck]
        zw = terms + ([z_row_name(-c[2])] if c[2] else [])
        terms += [f"{-c[2]}*SR"] if c[2] else []
        pull.append(" + ".join(terms).replace("+ -", "- ") if terms else "0")
        pull_zw.append(" + ".join(zw).replace("+ -", "- ") if zw else "0")
        within = " + ".join(([f"{p}*SPI"] if p else []) + ([f"{-c[2]}*SR"] if c[2] else [])).replace("+ -", "- ")
        tb_pull.append(f"c{(halo - c[0]) * span + halo - c[1]}[site{' + ' + within if within else ''}]")
        tb_site.append(f"c{center}[site{f' + {p}*SPI' if p else ''}]")
    rows = sorted({center} | {(halo - c[0]) * span + halo - c[1] for c in velocities})
    return {"site": site, "pull": pull, "pull_zw": pull_zw, "tb_pull": tb_pull, "tb_site": tb_site, "tb_rows": rows,
            "z_rows": [(dz, z_row_name(dz)) for dz in sorted({-c[2] for c in velocities if c[2]})]}


def z_row_name(dz: int) -> str:
    """The GPU kernels' variable holding the offset from a site to the element dz sites away
    along Z, wrapped within the Z line (``pull_zw``: no halo row is read)."""
    return f"zo_{'p' if dz > 0 else 'm'}{abs(dz)}"


def template_context3d(spec: KernelSpec, model: Optional[Model] = None) -> dict:
    """What the 3D templates need (the names common.j2's site function reads included)."""
    model = model or model_of(spec)
    vs, col, eq, mac = model.vs, model.collide, model.equilibrium, model.macroscopic
    clustered = spec.layout in CLUSTERED
    vl = spec.vl if clustered else 1
    printer = RealPrinter(spec.precision)
    collide_params = model.operator.kernel_arguments_of(3)
    layout = Layout(spec.layout, vs.Q, (1, 1, vl * vs.max_hop), vl, vs.max_hop)
    return {
        "spec": spec,
        "emit_command": emit_command(spec),
        "version": __version__,
        "P": spec.prefix,
        "Q": vs.Q,
        "D": 3,
        "HALO": vs.max_hop,
        "VL": vl,
        "clustered": clustered,
        "stream": streams_clusters(spec) or streams_soa_lines(spec),
        "real": "float" if spec.precision == "single" else "double",
        "storage": "double" if spec.precision == "double" else "float",
        "real_bytes": storage_bytes(spec),
        "single": spec.precision == "single",
        "lit": (lambda v: printer._literal(v)),
        "strides": stride_formulas(spec.layout, 3),
        "layout_description": layout.description,
        "layout_macros": layout.c_macros(spec.prefix),
        "isothermal": vs.isothermal,
        "velocities": vs.velocities,
        "weights": [float(w) for w in vs.weights],
        "offsets": _pull_terms(vs.velocities, vs.max_hop),
        "collide_params": collide_params,
        "operator_params": model.operator.parameter_names,
        # each operator parameter's record (range, meaning): the debug builds check the range
        "param_records": {p.name: p for p in model.operator.parameters},
        "collide_body": print_assignments(col, spec.precision, suffix_parameters="_"),
        "collide_outputs": [str(s) for s in col.outputs],
        "site_outputs": [f"fout{p}" for p in range(vs.Q)],
        "collide_flops": col.flops,
        "collide_description": col.description,
        "uses_wall": "wall" in [str(p) for p in col.parameters],
        # the wall rows' relaxation time after wall_ in the site function's arguments (", tau_wall_")
        "TW": wall_tau_arguments(col),
        "walls": None,
        "equilibrium_body": print_assignments(eq, spec.precision, suffix_parameters="_"),
        "equilibrium_inputs": [str(s) for s in eq.inputs],
        "equilibrium_outputs": [str(s) for s in eq.outputs],
        "fields_body": print_assignments(mac, spec.precision),
        "fields_outputs": [str(s) for s in mac.outputs],
        "physical_body": print_assignments(model.physical, spec.precision, suffix_parameters="_"),
        "physical_outputs": [str(s) for s in model.physical.outputs],
        "compile_time_sizes": False,
        "r": vs.r,
        "cx": [int(e[0]) for e in vs.velocities],
        "cy": [int(e[1]) for e in vs.velocities],
        "cz": [int(e[2]) for e in vs.velocities],
        "opposite": list(vs.opposite),
        "faces": FACES,
        "size_rules": size_rules3d(spec, vs),
        "size_errors": SIZE_ERRORS,
        "entry_points": list(ENTRY_POINTS_3D),
        "axes": AXES,
        "block_size": spec.block_size,
        "diag": {"quantities": ROW_QUANTITIES3D, "index": ROW_INDEX3D, "ND": ND3},
        "tb_max_depth": MAX_TIME_BLOCK,
    }


#: (file written, template): the kernels (the first is the one the backend compiles), then
#: what `lbgen emit` adds; "{P}" in a name is the spec's prefix
MAIN_TEMPLATES_3D = [("{P}_kernels.c", "c/kernels3d.c.j2"), ("{P}_kernels.h", "c/kernels3d.h.j2")]
#: the 3D kernels of the GPU dialects (templates/gpu/kernels3d.j2, one text for both)
GPU_TEMPLATES_3D = {"opencl": [("{P}_kernels.cl", "opencl/kernels3d.cl.j2")],
                    "cuda": [("{P}_kernels.cu", "cuda/kernels3d.cu.j2"), ("{P}_kernels.cuh", "cuda/kernels3d.cuh.j2")]}
#: what `lbgen emit` adds for the GPU dialects
GPU_EMIT_TEMPLATES_3D = {"opencl": [("example.py", "opencl/example3d.py.j2"), ("README.md", "gpu/README3d.md.j2")],
                         "cuda": [("example.cu", "cuda/example3d.cu.j2"), ("Makefile", "cuda/Makefile3d.j2"),
                                  ("README.md", "gpu/README3d.md.j2")]}
#: the GPU kernels' entry points (no host code: sizes are checked by the runtime, check_sizes3d)
GPU_ENTRY_POINTS_3D = ("halo", "halo_planes", "propagate", "collide", "fused", "init_equilibrium", "fields", "pack",
                       "unpack", "diagnostics")
EMIT_TEMPLATES_3D = [("example.c", "c/example3d.c.j2"), ("Makefile", "c/Makefile.j2"),
                     ("README.md", "c/README3d.md.j2")]


def render3d(spec: KernelSpec) -> KernelSource:
    """The 3D kernels of a validated spec (``render.generate`` caches them on disk)."""
    model = model_of(spec)
    ctx = template_context3d(spec, model)
    env = environment()
    files = {}
    for out_name, template in GPU_TEMPLATES_3D.get(spec.backend, MAIN_TEMPLATES_3D):
        files[out_name.format(P=spec.prefix)] = env.get_template(template).render(**ctx)
    main = next(iter(files))
    names = GPU_ENTRY_POINTS_3D if spec.backend in GPU_TEMPLATES_3D else ENTRY_POINTS_3D
    entry = tuple(f"{spec.prefix}_{n}" for n in names)
    return KernelSource(spec=spec, files=files, main_file=main, entry_points=entry,
                        flops={"collide": model.collide.flops, "fused": model.collide.flops, "propagate": 0})


def emit_files3d(source: KernelSource) -> Dict[str, str]:
    """The kernels of a rendered 3D source plus example.c, Makefile and README.md."""
    ctx = template_context3d(source.spec)
    files = dict(source.files)
    for out_name, template in GPU_EMIT_TEMPLATES_3D.get(source.spec.backend, EMIT_TEMPLATES_3D):
        files[out_name] = environment().get_template(template).render(**ctx)
    return files
