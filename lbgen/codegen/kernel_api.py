"""The API every emitted backend offers: its entry points and the lattice sizes it accepts.

Written once here and rendered by the templates into every dialect: the C and CUDA
``<prefix>_check`` functions, the OpenCL example's ``check()``, and the rules stated in
every header and README.
"""
from __future__ import annotations

from typing import List, Optional

from lbgen.codegen.layouts import CLUSTERED
from lbgen.codegen.storage import storage_format
from lbgen.model.velocity_set import velocity_set
from lbgen.model.walls import wall_row_count

#: the entry points every backend emits (with the prefix), in this order; those of
#: WALL_ENTRY_POINTS only with walls
ENTRY_POINTS = ("halo", "propagate", "bc", "collide", "fused", "fused_walls", "init_equilibrium",
                "fields", "diagnostics", "pack", "unpack")
#: with walls only: the bc kernel and the fused propagate + bc + collide sweep
WALL_ENTRY_POINTS = ("bc", "fused_walls")
#: the entry points of the 3D C kernels (with the prefix), in the header's order
ENTRY_POINTS_3D = ("check", "buffer_size", "alloc", "free", "set_threads", "halo", "propagate", "collide", "fused",
                   "fused_tb", "init_equilibrium", "fields", "pack", "unpack", "diagnostics", "get_region",
                   "put_region")
#: the 3D GPU kernels' entry points (no host code: sizes are checked by the runtime, check_sizes3d)
GPU_ENTRY_POINTS_3D = ("halo", "halo_planes", "propagate", "collide", "fused", "init_equilibrium", "fields", "pack",
                       "unpack", "diagnostics")
#: the in-place (AA pattern) kernels of a spec with streaming "inplace", any D (C backend): the step
#: from the natural state (reads and writes the neighbours' slots), the halo's mirror after it, the
#: step back to the natural state (the site's own slots), and the natural state of an odd step
INPLACE_ENTRY_POINTS = ("aa_even", "aa_fold", "aa_odd", "aa_normalise")
#: the GPU kernels' in-place entry points, any D: those, and the lids' densities before a step
#: (templates/gpu/inplace.j2: a kernel cannot allocate them)
GPU_INPLACE_ENTRY_POINTS = INPLACE_ENTRY_POINTS + ("aa_lid_rho",)
#: the body-link kernels every backend emits for any D (lbgen.simulation.bodies): interpolated or
#: half-way bounce-back on listed links and the momentum exchange on the bodies
BODY_ENTRY_POINTS = ("body_links", "body_put")
#: the revision of the emitted calling convention (``<PREFIX>_API_VERSION``), one for 2D and 3D
API_VERSION = 4
#: error codes of the emitted `<prefix>_check(lx, ly, ...)`, numbered from 1 (0: valid sizes,
#: `<PREFIX>_STATUS_OK`); OVERFLOW: the lattice buffer's size in bytes or its largest index does
#: not fit the kernels' types; GRID (CUDA): a launch would need more than 2^31 - 1 blocks
SIZE_ERRORS = ("SIZE", "VL", "HALO", "WALLS", "COMPILED", "OVERFLOW", "GRID")
#: the largest index / byte count of a lattice buffer the kernels address (ptrdiff_t is 64-bit
#: on every target lbgen builds for; the emitted C states the bound with PTRDIFF_MAX itself)
PTRDIFF_MAX_64 = 2 ** 63 - 1
#: the largest gridDim.x of a CUDA launch
CUDA_MAX_BLOCKS = 2 ** 31 - 1


def storage_bytes(spec) -> int:
    """Bytes of one stored population (``lbgen.codegen.storage``: double 8; single and mixed float 4; fp16s 2)."""
    return storage_format(spec.precision, spec.storage).nbytes


#: the bytes a cluster's non-temporal stores must fill in CSoA, where each population's
#: cluster lies apart from the others: a whole cache line.  Half-line streams ran at 0.45x
#: plain stores (2D D2Q37 CSoA VL 4 double, 1024 x 2048, 2 threads: 14.2 against 31.4 MLUPS;
#: VL 8 single 0.60x; 3D D3Q19 CSoA VL 4, 128^3: 31.8 against 89.9) where whole lines ran at
#: 2.2x (CSoA VL 8 double).  In CAoSoA the next population's cluster completes the line.
CSOA_STREAM_BYTES = 64


