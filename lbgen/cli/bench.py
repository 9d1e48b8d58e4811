"""`lbgen bench` and `lbgen tune` (registered on the `lbgen` group in lbgen/cli.py)."""
from __future__ import annotations

import json
from pathlib import Path

import click

from lbgen.cli.common import UserError, any_set_option, friendly
from lbgen.perf.bench import DEFAULT_KERNELS, DEFAULT_SHAPE3D
from lbgen.codegen.spec import MAX_BLOCK_SIZE, MAX_TIME_BLOCK
from lbgen.perf.tune import WORK_GROUPS
from lbgen.model.catalog import DEFAULT_VELOCITY_SET, SETS_3D, set_names
from lbgen.system.limits import max_threads
from lbgen.model.catalog import DEFAULT_SCHEME as DEFAULT_WALL_SCHEME, SCHEMES as WALL_SCHEMES


def _split(text: str):
    return [t.strip() for t in text.split(",") if t.strip()]


def _precisions(text: str):
    from lbgen.codegen.spec import PRECISIONS
    words = {"both": ["double", "single"], "all": list(PRECISIONS)}
    items = words.get(text.strip()) or _split(text)
    bad = [p for p in items if p not in PRECISIONS]
    if bad:
        raise UserError(f"unknown precision {bad[0]!r}; choose {', '.join(PRECISIONS)}, both or all")
    return items


def _collisions(text: str, velocity_set: str = DEFAULT_VELOCITY_SET):
    """The operators named (``all``: every one the set takes); one the set cannot take is refused in words."""
    from lbgen.model import OPERATORS
    from lbgen.model.catalog import set_entry
    from lbgen.model.operators import operator
    entry = set_entry(velocity_set)
    takes = [c for c in OPERATORS if operator(c).takes(entry.label, entry.order >= 3)]
    items = takes if text.strip() == "all" else _split(text)
    bad = [c for c in items if c not in OPERATORS]
    if bad:
        raise UserError(f"unknown collision operator {bad[0]!r}; choose from {', '.join(OPERATORS)}")
    for c in items:
        try:
            operator(c).check_set(entry.label, entry.order >= 3)
        except ValueError as e:
            raise UserError(str(e)) from None
    return items


def _emit_json(data, output, to_stdout):
    from lbgen.perf.bench import to_jsonable
    text = json.dumps(to_jsonable(data), indent=2, allow_nan=False)
    if output:
        from lbgen.system.cache import atomic_write_bytes
        atomic_write_bytes(Path(output), (text + "\n").encode())
    if to_stdout:
        click.echo(text)


def _lattice(ctx, velocity_set: str, lx: int, ly: int, lz):
    """(lx, ly, lz) of bench and tune: a 3D set's lattice is DEFAULT_SHAPE3D but for the sizes
    given; a 2D set takes no --lz (lz None)."""
    from lbgen.model.catalog import set_entry
    if set_entry(velocity_set).D == 3:
        def given(name):
            return ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT
        return (lx if given("lx") else DEFAULT_SHAPE3D[0], ly if given("ly") else DEFAULT_SHAPE3D[1],
                DEFAULT_SHAPE3D[2] if lz is None else lz)
    if lz is not None:
        raise UserError(f"--lz {lz}: {velocity_set} is a 2D set; --lz is the depth of a 3D lattice "
                        f"(--velocity-set {set_names(SETS_3D)})")
    return lx, ly, None


def _lz_option(fn):
    return click.option("--lz", type=click.IntRange(min=1), default=None,
                        help=f"3D sets (--velocity-set d3q19, ...): the lattice depth; a 3D lattice is "
                             f"{'x'.join(map(str, DEFAULT_SHAPE3D))} unless --lx, --ly, --lz say otherwise.")(fn)


@click.command(short_help="Time the kernels against this machine's measured limits.")
@click.option("--backends", default="c", show_default=True,
              help="Comma list of c, opencl, cuda; unavailable ones are skipped with the reason.")
@click.option("--layouts", default="all", show_default=True,
              help="Comma list: aos, soa, csoa-vlN, caosoa-vlN; a clustered name alone (csoa) sweeps VL 4,8,16,32; "
                   "'all' = the four layouts with that sweep.")
@click.option("--kernels", default=",".join(DEFAULT_KERNELS), show_default=True,
              help="Comma list of propagate, bc (timed on a walls program), collide, fused, fused-tb<depth> "
                   f"(C: depth steps per sweep, temporal blocking; depth 2..{MAX_TIME_BLOCK}).")
