"""The `lbgen` command line: info, emit, run."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from lbgen import __version__
from lbgen.codegen.spec import BACKENDS, PRECISIONS, STREAMING, KernelSpec
from lbgen.codegen.layouts import LAYOUTS
from lbgen.codegen.storage import STORAGES, describe as describe_storage
from lbgen.model import OPERATORS
from lbgen.model.catalog import (DEFAULT_SCHEME as DEFAULT_WALL_SCHEME, MODEL_SETS, SCHEMES as WALL_SCHEMES, SETS_3D,
                                 set_names)
from lbgen.reference import VERIFY_LATTICE_2D, VERIFY_LATTICE_3D, VERIFY_LAYOUTS, VERIFY_SHAPES

from lbgen.cli.common import UserError, any_set_option, friendly, vl_option
from lbgen.cli.run_options import schema_options

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib


class _Commands(click.Group):
    """The `lbgen` group: under an MPI launcher, a command line that click refuses (an unknown
    option, a value of the wrong type) is the same on every rank, so only rank 0 prints the
    refusal; every rank exits with its status (no MPI is started for it)."""

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        from lbgen.cli.common import mpi_launch_rank, mpi_launch_size
        if not standalone_mode or mpi_launch_size() <= 1 or mpi_launch_rank() == 0:
            return super().main(*args, standalone_mode=standalone_mode, **kwargs)
        try:
            return super().main(*args, standalone_mode=False, **kwargs)
        except click.UsageError as e:
            sys.exit(e.exit_code)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.ClickException as e:        # rank 0 words it (or it was not collective: say it here)
            if not getattr(e, "collective", False):
                e.show()
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            sys.exit(1)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.version_option(__version__, prog_name="lbgen")
def main():
    """lbgen: JIT-generated lattice Boltzmann kernels for C/OpenMP, OpenCL and CUDA."""


main.help = (f"lbgen: JIT-generated lattice Boltzmann kernels for C/OpenMP, OpenCL and CUDA; velocity sets "
             f"{set_names([s for s in MODEL_SETS if s not in SETS_3D], 'and')} (2D), {set_names(SETS_3D, 'and')} (3D).")


# --- info --------------------------------------------------------------------------------
@main.command(short_help="The model: Q, r, weights, op counts, backends, cache folder.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@any_set_option
@friendly
def info(as_json, velocity_set):
    """Model summary: Q, r, shell weights, op counts per operator, backends found."""
    from lbgen import backends
    from lbgen.system.cache import cache_dir
    from lbgen.model import collide
    from lbgen.model.operators import operator as operator_record
    from lbgen.model.velocity_set import velocity_set as get_vs
    vs_name = velocity_set.lower()
    vs = get_vs(vs_name)
    summary = vs.summary()
    operators = {}
    refused = {}
    for op in OPERATORS:
        try:
            operator_record(op).check_set(vs.name, not vs.isothermal)
        except ValueError as e:                 # an operator this set cannot take: said, not derived
            refused[op] = str(e)
            continue
        asg = collide(op, vs_name)
        operators[op] = {"op_count": asg.flops, "flops_per_site": asg.flops,
                         "assignments": len(asg.assignments), "parameters": [str(p) for p in asg.parameters],
                         "description": asg.description}
    found = {}
    for b in BACKENDS:
        ok, why = backends.available(b)
        found[b] = {"available": ok, "detail": why}
    found["cuda-shim"] = _cuda_without_gpu()
    data = {"lbgen": __version__, "velocity_set": summary, "operators": operators, "refused_operators": refused,
            "backends": found, "largest_lattice": _largest_lattices(vs_name, found["cuda"]["available"]),
            "cache_dir": str(cache_dir())}
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"lbgen {__version__}: {vs.name} ({vs.D}D), Q = {vs.Q}, quadrature degree {vs.degree}, Hermite order "
               f"{vs.hermite_order} ({'isothermal: T = 1 throughout' if vs.isothermal else 'thermal'}), "
               f"halo and wall rows {vs.max_hop}")
    click.echo(f"  r = {summary['r_digits']}  (t = 1/r^2 is the root of {summary['minimal_polynomial_of_t']} = 0)")
    click.echo(f"  {'shell':<11}count  weight")
    for s in summary["shells"]:
        click.echo(f"  {'(' + ','.join(map(str, s['shell'])) + ')':<11}{s['count']:>5}  {s['weight_digits']}")
    for op, d in operators.items():
        click.echo(f"  collide {op:<16} {d['op_count']:>5} flops/site  ({d['description']})")
    if refused:
        click.echo(f"  not on {vs.name}: {', '.join(refused)} (isothermal sets only)")
    for b, d in found.items():
        click.echo(f"  backend {b:<9} {'yes' if d['available'] else 'no '}  {d['detail']}")
    side = "^" + str(vs.D)
    for where, d in data["largest_lattice"].items():
        click.echo(f"  largest N{side} on {d['memory_label']} ({d['memory'] / 2**30:.1f} GiB; a run's estimate"
                   f"{', populations alone in brackets' if where != 'host' else ''}):")
        click.echo("    " + ", ".join(f"{k} {v['run']}" + (f" ({v['populations']})" if where != "host" else "")
                                      for k, v in d["lattices"].items()))
    click.echo(f"  cache   {data['cache_dir']}")


def _largest_lattices(name: str, gpu: bool) -> dict:
    """The largest lattice per precision, storage and streaming on this host's available memory
    and, with a GPU, on device 0's free memory (lbgen.perf.capacity)."""
    from lbgen.perf.capacity import largest_lattices
    from lbgen.system.limits import available_memory
    out = {}
    host = available_memory()
    if host:
        out["host"] = {"memory": host, "memory_label": "this host's available memory",
                       "lattices": largest_lattices(name, host, device=False)}
    if gpu:
        from lbgen.backends.cuda import gpu_runtime
        rt = gpu_runtime()
        free = rt.free_memory()
        out["cuda"] = {"memory": free, "memory_label": f"{rt.device_name()}'s free memory",
                       "lattices": largest_lattices(name, free, device=True)}
    return out