def streams_clusters(spec) -> bool:
    """Whether a C sweep stores whole clusters with non-temporal stores (the templates'
    ``stream``): clustered layouts with a cluster of at least one 32-byte vector (CSoA: of
    whole cache lines, CSOA_STREAM_BYTES), unless the spec turns them off.  3D SoA streams
    whole lines of its runs of rows instead (``streams_soa_lines``)."""
    cluster = spec.vl * storage_bytes(spec) if spec.layout in CLUSTERED else 0
    return (spec.backend == "c" and spec.streaming_stores and spec.layout in CLUSTERED and cluster % 32 == 0
            and (spec.layout != "csoa" or cluster % CSOA_STREAM_BYTES == 0))


def streams_soa_lines(spec) -> bool:
    """Whether the 3D C SoA fused kernel streams whole 64-byte lines (staged per line, the lines
    ahead prefetched), unless the spec turns streaming off; it then sweeps each chunk's
    consecutive rows (x, y) that no boundary reaches as one run of sites.  Plain stores read
    every line before writing it: D3Q19 128^3 fused ran at 0.6x of the streamed sweep on 2
    threads of a Zen 3 (AVX2), one Z line at a time at 0.6-0.7x of the runs of rows
    (docs/performance-history.md).  (2D SoA sweeps store plainly.)"""
    return spec.backend == "c" and spec.streaming_stores and spec.layout == "soa"


def buffer_fits_condition(Q: int, vl: int, halo: int, nbytes: int, lx: str = "lx", ly: str = "ly",
                          halo_y: Optional[int] = None) -> str:
    """C condition (lx, ly >= 1 assumed) that a lattice buffer, Q x (lx + 2 halo) x (ly/vl + 2 halo_y) x vl
    values of nbytes each (halo_y: the Y halo rows, default halo), has its size in bytes rounded
    up to 64 (hence its largest index) at most PTRDIFF_MAX; evaluated without overflow: every
    operand is positive and the products are divided out of the bound (a*b <= M  <=>  a <= M / b
    for positive integers)."""
    hy = halo if halo_y is None else halo_y
    return (f"(ptrdiff_t)({lx}) + {2 * halo} <= (PTRDIFF_MAX - 63) / {Q * vl * nbytes} / "
            f"((ptrdiff_t)({ly}) / {vl} + {2 * hy})")