@click.option("--collision", "collisions", default="bgk", show_default=True, help="bgk, regularized or all.")
@click.option("--precision", "precisions", default="double", show_default=True,
              help="double, single, mixed (float storage, double arithmetic; C), both (double,single) or all.")
@click.option("--wall-scheme", type=click.Choice(WALL_SCHEMES), default=DEFAULT_WALL_SCHEME,
              show_default=True, help="Scheme of the timed bc kernel.")
@click.option("--lx", type=click.IntRange(min=1), default=1024, show_default=True)
@click.option("--ly", type=click.IntRange(min=1), default=4096, show_default=True)
@_lz_option
@click.option("--threads", type=click.IntRange(0, max_threads()), default=0, show_default=True, help="OpenMP threads (0: all cores).")
@click.option("--repeat", type=click.IntRange(min=1), default=5, show_default=True, help="Timed samples per kernel.")
@click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True, help="Untimed calls before timing.")
@click.option("--vls", default="4,8,16,32", show_default=True, help="VL sweep of --paper-table.")
@click.option("--paper-table", is_flag=True,
              help="Propagate and collide for AoS/SoA/CSoA/CAoSoA at each layout's best VL, next to the "
                   "paper's Haswell column (Table 2), scaled to 2160 x 8192.")
@click.option("--no-limits", is_flag=True, help="Skip the bandwidth/peak micro-benchmarks (no fractions).")
@click.option("--limit-mb", type=click.IntRange(min=1), default=None,
              help="Buffer size (MiB, each of two) of the copy benchmark; default: lattice size in [256, 1024].")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON instead of the table.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None, help="Also write the JSON report here.")
@click.option("--plots", type=click.Path(file_okay=False), default=None,
              help="Write PNG plots here: MLUPS vs VL per layout, roofline.")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Progress bar on stderr.")
@any_set_option
@click.pass_context
@friendly
def bench(ctx, backends, layouts, kernels, collisions, precisions, wall_scheme, lx, ly, lz, threads, repeat, warmup,
          vls, paper_table, no_limits, limit_mb, as_json, output, plots, progress, velocity_set):
    """Time the kernels (ms, MLUPS, GB/s, GFLOP/s) against this machine's measured limits.

    The memory bandwidth (Q + Q stream copy, normal and streaming stores) and the FMA
    peak are measured in the same run; fractions use them as denominators.  Nothing here
    fails on a timing: benchmarks are not tests.  The defaults (paper size, every layout)
    take minutes; a quick look at one layout takes seconds:

    \b
    lbgen bench --layouts caosoa-vl8 --kernels fused --lx 256 --ly 1024
    """
    from lbgen.perf import bench as B
    from lbgen.perf import bench_report as R
    if lx < 1 or ly < 1:
        raise UserError(f"lattice {lx} x {ly}: sizes must be positive")
    if repeat < 1:
        raise UserError("--repeat must be >= 1")
    precs = _precisions(precisions)
    cols = _collisions(collisions, velocity_set.lower())
    backend_list = _split(backends)
    from lbgen.codegen.spec import BACKENDS
    bad = [b for b in backend_list if b not in BACKENDS]
    if bad:
        raise UserError(f"unknown backend {bad[0]!r}; choose from {', '.join(BACKENDS)}")
    if wall_scheme != DEFAULT_WALL_SCHEME and (paper_table or "bc" not in _split(kernels)):
        raise UserError(f"--wall-scheme {wall_scheme} applies to the bc kernel: add bc to --kernels "
                        "(the paper table times propagate and collide only)")
    velocity_set = velocity_set.lower()
    from lbgen.model.catalog import set_entry
    if set_entry(velocity_set).D == 3:
        if paper_table or "bc" in _split(kernels) or wall_scheme != DEFAULT_WALL_SCHEME:
            what = "--paper-table" if paper_table else "the bc kernel" if "bc" in _split(kernels) else "--wall-scheme"
            raise UserError(f"{what} is 2D (the paper's table, the thermal walls' bc); {velocity_set} is a 3D set, "
                            f"whose boundaries are part of propagate, collide and fused")
    lx, ly, lz = _lattice(ctx, velocity_set, lx, ly, lz)
    if paper_table and velocity_set != DEFAULT_VELOCITY_SET:
        raise UserError(f"--paper-table is the paper's {DEFAULT_VELOCITY_SET} table; it takes no "
                        f"--velocity-set {velocity_set}")
    if paper_table:
        try:
            vl_list = [int(v) for v in _split(vls)]
        except ValueError:
            raise UserError(f"--vls {vls!r}: give integers, e.g. 4,8,16,32") from None
        tables = []
        for backend in backend_list:
            for p in precs:
                for c in cols:
                    t = R.run_paper_table(backend, lx, ly, vl_list, p, c, threads, repeat, warmup, progress)
                    t.update(backend=backend, precision=p, collision=c)
                    tables.append(t)
        data = {"paper_tables": tables}
        if plots:
            data["plots"] = [str(p) for t in tables for p in R.make_plots(t["sweep"], plots)]
        if not as_json:
            for t in tables:
                click.echo(f"[{t['backend']} {t['precision']} {t['collision']}]")
                click.echo(R.format_paper_table(t))
                for s in t["sweep"].get("skipped", []):
                    click.echo(f"skipped {s.get('layout', s.get('backend'))}: {s['reason']}")
        _emit_json(data, output, as_json)
        if not any(t["sweep"].get("results") for t in tables):
            raise UserError("nothing was timed: every case of the paper table was skipped (the reasons are in the "
                            "report)")
        return
    kern = _split(kernels)
    bad = [k for k in kern if k not in B.KERNELS and not B.time_block_depth(k)]
    if bad:
        raise UserError(f"unknown kernel {bad[0]!r}; choose from {', '.join(B.KERNELS)} or "
                        f"{B.TIME_BLOCK_PREFIX}<depth> (depth 2..{MAX_TIME_BLOCK})")
    cfg = B.BenchConfig(backends=backend_list, layouts=B.parse_layouts(layouts), kernels=kern, collisions=cols,
                        precisions=precs, lx=lx, ly=ly, lz=lz, threads=threads, repeat=repeat, warmup=warmup,
                        limits=not no_limits, limit_bytes=(limit_mb << 20) if limit_mb else None, progress=progress,
                        wall_scheme=wall_scheme, velocity_set=velocity_set)
    report = B.run_bench(cfg)
    if plots:
        report["plots"] = [str(p) for p in R.make_plots(report, plots)]
    if not as_json:
        click.echo(R.format_table(report))
        if plots:
            click.echo("plots: " + ", ".join(report["plots"]))
    _emit_json(report, output, as_json)
    if not report["results"]:             # every case skipped: nothing was timed
        raise UserError(f"nothing was timed: every case was skipped ({len(report['skipped'])} skipped; the reasons "
                        f"are in the report)")