def _cuda_without_gpu() -> dict:
    """What of the CUDA backend works without a GPU: the .cu kernels run on the CPU through
    the host shim (g++; `lbgen verify --backends cuda-shim`), and nvcc, where installed,
    compiles them for GPUs."""
    from lbgen.backends.cuda import nvcc, shim
    ok, why = shim.available()
    compiles, how = nvcc.available()
    detail = f"{why}; `lbgen verify --backends cuda-shim` runs them" if ok else why
    return {"available": ok, "detail": detail + (f"; compiled for GPUs by {how}" if compiles else f"; {how}")}


# --- emit --------------------------------------------------------------------------------
@main.command(short_help="Write self-contained kernels, header, example and Makefile.")
@click.option("--backend", default="c", show_default=True, help=f"One of {', '.join(BACKENDS)}.")
@click.option("--layout", default="caosoa", show_default=True, help=f"One of {', '.join(LAYOUTS)}.")
@click.option("--vl", default=None, help="Cluster length (csoa/caosoa): a power of two; default 8 (c) or 32 (GPU).")
@click.option("--precision", default="double", show_default=True, help=f"One of {', '.join(PRECISIONS)}.")
@click.option("--collision", default="bgk", show_default=True, help=f"One of {', '.join(OPERATORS)}.")
@click.option("--storage", default=None, help=f"Populations' storage, apart from the arithmetic: one of "
              f"{', '.join(STORAGES)} (default: the precision's own; every backend; docs/physics.md).")
@click.option("--streaming", type=click.Choice(STREAMING), default="pull", show_default=True,
              help="pull (two population buffers) or inplace (one buffer, the AA pattern: aa_even, aa_fold, aa_odd; "
                   "every backend; the header states the step-parity contract).")
@click.option("--lx", type=int, default=None, help="Compile-time LX (with --ly); run-time sizes by default.")
@click.option("--ly", type=int, default=None, help="Compile-time LY (with --lx).")
@click.option("--prefix", default="lbgen", show_default=True,
              help="Prefix of the C symbols and file names: an ASCII letter, then ASCII letters, digits and "
                   "single underscores (no trailing underscore, no C or C++ keyword).")