def size_rules(spec, min_ly_walls: int) -> List[dict]:
    """The lattice sizes the kernels of a validated KernelSpec accept, as the emitted checks
    state them (walls need LY, or LX across x, >= min_ly_walls).

    Each rule: ``code`` (a name of SIZE_ERRORS), ``c`` (a C condition on ``lx``, ``ly`` that
    holds for valid sizes; ``/`` is integer division), ``message`` (printf format naming the
    bad value and the rule), ``args`` (its C arguments), ``text`` (the rule in words) and
    ``py`` (the condition in Python, for the OpenCL example's check()); OVERFLOW also has
    ``macro``, its condition on ``LX``, ``LY`` for the headers' ``<PREFIX>_BUFFER_FITS``.  The rules are
    tested in this order; OVERFLOW (and CUDA's GRID) follow the rules that make lx, ly >= 1,
    so their conditions never overflow themselves.
    """
    vl = spec.vl if spec.layout in CLUSTERED else 1
    vs = velocity_set(spec.velocity_set)
    HALO, rows = vs.max_hop, wall_row_count(vs)
    HY = HALO if spec.halo_y is None else spec.halo_y
    rules = [dict(code="SIZE", c="lx >= 1 && ly >= 1", message="lattice %d x %d: lx and ly must be >= 1",
                  args="lx, ly", text="LX >= 1 and LY >= 1")]
    if vl > 1:
        rules.append(dict(code="VL", c=f"ly % {vl} == 0", message=f"ly=%d is not a multiple of VL={vl}",
                          args="ly", text=f"LY a multiple of VL = {vl}"))
        rules.append(dict(code="HALO", c=f"ly / {vl} >= {HALO}",
                          message=f"ly=%d gives LY/VL = %d cluster rows; the {HALO}-row halo needs "
                                  f"LY/VL >= {HALO} (ly >= {HALO * vl})",
                          args=f"ly, ly / {vl}", text=f"LY/VL >= {HALO}, i.e. LY >= {HALO * vl} (the halo is "
                                                      f"{HALO} cluster rows)"))
    if spec.walls:
        n = "l" + (spec.wall_axis or "y")      # the extent across the walls
        rules.append(dict(code="WALLS", c=f"{n} >= {min_ly_walls}",
                          message=f"{n}=%d is too small for walls: they need {n} >= {min_ly_walls}", args=n,
                          text=f"walls: {n.upper()} >= {min_ly_walls} ({rows} wall row{'s' if rows > 1 else ''} at "
                               f"each side and the bulk row next to them)"))
    nbytes = storage_bytes(spec)
    fits = buffer_fits_condition(vs.Q, vl, HALO, nbytes, halo_y=HY)
    rules.append(dict(code="OVERFLOW", c=fits, macro=buffer_fits_condition(vs.Q, vl, HALO, nbytes, "LX", "LY", HY),
                      py=fits.replace("(ptrdiff_t)", "").replace("PTRDIFF_MAX", str(PTRDIFF_MAX_64))
                             .replace(" / ", " // "),
                      message=f"lattice %d x %d is too large: one lattice buffer ({vs.Q} x (lx + {2 * HALO}) x "
                              f"(ly/{vl} + {2 * HY}) x {vl} values of {nbytes} bytes) overflows the kernels' "
                              f"index and size types", args="lx, ly",
                      text=f"one lattice buffer ({vs.Q} x (LX + {2 * HALO}) x (LY/{vl} + {2 * HY}) x {vl} values "
                           f"of {nbytes} bytes, rounded up to 64) at most PTRDIFF_MAX bytes"))
    if spec.backend == "cuda":
        # after OVERFLOW: LX*LY and the halo's thread count are below the buffer's element count
        G = spec.prefix.upper()
        limit = f"(ptrdiff_t){G}_BLOCK * {CUDA_MAX_BLOCKS}"
        rules.append(dict(code="GRID", c=f"(ptrdiff_t)lx * ly <= {limit} && {G}_HALO_THREADS(lx, ly) <= {limit}",
                          message=f"lattice %d x %d needs more than {CUDA_MAX_BLOCKS} blocks of %d threads "
                                  f"in one launch", args=f"lx, ly, {G}_BLOCK",
                          text=f"CUDA launches: LX*LY and {G}_HALO_THREADS(LX, LY) threads in at most "
                               f"{CUDA_MAX_BLOCKS} blocks of {G}_BLOCK threads"))
    if spec.compile_time_sizes:
        rules.append(dict(code="COMPILED", c=f"lx == {spec.lx} && ly == {spec.ly}",
                          message=f"lattice %d x %d: these kernels were generated for {spec.lx} x {spec.ly}",
                          args="lx, ly", text=f"LX = {spec.lx}, LY = {spec.ly} (compile-time sizes)"))
    for rule in rules:
        rule["value"] = SIZE_ERRORS.index(rule["code"]) + 1
        rule.setdefault("py", rule["c"].replace("&&", "and").replace(" / ", " // "))
    return rules


def size_rules3d(spec, vs) -> List[dict]:
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

    if spec.walls:
        from lbgen.model.walls import min_ly_walls, wall_row_count
        need, n = min_ly_walls(vs), "l" + (spec.wall_axis or "z")      # the extent across the walls
        rules.append(dict(code="WALLS", c=f"{n} >= {need}",
                          message=f"{n}=%d is too small for walls: they need {n} >= {need}", args=n,
                          text=f"walls: {n.upper()} >= {need} ({wall_row_count(vs)} wall planes at each side and the "
                               f"bulk plane next to them)"))

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


def check_sizes3d(spec, vs, lx: int, ly: int, lz: int) -> Optional[str]:
    """None when the 3D kernels of ``spec`` accept an lx x ly x lz lattice, else the message
    of the first broken rule (the emitted check's, from the same rules)."""
    env = {"lx": int(lx), "ly": int(ly), "lz": int(lz)}
    for rule in size_rules3d(spec, vs):
        if not eval(rule["py"], {}, env):
            args = eval(f"({rule['args'].replace(' / ', ' // ')},)", {}, env)
            return rule["message"] % args
    return None