@click.command(short_help="Find and store the fastest layout, VL and time block (OpenCL: work-group) here.")
@click.option("--backend", default="c", show_default=True, type=click.Choice(["c", "opencl", "cuda"]))
@click.option("--lx", type=click.IntRange(min=1), default=1024, show_default=True)
@click.option("--ly", type=click.IntRange(min=1), default=4096, show_default=True)
@_lz_option
@click.option("--precision", default="double", show_default=True, type=click.Choice(["double", "single", "mixed"]))
@click.option("--collision", default="bgk", show_default=True)
@click.option("--walls", is_flag=True, help="Tune the unfused step with thermal walls (propagate, bc, collide).")
@click.option("--threads", type=click.IntRange(0, max_threads()), default=0, show_default=True, help="OpenMP threads (0: all).")
@click.option("--layouts", default=None, help="Restrict to these layout names (comma list: caosoa,csoa,soa,aos).")
@click.option("--vls", default="4,8,16,32", show_default=True, help="Cluster lengths to try.")
@click.option("--thread-counts", default=None, help="Also try these thread counts (comma list), e.g. 1,2.")
@click.option("--samples", type=click.IntRange(min=1), default=3, show_default=True, help="Timed samples per candidate.")
@click.option("--time-blocks", default="1,2,3,4", show_default=True,
              help="C: temporal-blocking depths (steps per sweep) tried on the best layout; the fastest is stored.")
@click.option("--work-groups", default=",".join(map(str, WORK_GROUPS)), show_default=True,
              help="OpenCL: work-group sizes tried on the best layout; the fastest is stored.")
@click.option("--device", default=None,
              help="OpenCL device to tune ('P:D' or part of its name; default PYOPENCL_CTX, else the first): "
                   "the choice is stored for that device.")