@click.option("--streaming-stores/--no-streaming-stores", default=True, show_default=True,
              help="Non-temporal stores for whole clusters (C, clustered layouts).")
@click.option("--walls", is_flag=True, help="Thermal walls: add the bc and fused_walls kernels (tau_wall wall rows).")
@click.option("--wall-scheme", type=click.Choice(WALL_SCHEMES), default=DEFAULT_WALL_SCHEME, show_default=True,
              help="With --walls: lbgen, or reference (the production code's bc; docs/physics.md, Walls).")
@click.option("--wall-axis", type=click.Choice(("x", "y", "z")), default=None,
              help="With --walls: the axis the thermal walls stand across [default: the last, z in 3D, y in 2D; "
                   "2D: x or y].")
@click.option("--block-size", type=int, default=0, help="GPU work-group / block size (0: backend default).")
@click.option("--halo-y", type=int, default=None,
              help="C: Y halo rows (cluster rows), at least the set's largest hop (default): padding to match a "
                   "host code's layout, e.g. 16.")
@click.option("--open-faces", is_flag=True,
              help="The thermal sets (hops longer than 1: d2q37, d2v17, d3q39, d3q103): also emit the open faces' "
                   "rules (inlets at a temperature, outflows, free slip; the params' inlets ... inflow). The sets "
                   "whose hops are 1 always carry theirs.")
@click.option("--report", is_flag=True, help="CUDA: compile with nvcc for sm_80 and sm_90 and show registers/spills.")
@any_set_option
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder (default: generated/<backend>/<layout>[-vl<VL>][-<precision>][-<collision>]).")
@friendly
def emit(backend, layout, vl, precision, collision, storage, streaming, lx, ly, prefix, streaming_stores, walls, wall_scheme,
         wall_axis, block_size, halo_y, open_faces, report, velocity_set, output):
    """Write self-contained kernels (+ header, example driver, Makefile, README) to embed."""
    from lbgen.codegen.emit import emit as do_emit
    vl = vl_option(vl)      # None: the backend's DEFAULT_VL for clustered layouts
    spec = KernelSpec(backend=backend, layout=layout, vl=vl, precision=precision, collision=collision,
                      lx=lx, ly=ly, prefix=prefix, streaming_stores=streaming_stores, walls=walls,
                      wall_scheme=wall_scheme, block_size=block_size, velocity_set=velocity_set.lower(), halo_y=halo_y,
                      storage=storage, streaming=streaming, wall_axis=wall_axis, open_faces=open_faces)
    spec = spec.validate()
    if report and spec.backend != "cuda":
        raise UserError("--report shows nvcc's register and spill figures: it needs --backend cuda")
    written = do_emit(spec, output)
    folder = next(iter(written.values())).parent
    click.echo(f"wrote {len(written)} files to {folder}/: {', '.join(written)}")
    if report:
        from lbgen.backends.cuda.nvcc import format_report, ptxas_report
        from lbgen.codegen.render import generate
        click.echo(format_report(ptxas_report(generate(spec))))


# --- run ---------------------------------------------------------------------------------
def _streaming_note(sim) -> str:
    """The run line's word on in-place streaming (nothing for pull, the default)."""
    return ", in place (one population buffer)" if getattr(sim, "streaming", "pull") == "inplace" else ""


def _config_file(path) -> dict:
    """The run options of a TOML file (a [run] table or top-level keys)."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise UserError(f"cannot read config {path}: {e}") from None
    data = data.get("run", data)
    if not isinstance(data, dict):
        raise UserError(f"{path}: the [run] table must hold key = value pairs")
    nested = [k for k, v in data.items() if isinstance(v, dict)]
    if nested:
        raise UserError(f"{path}: unexpected table(s) {nested}; give the run options as key = value pairs")
    return data


@main.command(short_help="Simulate a set-up or an --init file; outputs, checkpoints.")
@click.argument("setup", required=False, default=None)
@click.option("--config", type=click.Path(dir_okay=False), default=None,
              help="TOML file with any of these options (flags given on the command line win).")
@schema_options
@click.option("--resume", type=click.Path(), default=None,
              help="Continue the run in this folder from its newest checkpoint (up to --steps if given).")
@click.option("--overwrite", is_flag=True, default=False,
              help="Replace the run already in --out -- only the files it wrote, as it wrote them; files lbgen did "
                   "not write or that changed since stay -- and an existing --save file (otherwise both are "
                   "refused).")
@click.option("--progress/--no-progress", default=True, show_default=True)
@click.option("--ranks-grid", default="auto", show_default=True,
              help="Under mpiexec -n P: the Cartesian grid of ranks, PXxPY (ranks along X times along Y; 3D runs: "
                   "PXxPYxPZ, never along a wall axis), or auto (MPI_Dims_create; X only with --hetero, or walls "
                   "with a time block or GPU kernels; 3D: the unwalled axes). "
                   "A property of the launch: a resume may use another.")
@click.option("--halo-path", type=click.Choice(["auto", "staged", "device"]), default="auto", show_default=True,
              help="Under mpiexec, OpenCL and CUDA ranks: how the halo slabs (packed on the device) travel -- "
                   "staged (copied through page-locked host buffers) or device (the device buffers handed to MPI: "
                   "a CUDA-aware MPI, or a device that shares host memory); auto: the data-movement model's choice "
                   "(lbgen model). A property of the launch.")
@click.pass_context
@friendly
def run(ctx, setup, config, resume, overwrite, progress, ranks_grid, halo_path, **given):
    """Simulate.  SETUP: shear-wave (default), uniform-noise or rayleigh-taylor; or --init FILE.npz.
    3D (a 3D --velocity-set: see --velocity-set below; --lz): shear-wave, taylor-green, lid-driven-cavity,
    channel, rayleigh-taylor (a thermal set: Z up, walls on z).

    \b
    lbgen run --lx 256 --ly 1024 --steps 2000 --save out.npz
    lbgen run lid-driven-cavity --lx 32 --ly 32 --lz 32 --steps 5000 --out runs/cavity --output-every 1000
    lbgen run rayleigh-taylor --lx 256 --ly 1024 --steps 20000 --out runs/rt --output-every 1000 --checkpoint-every 5000
    lbgen run --resume runs/rt --steps 40000
    """
    from lbgen.parallel import mpi
    from lbgen.run.config import RunConfig, normalise_key
    from lbgen.run.driver import Run
    comm = mpi.world()                     # several ranks under mpiexec: a distributed run
    if comm is not None:
        mpi.install_excepthook(comm)
    three = _grid_parts(ranks_grid) == 3          # PXxPYxPZ: a 3D run's grid (lbgen.run.driver3d)
    from lbgen.parallel.decomposition import set_launch_grid
    set_launch_grid("auto" if three else ranks_grid, comm)
    from lbgen.parallel.halo import set_launch_halo_path
    set_launch_halo_path(halo_path, comm)
    root = comm is None or comm.rank == 0
    show_progress = progress and sys.stderr.isatty() and root
    echo = (lambda m: click.echo(m, err=True)) if root else (lambda m: None)  # noqa: E731
    given = {k: v for k, v in given.items() if v is not None and v != ()}
    if resume:
        if overwrite:
            raise UserError("--overwrite replaces the run in --out; it cannot be combined with --resume")
        if setup or config:
            raise UserError("--resume continues the run in its folder: give no SETUP and no --config")
        dimension = _resumed_dimension(resume)
        _check_grid_dimension(ranks_grid, dimension, comm)
        runner = Run.resume(resume, echo=echo, comm=comm, overrides=given)
        result = runner.execute(progress=show_progress)
        _report(runner, result, runner.cfg.save)
        return
    with mpi.same_on_every_rank(comm):        # every rank refuses the same option: rank 0 says it once
        layers = [(f"--config {config}", _config_file(config))] if config else []
        layers.append(("command line", given))
        cfg = RunConfig.build(setup, *layers)
    chosen = {normalise_key(k) for _, values in layers for k, v in values.items() if v is not None}
    _check_grid_dimension(ranks_grid, cfg.dimension, comm)
    if cfg.dimension == 3:
        _run3d(cfg, echo, comm, overwrite, show_progress, chosen)
        return
    runner = Run(cfg, echo=echo, comm=comm, overwrite=overwrite)
    cfg = runner.cfg                       # the lattice run: an --init file's, not the default
    spec = runner.sim.spec
    regions = runner.sim.region_table()
    where = ", ".join((f"rank {d['rank']} " if "rank" in d else "") + f"{d['backend']} {d['layout']} "
                      f"x={d['columns'][0] % cfg.lx}..+{d['columns'][1]}"
                      + (f" y={d['rows'][0]}..+{d['rows'][1]}" if d.get("rows", [0, cfg.ly]) != [0, cfg.ly] else "")
                      for d in regions)
    from lbgen.run.construct import gpu_runtime_note
    where += gpu_runtime_note(runner.sim) + _streaming_note(runner.sim)
    if comm is not None:
        where = f"{comm.size} MPI ranks ({_halo_note(runner.sim)}): {where}"
    bounds = getattr(runner.sim, "bounds", None)      # 2D bounce-back walls, lids
    box = f"walls ({cfg.walls['scheme']} scheme)" if cfg.walls else bounds.describe() if bounds else "periodic"
    echo(f"lbgen run: {cfg.setup if not cfg.init else 'fields from ' + cfg.init}, {cfg.velocity_set}, "
         f"{cfg.lx} x {cfg.ly}, "
         f"{cfg.steps} steps, {spec.collision}, {box}, {describe_storage(spec.precision, spec.storage)}; {where}")
    from lbgen.model.physics import summary
    echo(summary(runner.physics))
    _time_block_note(runner, echo, chosen)
    result = runner.execute(progress=show_progress)
    _report(runner, result, cfg.save)


def _halo_note(sim) -> str:
    """The run header's words on a distributed run's halo path."""
    if sim.halo_path == "host":
        return "halos in place in host memory"
    return f"halo path {sim.halo_path}: {sim.halo_path_reason}"


def _grid_parts(text) -> int:
    """How many counts a --ranks-grid text gives (0 for auto)."""
    text = str(text).strip().lower()
    return 0 if text == "auto" else len(text.replace("*", "x").split("x"))


def _resumed_dimension(run_dir):
    """The dimension of the run in a folder to resume (None where its manifest cannot be read:
    the resume itself says why)."""
    from lbgen.output import read_manifest
    from lbgen.run.config import RunConfig
    try:
        return RunConfig.from_json(read_manifest(run_dir)["config"]).dimension
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _check_grid_dimension(ranks_grid, dimension, comm):
    """--ranks-grid against the run's dimension, before any work: PXxPY for 2D runs (checked by
    lbgen.parallel.mpi), PXxPYxPZ for 3D runs (lbgen.run.construct.set_launch_grid3d)."""
    if dimension == 3:
        from lbgen.run.construct import set_launch_grid3d
        set_launch_grid3d(ranks_grid, comm)
    elif dimension == 2 and _grid_parts(ranks_grid) == 3:
        from lbgen.parallel.mpi import collective
        raise collective(UserError(f"--ranks-grid {ranks_grid}: a 2D run takes PXxPY (ranks along X times ranks "
                                   f"along Y); PXxPYxPZ is for 3D runs (--velocity-set {set_names(SETS_3D)})"))


def _time_block_note(runner, echo, given):
    """With a time block (2D and 3D): its depth; and, where the user chose the depth, the event
    cadences the user also chose that are not multiples of it (the steps before those events
    that do not fill a block run singly).  Cadences lbgen chose itself (defaults, auto) are
    never named: they cost a few single steps, and the manifest records them."""
    cfg, depth = runner.cfg, runner.sim.time_block
    if depth > 1:
        every = {k: getattr(cfg, k) for k in ("output_every", "checkpoint_every", "check_every", "series_every")}
        odd = [f"--{k.replace('_', '-')} {v}" for k, v in every.items() if v % depth and k in given] \
            if "time_block" in given else []
        echo(f"time block {depth}: {depth} steps per sweep" + (
            f"; {', '.join(odd)} not a multiple of it: the steps before those events that do not fill a "
            f"block run singly" if odd else ""))


def _run3d(cfg, echo, comm, overwrite, show_progress, chosen):
    """`lbgen run` with a 3D velocity set: its start line (the Run is the same as in 2D)."""
    from lbgen.model.physics import summary
    from lbgen.run.driver import Run
    runner = Run(cfg, echo=echo, comm=comm, overwrite=overwrite)
    cfg, sim = runner.cfg, runner.sim      # the lattice run: an --init file's, not the default
    from lbgen.simulation.boundaries import BounceBack
    box = [BounceBack(sim.wall_faces, sim.lid, None, 3).describe()] if sim.wall_faces else []
    if cfg.walls:                                  # the thermal walls across z or --wall-axis (d3q39, d3q103)
        w = cfg.walls
        sides = [f"{side} {'adiabatic' if w['adiabatic_' + side] else 'T = ' + format(w['T_' + side], 'g')}"
                 for side in ("bottom", "top")]
        box.insert(0, f"thermal walls across {cfg.thermal_axis} ({w['scheme']} scheme; {', '.join(sides)})")
    opened = getattr(getattr(sim, "bounds", None), "open", None)
    if opened:
        box.append(opened.describe())
    if sim.mask is not None:
        box.append(f"geometry {cfg.geometry} ({100.0 * sim.mask.mean():.3g}% solid"
                   + (f", {cfg.body_bc} bounce-back)" if getattr(sim, "bodies", None) is not None else ")"))
    regions = getattr(sim, "regions", ())          # host + device: the regions along X
    where = " + ".join(f"{r.program.spec.backend} {r.program.layout.tag} x[{r.x_start}:{r.x_start + r.width})"
                       for r in regions) if len(regions) > 1 else f"{sim.spec.backend} {sim.program.layout.tag}"
    from lbgen.run.construct import gpu_runtime_note
    where += gpu_runtime_note(sim) + _streaming_note(sim)
    if runner.comm is not None:
        where = f"{runner.comm.size} MPI ranks, grid {'x'.join(map(str, runner.grid))}, {_halo_note(sim)}: {where}"
    echo(f"lbgen run: {cfg.setup if not cfg.init else 'fields from ' + cfg.init}, {cfg.velocity_set}, "
         f"{sim.lx} x {sim.ly} x {sim.lz}, {cfg.steps} steps, "
         f"{sim.spec.collision}, {', '.join(box) or 'periodic'}, {describe_storage(sim.spec.precision, sim.spec.storage)}; "
         f"{where}")
    echo(summary(runner.physics))
    from lbgen.model.physics import lid_mach_check
    for (a, s), u in sim.lid.items():      # the unstable band below the refusal (lbgen.model.physics)
        note = lid_mach_check(f"{a}-{s}", u, cfg.velocity_set)
        if note:
            echo(f"warning: {note}")
    _time_block_note(runner, echo, chosen)
    result = runner.execute(progress=show_progress)
    _report(runner, result, cfg.save)


def _report(runner, result, save):
    out = runner.final_fields()            # the final outputs' fields (collective with MPI: rank 0 gets them)
    if not runner.root:
        return
    speed = f"{result['mlups']:.2f} MLUPS" if result["mlups"] is not None else "no steps timed"
    from lbgen.output.widened import field_total          # no float64 copy of rho
    click.echo(f"done: {result['steps_run']} steps in {result['seconds']:.3f} s, {speed}; "
               f"step {result['steps']}, total mass {field_total(out, 'rho'):.12g}")
    opened = getattr(getattr(runner.sim, "bounds", None), "open", None)
    if opened and any(k != "slip" for k in opened.kinds().values()):      # inlets, outlets, outflows
        from lbgen.simulation.open_faces import face_fluxes
        flux = face_fluxes(out, [f for f, k in opened.kinds().items() if k != "slip"], runner.sim.vs.r)
        click.echo("mass flux out through the open faces (sites/step; negative: in): "
                   + ", ".join(f"{f} {v:+.6g}" for f, v in flux.items()) + f"; net {sum(flux.values()):+.3g}")
    for name, force in runner.body_forces().items():
        click.echo(f"force on the body {name!r} (momentum exchange, last step, model units): F = ("
                   + ", ".join(f"{c:.6g}" for c in force) + ")")
    from lbgen.run.flows import FLOWS, measure, summary
    if runner.cfg.setup in FLOWS:          # C_D, C_L, St, dp beside the published values
        flow = FLOWS[runner.cfg.setup]
        history = getattr(runner, "force_history", [])
        if runner.output is not None:      # the run folder's series: the whole run, resumed parts too
            rows = runner.output.read_series()
            columns = [c for c in ("force_x", "force_y", "force_z")[:runner.cfg.dimension] if c in rows]
            if len(columns) == runner.cfg.dimension:
                history = list(zip(rows["step"], zip(*(rows[c] for c in columns))))
        numbers = measure(flow, runner.cfg, history, out["rho"], out["ux"])
        for line in summary(flow, runner.cfg, numbers):
            click.echo(line)
    from lbgen.run.convection import summary as convection_summary      # Nu beside the published value
    for line in convection_summary(runner.cfg, runner.physics, out):
        click.echo(line)
    if runner.dissipation:
        from lbgen.output.dissipation import summary_line
        click.echo(summary_line(runner.dissipation) + " (dissipation.csv, dissipation.png)")
    if runner.cfg.out:
        click.echo(f"outputs in {runner.cfg.out}/ (manifest.json, series.csv, fields/, vtk/, pictures/)")
    if save:
        names = ", ".join(("rho", "ux", "uy", "uz", "T") if runner.cfg.dimension == 3 else ("rho", "ux", "uy", "T"))
        click.echo(f"saved {names} ({' x '.join(str(n) for n in runner.cfg.shape)}) to {save}")


# --- verify ------------------------------------------------------------------------------
def _parse_layouts(text):
    from lbgen.codegen.layouts import LayoutChoice
    return [(c.name, c.vl) for c in LayoutChoice.parse(text)]


@main.command(short_help="Check every backend and layout against the NumPy reference.")
@click.option("--backends", default="c,opencl,cuda,cuda-shim", show_default=True,
              help="Comma list of c, opencl, cuda (CuPy or pycuda, needs a GPU), cuda-shim (the .cu text on the CPU).")
@click.option("--layouts", default=",".join(n if v is None else f"{n}-vl{v}" for n, v in VERIFY_LAYOUTS),
              show_default=True, help="Comma list of aos, soa, csoa-vlN, caosoa-vlN (by default those of these "
              "that the lattice takes).")
@click.option("--collision", "collisions", default="bgk,regularized", show_default=True)
@click.option("--precision", "precisions", default="double", show_default=True, help="double, single or both: double,single")
@click.option("--storage", "storages", default="", help=f"Comma list of the populations' storages to check, apart "
              f"from the arithmetic: {', '.join(STORAGES)} [default: the precision's own]; each with every --precision "
              "(the C and OpenCL backends store them; the tolerance follows the storage).")
@click.option("--steps", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--lx", type=click.IntRange(min=1), default=None, help=f"[default: {VERIFY_LATTICE_2D[0]}; 3D: "
              f"{VERIFY_LATTICE_3D[0]}]")
@click.option("--ly", type=click.IntRange(min=1), default=None, help=f"[default: {VERIFY_LATTICE_2D[1]}; 3D: "
              f"{VERIFY_LATTICE_3D[1]}]")
@click.option("--lz", type=click.IntRange(min=1), default=None,
              help=f"3D sets: the lattice depth [default: {VERIFY_LATTICE_3D[2]}].")
@click.option("--walls", is_flag=True, help="2D: the thermal channel walls on y (the bc kernel unfused, fused_walls "
              "fused); 3D: bounce-back walls on y and z, a lid on z-high and 15% solid voxels.")
@click.option("--thermal-walls", is_flag=True, help="3D thermal sets (d3q39, d3q103; --collision bgk): the thermal "
              "walls across z (propagate, bc, collide; fused_walls fused) against lbgen.reference.walls3d.")
@click.option("--wall-axis", type=click.Choice(("x", "y", "z")), default=None,
              help="With --thermal-walls: the axis the walls stand across [default: z]; 2D sets with --walls: x or "
                   "y [default: y].")
@click.option("--wall-scheme", type=click.Choice(WALL_SCHEMES), default=DEFAULT_WALL_SCHEME, show_default=True,
              help="2D sets with --walls: the scheme of the bc kernel checked (lbgen or reference); "
              "refused in 3D, whose bounce-back walls have no scheme.")
@click.option("--strict", is_flag=True, help="No FMA contraction: backends must agree bit for bit.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@any_set_option
@click.pass_context
@friendly
def verify(ctx, backends, layouts, collisions, precisions, storages, steps, lx, ly, lz, walls, thermal_walls, wall_axis,
           wall_scheme, strict, seed, as_json, velocity_set):
    """Kernel equivalence: every available backend x layout against the NumPy reference.

    Exit status 1 when a kernel differs beyond its rounding bound (C (eps_s N + eps_a (N Q + W)),
    shown per run; bit-identical across backends with --strict); 2 when nothing could be verified.

    \b
    quick: lbgen verify --backends c --layouts soa,caosoa-vl8 --steps 5
    16-bit: lbgen verify --storage fp16s,fp16c --precision single --backends c,opencl
    3D:    lbgen verify --velocity-set d3q19 --walls (the oracle lbgen.reference.bulk3d)
    3D thermal walls: lbgen verify --velocity-set d3q39 --collision bgk --thermal-walls --layouts soa"""
    from lbgen.model import OPERATORS as ops
    from lbgen.model.catalog import set_entry
    from lbgen.reference.verify import verify as run_verify
    dimension = set_entry(velocity_set).D
    if dimension == 2 and lz is not None:
        raise UserError(f"--lz {lz}: {velocity_set} is a 2D set; --lz is the depth of a 3D verify "
                        f"(--velocity-set {set_names(SETS_3D)})")
    shape = tuple(d if v is None else v for v, d in zip((lx, ly, lz), VERIFY_SHAPES[dimension]))
    given = {name: ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT
             for name in ("layouts", "wall_scheme")}
    cols = [c for c in collisions.split(",") if c]
    bad = [c for c in cols if c not in ops]
    if bad:
        raise UserError(f"unknown collision operator {bad[0]!r}; choose one of {', '.join(ops)}")
    precs = [p for p in precisions.split(",") if p]
    bad = [p for p in precs if p not in PRECISIONS]
    if bad:
        raise UserError(f"unknown precision {bad[0]!r}; choose one of {', '.join(PRECISIONS)}")
    stores = [c for c in storages.split(",") if c]
    bad = [c for c in stores if c not in STORAGES]
    if bad:
        raise UserError(f"unknown storage {bad[0]!r}; choose one of {', '.join(STORAGES)}")
    stores = stores or [None]
    from tqdm import tqdm
    bar = tqdm(unit="run", desc="verify", disable=not sys.stderr.isatty(), leave=False, dynamic_ncols=True)

    def advance(row):
        bar.set_postfix_str(f"{row.backend} {row.layout}{'-vl' + str(row.vl) if row.vl else ''} {row.collision}")
        bar.update(1)
    try:
        report = run_verify(backends=[b for b in backends.split(",") if b],
                            layouts=_parse_layouts(layouts) if given["layouts"] else (),   # default: those that fit
                            shape=shape, walls=walls, thermal_walls=thermal_walls, wall_axis=wall_axis, wall_scheme=wall_scheme if given["wall_scheme"] else None,
                            collisions=cols, precisions=precs, steps=steps, strict=strict, seed=seed,
                            velocity_set=velocity_set.lower(), progress=advance, storages=stores,
                            on_plan=lambda total: (setattr(bar, "total", total), bar.refresh()))
    finally:
        bar.close()
    click.echo(json.dumps(report.to_json(), indent=2) if as_json else report.table())
    if not report.ok:
        sys.exit(1)


from lbgen.cli.bench import bench, tune  # noqa: E402
from lbgen.cli.model import model  # noqa: E402
from lbgen.cli.output import movie, plot  # noqa: E402
for _command in (bench, tune, model, movie, plot):
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    main()