@click.option("--json", "as_json", is_flag=True, help="Print the stored entry as JSON.")
@click.option("--progress/--no-progress", default=True, show_default=True)
@any_set_option
@click.pass_context
@friendly
def tune(ctx, backend, lx, ly, lz, precision, collision, walls, threads, layouts, vls, thread_counts, samples,
         time_blocks, work_groups, device, as_json, progress, velocity_set):
    """Time short runs of every layout/VL, print the ranking, store the best for this machine.

    The choice is kept per machine (hostname, CPU model, backend, device) and lattice
    shape in the lbgen cache (tune/choices.json); runs can use it by default.  2D: the
    default set's step (d2q37).  3D (a 3D --velocity-set; a 128^3 box unless
    --lx/--ly/--lz say otherwise): the set's periodic step, used by 3D runs without walls,
    a geometry or MPI.  OpenCL: per device (--device), with the winner's work-group size,
    which runs of that device and layout take (their manifest records it)."""
    from lbgen.perf import tune as T
    velocity_set = velocity_set.lower()
    lx, ly, lz = _lattice(ctx, velocity_set, lx, ly, lz)
    if lz is None and velocity_set != DEFAULT_VELOCITY_SET:
        raise UserError(f"--velocity-set {velocity_set}: 2D tuning times the {DEFAULT_VELOCITY_SET} step, whose "
                        f"choice 2D runs of that set use; the 3D sets are tuned one by one")
    if lz is not None and walls:
        raise UserError(f"--walls: 3D tuning ({velocity_set}) times the periodic step; the 3D thermal walls' step "
                        f"(propagate, bc, collide) is not tuned")
    _collisions(collision, velocity_set)
    try:
        vl_list = tuple(int(v) for v in _split(vls))
        tcs = [int(t) for t in _split(thread_counts)] if thread_counts else None
        blocks = tuple(int(d) for d in _split(time_blocks))
    except ValueError:
        raise UserError("--vls, --thread-counts and --time-blocks take comma lists of integers") from None
    from lbgen.codegen.layouts import CLUSTERED
    clustered = [n for n in (_split(layouts) if layouts else CLUSTERED) if n in CLUSTERED]
    if ctx.get_parameter_source("vls") != click.core.ParameterSource.DEFAULT and clustered:
        axis, n = ("LZ", lz) if lz is not None else ("LY", ly)
        halo = T._halo(velocity_set if lz is not None else None)
        misfits = {v: T.vl_misfit(n, v, halo) for v in vl_list}
        dropped = [f"{why}" for v, why in misfits.items() if why]
        if dropped or not vl_list:
            fits = [v for v in (2 ** k for k in range(0, 11)) if T.vl_misfit(n, v, halo) is None]
            raise UserError(f"--vls {vls}: {'; '.join(dropped) or 'no cluster length given'}. The clustered "
                            f"layouts of {axis} = {n} (halo {halo}) take VL {', '.join(map(str, fits)) or 'none'}")
    bad = [d for d in blocks if not 1 <= d <= MAX_TIME_BLOCK]
    if bad or not blocks:
        raise UserError(f"--time-blocks {time_blocks!r}: depths are integers from 1 to {MAX_TIME_BLOCK}")
    groups = _work_groups(ctx, backend, work_groups, device)
    entry = T.tune(backend, lx, ly, precision, collision, walls, threads,
                   layouts=_split(layouts) if layouts else None, vls=vl_list, thread_counts=tcs,
                   samples=samples, progress=progress, time_blocks=blocks, lz=lz,
                   velocity_set=velocity_set if lz is not None else None, device=device,
                   **({"work_groups": groups} if backend == "opencl" else {}))
    if as_json:
        _emit_json(entry, None, True)
    else:
        click.echo(T.format_ranking(entry))


def _work_groups(ctx, backend, text, device) -> tuple:
    """--work-groups as positive integers up to MAX_BLOCK_SIZE; --work-groups and --device given
    off the OpenCL backend are refused (they choose an OpenCL device's kernels)."""
    given = [f"--{n.replace('_', '-')}" for n in ("work_groups", "device")
             if ctx.get_parameter_source(n) != click.core.ParameterSource.DEFAULT]
    if backend != "opencl" and given:
        raise UserError(f"{' and '.join(given)}: {'they choose' if len(given) > 1 else 'it chooses'} an OpenCL "
                        f"device's kernels; --backend {backend} has none (use --backend opencl)")
    try:
        groups = tuple(int(v) for v in _split(text))
    except ValueError:
        groups = ()
    if not groups or any(not 1 <= g <= MAX_BLOCK_SIZE for g in groups):
        raise UserError(f"--work-groups {text!r}: a comma list of work-group sizes, integers from 1 to "
                        f"{MAX_BLOCK_SIZE}")
    return groups
